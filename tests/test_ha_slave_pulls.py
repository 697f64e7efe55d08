"""Issue 28: what our slave answers to pulls, with the defaults (``slaveReadEnable`` and ``offsetCheckInSlave``
off) and with each key on, as Java 4.9's PullMessageProcessor does when read to its end: the status switch
after the slave's branch sets the code for every status, so a slave serves the messages it holds (SUCCESS,
``suggestWhichBrokerId`` 0) and only an offset out of range differs from a master's answer. The pulls reach the
pull lane's fast handler (on by default); tests/test_pull_fast.py holds it to the processor on a slave too.
"""
from __future__ import annotations

import asyncio

from support.ha import HAPair, codec_request

from rocketmq_py import codec
from rocketmq_py.broker import BrokerController
from rocketmq_py.common.codes import RequestCode, ResponseCode
from rocketmq_py.common.headers.pull import FLAG_COMMIT_OFFSET, FLAG_SUBSCRIPTION, FLAG_SUSPEND
from rocketmq_py.common.topic import RMQ_SYS_OFFSET_MOVED_EVENT
from rocketmq_py.remoting import RemotingCommand

TOPIC = "HaSlavePulls"
GROUP = "ha_slave_cg"
MESSAGES = 10


async def filled_slave(pair: HAPair, broker_options: dict | None = None, **store_options) -> BrokerController:
    """A slave holding MESSAGES messages (tag A) in queue 0 of TOPIC (queue 1 stays empty), with the topic copied
    from the master as SlaveSynchronize copies it."""
    slave = await pair.start_slave(broker_options, **store_options)
    for index in range(MESSAGES):
        response = await pair.send(TOPIC, b"m%d" % index, queue_id=0, tags="A")
        assert response.code == ResponseCode.SUCCESS, response.remark
    await pair.wait_caught_up()
    assert pair.master is not None
    await slave.replication.slave_sync.sync_all(pair.master.broker_addr)
    assert slave.topics.select(TOPIC) is not None
    return slave


async def pull(pair: HAPair, broker: BrokerController, offset: int, *, queue_id: int = 0, sub: str = "*",
               sys_flag: int = FLAG_SUBSCRIPTION, suspend_ms: int = 0, commit_offset: int = 0, max_nums: int = 32,
               timeout_ms: float = 5000) -> RemotingCommand:
    fields = {"consumerGroup": GROUP, "topic": TOPIC, "queueId": str(queue_id), "queueOffset": str(offset),
              "maxMsgNums": str(max_nums), "sysFlag": str(sys_flag), "commitOffset": str(commit_offset),
              "suspendTimeoutMillis": str(suspend_ms), "subscription": sub, "subVersion": "0",
              "expressionType": "TAG"}
    return await pair.client.invoke(broker.broker_addr, codec_request(RequestCode.PULL_MESSAGE, fields), timeout_ms)


def answer(response: RemotingCommand) -> tuple[int, str | None, int, int]:
    """(code, remark, nextBeginOffset, suggestWhichBrokerId)"""
    fields = response.ext_fields or {}
    return response.code, response.remark, int(fields["nextBeginOffset"]), int(fields["suggestWhichBrokerId"])


async def test_a_slave_with_the_defaults_serves_its_messages_as_javas_does(tmp_path):
    async with HAPair(tmp_path) as pair:
        slave = await filled_slave(pair)
        assert not slave.config.slave_read_enable and not slave.store_config.offset_check_in_slave
        end = slave.store.commit_log.max_offset

        found = await pull(pair, slave, 0)
        assert answer(found) == (ResponseCode.SUCCESS, "FOUND", MESSAGES, 0)
        assert [m.body for m in codec.decode_store_records(found.body)] == [b"m%d" % i for i in range(MESSAGES)]
        # Nothing for this filter: skipping the messages is right, and the next offset says how far.
        assert answer(await pull(pair, slave, 2, sub="B")) == (
            ResponseCode.PULL_RETRY_IMMEDIATELY, "NO_MATCHED_MESSAGE", MESSAGES, 0)
        # At the end, without SUSPEND: nothing new.
        assert answer(await pull(pair, slave, MESSAGES)) == (
            ResponseCode.PULL_NOT_FOUND, "OFFSET_OVERFLOW_ONE", MESSAGES, 0)
        # Out of range: not corrected (the slave may be behind), 20 and the group's broker (0); Java answers a
        # queue nothing was written to as an empty one.
        assert answer(await pull(pair, slave, MESSAGES + 5)) == (
            ResponseCode.PULL_RETRY_IMMEDIATELY, "OFFSET_OVERFLOW_BADLY", MESSAGES + 5, 0)
        assert answer(await pull(pair, slave, 3, queue_id=1)) == (
            ResponseCode.PULL_RETRY_IMMEDIATELY, "NO_MESSAGE_IN_QUEUE", 3, 0)
        # A slave commits no offset a pull carries, and stores nothing of its own (no offset-moved event).
        committing = await pull(pair, slave, 0, sys_flag=FLAG_SUBSCRIPTION | FLAG_COMMIT_OFFSET, commit_offset=7)
        assert committing.code == ResponseCode.SUCCESS
        assert slave.offsets.query_offset(GROUP, TOPIC, 0) == -1
        assert slave.store.commit_log.max_offset == end
        assert slave.store.get_max_offset_in_queue(RMQ_SYS_OFFSET_MOVED_EVENT, 0) == 0


