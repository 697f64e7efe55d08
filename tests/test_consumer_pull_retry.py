"""Issue 28: what our consumers do with a PULL_RETRY_IMMEDIATELY (20) answer, which carries no messages.

Java's client moves to the answer's nextBeginOffset whatever the reason; ours only when the remark (the
broker's store status) says the messages before it are not for the consumer: none matched its subscription,
or they were deleted. Every other 20 (an older slave of ours that answered FOUND with 20 and an advanced
offset, a 4.9 slave's uncorrected offset out of range, no remark at all) gives no way forward: the consumer
pulls the same offset again and receives every message. A fake broker answers the first pull of the queue
with each case; then it serves the five stored messages.
"""
from __future__ import annotations

import asyncio
import logging
import time

import pytest

from rocketmq_py import codec
from rocketmq_py.client.consumer import AsyncLitePullConsumer, ConsumeConcurrentlyStatus, PushConsumer
from rocketmq_py.common.codes import RequestCode, ResponseCode
from rocketmq_py.common.headers.pull import PullMessageResponseHeader
from rocketmq_py.common.message_queue import MessageQueue
from rocketmq_py.errors import PullRetryImmediatelyError
from rocketmq_py.spark.client import PullAnswer, Session
from rocketmq_py.spark.options import ClientSettings
from rocketmq_py.spark.planning import DataLossError, QueueRange

from support.consumer_broker import BROKER, GROUP, FakeBroker, committed, push, until

MESSAGES = [b"m%d" % index for index in range(5)]
#: (remark, how far past the pull's offset the answer's nextBeginOffset lies, whether the messages before it may
#: be passed over)
CASES = [
    ("NO_MATCHED_MESSAGE", 2, True),  # the broker's filter refused them
    ("MESSAGE_WAS_REMOVING", 2, True),  # their CommitLog file was deleted
    ("FOUND", 3, False),  # an older slave of ours: it had them, and answered 20 without them
    ("OFFSET_OVERFLOW_BADLY", 0, False),  # a 4.9 slave behind the consumer: the offset is not corrected
    ("OFFSET_TOO_SMALL", 0, False),
    ("NO_MESSAGE_IN_QUEUE", 0, False),
    (None, 3, False),  # no reason given
]
IDS = [str(remark) for remark, _, _ in CASES]
#: The delay before a pull that gave no way forward is made again (the default, 3 s, would only slow the test).
RETRY_DELAY_MS = 100


@pytest.fixture
async def broker():
    async with FakeBroker({"T": 1}) as fake:
        for body in MESSAGES:
            fake.put("T", 0, body)
        yield fake


def expected(ahead: int, may_pass: bool) -> list[bytes]:
    return MESSAGES[ahead:] if may_pass else MESSAGES


def pulled_offsets(broker: FakeBroker) -> list[int]:
    return [int(r.ext_fields["queueOffset"]) for r in broker.of_code(RequestCode.PULL_MESSAGE)
            if r.ext_fields["topic"] == "T"]


def script(broker: FakeBroker, remark: str | None, ahead: int) -> None:
    broker.scripted_pulls[("T", 0)] = [(ResponseCode.PULL_RETRY_IMMEDIATELY, remark, ahead)]


def check_second_pull(broker: FakeBroker, ahead: int, may_pass: bool) -> None:
    assert not broker.scripted_pulls[("T", 0)], "the scripted answer was pulled"
    assert pulled_offsets(broker)[:2] == [0, ahead if may_pass else 0]


@pytest.mark.parametrize("remark, ahead, may_pass", CASES, ids=IDS)
async def test_the_push_consumer_passes_over_messages_only_when_the_broker_says_why(broker, remark, ahead,
                                                                                    may_pass, caplog):
    script(broker, remark, ahead)
    got: list[bytes] = []

    def listener(messages, context):
        got.extend(m.body for m in messages)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    caplog.set_level(logging.WARNING, logger="rocketmq_py.client.consumer.pull")
    async with push(broker, listener, pull_time_delay_millis_when_exception=RETRY_DELAY_MS):
        await until(lambda: len(got) >= len(expected(ahead, may_pass)))
    # A concurrent listener runs on several consume threads: the messages of a pull may finish in any order.
    assert sorted(got) == expected(ahead, may_pass)
    assert committed(broker) == {0: len(MESSAGES)}
    check_second_pull(broker, ahead, may_pass)
    deleted = [r for r in caplog.records if "were deleted" in r.getMessage()]
    assert len(deleted) == (remark == "MESSAGE_WAS_REMOVING")


