"""Cases for the DLedger golden test: every body class and entries, as specs both sides build from.

A spec names a DLedger class and its fields by their wire (Java bean) names. ``Peer dledger-golden``
builds the Java object with the class's own setters and prints ``JSON.toJSONBytes`` of it;
:func:`body_from_spec` builds ours with our constructors. The test compares the bytes.
"""
from __future__ import annotations

import base64
import random
from typing import Any

from rocketmq_py.dledger import protocol
from rocketmq_py.dledger.codes import PushType, ResponseCode, VoteResult
from rocketmq_py.dledger.entry import DLedgerEntry

LONG_MIN, LONG_MAX = -(1 << 63), (1 << 63) - 1
INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1
ID_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:#"

#: The fields each class has beyond the common ones, and how to make a random value for them.
CLASS_FIELDS: dict[str, tuple[str, ...]] = {
    "MetadataRequest": (),
    "MetadataResponse": ("peers",),
    "AppendEntryRequest": ("body",),
    "BatchAppendEntryRequest": ("body", "batchMsgs"),
    "AppendEntryResponse": ("index", "pos"),
    "GetEntriesRequest": ("beginIndex", "maxSize", "indexList"),
    "GetEntriesResponse": ("entries",),
    "PullEntriesRequest": ("nodeId", "beginIndex"),
    "PullEntriesResponse": ("entries",),
    "VoteRequest": ("ledgerEndIndex", "ledgerEndTerm"),
    "VoteResponse": ("voteResult",),
    "HeartBeatRequest": (),
    "HeartBeatResponse": (),
    "PushEntryRequest": ("commitIndex", "type", "entry", "batchEntry"),
    "PushEntryResponse": ("index", "beginIndex", "endIndex", "count"),
    "LeadershipTransferRequest": ("transferId", "transfereeId", "takeLeadershipLedgerIndex"),
    "LeadershipTransferResponse": (),
}

_ATTRIBUTES = {
    "group": "group", "remoteId": "remote_id", "localId": "local_id", "code": "code", "leaderId": "leader_id",
    "term": "term", "peers": "peers", "index": "index", "pos": "pos", "beginIndex": "begin_index",
    "maxSize": "max_size", "indexList": "index_list", "nodeId": "node_id", "ledgerEndIndex": "ledger_end_index",
    "ledgerEndTerm": "ledger_end_term", "commitIndex": "commit_index", "endIndex": "end_index",
    "count": "count", "transferId": "transfer_id", "transfereeId": "transferee_id",
    "takeLeadershipLedgerIndex": "take_leadership_ledger_index",
}


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _id(rng: random.Random) -> str:
    return "".join(rng.choice(ID_ALPHABET) for _ in range(rng.randint(1, 12)))


def _long(rng: random.Random) -> int:
    return rng.choice([-1, 0, 1, LONG_MIN, LONG_MAX, rng.randint(-1000, 10**6), rng.randint(LONG_MIN, LONG_MAX)])


def _int(rng: random.Random) -> int:
    return rng.choice([-1, 0, 1, INT_MIN, INT_MAX, rng.randint(-1000, 10**6), rng.randint(INT_MIN, INT_MAX)])


def _body(rng: random.Random) -> bytes:
    return bytes(rng.getrandbits(8) for _ in range(rng.choice([0, 1, 2, 3, 17, 100, 300])))


def entry_spec(rng: random.Random, index: int | None = None) -> dict[str, Any]:
    body = _body(rng)
    return {"magic": rng.choice([1, 1, 1, _int(rng)]), "size": 48 + len(body),
            "index": _long(rng) if index is None else index, "term": _long(rng), "pos": _long(rng),
            "channel": rng.choice([0, 0, _int(rng)]), "chainCrc": rng.choice([0, 0, _int(rng)]),
            "bodyCrc": rng.choice([0, 0, _int(rng)]), "body": b64(body)}


