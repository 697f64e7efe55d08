"""Differential tests: the compiled codec and the pure-Python twin agree on every input.

Hypothesis feeds both modules the same input; they must return equal results
or raise the same exception type. The twin is the oracle; the ``twin`` and
``compiled`` fixtures are the codec's pair from the ``twins`` fixture.
"""
from __future__ import annotations

import json
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketmq_py import _codec_py as twin_module
from rocketmq_py._codec_types import JsonObjectKey, RemotingCommand
from rocketmq_py.common.message import MessageExt

SETTINGS = settings(deadline=None, max_examples=150, suppress_health_check=[HealthCheck.too_slow])


# --- comparing outcomes ------------------------------------------------------------------------


def canon(value):
    """A comparable form: NaN-safe floats, ordered dicts, the fields of the shared classes."""
    if isinstance(value, RemotingCommand):
        return ("RemotingCommand",) + tuple(canon(getattr(value, name)) for name in RemotingCommand.FIELDS)
    if isinstance(value, MessageExt):
        return ("MessageExt", canon(value.fields()))
    if isinstance(value, JsonObjectKey):
        return ("JsonObjectKey", tuple(canon(item) for item in value))
    if isinstance(value, dict):
        return ("dict", tuple((canon(k), canon(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(canon(item) for item in value))
    if isinstance(value, float):
        return ("float", repr(value))
    return (type(value).__name__, value)


def outcome(function, *args, **kwargs):
    try:
        return ("returned", canon(function(*args, **kwargs)))
    except Exception as error:  # the exception type is part of the contract
        return ("raised", type(error).__name__)


def run_both(twin, compiled, name, *args, **kwargs):
    return (
        outcome(getattr(twin, name), *args, **kwargs),
        outcome(getattr(compiled, name), *args, **kwargs),
    )


def assert_agree(twin, compiled, name, *args, **kwargs):
    """Both modules give the same outcome."""
    expected, actual = run_both(twin, compiled, name, *args, **kwargs)
    assert actual == expected, f"{name}{args!r}: twin {expected!r}, compiled {actual!r}"
    return actual


# --- strategies ----------------------------------------------------------------------------------------

any_text = st.text(st.characters(blacklist_categories=()), max_size=24)
plain_text = st.text(max_size=24)
int32 = st.integers(-(2**31), 2**31 - 1)
wide_int = st.one_of(int32, st.integers(-(2**70), 2**70), st.booleans())

commands = st.builds(
    RemotingCommand,
    code=wide_int,
    language=st.one_of(st.integers(0, 14), st.integers(-3, 300)),
    version=wide_int,
    opaque=wide_int,
    flag=wide_int,
    remark=st.none() | any_text,
    ext_fields=st.none() | st.dictionaries(
        any_text, st.one_of(st.none(), any_text, st.integers(0, 9)), max_size=8,
    ),
    body=st.none() | st.binary(max_size=48),
    serialize_type=st.one_of(st.sampled_from([0, 1]), st.integers(-1, 3), st.sampled_from(
        [True, False, 1.0, 0.0, 1.5, 2**64, 2**64 + 1, -(2**63) - 1, None, "1"])),
)

valid_commands = st.builds(
    RemotingCommand,
    code=int32,
    language=st.integers(0, 12),
    version=st.integers(-(2**15), 2**15 - 1),
    opaque=int32,
    flag=int32,
    remark=st.none() | plain_text,
    ext_fields=st.none() | st.dictionaries(plain_text, plain_text, max_size=6),
    body=st.none() | st.binary(max_size=48),
    serialize_type=st.sampled_from([0, 1]),
)

interesting_lengths = st.sampled_from([0, 1, 2, 3, 4, 5, 21, 127, 128, 255, 0x7FFF, 0x8000, 0xFFFF,
                                       0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0x00FFFFFF, 16777212, 16777213])


@st.composite
def binary_headers(draw):
    """ROCKETMQ headers with random fixed fields and, sometimes, lying lengths."""
    entries = draw(st.lists(st.tuples(st.binary(max_size=6), st.binary(max_size=6)), max_size=5))
    ext = bytearray()
    for key, value in entries:
        key_length = draw(st.one_of(st.just(len(key)), st.integers(-2, 8)))
        value_length = draw(st.one_of(st.just(len(value)), st.integers(-2, 8)))
        ext += struct.pack(">h", key_length) + key + struct.pack(">i", value_length) + value
    remark = draw(st.binary(max_size=8))
    remark_length = draw(st.one_of(st.just(len(remark)), st.integers(-2, 12)))
    ext_length = draw(st.one_of(st.just(len(ext)), st.integers(-2, len(ext) + 4)))
    fixed = draw(st.binary(min_size=13, max_size=13))
    return fixed + struct.pack(">i", remark_length) + remark + struct.pack(">i", ext_length) + bytes(ext)


json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**40), 2**40), st.floats(), any_text)
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(plain_text, children, max_size=4),
    max_leaves=12,
)


