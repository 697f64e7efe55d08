"""Issue 4, point 4: two Python orderly consumers in one group lock their queues on the Java broker and
keep per-queue order although each has several consume threads and a listener that takes its time;
SUSPEND_CURRENT_QUEUE_A_MOMENT brings the same message back before the ones after it; the locks are
released at shutdown (a Java orderly consumer of the group can then take every queue at once)."""
from __future__ import annotations

import random
import threading
import time
from collections import defaultdict

from harness import mqadmin, run_peer, unique_name

from rocketmq_py.client.consumer import ConsumeOrderlyStatus, PushConsumer

PER_QUEUE = 15
QUEUES = 4


def _owned(consumer: PushConsumer, topic: str) -> set:
    table = consumer.core.rebalance.process_queue_table
    return {q for q, pq in list(table.items()) if q.topic == topic and pq.locked and not pq.dropped}


def test_two_python_orderly_consumers_keep_per_queue_order(java_namesrv, java_broker):
    topic, group = unique_name("Orderly"), unique_name("cg")
    namesrv = java_namesrv.addr
    mqadmin("updateTopic", "-b", java_broker.addr, "-t", topic, "-r", str(QUEUES), "-w", str(QUEUES),
            namesrv=namesrv)
    deliveries: dict[int, list[tuple[int, int, str]]] = defaultdict(list)
    lock = threading.Lock()
    suspended: set[int] = set()
    in_queue: dict[int, int] = defaultdict(int)

    def listener_for(name: str):
        def listener(messages, context):
            queue_id = context.message_queue.queue_id
            with lock:
                in_queue[queue_id] += 1
                assert in_queue[queue_id] == 1, "two batches of one queue at once"
            try:
                time.sleep(random.uniform(0.0, 0.02))
                for m in messages:
                    with lock:
                        deliveries[queue_id].append((m.queue_offset, m.reconsume_times, name))
                        if m.queue_offset == 3 and queue_id not in suspended:
                            suspended.add(queue_id)
                            return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
                return ConsumeOrderlyStatus.SUCCESS
            finally:
                with lock:
                    in_queue[queue_id] -= 1
        return listener

    consumers = []
    try:
        for name in ("a", "b"):
            consumer = PushConsumer(group, namesrv_addr=namesrv, consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                                    consume_thread_min=4, consume_thread_max=4)
            consumer.subscribe(topic, "*")
            consumer.register_message_listener(listener_for(name), orderly=True)
            consumer.start()
            consumers.append(consumer)
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline:
            owned = [_owned(c, topic) for c in consumers]
            if sum(map(len, owned)) == QUEUES and all(len(o) == QUEUES // 2 for o in owned):
                break
            time.sleep(0.2)
        else:
            raise AssertionError(f"the queues were not locked and split: {owned}")
        run_peer("produce", namesrv=namesrv, topic=topic, count=PER_QUEUE * QUEUES, body="o-{i}")
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline:
            with lock:
                if all(len({o for o, _, _ in deliveries[q]}) == PER_QUEUE for q in range(QUEUES)):
                    break
            time.sleep(0.2)
    finally:
        for consumer in consumers:
            consumer.shutdown()
    for queue_id in range(QUEUES):
        seen = deliveries[queue_id]
        offsets = [offset for offset, _, _ in seen]
        assert offsets == sorted(offsets), f"queue {queue_id} out of order: {offsets}"
        assert sorted(set(offsets)) == list(range(PER_QUEUE))
        assert offsets.count(3) == 2, "the suspended message came again, before the ones after it"
        assert [times for offset, times, _ in seen if offset == 3] == [0, 1]
        assert len({name for _, _, name in seen}) == 1, "a queue belongs to one consumer"
    # The locks were released at shutdown: a Java orderly consumer of the group takes every queue now.
    run_peer("produce", namesrv=namesrv, topic=topic, count=8, body="late-{i}")
    lines = run_peer("consume-orderly", namesrv=namesrv, topic=topic, group=group, count=8, timeout_ms=20000,
                     timeout=60)
    assert not lines[-1]["timedOut"], "the Java consumer could not lock the queues"
    assert {line["queueId"] for line in lines[:-1]} == set(range(QUEUES))
