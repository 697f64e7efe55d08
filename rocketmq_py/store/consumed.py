"""Which CommitLog files hold only consumed messages: the rule of our forced clean (our own; Java 4.9's
CleanCommitLogService deletes the oldest files regardless once the disk is over diskSpaceCleanForciblyRatio).

Above ``diskSpaceCleanForciblyRatio`` (85 %) with ``cleanFileForciblyEnable`` (on by default) the clean
service deletes CommitLog files before ``fileReservedTime``, oldest first, but only while each one is
*consumed*; the first that is not ends the round (``cleanUnconsumedFileForciblyEnable=true`` restores
Java's "delete the oldest regardless"). A file is consumed when, for every ConsumeQueue with units in it,
every consumer group of that queue's topic has a committed offset beyond the file's last unit of that
queue (the offset a group commits is the next one it will consume, so it must be at least the queue
offset of the first unit *past* the file). Then:

* A topic with no group at all has not been consumed: its files stay. A group that has offsets for the
  topic but none for this queue has consumed nothing of it.
* Which ``(topic, queue, queue offsets)`` a file holds comes from the ConsumeQueues, not from the records:
  units are in CommitLog order, so a binary search per queue finds the first unit at or after the file's
  start and the first at or after its end (about 2 x log2(units) reads per queue, remembered within one
  round, so the next file starts where the last ended). It is computed only when a forced clean is
  considered, never on a put. Records no ConsumeQueue points at (prepared and rolled-back transaction
  records, a deleted topic's messages) are nothing anyone can consume.
* A file is considered only when the ConsumeQueues reach past its end (a master dispatches every put
  before answering; a slave dispatches what its master sent a little later), so no record of it is still
  on its way to a ConsumeQueue.
* The store does not know consumers: the broker passes :data:`ConsumerProgress`, one snapshot per round of
  what each group has consumed of each topic (``rocketmq_py.broker.consumed`` says whose offsets count:
  ``consumerOffset.json``, the groups subscribed now, the delay service's ``delayOffset.json`` for
  SCHEDULE_TOPIC_XXXX). None means "not known now" (a slave that has not had its master's offsets yet):
  nothing counts as consumed. A store without a broker keeps every unexpired file.

Files past ``fileReservedTime`` go as before, consumed or not (Java's time rule: at ``deleteWhen``, above
``diskMaxUsedSpaceRatio``, or when an operator asks with DELETE_EXPIRED_COMMITLOG). The operator's request
deletes no unconsumed file before its time either: it runs the same rounds.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Hashable, Mapping

from rocketmq_py.store.consume_queue import ConsumeQueue
from rocketmq_py.store.mapped_file import MappedFile

#: topic -> consumer group -> queue id -> the next queue offset that group will consume (its committed offset).
ConsumedOffsets = Mapping[str, Mapping[str, Mapping[int, int]]]
#: Called once per forced clean, on the clean service's thread; None when the offsets are not known now.
ConsumerProgress = Callable[[], "ConsumedOffsets | None"]


@dataclass(frozen=True)
class KeptFile:
    """Why a CommitLog file must stay."""

    file_name: str
    why: str
    #: The same while the same cause holds (offsets that move do not change it), so a repeated round logs once.
    cause: Hashable


class ConsumedFileRule:
    """One forced clean's rule: the offsets taken once, then asked file by file, oldest first."""

    def __init__(self, consume_queues: list[ConsumeQueue], offsets: ConsumedOffsets | None) -> None:
        self.consume_queues = consume_queues
        self.offsets = offsets
        self.dispatched_to = max((cq.max_physic_offset for cq in consume_queues), default=-1)
        #: Why the last file asked about must stay; None when it may go (or none was asked about).
        self.kept: KeptFile | None = None
        self._queue_offsets: dict[tuple[int, int], int | None] = {}

    def may_delete(self, mapped: MappedFile) -> bool:
        start = mapped.file_from_offset
        self.kept = self._why_kept(start, start + mapped.file_size, mapped.path.name)
        return self.kept is None

    def _queue_offset(self, consume_queue: ConsumeQueue, commit_log_offset: int) -> int | None:
        key = (id(consume_queue), commit_log_offset)
        if key not in self._queue_offsets:
            self._queue_offsets[key] = consume_queue.first_offset_at_or_after(commit_log_offset)
        return self._queue_offsets[key]

    def _why_kept(self, start: int, end: int, name: str) -> KeptFile | None:
        if self.offsets is None:
            return KeptFile(name, "the consumer offsets are not known yet (a slave has them from its master's "
                                  "synchronisation)", "offsets unknown")
        if self.dispatched_to <= end:
            return KeptFile(name, "the ConsumeQueues do not reach past it yet", "not dispatched")
        for consume_queue in self.consume_queues:
            topic, queue_id = consume_queue.topic, consume_queue.queue_id
            if consume_queue.max_physic_offset <= start:
                continue  # every record of this queue ends before the file
            first = self._queue_offset(consume_queue, start)
            past = self._queue_offset(consume_queue, end)
            if first is None or past is None:
                return KeptFile(name, f"the ConsumeQueue of {topic} queue {queue_id} could not be read",
                                (topic, queue_id, "unreadable"))
            if first >= past:
                continue
            held = f"messages of {topic} queue {queue_id} (queue offsets {first} to {past - 1})"
            groups = self.offsets.get(topic)
            if not groups:
                return KeptFile(name, f"it holds {held} and no consumer group consumes {topic}",
                                (topic, queue_id, None))
            for group in sorted(groups):
                committed = groups[group].get(queue_id, -1)
                if committed < past:
                    progress = f"is at {committed}" if committed >= 0 else "has no offset for that queue"
                    return KeptFile(name, f"it holds {held} and consumer group {group} {progress}",
                                    (topic, queue_id, group))
        return None
