"""The orderly consume task of a consume thread (ConsumeMessageOrderlyService), run in the test thread.

A consume thread commits each batch and takes the next under one hold of the process queue's lock, and counts
as in flight for its whole task (issue 33: the per-batch bookkeeping was most of the orderly consumer's CPU).
What must not change with that: the queue in offset order, one batch at a time, an offset that never passes a
message the listener has not finished, SUSPEND_CURRENT_QUEUE_A_MOMENT consuming the batch again, and a dropped
queue stopping its task before the next batch.
"""
from __future__ import annotations

from typing import Any, Callable

import pytest

from rocketmq_py.client.consumer import AsyncPushConsumer, ConsumeOrderlyStatus
from rocketmq_py.client.consumer.consume_orderly import ConsumeMessageOrderlyService, _QueueRequest
from rocketmq_py.client.consumer.listener import Listener
from rocketmq_py.client.consumer.offset_store import NO_OFFSET, RemoteBrokerOffsetStore
from rocketmq_py.client.consumer.process_queue import ProcessQueue
from rocketmq_py.common.clock import now_ms
from rocketmq_py.common.combining_lock import CombiningLock
from rocketmq_py.common.consumer_body import ProcessQueueInfo
from rocketmq_py.common.message import MessageExt
from rocketmq_py.common.message_queue import MessageQueue

QUEUE = MessageQueue("T", "broker-a", 0)


def message(offset: int, size: int = 10) -> MessageExt:
    out = MessageExt(QUEUE.topic, b"x" * size)
    out.queue_id = QUEUE.queue_id
    out.queue_offset = offset
    return out


class CountingLock(CombiningLock):
    """A combining lock that counts how often it is held (``with``)."""

    __slots__ = ("holds",)

    def __init__(self) -> None:
        super().__init__()
        self.holds = 0

    def __enter__(self) -> None:
        self.holds += 1
        super().__enter__()


class EventLoopStandIn:
    """Stands for the event loop: keeps what a consume thread hands to it (rescheduling the queue) for the test."""

    def __init__(self) -> None:
        self.handed: list[Callable[..., Any]] = []

    def call_soon_threadsafe(self, callback: Callable[..., Any], *args: Any) -> None:
        self.handed.append(callback)


@pytest.fixture
def loop() -> EventLoopStandIn:
    return EventLoopStandIn()


def orderly_service(listener, loop: EventLoopStandIn) -> ConsumeMessageOrderlyService:
    consumer = AsyncPushConsumer("g", namesrv_addr="127.0.0.1:1")
    consumer.offset_store = RemoteBrokerOffsetStore(None, "g")  # type: ignore[arg-type]
    service = ConsumeMessageOrderlyService(consumer, Listener.of(listener, orderly=True))
    service._loop = loop  # type: ignore[assignment]
    return service


def locked_queue(offsets: range, size: int = 10) -> ProcessQueue:
    pq = ProcessQueue()
    pq.locked = True
    pq.last_lock_timestamp = now_ms()
    pq.put_messages([message(offset, size) for offset in offsets])
    return pq


def test_commit_and_take_commits_the_batch_and_takes_the_next_with_counts_and_sizes():
    pq = ProcessQueue()
    pq.put_messages([message(offset, size=offset + 1) for offset in range(5)])  # bodies of 1..5 bytes: 15
    assert [m.queue_offset for m in pq.take_messages(2)] == [0, 1]
    offset, batch = pq.commit_and_take(2, now_ms())
    assert offset == 2 and [m.queue_offset for m in batch] == [2, 3]
    assert (pq.msg_count, pq.msg_size) == (3, 12), "offsets 0 and 1 (1 + 2 bytes) are gone"
    pq.make_message_to_consume_again(batch[1:])
    offset, batch = pq.commit_and_take(5, now_ms())
    assert offset == 3, "only offset 2 was still consuming"
    assert [m.queue_offset for m in batch] == [3, 4]
    assert (pq.msg_count, pq.msg_size) == (2, 9)
    info = ProcessQueueInfo()
    pq.fill_info(info)
    assert (info.transaction_msg_min_offset, info.transaction_msg_max_offset, info.transaction_msg_count) == (3, 4, 2)
    pq.rollback()
    assert [m.queue_offset for m in pq.take_messages(5)] == [3, 4], "rolled back in offset order"
    assert pq.commit_and_take(5, now_ms()) == (5, [])
    assert (pq.msg_count, pq.msg_size, pq.consuming) == (0, 0, False)
    assert pq.commit_and_take(1, 1_700_000_000_123) == (-1, [])
    assert pq.last_consume_timestamp == 1_700_000_000_123, "the batch's one reading of the clock"


