"""The broker's ACL pieces without a network: address patterns, permission text, the resources each request
code needs, the checks in Java's order with Java's messages, the ACL file edits and the reload."""
from __future__ import annotations

import os
import time

import pytest
import yaml

from rocketmq_py import codec
from rocketmq_py.acl import AclError, PlainAccessConfig, PlainPermissionManager, address_pattern, parse_request
from rocketmq_py.acl import permission
from rocketmq_py.acl.plain_file import java_split
from rocketmq_py.acl.remote_address import expand_ip
from rocketmq_py.common.acl import SessionCredentials
from rocketmq_py.common.codes import RequestCode
from rocketmq_py.remoting import create_request

PLAIN_ACL = """\
globalWhiteRemoteAddresses:
  - 10.10.103.*
accounts:
  - accessKey: rocketmq2
    secretKey: "12345678"
    whiteRemoteAddress: 192.168.1.{1,2}
    admin: true
  - accessKey: RocketMQ
    secretKey: "12345678"
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms: [topicA=DENY, topicB=PUB|SUB, topicC=SUB]
    groupPerms: [groupA=DENY, groupB=PUB|SUB]
"""


@pytest.mark.parametrize("pattern,admitted,refused", [
    ("*", ["1.2.3.4", "::1"], []),
    ("", [], ["127.0.0.1"]),
    ("127.0.0.1", ["127.0.0.1"], ["127.0.0.2"]),
    ("192.168.0.{1,2}", ["192.168.0.1", "192.168.0.2"], ["192.168.0.3", "192.168.1.1"]),
    ("192.168.0.1,10.0.0.1", ["192.168.0.1", "10.0.0.1"], ["10.0.0.2"]),
    ("192.168.1.1-200", ["192.168.1.1", "192.168.1.200"], ["192.168.1.201", "192.168.2.5"]),
    ("192.168.*.*", ["192.168.0.1", "192.168.255.9"], ["192.169.0.1"]),
    ("10.1-5.*.*", ["10.1.0.0", "10.5.9.9"], ["10.6.0.0"]),
    ("::1", ["0:0:0:0:0:0:0:1", "::1"], ["::2"]),
    ("1:2:3:4:5:6:7:{1,2}", ["1:2:3:4:5:6:7:1", "1:2:3:4:5:6:7:2"], ["1:2:3:4:5:6:7:3"]),
    ("1:2:3:4:5:6:7:1-ff", ["1:2:3:4:5:6:7:1", "1:2:3:4:5:6:7:ff"], ["1:2:3:4:5:6:7:100", "1:2:3:4:5:6:8:1"]),
    ("1:2:3:4:5:6:7:*", ["1:2:3:4:5:6:7:abcd"], ["1:2:3:4:5:6:8:1"]),
])
def test_address_patterns(pattern, admitted, refused):
    matcher = address_pattern(pattern)
    assert [ip for ip in admitted if matcher.match(ip)] == admitted
    assert [ip for ip in refused if matcher.match(ip)] == []


@pytest.mark.parametrize("pattern", ["300.1.1.1", "192.168.1.{1,x}", "1.2.{3}", "192.168.1.-5", "192.168.1.5-2",
                                     "1:2:3:*:5:6:7:8", "not-an-address"])
def test_bad_address_patterns_are_typed_errors(pattern):
    with pytest.raises(AclError):
        address_pattern(pattern)


def test_expand_ip_widens_and_pads():
    assert expand_ip("::1", 8) == "0000:0000:0000:0000:0000:0000:0000:0001"
    assert expand_ip("fe80::a", 8) == "FE80:0000:0000:0000:0000:0000:0000:000A"
    assert expand_ip("127.0.0.1", 8) == "127.0.0.1"


def test_permission_text_and_checks():
    assert permission.parse_perm("PUB|SUB") == permission.PUB | permission.SUB
    assert permission.parse_perm(" SUB ") == permission.SUB
    assert permission.parse_perm(None) == permission.DENY
    assert permission.parse_perm("WRITE") == permission.DENY
    assert permission.check_permission(permission.PUB, permission.PUB | permission.SUB)
    assert not permission.check_permission(permission.PUB, permission.SUB)
    assert not permission.check_permission(permission.SUB, permission.SUB | permission.DENY)
    assert permission.check_permission(permission.ANY, permission.SUB)
    assert permission.parse_resource_perms(["g=SUB"], topics=False) == {"%RETRY%g": permission.SUB}
    with pytest.raises(AclError, match="Parse resource permission failed for topic:bad"):
        permission.parse_resource_perms(["bad"], topics=True)
    with pytest.raises(AclError, match="The expected permissions are"):
        permission.check_resource_perms(["t=WRITE"])
    assert RequestCode.UPDATE_AND_CREATE_TOPIC in permission.ADMIN_CODES
    assert RequestCode.UPDATE_AND_CREATE_ACL_CONFIG not in permission.ADMIN_CODES


