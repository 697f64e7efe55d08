"""Issue 11, statistics: the official ``mqadmin`` (4.9.8 tools) against OUR broker and against the Java broker,
after the same traffic (a Java producer sends N messages to a 4-queue topic; one of our push consumers, left
online, consumes them), gives the same figures for ``statsAll``, ``brokerConsumeStats``, ``queryCq``,
``brokerStatus`` and ``consumerProgress`` (with its TPS), and the admin API's ``getConsumeStatus`` (which the 4.9.8
mqadmin has no sub command for) the same consumer offsets. Counts must be equal; rates
(TPS) depend on when each broker's 10-second sampler ran, so they only have to be sane on both sides.

Java's per-minute statistics keep one minute of samples, so the count checks of ``statsAll`` run within a
minute of the first sample after the traffic, on both sides at once.
"""
from __future__ import annotations

import re
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
from harness import mqadmin_patiently, run_peer, wire
from harness.processes import free_port
from harness.py_servers import PythonBroker, PythonNameServer

from rocketmq_py import codec
from rocketmq_py.client.consumer import ConsumeConcurrentlyStatus, PushConsumer
from rocketmq_py.common import consumer_body

COUNT = 40
QUEUES = 4
TOPIC = f"StatsTopic_{int(time.time())}"
GROUP = f"StatsGroup_{int(time.time())}"
WAIT_S = 90.0
ADMIN_ATTEMPTS = 3


class Side:
    """One broker (ours or Java's) with the traffic sent to it and our consumer kept online."""

    def __init__(self, label: str, namesrv: str, broker: str, metrics_port: int = 0) -> None:
        self.label = label
        self.namesrv = namesrv
        self.broker = broker
        self.metrics_port = metrics_port
        self.metrics_after_produce: str = ""
        #: TOPIC_PUT_NUMS's minute window (VIEW_BROKER_STATS_DATA) and /metrics as read from that same window.
        self.put_window_and_metrics: tuple[dict, str] = ({}, "")
        self.received = 0
        self._lock = threading.Lock()
        self.consumer: PushConsumer | None = None

    def run_traffic(self) -> None:
        self.admin("updateTopic", "-b", self.broker, "-t", TOPIC, "-r", str(QUEUES), "-w", str(QUEUES))
        # One body for all, so that the record sizes queryCq shows do not depend on which queue got which message.
        run_peer("produce", namesrv=self.namesrv, topic=TOPIC, count=COUNT, body="stats-body")
        if self.metrics_port:
            self.metrics_after_produce = self.scrape()
        self.consumer = PushConsumer(GROUP, namesrv_addr=self.namesrv, instance_name=f"stats-{self.label}",
                                     consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        self.consumer.subscribe(TOPIC, "*")

        def on_messages(messages, context):
            with self._lock:
                self.received += len(messages)
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

        self.consumer.register_message_listener(on_messages)
        self.consumer.start()

    def committed(self) -> int:
        total = 0
        for queue_id in range(QUEUES):
            header, _ = wire.request(self.broker, 14, {"consumerGroup": GROUP, "topic": TOPIC, "queueId": queue_id})
            total += max(int((header.get("extFields") or {}).get("offset", "0")), 0)
        return total

    def minute_window(self, stats_name: str, key: str) -> dict | None:
        header, body = wire.request(self.broker, 315, {"statsName": stats_name, "statsKey": key})
        if header["code"] != 0 or not body:
            return None
        return codec.json_loads(body)["statsMinute"]

    def minute_sum(self, stats_name: str, key: str) -> int:
        window = self.minute_window(stats_name, key)
        return int(window["sum"]) if window else -1

    def scrape_with_put_window(self) -> tuple[dict, str]:
        """/metrics and the TOPIC_PUT_NUMS minute window it read: the same window answered before and after the
        scrape, so the sampler (every 10 s) took no sample in between."""
        for _ in range(5):
            window = self.minute_window("TOPIC_PUT_NUMS", TOPIC)
            scraped = self.scrape()
            if window is not None and self.minute_window("TOPIC_PUT_NUMS", TOPIC) == window:
                return window, scraped
        raise AssertionError("the stats sampler took a sample during each of 5 scrapes")

    def scrape(self, path: str = "/metrics") -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}{path}", timeout=30) as answer:
            return answer.read().decode()

    def admin(self, *args: str) -> str:
        return mqadmin_patiently(*args, namesrv=self.namesrv, attempts=ADMIN_ATTEMPTS)

    def close(self) -> None:
        if self.consumer is not None:
            self.consumer.shutdown()


