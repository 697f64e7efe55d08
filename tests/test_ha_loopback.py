"""Issue 12 in process: our master and our slave on loopback, on Java's HA wire. The slave's CommitLog is
byte-identical to the master's, it serves reads from its own ConsumeQueues, it refuses writes, SYNC_MASTER
answers as Java does with and without a slave, and a stream that does not continue the slave's CommitLog
closes the connection."""
from __future__ import annotations

import asyncio

import pytest
from support.ha import COMMIT_LOG_FILE_SIZE, HAPair, codec_request, commit_log_bytes, until

from rocketmq_py import codec
from rocketmq_py.common.codes import RequestCode, ResponseCode
from rocketmq_py.common.headers.pull import FLAG_SUBSCRIPTION
from rocketmq_py.store.ha.frames import REPORT, encode_transfer_header


async def test_slave_copies_the_commit_log_byte_for_byte_and_serves_pulls(tmp_path):
    async with HAPair(tmp_path) as pair:
        slave = await pair.start_slave({"slave_read_enable": True})
        body = b"x" * 1000
        for index in range(600):  # ~ 0.7 MB: the CommitLog rolls over several 256 KB files
            response = await pair.send("HaTopic", body + str(index).encode(), queue_id=index % 2)
            assert response.code == ResponseCode.SUCCESS, response.remark
        await pair.wait_caught_up()
        master_end = pair.master.store.commit_log.max_offset
        assert master_end > 2 * COMMIT_LOG_FILE_SIZE
        assert commit_log_bytes(slave, 0, master_end) == commit_log_bytes(pair.master, 0, master_end)
        for queue_id in (0, 1):
            assert slave.store.get_max_offset_in_queue("HaTopic", queue_id) == 300
        await until(lambda: slave.topics.select("HaTopic") is not None)  # SlaveSynchronize copied the topic
        fields = {"consumerGroup": "ha_cg", "topic": "HaTopic", "queueId": "1", "queueOffset": "0",
                  "maxMsgNums": "32", "sysFlag": str(FLAG_SUBSCRIPTION), "commitOffset": "0",
                  "suspendTimeoutMillis": "0", "subscription": "*", "subVersion": "0", "expressionType": "TAG"}
        response = await pair.client.invoke(slave.broker_addr, codec_request(RequestCode.PULL_MESSAGE, fields), 5000)
        assert response.code == ResponseCode.SUCCESS, response.remark
        got = codec.decode_store_records(response.body)
        assert [m.body for m in got[:2]] == [body + b"1", body + b"3"]
        refused = await pair.send("HaTopic", b"to the slave", addr=slave.broker_addr)
        assert refused.code == ResponseCode.SERVICE_NOT_AVAILABLE


async def test_a_late_slave_starts_from_the_masters_last_file_and_follows(tmp_path):
    async with HAPair(tmp_path) as pair:
        for index in range(400):
            await pair.send("HaLate", b"y" * 1000)
        slave = await pair.start_slave()
        for index in range(100):
            await pair.send("HaLate", b"z" * 1000)
        await pair.wait_caught_up()
        end = pair.master.store.commit_log.max_offset
        first = slave.store.commit_log.min_offset
        assert first > 0 and first % COMMIT_LOG_FILE_SIZE == 0
        assert commit_log_bytes(slave, first, end) == commit_log_bytes(pair.master, first, end)
        await pair.stop_slave()  # a restarted slave continues from its own end
        for index in range(200):
            await pair.send("HaLate", b"w" * 1000)
        slave = await pair.start_slave()
        await pair.wait_caught_up()
        end = pair.master.store.commit_log.max_offset
        assert commit_log_bytes(slave, first, end) == commit_log_bytes(pair.master, first, end)


