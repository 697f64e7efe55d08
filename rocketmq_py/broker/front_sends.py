"""Plain sends served by the front processes: built in the front, placed by the broker process (issue 30).

A front (``rocketmq_py.remoting.front``) hands its clients' bytes to
:class:`FrontSends`, which runs the broker's own send fast path over
:class:`SendSettings`, the broker's settings as the broker process last pushed
them: ``SendFastPath.take_frames`` cuts the bytes into frames and builds each
SEND_MESSAGE, SEND_MESSAGE_V2 and SEND_BATCH_MESSAGE the path takes (its checks,
and the records it would store). What the fast path declines is relayed whole
to the broker process, as every other frame. The records of the sends of one
loop pass go to the broker process in one :attr:`Relay.PLACE` message, which
:class:`SendPlacement` hands to the store in one ``MessageStore.append_records``
call. The broker process answers with a :attr:`Relay.PLACED` message (each
record's physical offset, each send's queue offset), and only then does the
front write the SendResult frames (``answer_placed``, with the fast path's own
``respond``; one write per client): a send is answered only after its records
are in the store.

The settings carry a version. A buffer built with settings older than the
broker's current ones is refused whole (nothing is written), the broker
process pushes the new settings first, and the front relays the refused
sends' frames to the broker process, which serves them as it serves any
frame. A buffer the store refuses (a full disk, a busy page cache) is relayed
the same way, so every answer is the broker's.

A buffer whose first send was taken ``waitTimeMillsInSendQueue`` or longer
before the broker process comes to place it is not placed: the front answers
its sends SYSTEM_BUSY ``[TIMEOUT_CLEAN_QUEUE]``, as the broker's send lane
answers a send that waited that long (Java's ``BrokerFastFailure``), so that
a producer goes to another broker when this one cannot keep up, with fronts
as without. The front's clock and the broker process's are the same
(``time.monotonic_ns``, CLOCK_MONOTONIC, one per machine).
"""
from __future__ import annotations

import asyncio
import json
import logging
import struct
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Final, Protocol

from rocketmq_py import codec
from rocketmq_py.broker.place_messages import SEND_HEAD, placed_payload, read_sends
from rocketmq_py.common.codes import RequestCode
from rocketmq_py.common.topic_config import TopicConfig
from rocketmq_py.errors import CodecError
from rocketmq_py.remoting import RemotingCommand
from rocketmq_py.remoting import command as commands
from rocketmq_py.remoting.command import RemotingSysResponseCode
from rocketmq_py.remoting.lanes import timeout_clean_queue_remark
from rocketmq_py.store import MAX_PROPERTIES_LENGTH, PutMessageStatus

if TYPE_CHECKING:
    from rocketmq_py.broker._send_fast_py import TakenSend
    from rocketmq_py.broker.controller import BrokerController

__all__ = ["FrontSends", "SendPlacement", "SendSettings"]

_log = logging.getLogger(__name__)

#: The codes a front serves itself when the fast path takes them.
SEND_CODES = frozenset((RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE))

# PLACE (front -> broker process): buffer number, settings version, number of sends, when its first send was
# taken (time.monotonic_ns); then for each send its record count, its records' bytes and its topic's length
# (SEND_HEAD, which the broker process reads with place_messages.read_sends) and UTF-8 bytes; then the records,
# back to back.
_PLACE_HEAD = struct.Struct(">IIHq")
# PLACED (broker process -> front): buffer number and whether it was placed (_REFUSED, _PLACED, _TOO_LATE);
# when it was, each record's physical offset, then each send's queue offset (int64 each); when it came too
# late, how long its first send had waited (ms) and the sends of the buffer, for the busy answers' remark.
_PLACED_HEAD = struct.Struct(">IB")
_PLACED_TOO_LATE = struct.Struct(">IBII")
_REFUSED, _PLACED, _TOO_LATE = 0, 1, 2
# The fields of a TakenSend (a tuple, see rocketmq_py/broker/_send_fast_py.py) that this module reads by index.
_CLIENT: Final = 0
_REQUEST: Final = 2
_RECORDS: Final = 6
_RECORD_COUNT: Final = 7
_TOPIC: Final = 8
#: The records of one PLACE message, at most (but a send longer than this goes alone). A loop pass of a busy
#: front builds megabytes; cut into buffers of this size, the broker process places the first while the front
#: builds the rest, and a put holds a few hundred records' objects at once, not thousands (which set off the
#: cyclic GC's collections, and the older ones walk them all).
PLACE_BYTES = 256 * 1024
#: A send's records of this size or more are written to the channel alone (a writev buffer); smaller ones are
#: joined with their neighbours first, whose copy costs less than a buffer of the write each.
_RECORDS_WRITTEN_ALONE = 8 * 1024


