"""Issue 32, item 6: GET_BROKER_CONFIG (26), which the dashboard's broker config page and ``mqadmin
getBrokerConfig`` show, reports every key the official 4.9.7 broker reports, and Java's value for each key that
has no effect in ours. Java's keys are read from the Java broker at test time, never listed here."""
from __future__ import annotations

from harness import wire

from rocketmq_py.broker.config import JAVA_KEYS_WITHOUT_EFFECT
from rocketmq_py.common.codes import RequestCode, ResponseCode
from rocketmq_py.common.config_file import parse_properties

#: Keys whose values differ between the two harness brokers by construction: their names, ports, stores and
#: the directory each process runs in.
PER_BROKER_KEYS = {"brokerName", "listenPort", "haListenPort", "namesrvAddr", "storePathRootDir",
                   "storePathCommitLog", "rocketmqHome"}


def _broker_config(addr: str) -> dict[str, str]:
    header, body = wire.request(addr, RequestCode.GET_BROKER_CONFIG)
    assert header["code"] == ResponseCode.SUCCESS, header
    return parse_properties(body.decode("utf-8"))


def test_every_key_of_javas_broker_with_javas_defaults(java_broker, py_broker):
    java = _broker_config(java_broker.addr)
    ours = _broker_config(py_broker.addr)
    # Java reports the fields of its four config objects that are not null: 177 for the 4.9.7 broker.
    assert len(java) > 150, sorted(java)
    assert sorted(set(java) - set(ours)) == [], "keys the Java broker reports and ours does not"
    without_effect = JAVA_KEYS_WITHOUT_EFFECT & set(java)
    assert len(without_effect) > 70, sorted(without_effect)
    differing = {key: {"java": java[key], "ours": ours[key]} for key in sorted(without_effect - PER_BROKER_KEYS)
                 if java[key] != ours[key]}
    assert differing == {}, "keys without effect here must show Java's default"
    assert ours["rocketmqHome"], "rocketmqHome is never empty (the broker's directory without ROCKETMQ_HOME)"


def test_shared_keys_with_effect_have_javas_defaults(java_broker, py_broker):
    java = _broker_config(java_broker.addr)
    ours = _broker_config(py_broker.addr)
    shared = (set(java) & set(ours)) - JAVA_KEYS_WITHOUT_EFFECT - PER_BROKER_KEYS
    differing = {key: {"java": java[key], "ours": ours[key]} for key in sorted(shared) if java[key] != ours[key]}
    assert differing == {}