async def test_sync_master_answers_like_java_with_and_without_a_slave(tmp_path):
    async with HAPair(tmp_path, master_role="SYNC_MASTER", slave_timeout=1500) as pair:
        response = await pair.send("HaSync", b"no slave yet")
        assert response.code == ResponseCode.SLAVE_NOT_AVAILABLE
        slave = await pair.start_slave()
        deadline = asyncio.get_running_loop().time() + 30
        while pair.master.store.ha_service.connection_count == 0:
            assert asyncio.get_running_loop().time() < deadline
            await asyncio.sleep(0.05)
        for index in range(50):
            response = await pair.send("HaSync", b"acked %d" % index)
            assert response.code == ResponseCode.SUCCESS, response.remark
            # acknowledged means the slave has it, now
            offset = int(response.ext_fields["queueOffset"])
            assert slave.store.get_max_offset_in_queue("HaSync", int(response.ext_fields["queueId"])) > offset
        await pair.stop_slave()
        # A slave that is connected but does not acknowledge (paused): FLUSH_SLAVE_TIMEOUT after slaveTimeout.
        silent = await silent_slave(pair)
        try:
            response = await pair.send("HaSync", b"slave silent")
            assert response.code == ResponseCode.FLUSH_SLAVE_TIMEOUT
            # ... and once it lags more than haSlaveFallbehindMax: SLAVE_NOT_AVAILABLE at once
            pair.master.store_config.ha_slave_fallbehind_max = 1
            response = await pair.send("HaSync", b"slave far behind")
            assert response.code == ResponseCode.SLAVE_NOT_AVAILABLE
        finally:
            silent.close()


async def silent_slave(pair: HAPair) -> asyncio.StreamWriter:
    """A connection to the master's HA port that reports the master's end once and never again."""
    service = pair.master.store.ha_service
    _, writer = await asyncio.open_connection("127.0.0.1", pair.master.config.ha_listen_port)
    writer.write(REPORT.pack(pair.master.store.commit_log.max_offset))
    await writer.drain()
    await until(lambda: service.connection_count == 1)
    return writer


