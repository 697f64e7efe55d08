"""Which client addresses an ACL address pattern admits (Java's acl/plain/RemoteAddressStrategyFactory and the
address helpers of acl/common/AclUtils, rocketmq-all-4.9.8).

Patterns, as Java reads them:

* blank: admits nobody; ``*``, ``*.*.*.*`` or ``*:*:*:*:*:*:*:*``: admits everybody;
* one address, IPv4 or IPv6 (``::1`` and ``0:0:0:0:0:0:0:1`` are the same);
* a list: ``192.168.0.{1,2}``, ``1:2:3:4:5:6:7:{1,2}`` or ``192.168.0.1,192.168.0.2``;
* a range in one part: ``192.168.1.1-200``, ``192.168.*.*``, ``10.1-5.*.*``, ``1:2:3:4:5:6:7:1-ff``,
  ``1:2:3:4:5:6:7:*``; the parts after the range or ``*`` are not compared.

A pattern that cannot be read raises :class:`AclError` when it is loaded, never when a request is checked.
"""
from __future__ import annotations

import ipaddress
from typing import Protocol

from rocketmq_py.acl.errors import AclError

__all__ = ["AddressPattern", "address_pattern", "expand_ip", "is_ipv4", "is_ipv6"]


class AddressPattern(Protocol):
    def match(self, ip: str) -> bool:
        """Whether the client at ``ip`` (no port) is admitted."""


def is_ipv4(text: str | None) -> bool:
    try:
        ipaddress.IPv4Address(text)
    except (ipaddress.AddressValueError, ValueError, TypeError):
        return False
    return True


def is_ipv6(text: str | None) -> bool:
    try:
        ipaddress.IPv6Address(text)
    except (ipaddress.AddressValueError, ValueError, TypeError):
        return False
    return True


def _split(text: str, separator: str) -> list[str]:
    # commons-lang StringUtils.split: adjacent separators make no empty parts.
    return [part for part in text.split(separator) if part]


def expand_ip(address: str, parts: int) -> str:
    """``address`` upper-cased, ``::`` widened to ``parts`` groups and every group padded to 4 digits.

    IPv6 addresses compare as these strings; an IPv4 address comes back unchanged.
    """
    address = address.upper()
    missing = parts - address.count(":")
    if missing > 0:
        address = address.replace("::", ":" * (missing + 1))
    return ":".join(group.rjust(4, "0") for group in address.split(":"))


class _Nobody:
    def match(self, ip: str) -> bool:
        return False

    def __repr__(self) -> str:
        return "<admits nobody>"


class _Everybody:
    def match(self, ip: str) -> bool:
        return True

    def __repr__(self) -> str:
        return "<admits everybody>"


NOBODY = _Nobody()
EVERYBODY = _Everybody()


class _OneAddress:
    def __init__(self, address: str) -> None:
        if not (is_ipv4(address) or is_ipv6(address)):
            raise AclError(f"Netaddress examine Exception netaddress is {address}")
        self._expanded = expand_ip(address, 8)

    def match(self, ip: str) -> bool:
        return expand_ip(ip, 8) == self._expanded


class _AddressList:
    def __init__(self, addresses: list[str]) -> None:
        self._addresses: set[str] = set()
        for address in addresses:
            if is_ipv4(address):
                self._addresses.add(address)
            elif is_ipv6(address):
                self._addresses.add(expand_ip(address, 8))
            else:
                raise AclError(f"Netaddress examine Exception netaddress is {address}")

    def match(self, ip: str) -> bool:
        return (expand_ip(ip, 8) if is_ipv6(ip) else ip) in self._addresses


def _in_scope(text: str, count: int) -> bool:
    """Whether the first ``count`` parts of ``text`` are valid numbers (0..255, or 0..ffff for IPv6)."""
    try:
        if ":" in text:
            return all(0 <= int(part, 16) <= 0xFFFF for part in _split(expand_ip(text, 8), ":")[:count])
        parts = _split(text, ".")
        return len(parts) == 4 and all(0 <= int(part.strip()) <= 255 for part in parts[:count])
    except ValueError:
        return False


