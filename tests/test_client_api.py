"""The Python-facing API: the API table of docs/python-api.md against ``rocketmq_py``, lazy imports, typed
options checked at construction (one test per option type), docstrings on every public class and method, no
import cycles between the named modules, logging hygiene and the CLI's flags."""
from __future__ import annotations

import ast
import dataclasses
import inspect
import logging
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import rocketmq_py
from rocketmq_py import (
    AdminConfig,
    AsyncLitePullConsumer,
    AsyncProducer,
    AsyncPushConsumer,
    ClientConfig,
    InvalidArgumentError,
    LitePullConsumerConfig,
    Producer,
    ProducerConfig,
    PushConsumer,
    PushConsumerConfig,
)

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "rocketmq_py"


def documented_api_names() -> list[str]:
    """The first column of the table under the "## The API table" heading of docs/python-api.md."""
    text = (ROOT / "docs" / "python-api.md").read_text()
    section = text.split("\n## The API table\n", 1)[1]
    names: list[str] = []
    for line in section.splitlines()[1:]:
        if line.startswith("#"):
            break
        match = re.match(r"\|\s*`(\w+)`\s*\|", line)
        if match:
            names.append(match.group(1))
    return names


def test_every_name_of_the_documented_api_table_imports_from_the_package():
    names = documented_api_names()
    assert len(names) >= 40
    namespace: dict[str, Any] = {}
    exec(f"from rocketmq_py import {', '.join(names)}", namespace)
    assert all(namespace[name] is not None for name in names)
    assert set(names) == set(rocketmq_py.__all__) - {"__version__"}, \
        "the table of docs/python-api.md and __all__ drifted apart"


def test_the_api_reference_documents_every_public_name():
    reference = (ROOT / "docs" / "api.rst").read_text()
    documented = set(re.findall(r"\.\. autoclass:: [\w.]+\.(\w+)", reference))
    assert documented == set(rocketmq_py.__all__) - {"__version__"}


def test_importing_the_package_loads_no_client_until_a_name_is_used():
    code = ("import sys, rocketmq_py; before = [m for m in sys.modules if m.startswith('rocketmq_py.client')]; "
            "rocketmq_py.Producer; after = 'rocketmq_py.client.producer.blocking' in sys.modules; "
            "print(before, after, 'rocketmq_py.client.consumer.push' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["[]", "True", "False"]


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="NoSuchThing"):
        rocketmq_py.NoSuchThing  # noqa: B018
    assert "Producer" in dir(rocketmq_py)


# --- typed options: one test per option type ---------------------------------------------------------------


def test_a_str_option_refuses_an_int():
    with pytest.raises(InvalidArgumentError, match="namesrv_addr must be str | None"):
        PushConsumer("g", namesrv_addr=9876)  # the example: it used to fail at start() with AttributeError


def test_an_int_option_refuses_a_str():
    with pytest.raises(InvalidArgumentError, match="send_msg_timeout must be int, got 'fast'"):
        Producer("g", send_msg_timeout="fast")


def test_an_int_option_refuses_a_bool_and_a_float():
    with pytest.raises(InvalidArgumentError, match="pull_batch_size must be int"):
        AsyncLitePullConsumer("g", pull_batch_size=True)
    with pytest.raises(InvalidArgumentError, match="consume_thread_max must be int"):
        AsyncPushConsumer("g", consume_thread_max=2.5)


def test_a_bool_option_refuses_a_str():
    with pytest.raises(InvalidArgumentError, match="auto_commit must be bool"):
        LitePullConsumerConfig(auto_commit="yes")  # type: ignore[arg-type]


def test_an_optional_str_option_refuses_a_number_and_takes_none():
    with pytest.raises(InvalidArgumentError, match="access_key must be str | None"):
        AsyncProducer("g", access_key=123)
    assert AsyncProducer("g", access_key=None, secret_key=None).config.access_key is None


def test_a_tuple_option_refuses_a_str_and_wrong_items():
    with pytest.raises(InvalidArgumentError, match="latency_max must be tuple"):
        ProducerConfig(latency_max="50,100")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="not_available_duration must be tuple"):
        ProducerConfig(not_available_duration=(0, "30000"))  # type: ignore[arg-type]


def test_a_frozenset_option_refuses_a_list():
    with pytest.raises(InvalidArgumentError, match="retry_response_codes must be frozenset"):
        AsyncProducer("g", retry_response_codes=[17])


def test_an_enum_option_refuses_an_int_and_takes_its_java_name():
    with pytest.raises(InvalidArgumentError, match="message_model must be MessageModel"):
        AsyncPushConsumer("g", message_model=1)
    with pytest.raises(InvalidArgumentError, match="consume_from_where"):
        PushConsumerConfig(consume_from_where="FROM_NOWHERE")  # type: ignore[arg-type]
    assert PushConsumerConfig(message_model="BROADCASTING").message_model.name == "BROADCASTING"  # type: ignore


def test_an_object_option_refuses_another_type():
    with pytest.raises(InvalidArgumentError, match="tls_config must be TlsConfig | None"):
        ClientConfig(tls_config={"enable": True})  # type: ignore[arg-type]


def test_a_listener_option_refuses_another_type():
    with pytest.raises(InvalidArgumentError, match="rebalance_listener must be a RebalanceListener"):
        AsyncPushConsumer("g", rebalance_listener=lambda queues: None)


def test_every_config_field_annotation_is_one_the_check_understands():
    from rocketmq_py.client.option_types import _field_types, _matches

    for kind in (ClientConfig, ProducerConfig, PushConsumerConfig, LitePullConsumerConfig, AdminConfig):
        config = kind()
        for name, annotation in _field_types(kind):
            assert _matches(getattr(config, name), annotation), (kind.__name__, name)
        assert len(_field_types(kind)) == len(dataclasses.fields(kind))


