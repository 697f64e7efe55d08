"""The slave's side of replication (Java's store/ha/HAService.HAClient).

Connects to the master's HA address (``haMasterAddress``, or the one the name server answers a
registration with), reports its CommitLog end at once, after every read that added data and every
``haSendHeartbeatInterval``, and appends each frame at exactly the offset the master names; the
records are then dispatched to this store's ConsumeQueues and index. A frame whose offset is not
this CommitLog's end, bytes that cannot be appended there, or ``haHousekeepingInterval`` without a
frame close the connection; the client connects again (after 5 s when connecting fails).
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from rocketmq_py.store.ha.frames import TRANSFER_HEADER, encode_report

if TYPE_CHECKING:
    from rocketmq_py.store.message_store import MessageStore

_log = logging.getLogger(__name__)

READ_CHUNK = 1024 * 1024
CONNECT_TIMEOUT_S = 3.0
RETRY_AFTER_FAILURE_S = 5.0
#: How often the loop wakes to report and check the master's silence when no frame comes.
POLL_S = 1.0


class HAProtocolError(Exception):
    """The master's stream does not continue this CommitLog."""


class HAClient:
    def __init__(self, store: MessageStore) -> None:
        self.store = store
        self.config = store.config
        self.master_address = self.config.ha_master_address or ""
        #: Bytes this slave has appended since it started (replication progress, for the runtime info).
        self.received_bytes = 0
        self.connected = False
        self._dispatched_to = -1
        self._address_changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._last_failure_log = ""

    def start(self) -> None:
        self._dispatched_to = self.store.commit_log.max_offset
        self._task = asyncio.get_running_loop().create_task(self._run(), name="ha-client")

    async def shutdown(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    def update_master_address(self, address: str | None) -> None:
        """Follow the master's HA address (from the name server); a change drops the current connection."""
        if not address or address == self.master_address:
            return
        _log.info("the master's HA address is now %s (was %s)", address, self.master_address or "unknown")
        self.master_address = address
        if self._writer is not None:
            self._writer.close()
        self._address_changed.set()

    # --- the connection loop -------------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            address = self.master_address
            if not address:
                await self._wait_for_address(RETRY_AFTER_FAILURE_S)
                continue
            try:
                host, _, port = address.rpartition(":")
                reader, writer = await asyncio.wait_for(asyncio.open_connection(host, int(port)), CONNECT_TIMEOUT_S)
            except (OSError, ValueError, asyncio.TimeoutError) as error:
                self._log_failure(f"connecting to the master's HA address {address} failed: {error!r}")
                await self._wait_for_address(RETRY_AFTER_FAILURE_S)
                continue
            self._writer = writer
            self.connected = True
            self._last_failure_log = ""
            _log.info("connected to the master's HA address %s; CommitLog ends at %d", address,
                      self.store.commit_log.max_offset)
            try:
                await self._replicate(reader, writer)
            except (OSError, HAProtocolError, asyncio.IncompleteReadError) as error:
                _log.warning("replication from %s stopped: %s", address, error)
            finally:
                self.connected = False
                self._writer = None
                writer.close()

    async def _wait_for_address(self, timeout_s: float) -> None:
        self._address_changed.clear()
        try:
            await asyncio.wait_for(self._address_changed.wait(), timeout_s)
        except asyncio.TimeoutError:
            pass

    def _log_failure(self, text: str) -> None:
        if text != self._last_failure_log:  # one line per new failure, not one every retry
            _log.warning("%s", text)
            self._last_failure_log = text

    async def _replicate(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        commit_log = self.store.commit_log
        heartbeat_s = self.config.ha_send_heartbeat_interval / 1000
        silence_s = self.config.ha_housekeeping_interval / 1000
        reported = commit_log.max_offset
        writer.write(encode_report(reported))
        await writer.drain()
        last_report = last_read = time.monotonic()
        pending = bytearray()
        while True:
            try:
                chunk = await asyncio.wait_for(reader.read(READ_CHUNK), POLL_S)
            except asyncio.TimeoutError:
                chunk = None
            now = time.monotonic()
            if chunk is not None:
                if not chunk:
                    raise HAProtocolError("the master closed the connection")
                last_read = now
                pending += chunk
                self._apply_frames(pending)
            elif now - last_read > silence_s:
                raise HAProtocolError(f"no frame from the master for {silence_s:.0f} s")
            end = commit_log.max_offset
            if end > reported or now - last_report > heartbeat_s:
                writer.write(encode_report(end))
                await writer.drain()
                reported, last_report = end, now

    def _apply_frames(self, pending: bytearray) -> None:
        commit_log = self.store.commit_log
        position = 0
        while len(pending) - position >= TRANSFER_HEADER.size:
            master_offset, size = TRANSFER_HEADER.unpack_from(pending, position)
            slave_end = commit_log.max_offset
            if slave_end != 0 and slave_end != master_offset:
                raise HAProtocolError(f"the master sends offset {master_offset} but this CommitLog ends at "
                                      f"{slave_end}")
            if size < 0:
                raise HAProtocolError(f"the master sent a frame of negative size {size}")
            body_start = position + TRANSFER_HEADER.size
            if len(pending) - body_start < size:
                break
            if size:
                if not commit_log.append_data(master_offset, bytes(pending[body_start:body_start + size])):
                    raise HAProtocolError(f"{size} bytes from the master do not fit at offset {master_offset}")
                self.received_bytes += size
                self._dispatch()
            position = body_start + size
        del pending[:position]

    def _dispatch(self) -> None:
        start = max(self._dispatched_to, self.store.commit_log.min_offset)
        self._dispatched_to = self.store.dispatch_from(start)
