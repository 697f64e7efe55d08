"""Offsets and partition planning of the ``rocketmq`` source (no pyspark, no network).

An offset dict is ``{"topic": {"brokerName": {"queueId": offset}}}`` with string keys, as
Spark keeps it in the checkpoint (JSON) and as users write ``startingOffsets``; an offset is
the next queue offset to read, so a range ``[start, end)`` is exclusive at the end.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from rocketmq_py.spark.options import EARLIEST, LATEST

_log = logging.getLogger(__name__)

QueueKey = tuple[str, str, int]  # topic, broker name, queue id


@dataclass(frozen=True)
class QueueBounds:
    """What the broker says about one queue: its address and [min, max) offsets."""

    topic: str
    broker_name: str
    broker_addr: str
    queue_id: int
    min_offset: int
    max_offset: int

    @property
    def key(self) -> QueueKey:
        return (self.topic, self.broker_name, self.queue_id)


@dataclass(frozen=True)
class QueueRange:
    """One Spark task's work: the messages of a queue from ``start`` up to ``end`` (exclusive)."""

    topic: str
    broker_name: str
    broker_addr: str
    queue_id: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return max(0, self.end - self.start)


def flatten(offsets: Mapping[str, Any]) -> dict[QueueKey, int]:
    return {(topic, broker, int(qid)): int(offset)
            for topic, brokers in offsets.items() for broker, queues in brokers.items()
            for qid, offset in queues.items()}


