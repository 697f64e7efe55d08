# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The fast path of plain sends, compiled: the twin of ``_send_fast_py``, which says what it takes and does.

The same steps in the same order, with the same declines, so that the
differential tests (tests/test_send_fast.py) hold both to the send
processor's bytes. What the C types buy here is the per-request control
flow: the checks, the tuple and dict work and the message id run without
the interpreter; the byte work (header mapping, properties, the record,
the response frame) was compiled already and is called as the twin calls it.
A front's loop over a client's bytes (``take_frames``) also decodes each frame
where it lies, with the codec's C-level ``_decode_frame``, instead of copying it
out first (tests/test_send_fast_front.py holds it to the twin).
"""
import struct
import time

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_CheckExact, PyBytes_GET_SIZE
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t

from rocketmq_py._bytes cimport load_u16, load_u32
from rocketmq_py._codec cimport _decode_frame

from rocketmq_py import codec
from rocketmq_py.broker.queue_choice import random_queue_id
from rocketmq_py.common import topic as topics
from rocketmq_py.common.codes import RequestCode
from rocketmq_py.common.headers.send import SendMessageRequestHeader, SendMessageRequestHeaderV2
from rocketmq_py.common.message import MessageConst
from rocketmq_py.common.route import PermName
from rocketmq_py.common.sysflag import MULTI_TAGS_FLAG, TRANSACTION_TYPE_MASK
from rocketmq_py.common.topic import validate_topic
from rocketmq_py.common.topic_config import MULTI_TAG
from rocketmq_py.errors import CodecError
from rocketmq_py.remoting.command import DEFAULT_LANGUAGE, DEFAULT_VERSION
from rocketmq_py.store import PutMessageStatus, encode_batch, encode_record, pack_host, set_queue_id

IMPLEMENTATION = "cython"

cdef int SEND_MESSAGE = RequestCode.SEND_MESSAGE
cdef int SEND_MESSAGE_V2 = RequestCode.SEND_MESSAGE_V2
cdef int SEND_BATCH_MESSAGE = RequestCode.SEND_BATCH_MESSAGE
cdef object _encode_record = encode_record
cdef object _encode_batch = encode_batch
cdef object _set_queue_id = set_queue_id
cdef object PUT_OK = PutMessageStatus.PUT_OK
cdef int PLAIN_TOPICS_MAX = 10_000
cdef int WRITE = PermName.WRITE
cdef int32_t TRANSACTION_MASK = TRANSACTION_TYPE_MASK
cdef int32_t MULTI_TAGS = MULTI_TAGS_FLAG
cdef int FLAG_RESPONSE = codec.FLAG_RESPONSE
cdef int FLAG_ONEWAY = codec.FLAG_ONEWAY
cdef int SERIALIZE_ROCKETMQ = codec.SERIALIZE_ROCKETMQ
cdef uint32_t MAX_FRAME_LENGTH = codec.MAX_FRAME_LENGTH
cdef object TRANSACTION_PREPARED = MessageConst.TRANSACTION_PREPARED
cdef object CLUSTER = MessageConst.CLUSTER
cdef object DELAY = MessageConst.DELAY_TIME_LEVEL
cdef object WAIT = MessageConst.WAIT_STORE_MSG_OK
cdef object RETRY_PREFIX = topics.RETRY_GROUP_TOPIC_PREFIX
cdef object _monotonic = time.monotonic
cdef object _string_to_properties = codec.string_to_properties
cdef object _new_command = codec.new_command
cdef object _properties_to_string = codec.properties_to_string
cdef object _read_v2 = SendMessageRequestHeaderV2.from_command
cdef object _read_v1 = SendMessageRequestHeader.from_command
cdef object _is_not_allowed_send_topic = topics.is_not_allowed_send_topic
cdef const char* HEX_DIGITS = b"0123456789ABCDEF"
cdef Py_ssize_t VIEWED_BODY = 4096


cdef str _offset_hex(int64_t offset):
    """The 16 upper-case hex digits of a CommitLog offset, as the offset message id ends."""
    cdef char digits[16]
    cdef uint64_t value = <uint64_t>offset
    cdef int i
    for i in range(15, -1, -1):
        digits[i] = HEX_DIGITS[value & 0xF]
        value >>= 4
    return digits[:16].decode("ascii")


cdef class SendFastPath:
    """Answers the plain sends of one broker; ``answer`` returns None for every other request."""

    cdef readonly object processor
    cdef readonly object broker
    cdef readonly object store
    cdef set _plain_topics
    cdef object _store_addr
    cdef bytes _store_host
    cdef str _store_host_hex

    def __init__(self, processor):
        self.processor = processor
        self.broker = processor.broker
        self.store = processor.broker.store
        self._plain_topics = set()
        self._store_addr = None

    def answer(self, ctx, request):
        """The response to a plain send, stored; None (having changed nothing) for any other request."""
        built = self.build(ctx.remote_address, request)
        if built is None:
            return None
        records, count, topic, queue_id = <tuple>built
        started = _monotonic()
        put = self.store.append_records(records)
        if put.status is not PUT_OK:  # refused now (a full disk): the processor gives the answer
            return None
        self.broker.stats.on_put(topic, count, put.wrote_bytes, int((_monotonic() - started) * 1000))
        return self.respond(request, queue_id, put.physical_offsets, put.queue_offsets[0])

    def build(self, remote_address, request):
        """The records of a plain send from ``remote_address`` (the born host): ``(records, count, topic,
        queue_id)``; None (having changed nothing) for any other request."""
        cdef int code = request.code
        cdef int32_t sys_flag
        cdef long long queue_id
        try:
            # A header without its topic, or one that does not parse, raises here: the processor answers it.
            if code == SEND_MESSAGE_V2 or code == SEND_BATCH_MESSAGE:
                header = _read_v2(request)
            elif code == SEND_MESSAGE:
                header = _read_v1(request)
            else:
                return None
        except CodecError:
            return None
        sys_flag = header.sys_flag
        if sys_flag & TRANSACTION_MASK:
            return None
        broker = self.broker
        config = broker.config
        if config.start_accept_send_request_time_stamp or not (<int>config.broker_permission) & WRITE:
            return None
        topic = header.topic
        if topic not in self._plain_topics and not self._remember_plain(topic):
            return None
        topic_config = broker.topics.select(topic)
        if topic_config is None:
            return None
        queue_id = header.queue_id
        if queue_id >= max(<int>topic_config.write_queue_nums, <int>topic_config.read_queue_nums):
            return None
        cdef dict properties = _string_to_properties(header.properties)
        if DELAY in properties:
            return None
        if header.batch:
            return self._build_batch(remote_address, request, header, topic_config, properties)
        if TRANSACTION_PREPARED in properties:
            return None
        properties[CLUSTER] = config.broker_cluster_name
        wait = properties.pop(WAIT, None)
        store = self.store
        if store.put_waits(wait != "false"):
            return None
        try:
            stored_properties = (<str>_properties_to_string(properties)).encode("utf-8")
            born_host = pack_host(remote_address)
            store_host = self._packed_store_host(broker.store_host)
        except (UnicodeEncodeError, ValueError):
            return None
        body = request.body
        if body is None:
            body = b""
        if store.refuses_plain(len(body), len(stored_properties)):
            return None
        # Declining stops here: the processor would draw the same random queue id again.
        if queue_id < 0:
            queue_id = random_queue_id(topic_config.write_queue_nums)
        if topic_config.topic_filter_type == MULTI_TAG:
            sys_flag |= MULTI_TAGS
        record = _encode_record((<str>topic).encode("utf-8"), body, stored_properties, queue_id, header.flag,
                                sys_flag, header.born_timestamp, born_host, store_host,
                                header.reconsume_times or 0, 0)
        return (record, 1, topic, queue_id)

    cdef _build_batch(self, remote_address, request, header, topic_config, dict properties):
        """A SEND_BATCH_MESSAGE body (or any send with the batch flag): each item stored as its own record."""
        cdef long long queue_id = header.queue_id
        cdef int32_t sys_flag = header.sys_flag
        cdef Py_ssize_t count
        broker = self.broker
        store = self.store
        properties[CLUSTER] = broker.config.broker_cluster_name
        if store.put_waits(properties.get(WAIT) != "false"):
            return None
        body = request.body
        if body is None:
            body = b""
        if store.refuses_plain(len(body), 0):
            return None
        try:
            stored_properties = (<str>_properties_to_string(properties)).encode("utf-8")
            born_host = pack_host(remote_address)
            store_host = self._packed_store_host(broker.store_host)
        except (UnicodeEncodeError, ValueError):
            return None
        topic = header.topic
        topic_bytes = (<str>topic).encode("utf-8")
        if topic_config.topic_filter_type == MULTI_TAG:
            sys_flag |= MULTI_TAGS
        try:
            records, count = _encode_batch(body, topic_bytes, max(queue_id, 0), sys_flag, header.born_timestamp,
                                           born_host, 0, store_host, header.reconsume_times or 0, stored_properties)
        except ValueError:
            return None
        if count == 0 or len(records) > <Py_ssize_t>store.max_records_length:
            return None
        # Declining stops here: the processor would draw the same random queue id again.
        if queue_id < 0:
            queue_id = random_queue_id(topic_config.write_queue_nums)
            _set_queue_id(records, queue_id)
        return (records, count, topic, queue_id)

    def take_frames(self, client, data, Py_ssize_t position, list taken):
        """A front's loop over what a client sent: build the plain sends among the whole frames of
        ``data[position:]`` (each with its length prefix) and append them to ``taken``; relay the others to the
        broker process (``client.relay``, a run of them in one call, in order). Returns where the whole frames
        end: the start of an incomplete frame, or of a length that no frame has (the caller relays the rest),
        or ``len(data)``."""
        cdef const uint8_t* raw
        cdef Py_ssize_t size, end, relay_from
        cdef uint32_t length
        if not PyBytes_CheckExact(data):
            data = bytes(data)
        raw = <const uint8_t*>PyBytes_AS_STRING(data)
        size = PyBytes_GET_SIZE(data)
        remote_address = client.remote_address
        relay_from = position
        while size - position >= 4:
            length = load_u32(raw + position)
            if length < 4 or length > MAX_FRAME_LENGTH:
                break
            end = position + 4 + length
            if end > size:
                break
            send = self._take(client, remote_address, data, raw, position, end)
            if send is not None:
                if relay_from < position:
                    client.relay(data[relay_from:position])
                taken.append(send)
                relay_from = end
            position = end
        if relay_from < position:
            client.relay(data[relay_from:position])
        return position

    cdef object _take(self, client, remote_address, bytes data, const uint8_t* raw, Py_ssize_t start,
                      Py_ssize_t end):
        """The frame ``data[start:end]`` built, when it is a plain send; None when the broker process serves it."""
        cdef int code
        if end - start >= 10 and raw[start + 4] == SERIALIZE_ROCKETMQ:
            code = load_u16(raw + start + 8)
            if code != SEND_MESSAGE_V2 and code != SEND_MESSAGE and code != SEND_BATCH_MESSAGE:
                return None  # the binary header's code comes first: no need to decode a pull's frame
        cdef Py_ssize_t frame_length = end - start - 4
        cdef Py_ssize_t header_length = -1
        if frame_length >= 4:
            header_length = load_u32(raw + start + 4) & 0xFFFFFF
        try:
            if 0 <= header_length and frame_length - 4 - header_length >= VIEWED_BODY:
                request = _decode_frame(raw + start + 4, 4 + header_length)
                request.body = memoryview(data)[start + 8 + header_length:end]
            else:
                request = _decode_frame(raw + start + 4, frame_length)
        except CodecError:
            return None
        if (<int>request.flag) & FLAG_RESPONSE:
            return None
        built = self.build(remote_address, request)
        if built is None:
            return None
        records, count, topic, queue_id = <tuple>built
        return (client, self, request, data, start, end, records, count, (<str>topic).encode("utf-8"), queue_id)

    cdef object _respond_at(self, request, long long queue_id, tuple offsets, Py_ssize_t first, Py_ssize_t count,
                            long long queue_offset):
        """``respond`` to a send whose records were placed at ``offsets[first:first + count]``."""
        cdef int64_t offset
        if count == 1:
            offset = offsets[first]
            return self._stored(request, self._store_host_hex + _offset_hex(offset), queue_id, queue_offset)
        return self.respond(request, queue_id, offsets[first:first + count], queue_offset)

    def respond(self, request, long long queue_id, physical_offsets, long long queue_offset):
        """The processor's SUCCESS answer to a send whose records ``build`` made and the store placed at
        ``physical_offsets``, the first at ``queue_offset``."""
        cdef str host_hex = self._store_host_hex
        cdef int64_t offset
        if len(physical_offsets) == 1:
            offset = physical_offsets[0]
            return self._stored(request, host_hex + _offset_hex(offset), queue_id, queue_offset)
        return self._stored(request, ",".join([host_hex + _offset_hex(offset) for offset in physical_offsets]),
                            queue_id, queue_offset)

    cdef _stored(self, request, str msg_id, long long queue_id, long long queue_offset):
        """The processor's SUCCESS answer: the region fields, then SendMessageResponseHeader's."""
        cdef dict answer = dict(self.processor.region_fields)
        answer["msgId"] = msg_id
        answer["queueId"] = str(queue_id)
        answer["queueOffset"] = str(queue_offset)
        return _new_command(0, DEFAULT_LANGUAGE, DEFAULT_VERSION, request.opaque, FLAG_RESPONSE, None, answer, None,
                            request.serialize_type, None)

    cdef bytes _packed_store_host(self, addr):
        # The store host is the broker's address, which is known only once it listens: pack it when it changes.
        if addr != self._store_addr:
            self._store_host = pack_host(addr)
            self._store_host_hex = self._store_host.hex().upper()
            self._store_addr = addr
        return self._store_host

    cdef bint _remember_plain(self, topic) except -1:
        """True, remembering it, when ``topic`` passes the processor's name checks and is no retry topic."""
        if (validate_topic(topic) is not None or _is_not_allowed_send_topic(topic)
                or (<str>topic).startswith(RETRY_PREFIX)):
            return False
        if len(self._plain_topics) >= PLAIN_TOPICS_MAX:
            self._plain_topics.clear()
        self._plain_topics.add(topic)
        return True