def _value(name: str, rng: random.Random) -> Any:
    if name in ("group", "remoteId", "localId", "leaderId", "nodeId", "transferId", "transfereeId"):
        return _id(rng)
    if name == "code":
        return rng.choice([int(code) for code in ResponseCode] + [_int(rng)])
    if name in ("maxSize", "count"):
        return _int(rng)
    if name == "body":
        return b64(_body(rng))
    if name == "batchMsgs":
        return [b64(_body(rng)) for _ in range(rng.randint(0, 4))]
    if name == "peers":
        return {f"n{i}" if rng.random() < 0.7 else _id(rng): f"127.0.0.1:{rng.randint(1, 65535)}"
                for i in range(rng.randint(0, 14))}
    if name == "indexList":
        return [_long(rng) for _ in range(rng.randint(0, 5))]
    if name == "entries":
        return [entry_spec(rng) for _ in range(rng.randint(0, 3))]
    if name == "entry":
        return entry_spec(rng)
    if name == "batchEntry":
        first = rng.randint(0, 10**9)
        return [entry_spec(rng, first + i) for i in range(rng.randint(1, 4))]
    if name == "voteResult":
        return rng.choice(list(VoteResult)).value
    if name == "type":
        return rng.choice(list(PushType)).value
    return _long(rng)


def random_spec(class_name: str, rng: random.Random) -> dict[str, Any]:
    """A spec of ``class_name`` with each field present or left unset at random."""
    names = ["group", "remoteId", "localId", "code", "leaderId", "term", *CLASS_FIELDS[class_name]]
    fields = {name: _value(name, rng) for name in names if rng.random() < 0.8}
    if class_name == "PushEntryRequest" and "entry" in fields and "batchEntry" in fields and rng.random() < 0.5:
        del fields["batchEntry"]
    return {"class": class_name, "fields": fields}


def entry_from_spec(spec: dict[str, Any]) -> DLedgerEntry:
    return DLedgerEntry(index=spec["index"], term=spec["term"], pos=spec["pos"], body=base64.b64decode(spec["body"]),
                        magic=spec["magic"], size=spec["size"], channel=spec["channel"],
                        chain_crc=spec["chainCrc"], body_crc=spec["bodyCrc"])


def body_from_spec(spec: dict[str, Any]) -> protocol.RequestOrResponse:
    """Our object for a spec, built with our constructors and ``add_entry`` (never by our decoder)."""
    cls = protocol.BODY_CLASSES[spec["class"]]
    body = cls()
    for name, value in spec["fields"].items():
        if name == "body":
            body.body = base64.b64decode(value)  # type: ignore[attr-defined]
        elif name == "batchMsgs":
            body.batch_msgs = [base64.b64decode(v) for v in value]  # type: ignore[attr-defined]
        elif name == "entries":
            body.entries = [entry_from_spec(e) for e in value]  # type: ignore[attr-defined]
        elif name == "entry":
            body.entry = entry_from_spec(value)  # type: ignore[attr-defined]
        elif name == "batchEntry":
            for e in value:
                body.add_entry(entry_from_spec(e))  # type: ignore[attr-defined]
        elif name == "voteResult":
            body.vote_result = VoteResult(value)  # type: ignore[attr-defined]
        elif name == "type":
            body.type = PushType(value)  # type: ignore[attr-defined]
        elif name == "peers":
            body.peers = dict(value)  # type: ignore[attr-defined]
        else:
            setattr(body, _ATTRIBUTES[name], value)
    return body


def golden_cases(seed: int, per_class: int) -> list[dict[str, Any]]:
    """Every class with no field set, then ``per_class`` random specs of each."""
    rng = random.Random(seed)
    cases: list[dict[str, Any]] = [{"class": name, "fields": {}} for name in CLASS_FIELDS]
    for name in CLASS_FIELDS:
        cases += [random_spec(name, rng) for _ in range(per_class)]
    return cases
