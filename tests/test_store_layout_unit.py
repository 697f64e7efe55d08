"""The store byte layouts, checked for both implementations: the compiled ``_layout`` and its twin ``_layout_py``.

Records must equal what the codec's reference encoder builds and what Java's
decoder (the codec's port of it) reads back; the blank marker, batches,
ConsumeQueue units and IndexFile entries follow Java's rules.
"""
from __future__ import annotations

import socket
import struct
import zlib

import pytest

from rocketmq_py import codec
@pytest.fixture(scope="module", params=["twin", "compiled"])
def impl(request, twins):
    return twins("rocketmq_py.store._layout").side(request.param)


def host(ip: str, port: int) -> bytes:
    family = socket.AF_INET6 if ":" in ip else socket.AF_INET
    return socket.inet_pton(family, ip) + struct.pack(">i", port)


BORN = host("10.0.0.5", 41234)
STORE = host("127.0.0.1", 10911)
PROPS = codec.properties_to_string({"TAGS": "TagA", "KEYS": "k1 k2", "UNIQ_KEY": "C0A8"}).encode()


def append(impl, buf, position=0, limit=None, topic=b"TopicA", body=b"hello", props=PROPS, queue_offset=7,
           physical_offset=1000, sys_flag=0, born=BORN, store=STORE, store_ts=2000, crc=None, prepared=0):
    """One record written at ``position`` as the store writes it, built and then placed: its length, or 0 when
    only the end-of-file marker was written."""
    record = impl.encode_record(topic, body, props, 2, 9, sys_flag, 1500, born, store, 3, prepared)
    if crc is not None:
        struct.pack_into(">i", record, 8, crc)
    placed = impl.append_records(buf, position, len(buf) if limit is None else limit, record, [queue_offset],
                                 physical_offset, store_ts)
    return len(record) if placed else 0


@pytest.mark.parametrize("born_ip,store_ip", [("10.0.0.5", "127.0.0.1"), ("::1", "127.0.0.1"), ("10.0.0.5", "fe80::2")])
def test_record_equals_the_reference_encoder(impl, born_ip, store_ip):
    buf = bytearray(4096)
    size = append(impl, buf, born=host(born_ip, 41234), store=host(store_ip, 10911), sys_flag=0x1)
    reference = codec.encode_store_record(
        topic="TopicA", body=b"hello", properties=PROPS.decode(), queue_id=2, flag=9, queue_offset=7,
        physical_offset=1000, sys_flag=0x1, born_timestamp=1500, born_host=(born_ip, 41234), store_timestamp=2000,
        store_host=(store_ip, 10911), reconsume_times=3,
    )
    assert bytes(buf[:size]) == reference
    assert size == impl.record_length(struct.unpack_from(">i", buf, 36)[0], 5, 6, len(PROPS))
    [message] = codec.decode_store_records(bytes(buf[:size]), decompress_body=False)
    assert (message.topic, message.body, message.queue_offset, message.commit_log_offset) == (
        "TopicA", b"hello", 7, 1000)
    assert message.tags == "TagA" and message.keys == "k1 k2"


def test_blank_marker_when_record_plus_eight_bytes_does_not_fit(impl):
    size = append(impl, bytearray(4096))
    exact = bytearray(size + 8)
    assert append(impl, exact) == size
    short = bytearray(b"\xee" * (size + 7))
    assert append(impl, short) == 0
    assert struct.unpack_from(">ii", short, 0) == (size + 7, impl.BLANK_MAGIC_CODE)
    assert short[8:] == b"\xee" * (size - 1), "only the 8 marker bytes are written"
    offset = bytearray(b"\xee" * 100)
    assert append(impl, offset, position=30, limit=90) == 0
    assert struct.unpack_from(">ii", offset, 30) == (60, impl.BLANK_MAGIC_CODE)
    tiny = bytearray(b"\xee" * 10)
    assert append(impl, tiny, position=5, limit=10) == 0
    assert tiny == b"\xee" * 10, "fewer than 8 bytes left: nothing to mark"