def test_java_split_keeps_java_string_split_rules():
    assert java_split(None, ",") is None
    assert java_split("", ",") == [""]
    assert java_split("a,,b,,", ",") == ["a", "", "b"]


def _request(code, fields, body=None, credentials=None):
    fields = dict(fields)
    if credentials is not None:
        credentials.sign(fields, body)
    return create_request(code, fields, body)


def _heartbeat(group, *topics):
    return codec.json_dumps({"clientID": "c", "producerDataSet": [], "consumerDataSet": [
        {"groupName": group, "subscriptionDataSet": [{"topic": t} for t in topics]}]}).encode()


@pytest.mark.parametrize("code,fields,body,needed", [
    (RequestCode.SEND_MESSAGE_V2, {"a": "pg", "b": "T"}, b"x", {"T": permission.PUB}),
    (RequestCode.SEND_MESSAGE_V2, {"a": "cg", "b": "%RETRY%cg"}, b"x", {"%RETRY%cg": permission.SUB}),
    (RequestCode.SEND_MESSAGE, {"producerGroup": "pg", "topic": "T"}, b"x", {"T": permission.PUB}),
    (RequestCode.SEND_BATCH_MESSAGE, {"a": "pg", "b": "T"}, b"x", None),
    (RequestCode.CONSUMER_SEND_MSG_BACK, {"group": "g"}, None, {"%RETRY%g": permission.SUB}),
    (RequestCode.PULL_MESSAGE, {"topic": "T", "consumerGroup": "g"}, None,
     {"T": permission.SUB, "%RETRY%g": permission.SUB}),
    (RequestCode.QUERY_MESSAGE, {"topic": "T"}, None, {"T": permission.SUB}),
    (RequestCode.HEART_BEAT, {}, _heartbeat("g", "T1", "T2"), {"%RETRY%g": 8, "T1": 8, "T2": 8}),
    (RequestCode.UNREGISTER_CLIENT, {"clientID": "c", "consumerGroup": "g"}, None, {"%RETRY%g": permission.SUB}),
    (RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "g"}, None, {"%RETRY%g": permission.SUB}),
    (RequestCode.UPDATE_CONSUMER_OFFSET, {"consumerGroup": "g", "topic": "T", "queueId": "0", "commitOffset": "5"},
     None, {"%RETRY%g": permission.SUB, "T": permission.SUB}),
    (RequestCode.QUERY_CONSUMER_OFFSET, {"consumerGroup": "g", "topic": "T", "queueId": "0"}, None, None),
    (RequestCode.GET_BROKER_CONFIG, {}, None, None),
])
def test_resources_each_request_code_needs(code, fields, body, needed):
    resource = parse_request(_request(code, fields, body, SessionCredentials("ak", "sk")), "10.0.0.1:4000")
    assert resource.resources == needed
    assert resource.remote_ip == "10.0.0.1" and resource.access_key == "ak" and resource.signature


def test_request_without_required_fields_is_refused_with_the_field_named():
    with pytest.raises(AclError, match="the custom field <commitOffset> is null"):
        parse_request(_request(RequestCode.UPDATE_CONSUMER_OFFSET,
                               {"consumerGroup": "g", "topic": "T", "queueId": "0"}), "1.1.1.1:1")
    with pytest.raises(AclError, match="HEART_BEAT body"):
        parse_request(_request(RequestCode.HEART_BEAT, {}, b"{not json"), "1.1.1.1:1")


def test_ipv6_remote_address_loses_only_its_port():
    resource = parse_request(_request(RequestCode.GET_BROKER_CONFIG, {}), "::1:5555")
    assert resource.remote_ip == "::1"


@pytest.fixture
def manager(tmp_path):
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "plain_acl.yml").write_text(PLAIN_ACL)
    return PlainPermissionManager(tmp_path)


def _check(manager, code, fields, body=None, credentials=None, address="127.0.0.1:999"):
    manager.validate(parse_request(_request(code, fields, body, credentials), address))


NORMAL = SessionCredentials("RocketMQ", "12345678")
ADMIN = SessionCredentials("rocketmq2", "12345678")


