"""The broker process's per-send work on a front's PLACE message and its PLACED answer: the twin.

A PLACE message (``rocketmq_py.broker.front_sends``) holds, after its head, one send head per send (its
record count, its records' bytes, its topic's UTF-8 length, as :data:`SEND_HEAD`, then the topic's bytes),
then the records back to back. Under load one message holds hundreds of sends, so the broker process reads
these heads and writes the offsets of its answer in a loop per send; the compiled module
(``_place_messages.pyx``) runs the same loops without the interpreter. This twin says what they do.
"""
from __future__ import annotations

import struct

__all__ = ["IMPLEMENTATION", "SEND_HEAD", "TOPIC_NAMES_KEPT", "placed_payload", "read_sends"]

IMPLEMENTATION = "python"

#: A send's head in a PLACE message: its record count, its records' bytes, its topic's length in UTF-8.
SEND_HEAD = struct.Struct(">IIH")
#: How many topic names a caller's ``topic_names`` keeps decoded (it forgets them all past this).
TOPIC_NAMES_KEPT = 4096


def read_sends(payload: bytes | bytearray | memoryview, position: int, sends: int,
               topic_names: dict[bytes, str]) -> tuple[int, list[int], dict[str, list[int]]]:
    """Read the ``sends`` send heads of a PLACE message ``payload`` from ``position``: where the records start,
    each send's record count, and by topic, in the order the topics first come, ``[records, bytes, sends]``.

    ``topic_names`` keeps the topic names decoded from one message to the next (a front's sends name few
    topics). A message cut short raises ValueError; a topic that is not UTF-8, UnicodeDecodeError."""
    view = memoryview(payload)
    length = len(view)
    counts: list[int] = []
    by_topic: dict[str, list[int]] = {}
    for _ in range(sends):
        if position < 0 or position + SEND_HEAD.size > length:
            raise ValueError(f"a PLACE message cut short in its send heads ({length} bytes)")
        count, size, topic_length = SEND_HEAD.unpack_from(view, position)
        position += SEND_HEAD.size
        end = position + topic_length
        if end > length:
            raise ValueError(f"a PLACE message cut short in a topic name ({length} bytes)")
        name = view[position:end].tobytes()
        topic = topic_names.get(name)
        if topic is None:
            if len(topic_names) >= TOPIC_NAMES_KEPT:
                topic_names.clear()
            topic = topic_names[name] = name.decode("utf-8")
        counts.append(count)
        totals = by_topic.get(topic)
        if totals is None:
            by_topic[topic] = [count, size, 1]
        else:
            totals[0] += count
            totals[1] += size
            totals[2] += 1
        position = end
    return position, counts, by_topic


def placed_payload(head: bytes, counts: list[int], physical_offsets: list[int], queue_offsets: list[int]) -> bytes:
    """A PLACED message's payload for a placed buffer: ``head``, each record's physical offset, then each send's
    queue offset (its first record's), as big-endian int64s. ``counts`` are the sends' record counts (each at
    least 1), as :func:`read_sends` gave them; they must cover the offsets exactly (else ValueError)."""
    records = len(physical_offsets)
    if sum(counts) != records or len(queue_offsets) != records or min(counts, default=1) < 1:
        raise ValueError(f"{len(counts)} sends of {sum(counts)} records for {records} physical offsets and "
                         f"{len(queue_offsets)} queue offsets")
    firsts = []
    first = 0
    for count in counts:
        firsts.append(queue_offsets[first])
        first += count
    return head + struct.pack(f">{records + len(counts)}q", *physical_offsets, *firsts)
