"""Issue 32, broker statistics: ``statsAll`` from our Admin and from mqadmin agree on the Java servers and on
ours: the same topics and groups, lags and 24-hour counts (a count read by mqadmin between two reads of our
Admin lies between them, as a window's sum only shrinks while no message comes)."""
from __future__ import annotations

import time

from harness import mqadmin, run_peer, unique_name
from harness.admin_text import table

from rocketmq_py import Admin


def test_stats_all_agrees_with_mqadmin(servers):
    namesrv, broker = servers
    topic, group = unique_name("StatsTopic"), unique_name("stats_group")
    mqadmin("updateTopic", "-b", broker.addr, "-t", topic, "-r", "2", "-w", "2", namesrv=namesrv.addr)
    run_peer("produce", namesrv=namesrv.addr, topic=topic, count=8)
    *_, done = run_peer("consume", namesrv=namesrv.addr, topic=topic, group=group, count=8, timeout_ms=60000)
    assert done["count"] == 8
    with Admin(namesrv_addr=namesrv.addr, instance_name=unique_name("admin")) as admin:
        deadline = time.monotonic() + 60
        while admin.examine_consume_stats(group, topic).compute_total_diff():  # the last commit is oneway
            assert time.monotonic() < deadline
            time.sleep(0.5)
        before = admin.stats_all(topic)
        [printed] = table(mqadmin("statsAll", "-t", topic, namesrv=namesrv.addr))
        after = admin.stats_all(topic)
    assert [(row.topic, row.consumer_group, row.accumulation) for row in before] == [(topic, group, 0)]
    assert printed[:3] == [topic, group, "0"]
    for column, field in ((5, "in_msg_24_hour"), (6, "out_msg_24_hour")):
        low, high = sorted((getattr(before[0], field), getattr(after[0], field)))
        assert low <= int(printed[column]) <= high, (field, before, printed, after)
