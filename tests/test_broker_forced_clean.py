"""The broker's part in the forced clean (issue 28, item 2): the offsets its groups commit, the groups
subscribed now and the delay service's progress decide which CommitLog files the store may delete above
85 % disk use. The disk usage is injected; the clean service's thread is stopped so each round runs here."""
from __future__ import annotations

from support.broker import BrokerEnv, heartbeat

from rocketmq_py.broker.consumed import DELAY_SERVICE_GROUP
from rocketmq_py.common.codes import RequestCode, ResponseCode
from rocketmq_py.common.topic import RMQ_SYS_SCHEDULE_TOPIC

BODY = b"b" * (512 * 1024)  # 4 MiB CommitLog files: seven of these each


async def commit(env: BrokerEnv, group: str, topic: str, queue_id: int, offset: int) -> None:
    fields = {"consumerGroup": group, "topic": topic, "queueId": queue_id, "commitOffset": offset}
    response = await env.call(RequestCode.UPDATE_CONSUMER_OFFSET, fields)
    assert response.code == ResponseCode.SUCCESS, response.remark


def stop_cleaning_by_itself(env: BrokerEnv, used: float) -> None:
    clean = env.broker.store.clean_service
    clean.shutdown()
    clean.disk_usage = lambda path: used


async def test_the_oldest_file_goes_only_when_every_group_of_its_topic_consumed_past_it(tmp_path, caplog):
    async with BrokerEnv(tmp_path) as env:
        store = env.broker.store
        stop_cleaning_by_itself(env, 0.88)
        assert (await env.create_topic("T", queues=1)).code == ResponseCode.SUCCESS
        for _ in range(20):
            sent = await env.send("T", BODY, queue_id=0)
            assert sent.code == ResponseCode.SUCCESS, sent.remark
        files = list(store.commit_log.queue.files)
        assert len(files) >= 3
        first_past = store.get_consume_queue("T", 0).first_offset_at_or_after(files[0].file_from_offset
                                                                              + files[0].file_size)
        await commit(env, "g1", "T", 0, first_past)
        await commit(env, "g2", "T", 0, first_past - 1)
        store.clean_service.run_once()
        assert store.commit_log.queue.files == files, "g2 has not consumed the file's last message"

        await commit(env, "g2", "T", 0, first_past)
        joined = await env.call(RequestCode.HEART_BEAT, body=heartbeat("client-3", "g3", "T"))
        assert joined.code == ResponseCode.SUCCESS
        store.clean_service.run_once()
        assert store.commit_log.queue.files == files, "g3 is subscribed and has committed nothing"
        assert "consumer group g3 has no offset for that queue" in caplog.text

        await commit(env, "g3", "T", 0, first_past)
        store.clean_service.run_once()
        assert store.commit_log.queue.files == files[1:]
        pulled = await env.pull("T", 0, first_past)
        assert pulled.code == ResponseCode.SUCCESS


async def test_the_progress_view_names_every_group_and_the_delay_service(tmp_path):
    async with BrokerEnv(tmp_path) as env:
        await commit(env, "g", "T", 1, 7)
        await commit(env, "g", "%RETRY%g", 0, 2)
        await env.call(RequestCode.HEART_BEAT, body=heartbeat("client-1", "online", "T"))
        env.broker.store.schedule_service.offsets.set_offset(3, 11)
        progress = env.broker.consumer_progress.snapshot()
        assert progress["T"] == {"g": {1: 7}, "online": {}}
        assert progress["%RETRY%g"] == {"g": {0: 2}}
        assert progress[RMQ_SYS_SCHEDULE_TOPIC][DELAY_SERVICE_GROUP] == {2: 11}


async def test_a_slave_knows_nothing_consumed_until_its_master_sent_the_offsets(tmp_path):
    async with BrokerEnv(tmp_path) as env:
        await commit(env, "g", "T", 0, 5)
        env.broker.store.schedule_service.offsets.set_offset(1, 4)
        env.broker.store_config.broker_role = "SLAVE"
        slave_sync = env.broker.replication.slave_sync
        assert env.broker.consumer_progress.snapshot() is None
        slave_sync.consumer_offsets_synced = True
        progress = env.broker.consumer_progress.snapshot()
        assert progress["T"] == {"g": {0: 5}}
        assert progress[RMQ_SYS_SCHEDULE_TOPIC][DELAY_SERVICE_GROUP] == {}, "delay offsets not synced yet"
        slave_sync.delay_offsets_synced = True
        assert env.broker.consumer_progress.snapshot()[RMQ_SYS_SCHEDULE_TOPIC][DELAY_SERVICE_GROUP] == {0: 4}
        env.broker.store_config.broker_role = "ASYNC_MASTER"


async def test_undelivered_delayed_messages_keep_their_file(tmp_path, caplog):
    async with BrokerEnv(tmp_path) as env:
        store = env.broker.store
        stop_cleaning_by_itself(env, 0.88)
        assert (await env.create_topic("T", queues=1)).code == ResponseCode.SUCCESS
        sent = await env.send("T", BODY, queue_id=0, properties={"DELAY": "18"})  # two hours
        assert sent.code == ResponseCode.SUCCESS, sent.remark
        for _ in range(16):
            assert (await env.send("T", BODY, queue_id=0)).code == ResponseCode.SUCCESS
        await commit(env, "g", "T", 0, 10**6)
        files = list(store.commit_log.queue.files)
        assert len(files) >= 3
        store.clean_service.run_once()
        assert store.commit_log.queue.files == files
        assert f"{RMQ_SYS_SCHEDULE_TOPIC} queue 17" in caplog.text and DELAY_SERVICE_GROUP in caplog.text
        store.schedule_service.shutdown()  # its thread would write the level's offset back meanwhile
        store.schedule_service.offsets.set_offset(18, 1)  # as once the message was put again on T
        store.clean_service.run_once()
        assert store.commit_log.queue.files == files[-1:], "all consumed: every file but the last goes"
