"""The RocketMQ C++ client (librocketmq from the PyPI package ``rocketmq``; ci/clients/cpp.sh installs it into
compat-tests/cpp/.venv) driven through compat-tests/cpp/client.py, which runs in that virtualenv as a
subprocess and prints one JSON line per message sent or delivered.

The client writes its logs under ``$HOME/logs/rocketmq-cpp``; each call gives it ``home`` as HOME, so they
stay in the test's temporary directory. A process that fails (a crash in C++ too) or prints an
``{"error": ...}`` line raises :class:`~harness.peers.PeerError` with its stderr."""
from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .build import unavailable
from .peers import run_json_lines

CPP_DIR = Path(__file__).resolve().parent.parent / "cpp"
CLIENT_PY = CPP_DIR / "client.py"
VENV_PYTHON = CPP_DIR / ".venv" / "bin" / "python"


@dataclass
class CppMessage:
    """One message for ``client.py send``: a text body (the C API takes C strings), tags, keys, user
    properties, and for ``orderly`` the integer the queue selector hashes."""

    body: str
    tags: str | None = None
    keys: str | None = None
    properties: dict[str, str] = field(default_factory=dict)
    order_key: int | None = None

    def to_json(self) -> str:
        return json.dumps({"body": self.body, "tags": self.tags, "keys": self.keys, "properties": self.properties,
                           "orderKey": self.order_key})


def cpp_python() -> Path:
    """The virtualenv's python with librocketmq (fails under CI=true, skips otherwise, when it is missing)."""
    if not VENV_PYTHON.is_file():
        unavailable("the C++ client's virtualenv compat-tests/cpp/.venv is missing: run ci/clients/cpp.sh "
                    "(ci/setup.sh does)")
    return VENV_PYTHON


def _run(args: list[str], home: Path, stdin: str | None, timeout: float) -> list[dict]:
    home.mkdir(parents=True, exist_ok=True)
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    env["HOME"] = str(home)
    return run_json_lines([str(cpp_python()), str(CLIENT_PY), *args], f"client.py {args[0]}", input=stdin,
                          timeout=timeout, env=env, cwd=home)


def cpp_send(namesrv: str, topic: str, messages: list[CppMessage], mode: str, home: Path,
             timeout: float = 120) -> list[dict]:
    """Send with ``mode`` sync, async, oneway, orderly (by each message's order_key) or batch (one send)."""
    stdin = "".join(m.to_json() + "\n" for m in messages)
    return _run(["send", "--namesrv", namesrv, "--topic", topic, "--mode", mode], home, stdin, timeout)


def cpp_push(namesrv: str, group: str, subscriptions: dict[str, str], expect: int, home: Path,
             properties: list[str], orderly: bool = False, reject_once_keys: Sequence[str] = (), quiet_ms: int = 2000,
             timeout_ms: int = 90_000) -> list[dict]:
    """Push-consume ``subscriptions`` ({topic: tag expression}) in one consumer of ``group`` until ``expect``
    deliveries came, then ``quiet_ms`` more; ``properties`` are the property names each delivery reports (the
    C API reads one property by name). Returns the deliveries followed by the closing ``{"done": ...}``."""
    spec = {"subscriptions": [{"topic": t, "expression": e} for t, e in subscriptions.items()], "orderly": orderly,
            "rejectOnceKeys": list(reject_once_keys), "expect": expect, "quietMs": quiet_ms, "timeoutMs": timeout_ms,
            "properties": properties}
    return _run(["push", "--namesrv", namesrv, "--group", group, "--spec", json.dumps(spec)], home, None,
                timeout_ms / 1000 + 60)


def cpp_pull(namesrv: str, group: str, topics: list[str], expect: int, home: Path, properties: list[str],
             timeout_ms: int = 60_000) -> list[dict]:
    """Read ``topics`` with the C++ PullConsumer from offset 0 of every queue until ``expect`` messages came."""
    spec = {"topics": topics, "expect": expect, "timeoutMs": timeout_ms, "properties": properties}
    return _run(["pull", "--namesrv", namesrv, "--group", group, "--spec", json.dumps(spec)], home, None,
                timeout_ms / 1000 + 60)
