"""A pipelined sender: keeps ``inflight`` requests outstanding on each of several connections to one broker,
so the broker, not the sender, is the limit. The broker capacity benchmark (benchmarks/broker/
pipelined_sender.py) measures with it; compat tests saturate a broker with :class:`PipelinedLoad`.

Request frames are encoded once with our codec (ROCKETMQ serialization, which both brokers answer in
kind) and written again and again; a response is recognised by its length prefix and its code read at a
fixed place (or found in a JSON header), so the sender spends a few microseconds per message.

    with PipelinedLoad(broker.addr, topic, connections=4, inflight=1024) as load:
        ...   # load.counters.busy: the SYSTEM_BUSY answers so far
"""
from __future__ import annotations

import asyncio
import itertools
import re
import threading
import time

from rocketmq_py import codec
from rocketmq_py.common.codes import RequestCode
from rocketmq_py.remoting import create_request

SEND_V2_FIELDS = {"a": "capacity_pg", "c": "TBW102", "d": "8", "f": "0", "h": "0", "j": "0", "k": "false",
                  "m": "false"}
SUCCESS = 0
SYSTEM_BUSY = 2
_JSON_CODE = re.compile(rb'"code":(-?\d+)')


def frame(code: int, fields: dict[str, str], body: bytes | None) -> bytes:
    """One request, encoded with ROCKETMQ serialization."""
    return codec.encode_command(create_request(code, fields, body, serialize_type=codec.SERIALIZE_ROCKETMQ))


def send_frames(topic: str, size: int, batch: int, queues: int) -> list[bytes]:
    """One SEND_MESSAGE_V2 (or SEND_BATCH_MESSAGE of ``batch`` messages) frame per queue."""
    frames = []
    for queue_id in range(queues):
        properties = {"WAIT": "true", "UNIQ_KEY": codec.UniqueIdGenerator(b"\x7f\x00\x00\x01").next_id()}
        fields = dict(SEND_V2_FIELDS, b=topic, e=str(queue_id), g=str(int(time.time() * 1000)),
                      i=codec.properties_to_string(properties))
        if batch > 1:
            body = codec.encode_batch([(0, b"b" * size, {"UNIQ_KEY": codec.UniqueIdGenerator(
                b"\x7f\x00\x00\x01").next_id()}) for _ in range(batch)])
            fields.update(i=codec.properties_to_string({"WAIT": "true"}), m="true")
            frames.append(frame(RequestCode.SEND_BATCH_MESSAGE, fields, body))
        else:
            frames.append(frame(RequestCode.SEND_MESSAGE_V2, fields, b"b" * size))
    return frames


class Counters:
    def __init__(self) -> None:
        self.messages = 0
        self.responses = 0
        self.busy = 0
        self.other = 0
        #: Response codes other than SUCCESS and SYSTEM_BUSY, with how often each came.
        self.other_codes: dict[int, int] = {}


class PipelinedConnection(asyncio.Protocol):
    def __init__(self, frames: list[bytes], inflight: int, per_ok: int, pulls: bool, counters: Counters) -> None:
        self._next = itertools.cycle(frames)
        self._inflight = inflight
        self._per_ok = per_ok
        self._pulls = pulls
        self._counters = counters
        self._buffer = bytearray()
        self.transport: asyncio.Transport | None = None
        self.stopped = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self._write(self._inflight)

    def _write(self, count: int) -> None:
        if count and not self.stopped:
            next_frame = self._next
            self.transport.write(b"".join([next(next_frame) for _ in range(count)]))

    def data_received(self, data: bytes) -> None:
        buffer = self._buffer
        buffer += data
        position = 0
        answered = 0
        counters = self._counters
        end = len(buffer)
        while end - position >= 4:
            length = int.from_bytes(buffer[position:position + 4], "big")
            if end - position - 4 < length:
                break
            header_field = int.from_bytes(buffer[position + 4:position + 8], "big")
            if header_field >> 24:
                code = int.from_bytes(buffer[position + 8:position + 10], "big")
            else:  # a JSON header: both brokers send their fast-failure refusals in their default serialization
                found = _JSON_CODE.search(buffer, position + 8, position + 8 + (header_field & 0xFFFFFF))
                code = int(found.group(1)) if found else -1
            if code == SUCCESS:
                if self._pulls:
                    body_start = position + 8 + (header_field & 0xFFFFFF)
                    body_length = position + 4 + length - body_start
                    if body_length >= 4:
                        record = int.from_bytes(buffer[body_start:body_start + 4], "big")
                        counters.messages += body_length // record
                else:
                    counters.messages += self._per_ok
            elif code == SYSTEM_BUSY:
                counters.busy += 1
            else:
                counters.other += 1
                counters.other_codes[code] = counters.other_codes.get(code, 0) + 1
            position += 4 + length
            answered += 1
        if position:
            del buffer[:position]
        counters.responses += answered
        self._write(answered)


def _new_event_loop() -> asyncio.AbstractEventLoop:
    """uvloop's when installed: the sender should cost the machine less than the broker it loads."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


class PipelinedLoad:
    """Single sends of ``size`` bytes to ``topic`` (queues 0..``queues``-1), ``inflight`` outstanding on each of
    ``connections`` connections, from an event loop in a thread of its own until :meth:`stop`."""

    def __init__(self, addr: str, topic: str, *, connections: int = 4, inflight: int = 1024, size: int = 1024,
                 queues: int = 8) -> None:
        self.addr = addr
        self.frames = send_frames(topic, size, 1, queues)
        self.connections = connections
        self.inflight = inflight
        self.counters = Counters()
        self._loop = _new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="pipelined-load", daemon=True)
        self._protocols: list[PipelinedConnection] = []

    async def _connect(self) -> None:
        host, port = self.addr.rsplit(":", 1)
        for _ in range(self.connections):
            _, protocol = await self._loop.create_connection(
                lambda: PipelinedConnection(self.frames, self.inflight, 1, False, self.counters), host, int(port))
            self._protocols.append(protocol)

    async def _close(self) -> None:
        for protocol in self._protocols:
            protocol.stopped = True
            if protocol.transport is not None:
                protocol.transport.close()

    def start(self) -> "PipelinedLoad":
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._connect(), self._loop).result(timeout=30)
        return self

    def stop(self) -> None:
        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(self._close(), self._loop).result(timeout=30)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=30)
        self._loop.close()

    def __enter__(self) -> "PipelinedLoad":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