# --- the settings ------------------------------------------------------------------------------------------------

class _Store:
    """The store as the fast path asks it, from the settings: the static refusals (the store checks the rest
    when it places the records)."""

    def __init__(self, settings: dict[str, Any]) -> None:
        self._waits = bool(settings["waits"])
        self._refusing = bool(settings["refusing"])
        self._max_message_size = int(settings["maxMessageSize"])
        self.max_records_length = int(settings["maxRecordsLength"])

    def put_waits(self, wait_store_msg_ok: bool) -> bool:
        return wait_store_msg_ok and self._waits

    def refuses_plain(self, body_length: int, properties_length: int) -> bool:
        return (self._refusing or body_length > self._max_message_size
                or properties_length > MAX_PROPERTIES_LENGTH)


@dataclass
class _Config:
    start_accept_send_request_time_stamp: int
    broker_permission: int
    broker_cluster_name: str


class _Topics:
    def __init__(self, table: dict[str, TopicConfig]) -> None:
        self.select: Callable[[str], TopicConfig | None] = table.get


class SendSettings:
    """What the send fast path reads of its broker, as a front holds it: the ``processor`` it is built on."""

    def __init__(self, settings: dict[str, Any]) -> None:
        self.version = int(settings["version"])
        self.store = _Store(settings)
        self.config = _Config(int(settings["startAcceptSendRequestTimeStamp"]), int(settings["brokerPermission"]),
                              str(settings["brokerClusterName"]))
        self.topics = _Topics({name: TopicConfig.from_json(data) for name, data in settings["topics"].items()})
        self.store_host = str(settings["storeHost"])
        self.region_fields: dict[str, str] = dict(settings["regionFields"])

    @property
    def broker(self) -> SendSettings:
        return self


def _settings_of(broker: BrokerController, version: int) -> dict[str, Any]:
    store = broker.store
    config = broker.config
    return {
        "module": __name__,
        "version": version,
        "topics": {name: topic.to_json() for name, topic in broker.topics.file.table.items()},
        "startAcceptSendRequestTimeStamp": config.start_accept_send_request_time_stamp,
        "brokerPermission": config.broker_permission,
        "brokerClusterName": config.broker_cluster_name,
        "storeHost": broker.store_host,
        "regionFields": broker.send_processor.region_fields,
        "waits": store.put_waits(True),
        "refusing": store.refuses_plain(0, 0),
        "maxMessageSize": store.config.max_message_size,
        "maxRecordsLength": store.max_records_length,
    }


# --- the broker process's side -----------------------------------------------------------------------------------