@st.composite
def json_headers(draw):
    """JSON headers shaped like Java's, with wrong types and odd values mixed in."""
    header = {}
    for name in ("code", "extFields", "flag", "language", "opaque", "remark", "serializeTypeCurrentRPC", "version"):
        if draw(st.integers(0, 5)) == 0:
            continue
        if name == "extFields":
            header[name] = draw(st.one_of(
                st.dictionaries(any_text, st.one_of(any_text, json_scalars), max_size=5), json_values))
        elif name in ("language", "remark", "serializeTypeCurrentRPC"):
            header[name] = draw(st.one_of(st.sampled_from(["JAVA", "PYTHON", "GO", "NOPE"]), json_values))
        else:
            header[name] = draw(st.one_of(int32, json_values, st.integers(-(2**40), 2**40)))
    text = json.dumps(header, ensure_ascii=draw(st.booleans()), separators=draw(
        st.sampled_from([(",", ":"), (", ", ": ")])))
    return text.encode("utf-8", "surrogatepass")


@st.composite
def mutations(draw, data: bytes) -> bytes:
    """``data`` truncated, bit-flipped, with a length patched, or with bytes inserted."""
    data = bytearray(data)
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["truncate", "flip", "patch32", "patch16", "insert"]))
        if not data:
            break
        at = draw(st.integers(0, len(data) - 1))
        if kind == "truncate":
            del data[at:]
        elif kind == "flip":
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "patch32":
            data[at:at + 4] = struct.pack(">I", draw(interesting_lengths) & 0xFFFFFFFF)
        elif kind == "patch16":
            data[at:at + 2] = struct.pack(">H", draw(interesting_lengths) & 0xFFFF)
        else:
            data[at:at] = draw(st.binary(min_size=1, max_size=4))
    return bytes(data)


# --- frames and headers -----------------------------------------------------------------------------


@SETTINGS
@given(cmd=commands)
def test_commands_round_trip_alike(twin, compiled, cmd):
    encoded = assert_agree(twin, compiled, "encode_command", cmd)
    if encoded[0] == "returned":
        frame = twin.encode_command(cmd)
        assert_agree(twin, compiled, "decode_frame", frame[4:])
        assert_agree(twin, compiled, "encode_json_header", cmd)
        assert_agree(twin, compiled, "encode_rocketmq_header", cmd)


@SETTINGS
@given(cmd=valid_commands)
def test_valid_commands_decode_to_themselves(twin, compiled, cmd):
    frame = compiled.encode_command(cmd)
    assert frame == twin.encode_command(cmd)
    decoded = compiled.decode_frame(frame[4:])
    assert canon(decoded) == canon(twin.decode_frame(frame[4:]))
    assert (decoded.code, decoded.opaque, decoded.flag, decoded.remark or None, decoded.body) == (
        cmd.code if cmd.serialize_type == 0 else struct.unpack(">h", struct.pack(">H", cmd.code & 0xFFFF))[0],
        cmd.opaque, cmd.flag, cmd.remark or None, cmd.body or None,
    )


@SETTINGS
@given(cmd=commands)
def test_new_command_alike(twin, compiled, cmd):
    fields = [getattr(cmd, name) for name in RemotingCommand.FIELDS]
    assert canon(compiled.new_command(*fields)) == canon(twin.new_command(*fields)) == canon(cmd)


@SETTINGS
@given(text=st.text(max_size=40), ensure_ascii=st.booleans())
def test_escaped_json_header_values_alike(twin, compiled, text, ensure_ascii):
    """Property strings carry \\u0001 and \\u0002 escapes; any text around them decodes alike."""
    value = "\x01".join((text, "\x02", text[::-1]))
    header = json.dumps({"code": 310, "extFields": {"i": value}}, ensure_ascii=ensure_ascii)
    assert_agree(twin, compiled, "decode_json_header", header.encode("utf-8", "surrogatepass"))
    if ensure_ascii or not any("\ud800" <= ch <= "\udfff" for ch in text):  # raw lone surrogates are not UTF-8
        assert compiled.decode_json_header(header.encode("utf-8", "surrogatepass")).ext_fields == {"i": value}


