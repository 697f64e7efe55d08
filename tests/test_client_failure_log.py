"""Repeated send failures are logged once per broker and interval with a count: the claim of docs/python-api.md
for a 15 s outage (a simulated clock), and a real outage of our broker on loopback with a shorter interval."""
from __future__ import annotations

import asyncio
import logging
import re

from support.cluster import LoopbackCluster

from rocketmq_py import AsyncProducer, Message, RocketMQError
from rocketmq_py.client import failure_log
from rocketmq_py.client.failure_log import FailureLog
from rocketmq_py.errors import RemotingConnectError

COUNTED = re.compile(r"failed (\d+) more time")


def failures_in(records: list[logging.LogRecord], key: str) -> tuple[int, int]:
    """(lines about ``key``, failures they account for)."""
    lines = [r.getMessage() for r in records if key in r.getMessage()]
    counted = sum(int(m.group(1)) for line in lines if (m := COUNTED.search(line)))
    first = sum(1 for line in lines if "further failures" in line)
    return len(lines), counted + first


def test_a_15_s_outage_logs_at_most_one_line_per_broker_per_5_s_and_counts_every_failure(caplog):
    now_ms = [0]
    logger = logging.getLogger("test.failure_log")
    log = FailureLog(logger, "send to broker", clock=lambda: now_ms[0] / 1000.0)
    stamped: list[tuple[float, str]] = []

    class Stamp(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            stamped.append((now_ms[0] / 1000.0, record.getMessage()))

    handler = Stamp()
    logger.addHandler(handler)
    brokers = ["broker-a", "broker-b"]
    sent = {broker: 0 for broker in brokers}
    try:
        with caplog.at_level(logging.WARNING, logger="test.failure_log"):
            while now_ms[0] < 15_000:  # 1,000 failed sends a second to each broker, as in a tight retry loop
                for broker in brokers:
                    log.failed(broker, RemotingConnectError(broker, "connection refused"), "trying again")
                    sent[broker] += 1
                now_ms[0] += 1
            log.flush()  # the producer's shutdown
    finally:
        logger.removeHandler(handler)
    for broker in brokers:
        lines, counted = failures_in(caplog.records, broker)
        assert counted == sent[broker] == 15_000
        times = [when for when, message in stamped if broker in message]
        assert len(times) == lines <= 4
        during = times[:-1] if times[-1] == 15.0 else times  # the shutdown's line may follow the last closely
        assert all(b - a >= failure_log.DEFAULT_INTERVAL_S for a, b in zip(during, during[1:]))


async def test_a_producer_through_a_broker_outage_logs_a_line_per_interval_with_counts(tmp_path, caplog,
                                                                                        monkeypatch):
    monkeypatch.setattr(failure_log, "DEFAULT_INTERVAL_S", 0.5)
    async with LoopbackCluster(tmp_path) as cluster:
        producer = AsyncProducer("outage_pg", namesrv_addr=cluster.namesrv_addr, retry_times_when_send_failed=2)
        await producer.start()
        await producer.send(Message("Outage", b"before"))  # the route is cached now
        await cluster.stop_broker()
        attempts = 0
        loop = asyncio.get_running_loop()
        started = loop.time()
        with caplog.at_level(logging.WARNING, logger="rocketmq_py.client.producer.core"):
            while loop.time() - started < 2.0:
                try:
                    await producer.send(Message("Outage", b"during"))
                except RocketMQError as error:
                    match = re.search(r"send \[(\d+)\] times", str(error))
                    assert match, error
                    attempts += int(match.group(1))
            outage_s = loop.time() - started
            await producer.shutdown()
    lines, counted = failures_in(caplog.records, "broker-api")
    assert attempts > 20, "the outage should make many failed attempts"
    assert counted == attempts
    assert lines <= outage_s / 0.5 + 2  # the first line, one per interval, and the count left at shutdown
