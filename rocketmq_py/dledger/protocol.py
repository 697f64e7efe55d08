"""The JSON bodies of DLedger's peer RPCs, written as fastjson writes them and read as fastjson reads them.

Ports the classes of ``protocol/`` in dledger-all-0.3.1.2. fastjson writes a Java bean as its getters
sorted by name, leaves ``null`` out, enums by name and ``byte[]`` as base64; so each body here lists its
properties (computed ones too: a push writes ``batch``, ``count``, ``firstEntryIndex``, ``lastEntryIndex``
and ``totalSize``, which no reader sets) and is written with sorted keys. A peer map is a Java ``HashMap``
and is written in its iteration order (see :func:`java_hash_map_order`).

Reading checks each field's type (a body that does not bind is refused whole, as fastjson refuses it) and
ignores fields without a setter, as fastjson does.
"""
from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from rocketmq_py import codec
from rocketmq_py.common import json_shape
from rocketmq_py.common.json_shape import INT, LONG, MapOf
from rocketmq_py.dledger.codes import PushType, RequestCode, ResponseCode, VoteResult
from rocketmq_py.dledger.entry import DLedgerEntry
from rocketmq_py.errors import BadRequestError

__all__ = [
    "RequestOrResponse",
    "MetadataRequest",
    "MetadataResponse",
    "AppendEntryRequest",
    "BatchAppendEntryRequest",
    "AppendEntryResponse",
    "GetEntriesRequest",
    "GetEntriesResponse",
    "PullEntriesRequest",
    "PullEntriesResponse",
    "VoteRequest",
    "VoteResponse",
    "HeartBeatRequest",
    "HeartBeatResponse",
    "PushEntryRequest",
    "PushEntryResponse",
    "LeadershipTransferRequest",
    "LeadershipTransferResponse",
    "BODY_CLASSES",
    "REQUEST_CLASSES",
    "entry_to_json",
    "entry_from_json",
    "java_hash_map_order",
]

_Body = TypeVar("_Body", bound="RequestOrResponse")

_ENTRY_SHAPE = {"body": str, "bodyCrc": INT, "chainCrc": INT, "channel": INT, "index": LONG, "magic": INT,
                "pos": LONG, "size": INT, "term": LONG}
_ENTRIES_SHAPE = [_ENTRY_SHAPE]


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str, path: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise BadRequestError(f"{path} is not base64") from None


def entry_to_json(entry: DLedgerEntry) -> dict[str, Any]:
    """An entry as fastjson writes it (sorted properties; the body as base64, left out when there is none)."""
    data: dict[str, Any] = {}
    if entry.body is not None:
        data["body"] = _b64(entry.body)
    data.update(bodyCrc=entry.body_crc, chainCrc=entry.chain_crc, channel=entry.channel, index=entry.index,
                magic=entry.magic, pos=entry.pos, size=entry.size, term=entry.term)
    return data


def entry_from_json(data: dict[str, Any], path: str) -> DLedgerEntry:
    """An entry from its checked JSON object."""
    body = data.get("body")
    return DLedgerEntry(
        index=data.get("index") or 0, term=data.get("term") or 0, pos=data.get("pos") or 0,
        body=None if body is None else _unb64(body, f"{path}.body"), magic=data.get("magic") or 0,
        size=data.get("size") or 0, channel=data.get("channel") or 0, chain_crc=data.get("chainCrc") or 0,
        body_crc=data.get("bodyCrc") or 0,
    )


def java_hash_map_order(keys: list[str]) -> list[str]:
    """The order a ``java.util.HashMap`` of these string keys, put in this order, iterates them.

    A HashMap grows its table (16 buckets, doubling past 3/4 full) and walks it by bucket, each bucket in
    the order its keys were put; a key's bucket is its spread ``hashCode`` masked by the table size.
    """
    capacity = 16
    while len(keys) > capacity * 3 // 4:
        capacity *= 2

    def bucket(key: str) -> int:
        h = codec.java_string_hash(key) & 0xFFFFFFFF  # as Java's unsigned shift sees it
        return (h ^ (h >> 16)) & (capacity - 1)

    return sorted(keys, key=bucket)  # sorted() is stable: a bucket keeps the put order