@pytest.mark.parametrize("header", [
    # The fast path notes whether the extFields map it parsed last held only strings; these must not mislead it.
    '{"code":1,"extFields":{"a":"b"},"extFields":{"a":1.5}}',  # the fast path gives up inside the second map
    '{"code":1,"extFields":{"a":1},"extFields":{"a":"b"}}',
    '{"code":1,"extFields":{"a":"b"},"extFields":"x"}',
    '{"code":1,"extFields":{"a":"b","c":{"d":"e"}}}',
    '{"code":1,"extFields":{"c":{"d":1},"a":"b"}}',
    '{"code":1,"extFields":{"a":"b","n":7,"t":true,"z":null}}',
    '{"code":1,"extFields":{}}',
    '{"code":1,"extFields":{"a":"b"},"remark":{"c":"d"}}',
    '{"code":1,"extFields":{"a":"x\\u00e9\\u0001' + "y" * 300 + '"}}',  # an escaped value longer than 256
    '{"code":1,"extFields":{"a":"\\u00ff\\u0100"}}',  # an escape beyond one byte
    '{"code":2147483647,"flag":-2147483648,"opaque":2147483648,"extFields":{"a":"b"}}',
    '{"code":true,"extFields":{"a":"b"}}',
    '{"code":1,"extFields":{"é":"ü","a":"x"}}',  # not ASCII: a 1-byte str whose bytes are not its UTF-8
    '{"code":1,"language":"PYTHON","extFields":{"a":"b"}}',
    '{"code":1,"language":"NOT_A_LANGUAGE","extFields":{"a":"b"}}',
])
def test_json_headers_with_mixed_ext_values_decode_alike(twin, compiled, header):
    assert_agree(twin, compiled, "decode_json_header", header.encode())


@SETTINGS
@given(data=st.binary(max_size=96))
def test_random_frames_decode_alike(twin, compiled, data):
    assert_agree(twin, compiled, "decode_frame", data)


@SETTINGS
@given(header=binary_headers(), body=st.binary(max_size=8))
def test_random_binary_headers_decode_alike(twin, compiled, header, body):
    assert_agree(twin, compiled, "decode_rocketmq_header", header)
    frame = struct.pack(">I", (1 << 24) | len(header)) + header + body
    assert_agree(twin, compiled, "decode_frame", frame)


@SETTINGS
@given(header=json_headers(), body=st.binary(max_size=8))
def test_random_json_headers_decode_alike(twin, compiled, header, body):
    assert_agree(twin, compiled, "decode_json_header", header)
    frame = struct.pack(">I", len(header)) + header + body
    assert_agree(twin, compiled, "decode_frame", frame)


@SETTINGS
@given(data=st.data(), cmd=valid_commands)
def test_mutated_frames_decode_alike(twin, compiled, data, cmd):
    frame = twin.encode_command(cmd)[4:]
    mutated = data.draw(mutations(frame))
    assert_agree(twin, compiled, "decode_frame", mutated)


def _feed_all(decoder, chunks):
    results = []
    for chunk in chunks:
        try:
            results.append(("returned", canon(decoder.feed(chunk)), decoder.buffered))
        except Exception as error:
            results.append(("raised", type(error).__name__))
    return results


@SETTINGS
@given(data=st.data(), cmds=st.lists(valid_commands, min_size=1, max_size=4))
def test_frame_decoders_cut_streams_alike(twin, compiled, data, cmds):
    stream = b"".join(twin.encode_command(cmd) for cmd in cmds)
    if data.draw(st.booleans()):
        stream = data.draw(mutations(stream))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=6)))
    chunks = [stream[a:b] for a, b in zip([0] + cuts, cuts + [len(stream)])]
    chunks.append(b"\x00\x00\x00\x00")  # one more feed: a failed decoder must stay failed
    first = len(twin.encode_command(cmds[0]))
    limit = data.draw(st.sampled_from([twin.MAX_FRAME_LENGTH, first, first - 1, 64, 200]))
    expected = _feed_all(twin.FrameDecoder(limit), chunks)
    actual = _feed_all(compiled.FrameDecoder(limit), chunks)
    assert actual == expected


