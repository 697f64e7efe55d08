"""The fast path of plain sends, in pure Python: the twin of ``_send_fast.pyx`` and its readable specification.

The Python processor (``processors/send.py``, Java's SendMessageProcessor)
stays the specification of every send. This path answers the common ones,
from the decoded request straight to the response, with none of the
processor's layers: a SEND_MESSAGE (10) or SEND_MESSAGE_V2 (310) of one
message, or a SEND_BATCH_MESSAGE (320) body, to an existing topic whose name
passes every check, neither transactional nor delayed nor a retry, on a
writable broker whose store takes it without waiting (ASYNC_FLUSH, or
WAIT=false). The path builds the message's records itself and hands them to
the store (``MessageStore.append_records``, the store's way in for records
built elsewhere). Anything else, and every refusal, is declined *before
anything changes* (``answer`` returns None) and the caller serves the request
on the slow path, which gives the answer it always gave. For the requests it
takes, the store files and the response are byte for byte those of the slow
path (tests/test_send_fast.py).

A front process runs the same path around its clients' bytes
(``rocketmq_py.broker.front_sends``): ``take_frames`` cuts them into frames and
builds the plain sends among them, and ``answer_placed`` answers the sends the
broker process placed. They are here, compiled with the rest, because they run
once per send (tests/test_send_fast_front.py holds both forms together).
"""
from __future__ import annotations

import struct
import time
from typing import TYPE_CHECKING, Sequence

from rocketmq_py import codec
from rocketmq_py.broker.queue_choice import random_queue_id
from rocketmq_py.common import topic as topics
from rocketmq_py.common.codes import RequestCode
from rocketmq_py.common.headers.send import SendMessageRequestHeader, SendMessageRequestHeaderV2
from rocketmq_py.common.message import MessageConst
from rocketmq_py.common.route import PermName
from rocketmq_py.common.sysflag import MULTI_TAGS_FLAG, TRANSACTION_TYPE_MASK
from rocketmq_py.common.topic import validate_topic
from rocketmq_py.common.topic_config import MULTI_TAG, TopicConfig
from rocketmq_py.errors import CodecError
from rocketmq_py.remoting import RemotingCommand, RequestContext
from rocketmq_py.remoting.command import DEFAULT_LANGUAGE, DEFAULT_VERSION
from rocketmq_py.store import PutMessageStatus, encode_batch, encode_record, pack_host, set_queue_id

if TYPE_CHECKING:
    from rocketmq_py.broker.front_sends import FrontClient
    from rocketmq_py.broker.processors.send import SendMessageProcessor

    #: A send a front took, until the broker process has placed it: the client; the fast path that built it (it
    #: answers with its settings); the request; the client's bytes that hold its frame, and the frame's start and end
    #: in them (relayed when the broker process refuses the send's buffer); its records and their count; its topic's
    #: UTF-8 name; its queue id. A tuple: a busy front holds thousands, and a tuple is one object.
    TakenSend = tuple[FrontClient, "SendFastPath", RemotingCommand, bytes, int, int, bytes | bytearray, int, bytes, int]

IMPLEMENTATION = "python"

_SEND_MESSAGE = RequestCode.SEND_MESSAGE
_SEND_MESSAGE_V2 = RequestCode.SEND_MESSAGE_V2
_SEND_BATCH_MESSAGE = RequestCode.SEND_BATCH_MESSAGE
_SEND_CODES = frozenset((_SEND_MESSAGE, _SEND_MESSAGE_V2, _SEND_BATCH_MESSAGE))
#: Plain topic names remembered; past this many the set starts again (names are checked again, nothing else).
_PLAIN_TOPICS_MAX = 10_000
#: A front's send whose body is this long or longer (a batch) keeps it as a view of the client's bytes, which
#: the send holds until it is answered anyway: the records are built from there, without a copy of the body.
#: A shorter one is copied, which costs no more than the view and lets the record's encoding read ``bytes``.
_VIEWED_BODY = 4096


