"""Issue 11, ACL: our broker and the official broker, both with aclEnable=true and the same plain_acl.yml, answer
every request of the matrix with the same response code. Requests are built and signed with our codec and
signer, and sent over plain sockets so a cell can come from another loopback address (127.0.0.2 is in an
account's whitelist, 127.0.0.3 in the global one). Also: the Java client with AclClientRPCHook and ours with
access_key work against our broker, and an edit of the file applies on both without a restart."""
from __future__ import annotations

import logging
import socket
import struct
import time
import uuid

import pytest
from harness import mqadmin, mqadmin_patiently, run_peer
from harness.peers import PeerError, client_home
from harness.acl import JavaAclBroker, acl_file_of
from harness.processes import JavaNameServer
from harness.py_servers import BROKER_WORKERS

from rocketmq_py import codec
from rocketmq_py.broker import BrokerConfig, BrokerController
from rocketmq_py.client.producer import Producer, SendStatus
from rocketmq_py.common.acl import SessionCredentials
from rocketmq_py.common.codes import RequestCode
from rocketmq_py.common.message import Message
from rocketmq_py.namesrv import NamesrvConfig, NamesrvController
from rocketmq_py.remoting import create_request
from rocketmq_py.remoting.blocking import BackgroundLoop
from rocketmq_py.store import MessageStoreConfig

PLAIN_ACL = """\
globalWhiteRemoteAddresses:
  - 127.0.0.3
accounts:
  - accessKey: aclAdmin01
    secretKey: aclAdminSecret
    whiteRemoteAddress:
    admin: true
  - accessKey: aclUser001
    secretKey: aclUserSecret
    whiteRemoteAddress: 127.0.0.{2,4}
    admin: false
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: SUB
    topicPerms:
      - DeniedTopic=DENY
    groupPerms:
      - DeniedGroup=DENY
"""
ADMIN = SessionCredentials("aclAdmin01", "aclAdminSecret")
USER = SessionCredentials("aclUser001", "aclUserSecret")
SYSTEM_ERROR = 1
RESPONSE_FLAG = 1

# scenario -> (credentials, source address, topic, group)
SCENARIOS = {
    "unsigned": (None, "127.0.0.1", "OpenTopic", "OpenGroup"),
    "wrong-secret": (SessionCredentials("aclUser001", "notTheSecret"), "127.0.0.1", "OpenTopic", "OpenGroup"),
    "unknown-key": (SessionCredentials("ghostKey01", "ghostSecret1"), "127.0.0.1", "OpenTopic", "OpenGroup"),
    "denied-topic": (USER, "127.0.0.1", "DeniedTopic", "OpenGroup"),
    "denied-group": (USER, "127.0.0.1", "OpenTopic", "DeniedGroup"),
    "account-whitelist": (SessionCredentials("aclUser001", "notTheSecret"), "127.0.0.2", "DeniedTopic", "DeniedGroup"),
    "global-whitelist": (None, "127.0.0.3", "OpenTopic", "OpenGroup"),
    "admin": (ADMIN, "127.0.0.1", "OpenTopic", "OpenGroup"),
    "non-admin": (USER, "127.0.0.1", "OpenTopic", "OpenGroup"),
}


def _send_fields(topic, group):
    return {"a": group, "b": topic, "c": "TBW102", "d": 4, "e": 0, "f": 0, "g": int(time.time() * 1000),
            "h": 0, "i": "TAGS\x01matrix\x02WAIT\x01true", "j": 0, "k": "false", "m": "false"}


def _heartbeat(topic, group):
    body = {"clientID": "127.0.0.1@matrix", "producerDataSet": [{"groupName": "MatrixProducer"}],
            "consumerDataSet": [{"groupName": group, "consumeType": "CONSUME_PASSIVELY",
                                 "messageModel": "CLUSTERING", "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET",
                                 "unitMode": False, "subscriptionDataSet": [
                                     {"topic": topic, "subString": "*", "tagsSet": [], "codeSet": [],
                                      "subVersion": 1, "classFilterMode": False, "expressionType": "TAG"}]}]}
    return codec.json_dumps(body).encode()


