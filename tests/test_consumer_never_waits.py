"""A push consumer's consume threads never wait for one another in the consumer's own bookkeeping (issue 33).

Under the GIL a thread can lose the GIL while it holds a lock; when 20 consume threads then met the statistics,
offset store and process queue locks after every message, the consumer fell into a lock convoy and ran at a third
of its speed for the rest of the run. Here the test thread holds those locks, as a thread that lost the GIL inside
them would, and a consume thread must still finish its message; what it recorded is seen by the next reader.
(The test waits on events, with a generous bound that only a thread blocked for good would reach.)
"""
from __future__ import annotations

import threading
from contextlib import ExitStack
from types import SimpleNamespace

from rocketmq_py.client.consumer.config import PushConsumerConfig
from rocketmq_py.client.consumer.consume_concurrently import ConsumeMessageConcurrentlyService, ConsumeRequest
from rocketmq_py.client.consumer.listener import ConsumeConcurrentlyContext, ConsumeConcurrentlyStatus, Listener
from rocketmq_py.client.consumer.offset_store import RemoteBrokerOffsetStore
from rocketmq_py.client.consumer.process_queue import ProcessQueue
from rocketmq_py.client.consumer.stats import ConsumerStats
from rocketmq_py.common.combining_lock import CombiningLock
from rocketmq_py.common.message import MessageExt
from rocketmq_py.common.message_queue import MessageQueue

#: Far beyond any scheduling delay: reached only by a thread that waits for the lock the test holds.
BLOCKED_FOR_GOOD_S = 30.0


def in_thread(work) -> threading.Event:
    """Run ``work`` in a new thread; the event is set when it returns."""
    done = threading.Event()

    def run() -> None:
        work()
        done.set()

    threading.Thread(target=run, daemon=True).start()
    return done


def test_a_change_is_made_at_once_when_the_lock_is_free():
    lock = CombiningLock()
    made: list[int] = []
    lock.record(made.append, 1)
    assert made == [1]


def test_a_thread_records_without_waiting_and_the_next_holder_sees_its_changes_in_order():
    lock = CombiningLock()
    made: list[int] = []
    with lock:
        done = in_thread(lambda: [lock.record(made.append, n) for n in range(5)])
        assert done.wait(BLOCKED_FOR_GOOD_S), "a recording thread waited for the lock"
        assert made == [], "nothing is made while another thread holds the lock"
    with lock:
        assert made == [0, 1, 2, 3, 4]


def test_the_holder_makes_what_was_recorded_before_it_releases_the_lock():
    lock = CombiningLock()
    made: list[str] = []
    with lock:
        assert in_thread(lambda: lock.record(made.append, "recorded meanwhile")).wait(BLOCKED_FOR_GOOD_S)
    assert made == ["recorded meanwhile"]
    lock.record(made.append, "next")
    assert made == ["recorded meanwhile", "next"]


def messages(queue: MessageQueue, offsets: range) -> list[MessageExt]:
    out = []
    for offset in offsets:
        message = MessageExt(queue.topic, b"x" * 100)
        message.queue_offset = offset
        out.append(message)
    return out


def test_a_consume_thread_finishes_its_message_while_the_bookkeeping_locks_are_held():
    queue = MessageQueue("T", "broker-a", 0)
    consumer = SimpleNamespace(config=PushConsumerConfig(), group="g", stats=ConsumerStats(),
                               offset_store=RemoteBrokerOffsetStore(None, "g"))  # type: ignore[arg-type]
    service = ConsumeMessageConcurrentlyService(consumer, Listener.of(lambda ms, ctx: None))  # type: ignore[arg-type]
    pq = ProcessQueue()
    pulled = messages(queue, range(10, 14))
    pq.put_messages(pulled)
    pq.requests_submitted(2)
    consumed = [ConsumeRequest(pulled[0:1], pq, queue), ConsumeRequest(pulled[1:2], pq, queue)]

    def finish_both() -> None:
        for request in consumed:
            service._finish(request, ConsumeConcurrentlyStatus.CONSUME_SUCCESS, ConsumeConcurrentlyContext(queue), 1.0)

    with ExitStack() as held:
        for lock in (pq._changes, consumer.stats._updates, consumer.offset_store._updates):
            held.enter_context(lock)
        assert in_thread(finish_both).wait(BLOCKED_FOR_GOOD_S), "a consume thread waited for a bookkeeping lock"

    assert consumer.offset_store.read_offset_from_memory(queue) == 12, "offsets 10 and 11 consumed: 12 is next"
    assert (pq.msg_count, pq.in_flight) == (2, 0)
    assert pq.first_offset() == 12
    assert consumer.stats.status("T").consume_ok_tps * 60 == 2


def test_the_pull_loop_reads_its_figures_while_a_consume_thread_holds_the_bookkeeping_locks():
    """Before every pull the event loop checks the queue's cache (flow control) and reads the offset to commit; a
    consume thread that lost the GIL inside the process queue's or the offset store's lock must not hold up the
    pulls of every queue (Java reads atomic counters and a concurrent map there)."""
    from rocketmq_py.client.consumer.push import FLOW_CONTROL_DELAY_S, AsyncPushConsumer

    queue = MessageQueue("T", "broker-a", 0)
    consumer = AsyncPushConsumer("g", namesrv_addr="127.0.0.1:1", pull_threshold_for_queue=3)
    offsets = consumer.offset_store = RemoteBrokerOffsetStore(None, "g")  # type: ignore[arg-type]
    pq = ProcessQueue()
    pq.put_messages(messages(queue, range(4)))
    offsets.update_offset(queue, 7, False)
    seen = {}

    def before_a_pull() -> None:
        seen["delay"] = consumer._flow_control_delay(queue, pq)
        seen["commit offset"] = offsets.peek_offset(queue)

    with pq._changes, offsets._updates:
        assert in_thread(before_a_pull).wait(BLOCKED_FOR_GOOD_S), "the pull loop waited for a bookkeeping lock"
    assert seen == {"delay": FLOW_CONTROL_DELAY_S, "commit offset": 7}, "4 cached, over the threshold of 3"