def test_a_consume_thread_holds_the_queue_lock_once_per_batch_and_commits_only_consumed_offsets(loop):
    count = 50
    pq = locked_queue(range(count))
    pq._changes = counting = CountingLock()
    seen: list[tuple[int, int, int]] = []

    def listener(messages, context):
        # pq._in_flight: pq.in_flight would hold the lock being counted
        seen.append((messages[0].queue_offset, service.consumer.offset_store.read_offset_from_memory(QUEUE),
                     pq._in_flight))
        return ConsumeOrderlyStatus.SUCCESS

    service = orderly_service(listener, loop)
    counting.holds = 0
    service._consume_in_thread(_QueueRequest(pq, QUEUE))
    holds = counting.holds

    assert [offset for offset, _, _ in seen] == list(range(count)), "in offset order, one message a batch"
    assert seen[0][1] == NO_OFFSET
    assert all(stored == offset for offset, stored, _ in seen[1:]), \
        "while a message is consumed, the offset stands at it: never past a message not yet consumed"
    assert {in_flight for _, _, in_flight in seen} == {1}, "the task is in flight while its listener runs"
    assert service.consumer.offset_store.read_offset_from_memory(QUEUE) == count
    assert (pq.in_flight, pq.msg_count, pq.consuming) == (0, 0, False)
    # the task's start, its first batch, then one hold per batch (the commit and the next batch together)
    assert holds == count + 2, f"{holds} holds of the queue lock for {count} batches"
    assert service.consumer.stats.status(QUEUE.topic).consume_ok_tps * 60 == count
    assert loop.handed == [], "nothing handed to the event loop"


def test_suspend_consumes_the_batch_again_and_the_offset_stays_before_it(loop):
    pq = locked_queue(range(4))
    calls: list[tuple[int, int]] = []

    def listener(messages, context):
        calls.append((messages[0].queue_offset, messages[0].reconsume_times))
        if messages[0].queue_offset == 2 and messages[0].reconsume_times == 0:
            return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
        return ConsumeOrderlyStatus.SUCCESS

    service = orderly_service(listener, loop)
    service._consume_in_thread(_QueueRequest(pq, QUEUE))
    assert calls == [(0, 0), (1, 0), (2, 0)]
    assert service.consumer.offset_store.read_offset_from_memory(QUEUE) == 2, "offset 2 is not consumed yet"
    assert loop.handed == [service._submit_later], "the queue is submitted again after a moment"
    assert (pq.msg_count, pq.in_flight) == (2, 0)

    service._consume_in_thread(_QueueRequest(pq, QUEUE))  # what the resubmission runs
    assert calls[3:] == [(2, 1), (3, 0)]
    assert service.consumer.offset_store.read_offset_from_memory(QUEUE) == 4
    assert stats_failed(service) == 1


def stats_failed(service: ConsumeMessageOrderlyService) -> float:
    return service.consumer.stats.status(QUEUE.topic).consume_failed_tps * 60


def test_a_queue_dropped_during_a_batch_stops_its_task_before_the_next_and_commits_nothing_more(loop):
    pq = locked_queue(range(5))
    calls: list[int] = []

    def listener(messages, context):
        calls.append(messages[0].queue_offset)
        if messages[0].queue_offset == 1:
            pq.dropped = True
        return ConsumeOrderlyStatus.SUCCESS

    service = orderly_service(listener, loop)
    service._consume_in_thread(_QueueRequest(pq, QUEUE))
    assert calls == [0, 1]
    assert service.consumer.offset_store.read_offset_from_memory(QUEUE) == 1, "offset 0 was committed, 1 is not"
    assert pq.in_flight == 0


def test_a_lost_broker_lock_stops_the_task_without_taking_or_committing_more(loop):
    pq = locked_queue(range(5))
    calls: list[int] = []

    def listener(messages, context):
        calls.append(messages[0].queue_offset)
        if messages[0].queue_offset == 1:
            pq.locked = False
        return ConsumeOrderlyStatus.SUCCESS

    service = orderly_service(listener, loop)
    service._consume_in_thread(_QueueRequest(pq, QUEUE))
    assert calls == [0, 1]
    assert service.consumer.offset_store.read_offset_from_memory(QUEUE) == 2, "offset 1 was consumed: committed"
    assert pq.consuming, "still the queue's task to finish: the cache is not handed to a new task"
    assert loop.handed == [service._try_lock_later_and_reconsume], "locking again is handed to the event loop"
    assert pq.msg_count == 3 and pq.in_flight == 0