@pytest.mark.parametrize("credentials,code,fields,message", [
    (None, RequestCode.GET_BROKER_CONFIG, {}, "No accessKey is configured"),
    (SessionCredentials("RocketMQ", "wrong-secret"), RequestCode.GET_BROKER_CONFIG, {},
     "Check signature failed for accessKey=RocketMQ"),
    (SessionCredentials("nobody-at-all", "12345678"), RequestCode.GET_BROKER_CONFIG, {}, "No acl config for nobody-at-all"),
    (NORMAL, RequestCode.SEND_MESSAGE_V2, {"a": "pg", "b": "topicA"}, "No default permission for topic:topicA"),
    (NORMAL, RequestCode.SEND_MESSAGE_V2, {"a": "pg", "b": "topicC"}, "No default permission for topic:topicC"),
    (NORMAL, RequestCode.SEND_MESSAGE_V2, {"a": "pg", "b": "other"}, "No default permission for topic:other"),
    (NORMAL, RequestCode.PULL_MESSAGE, {"topic": "topicB", "consumerGroup": "groupA"},
     "No default permission for group:groupA"),
    (NORMAL, RequestCode.UPDATE_AND_CREATE_TOPIC, {"topic": "t"},
     "Need admin permission for request code=17, but accessKey=RocketMQ is not"),
])
def test_refusals_carry_javas_messages(manager, credentials, code, fields, message):
    with pytest.raises(AclError) as refusal:
        _check(manager, code, fields, credentials=credentials)
    assert str(refusal.value) == message
    assert refusal.value.java_remark == f"org.apache.rocketmq.acl.common.AclException: {message}"


@pytest.mark.parametrize("credentials,code,fields,address", [
    (NORMAL, RequestCode.SEND_MESSAGE_V2, {"a": "pg", "b": "topicB"}, "127.0.0.1:1"),
    (NORMAL, RequestCode.PULL_MESSAGE, {"topic": "topicB", "consumerGroup": "groupB"}, "127.0.0.1:1"),
    (NORMAL, RequestCode.PULL_MESSAGE, {"topic": "topicC", "consumerGroup": "anyGroup"}, "127.0.0.1:1"),
    (NORMAL, RequestCode.SEND_MESSAGE_V2, {"a": "pg", "b": "RMQ_SYS_TRACE_TOPIC"}, "127.0.0.1:1"),
    (ADMIN, RequestCode.UPDATE_AND_CREATE_TOPIC, {"topic": "t"}, "127.0.0.1:1"),
    (ADMIN, RequestCode.SEND_MESSAGE_V2, {"a": "pg", "b": "anything"}, "127.0.0.1:1"),
    (None, RequestCode.GET_BROKER_CONFIG, {}, "10.10.103.7:1"),
    (SessionCredentials("rocketmq2", "not-the-secret"), RequestCode.GET_BROKER_CONFIG, {}, "192.168.1.2:1"),
])
def test_admitted_requests(manager, credentials, code, fields, address):
    _check(manager, code, fields, credentials=credentials, address=address)


def test_update_create_and_delete_accounts_rewrite_the_file(manager, tmp_path):
    path = tmp_path / "conf" / "plain_acl.yml"
    fresh = SessionCredentials("freshKey1", "freshSecret1")
    with pytest.raises(AclError, match="No acl config for freshKey1"):
        _check(manager, RequestCode.SEND_MESSAGE_V2, {"a": "pg", "b": "tt"}, credentials=fresh)
    assert manager.update_account(PlainAccessConfig("freshKey1", "freshSecret1", default_topic_perm="PUB",
                                                    topic_perms=["tt=PUB"]))
    _check(manager, RequestCode.SEND_MESSAGE_V2, {"a": "pg", "b": "tt"}, credentials=fresh)
    written = yaml.safe_load(path.read_text())
    assert written["accounts"][-1] == {"accessKey": "freshKey1", "secretKey": "freshSecret1", "admin": False,
                                       "defaultTopicPerm": "PUB", "topicPerms": ["tt=PUB"]}
    assert written["dataVersion"][0]["counter"] == 1
    assert written["globalWhiteRemoteAddresses"] == ["10.10.103.*"]
    # An update keeps what it does not mention.
    manager.update_account(PlainAccessConfig("freshKey1", "freshSecret2", admin=True))
    entry = yaml.safe_load(path.read_text())["accounts"][-1]
    assert entry["secretKey"] == "freshSecret2" and entry["admin"] is True and entry["topicPerms"] == ["tt=PUB"]
    assert manager.delete_account("freshKey1")
    assert not manager.delete_account("freshKey1")
    with pytest.raises(AclError, match="No acl config for freshKey1"):
        _check(manager, RequestCode.GET_BROKER_CONFIG, {}, credentials=fresh)
    assert manager.default_version.counter == 3


