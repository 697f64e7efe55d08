"""Issue 3, point 8: with enable_msg_trace, Java's own trace tool (mqadmin queryMsgTraceById, which reads
RMQ_SYS_TRACE_TOPIC with the official TraceDataEncoder) finds a Pub record for every traced message."""
from __future__ import annotations

import re
import time
import uuid

from harness import mqadmin

from rocketmq_py.client.producer import Producer
from rocketmq_py.common.message import Message


def test_trace_records_are_read_by_javas_trace_tool(java_namesrv, java_broker):
    topic = f"Traced_{uuid.uuid4().hex[:8]}"
    group = f"trace_pg_{uuid.uuid4().hex[:6]}"
    with Producer(group, namesrv_addr=java_namesrv.addr, enable_msg_trace=True) as producer:
        results = [producer.send(Message(topic, f"traced-{i}".encode(), tags="T", keys=f"tk-{i}"))
                   for i in range(3)]
    for result in results[:2]:
        printed = ""
        for _ in range(10):
            printed = mqadmin("queryMsgTraceById", "-i", result.msg_id, namesrv=java_namesrv.addr)
            if "Pub" in printed:
                break
            time.sleep(1)
        rows = [line.split() for line in printed.splitlines() if line.startswith("Pub")]
        assert rows, f"no Pub trace for {result.msg_id}:\n{printed}"
        kind, trace_group, client_host, _date, _time, cost, status = rows[0]
        assert (kind, trace_group, status) == ("Pub", group, "success")
        assert re.fullmatch(r"\d+ms", cost)