# --- properties and batches --------------------------------------------------------------------------

separator_text = st.text(st.one_of(st.sampled_from("\x01\x02ab\u00e9"), st.characters(blacklist_categories=())),
                         max_size=40)


@SETTINGS
@given(properties=st.dictionaries(any_text, st.none() | any_text, max_size=8), text=separator_text)
def test_properties_alike(twin, compiled, properties, text):
    assert_agree(twin, compiled, "properties_to_string", properties)
    assert_agree(twin, compiled, "string_to_properties", text)
    assert_agree(twin, compiled, "string_to_properties", twin.properties_to_string(
        {k: v for k, v in properties.items() if v is not None}))


batch_items = st.lists(
    st.tuples(wide_int, st.binary(max_size=32),
              st.one_of(st.dictionaries(any_text, any_text, max_size=4), separator_text)),
    max_size=5,
)


@SETTINGS
@given(data=st.data(), items=batch_items)
def test_batches_alike(twin, compiled, data, items):
    encoded = assert_agree(twin, compiled, "encode_batch", items)
    if encoded[0] == "returned":
        body = twin.encode_batch(items)
        assert_agree(twin, compiled, "decode_batch", body)
        assert_agree(twin, compiled, "decode_batch", data.draw(mutations(body)) if body else body)
    assert_agree(twin, compiled, "decode_batch", data.draw(st.binary(max_size=64)))


# --- store records ----------------------------------------------------------------------------------

hosts = st.one_of(
    st.builds(lambda ip, port: f"{ip}:{port}", st.ip_addresses(v=4), st.integers(0, 65535)),
    st.builds(lambda ip, port: f"[{ip}]:{port}", st.ip_addresses(v=6), st.integers(0, 65535)),
    st.builds(lambda ip, port: (str(ip), port), st.ip_addresses(), int32),
)
int64 = st.integers(-(2**63), 2**63 - 1)


@st.composite
def store_records(draw):
    compression = draw(st.sampled_from([None, None, 1, 2, 3, 0]))
    body = draw(st.binary(max_size=80))
    sys_flag = draw(st.one_of(st.just(0), int32))
    if compression is not None:
        body = twin_module.compress(body, compression or 3)
        sys_flag = (sys_flag & ~0x701) | 0x1 | (compression << 8)
    else:
        sys_flag &= ~0x1
    return twin_module.encode_store_record(
        topic=draw(st.text(max_size=20)),
        body=body,
        properties=draw(st.one_of(st.dictionaries(plain_text, plain_text, max_size=5), separator_text)),
        queue_id=draw(int32), flag=draw(int32), queue_offset=draw(int64), physical_offset=draw(int64),
        sys_flag=sys_flag, born_timestamp=draw(int64), born_host=draw(hosts),
        store_timestamp=draw(int64), store_host=draw(hosts), reconsume_times=draw(int32),
        prepared_transaction_offset=draw(int64),
    )


# Names that repeat (a duplicate in one record) and texts that are not UTF-8 once encoded (a lone surrogate).
_FEW_NAMES = st.sampled_from(["A", "B", "TAGS", "\ud800", "\u00e9", ""])
property_names = st.one_of(_FEW_NAMES, _FEW_NAMES, _FEW_NAMES, plain_text)
property_values = st.one_of(st.sampled_from(["0", "true", "TagA", "", "\ud800", "x\x01y"]), plain_text)


@st.composite
def property_runs(draw):
    """The properties of consecutive records, as one producer writes them: the same names in the same order, with
    values that change or stay; now and then a value left empty, a name dropped, or a segment more."""
    base = draw(st.lists(st.tuples(property_names, property_values), max_size=20))
    runs = []
    for _ in range(draw(st.integers(2, 4))):
        segments = []
        for name, value in base:
            change = draw(st.sampled_from(["same", "same", "same", "value", "empty", "no name"]))
            if change == "value":
                value = draw(property_values)
            elif change == "empty":
                value = ""
            elif change == "no name":
                name = ""
            segments.append(f"{name}\x01{value}")
        if draw(st.integers(0, 3)) == 0:
            segments.append(draw(st.sampled_from(["", "lone", "A\x01", "\x01v", "B\x01b"])))
        runs.append("\x02".join(segments))
    return runs


