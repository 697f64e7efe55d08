"""Robustness of both codecs against corrupted, truncated and oversized input.

Whatever the bytes, decoding either returns or raises CodecError (or a
subclass): no other exception, no crash, no hang, and no buffering beyond
what arrived. The compiled module is built without Cython's bounds checks, so
these tests exercise its own checks.
"""
from __future__ import annotations

import struct
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketmq_py._codec_types import RemotingCommand
from rocketmq_py.errors import CodecError, FrameTooLargeError

FUZZ = settings(deadline=None, max_examples=200, suppress_health_check=[HealthCheck.too_slow])

lengths = st.sampled_from([-(2**31), -1, 0, 1, 3, 4, 20, 21, 0x7FFF, 0x8000, 0xFFFF, 0xFFFFFF, 0x1000000,
                           16777212, 16777213, 2**31 - 1])


@st.composite
def corrupted(draw, valid: bytes) -> bytes:
    data = bytearray(valid)
    for _ in range(draw(st.integers(1, 4))):
        if not data:
            break
        at = draw(st.integers(0, len(data) - 1))
        action = draw(st.sampled_from(["cut", "flip", "int32", "int16", "byte"]))
        if action == "cut":
            del data[at:]
        elif action == "flip":
            data[at] ^= 0xFF
        elif action == "int32":
            data[at:at + 4] = struct.pack(">i", draw(lengths))
        elif action == "int16":
            data[at:at + 2] = struct.pack(">h", max(-(2**15), min(2**15 - 1, draw(lengths))))
        else:
            data[at] = draw(st.integers(0, 255))
    return bytes(data)


def only_codec_errors(function, *args, **kwargs):
    try:
        return function(*args, **kwargs)
    except CodecError:
        return None


def _command(serialize_type: int) -> RemotingCommand:
    return RemotingCommand(code=310, opaque=7, remark="r", ext_fields={"a": "group", "i": "K\x01V\x02T\x01A"},
                           body=b"body", serialize_type=serialize_type)


def _record(codec, sys_flag=0, body=b"message body " * 8) -> bytes:
    return codec.encode_store_record(topic="TopicTest", body=body, properties={"TAGS": "A", "KEYS": "k"},
                                     sys_flag=sys_flag, born_host="10.0.0.1:1", store_host="[::1]:10911")


@FUZZ
@given(data=st.data(), serialize_type=st.sampled_from([0, 1]), noise=st.binary(max_size=64))
def test_frames_fail_only_with_codec_errors(codec_impl, data, serialize_type, noise):
    frame = codec_impl.encode_command(_command(serialize_type))
    only_codec_errors(codec_impl.decode_frame, data.draw(corrupted(frame[4:])))
    only_codec_errors(codec_impl.decode_frame, noise)
    only_codec_errors(codec_impl.decode_rocketmq_header, noise)
    only_codec_errors(codec_impl.decode_json_header, noise)


@FUZZ
@given(data=st.data(), chunk_sizes=st.lists(st.integers(1, 64), min_size=1, max_size=8))
def test_frame_decoder_fails_only_with_codec_errors_and_stays_failed(codec_impl, data, chunk_sizes):
    stream = b"".join(codec_impl.encode_command(_command(i % 2)) for i in range(3))
    stream = data.draw(corrupted(stream))
    decoder = codec_impl.FrameDecoder()
    position = 0
    failure = None
    for size in chunk_sizes * 8:
        chunk = stream[position:position + size]
        position += size
        try:
            decoder.feed(chunk)
        except CodecError as error:
            failure = error
            break
        assert decoder.buffered <= len(stream)
    if failure is not None:
        with pytest.raises(type(failure)):
            decoder.feed(b"")
        with pytest.raises(CodecError):
            decoder.feed(codec_impl.encode_command(_command(1)))


@FUZZ
@given(declared=st.integers(0, 16777212), received=st.binary(max_size=256))
def test_declared_length_buffers_only_what_arrived(codec_impl, declared, received):
    decoder = codec_impl.FrameDecoder()
    prefix = struct.pack(">i", declared)
    received = received[:declared]
    commands = only_codec_errors(decoder.feed, prefix + received)
    if commands == [] and len(received) < declared:
        assert decoder.buffered == 4 + len(received)


