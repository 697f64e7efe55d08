"""One slave's connection on the master (Java's store/ha/HAConnection).

Two halves run side by side and the connection ends when either does:

* reading: the slave's reports, 8 bytes each; the last whole one read is the slave's acknowledged
  CommitLog end (the first one is where it asks the transfer to start). No report for
  ``haHousekeepingInterval`` closes the connection.
* transferring: from the requested offset (or, for an empty slave, from the start of the master's
  last CommitLog file), frames of at most ``haTransferBatchSize`` bytes, never across a file end;
  an empty frame when nothing was written for ``haSendHeartbeatInterval``.
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from rocketmq_py.store.ha.frames import REPORT, encode_transfer_header

if TYPE_CHECKING:
    from rocketmq_py.store.ha.service import HAService

_log = logging.getLogger(__name__)

READ_CHUNK = 64 * 1024
#: Longest pause of an idle transfer before it looks for new CommitLog data again (Java waits 100 ms).
IDLE_WAIT_S = 0.1


class HAConnection:
    def __init__(self, service: HAService, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.service = service
        self.reader = reader
        self.writer = writer
        peer = writer.get_extra_info("peername")
        self.remote_address = f"{peer[0]}:{peer[1]}" if peer else "?"
        #: Where the slave asked the transfer to start (its CommitLog end when it connected); -1 until known.
        self.slave_request_offset = -1
        #: The last CommitLog end the slave reported.
        self.slave_ack_offset = -1
        #: The next CommitLog offset this connection sends.
        self.next_transfer_from = -1
        self._request_known = asyncio.Event()
        self.data_arrived = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    async def run(self) -> None:
        """Serve the slave until either half ends (or :meth:`close`); never raises."""
        self._tasks = [asyncio.ensure_future(self._read_reports()), asyncio.ensure_future(self._transfer())]
        try:
            done, _ = await asyncio.wait(self._tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                if task.cancelled():
                    continue
                error = task.exception()
                if error is not None and not isinstance(error, (ConnectionError, asyncio.IncompleteReadError)):
                    _log.warning("HA connection of slave %s failed: %r", self.remote_address, error)
        finally:
            self.close()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            self.writer.close()
            _log.info("HA connection of slave %s closed (acknowledged up to %d)", self.remote_address,
                      self.slave_ack_offset)

    def close(self) -> None:
        for task in self._tasks:
            task.cancel()

    async def _read_reports(self) -> None:
        timeout_s = self.service.config.ha_housekeeping_interval / 1000
        pending = bytearray()
        while True:
            try:
                chunk = await asyncio.wait_for(self.reader.read(READ_CHUNK), timeout_s)
            except asyncio.TimeoutError:
                _log.warning("no report from slave %s for %.0f s: closing its HA connection", self.remote_address,
                             timeout_s)
                return
            if not chunk:
                return
            pending += chunk
            whole = len(pending) - len(pending) % REPORT.size
            if whole == 0:
                continue
            (offset,) = REPORT.unpack_from(pending, whole - REPORT.size)
            del pending[:whole]
            self.slave_ack_offset = offset
            if self.slave_request_offset < 0:
                self.slave_request_offset = offset
                self._request_known.set()
                _log.info("slave %s asks for the CommitLog from offset %d", self.remote_address, offset)
            self.service.notify_transfer_some(offset)

    def _start_offset(self) -> int:
        if self.slave_request_offset != 0:
            return self.slave_request_offset
        # An empty slave starts from the master's last file, not from the oldest data kept.
        commit_log = self.service.store.commit_log
        master_end = commit_log.max_offset
        return max(master_end - master_end % commit_log.file_size, 0)

    async def _transfer(self) -> None:
        await self._request_known.wait()
        config = self.service.config
        commit_log = self.service.store.commit_log
        self.next_transfer_from = self._start_offset()
        _log.info("transferring the CommitLog to slave %s from offset %d", self.remote_address,
                  self.next_transfer_from)
        heartbeat_s = config.ha_send_heartbeat_interval / 1000
        last_write = time.monotonic()
        while True:
            self.data_arrived.clear()
            data = commit_log.read_for_transfer(self.next_transfer_from, config.ha_transfer_batch_size)
            if data:
                self.writer.write(encode_transfer_header(self.next_transfer_from, len(data)))
                self.writer.write(data)
                self.next_transfer_from += len(data)
                await self.writer.drain()
                last_write = time.monotonic()
                continue
            if time.monotonic() - last_write > heartbeat_s:
                self.writer.write(encode_transfer_header(self.next_transfer_from, 0))
                await self.writer.drain()
                last_write = time.monotonic()
            try:
                await asyncio.wait_for(self.data_arrived.wait(), IDLE_WAIT_S)
            except asyncio.TimeoutError:
                pass