cdef object _unpack_from = struct.unpack_from
cdef object _encode_command = codec.encode_command


def answer_placed(sends, payload, Py_ssize_t position):
    """The answers to ``sends``, which the broker process placed: for each client, its answers' frames in one
    bytes, in the order of its sends (a oneway send has none). From ``position`` in ``payload`` come each
    record's physical offset, then each send's queue offset, as big-endian int64."""
    cdef Py_ssize_t records = 0
    cdef Py_ssize_t first = 0
    cdef Py_ssize_t count, index
    cdef tuple send
    cdef SendFastPath path
    for send in sends:
        records += <Py_ssize_t>send[7]
    cdef tuple offsets = _unpack_from(f">{records}q", payload, position)
    cdef tuple queue_offsets = _unpack_from(f">{len(sends)}q", payload, position + 8 * records)
    cdef dict answers = {}
    cdef list frames
    index = 0
    for send in sends:
        count = send[7]
        request = send[2]
        if not (<int>request.flag) & FLAG_ONEWAY:
            path = <SendFastPath?>send[1]
            answer = _encode_command(path._respond_at(request, send[9], offsets, first, count, queue_offsets[index]))
            client = send[0]
            frames = answers.get(client)
            if frames is None:
                answers[client] = [answer]
            else:
                frames.append(answer)
        first += count
        index += 1
    return {client: b"".join(frames) for client, frames in answers.items()}
