"""A network partition between the members of a DLedger group, made with TCP relays on this machine.

Every directed link between two members gets its own relay: member A reaches member B's peer port through the
relay A→B, so each member's ``dLegerPeers`` names its own real port and, for every other member, the port of
its relay to that member (:meth:`LinkProxies.peers_of`). DLedger 0.3.1.2 (``DLedgerConfig.initSelfAddress``,
``DLedgerRpcNettyService``) and ours (``DLedgerConfig.self_address``, ``PeerTransport``) use their own entry
only to pick the port to listen on and the others' only to connect to, so the members need not agree on them.

``cut(member)`` blackholes every link to and from the member: bytes on open connections are read and dropped,
new connections are accepted and then never answered. That is what a partition looks like to a client, Java's
Netty one and ours alike: the connection stays up and no answer comes, so each request fails only at its
timeout (3 s), not at once as a refused connection would make it. ``heal()`` closes every connection that was
open during the cut (the bytes dropped there left its stream mid-frame; a client reconnects) and relays again.

    with LinkProxies({"n0": 40911, "n1": 40912, "n2": 40913}) as links:
        links.peers_of("n0")            # "n0-127.0.0.1:40911;n1-127.0.0.1:<relay n0→n1>;n2-127.0.0.1:<relay n0→n2>"
        links.cut("n2")
        links.heal()
"""
from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

HOST = "127.0.0.1"
_CHUNK = 64 * 1024

_T = TypeVar("_T")


@dataclass(eq=False)  # compared and hashed by identity, as members of a set
class _Connection:
    link: tuple[str, str]
    task: asyncio.Task[Any] | None
    writers: list[asyncio.StreamWriter] = field(default_factory=list)
    #: Open while its link was cut: it drops every byte until heal() closes it.
    blackholed: bool = False


class LinkProxies:
    def __init__(self, ports: dict[str, int]) -> None:
        """``ports``: member id -> the member's own peer port."""
        self.ports = dict(ports)
        self.relay_ports: dict[tuple[str, str], int] = {}
        self._cut: set[str] = set()
        self._connections: set[_Connection] = set()
        self._servers: list[asyncio.Server] = []
        self._accepted: dict[tuple[str, str], int] = {}
        self._accepted_changed = threading.Condition()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="link-proxies", daemon=True)

    def start(self) -> LinkProxies:
        self._thread.start()
        self._run(self._listen())
        return self

    def close(self) -> None:
        if not self._thread.is_alive():
            return
        self._run(self._close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    def __enter__(self) -> LinkProxies:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def peers_of(self, member: str) -> str:
        """The ``dLegerPeers`` of ``member``: its own port, and its relay to each other member."""
        return ";".join(f"{other}-{HOST}:{port if other == member else self.relay_ports[(member, other)]}"
                        for other, port in self.ports.items())

    def wait_accepted(self, source: str, target: str, count: int, deadline_s: float = 60.0) -> None:
        """Block until the relay ``source``→``target`` has taken ``count`` connections since it started (a
        client's connect returns before the relay takes the connection up)."""
        with self._accepted_changed:
            assert self._accepted_changed.wait_for(lambda: self._accepted.get((source, target), 0) >= count,
                                                   deadline_s), f"{source}→{target}: {self._accepted}"

    def cut(self, member: str) -> None:
        self._run(self._set_cut(member))

    def heal(self) -> None:
        self._run(self._heal())

    # --- in the relays' loop ------------------------------------------------------------------------

    def _run(self, coroutine: Coroutine[Any, Any, _T]) -> _T:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    def _is_cut(self, link: tuple[str, str]) -> bool:
        return link[0] in self._cut or link[1] in self._cut

    async def _listen(self) -> None:
        for source in self.ports:
            for target in self.ports:
                if source != target:
                    link = (source, target)
                    server = await asyncio.start_server(functools.partial(self._relay, link), HOST, 0)
                    self._servers.append(server)
                    self.relay_ports[link] = server.sockets[0].getsockname()[1]

    async def _set_cut(self, member: str) -> None:
        self._cut.add(member)
        for connection in self._connections:
            if self._is_cut(connection.link):
                connection.blackholed = True

    async def _heal(self) -> None:
        self._cut.clear()
        for connection in [c for c in self._connections if c.blackholed]:
            for writer in connection.writers:
                writer.close()

    async def _close(self) -> None:
        for server in self._servers:
            server.close()
        tasks = [connection.task for connection in self._connections if connection.task is not None]
        for connection in self._connections:
            for writer in connection.writers:
                writer.close()  # its reader then ends, and so does the relay's task
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _relay(self, link: tuple[str, str], reader: asyncio.StreamReader,
                     writer: asyncio.StreamWriter) -> None:
        connection = _Connection(link, asyncio.current_task(), [writer],
                                 blackholed=self._is_cut(link))
        self._connections.add(connection)
        with self._accepted_changed:
            self._accepted[link] = self._accepted.get(link, 0) + 1
            self._accepted_changed.notify_all()
        try:
            if connection.blackholed:
                # A new connection across the cut: accepted, never answered.
                await self._pump(connection, reader, None)
                return
            try:
                target_reader, target_writer = await asyncio.open_connection(HOST, self.ports[link[1]])
            except OSError:
                return  # the member is down: the connection closes, as a refused one would
            connection.writers.append(target_writer)
            await asyncio.gather(self._pump(connection, reader, target_writer),
                                 self._pump(connection, target_reader, writer))
        finally:
            self._connections.discard(connection)
            for each in connection.writers:
                each.close()

    @staticmethod
    async def _pump(connection: _Connection, reader: asyncio.StreamReader,
                    writer: asyncio.StreamWriter | None) -> None:
        """Copy ``reader`` to ``writer`` until either side closes; drop the bytes while blackholed."""
        try:
            while data := await reader.read(_CHUNK):
                if connection.blackholed or writer is None:
                    continue
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            for each in connection.writers:
                each.close()
