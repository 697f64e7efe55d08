"""Ports for the servers the hermetic tests start (compat-tests/harness/processes.py has its suite's own).

A port from ``bind((host, 0))`` comes from the kernel's ephemeral range, the range every outgoing connection on
the machine also takes its local port from: between the probe's close and the server's bind, a client socket of
another test, or of another suite running beside this one, can take it. With two CI runs side by side a DLedger
member failed so ("error while attempting to bind on address ('0.0.0.0', 44497): address already in use"). Ports
are therefore picked at random below that range, checked free on every interface, and never handed out twice by
one process.
"""
from __future__ import annotations

import os
import random
import socket
import threading
import time
from pathlib import Path

_handed_out: set[int] = set()
_lock = threading.Lock()
_random = random.Random(os.getpid() ^ time.monotonic_ns())


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _free_everywhere(port: int) -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


def free_ports(count: int = 1) -> int:
    """The first of ``count`` consecutive ports, each free on every interface."""
    high = _ephemeral_low() - count
    low = 20000 if high > 21000 else 10000
    with _lock:
        for _ in range(2000):
            first = _random.randint(low, high)
            ports = range(first, first + count)
            if any(port in _handed_out for port in ports) or not all(_free_everywhere(port) for port in ports):
                continue
            _handed_out.update(ports)
            return first
    raise RuntimeError(f"no {count} free consecutive port(s) below the ephemeral range")


def free_port() -> int:
    return free_ports(1)


def free_broker_port() -> int:
    """A listenPort P for a broker, with P and P + 1 (its HA port) free."""
    return free_ports(2)