# request -> function(topic, group, broker) -> (code, ext fields, body)
REQUESTS = {
    "send": lambda t, g, b: (RequestCode.SEND_MESSAGE_V2, _send_fields(t, g), b"matrix body"),
    "batch": lambda t, g, b: (RequestCode.SEND_BATCH_MESSAGE, {**_send_fields(t, g), "m": "true"},
                              codec.encode_batch([(0, b"one", {"TAGS": "x"}), (0, b"two", {"TAGS": "y"})])),
    "pull": lambda t, g, b: (RequestCode.PULL_MESSAGE, {
        "consumerGroup": g, "topic": t, "queueId": 0, "queueOffset": 0, "maxMsgNums": 4, "sysFlag": 0,
        "commitOffset": 0, "suspendTimeoutMillis": 0, "subVersion": 0}, None),
    "heartbeat": lambda t, g, b: (RequestCode.HEART_BEAT, {}, _heartbeat(t, g)),
    "query-offset": lambda t, g, b: (RequestCode.QUERY_CONSUMER_OFFSET,
                                     {"consumerGroup": g, "topic": t, "queueId": 0}, None),
    "update-offset": lambda t, g, b: (RequestCode.UPDATE_CONSUMER_OFFSET,
                                      {"consumerGroup": g, "topic": t, "queueId": 0, "commitOffset": 1}, None),
    "create-topic": lambda t, g, b: (RequestCode.UPDATE_AND_CREATE_TOPIC, {
        "topic": "MatrixCreated", "defaultTopic": "TBW102", "readQueueNums": 2, "writeQueueNums": 2, "perm": 6,
        "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0, "order": "false"}, None),
    "delete-topic": lambda t, g, b: (RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": "MatrixCreated"}, None),
    "get-broker-config": lambda t, g, b: (RequestCode.GET_BROKER_CONFIG, {}, None),
    "update-acl-config": lambda t, g, b: (RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, {
        "accessKey": "matrixTemp1", "secretKey": "matrixSecret1", "admin": "false", "defaultTopicPerm": "SUB",
        "topicPerms": "A=PUB,B=DENY"}, None),
    "delete-acl-config": lambda t, g, b: (RequestCode.DELETE_ACL_CONFIG, {"accessKey": "matrixTemp1"}, None),
    "acl-config-version": lambda t, g, b: (RequestCode.GET_BROKER_CLUSTER_ACL_INFO, {}, None),
    "update-global-white": lambda t, g, b: (RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG,
                                            {"globalWhiteAddrs": "127.0.0.3", "aclFileFullPath": ""}, None),
    "cluster-acl-config": lambda t, g, b: (RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG, {}, None),
}


def call(addr: str, source: str, code: int, fields: dict, body: bytes | None, credentials) -> tuple[int, str]:
    """One request from ``source`` (a loopback address) to ``addr``: (response code, remark)."""
    answer = exchange(addr, source, code, fields, body, credentials)
    return answer.code, answer.remark or ""


def exchange(addr: str, source: str, code: int, fields: dict, body: bytes | None, credentials):
    """One request from ``source`` (a loopback address) to ``addr``: the response command."""
    fields = {key: str(value) for key, value in fields.items()}
    if credentials is not None:
        credentials.sign(fields, body)
    request = create_request(code, fields, body)
    host, port = addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=20, source_address=(source, 0)) as sock:
        sock.sendall(codec.encode_command(request))
        while True:
            (length,) = struct.unpack(">I", _read(sock, 4))
            frame = codec.decode_frame(_read(sock, length))
            # The broker may send requests of its own first (NOTIFY_CONSUMER_IDS_CHANGED after a heartbeat).
            if frame.flag & RESPONSE_FLAG and frame.opaque == request.opaque:
                return frame


def _read(sock: socket.socket, count: int) -> bytes:
    data = bytearray()
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            raise ConnectionError("the broker closed the connection without an answer")
        data += chunk
    return bytes(data)


class _Tracebacks(logging.Handler):
    """Collects the log records of our servers that carry a traceback (each one is a bug)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info:
            self.records.append(record)


class OurAclCluster:
    """Our name server and broker (aclEnable=true, rocketmqHome=``home``) on a background event loop."""

    def __init__(self, home) -> None:
        self.home = home
        self.tracebacks = _Tracebacks()
        self.loop = BackgroundLoop("our-acl-cluster")
        self.namesrv = NamesrvController(NamesrvConfig(listen_port=0, bind_address="127.0.0.1",
                                                       kv_config_path=str(home / "kv.json")))
        self.broker: BrokerController | None = None

    def start(self) -> "OurAclCluster":
        logging.getLogger("rocketmq_py").addHandler(self.tracebacks)
        acl_file_of(self.home).parent.mkdir(parents=True, exist_ok=True)
        acl_file_of(self.home).write_text(PLAIN_ACL)

        async def start() -> None:
            await self.namesrv.start()
            self.broker = BrokerController(
                BrokerConfig(broker_name="pybroker-acl", broker_cluster_name="AclCluster",
                             namesrv_addr=self.namesrv.address, listen_port=0, bind_address="127.0.0.1",
                             broker_ip1="127.0.0.1", broker_ip2="127.0.0.1", fast_channel_enable=False,
                             acl_enable=True, rocketmq_home=str(self.home),
                             server_worker_processes=BROKER_WORKERS),
                MessageStoreConfig(store_path_root_dir=str(self.home / "store"),
                                   mapped_file_size_commit_log=16 * 1024 * 1024,
                                   mapped_file_size_consume_queue=30000 * 20, max_hash_slot_num=5000,
                                   max_index_num=20000))
            await self.broker.start()
            assert len(self.broker.server.front_pids) == BROKER_WORKERS, "ROCKETMQ_PY_BROKER_WORKERS: the fronts run"

        self.loop.run(start(), timeout=60)
        return self

    @property
    def addr(self) -> str:
        assert self.broker is not None
        return self.broker.broker_addr

    @property
    def namesrv_addr(self) -> str:
        return self.namesrv.address

    @property
    def acl_file(self):
        return acl_file_of(self.home)

    def stop(self) -> None:
        async def stop() -> None:
            if self.broker is not None:
                await self.broker.shutdown()
            await self.namesrv.shutdown()

        try:
            self.loop.run(stop(), timeout=60)
        finally:
            self.loop.close()
            logging.getLogger("rocketmq_py").removeHandler(self.tracebacks)


@pytest.fixture(scope="module")
def brokers(java_build, tmp_path_factory):
    """(Java broker, our cluster), both with aclEnable=true and PLAIN_ACL."""
    namesrv = JavaNameServer(build=java_build, workdir=tmp_path_factory.mktemp("acl-matrix-namesrv")).start()
    java = JavaAclBroker(namesrv, PLAIN_ACL, build=java_build, workdir=tmp_path_factory.mktemp("acl-matrix-java"),
                         broker_name="broker-acl-matrix", cluster="AclCluster")
    ours = OurAclCluster(tmp_path_factory.mktemp("acl-matrix-ours"))
    try:
        java.start()
        ours.start()
        yield java, ours
    finally:
        ours.stop()
        java.stop()
        namesrv.stop()
    assert not ours.tracebacks.records, [record.getMessage() for record in ours.tracebacks.records]


def _loopback_aliases_work() -> bool:
    try:
        with socket.socket() as sock:
            sock.bind(("127.0.0.2", 0))
        return True
    except OSError:
        return False


def test_acl_matrix_ours_equals_java(brokers):
    assert _loopback_aliases_work(), "the whitelist cells need 127.0.0.2 and 127.0.0.3 (Linux loopback is /8)"
    java, ours = brokers
    cells: dict[tuple[str, str], tuple[tuple[int, str], tuple[int, str]]] = {}
    for request, build in REQUESTS.items():
        for scenario, (credentials, source, topic, group) in SCENARIOS.items():
            answers = []
            for broker in (java, ours):
                code, fields, body = build(topic, group, broker)
                answers.append(call(broker.addr, source, code, fields, body, credentials))
            cells[(request, scenario)] = (answers[0], answers[1])
    table = "\n".join(f"{request:20} {scenario:18} java={j[0]:<4} ours={o[0]:<4} {j[1][:90]!r} | {o[1][:90]!r}"
                      for (request, scenario), (j, o) in cells.items())
    mismatched = [cell for cell, (j, o) in cells.items() if j[0] != o[0]]
    assert not mismatched, f"codes differ in {mismatched}:\n{table}"
    for (request, scenario), (j, o) in cells.items():
        if "AclException" in j[1]:
            # Java appends the first stack frame to the exception text; the rest is the same.
            assert j[1].startswith(o[1]) and o[1], f"{request}/{scenario}: {j[1]!r} vs {o[1]!r}"
    # The matrix cannot pass with ACL off on both: these cells must be refusals by the ACL check.
    for scenario in ("unsigned", "wrong-secret", "unknown-key"):
        for request in REQUESTS:
            j, _ = cells[(request, scenario)]
            assert j[0] == SYSTEM_ERROR and "AclException" in j[1], (request, scenario, j)
    for request in ("send", "pull", "heartbeat", "update-offset"):
        assert "AclException" in cells[(request, "denied-topic")][0][1], request
    for request in ("pull", "heartbeat", "update-offset"):
        assert "AclException" in cells[(request, "denied-group")][0][1], request
    for request in ("create-topic", "delete-topic"):
        assert "Need admin permission" in cells[(request, "non-admin")][0][1], request
        assert "AclException" not in cells[(request, "admin")][0][1], request
    for scenario in ("account-whitelist", "global-whitelist", "admin"):
        for request in REQUESTS:
            assert "AclException" not in cells[(request, scenario)][0][1], (request, scenario)


def test_the_cluster_acl_config_is_answered_as_the_java_broker_answers_it(brokers):
    """GET_BROKER_CLUSTER_ACL_CONFIG (54), the dashboard's ACL page: the same accounts and white addresses, as
    the same JSON (fastjson's bean order, nulls left out), from the same file."""
    answers = [exchange(broker.addr, "127.0.0.1", RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG, {}, None, ADMIN)
               for broker in brokers]
    assert [answer.code for answer in answers] == [0, 0], [answer.remark for answer in answers]
    java, ours = (codec.json_loads(answer.body.decode()) for answer in answers)
    assert ours == java
    assert [account["accessKey"] for account in ours["plainAccessConfigs"]] == ["aclAdmin01", "aclUser001"]
    assert ours["globalWhiteAddrs"] == ["127.0.0.3"]
    assert answers[1].body == answers[0].body


def test_java_client_with_acl_hook_and_ours_with_access_key_work_against_our_broker(brokers):
    _, ours = brokers
    topic = f"AclClients_{uuid.uuid4().hex[:8]}"
    sent = run_peer("produce", namesrv=ours.namesrv_addr, topic=topic, count=5, body="java-acl-{i}",
                    access_key=USER.access_key, secret_key=USER.secret_key)
    assert [line["status"] for line in sent] == ["SEND_OK"] * 5
    with Producer("acl_py_pg", namesrv_addr=ours.namesrv_addr, access_key=USER.access_key,
                  secret_key=USER.secret_key) as producer:
        result = producer.send(Message(topic, b"python-acl"))
    assert result.send_status is SendStatus.SEND_OK
    *received, done = run_peer("consume", namesrv=ours.namesrv_addr, topic=topic, group=f"AclGroup_{topic}",
                               count=6, timeout_ms=60000, access_key=USER.access_key, secret_key=USER.secret_key)
    assert done["count"] == 6 and not done["timedOut"], done
    refused = run_peer("produce", namesrv=ours.namesrv_addr, topic=topic, count=1, retries=0, check=False,
                       access_key=USER.access_key, secret_key="notTheSecret")
    # The Java client's exception names no cause ("Send [1] times, still failed"); that it fails is the point.
    assert any("error" in line for line in refused) and not any(line.get("status") for line in refused), refused


def test_an_edit_of_the_file_applies_without_restart_on_both(brokers):
    java, ours = brokers
    fields = _send_fields("EditedTopic", "OpenGroup")
    before = [call(b.addr, "127.0.0.1", RequestCode.SEND_MESSAGE_V2, fields, b"x", USER)[0] for b in (java, ours)]
    assert before == [0, 0]
    for broker in (java, ours):
        broker.acl_file.write_text(PLAIN_ACL.replace("DeniedTopic=DENY", "EditedTopic=DENY"))
    deadline = time.monotonic() + 60
    codes = before
    while time.monotonic() < deadline:
        codes = [call(b.addr, "127.0.0.1", RequestCode.SEND_MESSAGE_V2, _send_fields("EditedTopic", "OpenGroup"),
                      b"x", USER)[0] for b in (java, ours)]
        if codes == [SYSTEM_ERROR, SYSTEM_ERROR]:
            break
        time.sleep(1)
    assert codes == [SYSTEM_ERROR, SYSTEM_ERROR], "both brokers apply the edited file within 60 s (they poll every 5 s)"


def _delete_patiently(ours, update_args: tuple[str, ...]) -> str:
    """deleteAclConfig, again when it timed out, with the account put back first: a delete that timed out may
    have been made, and a second one of a missing account fails."""
    for attempt in range(3):
        try:
            return mqadmin("deleteAclConfig", "-b", ours.addr, "-a", "mqadminKey1", namesrv=ours.namesrv_addr)
        except PeerError as error:
            if "RemotingTimeoutException" not in str(error) or attempt == 2:
                raise
            mqadmin_patiently(*update_args, namesrv=ours.namesrv_addr)
    raise AssertionError("unreachable")


def test_mqadmin_acl_commands_against_our_broker(brokers):
    """updateAclConfig, clusterAclConfigVersion, updateGlobalWhiteAddr and deleteAclConfig, signed by mqadmin
    with the admin account of conf/tools.yml (MQAdminStartup reads it from its ROCKETMQ_HOME). The matrix
    above already compares these request codes with the Java broker's answers."""
    _, ours = brokers
    tools = client_home() / "conf" / "tools.yml"
    tools.write_text(f"accessKey: {ADMIN.access_key}\nsecretKey: {ADMIN.secret_key}\n")
    try:
        update_args = ("updateAclConfig", "-b", ours.addr, "-a", "mqadminKey1", "-s", "mqadminSecret1",
                       "-t", "AdminTopic=PUB", "-m", "false")
        update = mqadmin_patiently(*update_args, namesrv=ours.namesrv_addr)
        version = mqadmin_patiently("clusterAclConfigVersion", "-b", ours.addr, namesrv=ours.namesrv_addr)
        # -p is needed: without it mqadmin 4.9.8 sends no aclFileFullPath, which both brokers refuse (the
        # header field is required).
        white = mqadmin_patiently("updateGlobalWhiteAddr", "-b", ours.addr, "-g", "127.0.0.3",
                                   "-p", str(ours.acl_file), namesrv=ours.namesrv_addr)
        delete = _delete_patiently(ours, update_args)
    finally:
        tools.unlink()
    assert f"create or update plain access config to {ours.addr} success" in update, update
    assert "get broker's plain access config version success" in version and "plain_acl.yml" in version, version
    assert f"update global white remote addresses to {ours.addr} success" in white, white
    assert f"delete plain access config account from {ours.addr} success" in delete, delete
    accounts = [line for line in ours.acl_file.read_text().splitlines() if "mqadminKey1" in line]
    assert not accounts, "deleteAclConfig removed the account from the file"