@SETTINGS
@given(runs=property_runs())
def test_records_with_the_previous_records_property_names_alike(twin, compiled, runs):
    """The compiled decoder starts a record's properties from the previous record's dict when the names are the same:
    the same dicts, in the same order, as parsing each record's properties afresh."""
    body = b"".join(twin_module.encode_store_record(topic="T", body=b"b", properties=text, queue_offset=offset)
                    for offset, text in enumerate(runs))
    expected = [twin_module.string_to_properties(text.encode("utf-8", "surrogatepass").decode("utf-8", "replace"))
                for text in runs]
    assert assert_agree(twin, compiled, "decode_store_records", body)[0] == "returned"
    messages = compiled.decode_store_records(body)
    assert [list(message.properties.items()) for message in messages] == [list(fields.items()) for fields in expected]


@pytest.mark.parametrize("count", [15, 16, 17, 63, 64, 65, 130])
def test_properties_with_many_segments_alike(twin, compiled, count):
    """Past 16 segments the memo steps aside and past 64 the compiled parser finds the segments as it goes: the
    same dicts either way, in string_to_properties and in consecutive records."""
    segments = [f"k{i % 70}\x01v{i}" if i % 7 else ("" if i % 2 else "lone") for i in range(count)]
    text = "\x02".join(segments)
    assert list(compiled.string_to_properties(text).items()) == list(twin.string_to_properties(text).items())
    body = b"".join(twin_module.encode_store_record(topic="T", body=b"b", properties=text, queue_offset=offset)
                    for offset in range(3))
    assert assert_agree(twin, compiled, "decode_store_records", body)[0] == "returned"


@SETTINGS
@given(data=st.data(), records=st.lists(store_records(), min_size=1, max_size=3))
def test_store_records_alike(twin, compiled, data, records):
    body = b"".join(records)
    for strict in (True, False):
        assert_agree(twin, compiled, "decode_store_records", body, strict=strict)
        assert_agree(twin, compiled, "decode_store_records", body, decompress_body=False, strict=strict)
    mutated = data.draw(mutations(body))
    for strict in (True, False):
        assert_agree(twin, compiled, "decode_store_records", mutated, strict=strict)


@SETTINGS
@given(
    topic=any_text, body=st.binary(max_size=40), born=hosts, store=hosts, sys_flag=wide_int,
    numbers=st.tuples(wide_int, wide_int, wide_int, wide_int, wide_int, wide_int, wide_int, wide_int),
    body_crc=st.none() | wide_int,
    properties=st.one_of(st.none(), st.dictionaries(any_text, any_text, max_size=3), any_text),
)
def test_store_record_encoding_alike(twin, compiled, topic, body, born, store, sys_flag, numbers, body_crc, properties):
    queue_id, flag, queue_offset, physical_offset, born_ts, store_ts, reconsume, prepared = numbers
    assert_agree(
        twin, compiled, "encode_store_record", topic=topic, body=body, properties=properties,
        queue_id=queue_id, flag=flag, queue_offset=queue_offset, physical_offset=physical_offset,
        sys_flag=sys_flag, born_timestamp=born_ts, born_host=born, store_timestamp=store_ts,
        store_host=store, reconsume_times=reconsume, prepared_transaction_offset=prepared, body_crc=body_crc,
    )


@SETTINGS
@given(body=st.binary(max_size=300), kind=st.sampled_from([0, 1, 2, 3, 4, -1]), garbage=st.binary(max_size=40))
def test_compression_alike(twin, compiled, body, kind, garbage):
    assert_agree(twin, compiled, "compress", body, kind)
    if kind in (1, 2, 3):
        assert_agree(twin, compiled, "decompress", twin.compress(body, kind), kind)
    assert_agree(twin, compiled, "decompress", garbage, kind)
    assert_agree(twin, compiled, "compression_type", kind << 8 | 1)


# --- JSON ---------------------------------------------------------------------------------------------------

json_keys = st.one_of(
    plain_text, st.integers(-1000, 10**12),
    st.builds(JsonObjectKey, st.dictionaries(st.sampled_from(["brokerName", "queueId", "topic"]),
                                              st.one_of(plain_text, st.integers(0, 64)), max_size=3)),
)
fastjson_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(json_keys, children, max_size=3),
    max_leaves=10,
)
jsonish_text = st.text(st.sampled_from('{}[]:,"0123456789.-+eEtrufalsnbc_$ \n\\\x01'), max_size=40)


