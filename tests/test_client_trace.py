"""Trace records in Java's TraceDataEncoder text format, and the trace hook of a producer."""
from __future__ import annotations

from rocketmq_py.client.producer.result import SendResult, SendStatus
from rocketmq_py.client.trace import message_type
from rocketmq_py.common.message import Message
from rocketmq_py.common.message_queue import MessageQueue
from rocketmq_py.common.trace import (
    TraceBean,
    TraceContext,
    TraceMessageType,
    TraceType,
    decode_trace,
    encode_trace,
)


def test_pub_record_fields_in_javas_order():
    bean = TraceBean(topic="T", msg_id="ID1", offset_msg_id="OFF1", tags="TagA", keys="k1 k2",
                     store_host="10.0.0.1:10911", body_length=12, msg_type=TraceMessageType.Normal_Msg)
    context = TraceContext(TraceType.Pub, 1700000000123, "DefaultRegion", "pg", cost_time=7, success=True,
                           beans=[bean])
    text, keys = encode_trace(context)
    fields = ["Pub", "1700000000123", "DefaultRegion", "pg", "T", "ID1", "TagA", "k1 k2", "10.0.0.1:10911",
              "12", "7", "0", "OFF1", "true"]
    assert text == "\x01".join(fields) + "\x02"
    assert keys == ["ID1", "k1", "k2"]
    [record] = decode_trace(text)
    assert record["msgId"] == "ID1" and record["success"] == "true" and record["costTime"] == "7"


def test_missing_tags_and_keys_are_written_as_null_like_java():
    context = TraceContext(TraceType.Pub, 1, "R", "g", beans=[TraceBean(topic="T", msg_id="M")])
    text, keys = encode_trace(context)
    assert text.split("\x01")[6:8] == ["null", "null"]
    assert keys == ["M"]


def test_end_transaction_and_sub_records():
    bean = TraceBean(topic="T", msg_id="M", tags="t", keys="k", store_host="h", msg_type=TraceMessageType.Trans_Msg_Half,
                     transaction_id="TX", transaction_state="COMMIT_MESSAGE", from_transaction_check=True)
    text, _ = encode_trace(TraceContext(TraceType.EndTransaction, 5, "R", "g", beans=[bean]))
    assert text == "\x01".join(["EndTransaction", "5", "R", "g", "T", "M", "t", "k", "h", "1", "TX",
                                "COMMIT_MESSAGE", "true"]) + "\x02"
    beans = [TraceBean(msg_id="A", keys="x", retry_times=1), TraceBean(msg_id="B", keys="y")]
    text, keys = encode_trace(TraceContext(TraceType.SubBefore, 9, "R", "cg", request_id="req", beans=beans))
    assert text == "SubBefore\x019\x01R\x01cg\x01req\x01A\x011\x01x\x02SubBefore\x019\x01R\x01cg\x01req\x01B\x010\x01y\x02"
    assert keys == ["A", "x", "B", "y"]


def test_message_type_of_a_send():
    assert message_type(Message("T", b"x")) is TraceMessageType.Normal_Msg
    delayed = Message("T", b"x")
    delayed.delay_time_level = 3
    assert message_type(delayed) is TraceMessageType.Delay_Msg
    half = Message("T", b"x", properties={"TRAN_MSG": "true"})
    assert message_type(half) is TraceMessageType.Trans_Msg_Half


def test_dispatcher_hook_records_successful_sends():
    from rocketmq_py.client.trace import TraceDispatcher

    dispatcher = TraceDispatcher.__new__(TraceDispatcher)

    class Owner:
        class config:
            @staticmethod
            def without_namespace(topic):
                return topic

    import asyncio

    dispatcher.owner = Owner()
    dispatcher.topic = "RMQ_SYS_TRACE_TOPIC"
    dispatcher.group_name = "pg"
    dispatcher.queue = asyncio.Queue(10)
    dispatcher.dropped = 0
    queue = MessageQueue("T", "broker-a", 1)
    result = SendResult(SendStatus.SEND_OK, "UNIQ", "OFFSET", queue, 5, region_id="R1")
    message = Message("T", b"body!", tags="tg", keys="k")
    dispatcher.on_send(message, queue, "1.2.3.4:10911", result, None, 3.0)
    dispatcher.on_send(message, queue, "1.2.3.4:10911", None, RuntimeError(), 3.0)
    dispatcher.on_send(message, MessageQueue("RMQ_SYS_TRACE_TOPIC", "b", 0), "a", result, None, 1.0)
    assert dispatcher.queue.qsize() == 1
    context = dispatcher.queue.get_nowait()
    [bean] = context.beans
    assert (context.region_id, context.group_name, context.cost_time, context.success) == ("R1", "pg", 3, True)
    assert (bean.topic, bean.msg_id, bean.offset_msg_id, bean.tags, bean.keys, bean.store_host, bean.body_length) == (
        "T", "UNIQ", "OFFSET", "tg", "k", "1.2.3.4:10911", 5)
