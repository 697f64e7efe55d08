"""Known facts of the RocketMQ 4.9 wire and store formats, checked on both codecs.

Expected bytes and numbers are worked out from the format description
(shared/reference/rocketmq-4.9-wire.md, sections 1, 5 and 6), not copied from
either implementation's output.
"""
from __future__ import annotations

import enum
import os
import struct
import subprocess
import sys
import zlib

import pytest

from support.child import child_cwd
from rocketmq_py import codec as selected_codec
from rocketmq_py._codec_types import JsonObjectKey, RemotingCommand
from rocketmq_py.common.headers.offset import UpdateConsumerOffsetRequestHeader
from rocketmq_py.errors import CodecError, FrameTooLargeError


def _request(**fields) -> RemotingCommand:
    base = dict(code=105, language=0, version=409, opaque=3, flag=0)
    base.update(fields)
    return RemotingCommand(**base)


# --- selection -----------------------------------------------------------------------------------


def _implementation_in_subprocess(**env: str) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("ROCKETMQ_PY_")}
    environment.update(env)
    return subprocess.run(
        [sys.executable, "-c", "import rocketmq_py.codec as c; print(c.IMPLEMENTATION)"],
        cwd=child_cwd(), env=environment, capture_output=True, text=True, timeout=60,
    )


def test_required_extensions_select_cython(compiled):
    result = _implementation_in_subprocess(ROCKETMQ_PY_REQUIRE_EXTENSIONS="1")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "cython"


def test_no_extensions_select_the_twin():
    result = _implementation_in_subprocess(ROCKETMQ_PY_NO_EXTENSIONS="1")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "python"


def test_this_process_uses_the_implementation_its_environment_asks_for(expected_implementation):
    assert selected_codec.IMPLEMENTATION == expected_implementation("rocketmq_py._codec")


def test_both_modules_offer_every_name_codec_selects(codec_impl):
    from rocketmq_py import _codec_types
    from rocketmq_py.common import magic_codes

    for name in selected_codec.__all__:
        if not hasattr(_codec_types, name) and not hasattr(magic_codes, name):  # those codec takes from their homes
            assert hasattr(codec_impl, name), name
    assert codec_impl.IMPLEMENTATION in ("python", "cython")


# --- frames and JSON header ------------------------------------------------------------------------


def test_json_header_sorted_keys_and_nulls_left_out(codec_impl):
    assert codec_impl.encode_json_header(_request()) == (
        b'{"code":105,"flag":0,"language":"JAVA","opaque":3,'
        b'"serializeTypeCurrentRPC":"JSON","version":409}'
    )
    cmd = _request(remark="r", ext_fields={"topic": "TopicTest", "gone": None})
    assert codec_impl.encode_json_header(cmd) == (
        b'{"code":105,"extFields":{"topic":"TopicTest"},"flag":0,"language":"JAVA","opaque":3,'
        b'"remark":"r","serializeTypeCurrentRPC":"JSON","version":409}'
    )


def test_json_header_escapes_control_characters(codec_impl):
    cmd = _request(ext_fields={"i": 'K\x01V\x02"\\\n\x7f\u00e9'})
    assert b'"i":"K\\u0001V\\u0002\\"\\\\\\n\x7f\xc3\xa9"' in codec_impl.encode_json_header(cmd)


def test_json_header_decodes_java_output(codec_impl):
    header = b'{"code":105,"extFields":{"topic":"TopicTest"},"flag":0,"language":"JAVA","opaque":3,' \
             b'"serializeTypeCurrentRPC":"JSON","version":409}'
    cmd = codec_impl.decode_frame(struct.pack(">I", len(header)) + header)
    assert cmd == RemotingCommand(code=105, language=0, version=409, opaque=3, flag=0,
                                  ext_fields={"topic": "TopicTest"}, serialize_type=0)


def test_binary_header_has_21_fixed_bytes(codec_impl):
    header = codec_impl.encode_rocketmq_header(_request())
    # int16 code, int8 language, int16 version, int32 opaque, int32 flag, int32 remark len, int32 ext len
    assert header == bytes.fromhex("0069" "00" "0199" "00000003" "00000000" "00000000" "00000000")


