"""The broker with aclEnable=true, in process on loopback: every request goes through the ACL check before its
processor (refusals are SYSTEM_ERROR with Java's AclException remark), our producer and push consumer with
access_key work, the four ACL admin codes rewrite plain_acl.yml, and an edit of the file applies without a
restart."""
from __future__ import annotations

import asyncio
import os
import time

import pytest
import yaml

from rocketmq_py.broker import BrokerConfig, BrokerController
from rocketmq_py.client.consumer import AsyncPushConsumer, ConsumeConcurrentlyStatus
from rocketmq_py.client.producer import AsyncProducer, SendStatus
from rocketmq_py.common import acl as signing
from rocketmq_py.common.codes import RequestCode, ResponseCode
from rocketmq_py.common.message import Message
from rocketmq_py.errors import NoPermissionError, SendFailedError
from rocketmq_py.namesrv import NamesrvConfig, NamesrvController
from rocketmq_py.remoting import RemotingClient, create_request
from rocketmq_py.store import MessageStoreConfig

PLAIN_ACL = """\
globalWhiteRemoteAddresses: []
accounts:
  - accessKey: adminKey1
    secretKey: adminSecret1
    admin: true
  - accessKey: userKey01
    secretKey: userSecret1
    admin: false
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: SUB
    topicPerms: [Denied=DENY]
    groupPerms: [DeniedGroup=DENY]
"""
ADMIN = signing.SessionCredentials("adminKey1", "adminSecret1")
USER = signing.SessionCredentials("userKey01", "userSecret1")
REFUSED = "org.apache.rocketmq.acl.common.AclException: "


class AclEnv:
    def __init__(self, home) -> None:
        self.home = home
        self.acl_file = home / "conf" / "plain_acl.yml"
        self.client = RemotingClient()

    async def __aenter__(self) -> "AclEnv":
        self.acl_file.parent.mkdir(parents=True, exist_ok=True)
        self.acl_file.write_text(PLAIN_ACL)
        self.namesrv = NamesrvController(NamesrvConfig(listen_port=0, bind_address="127.0.0.1",
                                                       kv_config_path=str(self.home / "kv.json")))
        await self.namesrv.start()
        config = BrokerConfig(broker_name="broker-acl", namesrv_addr=self.namesrv.address, listen_port=0,
                              bind_address="127.0.0.1", broker_ip1="127.0.0.1", broker_ip2="127.0.0.1",
                              fast_channel_enable=False, acl_enable=True, rocketmq_home=str(self.home))
        store = MessageStoreConfig(store_path_root_dir=str(self.home / "store"),
                                   mapped_file_size_commit_log=4 * 1024 * 1024,
                                   mapped_file_size_consume_queue=1000 * 20, max_hash_slot_num=1000,
                                   max_index_num=4000)
        self.broker = BrokerController(config, store)
        await self.broker.start()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.client.shutdown()
        await self.broker.shutdown()
        await self.namesrv.shutdown()

    async def call(self, code, fields=None, body=None, credentials=None):
        fields = {k: str(v) for k, v in (fields or {}).items()}
        if credentials is not None:
            credentials.sign(fields, body)
        return await self.client.invoke(self.broker.broker_addr, create_request(code, fields, body), 5000)


@pytest.fixture
async def env(tmp_path):
    async with AclEnv(tmp_path) as running:
        yield running


async def test_each_refusal_is_system_error_with_javas_remark(env):
    cases = [
        (None, RequestCode.GET_BROKER_CONFIG, {}, "No accessKey is configured"),
        (signing.SessionCredentials("userKey01", "wrongSecret"), RequestCode.GET_BROKER_CONFIG, {},
         "Check signature failed for accessKey=userKey01"),
        (signing.SessionCredentials("ghostKey1", "ghostSecret"), RequestCode.GET_BROKER_CONFIG, {},
         "No acl config for ghostKey1"),
        (USER, RequestCode.SEND_MESSAGE_V2, {"a": "pg", "b": "Denied", "c": "TBW102", "d": 4, "e": 0, "f": 0,
                                             "g": 0, "h": 0, "j": 0, "k": "false", "m": "false"},
         "No default permission for topic:Denied"),
        (USER, RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "DeniedGroup"},
         "No default permission for group:DeniedGroup"),
        (USER, RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": "t"},
         "Need admin permission for request code=215, but accessKey=userKey01 is not"),
    ]
    for credentials, code, fields, message in cases:
        response = await env.call(code, fields, b"body" if code == RequestCode.SEND_MESSAGE_V2 else None,
                                   credentials)
        assert (response.code, response.remark) == (ResponseCode.SYSTEM_ERROR, REFUSED + message), message
    admitted = await env.call(RequestCode.GET_BROKER_CONFIG, {}, None, USER)
    assert admitted.code == ResponseCode.SUCCESS and admitted.body