class SendPlacement:
    """The broker process's side: the settings its fronts build with, and the placement of what they built.

    The front pool (``rocketmq_py.remoting.front_pool``) asks :meth:`settings` at a front's start and every
    tenth of a second, reads :attr:`current_settings` after each placement, and pushes them to every front
    when they changed."""

    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker
        self.version = 0
        self._key: tuple[object, ...] | None = None
        #: The settings as last made (by :meth:`settings` or :meth:`place`).
        self.current_settings = b""
        self._topics: dict[bytes, str] = {}

    def _current_key(self) -> tuple[object, ...]:
        """Everything the settings are made of, cheaply: equal keys, equal settings.

        Asked for every PLACE message, so it reads fields rather than making values: the store host
        (``config.broker_addr``) by the two fields it is made of, and the send processor's region fields by
        the dict itself (its ``refresh`` puts a new one in place, it never changes one)."""
        broker = self.broker
        config = broker.config
        store = broker.store
        version = broker.topics.data_version
        return (version.timestamp, version.counter, len(broker.topics.file.table),
                config.start_accept_send_request_time_stamp, config.broker_permission, config.broker_cluster_name,
                config.broker_ip1, config.listen_port, store.put_waits(True), store.refuses_plain(0, 0),
                store.config.max_message_size, broker.send_processor.region_fields)

    def settings(self) -> bytes:
        """The current settings (the same object while nothing changed)."""
        key = self._current_key()
        if key != self._key:
            self._key = key
            self.version = self.version % 0xFFFFFFFF + 1
            self.current_settings = json.dumps(_settings_of(self.broker, self.version),
                                               separators=(",", ":")).encode()
        return self.current_settings

    def place(self, payload: bytes | bytearray | memoryview) -> bytes:
        """Place the records of one PLACE message, when they were built with the current settings (made anew
        here when they changed); the PLACED message's payload. The front pool gives a view of its channel's
        buffer: the records go from there into the CommitLog, uncopied, and nothing keeps a part of it."""
        view = memoryview(payload)
        number, version, sends, taken_ns = _PLACE_HEAD.unpack_from(view, 0)
        config = self.broker.config
        if config.broker_fast_failure_enable:
            waited_ms = (time.monotonic_ns() - taken_ns) // 1_000_000
            if waited_ms >= config.wait_time_mills_in_send_queue:
                return _PLACED_TOO_LATE.pack(number, _TOO_LATE, min(waited_ms, 0xFFFFFFFF), sends)
        self.settings()
        if version != self.version:
            return _PLACED_HEAD.pack(number, _REFUSED)  # built with old settings: the front relays the sends
        # The broker process's part of every send a front serves: the loops per send are compiled.
        position, counts, by_topic = read_sends(view, _PLACE_HEAD.size, sends, self._topics)
        started = time.monotonic()
        put = self.broker.store.append_records(view[position:])
        if put.status is not PutMessageStatus.PUT_OK:
            return _PLACED_HEAD.pack(number, _REFUSED)  # refused now (a full disk): the broker answers each send
        latency_ms = int((time.monotonic() - started) * 1000)
        on_put = self.broker.stats.on_put
        # The stats by topic: one call for all of a topic's sends, the same counts as one call per send.
        for topic, (records, size, puts) in by_topic.items():
            on_put(topic, records, size, latency_ms, puts)
        return placed_payload(_PLACED_HEAD.pack(number, _PLACED), counts, put.physical_offsets, put.queue_offsets)


# --- the front's side --------------------------------------------------------------------------------------------

class FrontClient(Protocol):
    """A client connection of the front, as :class:`FrontSends` uses it."""

    conn: int
    remote_address: str

    def write(self, data: bytes) -> None:
        """Write ``data`` to the client (nothing when it is gone)."""

    def relay(self, frames: bytes) -> None:
        """Relay ``frames`` (whole frames of this client's) to the broker process, which serves them."""


