"""Issue 11, point 5: the RocketMQ C++ client (librocketmq 0.4.4 from PyPI ``rocketmq``, its ctypes binding,
in its own virtualenv, one subprocess per producer or consumer) against the official Java broker and ours,
the same scenario on each.

The C API has sync, async, oneway, orderly (a queue selector over an integer key) and batch sends, a push
consumer (concurrent or orderly), a pull consumer, and tag subscriptions; it has no SQL92 subscription. Its
consumer sends consumeType, messageModel and consumeFromWhere as ordinals in HEART_BEAT.

Per broker: five topics, ``plain`` (sync, async and oneway sends), ``tagged``, ``retry`` (one queue, one
message), ``ordered`` (orderly sends with three keys) and ``batch``; then at once a push consumer of
``plain`` (``*``), ``tagged`` (``TagA || TagC``) and ``retry`` whose callback answers RECONSUME_LATER once for
the message of ``retry``, an orderly push consumer of ``ordered``, and a pull consumer of ``plain`` and
``batch``. The retry message is alone in its topic because the C API answers for the whole batch a pull
brought: one RECONSUME_LATER sends every message of that batch back, consumed or not. Both brokers run the
scenario at once; the system properties a delivery carries are compared with the Java broker's."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest
from harness import unique_name
from harness.cpp_client import CppMessage, cpp_pull, cpp_push, cpp_send
from harness.ha import create_topic, wait_for_route
from harness.side_by_side import outcome_of, run_side_by_side

BROKERS = ("java", "ours")
TAGS = ("TagA", "TagB", "TagC")
COLORS = ("red", "blue", "green")
SEND_MODES = ("sync", "async", "oneway")
PER_MODE = 6
TAGGED = 9
TAG_EXPRESSION = "TagA || TagC"
ORDER_KEYS = (0, 1, 2)
PER_KEY = 5
BATCH = 3
USER_PROPERTIES = ("color", "n", "unicode")
SYSTEM_PROPERTIES = ("TAGS", "KEYS", "UNIQ_KEY", "CLUSTER", "RETRY_TOPIC", "ORIGIN_MESSAGE_ID", "REAL_TOPIC",
                     "REAL_QID", "DELAY", "WAIT", "MIN_OFFSET", "MAX_OFFSET", "TRAN_MSG", "PGROUP")
REPORTED = [*USER_PROPERTIES, *SYSTEM_PROPERTIES]
QUEUES = {"plain": 4, "tagged": 4, "retry": 1, "ordered": 4, "batch": 1}


def _message(role: str, i: int) -> CppMessage:
    return CppMessage(body=f"{role}-{i}-ü", tags=TAGS[i % 3], keys=f"{role}-{i} alt-{i}",
                      properties={"color": COLORS[i % 3], "n": str(i), "unicode": "värde-ü"})


@dataclass
class Scenario:
    broker_addr: str
    topics: dict[str, str]
    messages: dict[str, list[CppMessage]]
    sent: dict[str, list[dict]]
    pushed: list[dict]
    pushed_done: dict
    ordered: list[dict]
    ordered_done: dict
    pulled: list[dict]
    pulled_done: dict

    def pushed_from(self, role: str) -> list[dict]:
        return [d for d in self.pushed if d["topic"] == self.topics[role]]


def _scenario(namesrv: str, broker_addr: str, home) -> Scenario:
    topics = {role: unique_name(f"Cpp{role.title()}") for role in QUEUES}
    for role, topic in topics.items():
        create_topic(broker_addr, topic, queues=QUEUES[role])
        wait_for_route(namesrv, topic)
    messages = {mode: [_message(mode, i) for i in range(PER_MODE)] for mode in SEND_MODES}
    messages["tagged"] = [_message("tagged", i) for i in range(TAGGED)]
    messages["retry"] = [_message("retry", 0)]
    messages["ordered"] = [CppMessage(body=f"key{key}:{seq}", keys=f"key{key}-{seq}", order_key=key)
                           for seq in range(PER_KEY) for key in ORDER_KEYS]
    messages["batch"] = [_message("batch", i) for i in range(BATCH)]
    sends = [(mode, topics["plain"], mode) for mode in SEND_MODES] + [
        ("tagged", topics["tagged"], "sync"), ("retry", topics["retry"], "sync"),
        ("ordered", topics["ordered"], "orderly"), ("batch", topics["batch"], "batch")]
    sent = {name: cpp_send(namesrv, topic, messages[name], mode, home) for name, topic, mode in sends}

    plain = PER_MODE * len(SEND_MODES)
    tagged = sum(m.tags in ("TagA", "TagC") for m in messages["tagged"])
    with ThreadPoolExecutor(max_workers=3) as pool:
        pushed = pool.submit(cpp_push, namesrv, unique_name("CppPush"),
                             {topics["plain"]: "*", topics["tagged"]: TAG_EXPRESSION, topics["retry"]: "*"},
                             plain + tagged + 2, home, REPORTED, reject_once_keys=[messages["retry"][0].keys])
        ordered = pool.submit(cpp_push, namesrv, unique_name("CppOrderly"), {topics["ordered"]: "*"},
                              len(messages["ordered"]), home, REPORTED, orderly=True)
        pulled = pool.submit(cpp_pull, namesrv, unique_name("CppPull"), [topics["plain"], topics["batch"]],
                             plain + 1, home, REPORTED)
        *pushed_lines, pushed_done = pushed.result()
        *ordered_lines, ordered_done = ordered.result()
        *pulled_lines, pulled_done = pulled.result()
    return Scenario(broker_addr, topics, messages, sent, pushed_lines, pushed_done, ordered_lines, ordered_done,
                    pulled_lines, pulled_done)


@pytest.fixture(scope="module")
def scenarios(java_namesrv, java_broker, py_namesrv, py_broker, tmp_path_factory):
    """The scenario's outcome on each broker ({"java": Scenario | Exception, "ours": ...})."""
    return run_side_by_side(_scenario, {
        "java": (java_namesrv.addr, java_broker.addr, tmp_path_factory.mktemp("cpp-java")),
        "ours": (py_namesrv.addr, py_broker.addr, tmp_path_factory.mktemp("cpp-ours"))})


