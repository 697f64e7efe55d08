"""A command carrying its header object (``custom_header``): the compiled encoder writes the header's fields
straight into the frame, and the frame is the one the command would make with those fields as strings in
``ext_fields``, in both codecs, in both serializations, with or without extra ``ext_fields``."""
from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketmq_py.client.api import MQClientAPI
from rocketmq_py.codec import RemotingCommand
from rocketmq_py.common.acl import SessionCredentials
from rocketmq_py.common.headers.base import CommandHeader, MissingHeaderFieldError, wire
from rocketmq_py.common.headers.send import SendMessageRequestHeaderV2
from rocketmq_py.remoting import RemotingClient
from rocketmq_py.remoting.command import create_request

from support.headers import HEADER_CLASSES, ext_fields_of, outcome

SETTINGS = settings(deadline=None, max_examples=40, suppress_health_check=[HealthCheck.too_slow])


def _send_header(**changes: object) -> SendMessageRequestHeaderV2:
    header = SendMessageRequestHeaderV2(
        "G", "T", "TBW102", 4, 3, 0, 1_700_000_000_000, 0, "KEYS\x01k\x02", 0, False, None, True, "broker-a")
    for name, value in changes.items():
        setattr(header, name, value)
    return header


@st.composite
def header_values(draw, cls: type[CommandHeader]) -> CommandHeader:
    """A header of ``cls`` with values of the declared kind, of another kind, huge or out of range."""
    values = {}
    for attribute, _name, kind, _required, bits, _strict in cls._plan().entries:
        limit = 1 << (bits - 1)
        values[attribute] = draw(st.none() | [
            st.text(max_size=8) | st.integers(-5, 5), st.integers(-limit, limit - 1) | st.integers(-(1 << 80), 1 << 80)
            | st.booleans(), st.booleans() | st.sampled_from([0, 1, "", "x"]), st.floats(allow_nan=False)][kind])
    return cls(**values)


def _frame(codec, command: RemotingCommand) -> tuple[str, object]:
    try:
        return ("encoded", codec.encode_command(command))
    except Exception as error:  # noqa: BLE001 - the codecs must fail alike, whatever the type
        return ("raised", type(error).__name__, str(error))


@SETTINGS
@pytest.mark.parametrize("cls", HEADER_CLASSES, ids=lambda cls: cls.__name__)
@given(data=st.data())
def test_a_custom_header_encodes_as_its_ext_fields(twin, compiled, cls, data):
    header = data.draw(header_values(cls))
    names = [entry[1] for entry in cls._plan().entries]
    extra = data.draw(st.none() | st.dictionaries(
        st.sampled_from(names) | st.text(max_size=6) if names else st.text(max_size=6),
        st.none() | st.text(max_size=6), max_size=3))
    serialize_type = data.draw(st.sampled_from([0, 1]))
    remark = data.draw(st.none() | st.text(max_size=4))
    carried = RemotingCommand(code=310, opaque=7, remark=remark, ext_fields=extra, body=b"b",
                              serialize_type=serialize_type, custom_header=header)
    as_strings = RemotingCommand(code=310, opaque=7, remark=remark, ext_fields=carried.wire_ext_fields(), body=b"b",
                                 serialize_type=serialize_type)
    expected = _frame(twin, as_strings)
    assert _frame(compiled, carried) == expected
    assert _frame(twin, carried) == expected


@pytest.mark.parametrize("serialize_type", [0, 1])
def test_the_frame_decodes_to_the_header_fields_then_the_extras(twin, compiled, serialize_type):
    header = _send_header(topic="Tö", flag=-1, born_timestamp=1 << 70)
    for codec in (twin, compiled):
        command = RemotingCommand(code=310, ext_fields={"AccessKey": "ak", "b": "T2", "n": None},
                                  serialize_type=serialize_type, custom_header=header)
        fields = codec.decode_frame(codec.encode_command(command)[4:]).ext_fields
        assert list(fields) == ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "m", "AccessKey"]
        assert fields["b"] == "T2" and fields["h"] == "-1" and fields["g"] == str(1 << 70)


@pytest.mark.parametrize("serialize_type", [0, 1])
def test_a_header_with_an_unset_field_fails_alike(twin, compiled, serialize_type):
    # The compiled encoder reads each field from its slot; an empty slot must raise getattr's own error.
    header = _send_header()
    del header.topic
    command = RemotingCommand(code=310, serialize_type=serialize_type, custom_header=header)
    assert _frame(compiled, command) == _frame(twin, command)
    assert _frame(twin, command)[:2] == ("raised", "AttributeError")


