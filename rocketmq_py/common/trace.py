"""Message trace records, in the text format of Java's client/trace/TraceDataEncoder.

A record's fields are separated by \\x01 and records by \\x02; the trace
message's keys are the traced message ids and keys, so Java's
``mqadmin queryMsgTraceById`` and the dashboard find them by message id.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field

CONTENT_SPLITOR = "\x01"
FIELD_SPLITOR = "\x02"
TRACE_GROUP_PREFIX = "_INNER_TRACE_PRODUCER"
TRACE_INSTANCE_NAME = "PID_CLIENT_INNER_TRACE_PRODUCER"


class TraceType(enum.Enum):
    Pub = "Pub"
    SubBefore = "SubBefore"
    SubAfter = "SubAfter"
    EndTransaction = "EndTransaction"


class TraceMessageType(enum.IntEnum):
    """Java's MessageType; the record carries the ordinal."""

    Normal_Msg = 0
    Trans_Msg_Half = 1
    Trans_msg_Commit = 2
    Delay_Msg = 3


def _text(value: object) -> str:
    """Java's StringBuilder.append: null is "null", booleans are lower case."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass
class TraceBean:
    topic: str = ""
    msg_id: str = ""
    offset_msg_id: str = ""
    tags: str | None = None
    keys: str | None = None
    store_host: str = ""
    body_length: int = 0
    msg_type: TraceMessageType = TraceMessageType.Normal_Msg
    retry_times: int = 0
    transaction_id: str | None = None
    transaction_state: str | None = None
    from_transaction_check: bool = False


@dataclass
class TraceContext:
    trace_type: TraceType
    timestamp: int
    region_id: str = ""
    group_name: str = ""
    cost_time: int = 0
    success: bool = True
    request_id: str | None = None
    context_code: int = 0
    beans: list[TraceBean] = field(default_factory=list)


def encode_trace(context: TraceContext) -> tuple[str, list[str]]:
    """The record text and the keys it is found by (TraceDataEncoder.encoderFromContextBean)."""
    c = context
    records: list[list[object]] = []
    if c.trace_type is TraceType.Pub:
        b = c.beans[0]
        records.append([c.trace_type.value, c.timestamp, c.region_id, c.group_name, b.topic, b.msg_id, b.tags,
                        b.keys, b.store_host, b.body_length, c.cost_time, int(b.msg_type), b.offset_msg_id,
                        c.success])
    elif c.trace_type is TraceType.EndTransaction:
        b = c.beans[0]
        records.append([c.trace_type.value, c.timestamp, c.region_id, c.group_name, b.topic, b.msg_id, b.tags,
                        b.keys, b.store_host, int(b.msg_type), b.transaction_id, b.transaction_state,
                        b.from_transaction_check])
    elif c.trace_type is TraceType.SubBefore:
        for b in c.beans:
            records.append([c.trace_type.value, c.timestamp, c.region_id, c.group_name, c.request_id, b.msg_id,
                            b.retry_times, b.keys])
    else:
        for b in c.beans:
            records.append([c.trace_type.value, c.request_id, b.msg_id, c.cost_time, c.success, b.keys,
                            c.context_code, c.timestamp, c.group_name])
    text = "".join(CONTENT_SPLITOR.join(_text(v) for v in record) + FIELD_SPLITOR for record in records)
    keys: list[str] = []
    for b in c.beans:
        keys.append(b.msg_id)
        if b.keys:
            keys.extend(b.keys.split(" "))
    return text, keys


def decode_trace(data: str) -> list[dict[str, str]]:
    """The records of a trace message body as field lists by name (Pub and EndTransaction; others raw)."""
    names = {
        "Pub": ("type", "timestamp", "regionId", "groupName", "topic", "msgId", "tags", "keys", "storeHost",
                "bodyLength", "costTime", "msgType", "offsetMsgId", "success"),
        "EndTransaction": ("type", "timestamp", "regionId", "groupName", "topic", "msgId", "tags", "keys",
                           "storeHost", "msgType", "transactionId", "transactionState", "fromTransactionCheck"),
    }
    records = []
    for chunk in data.split(FIELD_SPLITOR):
        if not chunk:
            continue
        values = chunk.split(CONTENT_SPLITOR)
        keys = names.get(values[0], tuple(str(i) for i in range(len(values))))
        records.append(dict(zip(keys, values)))
    return records
