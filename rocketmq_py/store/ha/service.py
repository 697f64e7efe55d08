"""The master's side of replication (Java's store/ha/HAService with its AcceptSocketService and
GroupTransferService).

Listens on ``haListenPort`` for slaves; each gets an :class:`HAConnection`. ``push2slave_max_offset``
is the highest CommitLog end any slave acknowledged; a SYNC_MASTER put waits until it covers the
put (FLUSH_SLAVE_TIMEOUT after ``slaveTimeout``), or is answered SLAVE_NOT_AVAILABLE at once
when no slave is connected or the slaves lag more than ``haSlaveFallbehindMax``.
"""
from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
import time
from typing import TYPE_CHECKING

from rocketmq_py.store.ha.connection import HAConnection
from rocketmq_py.store.results import Arrival, PutMessageResult, PutMessageStatus

if TYPE_CHECKING:
    from rocketmq_py.store.message_store import MessageStore

_log = logging.getLogger(__name__)

_WAITING_STATUSES = (PutMessageStatus.PUT_OK, PutMessageStatus.FLUSH_DISK_TIMEOUT)
#: A repeated timeout is logged at most once per this many seconds, with how many were not logged.
LOG_EVERY_S = 10.0


class HAService:
    def __init__(self, store: MessageStore, host: str, port: int) -> None:
        self.store = store
        self.config = store.config
        self.host = host
        self.port = port
        self.connections: set[HAConnection] = set()
        self.push2slave_max_offset = 0
        self._waiters: list[tuple[int, int, asyncio.Future[bool]]] = []
        self._sequence = itertools.count()
        self._server: asyncio.AbstractServer | None = None
        self._handlers: set[asyncio.Task[None]] = set()
        self._last_timeout_log = 0.0
        self._timeouts_not_logged = 0

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, self.host, self.port, reuse_address=True)
        self.port = self._server.sockets[0].getsockname()[1]
        self.store.add_arrival_listener(self._on_messages_arrived)
        _log.info("HA service listening for slaves on %s:%d", self.host, self.port)

    async def shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        for connection in list(self.connections):
            connection.close()
        await asyncio.gather(*self._handlers, return_exceptions=True)
        for _, _, future in self._waiters:
            if not future.done():
                future.cancel()
        self._waiters.clear()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connection = HAConnection(self, reader, writer)
        _log.info("slave %s connected to the HA service", connection.remote_address)
        self.connections.add(connection)
        handler = asyncio.current_task()
        if handler is not None:
            self._handlers.add(handler)
        try:
            await connection.run()
        except asyncio.CancelledError:
            # The top of this connection's task: asyncio's stream callback logs a cancelled handler as an error.
            pass
        finally:
            self.connections.discard(connection)
            if handler is not None:
                self._handlers.discard(handler)

    def _on_messages_arrived(self, _arrivals: list[Arrival]) -> None:
        for connection in self.connections:
            connection.data_arrived.set()

    # --- acknowledgments ------------------------------------------------------------------------

    def notify_transfer_some(self, offset: int) -> None:
        """A slave acknowledged the CommitLog up to ``offset``: release the puts it covers."""
        if offset <= self.push2slave_max_offset:
            return
        self.push2slave_max_offset = offset
        while self._waiters and self._waiters[0][0] <= offset:
            _, _, future = heapq.heappop(self._waiters)
            if not future.done():
                future.set_result(True)

    @property
    def connection_count(self) -> int:
        return len(self.connections)

    def is_slave_ok(self, master_put_where: int) -> bool:
        return (self.connection_count > 0
                and master_put_where - self.push2slave_max_offset < self.config.ha_slave_fallbehind_max)

    def slave_fall_behind(self) -> int:
        """How many CommitLog bytes the slaves still miss (Java's slaveFallBehindMuch)."""
        return self.store.commit_log.max_offset - self.push2slave_max_offset

    async def wait_for_replica(self, result: PutMessageResult) -> PutMessageResult:
        """Answer a SYNC_MASTER put once a slave acknowledged it (the put is stored either way)."""
        append = result.append_result
        if append is not None:
            result.status = await self.replicated(result.status, append.wrote_offset + append.wrote_bytes)
        return result

    async def replicated(self, status: PutMessageStatus, end: int) -> PutMessageStatus:
        """The status of a stored SYNC_MASTER put that ends at CommitLog offset ``end``, once a slave has it:
        ``status`` itself, SLAVE_NOT_AVAILABLE or FLUSH_SLAVE_TIMEOUT."""
        if status not in _WAITING_STATUSES:
            return status
        if not self.is_slave_ok(end):
            return PutMessageStatus.SLAVE_NOT_AVAILABLE
        if self.push2slave_max_offset >= end:
            return status
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        entry = (end, next(self._sequence), future)
        heapq.heappush(self._waiters, entry)
        try:
            await asyncio.wait_for(future, self.config.slave_timeout / 1000)
        except asyncio.TimeoutError:
            self._log_timeout(end)
            status = PutMessageStatus.FLUSH_SLAVE_TIMEOUT
            try:
                self._waiters.remove(entry)
                heapq.heapify(self._waiters)
            except ValueError:
                pass
        return status

    def _log_timeout(self, end: int) -> None:
        now = time.monotonic()
        if now - self._last_timeout_log < LOG_EVERY_S:
            self._timeouts_not_logged += 1
            return
        _log.warning("no slave acknowledged offset %d within slaveTimeout %d ms (%d more such puts since the "
                     "last report)", end, self.config.slave_timeout, self._timeouts_not_logged)
        self._last_timeout_log = now
        self._timeouts_not_logged = 0