def test_check_record_reports_dispatch_fields(impl):
    buf = bytearray(4096)
    size = append(impl, buf, prepared=77)
    info = impl.check_record(buf, 0, len(buf))
    assert (info.size, info.topic, info.queue_id, info.physical_offset, info.queue_offset, info.store_timestamp) == (
        size, "TopicA", 2, 1000, 7, 2000)
    assert (info.tags_code, info.keys, info.uniq_key, info.prepared_transaction_offset) == (
        codec.java_string_hash("TagA"), "k1 k2", "C0A8", 77)
    assert info.properties == PROPS.decode()
    assert impl.read_store_timestamp(buf, 0, len(buf)) == 2000


def test_check_record_invalid_cases(impl):
    buf = bytearray(4096)
    size = append(impl, buf, crc=12345)
    assert impl.check_record(buf, 0, len(buf)).size == impl.RECORD_INVALID
    assert impl.check_record(buf, 0, len(buf), check_crc=False).size == size
    assert impl.check_record(buf, 0, size - 1, check_crc=False).size == impl.RECORD_INVALID
    assert impl.check_record(bytes(64), 0, 64).size == impl.RECORD_INVALID
    assert impl.check_record(bytes(7), 0, 7).size == impl.RECORD_INVALID
    struct.pack_into(">i", buf, 0, size + 1)
    assert impl.check_record(buf, 0, len(buf), check_crc=False).size == impl.RECORD_INVALID


def test_schedule_topic_delay_level(impl):
    buf = bytearray(4096)
    delayed = codec.properties_to_string({"DELAY": "3", "TAGS": "t"}).encode()
    append(impl, buf, topic=b"SCHEDULE_TOPIC_XXXX", props=delayed)
    assert impl.check_record(buf, 0, len(buf)).delay_level == 3
    append(impl, buf, topic=b"SCHEDULE_TOPIC_XXXX", props=b"DELAY\x01x3")
    assert impl.check_record(buf, 0, len(buf)).size == impl.RECORD_INVALID, "Java's parseInt would throw"
    append(impl, buf, topic=b"Other", props=b"DELAY\x01x3")
    info = impl.check_record(buf, 0, len(buf))
    assert info.size > 0 and info.delay_level == 0


def test_properties_parse_as_java(impl):
    buf = bytearray(4096)
    append(impl, buf, props=b"TAGS\x01\x02\x01x\x02KEYS\x01a\x02KEYS\x01b\x02junk")
    info = impl.check_record(buf, 0, len(buf))
    assert (info.tags_code, info.keys, info.uniq_key) == (0, "b", None)


def test_scan_valid_end(impl):
    buf = bytearray(4096)
    first = append(impl, buf)
    second = append(impl, buf, position=first, physical_offset=1000 + first)
    end = first + second
    assert impl.scan_valid_end(buf, 0, len(buf)) == (end, False)
    assert append(impl, buf, position=end, limit=end + 20) == 0
    assert impl.scan_valid_end(buf, 0, end + 20) == (end, True)
    buf[first + 30] ^= 0xFF  # inside the second record's born timestamp: size is still consistent
    assert impl.scan_valid_end(buf, 0, len(buf))[0] == end
    buf[first + 89] ^= 0xFF  # inside the second body (IPv4 hosts: the body starts at 88): CRC fails
    assert impl.scan_valid_end(buf, 0, len(buf)) == (first, False)
    assert impl.scan_valid_end(buf, 0, len(buf), check_crc=False) == (end, True)


