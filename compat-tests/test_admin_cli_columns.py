"""Issue 32, must-show 2: ``rocketmq-py admin`` prints what mqadmin prints, column for column, for clusterList,
topicList, topicStatus, consumerProgress and queryMsgByKey, on the Java servers and on ours (docs/admin.md
shows the two side by side). Only what legitimately changes between the two runs is left out of the
comparison: the rates and the hours since the oldest message, and the row order of Java's hash sets."""
from __future__ import annotations

import re

from harness import mqadmin, run_peer, unique_name
from harness.admin_text import header, rocketmq_py, table

LOAD = re.compile(r"^ *\d+\.\d{2}\(\w+,\w+ms\)$")


def _both(*args: str, namesrv: str) -> tuple[str, str]:
    return rocketmq_py("admin", *args, namesrv=namesrv), mqadmin(*args, namesrv=namesrv)


def test_cluster_list_and_topic_list(servers):
    namesrv, broker = servers
    ours, theirs = _both("clusterList", namesrv=namesrv.addr)
    assert header(ours) == header(theirs)
    [our_row], [their_row] = table(ours), table(theirs)
    assert our_row[:5] == their_row[:5] == [broker.cluster, broker.broker_name, "0", broker.addr, their_row[4]]
    # The load columns: "%19s" of "%9.2f(queue,waitms)"; then page cache wait, hours and disk ratio.
    width = len("#Cluster Name     #Broker Name            #BID  #Addr                  #Version         ")
    for line in (ours.splitlines()[1], theirs.splitlines()[1]):
        assert LOAD.match(line[width:width + 19]) and LOAD.match(line[width + 20:width + 39]), line
    assert len(our_row) == len(their_row)

    ours, theirs = _both("topicList", namesrv=namesrv.addr)
    assert sorted(ours.splitlines()) == sorted(theirs.splitlines())


def test_topic_status_consumer_progress_and_query_by_key(servers):
    namesrv, broker = servers
    topic, group = unique_name("Columns"), unique_name("columns_group")
    mqadmin("updateTopic", "-b", broker.addr, "-t", topic, "-r", "3", "-w", "3", namesrv=namesrv.addr)
    run_peer("produce", namesrv=namesrv.addr, topic=topic, count=7, keys="column-key")
    # Our consumer commits what it printed, and waits for the broker's answers, before it exits.
    consumed = rocketmq_py("consume", "-t", topic, "-g", group, "--from-beginning", "--max", "4", namesrv=namesrv.addr)
    assert len(consumed.splitlines()) == 4

    ours, theirs = _both("topicStatus", "-t", topic, namesrv=namesrv.addr)
    assert ours == theirs

    ours, theirs = _both("consumerProgress", "-g", group, namesrv=namesrv.addr)
    rate = re.compile(r"^Consume TPS: \d+\.\d{2}$", re.M)
    assert rate.search(ours) and rate.search(theirs)
    assert rate.sub("", ours) == rate.sub("", theirs)

    ours, theirs = _both("queryMsgByKey", "-t", topic, "-k", "column-key", namesrv=namesrv.addr)
    assert header(ours) == header(theirs)
    assert sorted(ours.splitlines()) == sorted(theirs.splitlines()) and len(table(ours)) == 7