@dataclass
class RequestOrResponse:
    """The fields every DLedger body has (Java's ``RequestOrResponse``)."""

    group: str | None = None
    remote_id: str | None = None
    local_id: str | None = None
    code: int = ResponseCode.SUCCESS
    leader_id: str | None = None
    term: int = -1

    #: The JSON shape of the fields a reader binds (beyond the common ones).
    _SHAPE: ClassVar[dict[str, Any]] = {}

    def copy_base_info(self: _Body, other: RequestOrResponse) -> _Body:
        """Take the common fields of ``other`` (Java's ``copyBaseInfo``) and return self."""
        self.group, self.term, self.code = other.group, other.term, other.code
        self.local_id, self.remote_id, self.leader_id = other.local_id, other.remote_id, other.leader_id
        return self

    @property
    def response_code(self) -> ResponseCode:
        return ResponseCode.of(self.code)

    def base_info(self) -> str:
        """The common fields in one line, for logs (Java's ``baseInfo``)."""
        return (f"group={self.group} term={self.term} code={self.code} local={self.local_id} "
                f"remote={self.remote_id} leader={self.leader_id}")

    def _properties(self) -> dict[str, Any]:
        return {"code": self.code, "group": self.group, "leaderId": self.leader_id, "localId": self.local_id,
                "remoteId": self.remote_id, "term": self.term}

    def _bind(self, data: dict[str, Any], path: str) -> None:
        """Set the class's own fields from the checked JSON (subclasses)."""

    def to_json(self) -> dict[str, Any]:
        """The body as fastjson writes it: properties sorted by name, nulls left out."""
        return {key: value for key, value in sorted(self._properties().items()) if value is not None}

    def encode(self) -> bytes:
        return codec.json_dumps(self.to_json()).encode("utf-8")

    @classmethod
    def decode(cls: type[_Body], body: bytes | None) -> _Body:
        """Read a body; raises :class:`BadRequestError` when it is not JSON or a field has the wrong type."""
        what = cls.__name__
        shape = {"group": str, "remoteId": str, "localId": str, "code": INT, "leaderId": str, "term": LONG,
                 **cls._SHAPE}
        data = json_shape.decode(body, shape, what)
        if not isinstance(data, dict):
            raise BadRequestError(f"the {what} body is not a JSON object")
        message = cls()
        message.group = data.get("group")
        message.remote_id = data.get("remoteId")
        message.local_id = data.get("localId")
        if data.get("code") is not None:
            message.code = data["code"]
        message.leader_id = data.get("leaderId")
        if data.get("term") is not None:
            message.term = data["term"]
        message._bind(data, what)
        return message


def _set(data: dict[str, Any], key: str, default: Any) -> Any:
    value = data.get(key)
    return default if value is None else value


@dataclass
class MetadataRequest(RequestOrResponse):
    pass


@dataclass
class MetadataResponse(RequestOrResponse):
    #: Member id -> address.
    peers: dict[str, str] | None = None

    _SHAPE: ClassVar[dict[str, Any]] = {"peers": MapOf(str)}

    def _properties(self) -> dict[str, Any]:
        peers = None
        if self.peers is not None:
            peers = {key: self.peers[key] for key in java_hash_map_order(list(self.peers))}
        return {**super()._properties(), "peers": peers}

    def _bind(self, data: dict[str, Any], path: str) -> None:
        self.peers = data.get("peers")


@dataclass
class AppendEntryRequest(RequestOrResponse):
    body: bytes | None = None

    _SHAPE: ClassVar[dict[str, Any]] = {"body": str}

    def _properties(self) -> dict[str, Any]:
        return {**super()._properties(), "body": None if self.body is None else _b64(self.body)}

    def _bind(self, data: dict[str, Any], path: str) -> None:
        body = data.get("body")
        self.body = None if body is None else _unb64(body, f"{path}.body")


@dataclass
class BatchAppendEntryRequest(AppendEntryRequest):
    batch_msgs: list[bytes] | None = None

    _SHAPE: ClassVar[dict[str, Any]] = {"body": str, "batchMsgs": [str]}

    def _properties(self) -> dict[str, Any]:
        msgs = None if self.batch_msgs is None else [_b64(msg) for msg in self.batch_msgs]
        return {**super()._properties(), "batchMsgs": msgs}

    def _bind(self, data: dict[str, Any], path: str) -> None:
        super()._bind(data, path)
        msgs = data.get("batchMsgs")
        self.batch_msgs = None if msgs is None else [_unb64(m, f"{path}.batchMsgs") for m in msgs]


@dataclass
class AppendEntryResponse(RequestOrResponse):
    index: int = -1
    pos: int = -1

    _SHAPE: ClassVar[dict[str, Any]] = {"index": LONG, "pos": LONG}

    def _properties(self) -> dict[str, Any]:
        return {**super()._properties(), "index": self.index, "pos": self.pos}

    def _bind(self, data: dict[str, Any], path: str) -> None:
        self.index = _set(data, "index", -1)
        self.pos = _set(data, "pos", -1)


