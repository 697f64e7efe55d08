"""Issue 32, broker statistics: ``statsAll`` from our Admin and from mqadmin agree on the Java servers and on
ours: the same topics, groups and lags. The 24-hour counts come from windows the broker samples on its own
clock (the minute's sum until the hour's is sampled, and 0 in between), so each tool may catch another phase:
both must show one of the two values the windows can hold (tests/test_admin_loopback.py steps the clock and
checks the counts exactly)."""
from __future__ import annotations

from harness import mqadmin, run_peer, unique_name
from harness.admin_text import rocketmq_py, table

from rocketmq_py import Admin


def test_stats_all_agrees_with_mqadmin(servers):
    namesrv, broker = servers
    topic, group = unique_name("StatsTopic"), unique_name("stats_group")
    mqadmin("updateTopic", "-b", broker.addr, "-t", topic, "-r", "2", "-w", "2", namesrv=namesrv.addr)
    run_peer("produce", namesrv=namesrv.addr, topic=topic, count=8)
    # Our consumer commits what it printed and waits for the broker's answers before it exits (Java's consumer
    # commits oneway as it shuts down, and may lose the last commit).
    consumed = rocketmq_py("consume", "-t", topic, "-g", group, "--from-beginning", "--max", "8", namesrv=namesrv.addr)
    assert len(consumed.splitlines()) == 8
    with Admin(namesrv_addr=namesrv.addr, instance_name=unique_name("admin")) as admin:
        [ours] = admin.stats_all(topic)
        [printed] = table(mqadmin("statsAll", "-t", topic, namesrv=namesrv.addr))
    assert (ours.topic, ours.consumer_group, ours.accumulation) == (topic, group, 0)
    assert printed[:3] == [topic, group, "0"]
    assert {ours.in_msg_24_hour, ours.out_msg_24_hour, int(printed[5]), int(printed[6])} <= {0, 8}
