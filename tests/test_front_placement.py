"""The broker process's placement of what its fronts built (``SendPlacement.place``): a PLACE message of many
sends stores and answers exactly what one PLACE message per send does, and counts the same stats."""
from __future__ import annotations

import json
import struct

import pytest

from support.front_sends import PlaceClient, stored_broker, take
from support.send_fast import send_frame, store_files

from rocketmq_py import codec
from rocketmq_py.broker.front_sends import FrontSends, SendPlacement
from rocketmq_py.common.codes import RequestCode
from rocketmq_py.common.topic_config import TopicConfig

TOPICS = [TopicConfig(topic_name="Plain", read_queue_nums=4, write_queue_nums=4),
          TopicConfig(topic_name="Second", read_queue_nums=2, write_queue_nums=2)]


def _frames() -> list[bytes]:
    """Single sends and batches of both topics, into several queues."""
    unique = codec.UniqueIdGenerator(b"\x7f\x00\x00\x01")
    frames = []
    for number in range(40):
        topic = TOPICS[number % 3 == 0].topic_name
        fields = {"a": "G", "b": topic, "c": "TBW102", "d": 4, "e": number % 2, "f": 0, "g": 1_700_000_000_000,
                  "h": 0, "j": 0, "k": "false"}
        if number % 5 == 4:
            body = codec.encode_batch([(0, bytes([number]) * 50, {"UNIQ_KEY": unique.next_id()})
                                       for _ in range(1 + number % 4)])
            fields.update(i=codec.properties_to_string({"WAIT": "true"}), m="true")
            frames.append(send_frame(RequestCode.SEND_BATCH_MESSAGE, fields, body, serialize_type=codec.SERIALIZE_JSON))
        else:
            fields["i"] = codec.properties_to_string({"UNIQ_KEY": unique.next_id(), "WAIT": "true"})
            frames.append(send_frame(RequestCode.SEND_MESSAGE_V2, fields, bytes([number]) * (10 + number),
                                     serialize_type=codec.SERIALIZE_ROCKETMQ))
    return frames


def _stats(placement: SendPlacement) -> dict[str, object]:
    stats = placement.broker.stats
    items = {f"{name}/{key}": (item.value, item.times) for name, stats_set in stats.manager.sets.items()
             for key, item in stats_set.items.items()}
    return {"messages": stats.put.total, "bytes": stats.put_size, "puts": sum(stats.put_latency.all_time),
            "items": items}


async def test_one_place_of_many_sends_stores_answers_and_counts_as_one_place_per_send(tmp_path):
    frames = _frames()
    answers: dict[str, list[bytes]] = {}
    for name, per_place in (("together", len(frames)), ("apart", 1)):
        with stored_broker(tmp_path / name, TOPICS) as broker:
            placement = SendPlacement(broker)
            messages: list[bytes] = []
            front = FrontSends(lambda parts: messages.append(b"".join(parts)), json.loads(placement.settings()))
            for start in range(0, len(frames), per_place):
                for frame in frames[start:start + per_place]:
                    assert take(front, PlaceClient(), frame)
                front.flush()
            assert len(messages) == len(frames) // per_place
            answers[name] = [placement.place(message) for message in messages]
            answers[name + " stats"] = [json.dumps(_stats(placement), sort_keys=True).encode()]
        answers[name + " files"] = [json.dumps({path: data.hex() for path, data in
                                                store_files(tmp_path / name).items()}).encode()]
    (together,) = answers["together"]
    apart = answers["apart"]
    assert all(answer[4] == 1 for answer in [together, *apart])  # all placed
    # PLACED: the physical offsets of every record, then the queue offset of each send's first record.
    records = (len(together) - 5) // 8 - len(frames)
    offsets = struct.unpack_from(f">{records}q", together, 5)
    firsts = struct.unpack_from(f">{len(frames)}q", together, 5 + 8 * records)
    apart_offsets = []
    apart_firsts = []
    for answer in apart:
        values = struct.unpack_from(f">{(len(answer) - 5) // 8}q", answer, 5)
        apart_offsets.extend(values[:-1])
        apart_firsts.append(values[-1])
    assert list(offsets) == apart_offsets
    assert list(firsts) == apart_firsts
    assert answers["together stats"] == answers["apart stats"]
    assert answers["together files"] == answers["apart files"]


def _change_topics(broker):
    broker.topics.update(TopicConfig(topic_name="Added", read_queue_nums=1, write_queue_nums=1))


def _change_permission(broker):
    broker.config.broker_permission = 4  # read only


def _change_trace(broker):
    broker.config.trace_on = not broker.config.trace_on
    broker.send_processor.refresh()


def _change_store_host(broker):
    broker.config.broker_ip1 = "10.9.8.6"


def _change_max_message_size(broker):
    broker.store.config.max_message_size -= 1


@pytest.mark.parametrize("change", [_change_topics, _change_permission, _change_trace, _change_store_host,
                                    _change_max_message_size])
async def test_a_place_built_before_a_change_of_the_settings_is_refused_and_stores_nothing(tmp_path, change):
    with stored_broker(tmp_path, TOPICS) as broker:
        placement = SendPlacement(broker)
        settings = placement.settings()
        messages: list[bytes] = []
        front = FrontSends(lambda parts: messages.append(b"".join(parts)), json.loads(settings))
        for frame in _frames()[:3]:
            assert take(front, PlaceClient(), frame)
            front.flush()
        assert placement.place(messages[0])[4] == 1
        change(broker)
        assert placement.place(messages[1])[4] == 0
        assert placement.settings() is not settings
        assert broker.store.get_max_offset_in_queue("Plain", 1) == 0  # the second send's queue
        front.update(json.loads(placement.settings()))
        if take(front, PlaceClient(), _frames()[2]):  # with the new settings (a read-only broker takes none)
            front.flush()
            assert placement.place(messages[3])[4] == 1


@pytest.mark.parametrize("fast_failure", [True, False])
async def test_a_place_that_waited_the_send_queue_limit_is_answered_busy_and_stores_nothing(tmp_path, fast_failure):
    # A limit of 0 ms: every buffer has waited it, whatever the machine's speed (Java refuses at behind >= limit).
    with stored_broker(tmp_path, TOPICS) as broker:
        broker.config.broker_fast_failure_enable = fast_failure
        broker.config.wait_time_mills_in_send_queue = 0
        placement = SendPlacement(broker)
        messages: list[bytes] = []
        front = FrontSends(lambda parts: messages.append(b"".join(parts)), json.loads(placement.settings()))
        client = PlaceClient()
        frames = _frames()[:4]
        for frame in frames:
            assert take(front, client, frame)
        front.flush()
        (message,) = messages
        front.placed(placement.place(message))
        assert len(client.written) == 1, "a client's answers to one buffer go out in one write"
        answers = codec.FrameDecoder().feed(client.written[0])
        assert client.relayed == [], "a send that came too late is answered by the front, not relayed"
        assert len(answers) == len(frames)
        if fast_failure:
            assert {answer.code for answer in answers} == {2}  # SYSTEM_BUSY, the send lane's answer
            assert all(answer.remark.startswith("[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, "
                                                "period in queue: ") and answer.remark.endswith("size of queue: 4")
                       for answer in answers)
            assert broker.store.get_max_phy_offset() == 0, "nothing stored"
        else:
            assert {answer.code for answer in answers} == {0}  # brokerFastFailureEnable=false: no limit