@dataclass
class GetEntriesRequest(RequestOrResponse):
    begin_index: int | None = None
    max_size: int = 0
    index_list: list[int] | None = None

    _SHAPE: ClassVar[dict[str, Any]] = {"beginIndex": LONG, "maxSize": INT, "indexList": [LONG]}

    def _properties(self) -> dict[str, Any]:
        return {**super()._properties(), "beginIndex": self.begin_index, "maxSize": self.max_size,
                "indexList": self.index_list}

    def _bind(self, data: dict[str, Any], path: str) -> None:
        self.begin_index = data.get("beginIndex")
        self.max_size = _set(data, "maxSize", 0)
        self.index_list = data.get("indexList")


@dataclass
class GetEntriesResponse(RequestOrResponse):
    entries: list[DLedgerEntry] = field(default_factory=list)

    _SHAPE: ClassVar[dict[str, Any]] = {"entries": _ENTRIES_SHAPE}

    def _properties(self) -> dict[str, Any]:
        return {**super()._properties(), "entries": [entry_to_json(e) for e in self.entries]}

    def _bind(self, data: dict[str, Any], path: str) -> None:
        self.entries = [entry_from_json(e, f"{path}.entries") for e in data.get("entries") or ()]


@dataclass
class PullEntriesRequest(RequestOrResponse):
    node_id: str | None = None
    begin_index: int | None = None

    _SHAPE: ClassVar[dict[str, Any]] = {"nodeId": str, "beginIndex": LONG}

    def _properties(self) -> dict[str, Any]:
        return {**super()._properties(), "nodeId": self.node_id, "beginIndex": self.begin_index}

    def _bind(self, data: dict[str, Any], path: str) -> None:
        self.node_id = data.get("nodeId")
        self.begin_index = data.get("beginIndex")


@dataclass
class PullEntriesResponse(GetEntriesResponse):
    pass


@dataclass
class VoteRequest(RequestOrResponse):
    ledger_end_index: int = -1
    ledger_end_term: int = -1

    _SHAPE: ClassVar[dict[str, Any]] = {"ledgerEndIndex": LONG, "ledgerEndTerm": LONG}

    def _properties(self) -> dict[str, Any]:
        return {**super()._properties(), "ledgerEndIndex": self.ledger_end_index,
                "ledgerEndTerm": self.ledger_end_term}

    def _bind(self, data: dict[str, Any], path: str) -> None:
        self.ledger_end_index = _set(data, "ledgerEndIndex", -1)
        self.ledger_end_term = _set(data, "ledgerEndTerm", -1)


@dataclass
class VoteResponse(RequestOrResponse):
    vote_result: VoteResult = VoteResult.UNKNOWN

    _SHAPE: ClassVar[dict[str, Any]] = {"voteResult": VoteResult}

    def _properties(self) -> dict[str, Any]:
        return {**super()._properties(), "voteResult": self.vote_result.value}

    def _bind(self, data: dict[str, Any], path: str) -> None:
        self.vote_result = VoteResult(_set(data, "voteResult", VoteResult.UNKNOWN.value))


@dataclass
class HeartBeatRequest(RequestOrResponse):
    pass


@dataclass
class HeartBeatResponse(RequestOrResponse):
    pass


@dataclass
class PushEntryRequest(RequestOrResponse):
    commit_index: int = -1
    type: PushType = PushType.APPEND
    #: The one entry of a push that is not a batch (and of every COMPARE and TRUNCATE).
    entry: DLedgerEntry | None = None
    #: A batch push's entries, consecutive indexes.
    batch_entry: list[DLedgerEntry] = field(default_factory=list)
    #: The batch's bytes, counted by :meth:`add_entry` (a reader leaves it 0: it has no setter).
    total_size: int = 0

    _SHAPE: ClassVar[dict[str, Any]] = {"commitIndex": LONG, "type": PushType, "entry": _ENTRY_SHAPE,
                                        "batchEntry": _ENTRIES_SHAPE}

    def add_entry(self, entry: DLedgerEntry) -> None:
        """Add the next entry of a batch."""
        if self.batch_entry and self.batch_entry[0].index + len(self.batch_entry) != entry.index:
            raise ValueError(f"batch push out of order: entry {entry.index} after "
                             f"{self.batch_entry[-1].index}")
        self.batch_entry.append(entry)
        self.total_size += entry.size

    def clear(self) -> None:
        self.batch_entry = []
        self.total_size = 0

    @property
    def is_batch(self) -> bool:
        return bool(self.batch_entry)

    @property
    def first_entry_index(self) -> int:
        if self.batch_entry:
            return self.batch_entry[0].index
        return self.entry.index if self.entry is not None else -1

    @property
    def last_entry_index(self) -> int:
        if self.batch_entry:
            return self.batch_entry[-1].index
        return self.entry.index if self.entry is not None else -1

    @property
    def count(self) -> int:
        if self.batch_entry:
            return len(self.batch_entry)
        return 1 if self.entry is not None else 0

    def _properties(self) -> dict[str, Any]:
        return {
            **super()._properties(), "batch": self.is_batch,
            "batchEntry": [entry_to_json(e) for e in self.batch_entry], "commitIndex": self.commit_index,
            "count": self.count, "entry": None if self.entry is None else entry_to_json(self.entry),
            "firstEntryIndex": self.first_entry_index, "lastEntryIndex": self.last_entry_index,
            "totalSize": self.total_size, "type": self.type.value,
        }

    def _bind(self, data: dict[str, Any], path: str) -> None:
        self.commit_index = _set(data, "commitIndex", -1)
        self.type = PushType(_set(data, "type", PushType.APPEND.value))
        entry = data.get("entry")
        self.entry = None if entry is None else entry_from_json(entry, f"{path}.entry")
        self.batch_entry = [entry_from_json(e, f"{path}.batchEntry") for e in data.get("batchEntry") or ()]