def test_binary_header_layout_with_remark_and_ext(codec_impl):
    header = codec_impl.encode_rocketmq_header(_request(remark="ok", ext_fields={"k": "vv"}))
    assert header == bytes.fromhex(
        "0069" "00" "0199" "00000003" "00000000"
        "00000002" "6f6b"  # remark "ok"
        "00000009" "0001" "6b" "00000002" "7676"  # ext: int16 key len, key, int32 value len, value
    )


def test_serialize_type_is_the_high_byte_of_the_header_length(codec_impl):
    binary = codec_impl.encode_command(_request(serialize_type=1, body=b"xyz"))
    assert binary[:8] == struct.pack(">ii", 4 + 21 + 3, (1 << 24) | 21)
    json_frame = codec_impl.encode_command(_request(serialize_type=0))
    header_length = len(codec_impl.encode_json_header(_request()))
    assert json_frame[:8] == struct.pack(">ii", 4 + header_length, header_length)
    assert codec_impl.decode_frame(binary[4:]).serialize_type == 1
    with pytest.raises(CodecError):
        codec_impl.decode_frame(struct.pack(">I", (2 << 24) | 0))


@pytest.mark.parametrize("serialize_type", [0, 1])
@pytest.mark.parametrize("flag, response, oneway", [(0, False, False), (1, True, False), (2, False, True), (3, True, True)])
def test_flag_bits_survive_both_serializations(codec_impl, serialize_type, flag, response, oneway):
    cmd = codec_impl.decode_frame(codec_impl.encode_command(_request(flag=flag, serialize_type=serialize_type))[4:])
    assert (cmd.flag, cmd.is_response, cmd.is_oneway) == (flag, response, oneway)


def test_empty_binary_strings_decode_as_absent(codec_impl):
    ext = b"".join((
        struct.pack(">h", 0), struct.pack(">i", 1), b"v",  # empty key
        struct.pack(">h", 1), b"k", struct.pack(">i", 0),  # empty value
        struct.pack(">h", 1), b"x", struct.pack(">i", 1), b"y",
    ))
    header = struct.pack(">hbhiii", 105, 0, 409, 3, 0, 0) + struct.pack(">i", len(ext)) + ext
    cmd = codec_impl.decode_rocketmq_header(header)
    assert cmd.remark is None
    assert cmd.ext_fields == {"x": "y"}
    bare = codec_impl.decode_rocketmq_header(struct.pack(">hbhiiii", 105, 0, 409, 3, 0, 0, 0))
    assert bare.remark is None and bare.ext_fields is None


def _binary_header_with(entries):
    ext = b"".join(
        struct.pack(">h", len(k)) + k + struct.pack(">i", len(v)) + v for k, v in entries
    )
    return struct.pack(">hbhiii", 310, 0, 409, 1, 0, 0) + struct.pack(">i", len(ext)) + ext


def test_duplicate_binary_ext_keys_keep_the_last(codec_impl):
    header = _binary_header_with([(b"a", b"1"), (b"b", b"x"), (b"a", b"2")])
    assert codec_impl.decode_rocketmq_header(header).ext_fields == {"a": "2", "b": "x"}


def test_duplicate_binary_ext_key_with_empty_last_value_is_absent(codec_impl):
    # Java reads the empty value as null, and HashMap.put keeps that last null.
    header = _binary_header_with([(b"a", b"1"), (b"b", b"x"), (b"a", b"")])
    assert codec_impl.decode_rocketmq_header(header).ext_fields == {"b": "x"}