async def test_a_pull_parked_on_the_slave_wakes_when_replication_brings_a_message(tmp_path):
    async with HAPair(tmp_path) as pair:
        slave = await filled_slave(pair)
        # Held for 60 s, awaited for 30: the answer must come from the new message, not from the hold's end.
        parked = asyncio.create_task(pull(pair, slave, MESSAGES, sys_flag=FLAG_SUBSCRIPTION | FLAG_SUSPEND,
                                          suspend_ms=60_000, timeout_ms=30_000))
        deadline = asyncio.get_running_loop().time() + 30
        while slave.hold_service.suspended == 0:
            assert not parked.done(), parked.result()
            assert asyncio.get_running_loop().time() < deadline, "the pull was not parked"
            await asyncio.sleep(0.02)
        assert (await pair.send(TOPIC, b"late", queue_id=0, tags="A")).code == ResponseCode.SUCCESS
        woken = await parked
        assert answer(woken) == (ResponseCode.SUCCESS, "FOUND", MESSAGES + 1, 0)
        assert [m.body for m in codec.decode_store_records(woken.body)] == [b"late"]
        assert slave.hold_service.suspended == 0


async def test_slave_read_enable_only_changes_the_suggested_broker(tmp_path, monkeypatch):
    from rocketmq_py.store import reads

    async with HAPair(tmp_path) as pair:
        slave = await filled_slave(pair, {"slave_read_enable": True})
        assert answer(await pull(pair, slave, 0)) == (ResponseCode.SUCCESS, "FOUND", MESSAGES, 0), \
            "the group's brokerId"
        # With a "memory" of 400 bytes (accessMessageInMemoryMaxRatio 40 % of 1000), a pull that stops nine
        # records (~1.5 KB) before the CommitLog's end is far behind: the group's whichBrokerWhenConsumeSlowly;
        # one that reads up to the last record is not.
        monkeypatch.setattr(reads, "TOTAL_PHYSICAL_MEMORY", 1_000)
        assert answer(await pull(pair, slave, 0, max_nums=1)) == (ResponseCode.SUCCESS, "FOUND", 1, 1)
        assert answer(await pull(pair, slave, MESSAGES - 1)) == (ResponseCode.SUCCESS, "FOUND", MESSAGES, 0)
        assert answer(await pull(pair, slave, MESSAGES + 5)) == (
            ResponseCode.PULL_RETRY_IMMEDIATELY, "OFFSET_OVERFLOW_BADLY", MESSAGES + 5, 0)


async def test_offset_check_in_slave_corrects_the_offset_without_storing_an_event(tmp_path):
    async with HAPair(tmp_path) as pair:
        slave = await filled_slave(pair, offset_check_in_slave=True)
        end = slave.store.commit_log.max_offset
        assert answer(await pull(pair, slave, MESSAGES + 5)) == (
            ResponseCode.PULL_OFFSET_MOVED, "OFFSET_OVERFLOW_BADLY", MESSAGES, 0)
        assert answer(await pull(pair, slave, 3, queue_id=1)) == (
            ResponseCode.PULL_OFFSET_MOVED, "NO_MESSAGE_IN_QUEUE", 0, 0)
        assert slave.store.commit_log.max_offset == end