@dataclass
class PushEntryResponse(RequestOrResponse):
    #: The first index the push carried (None in the answer to a COMMIT).
    index: int | None = None
    begin_index: int = 0
    end_index: int = 0
    count: int = 0

    _SHAPE: ClassVar[dict[str, Any]] = {"index": LONG, "beginIndex": LONG, "endIndex": LONG, "count": INT}

    def _properties(self) -> dict[str, Any]:
        return {**super()._properties(), "index": self.index, "beginIndex": self.begin_index,
                "endIndex": self.end_index, "count": self.count}

    def _bind(self, data: dict[str, Any], path: str) -> None:
        self.index = data.get("index")
        self.begin_index = _set(data, "beginIndex", 0)
        self.end_index = _set(data, "endIndex", 0)
        self.count = _set(data, "count", 0)


@dataclass
class LeadershipTransferRequest(RequestOrResponse):
    transfer_id: str | None = None
    transferee_id: str | None = None
    take_leadership_ledger_index: int = 0

    _SHAPE: ClassVar[dict[str, Any]] = {"transferId": str, "transfereeId": str,
                                        "takeLeadershipLedgerIndex": LONG}

    def _properties(self) -> dict[str, Any]:
        return {**super()._properties(), "transferId": self.transfer_id, "transfereeId": self.transferee_id,
                "takeLeadershipLedgerIndex": self.take_leadership_ledger_index}

    def _bind(self, data: dict[str, Any], path: str) -> None:
        self.transfer_id = data.get("transferId")
        self.transferee_id = data.get("transfereeId")
        self.take_leadership_ledger_index = _set(data, "takeLeadershipLedgerIndex", 0)


@dataclass
class LeadershipTransferResponse(RequestOrResponse):
    pass


#: Every body class by its Java simple name.
BODY_CLASSES: dict[str, type[RequestOrResponse]] = {
    cls.__name__: cls for cls in (
        MetadataRequest, MetadataResponse, AppendEntryRequest, BatchAppendEntryRequest, AppendEntryResponse,
        GetEntriesRequest, GetEntriesResponse, PullEntriesRequest, PullEntriesResponse, VoteRequest,
        VoteResponse, HeartBeatRequest, HeartBeatResponse, PushEntryRequest, PushEntryResponse,
        LeadershipTransferRequest, LeadershipTransferResponse,
    )
}

#: The request and response class of each RPC, as DLedgerRpcNettyService reads and writes them.
REQUEST_CLASSES: dict[RequestCode, tuple[type[RequestOrResponse], type[RequestOrResponse]]] = {
    RequestCode.METADATA: (MetadataRequest, MetadataResponse),
    RequestCode.APPEND: (AppendEntryRequest, AppendEntryResponse),
    RequestCode.GET: (GetEntriesRequest, GetEntriesResponse),
    RequestCode.VOTE: (VoteRequest, VoteResponse),
    RequestCode.HEART_BEAT: (HeartBeatRequest, HeartBeatResponse),
    RequestCode.PULL: (PullEntriesRequest, PullEntriesResponse),
    RequestCode.PUSH: (PushEntryRequest, PushEntryResponse),
    RequestCode.LEADERSHIP_TRANSFER: (LeadershipTransferRequest, LeadershipTransferResponse),
}
