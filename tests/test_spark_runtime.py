"""The Spark source's one event loop per process (issue 14), without Spark.

Regressions of two failures: ``startingTimestamp`` building an ``asyncio.gather`` outside the loop
that ran it ("The future belongs to a different loop"), and the flaky route lookup that got "the
connection closed before the response arrived" from a name server that had closed an idle
connection while the driver's loop was not running.
"""
from __future__ import annotations

import asyncio
import os
import threading
import time

import pytest

from rocketmq_py.errors import RemotingSendRequestError
from rocketmq_py.remoting import RemotingClient, RemotingServer, RemotingServerConfig, create_request
from rocketmq_py.remoting.blocking import BackgroundLoop
from rocketmq_py.spark import runtime
from rocketmq_py.spark.client import Session
from rocketmq_py.spark.options import ClientSettings
from rocketmq_py.spark.planning import QueueBounds

from support.remoting import ECHO, ServerState, build_processors

IDLE_S = 0.3


@pytest.fixture
def idle_closing_server():
    """A server that closes a connection idle for IDLE_S, as the Java name server does after 120 s."""
    background = BackgroundLoop(name="idle-closing-server")

    async def start() -> RemotingServer:
        server = RemotingServer(processors=build_processors(ServerState()),
                                config=RemotingServerConfig(server_channel_max_idle_time_seconds=IDLE_S,
                                                            shutdown_timeout_seconds=2.0))
        await server.start()
        return server

    server = background.run(start())
    yield server
    background.run(server.shutdown())
    background.close()


def _echo(session_or_loop, client: RemotingClient, addr: str, text: str) -> str:
    response = session_or_loop(client.invoke(addr, create_request(ECHO, remark=text), 5000))
    return response.remark


def _wait_past_idle_close() -> None:
    time.sleep(IDLE_S * 5)  # the server's idle check has closed the connection by now


def test_a_connection_the_server_closed_between_calls_is_replaced(idle_closing_server):
    """The root cause of the flaky route lookup, and its fix.

    The source used to run its coroutines with ``run_until_complete`` on a private loop: between two
    calls nothing ran that loop, so the server's close went unnoticed, the next call wrote into the
    dead connection and failed with "the connection closed before the response arrived". The process
    loop runs all the time, sees the close when it happens, and the next call connects again.
    """
    session = Session(ClientSettings(namesrv_addr=idle_closing_server.address))
    try:
        assert _echo(session.run, session.remoting, idle_closing_server.address, "one") == "one"
        _wait_past_idle_close()
        assert session.remoting.connection(idle_closing_server.address) is None, "the close was seen"
        assert _echo(session.run, session.remoting, idle_closing_server.address, "two") == "two"
    finally:
        session.close()


def test_the_old_pattern_a_loop_run_only_during_calls_fails_on_the_closed_connection(idle_closing_server):
    """What the driver did before: the same sequence on a loop run only during calls fails."""
    loop = asyncio.new_event_loop()
    try:
        client = loop.run_until_complete(_made_client())
        assert _echo(loop.run_until_complete, client, idle_closing_server.address, "one") == "one"
        _wait_past_idle_close()
        with pytest.raises(RemotingSendRequestError, match="closed"):
            _echo(loop.run_until_complete, client, idle_closing_server.address, "two")
        loop.run_until_complete(client.shutdown())
    finally:
        loop.close()


async def _made_client() -> RemotingClient:
    return RemotingClient()