def test_batch_records(impl):
    batch = codec.encode_batch([
        (0, b"one", {"UNIQ_KEY": "U1", "TAGS": "a"}),
        (4, b"two", {}),
        (8, b"three", {"KEYS": "k"}),
    ])
    records, count = impl.encode_batch(batch, b"T", 1, 0, 5, BORN, 6, STORE, 0, b"WAIT\x01true")
    assert count == 3
    buf = bytearray(4096)
    assert impl.append_records(buf, 100, len(buf), records, [40, 41, 42], 5000, 99) == 3
    messages = codec.decode_store_records(bytes(buf[100:100 + len(records)]))
    assert [m.body for m in messages] == [b"one", b"two", b"three"]
    assert [m.queue_offset for m in messages] == [40, 41, 42]
    assert [m.store_timestamp for m in messages] == [99] * 3
    assert [m.flag for m in messages] == [0, 4, 8]
    assert messages[0].properties == {"UNIQ_KEY": "U1", "TAGS": "a", "WAIT": "true"}
    assert messages[1].properties == {"WAIT": "true"}
    offsets = [m.commit_log_offset for m in messages]
    assert offsets[0] == 5000 and offsets[1] == 5000 + messages[0].store_size
    assert all(m.body_crc == zlib.crc32(m.body) & 0x7FFFFFFF for m in messages)
    assert impl.append_records(buf, 0, len(records) + 7, records, [0, 0, 0], 0, 0) == 0, "the whole batch moves on"


def test_records_of_several_queues_each_take_their_own_queue_offset(impl):
    first = impl.encode_record(b"A", b"one", b"", 0, 0, 0, 1, BORN, STORE, 0, 0)
    second = impl.encode_record(b"B", b"two", b"", 3, 0, 4, 1, BORN, STORE, 0, 9)
    records = first + second
    buf = bytearray(1024)
    assert impl.append_records(buf, 0, len(buf), records, [7, 0], 100, 55) == 2
    messages = codec.decode_store_records(bytes(buf[:len(records)]), decompress_body=False)
    assert [(m.topic, m.queue_id, m.queue_offset, m.commit_log_offset, m.store_timestamp) for m in messages] == [
        ("A", 0, 7, 100, 55), ("B", 3, 0, 100 + len(first), 55)]
    assert messages[1].prepared_transaction_offset == 9
    untouched = bytearray(1024)
    with pytest.raises(ValueError):
        impl.append_records(untouched, 0, len(untouched), records, [7], 100, 55)
    assert untouched == bytearray(1024), "a refused put writes nothing"


def test_set_queue_id_writes_every_record(impl):
    records, _ = impl.encode_batch(codec.encode_batch([(0, b"a", {}), (0, b"bc", {"K": "v"})]), b"T", 0, 0, 0, BORN,
                                   0, STORE, 0, b"")
    impl.set_queue_id(records, 5)
    assert [m.queue_id for m in codec.decode_store_records(bytes(records))] == [5, 5]
    struct.pack_into(">i", records, 0, 0)
    with pytest.raises(ValueError):
        impl.set_queue_id(records, 1)


def test_batch_property_separator_rules(impl):
    batch = codec.encode_batch([(0, b"x", {})])
    raw = bytearray(batch)
    raw = raw[:-2] + struct.pack(">h", 4) + b"a\x01b\x02"  # item properties already end with the separator
    struct.pack_into(">i", raw, 0, len(raw))
    records, _ = impl.encode_batch(bytes(raw), b"T", 0, 0, 0, BORN, 0, STORE, 0, b"c\x01d")
    assert records.endswith(b"a\x01b\x02c\x01d")
    records, _ = impl.encode_batch(bytes(raw), b"T", 0, 0, 0, BORN, 0, STORE, 0, b"")
    assert records.endswith(b"a\x01b\x02")


@pytest.mark.parametrize("body", [
    b"\x00" * 19, b"\x00" * 16 + b"\x00\x00\x00\x09abc", b"\x00" * 16 + b"\xff\xff\xff\xff",
])
def test_malformed_batch_raises_value_error(impl, body):
    with pytest.raises(ValueError):
        impl.encode_batch(body, b"T", 0, 0, 0, BORN, 0, STORE, 0, b"")