@FUZZ
@given(declared=st.integers(16777213, 2**31 - 1), limit=st.sampled_from([None, 1024]))
def test_oversized_length_fails_at_once(codec_impl, declared, limit):
    decoder = codec_impl.FrameDecoder() if limit is None else codec_impl.FrameDecoder(limit)
    with pytest.raises(FrameTooLargeError):
        decoder.feed(struct.pack(">i", declared))
    assert decoder.buffered == 0
    with pytest.raises(FrameTooLargeError):
        decoder.feed(b"more")


def test_sixteen_mib_declared_frame_does_not_allocate_it(codec_impl):
    decoder = codec_impl.FrameDecoder()
    tracemalloc.start()
    try:
        assert decoder.feed(struct.pack(">i", 16777212)) == []
        for _ in range(64):
            assert decoder.feed(b"x" * 16) == []
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert decoder.buffered == 4 + 64 * 16
    assert peak < 1 << 20


@FUZZ
@given(data=st.data(), compressed=st.sampled_from([0, 0x1, 0x101, 0x201, 0x301]), strict=st.booleans())
def test_store_records_fail_only_with_codec_errors(codec_impl, data, compressed, strict):
    body = b"message body " * 8
    if compressed:
        kind = codec_impl.compression_type(compressed)
        body = codec_impl.compress(body, kind)
    pull = _record(codec_impl, compressed, body) * 2
    bad = data.draw(corrupted(pull))
    if strict:
        only_codec_errors(codec_impl.decode_store_records, bad)
    else:
        messages = codec_impl.decode_store_records(bad, strict=False)
        assert len(messages) <= 2


@FUZZ
@given(noise=st.binary(max_size=200), strict=st.booleans())
def test_random_store_bytes_fail_only_with_codec_errors(codec_impl, noise, strict):
    result = only_codec_errors(codec_impl.decode_store_records, noise, strict=strict)
    if not strict:
        assert result is not None


@FUZZ
@given(data=st.data(), noise=st.binary(max_size=120))
def test_batches_fail_only_with_codec_errors(codec_impl, data, noise):
    body = codec_impl.encode_batch([(0, b"one", {"UNIQ_KEY": "X"}), (1, b"two", "TAGS\x01B")])
    only_codec_errors(codec_impl.decode_batch, data.draw(corrupted(body)))
    only_codec_errors(codec_impl.decode_batch, noise)


@FUZZ
@given(noise=st.binary(max_size=120), kind=st.sampled_from([0, 1, 2, 3, 9]))
def test_decompression_fails_only_with_codec_errors(codec_impl, noise, kind):
    only_codec_errors(codec_impl.decompress, noise, kind)


@FUZZ
@given(text=st.text(st.sampled_from('{}[]:,"0123456789.-+eEtrufalsn_$ \\\x01x'), max_size=60),
       raw=st.binary(max_size=40))
def test_json_fails_only_with_codec_errors(codec_impl, text, raw):
    for value in (text, raw):
        try:
            codec_impl.json_loads(value)
        except CodecError:
            pass


@FUZZ
@given(text=st.text(max_size=60))
def test_text_helpers_never_raise_other_errors(codec_impl, text):
    assert isinstance(codec_impl.string_to_properties(text), dict)
    only_codec_errors(codec_impl.decode_offset_msg_id, text)
    only_codec_errors(codec_impl.unique_id_ip, text)
    only_codec_errors(codec_impl.unique_id_timestamp, text, now_ms=1700000000000)


def test_deep_nesting_fails_cleanly(codec_impl):
    for text in ("[" * 100000, "{" * 100000, "{1:" * 100000, '{"a":' * 100000):
        with pytest.raises(CodecError):
            codec_impl.json_loads(text)
    header = ('{"extFields":' * 5000).encode()
    with pytest.raises(CodecError):
        codec_impl.decode_json_header(header)