def test_binary_lengths_are_bounded_by_the_header(codec_impl):
    base = struct.pack(">hbhiii", 105, 0, 409, 3, 0, 0) + struct.pack(">i", 0)
    with pytest.raises(CodecError):
        codec_impl.decode_rocketmq_header(base[:20])
    for remark_length in (-1, 5, 0x7FFFFFFF):
        bad = struct.pack(">hbhiii", 105, 0, 409, 3, 0, remark_length) + struct.pack(">i", 0)
        with pytest.raises(CodecError):
            codec_impl.decode_rocketmq_header(bad)
    for ext_length in (-1, 1, 0x7FFFFFFF):
        with pytest.raises(CodecError):
            codec_impl.decode_rocketmq_header(base[:17] + struct.pack(">i", ext_length))
    with pytest.raises(CodecError):  # key length past the ext block
        codec_impl.decode_rocketmq_header(base[:17] + struct.pack(">ih", 2, 5))


def test_header_length_beyond_the_frame_is_refused(codec_impl):
    with pytest.raises(CodecError):
        codec_impl.decode_frame(struct.pack(">I", 5) + b"{}")
    with pytest.raises(CodecError):
        codec_impl.decode_frame(b"\x00\x00")


def test_empty_body_decodes_as_none(codec_impl):
    frame = codec_impl.encode_command(_request(body=b""))
    assert codec_impl.decode_frame(frame[4:]).body is None


def test_decode_headers_accept_any_bytes_like(codec_impl):
    json_header = codec_impl.encode_json_header(_request())
    binary_header = codec_impl.encode_rocketmq_header(_request(remark="r", ext_fields={"k": "v"}))
    assert codec_impl.decode_json_header(memoryview(json_header)).code == 105
    assert codec_impl.decode_rocketmq_header(memoryview(binary_header)).ext_fields == {"k": "v"}


def test_frame_length_counts_body_bytes_not_items(codec_impl):
    import array

    frame = codec_impl.encode_command(_request(serialize_type=1, body=memoryview(array.array("i", [1, 2]))))
    assert struct.unpack_from(">i", frame)[0] == len(frame) - 4 == 4 + 21 + 8


# --- the 16 MiB frame limit -----------------------------------------------------------------------


def test_frame_limit_boundary(codec_impl):
    decoder = codec_impl.FrameDecoder()
    assert decoder.feed(struct.pack(">i", 16777212) + b"\x00\x00\x00\x15") == []
    assert decoder.buffered == 8  # only what arrived is kept
    with pytest.raises(FrameTooLargeError):
        codec_impl.FrameDecoder().feed(struct.pack(">i", 16777213))


def test_encode_refuses_a_frame_over_the_limit(codec_impl):
    body_room = 16777212 - 4 - 21  # length value 16777212 is the largest accepted
    frame = codec_impl.encode_command(_request(serialize_type=1, body=bytes(body_room)))
    assert struct.unpack_from(">i", frame)[0] == 16777212
    with pytest.raises(FrameTooLargeError):
        codec_impl.encode_command(_request(serialize_type=1, body=bytes(body_room + 1)))


def test_negative_length_fails_and_the_decoder_stays_failed(codec_impl):
    decoder = codec_impl.FrameDecoder()
    with pytest.raises(CodecError):
        decoder.feed(struct.pack(">i", -1))
    with pytest.raises(CodecError):
        decoder.feed(codec_impl.encode_command(_request()))
    assert decoder.buffered == 0


def test_decoder_cuts_frames_across_chunks(codec_impl):
    frames = [codec_impl.encode_command(_request(opaque=i, serialize_type=i % 2, body=b"b" * i)) for i in range(5)]
    stream = b"".join(frames)
    decoder = codec_impl.FrameDecoder()
    seen = []
    for i in range(0, len(stream), 7):
        seen.extend(decoder.feed(stream[i:i + 7]))
    assert [cmd.opaque for cmd in seen] == [0, 1, 2, 3, 4]
    assert decoder.buffered == 0
    assert codec_impl.FrameDecoder(max_frame_length=50).feed(frames[1]) != []  # 4 + 21 + 1 bytes
    with pytest.raises(FrameTooLargeError):
        codec_impl.FrameDecoder(max_frame_length=50).feed(frames[4] + b"x" * 100)


# --- properties ---------------------------------------------------------------------------------------


