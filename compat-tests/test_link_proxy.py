"""The harness's partition relays (``harness.link_proxy``): a cut link relays nothing and a heal restores it.

No Java process: two echo servers stand for the members.
"""
from __future__ import annotations

import socket
import threading

import pytest

from harness.link_proxy import LinkProxies


class _EchoServer:
    """Echoes every connection, and records what each connection received once it has closed."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.received: list[bytes] = []
        self.changed = threading.Condition()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._echo, args=(connection,), daemon=True).start()

    def _echo(self, connection: socket.socket) -> None:
        got = b""
        with connection:
            while data := connection.recv(4096):
                got += data
                connection.sendall(data)
        with self.changed:
            self.received.append(got)
            self.changed.notify_all()

    def wait_closed(self, count: int) -> list[bytes]:
        with self.changed:
            assert self.changed.wait_for(lambda: len(self.received) >= count, 60)
            return list(self.received)


@pytest.fixture
def members():
    servers = {"a": _EchoServer(), "b": _EchoServer()}
    with LinkProxies({member: server.port for member, server in servers.items()}) as links:
        yield links, servers
    for server in servers.values():
        server.listener.close()


def _connect(links: LinkProxies, source: str, target: str) -> socket.socket:
    return socket.create_connection(("127.0.0.1", links.relay_ports[(source, target)]), timeout=60)


def test_each_member_names_its_own_port_and_its_relays_to_the_others(members):
    links, servers = members
    assert links.peers_of("a") == f"a-127.0.0.1:{servers['a'].port};b-127.0.0.1:{links.relay_ports[('a', 'b')]}"
    assert links.peers_of("b") == f"a-127.0.0.1:{links.relay_ports[('b', 'a')]};b-127.0.0.1:{servers['b'].port}"


def test_a_cut_drops_the_bytes_of_open_and_new_connections_and_a_heal_closes_them_and_relays_again(members):
    links, servers = members
    open_before = _connect(links, "a", "b")
    open_before.sendall(b"before")
    assert open_before.recv(6) == b"before"

    links.cut("b")
    open_before.sendall(b"during")
    new_during = _connect(links, "b", "a")  # accepted by the relay, never relayed
    new_during.sendall(b"during")
    links.wait_accepted("b", "a", 1)
    links.heal()

    # The heal closed both: the one open across the cut reached b with only what came before the cut.
    assert open_before.recv(100) == b""
    assert new_during.recv(100) == b""
    assert servers["b"].wait_closed(1) == [b"before"]
    assert servers["a"].received == []

    after = _connect(links, "b", "a")
    after.sendall(b"after")
    assert after.recv(5) == b"after"
    for connection in (open_before, new_during, after):
        connection.close()
    assert servers["a"].wait_closed(1) == [b"after"]
