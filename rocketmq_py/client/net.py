"""The local IP a client puts in its client id and message ids (Java's RemotingUtil.getLocalAddress).

Interface addresses come from netifaces when it is installed. As Java does,
an IPv4 address that is neither loopback nor 192.168.x is preferred, then any
other non-loopback IPv4 address, then a non-loopback IPv6 address.
"""
from __future__ import annotations

import ipaddress
import socket
from functools import lru_cache


def _interface_addresses() -> list[str]:
    try:
        import netifaces
    except ImportError:
        return _addresses_without_netifaces()
    found = []
    for name in netifaces.interfaces():
        entries = netifaces.ifaddresses(name)
        for family in (netifaces.AF_INET, netifaces.AF_INET6):
            for entry in entries.get(family, ()):
                addr = entry.get("addr", "").split("%")[0]
                if addr:
                    found.append(addr)
    return found


def _addresses_without_netifaces() -> list[str]:
    found = []
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("192.0.2.1", 9))  # no packet is sent; this only picks the outgoing interface
            found.append(probe.getsockname()[0])
    except OSError:
        pass
    try:
        found.extend(info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None))
    except OSError:
        pass
    return found


def choose_local_address(addresses: list[str]) -> str:
    v4_preferred: list[str] = []
    v4_other: list[str] = []
    v6: list[str] = []
    for text in addresses:
        try:
            ip = ipaddress.ip_address(text)
        except ValueError:
            continue
        if ip.is_loopback or ip.is_link_local or ip.is_unspecified:
            continue
        if ip.version == 4:
            (v4_other if text.startswith("192.168") else v4_preferred).append(text)
        else:
            v6.append(text)
    for group in (v4_preferred, v4_other, v6):
        if group:
            return group[0]
    return "127.0.0.1"


@lru_cache(maxsize=1)
def local_address() -> str:
    return choose_local_address(_interface_addresses())


def ip_bytes(text: str) -> bytes:
    return ipaddress.ip_address(text).packed