@SETTINGS
@given(value=json_values, fastjson=fastjson_values, text=jsonish_text)
def test_json_loads_alike(twin, compiled, value, fastjson, text):
    standard = json.dumps(value)
    assert_agree(twin, compiled, "json_loads", standard)
    assert_agree(twin, compiled, "json_loads", standard.encode())
    written = twin.json_dumps(fastjson)
    assert_agree(twin, compiled, "json_loads", written)
    assert_agree(twin, compiled, "json_loads", twin.json_dumps(fastjson, pretty=True))
    assert_agree(twin, compiled, "json_loads", text)


odd_keys = st.one_of(json_keys, st.none(), st.booleans(), st.floats(), st.tuples(st.integers()))
odd_values = st.recursive(
    st.one_of(json_scalars, st.sets(st.integers(), max_size=3), st.builds(object)),
    lambda children: st.lists(children, max_size=3) | st.tuples(children)
    | st.dictionaries(odd_keys, children, max_size=3),
    max_leaves=10,
)


@SETTINGS
@given(value=odd_values, quote_keys=st.booleans(), pretty=st.booleans())
def test_json_dumps_alike(twin, compiled, value, quote_keys, pretty):
    assert_agree(twin, compiled, "json_dumps", value, quote_keys=quote_keys, pretty=pretty)


def test_deep_json_alike(twin, compiled):
    for depth in (255, 256, 257, 300):
        text = "{1:" * depth + "0" + "}" * depth
        assert_agree(twin, compiled, "json_loads", text)
        nested: object = 0
        for _ in range(depth):
            nested = [nested]
        assert_agree(twin, compiled, "json_dumps", nested)


# --- message ids and hashes ---------------------------------------------------------------------------------

hex_ids = st.one_of(
    st.text("0123456789ABCDEFabcdef", min_size=32, max_size=32),
    st.text("0123456789ABCDEFabcdef", min_size=56, max_size=56),
    st.text("0123456789ABCDEF xyz", max_size=60),
)
now_ms = st.integers(946684800000, 4102444800000)  # 2000 to 2100


@SETTINGS
@given(host=st.one_of(st.ip_addresses().map(str), plain_text), port=wide_int, offset=wide_int, msg_id=hex_ids,
       now=now_ms)
def test_message_ids_alike(twin, compiled, host, port, offset, msg_id, now):
    assert_agree(twin, compiled, "create_offset_msg_id", host, port, offset)
    assert_agree(twin, compiled, "decode_offset_msg_id", msg_id)
    assert_agree(twin, compiled, "unique_id_ip", msg_id)
    assert_agree(twin, compiled, "unique_id_timestamp", msg_id, now_ms=now)


@SETTINGS
@given(ip=st.one_of(st.binary(min_size=4, max_size=4), st.binary(min_size=16, max_size=16), st.binary(max_size=6)),
       pid=wide_int, instance_hash=wide_int, start=now_ms, steps=st.lists(st.integers(0, 10**10), max_size=5))
def test_unique_ids_alike(twin, compiled, ip, pid, instance_hash, start, steps):
    created = run_both(twin, compiled, "UniqueIdGenerator", ip, pid, instance_hash)
    assert created[0][0] == created[1][0]
    if created[0][0] == "raised":
        assert created[0] == created[1]
        return
    ours = compiled.UniqueIdGenerator(ip, pid, instance_hash)
    theirs = twin.UniqueIdGenerator(ip, pid, instance_hash)
    assert ours.prefix == theirs.prefix
    now = start
    for step in steps:
        now += step
        mine, oracle = ours.next_id(now_ms=now), theirs.next_id(now_ms=now)
        assert mine == oracle
        assert_agree(twin, compiled, "unique_id_timestamp", mine, now_ms=now + 1000)


@SETTINGS
@given(text=st.text(st.characters(blacklist_categories=()), max_size=60), data=st.binary(max_size=200),
       sys_flag=wide_int)
def test_hashes_alike(twin, compiled, text, data, sys_flag):
    assert_agree(twin, compiled, "java_string_hash", text)
    assert_agree(twin, compiled, "crc32_masked", data)
    assert_agree(twin, compiled, "compression_type", sys_flag)