def _wait(what: str, check, timeout_s: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.5)


@pytest.fixture(scope="module")
def sides(java_namesrv, java_broker, tmp_path_factory):
    namesrv = PythonNameServer(tmp_path_factory.mktemp("stats-ns")).start()
    metrics_port = free_port()
    broker = PythonBroker(namesrv.addr, tmp_path_factory.mktemp("stats-broker"), broker_name="pystats",
                          metricsPort=metrics_port).start()
    ours = Side("ours", namesrv.addr, broker.addr, metrics_port)
    java = Side("java", java_namesrv.addr, java_broker.addr)
    try:
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(Side.run_traffic, (ours, java)))
        for side in (ours, java):
            _wait(f"{side.label}: {COUNT} messages consumed and committed",
                  lambda: side.received >= COUNT and side.committed() == COUNT)
            _wait(f"{side.label}: the stats sampler counted the traffic",
                  lambda: side.minute_sum("TOPIC_PUT_NUMS", TOPIC) == COUNT
                  and side.minute_sum("GROUP_GET_NUMS", f"{TOPIC}@{GROUP}") == COUNT)
            if side.metrics_port:
                # At once, while the minute window holds the traffic (it keeps a sample for a minute).
                side.put_window_and_metrics = side.scrape_with_put_window()
        yield ours, java
    finally:
        for side in (ours, java):
            side.close()
        broker.stop()
        namesrv.stop()


def _both(sides, *args: str) -> tuple[str, str]:
    ours, java = sides
    with ThreadPoolExecutor(2) as pool:
        found = list(pool.map(lambda side: side.admin(*args), (ours, java)))
    return found[0], found[1]


def _rows(printed: str, first: str) -> list[list[str]]:
    return [line.split() for line in printed.splitlines() if line.split()[:1] == [first]]


def test_stats_all_counts_the_same_traffic(sides):
    ours, java = _both(sides, "statsAll", "-t", TOPIC)
    [our_row], [java_row] = _rows(ours, TOPIC), _rows(java, TOPIC)
    assert our_row[1] == java_row[1] == GROUP
    # Accumulation, InMsg24Hour and OutMsg24Hour are counts.
    assert [our_row[2], our_row[5], our_row[6]] == [java_row[2], java_row[5], java_row[6]] == ["0", str(COUNT),
                                                                                              str(COUNT)]
    for row in (our_row, java_row):
        assert float(row[3]) > 0 and float(row[4]) > 0, (our_row, java_row)


def _consume_rows(printed: str) -> dict[int, tuple[int, int, int]]:
    return {int(row[3]): (int(row[4]), int(row[5]), int(row[6])) for row in _rows(printed, TOPIC)}


