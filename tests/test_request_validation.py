"""Issue 9: the header mapping parses numbers as Java does and refuses what Java would leave null, JSON bodies are
checked against their Java types, the name server checks a registration whole, and what persists is checked
where it is stored."""
from __future__ import annotations

import json
import logging

import pytest

from rocketmq_py.common import json_shape
from rocketmq_py.common.headers import BadHeaderFieldError, MissingHeaderFieldError
from rocketmq_py.common.headers.base import parse_java_integer
from rocketmq_py.common.headers.namesrv import RegisterBrokerRequestHeader
from rocketmq_py.common.headers.offset import UpdateConsumerOffsetRequestHeader
from rocketmq_py.common.headers.pull import PullMessageRequestHeader
from rocketmq_py.common.headers.send import SendMessageRequestHeader
from rocketmq_py.common.heartbeat import HeartbeatData
from rocketmq_py.common.topic_config import TopicConfig, TopicConfigSerializeWrapper
from rocketmq_py.errors import BadRequestError, StoreError
from rocketmq_py.namesrv.validation import validate_registration
from rocketmq_py.remoting import ProcessorTable, RequestContext, create_request
from rocketmq_py.store.config_files import ConsumerOffsetTable, TopicConfigTable

OFFSET = {"consumerGroup": "g", "topic": "T", "queueId": "1", "commitOffset": "5"}


@pytest.mark.parametrize("text, bits, expected", [
    ("5", 32, 5), ("+5", 32, 5), ("-0", 32, 0), ("-2147483648", 32, -(1 << 31)), ("2147483648", 32, None),
    ("2147483648", 64, 1 << 31), ("9223372036854775808", 64, None), ("\u0663", 32, 3),  # an Arabic-Indic 3
    (" 5", 32, None), ("5 ", 32, None), ("1.5", 32, None), ("5_0", 32, None), ("\u00b2", 32, None),
    ("", 32, None), ("+", 32, None), ("0x10", 32, None), ("NaN", 64, None), ("9" * 5000, 64, None),
])
def test_numbers_parse_as_javas_parse_int_and_parse_long(text, bits, expected):
    assert parse_java_integer(text, bits) == expected


@pytest.mark.parametrize("bad", ["abc", "1.5", " 5", "", "9223372036854775808"])
def test_a_required_number_that_does_not_parse_is_refused_naming_the_field(bad):
    with pytest.raises(BadHeaderFieldError) as caught:
        UpdateConsumerOffsetRequestHeader.from_ext_fields({**OFFSET, "commitOffset": bad})
    assert caught.value.field == "commitOffset"
    assert caught.value.remark.endswith(f"the custom field <commitOffset> is not a valid Long: {bad!r}")


def test_a_missing_required_field_is_refused_with_javas_remark():
    with pytest.raises(MissingHeaderFieldError) as caught:
        UpdateConsumerOffsetRequestHeader.from_ext_fields({"consumerGroup": "g", "topic": "T", "queueId": "1"})
    assert caught.value.remark == ("org.apache.rocketmq.remoting.exception.RemotingCommandException: "
                                   "the custom field <commitOffset> is null")


def test_an_optional_bad_number_takes_javas_default_unless_the_header_is_a_fast_codes_one():
    v1 = {"producerGroup": "p", "topic": "T", "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
          "queueId": "0", "sysFlag": "0", "bornTimestamp": "1", "flag": "0"}
    assert SendMessageRequestHeader.from_ext_fields({**v1, "reconsumeTimes": "x"}).reconsume_times is None
    assert RegisterBrokerRequestHeader.from_ext_fields({
        "brokerName": "b", "brokerAddr": "h:1", "clusterName": "c", "haServerAddr": "h:2", "brokerId": "0",
        "bodyCrc32": "x"}).body_crc32 == 0
    pull = {"consumerGroup": "g", "topic": "T", "queueId": "0", "queueOffset": "0", "maxMsgNums": "1",
            "sysFlag": "0", "commitOffset": "0", "suspendTimeoutMillis": "0", "subVersion": "0"}
    assert PullMessageRequestHeader.from_ext_fields(pull).queue_offset == 0
    with pytest.raises(BadHeaderFieldError, match="queueId"):
        PullMessageRequestHeader.from_ext_fields({**pull, "queueId": "2147483648"})


async def test_the_processor_table_refuses_a_bad_header_with_one_warning_and_no_traceback(caplog):
    table = ProcessorTable()

    async def update(ctx, request):
        UpdateConsumerOffsetRequestHeader.from_ext_fields(request.ext_fields)
        raise AssertionError("never reached")

    table.register(15, update)

    class Connection:
        remote_address = "10.0.0.1:5555"

    with caplog.at_level(logging.WARNING):
        for _ in range(3):
            response = await table.dispatch(RequestContext(Connection()),
                                            create_request(15, {**OFFSET, "commitOffset": "abc"}))
            assert response.code == 1 and "<commitOffset>" in response.remark
    [record] = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert not record.exc_info
    assert "code 15" in record.getMessage() and "10.0.0.1:5555" in record.getMessage()
    assert "commitOffset" in record.getMessage()


