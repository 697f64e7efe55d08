"""pytest wiring of the Java compatibility harness (package ``harness`` next to this file).

Session fixtures (one of each per pytest process):
    java_build     harness.build.JavaBuild      (runs Maven once if compat-tests/java changed)
    java_namesrv   official name server          .addr == "127.0.0.1:<port>"
    java_broker    official broker "broker-a"    registered with java_namesrv
    codec_service  harness.peers.CodecService    .call({"op": ...}) -> dict
Module fixtures (one of each per test module that asks):
    py_namesrv     our name server               harness.py_servers.PythonNameServer
    py_broker      our broker "pybroker-a"       registered with py_namesrv
    acl_cluster    (official name server, official broker with aclEnable=true and ADMIN_AND_DENIED_ACL)
Function fixtures:
    servers        (name server, broker): the official ones, then ours (the test runs once for each)
    (factories; what they start is stopped when the test ends):
    start_broker(broker_name=None, namesrv=None, cluster="DefaultCluster", port=None, **config)
    start_namesrv(**config)

Every test under compat-tests/ gets the ``compat`` marker. When a test fails, the tails of the
logs of the RocketMQ processes it used are added to its report.
"""

from __future__ import annotations

import itertools
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

COMPAT_DIR = Path(__file__).resolve().parent
if str(COMPAT_DIR) not in sys.path:
    sys.path.insert(0, str(COMPAT_DIR))

from harness import backend  # noqa: E402
from harness.build import ensure_built  # noqa: E402
from harness.peers import CodecService  # noqa: E402
from harness.acl import ADMIN_AND_DENIED_ACL, JavaAclBroker  # noqa: E402
from harness.processes import STARTED, JavaNameServer  # noqa: E402
from harness.py_servers import PythonBroker, PythonNameServer  # noqa: E402

SERVER_FIXTURES = ("java_namesrv", "java_broker", "start_broker", "start_namesrv")
LOG_TAIL_LINES = 40


def pytest_configure(config):
    config.addinivalue_line("markers", "compat: runs against the official Java RocketMQ (JVMs started by the harness)")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if COMPAT_DIR in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.compat)


# --- fixtures ------------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def java_build():
    return ensure_built()


@pytest.fixture(scope="session")
def java_namesrv(java_build, tmp_path_factory):
    NameServer, _ = backend.server_classes()
    ns = NameServer(build=java_build, workdir=tmp_path_factory.mktemp("namesrv"))
    ns.start()
    yield ns
    ns.stop()


@pytest.fixture(scope="session")
def java_broker(java_namesrv, java_build, tmp_path_factory):
    _, Broker = backend.server_classes()
    broker = Broker(java_namesrv, build=java_build, workdir=tmp_path_factory.mktemp("broker-a"),
                    broker_name="broker-a")
    broker.start()
    yield broker
    broker.stop()


@pytest.fixture(scope="module")
def py_namesrv(tmp_path_factory):
    """Our name server, for the module."""
    namesrv = PythonNameServer(tmp_path_factory.mktemp("py-ns")).start()
    yield namesrv
    assert namesrv.stop() == 0, namesrv.log_text()[-3000:]


@pytest.fixture(scope="module")
def py_broker(py_namesrv, tmp_path_factory):
    """Our broker "pybroker-a" registered with ``py_namesrv``; it must stop cleanly (no abort file)."""
    broker = PythonBroker(py_namesrv.addr, tmp_path_factory.mktemp("py-broker"), broker_name="pybroker-a").start()
    yield broker
    assert broker.stop() == 0, broker.log_text()[-3000:]
    assert not (broker.store_dir / "abort").exists()


@pytest.fixture(scope="module")
def acl_cluster(java_build, tmp_path_factory):
    """An official name server and broker with aclEnable=true and ADMIN_AND_DENIED_ACL: (namesrv, broker)."""
    namesrv = JavaNameServer(build=java_build, workdir=tmp_path_factory.mktemp("acl-namesrv"))
    namesrv.start()
    broker = JavaAclBroker(namesrv, ADMIN_AND_DENIED_ACL, build=java_build,
                           workdir=tmp_path_factory.mktemp("acl-broker"), broker_name="broker-acl", cluster="AclCluster")
    try:
        broker.start()
        yield namesrv, broker
    finally:
        broker.stop()
        namesrv.stop()


@pytest.fixture(params=["java", "ours"])
def servers(request):
    """(name server, broker) of the Java servers or of ours: a test that takes it runs against both."""
    if request.param == "java":
        return request.getfixturevalue("java_namesrv"), request.getfixturevalue("java_broker")
    return request.getfixturevalue("py_namesrv"), request.getfixturevalue("py_broker")


@pytest.fixture(scope="session")
def codec_service(java_build):
    with CodecService(java_build) as service:
        yield service


def _stop_all(procs) -> None:
    """Stop in parallel: a graceful broker shutdown takes ~6 s (Netty's quiet periods)."""
    if procs:
        with ThreadPoolExecutor(max_workers=len(procs)) as pool:
            list(pool.map(lambda p: p.stop(), procs))


_extra_names = (f"broker-{c}" for c in itertools.chain("bcdefghijklmnopqrstuvwxyz", itertools.count(1)))


@pytest.fixture
def start_broker(java_namesrv, java_build, tmp_path_factory):
    """Factory for extra brokers: ``start_broker(broker_name=None, namesrv=None, cluster=..., port=None,
    **broker_config)`` -> a started broker (default: registered with java_namesrv), stopped after the test."""
    _, Broker = backend.server_classes()
    started = []

    def _start(broker_name: str | None = None, namesrv=None, cluster: str = "DefaultCluster", port: int | None = None,
               **config):
        name = broker_name or next(_extra_names)
        broker = Broker(namesrv or java_namesrv, build=java_build, workdir=tmp_path_factory.mktemp(name),
                        port=port, broker_name=name, cluster=cluster, extra_config=config)
        started.append(broker)
        return broker.start()

    yield _start
    _stop_all(started)


@pytest.fixture
def start_namesrv(java_build, tmp_path_factory):
    """Factory for extra name servers: ``start_namesrv(**namesrv_config)``, stopped after the test."""
    NameServer, _ = backend.server_classes()
    started = []

    def _start(**config):
        ns = NameServer(build=java_build, workdir=tmp_path_factory.mktemp("namesrv-extra"), extra_config=config)
        started.append(ns)
        return ns.start()

    yield _start
    _stop_all(started)


# --- logs of failing tests -----------------------------------------------------------------------

_first_process = pytest.StashKey[int]()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    item.stash[_first_process] = len(STARTED)


def _processes_of(item):
    first = item.stash.get(_first_process, len(STARTED))
    procs = list(STARTED[first:])
    if any(name in item.fixturenames for name in SERVER_FIXTURES):
        procs += [p for p in STARTED[:first] if p.is_running()]
    return procs


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if _in_ci() and report.skipped and not hasattr(report, "wasxfail"):
        # In CI a compatibility check that did not run is a failure, never a quiet skip.
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = f"skipped in CI (CI=true), which counts as a failure: {reason}"
    if report.failed and call.when in ("setup", "call"):
        procs = _processes_of(item)
        if procs:
            report.sections.append(("RocketMQ process logs",
                                    "\n\n".join(p.log_tail(LOG_TAIL_LINES) for p in procs)))
    return report