# --- docstrings ----------------------------------------------------------------------------------------------


def public_members():
    for name in rocketmq_py.__all__:
        owner = getattr(rocketmq_py, name)
        if not inspect.isclass(owner):
            continue
        yield name, None, owner
        for attr in dir(owner):
            if attr.startswith("_") and attr not in ("__iter__", "__aiter__", "__next__", "__anext__"):
                continue
            static = inspect.getattr_static(owner, attr)
            if isinstance(static, (staticmethod, classmethod)):
                static = static.__func__
            function = static.fget if isinstance(static, property) else static
            if not inspect.isfunction(function) or not function.__module__.startswith("rocketmq_py"):
                continue
            if attr.startswith("_") and function.__qualname__.split(".")[0] not in (name, "AsyncLitePullConsumer"):
                continue
            yield name, attr, static if isinstance(static, property) else getattr(owner, attr)


def _own_class_doc(name: str, cls: type) -> bool:
    """A docstring written for the class, not the one inherited from Enum or str or made by dataclass."""
    doc = cls.__dict__.get("__doc__") or ""
    return bool(doc.strip()) and not doc.startswith(f"{name}(")


def test_every_public_class_and_method_has_a_docstring():
    missing = [f"{name}.{attr}" if attr else name for name, attr, member in public_members()
               if not (inspect.getdoc(member) or "").strip()
               or (attr is None and not _own_class_doc(name, member))]
    assert missing == []


# --- import cycles -----------------------------------------------------------------------------------------


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def runtime_imports(path: Path) -> set[str]:
    """The rocketmq_py modules ``path`` imports when it runs (anywhere in it, not under TYPE_CHECKING)."""
    tree = ast.parse(path.read_text())
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(child) for child in ast.walk(node))
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    modules = {module_name(p) for p in PACKAGE.rglob("*.py")}
    result = set()
    for name in found:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        parts = name.split(".")
        result.update(".".join(parts[:i]) for i in range(1, len(parts) + 1) if ".".join(parts[:i]) in modules)
    return result


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for name in graph.get(todo.pop(), ()):
            if name not in seen:
                seen.add(name)
                todo.append(name)
    return seen


# Parsed while the module is collected, before any test has started a thread. CPython 3.11 keeps one recursion
# counter for every AST conversion of the interpreter (gh-106905), and its traceback formatting calls ast.parse:
# parsing here while a broker thread of an earlier test logs an exception raised "SystemError: AST constructor
# recursion depth mismatch" in a full run.
IMPORT_GRAPH = {module_name(path): runtime_imports(path) for path in PACKAGE.rglob("*.py")}


@pytest.mark.parametrize("first, second", [
    ("rocketmq_py.cli", "rocketmq_py.broker.quickstart"),
    ("rocketmq_py.client.instance", "rocketmq_py.client.consumer.admin"),
    ("rocketmq_py.client.producer.core", "rocketmq_py.client.trace"),
    ("rocketmq_py.cli", "rocketmq_py.admin.cli"),
    ("rocketmq_py.cli", "rocketmq_py.shell.consume"),
    ("rocketmq_py.client.api", "rocketmq_py.client.api_admin"),
    ("rocketmq_py.client.mq_admin", "rocketmq_py.client.mq_admin_impl"),
    ("rocketmq_py.admin.core", "rocketmq_py.client.instance"),
])
def test_no_import_cycle_between(first, second):
    assert not (second in reachable(IMPORT_GRAPH, first) and first in reachable(IMPORT_GRAPH, second))


# --- logging and the CLI -----------------------------------------------------------------------------------


def test_the_package_logger_has_a_null_handler():
    assert any(isinstance(h, logging.NullHandler) for h in logging.getLogger("rocketmq_py").handlers)


def test_cli_log_level_goes_before_or_after_the_subcommand():
    from rocketmq_py.cli import build_parser, chosen_log_level

    parser = build_parser()
    assert chosen_log_level(parser.parse_args(["--log-level", "debug", "namesrv"])) == "DEBUG"
    assert chosen_log_level(parser.parse_args(["namesrv", "--log-level", "warning"])) == "WARNING"
    assert chosen_log_level(parser.parse_args(["--log-level", "debug", "broker", "--log-level", "error"])) == "ERROR"
    assert chosen_log_level(parser.parse_args(["namesrv"])) == "INFO"
    assert chosen_log_level(parser.parse_args(["quickstart"])) == "ERROR"
    assert chosen_log_level(parser.parse_args(["quickstart", "-v"])) == "INFO"
    with pytest.raises(SystemExit):
        parser.parse_args(["namesrv", "--log-level", "loud"])


def test_cli_version():
    result = subprocess.run([sys.executable, "-m", "rocketmq_py", "--version"], capture_output=True, text=True)
    assert result.returncode == 0
    assert result.stdout.strip() == f"rocketmq-py {rocketmq_py.__version__}"


def test_quickstart_prints_only_its_summary_unless_verbose(tmp_path):
    quiet = subprocess.run([sys.executable, "-m", "rocketmq_py", "quickstart", "--messages", "4"],
                           capture_output=True, text=True, timeout=300)
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stdout.startswith("rocketmq-py quickstart") and "result           OK" in quiet.stdout
    assert quiet.stderr == ""
    verbose = subprocess.run([sys.executable, "-m", "rocketmq_py", "quickstart", "--messages", "4", "-v"],
                             capture_output=True, text=True, timeout=300)
    assert verbose.returncode == 0
    assert " INFO " in verbose.stderr