def test_json_bodies_are_checked_against_their_java_types():
    consumer = {"groupName": "g", "consumeType": 1, "messageModel": "CLUSTERING", "subscriptionDataSet": [
        {"topic": "T", "subVersion": "12", "codeSet": [1], "subString": None}]}
    heartbeat = HeartbeatData.decode(json.dumps({"clientID": 7, "consumerDataSet": [consumer]}).encode())
    assert heartbeat.client_id == "7"  # fastjson reads a number into a String as its text
    [data] = heartbeat.consumer_data
    assert data["consumeType"] == "CONSUME_PASSIVELY"  # an ordinal, as fastjson reads enums
    assert data["subscriptionDataSet"][0]["subVersion"] == 12 and "subString" not in data["subscriptionDataSet"][0]
    for bad, path in ((b"[]", "HeartbeatData"), (b'{"consumerDataSet":[{"consumeType":9}]}', "consumeType"),
                      (b'{"producerDataSet":[null]}', "producerDataSet[0]"), (b'{"clientID":true}', "clientID"),
                      (b'{"consumerDataSet":[{"subscriptionDataSet":[{"codeSet":["x"]}]}]}', "codeSet[0]")):
        with pytest.raises(BadRequestError) as caught:
            HeartbeatData.decode(bad)
        assert path in caught.value.field
    with pytest.raises(BadRequestError, match="not JSON"):
        json_shape.decode(b"{", {"a": str}, "Body")


@pytest.mark.parametrize("value, shape, where, expected", [
    ({"a": {"b": [1, "x"]}}, {"a": {"b": [json_shape.INT]}}, "Body.a.b[1]", "an Integer: 'x'"),
    ({"m": {"k": {"z": True}}}, {"m": json_shape.MapOf({"z": json_shape.LONG})}, "Body.m.k.z", "a Long: True"),
    ({"a": 1 << 31}, {"a": json_shape.INT}, "Body.a", "an Integer: 2147483648"),
    ({"a": [None]}, {"a": [str]}, "Body.a[0]", "a string: None"),
    ("x", json_shape.LONG, "Body", "a Long: 'x'"),
])
def test_a_value_that_does_not_fit_is_named_by_its_whole_path(value, shape, where, expected):
    # The path is put together only on the way out of a misfit: what fits builds no strings.
    with pytest.raises(BadRequestError) as caught:
        json_shape.check(value, shape, "Body")
    assert caught.value.field == where
    assert str(caught.value) == f"{where} is not {expected}"


def test_the_bounds_of_java_integers_fit_and_numbers_beside_them_do_not():
    for shape in (json_shape.INT, json_shape.LONG):
        low, high = -(1 << (shape.bits - 1)), (1 << (shape.bits - 1)) - 1
        assert json_shape.check({"n": low, "m": high}, {"n": shape, "m": shape}, "B") == {"n": low, "m": high}
        for outside in (low - 1, high + 1):
            with pytest.raises(BadRequestError):
                json_shape.check({"n": outside}, {"n": shape}, "B")
    assert json_shape.check({"n": "12", "s": 5}, {"n": json_shape.INT, "s": str}, "B") == {"n": 12, "s": "5"}


def _registration(**changes):
    fields = {"brokerName": "b", "brokerAddr": "127.0.0.1:10911", "clusterName": "c",
              "haServerAddr": "127.0.0.1:10912", "brokerId": "0", **changes}
    return RegisterBrokerRequestHeader.from_ext_fields(fields)


@pytest.mark.parametrize("header, table, filters, field", [
    (_registration(brokerId="-1"), {}, [], "brokerId"),
    (_registration(brokerAddr="nowhere"), {}, [], "brokerAddr"),
    (_registration(brokerAddr="h:70000"), {}, [], "brokerAddr"),
    (_registration(brokerName=" "), {}, [], "brokerName"),
    (_registration(), {"T": TopicConfig("", 4, 4)}, [], "topicConfigTable.T"),
    (_registration(), {"T": TopicConfig("T", -1, 4)}, [], "topicConfigTable.T.readQueueNums"),
    (_registration(), {}, ["127.0.0.1"], "filterServerList[0]"),
])
def test_a_registration_is_validated_whole(header, table, filters, field):
    with pytest.raises(BadRequestError) as caught:
        validate_registration(header, TopicConfigSerializeWrapper(table), filters)
    assert caught.value.field == field
    validate_registration(_registration(), TopicConfigSerializeWrapper({"T": TopicConfig("T")}), ["h:1"])


def test_the_offset_table_never_takes_a_value_of_the_wrong_type(tmp_path):
    table = ConsumerOffsetTable(tmp_path)
    for bad in (None, "5", 1.5, True, 1 << 63):
        with pytest.raises(ValueError):
            table.commit_offset("g", "T", 0, bad)
    with pytest.raises(ValueError):
        table.commit_offset("g", "T", None, 1)
    assert table.offset_table == {}


def test_a_config_loader_names_the_failing_key_and_falls_back_to_the_backup(tmp_path, caplog):
    path = tmp_path / "consumerOffset.json"
    path.write_text('{"offsetTable":{"T@g":{0:null}}}')
    (tmp_path / "consumerOffset.json.bak").write_text('{"offsetTable":{"T@g":{0:7}}}')
    table = ConsumerOffsetTable(tmp_path)
    with caplog.at_level(logging.ERROR):
        assert table.load()
    assert table.query_offset("g", "T", 0) == 7
    assert "'T@g'" in caplog.text
    (tmp_path / "topics.json").write_text('{"topicConfigTable":{"Bad":{"topicName":5}}}')
    with pytest.raises(StoreError, match="'Bad'"):
        TopicConfigTable(tmp_path).load()
