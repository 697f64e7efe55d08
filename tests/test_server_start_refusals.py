"""Every refusal at start is one line on stderr and exit status 1, never a traceback (issue 28, point 4 and 5).

Each case runs ``rocketmq-py broker`` or ``rocketmq-py namesrv`` as a user does, in a process of its own, and reads
what it printed.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from support.child import child_cwd, child_env

from rocketmq_py.broker.config import UNSUPPORTED_WHEN_TRUE
from rocketmq_py.remoting.server import probe_bind
from rocketmq_py.store.lock import StoreLock

#: Runs the command with prometheus_client made unimportable, as in an install that left it out.
_WITHOUT_PROMETHEUS = ("import sys; sys.modules['prometheus_client'] = None; "
                       "from rocketmq_py.cli import main; sys.exit(main(sys.argv[1:]))")


def _run(args: list[str], *, without_prometheus: bool = False) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-c", _WITHOUT_PROMETHEUS] if without_prometheus else [sys.executable, "-m",
                                                                                        "rocketmq_py"]
    return subprocess.run(command + args, capture_output=True, text=True, timeout=60, cwd=child_cwd(),
                          env=child_env())


def _assert_refused(result: subprocess.CompletedProcess[str], expected: str) -> None:
    lines = result.stderr.splitlines()
    assert result.returncode == 1, result.stderr
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
    assert " ERROR " in lines[0] and expected in lines[0], lines[0]


def _broker_conf(tmp_path: Path, extra: str = "") -> Path:
    conf = tmp_path / "broker.conf"
    conf.write_text(f"brokerName=refused\nlistenPort=0\nstorePathRootDir={tmp_path / 'store'}\n"
                    f"namesrvAddr=127.0.0.1:1\n{extra}")
    return conf


@pytest.fixture
def taken_port():
    """A port some other process listens on."""
    with socket.socket() as sock:
        sock.bind(("0.0.0.0", 0))
        sock.listen()
        yield sock.getsockname()[1]


@pytest.mark.parametrize("extra,expected", [
    ("listenPort=abc\n", "config key listenPort='abc' is not a valid int"),
    ("flushDiskType=FOO\n", "flushDiskType must be ASYNC_FLUSH or SYNC_FLUSH, not 'FOO'"),
    ("brokerRole=SLAVE\nbrokerId=0\n", "a SLAVE broker needs brokerId > 0"),
    ("enableDLegerCommitLog=true\n", "enableDLegerCommitLog=true needs dLegerGroup"),
    ("enableDLegerCommitLog=true\ndLegerGroup=g\ndLegerPeers=n0-127.0.0.1:40911\ndLegerSelfId=n1\n",
     "dLegerSelfId 'n1' is not one of the members of dLegerPeers 'n0-127.0.0.1:40911'"),
])
def test_a_broker_key_with_a_bad_value_is_refused_in_one_line(tmp_path, extra, expected):
    _assert_refused(_run(["broker", "-c", str(_broker_conf(tmp_path, extra))]), expected)
    assert not (tmp_path / "store").exists(), "a refused broker touches no store"


@pytest.mark.parametrize("key", sorted(UNSUPPORTED_WHEN_TRUE))
def test_a_key_that_changes_what_is_stored_is_refused_when_true(tmp_path, key):
    """A Java broker.conf asking for a store this broker does not implement must not start a plain broker."""
    result = _run(["broker", "-c", str(_broker_conf(tmp_path, f"{key}=True\n"))])
    _assert_refused(result, f"broker config key {key}=true is not supported")
    assert not (tmp_path / "store").exists()


@pytest.mark.parametrize("key", sorted(UNSUPPORTED_WHEN_TRUE))
def test_the_same_key_set_to_false_is_accepted(tmp_path, key):
    result = _run(["broker", "-c", str(_broker_conf(tmp_path, f"{key}=false\n")), "-p"])
    assert result.returncode == 0, result.stderr
    assert "brokerName=refused" in result.stdout


def test_a_broker_with_metrics_port_and_no_prometheus_client_is_refused_in_one_line(tmp_path):
    result = _run(["broker", "-c", str(_broker_conf(tmp_path, "metricsPort=19999\n"))],
                  without_prometheus=True)
    _assert_refused(result, "metricsPort is set but prometheus_client is not installed")
    assert not (tmp_path / "store").exists()


def test_a_broker_on_a_locked_store_is_refused_in_one_line(tmp_path):
    conf = _broker_conf(tmp_path)
    store = tmp_path / "store"
    lock = StoreLock(store, store / "lock")
    lock.acquire()
    try:
        result = _run(["broker", "-c", str(conf)])
    finally:
        lock.release()
    _assert_refused(result, f"the store at {store} is locked by a running broker (pid {os.getpid()})")


def test_a_broker_whose_port_is_taken_is_refused_in_one_line_before_it_reads_its_store(tmp_path, taken_port):
    conf = _broker_conf(tmp_path, f"listenPort={taken_port}\n")
    _assert_refused(_run(["broker", "-c", str(conf)]), f"listenPort {taken_port} on 0.0.0.0 is not free")
    assert not (tmp_path / "store" / "commitlog").exists()


@pytest.fixture
def taken_ha_port():
    """A port some other process listens on, whose port below was free a moment ago (the broker's listenPort). On a
    busy machine the port below a random one is sometimes in use too: the broker then refused its listenPort first."""
    for _ in range(100):
        with socket.socket() as sock:
            sock.bind(("0.0.0.0", 0))
            sock.listen()
            port = sock.getsockname()[1]
            try:
                probe_bind("0.0.0.0", port - 1)
            except OSError:
                continue
            yield port
            return
    pytest.fail("no port with a free port below it in 100 tries")


def test_a_broker_whose_ha_port_is_taken_is_refused_in_one_line(tmp_path, taken_ha_port):
    conf = _broker_conf(tmp_path, f"listenPort={taken_ha_port - 1}\n")
    _assert_refused(_run(["broker", "-c", str(conf)]), f"the HA port (listenPort + 1) {taken_ha_port} on 0.0.0.0 "
                                                        "is not free")


def test_a_name_server_with_a_bad_key_is_refused_in_one_line(tmp_path):
    conf = tmp_path / "namesrv.properties"
    conf.write_text("listenPort=abc\n")
    _assert_refused(_run(["namesrv", "-c", str(conf)]), "config key listenPort='abc' is not a valid int")


def test_a_name_server_whose_port_is_taken_is_refused_in_one_line(taken_port):
    _assert_refused(_run(["namesrv", "--port", str(taken_port)]), "address already in use")


def test_a_name_server_with_metrics_port_and_no_prometheus_client_is_refused_in_one_line(tmp_path):
    conf = tmp_path / "namesrv.properties"
    conf.write_text("listenPort=0\nmetricsPort=19998\n")
    _assert_refused(_run(["namesrv", "-c", str(conf)], without_prometheus=True),
                    "metricsPort is set but prometheus_client is not installed")