def _assert_as_sent(delivery: dict, message: CppMessage) -> None:
    assert (delivery["body"], delivery["tags"], delivery["keys"]) == (message.body, message.tags, message.keys)
    assert {name: delivery["properties"].get(name) for name in message.properties} == message.properties
    assert (delivery["properties"]["TAGS"], delivery["properties"]["KEYS"]) == (message.tags, message.keys)


def _offset_msg_id(store_addr: str, commit_log_offset: int) -> str:
    host, port = store_addr.split(":")
    return "".join(f"{int(part):02X}" for part in host.split(".")) + f"{int(port):08X}{commit_log_offset:016X}"


@pytest.mark.parametrize("kind", BROKERS)
def test_sync_async_oneway_orderly_and_batch_sends_are_acknowledged(scenarios, kind):
    run = outcome_of(scenarios, kind)
    for name in ("sync", "async", "tagged", "retry", "ordered"):
        results = sorted(run.sent[name], key=lambda r: r["index"])
        assert [r["index"] for r in results] == list(range(len(run.messages[name])))
        assert {r["status"] for r in results} == {"OK"}
        assert len({r["msgId"] for r in results}) == len(results)
    assert [r["index"] for r in run.sent["oneway"]] == list(range(PER_MODE))
    [batch] = run.sent["batch"]
    assert batch["status"] == "OK" and batch["offset"] == 0


@pytest.mark.parametrize("kind", BROKERS)
def test_push_consumer_receives_every_message_exactly_as_sent(scenarios, kind):
    run = outcome_of(scenarios, kind)
    assert run.pushed_done["timedOut"] is False, run.pushed_done
    delivered = run.pushed_from("plain")
    by_keys = {d["keys"]: d for d in delivered}
    assert len(delivered) == len(by_keys) == PER_MODE * len(SEND_MODES)
    for mode in SEND_MODES:
        results = {r["index"]: r for r in run.sent[mode]}
        for index, message in enumerate(run.messages[mode]):
            delivery = by_keys[message.keys]
            _assert_as_sent(delivery, message)
            assert delivery["reconsumeTimes"] == 0
            assert delivery["msgId"] == delivery["properties"]["UNIQ_KEY"]
            if mode != "oneway":
                assert delivery["msgId"] == results[index]["msgId"]
                assert delivery["queueOffset"] == results[index]["offset"]