class SendFastPath:
    """Answers the plain sends of one broker; ``answer`` returns None for every other request."""

    def __init__(self, processor: SendMessageProcessor) -> None:
        self.processor = processor
        self.broker = processor.broker
        self.store = processor.broker.store
        #: Topics whose name passed the send checks and is not a retry topic (a pure function of the name).
        self._plain_topics: set[str] = set()
        self._store_addr: str | None = None
        self._store_host = b""
        self._store_host_hex = ""

    def answer(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand | None:
        """The response to a plain send, stored; None (having changed nothing) for any other request."""
        built = self.build(ctx.remote_address, request)
        if built is None:
            return None
        records, count, topic, queue_id = built
        started = time.monotonic()
        put = self.store.append_records(records)
        if put.status != PutMessageStatus.PUT_OK:  # refused now (a full disk): the processor gives the answer
            return None
        self.broker.stats.on_put(topic, count, put.wrote_bytes, int((time.monotonic() - started) * 1000))
        return self.respond(request, queue_id, put.physical_offsets, put.queue_offsets[0])

    def build(self, remote_address: object,
              request: RemotingCommand) -> tuple[bytes | bytearray, int, str, int] | None:
        """The records of a plain send from ``remote_address`` (the born host), ready for the store's
        ``append_records``: ``(records, count, topic, queue_id)``; None (having changed nothing) for any other
        request. The front processes build with it too, from the broker's settings (rocketmq_py.broker.fronts)."""
        try:
            # A header without its topic, or one that does not parse, raises here: the processor answers it.
            if request.code in (_SEND_MESSAGE_V2, _SEND_BATCH_MESSAGE):
                header: SendMessageRequestHeaderV2 | SendMessageRequestHeader = \
                    SendMessageRequestHeaderV2.from_command(request)
            elif request.code == _SEND_MESSAGE:
                header = SendMessageRequestHeader.from_command(request)
            else:
                return None
        except CodecError:
            return None
        if header.sys_flag & TRANSACTION_TYPE_MASK:
            return None
        broker = self.broker
        config = broker.config
        if config.start_accept_send_request_time_stamp or not config.broker_permission & PermName.WRITE:
            return None
        topic = header.topic
        if topic not in self._plain_topics and not self._remember_plain(topic):
            return None
        topic_config = broker.topics.select(topic)
        if topic_config is None:
            return None
        queue_id = header.queue_id
        if queue_id >= max(topic_config.write_queue_nums, topic_config.read_queue_nums):
            return None
        properties = codec.string_to_properties(header.properties)
        if MessageConst.DELAY_TIME_LEVEL in properties:
            return None
        if header.batch:
            return self._build_batch(remote_address, request, header, topic_config, properties)
        if MessageConst.TRANSACTION_PREPARED in properties:
            return None
        properties[MessageConst.CLUSTER] = config.broker_cluster_name
        wait = properties.pop(MessageConst.WAIT_STORE_MSG_OK, None)
        store = self.store
        if store.put_waits(wait != "false"):
            return None
        try:
            stored_properties = codec.properties_to_string(properties).encode("utf-8")
            born_host = pack_host(remote_address)
            store_host = self._packed_store_host(broker.store_host)
        except (UnicodeEncodeError, ValueError):
            return None
        body = request.body or b""
        if store.refuses_plain(len(body), len(stored_properties)):
            return None
        # Declining stops here: the processor would draw the same random queue id again.
        if queue_id < 0:
            queue_id = random_queue_id(topic_config.write_queue_nums)
        sys_flag = header.sys_flag
        if topic_config.topic_filter_type == MULTI_TAG:
            sys_flag |= MULTI_TAGS_FLAG
        record = encode_record(topic.encode("utf-8"), body, stored_properties, queue_id, header.flag, sys_flag,
                               header.born_timestamp, born_host, store_host, header.reconsume_times or 0, 0)
        return record, 1, topic, queue_id

    def _build_batch(self, remote_address: object, request: RemotingCommand,
                     header: SendMessageRequestHeaderV2 | SendMessageRequestHeader, topic_config: TopicConfig,
                     properties: dict[str, str]) -> tuple[bytes | bytearray, int, str, int] | None:
        """A SEND_BATCH_MESSAGE body (or any send with the batch flag): each item stored as its own record."""
        broker = self.broker
        store = self.store
        properties[MessageConst.CLUSTER] = broker.config.broker_cluster_name
        if store.put_waits(properties.get(MessageConst.WAIT_STORE_MSG_OK) != "false"):
            return None
        body = request.body or b""
        if store.refuses_plain(len(body), 0):
            return None
        try:
            stored_properties = codec.properties_to_string(properties).encode("utf-8")
            born_host = pack_host(remote_address)
            store_host = self._packed_store_host(broker.store_host)
        except (UnicodeEncodeError, ValueError):
            return None
        topic = header.topic
        topic_bytes = topic.encode("utf-8")
        sys_flag = header.sys_flag
        if topic_config.topic_filter_type == MULTI_TAG:
            sys_flag |= MULTI_TAGS_FLAG
        queue_id = header.queue_id
        try:
            records, count = encode_batch(body, topic_bytes, max(queue_id, 0), sys_flag, header.born_timestamp,
                                          born_host, 0, store_host, header.reconsume_times or 0, stored_properties)
        except ValueError:
            return None
        if count == 0 or len(records) > store.max_records_length:
            return None
        # Declining stops here: the processor would draw the same random queue id again.
        if queue_id < 0:
            queue_id = random_queue_id(topic_config.write_queue_nums)
            set_queue_id(records, queue_id)
        return records, count, topic, queue_id

    def take_frames(self, client: FrontClient, data: bytes, position: int, taken: list[TakenSend]) -> int:
        """A front's loop over what a client sent: build the plain sends among the whole frames of
        ``data[position:]`` (each with its length prefix) and append them to ``taken``; relay the others to the
        broker process (``client.relay``, a run of them in one call, in order). Returns where the whole frames
        end: the start of an incomplete frame, or of a length that no frame has (the caller relays the rest),
        or ``len(data)``."""
        size = len(data)
        remote_address = client.remote_address
        relay_from = position
        while size - position >= 4:
            length = int.from_bytes(data[position:position + 4], "big")
            if length < 4 or length > codec.MAX_FRAME_LENGTH:
                break
            end = position + 4 + length
            if end > size:
                break
            send = self._take(client, remote_address, data, position, end)
            if send is not None:
                if relay_from < position:
                    client.relay(data[relay_from:position])
                taken.append(send)
                relay_from = end
            position = end
        if relay_from < position:
            client.relay(data[relay_from:position])
        return position

    def _take(self, client: FrontClient, remote_address: str, data: bytes, start: int,
              end: int) -> TakenSend | None:
        """The frame ``data[start:end]`` built, when it is a plain send; None when the broker process serves it."""
        if (end - start >= 10 and data[start + 4] == codec.SERIALIZE_ROCKETMQ
                and int.from_bytes(data[start + 8:start + 10], "big") not in _SEND_CODES):
            return None  # the binary header's code comes first: no need to decode a pull's frame
        frame = memoryview(data)[start + 4:end]
        header_length = int.from_bytes(frame[:4], "big") & 0xFFFFFF if len(frame) >= 4 else -1
        try:
            if 0 <= header_length and len(frame) - 4 - header_length >= _VIEWED_BODY:
                request = codec.decode_frame(frame[:4 + header_length])
                request.body = frame[4 + header_length:]  # type: ignore[assignment]  # read as a buffer
            else:
                request = codec.decode_frame(frame)
        except CodecError:
            return None
        if request.flag & codec.FLAG_RESPONSE:
            return None
        built = self.build(remote_address, request)
        if built is None:
            return None
        records, count, topic, queue_id = built
        return client, self, request, data, start, end, records, count, topic.encode("utf-8"), queue_id

    def respond(self, request: RemotingCommand, queue_id: int, physical_offsets: Sequence[int],
                queue_offset: int) -> RemotingCommand:
        """The processor's SUCCESS answer to a send whose records :meth:`build` made and the store placed at
        ``physical_offsets``, the first at ``queue_offset``."""
        host_hex = self._store_host_hex
        return self._stored(request, ",".join(host_hex + format(offset, "016X") for offset in physical_offsets),
                            queue_id, queue_offset)

    def _stored(self, request: RemotingCommand, msg_id: str, queue_id: int, queue_offset: int) -> RemotingCommand:
        """The processor's SUCCESS answer: the region fields, then SendMessageResponseHeader's."""
        answer = dict(self.processor.region_fields)
        answer["msgId"] = msg_id
        answer["queueId"] = str(queue_id)
        answer["queueOffset"] = str(queue_offset)
        return codec.new_command(0, DEFAULT_LANGUAGE, DEFAULT_VERSION, request.opaque, codec.FLAG_RESPONSE, None,
                                 answer, None, request.serialize_type, None)

    def _packed_store_host(self, addr: str) -> bytes:
        # The store host is the broker's address, which is known only once it listens: pack it when it changes.
        if addr != self._store_addr:
            self._store_host = pack_host(addr)
            self._store_host_hex = self._store_host.hex().upper()
            self._store_addr = addr
        return self._store_host

    def _remember_plain(self, topic: str) -> bool:
        """True, remembering it, when ``topic`` passes the processor's name checks and is no retry topic."""
        if (validate_topic(topic) is not None or topics.is_not_allowed_send_topic(topic)
                or topic.startswith(topics.RETRY_GROUP_TOPIC_PREFIX)):
            return False
        if len(self._plain_topics) >= _PLAIN_TOPICS_MAX:
            self._plain_topics.clear()
        self._plain_topics.add(topic)
        return True


def answer_placed(sends: Sequence[TakenSend], payload: bytes | bytearray | memoryview,
                  position: int) -> dict[FrontClient, bytes]:
    """The answers to ``sends``, which the broker process placed: for each client, its answers' frames in one
    bytes, in the order of its sends (a oneway send has none). From ``position`` in ``payload`` come each
    record's physical offset, then each send's queue offset, as big-endian int64."""
    records = sum([send[7] for send in sends])
    offsets = struct.unpack_from(f">{records}q", payload, position)
    queue_offsets = struct.unpack_from(f">{len(sends)}q", payload, position + 8 * records)
    answers: dict[FrontClient, list[bytes]] = {}
    first = 0
    for send, queue_offset in zip(sends, queue_offsets):
        client, path, request = send[0], send[1], send[2]
        count = send[7]
        if not request.flag & codec.FLAG_ONEWAY:
            response = path.respond(request, send[9], offsets[first:first + count], queue_offset)
            answers.setdefault(client, []).append(codec.encode_command(response))
        first += count
    return {client: b"".join(frames) for client, frames in answers.items()}