class FrontSends:
    """A front's side: builds the plain sends its clients make, has the broker process place them, answers."""

    def __init__(self, place: Callable[[list[bytes | bytearray]], None], settings: dict[str, Any]) -> None:
        from rocketmq_py.broker import send_fast
        self._place = place
        self._path_class = send_fast.SendFastPath
        self._answer_placed = send_fast.answer_placed
        self.settings = SendSettings(settings)
        self._path = self._path_class(self.settings)  # type: ignore[arg-type]  # reads only what SendSettings has
        self._loop = asyncio.get_running_loop()
        self._pending: list[TakenSend] = []
        #: When the first of the pending sends was taken (time.monotonic_ns).
        self._pending_since = 0
        self._waiting: dict[int, list[TakenSend]] = {}
        self._next_number = 0

    def update(self, settings: dict[str, Any]) -> None:
        """New settings from the broker process: sends built from now on use them."""
        self.settings = SendSettings(settings)
        self._path = self._path_class(self.settings)  # type: ignore[arg-type]

    def take_frames(self, client: FrontClient, data: bytes, position: int) -> int:
        """Serve the plain sends among the whole frames of ``data[position:]`` and relay the other frames; where
        the whole frames end (see ``SendFastPath.take_frames``)."""
        pending = self._pending
        waiting = len(pending)
        end = self._path.take_frames(client, data, position, pending)
        if not waiting and pending:
            self._pending_since = time.monotonic_ns()
            self._loop.call_soon(self.flush)
        return end

    def flush(self) -> None:
        """Send the sends of this loop pass to the broker process, in buffers of :data:`PLACE_BYTES` (that fit a
        CommitLog file)."""
        pending, self._pending = self._pending, []
        if not pending:
            return
        limit = min(PLACE_BYTES, self.settings.store.max_records_length)
        taken_ns = self._pending_since
        start = 0
        size = 0
        for index, send in enumerate(pending):
            length = len(send[_RECORDS])
            if size and size + length > limit:
                self._send_buffer(pending[start:index], taken_ns)
                start, size = index, 0
            size += length
        self._send_buffer(pending[start:] if start else pending, taken_ns)

    def _send_buffer(self, sends: list[TakenSend], taken_ns: int) -> None:
        self._next_number = number = self._next_number % 0xFFFFFFFF + 1
        heads: list[bytes] = [_PLACE_HEAD.pack(number, self.settings.version, len(sends), taken_ns)]
        pack_send = SEND_HEAD.pack
        for send in sends:
            topic = send[_TOPIC]
            heads.append(pack_send(send[_RECORD_COUNT], len(send[_RECORDS]), len(topic)))
            heads.append(topic)
        # The records go to the channel's write as they are, each run of small ones joined: a batch's records
        # (tens of KiB) are copied once, by the kernel, where joining them all copied them once more.
        parts: list[bytes | bytearray] = [b"".join(heads)]
        small: list[bytes | bytearray] = []
        for send in sends:
            records = send[_RECORDS]
            if len(records) < _RECORDS_WRITTEN_ALONE:
                small.append(records)
                continue
            if small:
                parts.append(b"".join(small))
                small = []
            parts.append(records)
        if small:
            parts.append(b"".join(small))
        self._waiting[number] = sends
        self._place(parts)

    def placed(self, payload: bytes | memoryview) -> None:
        """The broker process's answer to one buffer: answer its sends, or relay them when it was refused."""
        number, stored = _PLACED_HEAD.unpack_from(payload, 0)
        sends = self._waiting.pop(number, None)
        if sends is None:
            _log.warning("the broker process answered buffer %d, which this front did not send", number)
            return
        if stored == _REFUSED:
            for client, _, _, data, start, end, *_ in sends:
                client.relay(data[start:end])
            return
        if stored == _TOO_LATE:
            _, _, waited_ms, size = _PLACED_TOO_LATE.unpack_from(payload, 0)
            remark = timeout_clean_queue_remark(waited_ms, size)
            busy_answers: dict[FrontClient, list[bytes]] = {}
            for send in sends:
                request = send[_REQUEST]
                if not request.flag & codec.FLAG_ONEWAY:
                    busy = commands.create_response(request, RemotingSysResponseCode.SYSTEM_BUSY, remark,
                                                    serialize_type=commands.DEFAULT_SERIALIZE_TYPE)
                    busy_answers.setdefault(send[_CLIENT], []).append(codec.encode_command(busy))
            answers = {client: b"".join(frames) for client, frames in busy_answers.items()}
        else:
            answers = self._answer_placed(sends, payload, _PLACED_HEAD.size)
        # One write a client: its answers of this buffer go to its socket together.
        for client, frames in answers.items():
            client.write(frames)