def test_broker_consume_stats(sides):
    ours, java = sides
    printed_ours, printed_java = (side.admin("brokerConsumeStats", "-b", side.broker) for side in sides)
    assert _consume_rows(printed_ours) == _consume_rows(printed_java) == {
        queue_id: (COUNT // QUEUES, COUNT // QUEUES, 0) for queue_id in range(QUEUES)}
    assert re.search(r"Diff Total: \d+", printed_ours), printed_ours


def _cq(printed: str) -> tuple[str, list[tuple[str, str]]]:
    bounds = re.search(r"max: (\d+), min: (\d+)", printed)
    units = re.findall(r"idx: (\d+)\n.*?physicSize=(\d+)", printed)
    return (bounds.group(0) if bounds else printed), units


def test_query_cq(sides):
    ours, java = sides
    found = [side.admin("queryCq", "-t", TOPIC, "-q", "1", "-i", "2", "-c", "5", "-b", side.broker, "-g", GROUP)
             for side in sides]
    assert _cq(found[0]) == _cq(found[1])
    assert _cq(found[0])[0] == f"max: {COUNT // QUEUES}, min: 0"
    assert [index for index, _ in _cq(found[0])[1]] == ["2", "3", "4", "5", "6"], found[0]
    assert "Subscription data" in found[0] and "Filter data" in found[0]


def test_broker_status_has_java_keys_and_real_figures(sides):
    def table(side: Side) -> dict[str, str]:
        printed = side.admin("brokerStatus", "-b", side.broker)
        return {key.strip(): value.strip() for key, colon, value in
                (line.partition(":") for line in printed.splitlines()) if colon}

    def keys(found: dict[str, str]) -> set[str]:
        # Per-path keys name the store directory, which differs between the two brokers.
        return {re.sub(r"_/.*$", "_<path>", key) for key in found}

    ours, java = (table(side) for side in sides)
    assert keys(java) - keys(ours) <= {"remainHowManyDataToCommit"}, sorted(keys(java) - keys(ours))
    assert int(ours["msgPutTotalTodayNow"]) >= COUNT and int(ours["msgGetTotalTodayNow"]) >= COUNT
    for found in (ours, java):
        # Java prints the 10 s, 60 s and 600 s rates once it has that much history.
        assert 1 <= len(found["putTps"].split()) <= 3 and all(float(value) >= 0 for value in found["putTps"].split())
    for found in (ours, java):
        # Java's histogram of the last whole minute: "null" during the broker's first minute.
        assert found["putMessageDistributeTime"] == "null" or found["putMessageDistributeTime"].count("[") == 13
    assert float(ours["commitLogDiskRatio"]) > 0


def test_consumer_progress_with_tps(sides):
    ours, java = _both(sides, "consumerProgress", "-g", GROUP)
    rows_ours = {int(row[2]): row[3:6] for row in _rows(ours, TOPIC)}
    rows_java = {int(row[2]): row[3:6] for row in _rows(java, TOPIC)}
    assert rows_ours == rows_java and len(rows_ours) == QUEUES
    tps = [re.search(r"Consume TPS: ([\d.]+)", printed) for printed in (ours, java)]
    assert all(tps), (ours, java)


def _consumer_status(side: Side) -> dict[int, int]:
    """INVOKE_BROKER_TO_GET_CONSUMER_STATUS as the admin API's getConsumeStatus sends it (the 4.9.8 mqadmin has
    no sub command for it): queue id -> the offset our online consumer reports through the broker."""
    header, body = wire.request(side.broker, 223, {"topic": TOPIC, "group": GROUP})
    assert header["code"] == 0, header
    table = codec.json_loads(body)["consumerTable"]
    [(client_id, queues)] = table.items()
    assert client_id.endswith(f"stats-{side.label}"), client_id
    return {queue.queue_id: offset for queue, offset in consumer_body.decode_queue_table(queues).items()}


def test_get_consumer_status(sides):
    ours, java = sides
    assert _consumer_status(ours) == _consumer_status(java) == {queue_id: COUNT // QUEUES
                                                                for queue_id in range(QUEUES)}


def _metric(text: str, name: str, **labels: str) -> float:
    from prometheus_client.parser import text_string_to_metric_families

    found = [sample.value for family in text_string_to_metric_families(text) for sample in family.samples
             if sample.name == name and all(sample.labels.get(key) == value for key, value in labels.items())]
    assert len(found) == 1, (name, labels, found)
    return found[0]


def test_metrics_port_follows_the_produce_and_consume_run(sides):
    ours, _ = sides
    topic = {"broker": "pystats", "topic": TOPIC}
    before = ours.metrics_after_produce
    assert _metric(before, "rocketmq_topic_put_messages_total", **topic) == COUNT
    assert _metric(before, "rocketmq_producer_offset", **topic) == COUNT
    after = ours.scrape()
    assert _metric(after, "rocketmq_topic_put_messages_total", **topic) == COUNT
    assert _metric(after, "rocketmq_group_get_messages_total", group=GROUP, **topic) == COUNT
    assert _metric(after, "rocketmq_consumer_offset", group=GROUP, **topic) == COUNT
    assert _metric(after, "rocketmq_group_diff", group=GROUP, topic=TOPIC, countOfOnlineConsumers="1") == 0
    assert _metric(after, "rocketmq_group_count", group=GROUP) == 1
    with urllib.request.urlopen(f"http://127.0.0.1:{ours.metrics_port}/health", timeout=30) as answer:
        assert answer.status == 200 and b'"registered": true' in answer.read()


def test_metrics_rates_are_the_traffic_over_the_minute_window(sides):
    ours, _ = sides
    topic = {"broker": "pystats", "topic": TOPIC}
    window, scraped = ours.put_window_and_metrics
    # The exporter's message rate is the window that holds exactly this test's messages ...
    assert window["sum"] == COUNT
    tps = _metric(scraped, "rocketmq_producer_tps", **topic)
    assert tps == pytest.approx(window["tps"]) and tps > 0
    # ... and its byte rate, over the same window, is that many messages' bytes: byte rate / message rate is the
    # traffic's bytes per message, whatever the window's length.
    bytes_per_message = _metric(scraped, "rocketmq_topic_put_bytes_total", **topic) / COUNT
    assert _metric(scraped, "rocketmq_producer_message_size", **topic) / tps == pytest.approx(bytes_per_message)
