"""The Node.js RocketMQ client ali-ons (npm; ci/clients/node.sh installs it) driven through
compat-tests/node/client.js, which prints one JSON line per message sent or delivered.

``node_send`` and ``node_consume`` run one client process each and return its lines; a process that fails
or prints an ``{"error": ...}`` line raises :class:`~harness.peers.PeerError` with its stderr."""
from __future__ import annotations

import base64
import json
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .build import unavailable
from .peers import run_json_lines

NODE_DIR = Path(__file__).resolve().parent.parent / "node"
CLIENT_JS = NODE_DIR / "client.js"


@dataclass
class NodeMessage:
    """One message for ``client.js send``: its body, tags, keys, user properties and sharding key."""

    body: bytes
    tags: str | None = None
    keys: list[str] = field(default_factory=list)
    properties: dict[str, str] = field(default_factory=dict)
    sharding_key: str | None = None

    def to_json(self) -> str:
        return json.dumps({"bodyBase64": base64.b64encode(self.body).decode(), "tags": self.tags, "keys": self.keys,
                           "properties": self.properties, "shardingKey": self.sharding_key})


def node_executable() -> str:
    """The ``node`` that runs client.js, once ali-ons is installed next to it (fails under CI=true, skips
    otherwise, when it is not)."""
    node = shutil.which("node")
    if node is None:
        unavailable("node is not installed: run ci/clients/node.sh (ci/setup.sh does)")
    if not (NODE_DIR / "node_modules" / "ali-ons" / "package.json").is_file():
        unavailable("ali-ons is not installed in compat-tests/node: run ci/clients/node.sh (ci/setup.sh does)")
    return node


def _run(args: list[str], stdin: str | None, timeout: float) -> list[dict]:
    return run_json_lines([node_executable(), str(CLIENT_JS), *args], f"client.js {args[0]}", input=stdin,
                          timeout=timeout, cwd=NODE_DIR)


def node_send(namesrv: str, topic: str, messages: list[NodeMessage], timeout: float = 120) -> list[dict]:
    """Send each message synchronously (ali-ons' only send); one result line per message, in order."""
    stdin = "".join(m.to_json() + "\n" for m in messages)
    results = _run(["send", "--namesrv", namesrv, "--topic", topic], stdin, timeout)
    for result in results:
        result["queueId"] = int(result["queueId"])  # ali-ons hands the response header's strings on
    return results


def node_consume(namesrv: str, group: str, subscriptions: dict[str, object], expect: int,
                 reject_once_keys: Sequence[str] = (), quiet_ms: int = 2000, timeout_ms: int = 90_000) -> list[dict]:
    """Push-consume ``subscriptions`` ({topic: "*" | "TagA || TagB" | {"type": "SQL92", "expression": ...}}) in
    one ali-ons consumer of ``group`` from the first offset until ``expect`` deliveries came, then ``quiet_ms``
    more; the first delivery of a message whose keys are in ``reject_once_keys`` makes the handler throw.
    Returns the delivery lines (``body`` decoded) followed by the closing ``{"done": ..., "timedOut": ...}``."""
    spec = {"subscriptions": [{"topic": t, "expression": e} for t, e in subscriptions.items()],
            "rejectOnceKeys": list(reject_once_keys), "expect": expect, "quietMs": quiet_ms, "timeoutMs": timeout_ms}
    lines = _run(["consume", "--namesrv", namesrv, "--group", group, "--spec", json.dumps(spec)], None,
                 timeout_ms / 1000 + 60)
    for line in lines:
        if "bodyBase64" in line:
            line["body"] = base64.b64decode(line.pop("bodyBase64"))
    return lines