def test_properties_string_layout(codec_impl):
    assert codec_impl.properties_to_string({"TAGS": "TagA", "KEYS": "k1 k2", "X": None}) == "TAGS\x01TagA\x02KEYS\x01k1 k2"
    assert codec_impl.properties_to_string({}) == ""
    assert codec_impl.properties_to_string(None) == ""


def test_properties_parse_drops_empty_names_and_values(codec_impl):
    text = "\x01v\x02k\x01\x02a\x01b\x02\x02c\x02d\x01e\x01f\x02a\x01z"
    assert codec_impl.string_to_properties(text) == {"a": "z", "d": "e\x01f"}
    assert codec_impl.string_to_properties("") == {}
    assert codec_impl.string_to_properties(None) == {}


# --- batch bodies ---------------------------------------------------------------------------------------


def test_batch_item_layout(codec_impl):
    body = codec_impl.encode_batch([(5, b"xy", {"K": "V"}), (-1, b"", "")])
    assert body == (
        struct.pack(">iiiii", 27, 0, 0, 5, 2) + b"xy" + struct.pack(">h", 3) + b"K\x01V"
        + struct.pack(">iiiii", 22, 0, 0, -1, 0) + struct.pack(">h", 0)
    )
    assert codec_impl.decode_batch(body) == [(5, b"xy", {"K": "V"}), (-1, b"", {})]
    with pytest.raises(CodecError):
        codec_impl.decode_batch(body[:-1])


# --- store records ---------------------------------------------------------------------------------------


def test_store_record_size_for_ipv4(codec_impl):
    body = b"0123456789"
    record = codec_impl.encode_store_record(
        topic="T", body=body, properties="a\x01b", queue_id=1, queue_offset=7, physical_offset=4096,
        born_host="10.0.0.1:5000", store_host="10.0.0.2:10911",
    )
    assert len(record) == 91 + 10 + 1 + 3
    size, magic, crc, queue_id = struct.unpack_from(">iIii", record)
    assert (size, magic, queue_id) == (105, 0xDAA320A7, 1)
    assert crc == zlib.crc32(body) & 0x7FFFFFFF
    assert struct.unpack_from(">qq", record, 20) == (7, 4096)
    (message,) = codec_impl.decode_store_records(record)
    assert (message.topic, message.body, message.properties) == ("T", body, {"a": "b"})
    assert (message.born_host, message.store_host) == ("10.0.0.1:5000", "10.0.0.2:10911")
    assert message.offset_msg_id == "0A000002" "00002A9F" "0000000000001000"
    assert message.store_size == 105


def test_store_record_with_ipv6_hosts(codec_impl):
    record = codec_impl.encode_store_record(topic="T", body=b"", born_host="[::1]:1", store_host="[fe80::2]:10911")
    assert len(record) == 91 + 12 + 12 + 1
    (message,) = codec_impl.decode_store_records(record)
    assert message.sys_flag & 0x30 == 0x30
    assert (message.born_host, message.store_host) == ("[::1]:1", "[fe80::2]:10911")
    assert len(message.offset_msg_id) == 56


def test_negative_topic_length_is_refused(codec_impl):
    record = bytearray(codec_impl.encode_store_record(topic="T", body=b"b"))
    record[88 + 1] = 0x80  # the topic length byte: 88 bytes of fields, then the 1-byte body
    with pytest.raises(CodecError):
        codec_impl.decode_store_records(bytes(record))
    assert codec_impl.decode_store_records(bytes(record), strict=False) == []


def test_pull_body_stops_at_the_first_bad_record_when_not_strict(codec_impl):
    good = codec_impl.encode_store_record(topic="T", body=b"x")
    body = good + good + good[:30]
    assert len(codec_impl.decode_store_records(body, strict=False)) == 2
    with pytest.raises(CodecError):
        codec_impl.decode_store_records(body)


COMPRESSED_FORMS = [
    ("zlib, 4.9.0-4.9.3 flag", 0x1, 3),
    ("zlib, 4.9.4+ flag", 0x301, 3),
    ("lz4", 0x101, 1),
    ("zstd", 0x201, 2),
]