@dataclasses.dataclass(slots=True)
class _HookedHeader(CommandHeader):
    """A header whose fields are set through a hook: the mapping must go through setattr and getattr for it."""

    topic: str = wire("topic", required=True)
    count: int | None = wire("count")

    def __setattr__(self, name: str, value: object) -> None:
        _HOOK_CALLS.append(name)
        object.__setattr__(self, name, value.upper() if isinstance(value, str) else value)


_HOOK_CALLS: list[str] = []


@pytest.mark.parametrize("serialize_type", [0, 1])
def test_a_header_class_with_a_setattr_hook_is_mapped_through_it(twin, compiled, serialize_type):
    for codec in (twin, compiled):
        _HOOK_CALLS.clear()
        header = codec.header_from_fields(_HookedHeader, {"count": "3", "topic": "t"}, _HookedHeader._plan())
        assert (header.topic, header.count, _HOOK_CALLS) == ("T", 3, ["topic", "count"])
        _HOOK_CALLS.clear()
        with pytest.raises(MissingHeaderFieldError):
            codec.header_from_fields(_HookedHeader, {"count": "3"}, _HookedHeader._plan())
        assert _HOOK_CALLS == []  # nothing is set before every field parsed
        frame = codec.encode_command(RemotingCommand(code=1, serialize_type=serialize_type, custom_header=header))
        assert codec.decode_frame(frame[4:]).ext_fields == {"topic": "T", "count": "3"}


def test_an_object_without_a_header_plan_fails_alike(twin, compiled):
    command = RemotingCommand(code=310, custom_header=object())  # type: ignore[arg-type]
    assert _frame(compiled, command) == _frame(twin, command)
    assert _frame(twin, command)[0] == "raised"


def test_decoded_commands_carry_no_custom_header(twin, compiled):
    for codec in (twin, compiled):
        frame = codec.encode_command(RemotingCommand(code=310, custom_header=_send_header(), serialize_type=1))
        assert codec.decode_frame(frame[4:]).custom_header is None


def test_make_custom_header_to_net_moves_the_fields_and_keeps_the_bytes(twin, compiled):
    command = RemotingCommand(code=310, ext_fields={"AccessKey": "ak"}, body=b"body", serialize_type=1,
                              custom_header=_send_header())
    before = compiled.encode_command(command)
    command.make_custom_header_to_net()
    assert command.custom_header is None
    assert command.ext_fields == {**_send_header().to_ext_fields(), "AccessKey": "ak"}
    assert compiled.encode_command(command) == before == twin.encode_command(command)


@SETTINGS
@pytest.mark.parametrize("cls", HEADER_CLASSES, ids=lambda cls: cls.__name__)
@given(data=st.data())
def test_the_plan_finding_functions_are_the_plan_taking_ones(twin, compiled, cls, data):
    fields = data.draw(ext_fields_of(cls))
    expected = outcome(twin.header_from_fields, cls, fields, cls._plan())
    assert outcome(twin.read_header, cls, fields) == expected
    assert outcome(compiled.read_header, cls, fields) == expected
    assert outcome(cls.from_ext_fields, fields) == expected
    header = data.draw(header_values(cls))
    written = twin.header_to_fields(header, cls._plan())
    assert twin.header_fields(header) == compiled.header_fields(header) == header.to_ext_fields() == written


def test_a_send_request_carries_its_header_unsigned():
    request = MQClientAPI(RemotingClient(), serialize_type=1)._header_request(310, _send_header(), b"x")
    assert request.custom_header == _send_header() and request.ext_fields is None


def test_a_signed_send_request_signs_the_header_fields():
    api = MQClientAPI(RemotingClient(), credentials=SessionCredentials("ak", "sk"))
    request = api._header_request(310, _send_header(), b"x")
    expected = api._request(310, _send_header().to_ext_fields(), b"x")
    assert request.custom_header is None and request.ext_fields == expected.ext_fields
    assert "Signature" in request.ext_fields and request.ext_fields["a"] == "G"


def test_create_request_passes_the_custom_header_on():
    request = create_request(310, {"k": "v"}, b"x", serialize_type=1, custom_header=_send_header())
    assert (request.code, request.ext_fields, request.body, request.serialize_type) == (310, {"k": "v"}, b"x", 1)
    assert request.custom_header == _send_header() and request.flag == 0 and request.remark is None


def test_a_header_request_keeps_its_remark_and_body_when_signed():
    api = MQClientAPI(RemotingClient(), credentials=SessionCredentials("ak", "sk"))
    request = api._header_request(37, _send_header(), b"x", remark="r")
    assert (request.remark, request.body, request.ext_fields["a"]) == ("r", b"x", "G")
