"""The header mapping (header dataclass <-> extFields) in the compiled codec and its twin: the same headers,
the same extFields and the same errors, for every header class, on random and hostile field values."""
from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support.headers import HEADER_CLASSES, ext_block_entries, ext_fields_of, outcome, rocketmq_header
from rocketmq_py.common.headers.base import CommandHeader, MissingHeaderFieldError
from rocketmq_py.common.headers.send import SendMessageRequestHeaderV2

SETTINGS = settings(deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@pytest.mark.parametrize("cls", HEADER_CLASSES, ids=lambda cls: cls.__name__)
@given(data=st.data())
def test_reading_headers_alike(twin, compiled, cls, data):
    fields = data.draw(ext_fields_of(cls))
    plan = cls._plan()
    assert outcome(twin.header_from_fields, cls, fields, plan) == outcome(
        compiled.header_from_fields, cls, fields, plan)


@SETTINGS
@pytest.mark.parametrize("cls", HEADER_CLASSES, ids=lambda cls: cls.__name__)
@given(data=st.data())
def test_writing_headers_alike(twin, compiled, cls, data):
    plan = cls._plan()
    values = {}
    for attribute, _name, kind, _required, bits, _strict in plan.entries:
        limit = 1 << (bits - 1)
        values[attribute] = data.draw(st.none() | [
            st.text(max_size=8), st.integers(-limit, limit - 1) | st.integers(-(1 << 80), 1 << 80),
            st.booleans(), st.floats(allow_nan=False)][kind])
    header = cls(**values)
    written = twin.header_to_fields(header, plan)
    assert written == compiled.header_to_fields(header, plan)
    assert outcome(twin.header_from_fields, cls, written, plan) == outcome(
        compiled.header_from_fields, cls, written, plan)


def test_a_header_read_back_equals_the_one_written(twin, compiled):
    header = SendMessageRequestHeaderV2(
        producer_group="G", topic="T", default_topic="TBW102", default_topic_queue_nums=4, queue_id=3,
        sys_flag=0, born_timestamp=1_700_000_000_000, flag=0, properties="KEYS\x01k\x02", reconsume_times=0,
        unit_mode=False, batch=True, broker_name="broker-a")
    plan = SendMessageRequestHeaderV2._plan()
    for codec in (twin, compiled):
        fields = codec.header_to_fields(header, plan)
        assert fields["g"] == "1700000000000" and fields["m"] == "true" and "l" not in fields
        assert codec.header_from_fields(SendMessageRequestHeaderV2, fields, plan) == header


def test_a_missing_required_field_is_named(twin, compiled):
    plan = SendMessageRequestHeaderV2._plan()
    for codec in (twin, compiled):
        with pytest.raises(MissingHeaderFieldError, match="'a'"):
            codec.header_from_fields(SendMessageRequestHeaderV2, {}, plan)


def test_header_classes_are_found():
    # The property tests above are only as good as this list.
    assert len(HEADER_CLASSES) > 40 and SendMessageRequestHeaderV2 in HEADER_CLASSES


@pytest.mark.parametrize("serialize_type", [0, 1])
def test_compiled_decoders_hand_out_the_plans_own_wire_names(compiled, serialize_type: int) -> None:
    """A decoded key equal to a wire name is the plan's own object, so the plan's lookups match by identity."""
    from rocketmq_py._codec_types import RemotingCommand

    header = SendMessageRequestHeaderV2("group", "topic", "TBW102", 4, 0, 0, 1, 0, properties="p")
    fields = {**header.to_ext_fields(), "notAWireName": "x"}
    frame = compiled.encode_command(RemotingCommand(code=310, ext_fields=fields, serialize_type=serialize_type))
    for _ in range(2):  # the first decode fills the key cache, the second reads it
        decoded = compiled.decode_frame(frame[4:]).ext_fields
        assert decoded == fields
        keys = {key: key for key in decoded}
        assert all(keys[entry[1]] is entry[1] for entry in SendMessageRequestHeaderV2._plan().entries
                   if entry[1] in keys)


def test_keys_decoded_before_a_plan_exists_become_its_wire_names(compiled) -> None:
    """Plans are made on first use: keys the decoders cached before then are handed out as the plan's own objects
    once it exists."""
    from rocketmq_py._codec_types import RemotingCommand
    from rocketmq_py.common.headers.base import wire

    @dataclasses.dataclass(slots=True)
    class LateHeader(CommandHeader):
        short: str | None = wire("y")
        long: str | None = wire("lateHeaderWireName")

    fields = {"y": "1", "lateHeaderWireName": "2"}
    frame = compiled.encode_command(RemotingCommand(code=1, ext_fields=fields, serialize_type=1))
    assert compiled.decode_frame(frame[4:]).ext_fields == fields  # cached as plain text, no plan yet
    names = {entry[1]: entry[1] for entry in LateHeader._plan().entries}
    decoded = compiled.decode_frame(frame[4:]).ext_fields
    assert decoded == fields
    assert all(key is names[key] for key in decoded)
    assert LateHeader.from_ext_fields(decoded) == LateHeader("1", "2")


# --- reading a header straight from a ROCKETMQ frame's ext block ---------------------------------------------------


@SETTINGS
@pytest.mark.parametrize("cls", HEADER_CLASSES, ids=lambda cls: cls.__name__)
@given(data=st.data())
def test_reading_headers_from_frames_alike(twin, compiled, cls, data):
    """``from_command`` on a decoded ROCKETMQ frame reads the header from the ext block's bytes in the compiled codec:
    the same header, or the same error, as the twin reading the extFields dict it decodes."""
    entries = data.draw(ext_block_entries(cls))
    header = rocketmq_header(entries)
    expected_command = twin.decode_rocketmq_header(header)
    command = compiled.decode_rocketmq_header(header)
    assert (command._wire_ext is not None) == bool(entries)  # else this test would only exercise the dict path
    expected = outcome(twin.read_command_header, cls, expected_command)
    assert outcome(compiled.read_command_header, cls, command) == expected
    assert command._ext_fields is None  # read without making the dict
    assert command.ext_fields == expected_command.ext_fields
    assert outcome(compiled.read_command_header, cls, command) == expected  # and from the dict once it exists


def test_from_command_reads_what_from_ext_fields_reads(twin, compiled):
    header = SendMessageRequestHeaderV2("G", "T", "TBW102", 4, 3, 0, 1_700_000_000_000, 0, "KEYS\x01k", batch=True)
    for codec in (twin, compiled):
        for serialize_type in (0, 1):
            frame = codec.encode_command(codec.new_command(310, 0, 409, 1, 0, None, None, b"x", serialize_type,
                                                           header))
            decoded = codec.decode_frame(frame[4:])
            assert SendMessageRequestHeaderV2.from_command(decoded) == header
            assert codec.read_command_header(SendMessageRequestHeaderV2, decoded) == header
            assert SendMessageRequestHeaderV2.from_ext_fields(decoded.ext_fields) == header
