"""Delivering delayed messages (Java's store/schedule/ScheduleMessageService, synchronous mode).

A message put with DELAY=n is stored in SCHEDULE_TOPIC_XXXX queue n-1, its
ConsumeQueue tags code being the delivery time. This thread walks each level's
queue from the offset in ``delayOffset.json``; a message whose time has come
is put again to its REAL_TOPIC / REAL_QID (DELAY removed, WAIT=false, the
stored properties as they were, as Java does), and the level's offset moves on.
"""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from rocketmq_py import codec
from rocketmq_py.common.clock import now_ms
from rocketmq_py.common.message import MessageConst
from rocketmq_py.common.topic import RMQ_SYS_SCHEDULE_TOPIC
from rocketmq_py.store.config_files import DelayOffsetTable
from rocketmq_py.store.flush import ServiceThread
from rocketmq_py.store.results import PutMessageStatus
from rocketmq_py.store.message import StoreMessage

if TYPE_CHECKING:
    from rocketmq_py.common.message import MessageExt
    from rocketmq_py.store.message_store import MessageStore

_log = logging.getLogger(__name__)
#: Put answers that a retry cannot change.
_NEVER_STORABLE = (PutMessageStatus.MESSAGE_ILLEGAL, PutMessageStatus.PROPERTIES_SIZE_EXCEEDED)

TRANS_HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
FIRST_DELAY_MS = 1000
DELAY_FOR_A_WHILE_MS = 100
DELAY_FOR_A_PERIOD_MS = 10_000


def message_timeup(message: MessageExt) -> StoreMessage | None:
    """The message to put back on its real topic, or None when it names none."""
    properties = dict(message.properties)
    stored = codec.properties_to_string(properties)
    topic = properties.get(MessageConst.REAL_TOPIC)
    try:
        queue_id = int(properties.get(MessageConst.REAL_QUEUE_ID, ""))
    except ValueError:
        return None
    if not topic:
        return None
    properties.pop(MessageConst.DELAY_TIME_LEVEL, None)
    properties[MessageConst.WAIT_STORE_MSG_OK] = "false"
    return StoreMessage(
        topic=topic, body=message.body, queue_id=queue_id, flag=message.flag, properties=properties,
        sys_flag=message.sys_flag, born_timestamp=message.born_timestamp, born_host=message.born_host,
        store_host=message.store_host, reconsume_times=message.reconsume_times, properties_string=stored,
    )


class ScheduleMessageService(ServiceThread):
    name = "ScheduleMessageService"

    def __init__(self, store: MessageStore) -> None:
        super().__init__()
        self.store = store
        self.offsets = DelayOffsetTable(store.config.config_dir)
        self._next_run: dict[int, float] = {}
        self._last_persist = time.monotonic()

    def load(self) -> None:
        self.offsets.load()
        for level in self.store.delay_levels:
            current = self.offsets.offset_table.get(level)
            consume_queue = self.store.get_consume_queue(RMQ_SYS_SCHEDULE_TOPIC, level - 1)
            if current is None or consume_queue is None:
                continue
            corrected = min(max(current, consume_queue.min_offset_in_queue), consume_queue.max_offset_in_queue)
            if corrected != current:
                _log.error("delay level %d offset %d is outside its queue; corrected to %d", level, current, corrected)
                self.offsets.set_offset(level, corrected)

    def run(self) -> None:
        start = time.monotonic() + FIRST_DELAY_MS / 1000
        self._next_run = {level: start for level in self.store.delay_levels}
        while not self.stopped:
            now = time.monotonic()
            for level, due in self._next_run.items():
                if due <= now and not self.stopped:
                    try:
                        wait_ms = self.deliver_level(level)
                    except Exception:
                        _log.exception("delivering delay level %d failed", level)
                        wait_ms = DELAY_FOR_A_PERIOD_MS
                    self._next_run[level] = time.monotonic() + wait_ms / 1000
            if now - self._last_persist >= self.store.config.flush_delay_offset_interval / 1000:
                self._last_persist = now
                self.offsets.persist()
            self.wait_for_running(max(0.0, min(self._next_run.values()) - time.monotonic()) * 1000)
        self.offsets.persist()

    def deliver_level(self, level: int) -> int:
        """Deliver the due messages of one level; return how long to wait before looking again (ms)."""
        offset = self.offsets.offset_table.get(level, 0)
        consume_queue = self.store.get_consume_queue(RMQ_SYS_SCHEDULE_TOPIC, level - 1)
        if consume_queue is None:
            return DELAY_FOR_A_WHILE_MS
        units = consume_queue.read_units(offset)
        if units is None:
            if consume_queue.min_offset_in_queue > offset:
                self.offsets.set_offset(level, consume_queue.min_offset_in_queue)
            elif consume_queue.max_offset_in_queue < offset:
                self.offsets.set_offset(level, consume_queue.max_offset_in_queue)
            return DELAY_FOR_A_WHILE_MS
        delay = self.store.delay_levels[level]
        for index, (physical, size, deliver_at) in enumerate(units):
            now = now_ms()
            if deliver_at > now + delay:
                deliver_at = now
            if deliver_at > now:
                self.offsets.set_offset(level, offset + index)
                return DELAY_FOR_A_WHILE_MS
            message = self.store.lookup_message_by_offset(physical)
            timeup = message_timeup(message) if message is not None else None
            if timeup is not None and timeup.topic != TRANS_HALF_TOPIC:
                result = self.store.append_message(timeup)
                if result.status in _NEVER_STORABLE:
                    # Retrying cannot help, and would hold up every later message of this level.
                    _log.error("delayed message at %d can never be stored (%s); skipping it", physical,
                               result.status.name)
                elif not result.is_ok:
                    _log.error("re-putting delayed message at %d failed: %s", physical, result.status.name)
                    self.offsets.set_offset(level, offset + index)
                    return DELAY_FOR_A_WHILE_MS
            elif timeup is not None:
                _log.error("[BUG] a delayed message names the transaction half topic; discarding it")
        self.offsets.set_offset(level, offset + len(units))
        return DELAY_FOR_A_WHILE_MS