def test_offsets_for_timestamp_runs_on_the_process_loop_and_corrects_the_nearest_answer(idle_closing_server):
    """startingTimestamp's per-queue look-ups are gathered inside the coroutine, so on the loop that runs
    them; the broker's nearest-offset answer (either side, as Java's ConsumeQueue.getOffsetInQueueByTime)
    becomes the first offset stored at or after the time."""
    session = Session(ClientSettings(namesrv_addr=idle_closing_server.address))
    seen = []

    async def search_offset(addr, mq, timestamp_ms):  # nearest, as the broker answers: sometimes one early
        seen.append(asyncio.get_running_loop())
        return min(99, timestamp_ms // 10 - (mq.queue_id % 2))

    async def store_times(queue, offset, count):  # message n stored at 10 * n
        await asyncio.sleep(0)
        return [(n, 10 * n) for n in range(offset, min(offset + count, queue.max_offset))]

    session.api.search_offset = search_offset
    session._store_times = store_times
    bounds = [QueueBounds("T", "b", "127.0.0.1:1", qid, 0, 100) for qid in range(4)]
    try:
        assert session.offsets_for_timestamp(bounds, 55) == {("T", "b", qid): 6 for qid in range(4)}
        assert session.offsets_for_timestamp(bounds, 60) == {("T", "b", qid): 6 for qid in range(4)}
        assert session.offsets_for_timestamp(bounds, 0) == {("T", "b", qid): 0 for qid in range(4)}
        assert session.offsets_for_timestamp(bounds, 5000) == {("T", "b", qid): 100 for qid in range(4)}
        assert seen and all(loop is runtime.process_loop().loop for loop in seen)
    finally:
        session.close()


# The fork is the point: PySpark forks its Python workers from a process whose loop thread may be running, and the
# child must make its own loop. Python 3.12+ warns of any fork in a process with threads; the child here only
# starts a loop and writes one byte.
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded, use of fork:DeprecationWarning")
def test_one_loop_per_process_and_a_new_one_after_fork():
    first = runtime.process_loop()
    assert runtime.process_loop() is first
    assert runtime.run(_thread_name()) == "rocketmq-py-spark"
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the parent's loop thread did not survive the fork
        try:
            child = runtime.process_loop()
            ok = child is not first and runtime.run(_thread_name()) == "rocketmq-py-spark"
            os.write(write, b"1" if ok else b"0")
        finally:
            os._exit(0)
    os.close(write)
    assert os.read(read, 1) == b"1"
    os.waitpid(pid, 0)
    os.close(read)


async def _thread_name() -> str:
    return threading.current_thread().name


def test_the_sink_sends_a_batch_again_when_the_broker_is_busy(monkeypatch):
    """SYSTEM_BUSY (the broker's flow control) drops a request unread: sending again adds no duplicate,
    where failing the task would make Spark send the task's earlier batches twice."""
    from rocketmq_py.common.message import Message
    from rocketmq_py.errors import SystemBusyError
    from rocketmq_py.spark import sink

    monkeypatch.setattr(sink, "BUSY_RETRY_DELAYS_S", (0.01, 0.01))

    class Busy:
        def __init__(self, refusals: int) -> None:
            self.refusals, self.stored = refusals, []

        async def send(self, message, queue=None):
            if self.refusals:
                self.refusals -= 1
                raise SystemBusyError("[TIMEOUT_CLEAN_QUEUE]broker busy")
            self.stored.extend(message if isinstance(message, list) else [message])

    options = sink.SinkOptions(client=ClientSettings(namesrv_addr="127.0.0.1:1"), topic="T")
    messages = [Message("T", f"m{i}".encode()) for i in range(3)]

    async def send_all(producer) -> None:
        sender = sink._Sender(producer, options)
        await sender.add(messages, None)
        await sender.finish()

    patient = Busy(refusals=2)
    runtime.run(send_all(patient))
    assert [m.body for m in patient.stored] == [b"m0", b"m1", b"m2"]
    with pytest.raises(RuntimeError, match="SystemBusyError"):
        runtime.run(send_all(Busy(refusals=10)))


def test_producers_of_other_settings_get_client_instances_of_their_own(monkeypatch):
    """A plain and a TLS sink in one worker both use group SPARK_WRITER: one client instance takes a group once."""
    from rocketmq_py.spark import sink

    made = []

    class Recorded:
        def __init__(self, options, instance_name):
            self.pid = os.getpid()
            made.append(instance_name)

    monkeypatch.setattr(sink, "_Producer", Recorded)
    monkeypatch.setattr(sink, "_PRODUCERS", {})
    plain = sink.SinkOptions(client=ClientSettings(namesrv_addr="127.0.0.1:1"), topic="T")
    tls = sink.SinkOptions(client=ClientSettings(namesrv_addr="127.0.0.1:1", use_tls=True), topic="T")
    assert sink.producer_for(plain) is sink.producer_for(plain)
    sink.producer_for(tls)
    assert len(made) == 2 and len(set(made)) == 2
