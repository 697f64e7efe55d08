"""Header dataclasses against extFields, and the response-code error mapping."""
from dataclasses import dataclass

import pytest

from rocketmq_py.common.headers import CommandHeader, MissingHeaderFieldError, wire
from rocketmq_py.errors import (
    BrokerResponseError,
    RocketMQError,
    ServiceNotAvailableError,
    SystemBusyError,
    TopicNotExistError,
    error_for_response,
)


@dataclass(slots=True)
class ExampleHeader(CommandHeader):
    topic: str = wire("b", required=True)
    queue_id: int = wire("e", required=True)
    batch: bool | None = wire("m")
    properties: str | None = wire("i")


def test_header_writes_java_names_and_strings():
    header = ExampleHeader(topic="T", queue_id=3, batch=False)
    assert header.to_ext_fields() == {"b": "T", "e": "3", "m": "false"}


def test_header_reads_back_and_parses_like_java():
    header = ExampleHeader.from_ext_fields({"b": "T", "e": "+7", "m": "TRUE", "unknown": "x"})
    assert header == ExampleHeader(topic="T", queue_id=7, batch=True)


def test_missing_required_field_is_a_typed_error():
    with pytest.raises(MissingHeaderFieldError, match="'e'"):
        ExampleHeader.from_ext_fields({"b": "T"})


def test_unparseable_optional_value_keeps_the_default():
    @dataclass(slots=True)
    class Optional_(CommandHeader):
        count: int | None = wire("count")

    assert Optional_.from_ext_fields({"count": "not-a-number"}).count is None


def test_a_header_class_with_an_instance_dict_is_refused():
    @dataclass
    class WithDict(CommandHeader):
        topic: str | None = wire("topic")

    with pytest.raises(TypeError, match="slots=True"):
        WithDict.from_ext_fields({"topic": "T"})


@pytest.mark.parametrize(
    "code, cls, retriable",
    [(17, TopicNotExistError, True), (14, ServiceNotAvailableError, True), (2, SystemBusyError, False)],
)
def test_response_codes_map_to_classes(code, cls, retriable):
    error = error_for_response(code, "remark", "127.0.0.1:10911")
    assert type(error) is cls
    assert isinstance(error, BrokerResponseError) and isinstance(error, RocketMQError)
    assert error.retriable is retriable
    assert error.code == code and "remark" in str(error) and "127.0.0.1:10911" in str(error)


def test_unknown_code_falls_back_to_the_base_class():
    error = error_for_response(9999, None)
    assert type(error) is BrokerResponseError and not error.retriable
