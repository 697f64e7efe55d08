"""Permission bits and their text form (Java's acl/common/Permission and AclConstants, rocketmq-all-4.9.8).

A permission is a bit set: DENY (1), ANY (2), PUB (4), SUB (8). A
DENY bit refuses everything, whatever else is set. Only the request
codes in :data:`ADMIN_CODES` need an admin account; the four ACL admin codes
(50..53) are not among them in Java 4.9, so neither are they here.
"""
from __future__ import annotations

from typing import Iterable

from rocketmq_py.acl.errors import AclError
from rocketmq_py.common.codes import RequestCode
from rocketmq_py.common.topic import retry_topic

DENY = 1
ANY = 1 << 1
PUB = 1 << 2
SUB = 1 << 3

_BY_NAME = {"PUB": PUB, "SUB": SUB, "PUB|SUB": PUB | SUB, "SUB|PUB": PUB | SUB, "DENY": DENY}

ADMIN_CODES = frozenset({
    RequestCode.UPDATE_AND_CREATE_TOPIC,
    RequestCode.UPDATE_BROKER_CONFIG,
    RequestCode.DELETE_TOPIC_IN_BROKER,
    RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
    RequestCode.DELETE_SUBSCRIPTIONGROUP,
})


def needs_admin(code: int) -> bool:
    return code in ADMIN_CODES


def check_permission(needed: int, owned: int) -> bool:
    """Whether ``owned`` grants ``needed``."""
    if owned & DENY:
        return False
    if needed & ANY:
        return bool(owned & (PUB | SUB))
    return bool(needed & owned)


def parse_perm(text: str | None) -> int:
    """``PUB``, ``SUB``, ``PUB|SUB`` / ``SUB|PUB`` or ``DENY``; anything else (or nothing) is DENY."""
    if text is None:
        return DENY
    return _BY_NAME.get(text.strip(), DENY)


def split_resource(entry: str) -> list[str]:
    """``"name=PERM"`` split as commons-lang ``StringUtils.split(entry, "=")`` splits: empty parts dropped."""
    return [part for part in entry.split("=") if part]


def parse_resource_perms(entries: Iterable[str] | None, *, topics: bool) -> dict[str, int]:
    """``topicPerms`` / ``groupPerms`` entries as a resource -> permission map (groups keyed by retry topic)."""
    perms: dict[str, int] = {}
    for entry in entries or ():
        items = split_resource(str(entry))
        if len(items) != 2:
            raise AclError(f"Parse resource permission failed for {'topic' if topics else 'group'}:{entry}")
        name = items[0].strip()
        perms[name if topics else retry_topic(name)] = parse_perm(items[1])
    return perms


def check_resource_perms(entries: Iterable[str] | None) -> None:
    """Refuse entries that are not ``name=PERM`` with a known PERM (as UPDATE_AND_CREATE_ACL_CONFIG does)."""
    for entry in entries or ():
        items = split_resource(entry)
        if len(items) != 2:
            raise AclError(f"Parse Resource format error for {entry}.\n"
                           "The expected resource format is 'Res=Perm'. For example: topicA=SUB")
        if items[1].strip() != "DENY" and parse_perm(items[1]) == DENY:
            raise AclError(f"Parse resource permission error for {entry}.\n"
                           "The expected permissions are 'SUB' or 'PUB' or 'SUB|PUB' or 'PUB|SUB'.")
