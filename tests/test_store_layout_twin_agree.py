"""Differential and fuzz tests: the compiled ``_layout`` and the twin ``_layout_py`` give the same results and
the same errors for the same input, and no input, however corrupt, makes a scanner crash or raise."""
from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketmq_py import codec
from rocketmq_py.store import _layout_py as twin

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

int32 = st.integers(-(1 << 31), (1 << 31) - 1)
int64 = st.integers(-(1 << 63), (1 << 63) - 1)
hosts = st.one_of(st.binary(min_size=8, max_size=8), st.binary(min_size=20, max_size=20))
property_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
properties = st.dictionaries(
    st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY", "DELAY", "a", "b"]) | property_text, property_text, max_size=5,
).map(lambda d: codec.properties_to_string(d).encode())
topics = st.sampled_from([b"T", b"SCHEDULE_TOPIC_XXXX", b"%RETRY%g"]) | st.binary(max_size=127)


def outcome(function, *args):
    """The result, or the exception type and whether the output buffer changed."""
    try:
        return ("ok", _plain(function(*args)))
    except Exception as error:  # noqa: BLE001 - the type is what is compared
        return ("error", type(error).__name__)


def _plain(value):
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    if hasattr(value, "as_tuple"):
        return value.as_tuple()
    return value


@pytest.fixture(scope="module")
def layouts(twins):
    return twins("rocketmq_py.store._layout")


def both(layouts, name, make_args):
    """Run ``name`` on both implementations with fresh copies of the arguments; compare results and buffers."""
    results = []
    for module in (layouts.twin, layouts.compiled):
        args = make_args()
        results.append((outcome(getattr(module, name), *args), [bytes(a) for a in args if isinstance(a, bytearray)]))
    assert results[0] == results[1]
    return results[0][0]


record_args = st.tuples(topics, st.binary(max_size=200), properties, int32, int32, int32, int64, hosts, hosts, int32,
                        int64)


@SETTINGS
@given(record_args, st.integers(0, 700), st.integers(0, 700), int64, int64, int64)
def test_encode_record_and_append_records_agree(layouts, fields, position, limit, queue_offset, physical, store_ts):
    result = both(layouts, "encode_record", lambda: fields)
    if result[0] == "ok":
        record = result[1]
        # A schedule-topic record whose DELAY is not a number is built, and then does not read (Java's parseInt).
        assert twin.check_record(record, 0, len(record), True).size in (len(record), twin.RECORD_INVALID)
        limit = max(limit, position)
        both(layouts, "append_records", lambda: (bytearray(700), position, limit, record, [queue_offset], physical, store_ts))


@SETTINGS
@given(st.lists(st.tuples(int32, st.binary(max_size=50), st.dictionaries(property_text, property_text, max_size=3)),
                max_size=5), st.binary(max_size=20), hosts, hosts, int32)
def test_encode_batch_agrees(layouts, items, batch_properties, born, store, sys_flag):
    body = codec.encode_batch(items)
    result = both(layouts, "encode_batch", lambda: (body, b"Topic", 3, sys_flag, 1, born, 2, store, 0, batch_properties))
    if result[0] == "ok":
        records, count = result[1]
        assert count == len(items)
        buffer = bytearray(len(records) + 8)
        offsets = list(range(5, 5 + count))
        assert both(layouts, "append_records", lambda: (bytearray(buffer), 0, len(buffer), records, offsets, 100, 9)) == (
            "ok", count)


@SETTINGS
@given(st.binary(max_size=300))
def test_encode_batch_on_garbage_agrees(layouts, body):
    both(layouts, "encode_batch", lambda: (body, b"T", 0, 0, 0, bytes(8), 0, bytes(8), 0, b"x\x01y"))


@SETTINGS
@given(st.binary(max_size=400), st.integers(0, 400), st.integers(0, 400), st.lists(int64, max_size=3))
def test_append_records_on_garbage_agrees(layouts, records, position, limit, queue_offsets):
    both(layouts, "append_records", lambda: (bytearray(800), position, max(position, limit), records, queue_offsets, 2, 3))


@SETTINGS
@given(st.binary(max_size=300), int32)
def test_set_queue_id_agrees(layouts, records, queue_id):
    both(layouts, "set_queue_id", lambda: (bytearray(records), queue_id))


def _record_stream(draw_messages) -> bytearray:
    buf = bytearray(4096)
    position = 0
    for topic, body, props in draw_messages:
        record = twin.encode_record(topic, body, props, 1, 0, 0, 0, bytes(8), bytes(8), 0, 0)
        if not twin.append_records(buf, position, len(buf), record, [0], position, 0):
            break
        position += len(record)
    return buf


corruptions = st.lists(st.tuples(st.integers(0, 4095), st.integers(0, 255)), max_size=8)


@SETTINGS
@given(st.lists(st.tuples(topics, st.binary(max_size=100), properties), max_size=6), corruptions,
       st.integers(0, 4096), st.booleans())