@pytest.mark.parametrize("name, sys_flag, kind", COMPRESSED_FORMS, ids=[f[0] for f in COMPRESSED_FORMS])
def test_compressed_store_records_decode(codec_impl, name, sys_flag, kind):
    original = b"RocketMQ compressed body " * 400
    compressed = codec_impl.compress(original, kind)
    record = codec_impl.encode_store_record(topic="T", body=compressed, sys_flag=sys_flag)
    (message,) = codec_impl.decode_store_records(record)
    assert message.body == original
    assert message.body_crc == zlib.crc32(compressed) & 0x7FFFFFFF  # CRC of the stored bytes
    (raw,) = codec_impl.decode_store_records(record, decompress_body=False)
    assert raw.body == compressed
    assert codec_impl.compression_type(sys_flag) == kind


def test_zlib_stream_as_java_deflater_writes_it(codec_impl):
    # Java's DeflaterOutputStream: zlib wrapper (78 xx), deflate data, adler32.
    stream = zlib.compress(b"hello hello hello", 5)
    assert codec_impl.decompress(stream, 3) == b"hello hello hello"


@pytest.mark.parametrize("kind", [1, 2, 3])
def test_truncated_compressed_body_is_refused(codec_impl, kind):
    compressed = codec_impl.compress(bytes(range(256)) * 64, kind)
    with pytest.raises(CodecError):
        codec_impl.decompress(compressed[: len(compressed) // 2], kind)


def test_zstd_bomb_stays_within_the_decompression_limit(codec_impl, monkeypatch):
    import tracemalloc

    import zstandard

    monkeypatch.setattr(codec_impl, "MAX_DECOMPRESSED_SIZE", 1 << 16)
    bomb = zstandard.ZstdCompressor(write_content_size=False).compress(bytes(32 << 20))
    tracemalloc.start()
    try:
        with pytest.raises(CodecError):
            codec_impl.decompress(bomb, 2)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20


# --- message ids and hashes ----------------------------------------------------------------------------------


def test_offset_msg_id_ipv4_and_ipv6(codec_impl):
    msg_id = codec_impl.create_offset_msg_id("10.0.0.1", 10911, 1234)
    assert msg_id == "0A000001" "00002A9F" "00000000000004D2"
    assert codec_impl.decode_offset_msg_id(msg_id) == ("10.0.0.1", 10911, 1234)
    v6 = codec_impl.create_offset_msg_id("::1", 10911, 1)
    assert len(v6) == 56 and v6.startswith("0" * 31 + "1")
    assert codec_impl.decode_offset_msg_id(v6) == ("::1", 10911, 1)
    with pytest.raises(CodecError):
        codec_impl.decode_offset_msg_id("XYZ")


def test_unique_id_layout(codec_impl):
    generator = codec_impl.UniqueIdGenerator(bytes([127, 0, 0, 1]), pid=0x1234, instance_hash=0x0A0B0C0D)
    assert generator.prefix == "7F000001" "1234" "0A0B0C0D"
    first = generator.next_id()
    second = generator.next_id()
    assert len(first) == 32 and first[:20] == generator.prefix
    assert (int(first[-4:], 16) + 1) & 0xFFFF == int(second[-4:], 16)
    assert codec_impl.unique_id_ip(first) == "127.0.0.1"
    with pytest.raises(CodecError):
        codec_impl.UniqueIdGenerator(b"\x01\x02\x03")


def test_month_start_follows_daylight_saving(codec_impl, monkeypatch):
    import time

    # Berlin's rule as a POSIX TZ string: the libc reads it without the zoneinfo files, which a machine may lack
    # (the test skipped there and read as a pass).
    monkeypatch.setenv("TZ", "CET-1CEST,M3.5.0,M10.5.0/3")
    monkeypatch.setattr(time, "time_ns", lambda: 1711886400000 * 1_000_000)
    time.tzset()
    try:
        # 2024-03-31 12:00 UTC (summer time): the month began 2024-03-01 00:00 CET = 02-29 23:00 UTC,
        # the next one begins 2024-04-01 00:00 CEST = 03-31 22:00 UTC.
        generator = codec_impl.UniqueIdGenerator(bytes(4), pid=1, instance_hash=1)
        msg_id = generator.next_id(now_ms=1711886400000)
        assert int(msg_id[20:28], 16) == 1711886400000 - 1709247600000
        assert codec_impl.unique_id_timestamp(msg_id, now_ms=1711886400000 + 5000) == 1711886400000
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


def _java_hash(text: str) -> int:
    units = text.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(units), 2):
        h = (h * 31 + int.from_bytes(units[i:i + 2], "big")) % (1 << 32)
    return h - (1 << 32) if h >= 1 << 31 else h


def test_java_string_hash(codec_impl):
    assert codec_impl.java_string_hash("TagA") == 2598919  # 84*31^3 + 97*31^2 + 103*31 + 65
    assert codec_impl.java_string_hash("") == 0
    for text in ("a long tag that overflows the int range", "\u00e9t\u00e9", "\U0001F600", "\ud800x"):
        assert codec_impl.java_string_hash(text) == _java_hash(text)


def test_crc_is_masked_to_31_bits(codec_impl):
    # CRC-32 check value of "123456789" is 0xCBF43926; Java's UtilAll.crc32 clears the sign bit.
    assert codec_impl.crc32_masked(b"123456789") == 0x4BF43926


# --- fastjson-compatible JSON ------------------------------------------------------------------------------------


def test_fastjson_unquoted_int_keys_both_ways(codec_impl):
    assert codec_impl.json_loads('{0:"10.0.0.1:10911",1:"10.0.0.2:10911"}') == {0: "10.0.0.1:10911", 1: "10.0.0.2:10911"}
    assert codec_impl.json_dumps({0: "a", 1: "b"}) == '{0:"a",1:"b"}'
    assert codec_impl.json_dumps({0: "a"}, quote_keys=True) == '{"0":"a"}'


def test_fastjson_object_keys_both_ways(codec_impl):
    text = '{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"t"}:5}}'
    key = JsonObjectKey({"topic": "t", "queueId": 0, "brokerName": "b"})
    assert codec_impl.json_loads(text) == {"offsetTable": {key: 5}}
    assert codec_impl.json_dumps({"offsetTable": {key: 5}}) == text
    assert codec_impl.json_dumps({key: 5}, quote_keys=True) == '{"{\\"brokerName\\":\\"b\\",\\"queueId\\":0,\\"topic\\":\\"t\\"}":5}'


def test_pretty_json_indents_with_tabs(codec_impl):
    assert codec_impl.json_dumps({"a": {"b": 1}, "c": []}, pretty=True) == '{\n\t"a":{\n\t\t"b":1\n\t},\n\t"c":[]\n}'


def test_json_errors_are_codec_errors(codec_impl):
    for text in ("{", '{"a":}', "[1,]", "{a b}", b"\xff", "[" * 5000, "{" * 2000):
        with pytest.raises(CodecError):
            codec_impl.json_loads(text)
    with pytest.raises(CodecError):
        codec_impl.json_dumps(object())
    with pytest.raises(CodecError):
        codec_impl.json_dumps({None: 1})


class _Code(enum.IntEnum):
    ONE = 1


def test_an_int_enum_is_written_as_its_digits_on_every_python(codec_impl):
    # Before Python 3.11, str() of an IntEnum member is its name ("_Code.ONE"): DLedger's bodies carried
    # "code":ResponseCode.SUCCESS on 3.10, which no member could read.
    assert codec_impl.json_dumps({"code": _Code.ONE, "codes": [_Code.ONE]}) == '{"code":1,"codes":[1]}'
    header = UpdateConsumerOffsetRequestHeader(consumer_group="g", topic="t", queue_id=_Code.ONE,
                                               commit_offset=_Code.ONE)
    fields = codec_impl.header_to_fields(header, UpdateConsumerOffsetRequestHeader._plan())
    assert (fields["queueId"], fields["commitOffset"]) == ("1", "1")