def nest(offsets: Mapping[QueueKey, int]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for (topic, broker, qid), offset in sorted(offsets.items()):
        result.setdefault(topic, {}).setdefault(broker, {})[str(qid)] = int(offset)
    return result


def resolve(spec: str | Mapping[str, Any], bounds: Iterable[QueueBounds], default: int,
            timestamps: Mapping[QueueKey, int] | None = None) -> dict[QueueKey, int]:
    """Concrete offsets for every queue: ``spec`` is earliest/latest or a (nested) JSON dict.

    Queues the JSON does not name get ``default`` (EARLIEST or LATEST), as new Kafka partitions
    do; ``timestamps`` (offsets found by startingTimestamp) win over everything.
    """
    given = flatten(spec) if isinstance(spec, Mapping) else {}
    result = {}
    for queue in bounds:
        if timestamps is not None and queue.key in timestamps:
            result[queue.key] = timestamps[queue.key]
            continue
        if spec == "earliest":
            wanted = EARLIEST
        elif spec == "latest":
            wanted = LATEST
        else:
            wanted = given.get(queue.key, default)
        if wanted == EARLIEST:
            result[queue.key] = queue.min_offset
        elif wanted == LATEST:
            result[queue.key] = queue.max_offset
        else:
            result[queue.key] = wanted
    return result


def unknown_queues(spec: str | Mapping[str, Any], bounds: Iterable[QueueBounds]) -> list[QueueKey]:
    """Queues named in a JSON offsets spec that the route does not have."""
    if not isinstance(spec, Mapping):
        return []
    known = {queue.key for queue in bounds}
    return sorted(key for key in flatten(spec) if key not in known)


def check_data_loss(starts: dict[QueueKey, int], bounds: Iterable[QueueBounds], fail_on_data_loss: bool
                    ) -> dict[QueueKey, int]:
    """Move starts below a queue's min offset (deleted messages) or past its max (offset moved back) into range.

    With ``fail_on_data_loss`` that is an error, as in Spark's Kafka source; else a logged skip.
    """
    fixed = dict(starts)
    for queue in bounds:
        start = starts.get(queue.key)
        if start is None:
            continue
        if start < queue.min_offset or start > queue.max_offset:
            what = (f"queue {queue.topic}/{queue.broker_name}/{queue.queue_id}: offset {start} is outside "
                    f"[{queue.min_offset}, {queue.max_offset}] (messages deleted or the queue was reset)")
            if fail_on_data_loss:
                raise DataLossError(f"{what}; set failOnDataLoss=false to skip to the nearest offset instead")
            target = queue.min_offset if start < queue.min_offset else queue.max_offset
            _log.warning("%s; skipping to %d (failOnDataLoss=false)", what, target)
            fixed[queue.key] = target
    return fixed


class DataLossError(RuntimeError):
    """Offsets to read were deleted or moved, and failOnDataLoss is true."""


def ranges(bounds: Iterable[QueueBounds], starts: Mapping[QueueKey, int], ends: Mapping[QueueKey, int]
           ) -> list[QueueRange]:
    out = []
    for queue in sorted(bounds, key=lambda q: q.key):
        start, end = starts.get(queue.key), ends.get(queue.key)
        if start is None or end is None or end <= start:
            continue
        out.append(QueueRange(queue.topic, queue.broker_name, queue.broker_addr, queue.queue_id, start, end))
    return out


def split(parts: list[QueueRange], min_partitions: int | None) -> list[QueueRange]:
    """Split large ranges so that there are about ``min_partitions`` tasks (Kafka's KafkaOffsetRangeCalculator).

    Each range gets a share of the tasks proportional to its size, at least one; the pieces of a
    range are contiguous and cover it exactly.
    """
    if not min_partitions or min_partitions <= len(parts):
        return list(parts)
    total = sum(p.size for p in parts)
    if total == 0:
        return list(parts)
    out = []
    for part in parts:
        pieces = max(1, min(part.size, round(part.size / total * min_partitions)))
        for index in range(pieces):
            start = part.start + part.size * index // pieces
            end = part.start + part.size * (index + 1) // pieces
            out.append(QueueRange(part.topic, part.broker_name, part.broker_addr, part.queue_id, start, end))
    return out


def limit(starts: Mapping[QueueKey, int], latest: Mapping[QueueKey, int], max_rows: int | None
          ) -> dict[QueueKey, int]:
    """End offsets admitting at most ``max_rows`` messages, split across queues in proportion to their backlog."""
    ends = {key: max(latest.get(key, start), start) for key, start in starts.items()}
    for key, offset in latest.items():
        ends.setdefault(key, offset)
    if max_rows is None:
        return ends
    backlog = {key: ends[key] - starts.get(key, ends[key]) for key in ends}
    total = sum(backlog.values())
    if total <= max_rows:
        return ends
    limited = {}
    granted = 0
    for key in sorted(ends):
        share = backlog[key] * max_rows // total
        limited[key] = starts.get(key, ends[key]) + share
        granted += share
    # Hand the rounding remainder to the queues with the most left, so a trigger takes exactly max_rows.
    for key in sorted(ends, key=lambda k: (-(ends[k] - limited[k]), k)):
        if granted >= max_rows:
            break
        if limited[key] < ends[key]:
            limited[key] += 1
            granted += 1
    return limited


def backlog(starts: Mapping[QueueKey, int], latest: Mapping[QueueKey, int]) -> int:
    """Messages between ``starts`` and ``latest`` over the queues of both (the caller gives new queues a start)."""
    return sum(max(0, end - starts.get(key, end)) for key, end in latest.items())


class TriggerDelay:
    """``minOffsetsPerTrigger`` with ``maxTriggerDelay``, as Spark's Kafka source admits micro-batches.

    A trigger with fewer than ``min_rows`` new messages is skipped, unless ``max_delay_ms`` has passed
    since the last batch that ran; the first trigger of a reader always runs.
    """

    def __init__(self, min_rows: int | None, max_delay_ms: int) -> None:
        self.min_rows = min_rows
        self.max_delay_ms = max_delay_ms
        self.last_batch_ms: float | None = None

    def admits(self, available: int, now_ms: float) -> bool:
        if self.min_rows is None:
            return True
        due = self.last_batch_ms is None or now_ms - self.last_batch_ms >= self.max_delay_ms
        if due or available >= self.min_rows:
            self.last_batch_ms = now_ms
            return True
        return False


def lag_metrics(consumed: Mapping[QueueKey, int], latest: Mapping[QueueKey, int]) -> dict[str, str]:
    """How far the stream is behind the queues' ends, in the shape Spark's Kafka source reports it.

    ``minOffsetsBehindLatest``, ``maxOffsetsBehindLatest`` and ``avgOffsetsBehindLatest`` over every
    queue, and ``offsetsBehindLatest.<topic>`` (the sum over the topic's queues); values are strings,
    as Spark's source metrics are.
    """
    behind = {key: max(0, end - consumed.get(key, end)) for key, end in latest.items()}
    if not behind:
        return {}
    values = list(behind.values())
    metrics = {
        "minOffsetsBehindLatest": str(min(values)),
        "maxOffsetsBehindLatest": str(max(values)),
        "avgOffsetsBehindLatest": f"{sum(values) / len(values):.1f}",
    }
    per_topic: dict[str, int] = {}
    for (topic, _broker, _qid), lag in behind.items():
        per_topic[topic] = per_topic.get(topic, 0) + lag
    for topic, lag in sorted(per_topic.items()):
        metrics[f"offsetsBehindLatest.{topic}"] = str(lag)
    return metrics