class _Range:
    """One part of the address is a range (``a-b``) or ``*``; the parts before it must equal the pattern's."""

    def __init__(self, pattern: str) -> None:
        self._start = self._end = self._index = 0
        self._head: str | None = None
        try:
            if ":" in pattern:
                self._read_ipv6(pattern)
            else:
                self._read_ipv4(pattern)
        except (ValueError, IndexError) as error:
            raise AclError(f"Netaddress examine scope Exception netaddress is {pattern}: {error}") from None
        if self._head is None:
            raise AclError(f"Netaddress examine scope Exception netaddress is {pattern}: no range part found")

    def _read_ipv4(self, pattern: str) -> None:
        parts = _split(pattern, ".")
        if any(self._read_part(parts, index, 255, 10) for index in (1, 2, 3)):
            if not _in_scope(pattern, self._index - 1):
                raise AclError(f"Netaddress examine scope Exception netaddress is {pattern}")
            self._head = "".join(part.strip() + "." for part in parts[:self._index])

    def _read_ipv6(self, pattern: str) -> None:
        asterisk, minus = pattern.find("*"), pattern.find("-")
        if asterisk > -1 and asterisk != len(pattern) - 1:
            raise AclError(f"Netaddress examine scope Exception netaddress is {pattern}")
        if minus > -1:
            last_colon = pattern.rfind(":")
            limit = last_colon if asterisk == -1 else pattern.rfind(":", 0, last_colon)
            if minus <= limit:
                raise AclError(f"Netaddress examine scope Exception netaddress is {pattern}")
        parts = _split(pattern, ":")
        for index in range(1, len(parts)):
            if self._read_part(parts, index, 0xFFFF, 16):
                if not _in_scope(pattern, self._index - 1):
                    raise AclError(f"Netaddress examine scope Exception netaddress is {pattern}")
                head = _fixed_groups(pattern)
                self._index = len(_split(head, ":"))
                self._head = head
                return

    def _read_part(self, parts: list[str], index: int, top: int, base: int) -> bool:
        value = parts[index].strip()
        self._index = index
        if value == "*":
            self._start, self._end = 0, top
        elif "-" in value:
            if value.startswith("-"):
                raise AclError(f"RangeRemoteAddressStrategy netaddress examine scope Exception value {value}")
            bounds = _split(value, "-")
            self._start, self._end = int(bounds[0], base), int(bounds[1], base)
            if not (0 <= self._start <= self._end <= top):
                raise AclError(f"RangeRemoteAddressStrategy netaddress examine scope Exception start is "
                               f"{self._start} , end is {self._end}")
        return self._end > 0

    def match(self, ip: str) -> bool:
        head = self._head or ""
        if is_ipv4(ip):
            if not ip.startswith(head):
                return False
            last_dot = ip.rfind(".")
            if self._index == 3:
                value = ip[len(head):]
            elif self._index == 2:
                value = ip[len(head):last_dot]
            else:
                value = ip[len(head):ip.rfind(".", 0, last_dot)]
            return value.isdigit() and self._start <= int(value) <= self._end
        if is_ipv6(ip):
            expanded = expand_ip(ip, 8)
            if expanded.startswith(head):
                group = expanded[5 * self._index:5 * self._index + 4]
                return self._start <= int(group, 16) <= self._end
        return False


def _fixed_groups(pattern: str) -> str:
    """The expanded groups of an IPv6 range pattern before its range part."""
    asterisk, minus = "*" in pattern, "-" in pattern
    if asterisk and minus:
        last = pattern.rfind(":")
        return expand_ip(pattern[:pattern[:last].rfind(":")], 6)
    if not asterisk and not minus:
        return expand_ip(pattern, 8)
    return expand_ip(pattern[:pattern.rfind(":")], 7)


def _listed(pattern: str, last: str) -> list[str]:
    prefix = pattern[:pattern.index("{")]
    return [prefix + item for item in _split(last[1:-1], ",")]


def address_pattern(pattern: str | None) -> AddressPattern:
    """The matcher of one ``whiteRemoteAddress`` / ``globalWhiteRemoteAddresses`` entry."""
    if pattern is None or not pattern.strip():
        return NOBODY
    if pattern in ("*", "*.*.*.*", "*:*:*:*:*:*:*:*"):
        return EVERYBODY
    if pattern.endswith("}"):
        ipv6 = ":" in pattern
        parts = _split(pattern, ":" if ipv6 else ".")
        if not ipv6 and len(parts) < 4:
            raise AclError(f"MultipleRemoteAddressStrategy has got a/some wrong format IP(s) {pattern}")
        if not parts[-1].startswith("{"):
            raise AclError(f"MultipleRemoteAddressStrategy netaddress examine scope Exception netaddress {pattern}")
        return _AddressList(_listed(pattern, parts[-1]))
    if "," in pattern:
        return _AddressList(_split(pattern, ","))
    if "*" in pattern or "-" in pattern:
        return _Range(pattern)
    return _OneAddress(pattern)