@pytest.mark.parametrize("config,message", [
    (PlainAccessConfig("short", "12345678"), "cannot be null and length should longer than 6"),
    (PlainAccessConfig("longEnough", None), "secretKey=null"),
    (PlainAccessConfig("longEnough", "12345678", topic_perms=["t=WRITE"]), "The expected permissions are"),
])
def test_bad_account_updates_change_nothing(manager, tmp_path, config, message):
    before = (tmp_path / "conf" / "plain_acl.yml").read_bytes()
    with pytest.raises(AclError, match=message):
        manager.update_account(config)
    assert (tmp_path / "conf" / "plain_acl.yml").read_bytes() == before


def test_global_white_update_applies_on_reload(manager, tmp_path):
    with pytest.raises(AclError):
        _check(manager, RequestCode.GET_BROKER_CONFIG, {}, address="172.16.0.9:1")
    assert manager.update_global_white_addrs(["172.16.0.*"])
    assert not manager.update_global_white_addrs(["172.16.0.*"], str(tmp_path / "elsewhere.yml"))
    assert manager.reload_if_changed()
    _check(manager, RequestCode.GET_BROKER_CONFIG, {}, address="172.16.0.9:1")


def _touch_later(path, text):
    before = os.stat(path).st_mtime_ns
    path.write_text(text)
    if os.stat(path).st_mtime_ns == before:  # a coarse file-system clock
        os.utime(path, ns=(time.time_ns(), before + 1_000_000))


def test_edit_takes_effect_on_reload_and_a_broken_edit_keeps_the_old_rules(manager, tmp_path):
    path = tmp_path / "conf" / "plain_acl.yml"
    _check(manager, RequestCode.SEND_MESSAGE_V2, {"a": "pg", "b": "topicB"}, credentials=NORMAL)
    assert not manager.reload_if_changed()
    _touch_later(path, PLAIN_ACL.replace("topicB=PUB|SUB", "topicB=DENY"))
    assert manager.reload_if_changed()
    with pytest.raises(AclError, match="topic:topicB"):
        _check(manager, RequestCode.SEND_MESSAGE_V2, {"a": "pg", "b": "topicB"}, credentials=NORMAL)
    _touch_later(path, "accounts: [ {accessKey: x")
    assert not manager.reload_if_changed()
    with pytest.raises(AclError, match="topic:topicB"):
        _check(manager, RequestCode.SEND_MESSAGE_V2, {"a": "pg", "b": "topicB"}, credentials=NORMAL)


def test_files_under_conf_acl_add_accounts(tmp_path):
    (tmp_path / "conf" / "acl").mkdir(parents=True)
    (tmp_path / "conf" / "acl" / "team.yaml").write_text(
        "accounts:\n  - {accessKey: teamKey1, secretKey: teamSecret1, admin: true}\n")
    manager = PlainPermissionManager(tmp_path)
    assert (tmp_path / "conf" / "plain_acl.yml").exists()
    _check(manager, RequestCode.UPDATE_AND_CREATE_TOPIC, {"topic": "t"},
           credentials=SessionCredentials("teamKey1", "teamSecret1"))
    # The default file was created empty: an empty file has no version (Java skips it too).
    assert set(manager.versions) == {str(tmp_path / "conf" / "acl" / "team.yaml")}


def test_unusable_file_at_start_is_a_typed_error(tmp_path):
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "plain_acl.yml").write_text("accounts:\n  - {accessKey: abc, secretKey: def}\n")
    with pytest.raises(AclError, match="plain_acl.yml.*length should longer than 6"):
        PlainPermissionManager(tmp_path)
    with pytest.raises(AclError, match="needs rocketmqHome"):
        PlainPermissionManager("")


def test_the_acl_file_setting_has_javas_name_and_is_relative_to_the_home(tmp_path):
    from rocketmq_py.broker.config import load_broker_config

    conf = tmp_path / "broker.conf"
    conf.write_text(f"aclEnable=true\nrocketmqHome={tmp_path}\nrocketmq.acl.plain.file=conf/other.yml\n")
    broker, _ = load_broker_config(conf)
    assert (broker.acl_enable, broker.acl_plain_file, broker.rocketmq_home) == (True, "conf/other.yml", str(tmp_path))
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "other.yml").write_text(PLAIN_ACL)
    manager = PlainPermissionManager(broker.rocketmq_home, broker.acl_plain_file)
    assert manager.default_file == str(tmp_path / "conf" / "other.yml")
    _check(manager, RequestCode.UPDATE_AND_CREATE_TOPIC, {"topic": "t"}, credentials=ADMIN)
    assert not (tmp_path / "conf" / "plain_acl.yml").exists()
