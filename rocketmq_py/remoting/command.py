"""Building requests and responses (Java's ``RemotingCommand`` factories and ``RemotingSysResponseCode``).

The command itself and its encoding come from :mod:`rocketmq_py.codec`; this
module adds the rules for filling one in: where the opaque comes from, which
flags mark a response or a oneway request, and which serialization a node
speaks by default.
"""
from __future__ import annotations

import itertools
import os
import sys
import threading
from enum import IntEnum
from typing import Callable

from rocketmq_py import codec
from rocketmq_py._codec_types import HeaderObject
from rocketmq_py.codec import RemotingCommand, new_command

__all__ = [
    "RemotingCommand",
    "RemotingSysResponseCode",
    "OpaqueCounter",
    "DEFAULT_LANGUAGE",
    "DEFAULT_VERSION",
    "DEFAULT_SERIALIZE_TYPE",
    "serialize_type_from_env",
    "next_opaque",
    "create_request",
    "create_response",
    "mark_oneway",
    "mark_response",
]

DEFAULT_LANGUAGE = codec.LANGUAGE_PYTHON
DEFAULT_VERSION = codec.VERSION_4_9_8

_SERIALIZE_TYPES = {"JSON": codec.SERIALIZE_JSON, "ROCKETMQ": codec.SERIALIZE_ROCKETMQ}


class RemotingSysResponseCode(IntEnum):
    """The response codes the remoting layer itself answers with."""

    SUCCESS = 0
    SYSTEM_ERROR = 1
    SYSTEM_BUSY = 2
    REQUEST_CODE_NOT_SUPPORTED = 3


def serialize_type_from_env() -> int:
    """The node's default serialization, from ``ROCKETMQ_SERIALIZE_TYPE`` (``JSON`` or ``ROCKETMQ``)."""
    name = os.environ.get("ROCKETMQ_SERIALIZE_TYPE", "JSON").strip().upper()
    try:
        return _SERIALIZE_TYPES[name]
    except KeyError:
        raise ValueError(
            f"ROCKETMQ_SERIALIZE_TYPE={name!r} is not a serialization: set it to JSON or ROCKETMQ, or unset it"
        ) from None


#: Read once, as Java reads its system property once when the class loads.
DEFAULT_SERIALIZE_TYPE: int = serialize_type_from_env()


#: A free-threaded build (Python 3.13t+) runs threads without the GIL.
_FREE_THREADED = not getattr(sys, "_is_gil_enabled", lambda: True)()


class OpaqueCounter:
    """A thread-safe request id sequence that wraps around like Java's ``AtomicInteger``."""

    def __init__(self, start: int = 0) -> None:
        first = ((start + 0x80000000) & 0xFFFFFFFF) - 0x80000000
        # Java's order from `first`: up to the int maximum, then from the minimum round to `first` again, forever.
        # Every step is C (chain and range iterators), so with the GIL one call is atomic and runs no Python frame:
        # a lock (the cost of an opaque, on every request, three times over) only where there is no GIL.
        laps = itertools.repeat((range(first, 1 << 31), range(-(1 << 31), first)))
        self._take = itertools.chain.from_iterable(itertools.chain.from_iterable(laps)).__next__
        self._lock = threading.Lock() if _FREE_THREADED else None
        #: The next id.
        self.next: Callable[[], int] = self._take if self._lock is None else self._next_locked

    def _next_locked(self) -> int:
        assert self._lock is not None
        with self._lock:
            return self._take()


_OPAQUES = OpaqueCounter()


#: The next request id of this process (the counter's own C iterator: no Python frame in between).
next_opaque = _OPAQUES.next


def create_request(
    code: int,
    ext_fields: dict[str, str] | None = None,
    body: bytes | None = None,
    *,
    remark: str | None = None,
    serialize_type: int | None = None,
    custom_header: HeaderObject | None = None,
) -> RemotingCommand:
    """A new request with a fresh opaque, in ``serialize_type`` (the node default when ``None``).

    ``custom_header`` is the request's header object, written into the frame by the encoder (see
    :class:`RemotingCommand`); ``ext_fields`` then holds only fields beyond it.
    """
    # Positional, into the codec's constructor (no __init__ frame): this runs for every request.
    return new_command(
        code, DEFAULT_LANGUAGE, DEFAULT_VERSION, next_opaque(), 0, remark, ext_fields, body,
        DEFAULT_SERIALIZE_TYPE if serialize_type is None else serialize_type, custom_header,
    )


def create_response(
    request: RemotingCommand,
    code: int = RemotingSysResponseCode.SUCCESS,
    remark: str | None = None,
    ext_fields: dict[str, str] | None = None,
    body: bytes | None = None,
    *,
    serialize_type: int | None = None,
) -> RemotingCommand:
    """The response to ``request``: its opaque, the response flag, and (as Java 4.9.4+) its serialization.

    Pass ``serialize_type`` to answer in another one; Java answers its own
    error responses in the node default.
    """
    # Positional, into the codec's constructor (no __init__ frame), as create_request: every answer runs it.
    return new_command(
        int(code), DEFAULT_LANGUAGE, DEFAULT_VERSION, request.opaque, codec.FLAG_RESPONSE, remark, ext_fields, body,
        request.serialize_type if serialize_type is None else serialize_type, None,
    )


def mark_oneway(command: RemotingCommand) -> RemotingCommand:
    """Set the oneway flag (the peer will not answer) and return ``command``."""
    command.flag |= codec.FLAG_ONEWAY
    return command


def mark_response(command: RemotingCommand) -> RemotingCommand:
    """Set the response flag and return ``command``."""
    command.flag |= codec.FLAG_RESPONSE
    return command