def test_argument_errors(impl):
    buf = bytearray(4096)
    with pytest.raises(ValueError):
        append(impl, bytes(4096))
    with pytest.raises(ValueError):
        append(impl, buf, topic=b"t" * 128)
    with pytest.raises(ValueError):
        append(impl, buf, props=b"p" * 32768)
    with pytest.raises(ValueError):
        append(impl, buf, born=b"\x00" * 7)
    with pytest.raises(ValueError):
        append(impl, buf, limit=5000)
    with pytest.raises(ValueError):
        impl.check_record(buf, 10, 5)
    with pytest.raises(OverflowError):
        append(impl, buf, queue_offset=1 << 63)
    with pytest.raises(ValueError):
        impl.append_records(buf, 0, 100, b"\x00\x00\x00\x05" + bytes(60), [0], 0, 0)


def test_consume_queue_units(impl):
    buf = bytearray(200)
    impl.cq_fill_blank(buf, 0, 60)
    impl.cq_put_unit(buf, 60, 1 << 40, 300, -5)
    impl.cq_put_unit(buf, 80, 7, 0, 0)
    units = impl.cq_read_units(buf, 0, 200, 5)
    assert units[:5] == [(0, 0x7FFFFFFF, 0)] * 3 + [(1 << 40, 300, -5), (7, 0, 0)]
    assert impl.cq_read_units(buf, 190, 200, 5) == []
    assert impl.cq_valid_end(buf, 0, 200) == (80, (1 << 40) + 300)
    assert impl.cq_valid_end(buf, 80, 200) == (80, -1)
    assert struct.unpack_from(">qiq", buf, 60) == (1 << 40, 300, -5)


def test_index_file_chains_slots_like_java(impl):
    slots, entries = 4, 8
    buf = bytearray(impl.index_file_size(slots, entries))
    assert len(buf) == 40 + 4 * 4 + 8 * 20
    impl.index_start(buf, 500, 1_000_000)
    assert impl.index_header(buf) == (1_000_000, 1_000_000, 500, 500, 0, 1)
    keys = ["T#a", "T#b", "T#a", "T#c", "T#a"]
    for i, key in enumerate(keys):
        assert impl.index_put(buf, slots, entries, impl.index_key_hash(key), 1000 + i, 1_000_000 + i * 5000)
    header = impl.index_header(buf)
    assert header[2:] == (1000, 1004, len({impl.index_key_hash(k) % slots for k in keys}), 6)
    assert header[:2] == (1_000_000, 1_020_000)
    found = impl.index_select(buf, slots, entries, impl.index_key_hash("T#a"), 10, 0, 2_000_000)
    assert found == [1004, 1002, 1000]
    assert impl.index_select(buf, slots, entries, impl.index_key_hash("T#a"), 2, 0, 2_000_000) == [1004, 1002]
    assert impl.index_select(buf, slots, entries, impl.index_key_hash("T#a"), 10, 1_009_000, 2_000_000) == [1004, 1002]
    assert impl.index_select(buf, slots, entries, impl.index_key_hash("T#zz"), 10, 0, 2_000_000) == []
    entry = 40 + slots * 4 + 3 * 20  # the third entry: the second "T#a", 10 s after the begin
    assert struct.unpack_from(">iqii", buf, entry) == (impl.index_key_hash("T#a"), 1002, 10, 1)
    assert impl.index_put(buf, slots, entries, 1, 1, 1) and impl.index_put(buf, slots, entries, 2, 2, 2)
    assert not impl.index_put(buf, slots, entries, 3, 3, 3), "8 entries hold indexes 1..7"


def test_index_key_hash_matches_java(impl):
    assert impl.index_key_hash("polygenelubricants") == 0  # hashCode is Integer.MIN_VALUE
    assert impl.index_key_hash("Aa") == impl.index_key_hash("BB")
    negative = next(s for s in (f"topic#key-{i}" for i in range(1000)) if codec.java_string_hash(s) < 0)
    assert impl.index_key_hash(negative) == -codec.java_string_hash(negative)