async def test_a_frame_at_the_wrong_offset_closes_the_connection(tmp_path):
    reports: list[int] = []
    closed = asyncio.Event()

    async def fake_master(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        reports.append(REPORT.unpack(await reader.readexactly(8))[0])
        writer.write(encode_transfer_header(0, 8) + bytes(8))  # continues the empty slave: appended
        writer.write(encode_transfer_header(100, 4) + b"oops")  # a gap: the slave ends at 8
        await writer.drain()
        while await reader.read(4096):  # the slave's reports, until it closes
            pass
        closed.set()

    server = await asyncio.start_server(fake_master, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with HAPair(tmp_path) as pair:
            slave = await pair.start_slave(ha_master_address=f"127.0.0.1:{port}")
            await asyncio.wait_for(closed.wait(), 30)
            assert reports[0] == 0
            assert slave.store.commit_log.max_offset == 8
    finally:
        server.close()


async def test_the_slave_copies_offsets_and_groups_and_both_report_ha_runtime_info(tmp_path):
    from rocketmq_py.broker.slave_sync import SYNC_INITIAL_DELAY_S

    async with HAPair(tmp_path) as pair:
        await pair.send("HaMeta", b"m")
        pair.master.offsets.commit_offset("test", "HaMetaGroup", "HaMeta", 0, 1)
        pair.master.groups.find("HaMetaGroup")
        slave = await pair.start_slave()
        await until(lambda: slave.offsets.query_offset("HaMetaGroup", "HaMeta", 0) == 1,
                    timeout_s=SYNC_INITIAL_DELAY_S + 30)
        await until(lambda: "HaMetaGroup" in slave.groups.table)
        await pair.wait_caught_up()
        master_info = pair.master.admin_processor.runtime_info()
        assert master_info["slaveFallBehindMuch"] == "0"
        assert slave.admin_processor.runtime_info()["masterAddr"] == pair.master.broker_addr


async def test_offsets_committed_to_the_slave_while_no_master_is_registered_give_way_to_the_masters(tmp_path):
    """Java's SlaveSynchronize: the master's address comes from each registration (none while the master is
    away: nothing is synchronised), and the master's entry of a topic@group replaces the slave's whole entry,
    even one committed later; an entry only the slave has stays."""
    async with HAPair(tmp_path) as pair:
        await pair.send("HaOffsets", b"m")
        pair.master.offsets.commit_offset("test", "Both", "HaOffsets", 0, 1)
        pair.master.offsets.persist()
        slave = await pair.start_slave()
        await slave.register_broker_all()
        assert slave.replication.master_addr == pair.master.broker_addr
        await slave.replication.slave_sync.sync_all(slave.replication.master_addr)
        assert slave.offsets.query_offset("Both", "HaOffsets", 0) == 1

        await pair.master.shutdown()  # a clean stop unregisters it
        pair.master = None
        await slave.register_broker_all()
        assert slave.replication.master_addr is None
        # A consumer goes on with the slave and commits there.
        slave.offsets.commit_offset("consumer", "Both", "HaOffsets", 0, 5)
        slave.offsets.commit_offset("consumer", "Both", "HaOffsets", 1, 3)
        slave.offsets.commit_offset("consumer", "SlaveOnly", "HaOffsets", 0, 2)
        await slave.replication.slave_sync.sync_all(slave.replication.master_addr)
        assert slave.offsets.query_offset("Both", "HaOffsets", 0) == 5

        pair.master = pair.make_broker("master", "ASYNC_MASTER", 0)  # back, on its store
        await pair.master.start()
        await slave.register_broker_all()
        assert slave.replication.master_addr == pair.master.broker_addr
        await slave.replication.slave_sync.sync_all(slave.replication.master_addr)
        assert slave.offsets.query_offset("Both", "HaOffsets", 0) == 1
        assert slave.offsets.query_offset("Both", "HaOffsets", 1) == -1
        assert slave.offsets.query_offset("SlaveOnly", "HaOffsets", 0) == 2


async def test_the_master_points_a_consumer_that_fell_behind_to_the_slave(tmp_path, monkeypatch):
    from rocketmq_py.store import reads

    async with HAPair(tmp_path) as pair:
        for index in range(20):
            await pair.send("HaBehind", b"b" * 1000)
        fields = {"consumerGroup": "ha_behind_cg", "topic": "HaBehind", "queueId": "0", "queueOffset": "0",
                  "maxMsgNums": "1", "sysFlag": str(FLAG_SUBSCRIPTION), "commitOffset": "0",
                  "suspendTimeoutMillis": "0", "subscription": "*", "subVersion": "0", "expressionType": "TAG"}
        near = await pair.client.invoke(pair.master.broker_addr, codec_request(RequestCode.PULL_MESSAGE, fields), 5000)
        assert near.code == ResponseCode.SUCCESS and near.ext_fields["suggestWhichBrokerId"] == "0"
        # 19 KB behind with "memory" of 25 KB and accessMessageInMemoryMaxRatio 40 %: further than 10 KB.
        # As in Java, the master only points consumers to slaves when its own slaveReadEnable is on.
        monkeypatch.setattr(reads, "TOTAL_PHYSICAL_MEMORY", 25_000)
        far = await pair.client.invoke(pair.master.broker_addr, codec_request(RequestCode.PULL_MESSAGE, fields), 5000)
        assert far.code == ResponseCode.SUCCESS and far.ext_fields["suggestWhichBrokerId"] == "0"
        pair.master.config.slave_read_enable = True
        far = await pair.client.invoke(pair.master.broker_addr, codec_request(RequestCode.PULL_MESSAGE, fields), 5000)
        assert far.code == ResponseCode.SUCCESS and far.ext_fields["suggestWhichBrokerId"] == "1"


async def test_our_producer_sends_only_to_the_master_of_a_pair(tmp_path):
    from rocketmq_py.client.producer import AsyncProducer
    from rocketmq_py.common.message import Message

    async with HAPair(tmp_path) as pair:
        slave = await pair.start_slave()
        await pair.send("HaProduce", b"created")  # auto-creates the topic on the master
        await until(lambda: slave.topics.select("HaProduce") is not None)
        await slave.register_broker_all()  # the route now lists both brokers
        producer = AsyncProducer("ha_route_pg", namesrv_addr=pair.namesrv.address, instance_name="ha-route")
        await producer.start()
        try:
            route = await producer.instance.api.get_topic_route(pair.namesrv.address, "HaProduce")
            assert sorted(route.broker_datas[0].broker_addrs) == [0, 1]
            for index in range(30):
                await producer.send(Message("HaProduce", b"to the master %d" % index))
        finally:
            await producer.shutdown()
        assert pair.master.stats.put.total == 31
        assert slave.stats.put.total == 0 and slave.stats.put_failed == 0