def test_scanners_agree_and_never_raise_on_corrupt_records(layouts, messages, flips, cut, check_crc):
    buf = _record_stream(messages)
    for index, value in flips:
        buf[index] = value
    data = bytes(buf[:cut])
    for name in ("check_record", "scan_valid_end", "read_store_timestamp"):
        extra = (check_crc,) if name != "read_store_timestamp" else ()
        for start in (0, min(cut, 48), min(cut, 137)):
            result = both(layouts, name, lambda: (data, start, len(data), *extra))
            assert result[0] == "ok", f"{name} raised {result[1]} on corrupt input"


@SETTINGS
@given(st.binary(max_size=600), st.integers(0, 600), st.booleans())
def test_scanners_never_raise_on_random_bytes(layouts, data, start, check_crc):
    start = min(start, len(data))
    for name, extra in (("check_record", (check_crc,)), ("scan_valid_end", (check_crc,)),
                        ("read_store_timestamp", ()), ("cq_valid_end", ())):
        assert both(layouts, name, lambda: (data, start, len(data), *extra))[0] == "ok"
    assert both(layouts, "cq_read_units", lambda: (data, start, len(data), 7))[0] == "ok"


@SETTINGS
@given(st.lists(st.tuples(int64, int32, int64), max_size=10), st.integers(0, 10), st.integers(-2, 12))
def test_consume_queue_agrees(layouts, units, blanks, max_units):
    def build(module):
        buf = bytearray(20 * 25)
        module.cq_fill_blank(buf, 0, blanks * 20)
        for i, unit in enumerate(units):
            module.cq_put_unit(buf, (blanks + i) * 20, *unit)
        return buf

    assert build(layouts.twin) == build(layouts.compiled)
    data = bytes(build(twin))
    both(layouts, "cq_valid_end", lambda: (data, 0, len(data)))
    both(layouts, "cq_read_units", lambda: (data, 0, len(data), max_units))


index_ops = st.lists(st.tuples(st.integers(0, (1 << 31) - 1), int64, st.integers(0, 1 << 45)), max_size=30)


@SETTINGS
@given(index_ops, st.integers(1, 8), st.integers(1, 12), int64, st.integers(0, 1 << 45))
def test_index_agrees(layouts, ops, slots, entries, start_phy, start_ts):
    size = twin.index_file_size(slots, entries)
    buffers = {}
    for module in (layouts.twin, layouts.compiled):
        buf = bytearray(size)
        module.index_start(buf, start_phy, start_ts)
        results = [module.index_put(buf, slots, entries, *op) for op in ops]
        buffers[module] = (bytes(buf), results)
    assert buffers[layouts.twin] == buffers[layouts.compiled]
    data = buffers[layouts.twin][0]
    for key_hash, _phy, ts in ops[:5]:
        both(layouts, "index_select", lambda: (data, slots, entries, key_hash, 5, ts - 5000, ts + 5000))
    both(layouts, "index_header", lambda: (data,))


@SETTINGS
@given(st.binary(min_size=40, max_size=400), st.integers(1, 6), st.integers(1, 12), st.integers(0, (1 << 31) - 1),
       int64, int64)
def test_index_select_on_garbage_agrees(layouts, data, slots, entries, key_hash, begin, end):
    both(layouts, "index_select", lambda: (data, slots, entries, key_hash, 10, begin, end))
    both(layouts, "index_put", lambda: (bytearray(data), slots, entries, key_hash, 1, 2))


@SETTINGS
@given(st.text(max_size=20))
def test_hashes_agree(layouts, text):
    java_hash = codec.java_string_hash(text)  # the layouts' C-level hash must be the codec's
    index_hash = 0 if java_hash == -(1 << 31) else abs(java_hash)
    assert layouts.twin.index_key_hash(text) == layouts.compiled.index_key_hash(text) == index_hash


@pytest.mark.parametrize("name,args", [
    ("cq_put_unit", lambda: (bytearray(20), 1, 0, 0, 0)),
    ("cq_put_unit", lambda: (b"\x00" * 20, 0, 0, 0, 0)),
    ("cq_put_unit", lambda: (bytearray(20), 0, 0, 1 << 31, 0)),
    ("cq_fill_blank", lambda: (bytearray(20), 0, 21)),
    ("index_put", lambda: (bytearray(100), 4, 8, 1, 0, 0)),
    ("index_put", lambda: (bytearray(twin.index_file_size(4, 8)), 4, 8, -1, 0, 0)),
    ("index_header", lambda: (bytes(39),)),
    ("append_records", lambda: (bytearray(100), 0, 100, struct.pack(">i", 1 << 20) + bytes(60), [0], 0, 0)),
    ("set_queue_id", lambda: (bytearray(20), 1 << 31)),
    ("check_record", lambda: (bytes(10), -1, 5)),
])
def test_same_errors(layouts, name, args):
    result = both(layouts, name, args)
    assert result[0] == "error"