@pytest.mark.parametrize("remark, ahead, may_pass", [CASES[0], CASES[2], CASES[3]], ids=[IDS[0], IDS[2], IDS[3]])
async def test_the_blocking_push_consumer_does_the_same(broker, remark, ahead, may_pass):
    script(broker, remark, ahead)
    got: list[bytes] = []

    def listener(messages, context):
        got.extend(m.body for m in messages)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = PushConsumer(GROUP, namesrv_addr=broker.namesrv.address, consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                            pull_time_delay_millis_when_exception=RETRY_DELAY_MS)
    consumer.subscribe("T", "*")
    consumer.register_message_listener(listener)
    # The blocking calls wait on the background loop, which talks to the fake broker on this one.
    await asyncio.to_thread(consumer.start)
    try:
        await until(lambda: len(got) >= len(expected(ahead, may_pass)))
    finally:
        await asyncio.to_thread(consumer.shutdown)
    assert sorted(got) == expected(ahead, may_pass)  # in any order, as above
    check_second_pull(broker, ahead, may_pass)


@pytest.mark.parametrize("remark, ahead, may_pass", CASES, ids=IDS)
async def test_the_lite_pull_consumer_passes_over_messages_only_when_the_broker_says_why(broker, remark, ahead,
                                                                                        may_pass):
    script(broker, remark, ahead)
    got: list[bytes] = []
    async with AsyncLitePullConsumer(GROUP, namesrv_addr=broker.namesrv.address,
                                     consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                                     pull_time_delay_millis_when_exception=RETRY_DELAY_MS) as consumer:
        consumer.assign([MessageQueue("T", BROKER, 0)])
        deadline = time.monotonic() + 10
        while len(got) < len(expected(ahead, may_pass)):
            assert time.monotonic() < deadline, got
            got += [m.body for m in await consumer.poll(200)]
    assert got == expected(ahead, may_pass)
    check_second_pull(broker, ahead, may_pass)


# --- the Spark source's range reads ------------------------------------------------------------------------

PART = QueueRange("T", "broker-a", "127.0.0.1:1", 0, 0, len(MESSAGES))


def stored_messages(start: int) -> list:
    records = [codec.encode_store_record(topic="T", body=body, properties={"UNIQ_KEY": f"K{offset}"}, queue_id=0,
                                         queue_offset=offset, physical_offset=offset * 1000)
               for offset, body in enumerate(MESSAGES) if offset >= start]
    return codec.decode_store_records(b"".join(records))


def scripted_session(remark: str | None, ahead: int) -> tuple[Session, list[int]]:
    """A session whose first pull gets the case's 20 and whose later pulls get the stored messages."""
    session = Session(ClientSettings(namesrv_addr="127.0.0.1:1"))
    offsets: list[int] = []

    async def pull(part, group, sub_expression, offset, count):
        offsets.append(offset)
        if len(offsets) == 1:
            header = PullMessageResponseHeader(0, offset + ahead, 0, len(MESSAGES))
            return PullAnswer(ResponseCode.PULL_RETRY_IMMEDIATELY, remark, header, [])
        header = PullMessageResponseHeader(0, len(MESSAGES), 0, len(MESSAGES))
        return PullAnswer(ResponseCode.SUCCESS, "FOUND", header, stored_messages(offset))

    session._pull = pull  # type: ignore[method-assign]
    return session, offsets


def read(session: Session, fail_on_data_loss: bool = True) -> list[bytes]:
    return [m.body for chunk in session.read_range(PART, "g", "*", fail_on_data_loss) for m in chunk]


def test_the_spark_source_passes_over_messages_its_filter_refused():
    session, offsets = scripted_session("NO_MATCHED_MESSAGE", 2)
    try:
        assert read(session) == MESSAGES[2:]
        assert offsets[:2] == [0, 2]
    finally:
        session.close()


def test_the_spark_source_treats_deleted_messages_as_data_loss():
    session, _ = scripted_session("MESSAGE_WAS_REMOVING", 2)
    try:
        with pytest.raises(DataLossError, match="offsets from 0 cannot be read"):
            read(session)
    finally:
        session.close()
    session, offsets = scripted_session("MESSAGE_WAS_REMOVING", 2)
    try:
        assert read(session, fail_on_data_loss=False) == MESSAGES[2:]
        assert offsets[:2] == [0, 2]
    finally:
        session.close()


@pytest.mark.parametrize("remark, ahead", [(r, a) for r, a, may_pass in CASES if not may_pass], ids=IDS[2:])
def test_the_spark_source_fails_the_task_rather_than_pass_over_messages(remark, ahead):
    session, offsets = scripted_session(remark, ahead)
    try:
        with pytest.raises(PullRetryImmediatelyError, match="no messages of T/broker-a/0 at offset 0"):
            read(session, fail_on_data_loss=False)
        assert offsets == [0]
    finally:
        session.close()
