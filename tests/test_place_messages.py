"""The broker process's per-send work on a PLACE message: the compiled module against its twin.

The same PLACE payloads (sends of mixed topics, runs and alternations, names that are not ASCII, a kept name
table full or not, messages cut short, topics that are not UTF-8) and the same placements go to both; the
results, the name tables they leave and the errors must be the same.
"""
from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketmq_py.broker import place_messages

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
HEAD = b"\x00\x00\x00\x07\x01"

topics = st.sampled_from(["TopicA", "TopicB", "%RETRY%group", "T", "Tópico-ü", "x" * 127])
sends_strategy = st.lists(st.tuples(st.integers(1, 64), st.integers(0, 2**32 - 1), topics), max_size=40)


@pytest.fixture(scope="module")
def pair(twins):
    return twins("rocketmq_py.broker._place_messages")


def _payload(prefix: bytes, sends: list[tuple[int, int, str]], tail: bytes) -> bytes:
    parts = [prefix]
    for count, size, topic in sends:
        name = topic.encode()
        parts.append(place_messages.SEND_HEAD.pack(count, size, len(name)))
        parts.append(name)
    parts.append(tail)
    return b"".join(parts)


def _outcome(function, *args):
    try:
        return ("ok", function(*args))
    except Exception as error:  # the same kind of error on both sides
        return ("error", type(error))


@SETTINGS
@given(prefix=st.binary(max_size=24), sends=sends_strategy, tail=st.binary(max_size=64), full=st.booleans(),
       cut=st.integers(0, 40))
def test_read_sends_agrees(pair, prefix, sends, tail, full, cut):
    payload = _payload(prefix, sends, tail)
    cut_payload = payload[:max(0, len(payload) - len(tail) - cut)]
    for data in (payload, bytearray(payload), memoryview(cut_payload)):
        kept = {f"Old{i}".encode(): f"Old{i}" for i in range(place_messages.TOPIC_NAMES_KEPT if full else 3)}
        results = []
        for side in (pair.twin, pair.compiled):
            names = dict(kept)
            results.append((_outcome(side.read_sends, data, len(prefix), len(sends), names), names))
        assert results[0] == results[1]
    kept_names: dict[bytes, str] = {}
    position, counts, by_topic = pair.compiled.read_sends(payload, len(prefix), len(sends), kept_names)
    assert position == len(payload) - len(tail)
    assert counts == [count for count, _, _ in sends]
    assert list(by_topic) == list(dict.fromkeys(topic for _, _, topic in sends))
    for topic, totals in by_topic.items():
        mine = [(count, size) for count, size, name in sends if name == topic]
        assert totals == [sum(c for c, _ in mine), sum(s for _, s in mine), len(mine)]


@pytest.mark.parametrize("name", [b"\xff\xfe", b"ok\xc3"])
def test_a_topic_that_is_not_utf8_is_the_same_error(pair, name):
    payload = place_messages.SEND_HEAD.pack(1, 10, len(name)) + name
    for side in (pair.twin, pair.compiled):
        with pytest.raises(UnicodeDecodeError):
            side.read_sends(payload, 0, 1, {})


def test_a_position_outside_the_message_is_refused(pair):
    payload = place_messages.SEND_HEAD.pack(1, 10, 1) + b"T"
    for side in (pair.twin, pair.compiled):
        for position in (-1, len(payload)):
            with pytest.raises(ValueError):
                side.read_sends(payload, position, 1, {})
        assert side.read_sends(payload, len(payload), 0, {}) == (len(payload), [], {})


@SETTINGS
@given(counts=st.lists(st.integers(1, 40), max_size=50), data=st.data())
def test_placed_payload_agrees(pair, counts, data):
    records = sum(counts)
    offsets = st.lists(st.integers(0, 2**63 - 1), min_size=records, max_size=records)
    physical, queue = data.draw(offsets), data.draw(offsets)
    answers = [side.placed_payload(HEAD, counts, physical, queue) for side in (pair.twin, pair.compiled)]
    assert answers[0] == answers[1]
    firsts = [queue[sum(counts[:index])] for index in range(len(counts))]
    assert answers[0] == HEAD + struct.pack(f">{records + len(counts)}q", *physical, *firsts)


@pytest.mark.parametrize("counts, physical, queue", [
    ([1, 2], [1, 2], [1, 2]),  # fewer offsets than records
    ([1], [1, 2], [1, 2]),  # more offsets than records
    ([1, 1], [1, 2], [1]),  # queue offsets short
    ([2, 0], [1, 2], [1, 2]),  # a send of no records
])
def test_placed_payload_refuses_counts_that_do_not_cover_the_offsets(pair, counts, physical, queue):
    for side in (pair.twin, pair.compiled):
        with pytest.raises(ValueError):
            side.placed_payload(HEAD, counts, physical, queue)


def test_the_selector_reports_its_implementation(expected_implementation):
    assert place_messages.IMPLEMENTATION == expected_implementation("rocketmq_py.broker._place_messages")