async def test_oneway_refusal_gets_no_answer_and_changes_nothing(env):
    fields = {"consumerGroup": "DeniedGroup", "topic": "T", "queueId": "0", "commitOffset": "7"}
    USER.sign(fields, None)
    await env.client.invoke_oneway(env.broker.broker_addr,
                                   create_request(RequestCode.UPDATE_CONSUMER_OFFSET, fields), 3000)
    await asyncio.sleep(0.2)
    assert env.broker.offsets.query_offset("DeniedGroup", "T", 0) == -1


async def test_producer_and_push_consumer_with_access_key(env):
    topic = "AclFlow"
    created = await env.call(RequestCode.UPDATE_AND_CREATE_TOPIC, {
        "topic": topic, "defaultTopic": "TBW102", "readQueueNums": 2, "writeQueueNums": 2, "perm": 6,
        "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0, "order": "false"}, None, ADMIN)
    assert created.code == ResponseCode.SUCCESS, created.remark
    async with AsyncProducer("acl_pg", namesrv_addr=env.namesrv.address, access_key="userKey01",
                             secret_key="userSecret1") as producer:
        results = [await producer.send(Message(topic, f"m{i}".encode(), tags="T")) for i in range(6)]
    assert {result.send_status for result in results} == {SendStatus.SEND_OK}
    received: list[bytes] = []
    done = asyncio.Event()
    consumer = AsyncPushConsumer("acl_cg", namesrv_addr=env.namesrv.address, access_key="userKey01",
                                 secret_key="userSecret1", consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    consumer.subscribe(topic, "*")

    def listener(messages, context):
        received.extend(message.body for message in messages)
        if len(received) >= 6:
            done.set()
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer.register_message_listener(listener)
    await consumer.start()
    try:
        await asyncio.wait_for(done.wait(), 60)
    finally:
        await consumer.shutdown()
    assert sorted(received) == sorted(f"m{i}".encode() for i in range(6))


async def test_producer_with_wrong_secret_gets_no_permission(env):
    async with AsyncProducer("acl_pg_bad", namesrv_addr=env.namesrv.address, access_key="userKey01",
                             secret_key="notTheSecret", retry_times_when_send_failed=0) as producer:
        with pytest.raises((NoPermissionError, SendFailedError)) as failure:
            await producer.send(Message("AnyTopic", b"x"))
    error = failure.value if isinstance(failure.value, NoPermissionError) else failure.value.__cause__
    assert isinstance(error, NoPermissionError) and "Check signature failed" in str(error)


async def test_acl_admin_codes_rewrite_the_file(env):
    created = await env.call(RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, {
        "accessKey": "newKey001", "secretKey": "newSecret1", "admin": "false", "defaultTopicPerm": "SUB",
        "topicPerms": "A=PUB,B=DENY"}, None, USER)
    assert created.code == ResponseCode.SUCCESS, created.remark
    account = next(a for a in yaml.safe_load(env.acl_file.read_text())["accounts"] if a["accessKey"] == "newKey001")
    assert account["topicPerms"] == ["A=PUB", "B=DENY"] and account["defaultTopicPerm"] == "SUB"
    signed_by_new = await env.call(RequestCode.GET_BROKER_CONFIG, {}, None,
                                   signing.SessionCredentials("newKey001", "newSecret1"))
    assert signed_by_new.code == ResponseCode.SUCCESS
    bad = await env.call(RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, {"accessKey": "newKey001", "secretKey": "short"},
                         None, USER)
    assert bad.code == ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED and "longer than 6" in bad.remark
    missing_key = await env.call(RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, {"secretKey": "whatever1"}, None, USER)
    assert missing_key.code == ResponseCode.SYSTEM_ERROR and "<accessKey>" in missing_key.remark

    version = await env.call(RequestCode.GET_BROKER_CLUSTER_ACL_INFO, {}, None, USER)
    assert version.code == ResponseCode.SUCCESS
    assert version.ext_fields["brokerName"] == "broker-acl" and '"counter":1' in version.ext_fields["version"]
    assert str(env.acl_file) in version.ext_fields["allAclFileVersion"]

    deleted = await env.call(RequestCode.DELETE_ACL_CONFIG, {"accessKey": "newKey001"}, None, USER)
    assert deleted.code == ResponseCode.SUCCESS
    again = await env.call(RequestCode.DELETE_ACL_CONFIG, {"accessKey": "newKey001"}, None, USER)
    assert (again.code, again.remark) == (
        ResponseCode.DELETE_ACL_CONFIG_FAILED,
        "The accesskey[newKey001] corresponding to accessConfig has been deleted failed.")

    white = await env.call(RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG,
                           {"globalWhiteAddrs": "10.0.0.1,10.0.0.2", "aclFileFullPath": ""}, None, USER)
    assert white.code == ResponseCode.SUCCESS
    assert yaml.safe_load(env.acl_file.read_text())["globalWhiteRemoteAddresses"] == ["10.0.0.1", "10.0.0.2"]
    outside = await env.call(RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG,
                             {"globalWhiteAddrs": "10.0.0.1", "aclFileFullPath": "/etc/hosts"}, None, USER)
    assert outside.code == ResponseCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED


async def test_the_cluster_acl_config_lists_every_account_and_white_address(env):
    """GET_BROKER_CLUSTER_ACL_CONFIG (54): the body Java 4.9.7 writes (compat-tests compare the bytes)."""
    answer = await env.call(RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG, {}, None, ADMIN)
    assert answer.code == ResponseCode.SUCCESS
    assert answer.body == (
        b'{"globalWhiteAddrs":[],"plainAccessConfigs":['
        b'{"accessKey":"adminKey1","admin":true,"secretKey":"adminSecret1"},'
        b'{"accessKey":"userKey01","admin":false,"defaultGroupPerm":"SUB","defaultTopicPerm":"PUB|SUB",'
        b'"groupPerms":["DeniedGroup=DENY"],"secretKey":"userSecret1","topicPerms":["Denied=DENY"]}]}')
    # A file written since the last reload is read as it is now, as Java reads the files afresh.
    env.acl_file.write_text(PLAIN_ACL.replace("globalWhiteRemoteAddresses: []", "globalWhiteRemoteAddresses: [10.*]"))
    again = await env.call(RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG, {}, None, ADMIN)
    assert again.body.startswith(b'{"globalWhiteAddrs":["10.*"],')


async def test_file_edit_applies_without_restart(env):
    before = await env.call(RequestCode.GET_BROKER_CONFIG, {})
    assert before.code == ResponseCode.SYSTEM_ERROR
    stamp = os.stat(env.acl_file).st_mtime_ns
    env.acl_file.write_text(PLAIN_ACL.replace("globalWhiteRemoteAddresses: []",
                                              "globalWhiteRemoteAddresses: [127.0.0.*]"))
    if os.stat(env.acl_file).st_mtime_ns == stamp:
        os.utime(env.acl_file, ns=(time.time_ns(), stamp + 1_000_000))
    # The broker polls the files every 5 s, as Java's AclFileWatchService; allow for a loaded machine.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if (await env.call(RequestCode.GET_BROKER_CONFIG, {})).code == ResponseCode.SUCCESS:
            break
        await asyncio.sleep(0.5)
    else:
        pytest.fail("the edited ACL file was not applied within 30 s")


async def test_broker_without_acl_answers_the_acl_admin_codes_with_their_failure_codes(tmp_path):
    config = BrokerConfig(broker_name="broker-open", listen_port=0, bind_address="127.0.0.1",
                          broker_ip1="127.0.0.1", namesrv_addr="", fast_channel_enable=False)
    store = MessageStoreConfig(store_path_root_dir=str(tmp_path / "store"), mapped_file_size_commit_log=1 << 20,
                               mapped_file_size_consume_queue=1000 * 20, max_hash_slot_num=100, max_index_num=400)
    client = RemotingClient()
    async with BrokerController(config, store) as broker:
        try:
            response = await client.invoke(broker.broker_addr, create_request(
                RequestCode.DELETE_ACL_CONFIG, {"accessKey": "someKey1"}), 5000)
            assert response.code == ResponseCode.DELETE_ACL_CONFIG_FAILED and "aclEnable=true" in response.remark
            acl_config = await client.invoke(broker.broker_addr, create_request(
                RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG, {}), 5000)
            assert acl_config.code == ResponseCode.SYSTEM_ERROR and "aclEnable=true" in acl_config.remark
            plain = await client.invoke(broker.broker_addr, create_request(RequestCode.GET_BROKER_CONFIG, {}), 5000)
            assert plain.code == ResponseCode.SUCCESS
        finally:
            await client.shutdown()


async def test_request_hooks_run_before_the_processor_and_refuse_with_their_code():
    from rocketmq_py.remoting import ProcessorTable, RemotingServer, RequestRefusedError

    processed = []

    async def processor(ctx, request):
        processed.append(request.code)
        return create_request(0, {})

    def hook(ctx, request):
        if request.ext_fields and request.ext_fields.get("refuse"):
            raise RequestRefusedError(ResponseCode.NO_PERMISSION, "refused by the hook")
        if request.ext_fields and request.ext_fields.get("break"):
            raise RuntimeError("a bug in the hook")

    table = ProcessorTable(default=processor)
    table.add_hook(hook)
    client = RemotingClient()
    async with RemotingServer("127.0.0.1", 0, table) as server:
        try:
            refused = await client.invoke(server.address, create_request(77, {"refuse": "1"}), 5000)
            assert (refused.code, refused.remark) == (ResponseCode.NO_PERMISSION, "refused by the hook")
            broken = await client.invoke(server.address, create_request(77, {"break": "1"}), 5000)
            assert broken.code == ResponseCode.SYSTEM_ERROR and "a bug in the hook" in broken.remark
            await client.invoke_oneway(server.address, create_request(77, {"refuse": "1"}), 5000)
            passed = await client.invoke(server.address, create_request(78, {}), 5000)
            assert passed.code == ResponseCode.SUCCESS
            assert processed == [78]
        finally:
            await client.shutdown()
