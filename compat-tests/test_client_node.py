"""Issue 11, point 5: the Node.js RocketMQ client ali-ons (npm, pinned by compat-tests/node/package-lock.json)
against the official Java broker and against ours, the same scenario on each.

ali-ons has one send, a promise of the broker's answer (no oneway, no batch), push consumption (no pull
consumer, no orderly consumer with queue locks), tag and SQL92 subscriptions, retry by sending a message
back, and a sharding key that picks the queue by a hash of the key. The scenario, per broker: four topics; messages
with tags, keys, user properties and binary bodies sent to three of them and messages with three sharding
keys to the fourth; then one consumer group subscribed to all four (``*``, ``TagA || TagC``, a SQL92
selector, ``*``) whose handler throws once for two messages. Both brokers run the scenario at once (the
retry's 10 s delay dominates), and every check runs for each; the system properties a delivery carries are
compared with what the Java broker gives."""
from __future__ import annotations

from dataclasses import dataclass

import pytest
from harness import unique_name
from harness.ha import create_topic, wait_for_route
from harness.node_client import NodeMessage, node_consume, node_send
from harness.side_by_side import outcome_of, run_side_by_side

BROKERS = ("java", "ours")
TAGS = ("TagA", "TagB", "TagC")
COLORS = ("red", "blue", "green")
PER_TOPIC = 9
TAG_EXPRESSION = "TagA || TagC"
SQL_EXPRESSION = "color IN ('red', 'green') AND n BETWEEN 2 AND 7"
REJECTED = (1, 4)
SHARDING_KEYS = ("order-x", "order-y", "order-z")
PER_KEY = 5


def _message(role: str, i: int) -> NodeMessage:
    return NodeMessage(body=f"{role}-{i}-ü".encode() + bytes([0, 1, 255, i]), tags=TAGS[i % 3],
                       keys=[f"{role}-{i}", f"alt-{i}"],
                       properties={"color": COLORS[i % 3], "n": str(i), "unicode": "värde-ü"})


def _sql_matches(i: int) -> bool:
    return COLORS[i % 3] in ("red", "green") and 2 <= i <= 7


@dataclass
class Scenario:
    broker_addr: str
    broker_name: str
    topics: dict[str, str]
    messages: dict[str, list[NodeMessage]]
    sent: dict[str, list[dict]]
    deliveries: list[dict]
    done: dict

    def delivered(self, role: str) -> list[dict]:
        return [d for d in self.deliveries if d["topic"] == self.topics[role]]


def _scenario(namesrv: str, broker_addr: str, broker_name: str) -> Scenario:
    topics = {role: unique_name(f"Node{role.title()}") for role in ("plain", "tagged", "sql", "ordered")}
    for topic in topics.values():
        create_topic(broker_addr, topic, queues=4)
        wait_for_route(namesrv, topic)
    messages = {role: [_message(role, i) for i in range(PER_TOPIC)] for role in ("plain", "tagged", "sql")}
    messages["ordered"] = [NodeMessage(body=f"{key}:{seq}".encode(), keys=[f"{key}-{seq}"], sharding_key=key)
                           for seq in range(PER_KEY) for key in SHARDING_KEYS]
    sent = {role: node_send(namesrv, topics[role], messages[role]) for role in topics}
    expect = (PER_TOPIC + len(REJECTED) + sum(TAGS[i % 3] in ("TagA", "TagC") for i in range(PER_TOPIC))
              + sum(map(_sql_matches, range(PER_TOPIC))) + len(messages["ordered"]))
    *deliveries, done = node_consume(
        namesrv, unique_name("NodeGroup"),
        {topics["plain"]: "*", topics["tagged"]: TAG_EXPRESSION,
         topics["sql"]: {"type": "SQL92", "expression": SQL_EXPRESSION}, topics["ordered"]: "*"},
        expect=expect, reject_once_keys=[" ".join(messages["plain"][i].keys) for i in REJECTED])
    return Scenario(broker_addr, broker_name, topics, messages, sent, deliveries, done)


@pytest.fixture(scope="module")
def scenarios(java_namesrv, java_broker, py_namesrv, py_broker):
    """The scenario's outcome on each broker ({"java": Scenario | Exception, "ours": ...})."""
    return run_side_by_side(_scenario, {"java": (java_namesrv.addr, java_broker.addr, java_broker.broker_name),
                                        "ours": (py_namesrv.addr, py_broker.addr, py_broker.broker_name)})


def _user_properties(message: NodeMessage) -> dict[str, str]:
    return {**message.properties, "TAGS": message.tags, "KEYS": " ".join(message.keys)}


def _assert_as_sent(delivery: dict, message: NodeMessage) -> None:
    assert delivery["body"] == message.body
    assert delivery["tags"] == message.tags and delivery["keys"] == " ".join(message.keys)
    assert _user_properties(message).items() <= delivery["properties"].items(), delivery["properties"]