@pytest.mark.parametrize("kind", BROKERS)
def test_pull_consumer_reads_every_queue(scenarios, kind):
    run = outcome_of(scenarios, kind)
    assert run.pulled_done["timedOut"] is False, run.pulled_done
    plain = [d for d in run.pulled if d["topic"] == run.topics["plain"]]
    by_keys = {d["keys"]: d for d in plain}
    assert len(plain) == len(by_keys) == PER_MODE * len(SEND_MODES)
    for mode in SEND_MODES:
        for message in run.messages[mode]:
            _assert_as_sent(by_keys[message.keys], message)
    assert {d["queueId"] for d in plain} == set(range(QUEUES["plain"]))
    for queue_id in range(QUEUES["plain"]):
        offsets = [d["queueOffset"] for d in plain if d["queueId"] == queue_id]
        assert offsets == list(range(len(offsets))), (queue_id, offsets)


@pytest.mark.parametrize("kind", BROKERS)
def test_a_batch_send_of_this_client_is_one_stored_message(scenarios, kind):
    """The C API's batch goes out as one message whose body is the encoded batch, without the batch flag:
    the Java broker stores it as one message, so ours must too (the C string binding shows no body)."""
    run = outcome_of(scenarios, kind)
    [record] = [d for d in run.pulled if d["topic"] == run.topics["batch"]]
    assert (record["queueId"], record["queueOffset"], record["tags"], record["keys"]) == (0, 0, "", "")


@pytest.mark.parametrize("kind", BROKERS)
def test_tag_subscription_delivers_exactly_the_matching_tags(scenarios, kind):
    run = outcome_of(scenarios, kind)
    delivered = run.pushed_from("tagged")
    expected = [m for m in run.messages["tagged"] if m.tags in ("TagA", "TagC")]
    assert sorted(d["keys"] for d in delivered) == sorted(m.keys for m in expected)
    by_keys = {m.keys: m for m in expected}
    for delivery in delivered:
        _assert_as_sent(delivery, by_keys[delivery["keys"]])


@pytest.mark.parametrize("kind", BROKERS)
def test_reconsume_later_brings_the_message_back_from_the_retry_topic(scenarios, kind):
    run = outcome_of(scenarios, kind)
    [message], [result] = run.messages["retry"], run.sent["retry"]
    first, again = run.pushed_from("retry")
    assert (first["rejected"], again["rejected"]) == (True, False)
    assert first["msgId"] == again["msgId"] == result["msgId"], "the client id (UNIQ_KEY) stays"
    assert first["reconsumeTimes"] == 0 and again["reconsumeTimes"] >= 1
    _assert_as_sent(first, message)
    _assert_as_sent(again, message)
    assert again["properties"]["RETRY_TOPIC"] == run.topics["retry"]
    assert again["properties"]["REAL_TOPIC"].startswith("%RETRY%")
    assert again["properties"]["ORIGIN_MESSAGE_ID"] == _offset_msg_id(run.broker_addr, first["commitLogOffset"])


@pytest.mark.parametrize("kind", BROKERS)
def test_orderly_consumer_keeps_each_keys_order_on_one_queue(scenarios, kind):
    run = outcome_of(scenarios, kind)
    assert run.ordered_done["timedOut"] is False, run.ordered_done
    assert len(run.ordered) == len(run.messages["ordered"])
    for key in ORDER_KEYS:
        mine = [d for d in run.ordered if d["body"].startswith(f"key{key}:")]
        assert [d["body"] for d in mine] == [f"key{key}:{seq}" for seq in range(PER_KEY)]
        assert len({d["queueId"] for d in mine}) == 1
        assert [d["queueOffset"] for d in mine] == sorted(d["queueOffset"] for d in mine)


def _system_property_names(run: Scenario, retried: bool) -> set[str]:
    names: set[str] = set()
    for delivery in run.pushed:
        if (delivery["reconsumeTimes"] > 0) == retried:
            names |= set(delivery["properties"]) & set(SYSTEM_PROPERTIES)
    return names


def test_deliveries_carry_the_system_properties_the_java_broker_sets(scenarios):
    java, ours = outcome_of(scenarios, "java"), outcome_of(scenarios, "ours")
    for retried in (False, True):
        assert _system_property_names(ours, retried) == _system_property_names(java, retried), retried