@pytest.mark.parametrize("kind", BROKERS)
def test_sync_send_stores_each_message_in_queue_order(scenarios, kind):
    run = outcome_of(scenarios, kind)
    for role, results in run.sent.items():
        assert [r["index"] for r in results] == list(range(len(run.messages[role])))
        assert {r["sendStatus"] for r in results} == {"SEND_OK"}
        assert {r["brokerName"] for r in results} == {run.broker_name}
        assert len({r["msgId"] for r in results}) == len(results)
        for queue_id in {r["queueId"] for r in results}:
            offsets = [r["queueOffset"] for r in results if r["queueId"] == queue_id]
            assert offsets == list(range(len(offsets))), (role, queue_id, offsets)
    assert {r["queueId"] for r in run.sent["plain"]} == {0, 1, 2, 3}


@pytest.mark.parametrize("kind", BROKERS)
def test_push_consumer_receives_every_message_exactly_as_sent(scenarios, kind):
    run = outcome_of(scenarios, kind)
    assert run.done["timedOut"] is False, run.done
    first = [d for d in run.delivered("plain") if d["reconsumeTimes"] == 0]
    by_id = {d["msgId"]: d for d in first}
    assert len(first) == len(by_id) == PER_TOPIC
    for message, result in zip(run.messages["plain"], run.sent["plain"]):
        delivery = by_id[result["msgId"]]
        _assert_as_sent(delivery, message)
        assert (delivery["queueId"], delivery["queueOffset"]) == (result["queueId"], result["queueOffset"])
        assert delivery["storeHost"] == run.broker_addr


@pytest.mark.parametrize("kind", BROKERS)
def test_tag_subscription_delivers_exactly_the_matching_tags(scenarios, kind):
    run = outcome_of(scenarios, kind)
    got = sorted(d["body"] for d in run.delivered("tagged"))
    assert got == sorted(m.body for m in run.messages["tagged"] if m.tags in ("TagA", "TagC"))
    by_body = {m.body: m for m in run.messages["tagged"]}
    for delivery in run.delivered("tagged"):
        _assert_as_sent(delivery, by_body[delivery["body"]])


@pytest.mark.parametrize("kind", BROKERS)
def test_sql92_subscription_delivers_exactly_the_matching_messages(scenarios, kind):
    run = outcome_of(scenarios, kind)
    got = sorted(d["body"] for d in run.delivered("sql"))
    assert got == sorted(m.body for i, m in enumerate(run.messages["sql"]) if _sql_matches(i))


@pytest.mark.parametrize("kind", BROKERS)
def test_a_throwing_handler_gets_the_message_again_from_the_retry_topic(scenarios, kind):
    run = outcome_of(scenarios, kind)
    plain = run.delivered("plain")
    for i in REJECTED:
        message, result = run.messages["plain"][i], run.sent["plain"][i]
        seen = [d for d in plain if d["keys"] == " ".join(message.keys)]
        assert [d["rejected"] for d in seen] == [True, False], seen
        first, again = seen
        assert first["msgId"] == result["msgId"] and first["reconsumeTimes"] == 0
        assert again["reconsumeTimes"] >= 1
        assert again["msgId"] != result["msgId"], "the retry is a new record in %RETRY%group"
        assert again["properties"]["ORIGIN_MESSAGE_ID"] == result["msgId"]
        assert again["properties"]["RETRY_TOPIC"] == run.topics["plain"]
        _assert_as_sent(again, message)
    accepted = [d for d in plain if not d["rejected"]]
    assert sorted(d["body"] for d in accepted) == sorted(m.body for m in run.messages["plain"])


@pytest.mark.parametrize("kind", BROKERS)
def test_a_sharding_key_keeps_its_messages_on_one_queue_in_order(scenarios, kind):
    run = outcome_of(scenarios, kind)
    delivered = run.delivered("ordered")
    assert len(delivered) == len(run.messages["ordered"])
    for key in SHARDING_KEYS:
        queues = {r["queueId"] for m, r in zip(run.messages["ordered"], run.sent["ordered"]) if m.sharding_key == key}
        assert len(queues) == 1, (key, queues)
        bodies = [d["body"] for d in delivered if d["body"].startswith(f"{key}:".encode())]
        assert bodies == [f"{key}:{seq}".encode() for seq in range(PER_KEY)]
        assert {d["queueId"] for d in delivered if d["body"].startswith(f"{key}:".encode())} == queues


def _system_property_names(run: Scenario, retried: bool) -> set[str]:
    names: set[str] = set()
    for delivery in run.delivered("plain"):
        if (delivery["reconsumeTimes"] > 0) == retried:
            names |= set(delivery["properties"])
    return names


def test_deliveries_carry_the_system_properties_the_java_broker_sets(scenarios):
    java, ours = outcome_of(scenarios, "java"), outcome_of(scenarios, "ours")
    for retried in (False, True):
        assert _system_property_names(ours, retried) == _system_property_names(java, retried), retried
