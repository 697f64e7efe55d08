"""Answers whose body stays in files (Java's Netty ``FileRegion``, as its pull writes with transferMsgByHeap=false).

A processor may answer with a :class:`FileRegionResponse`: a response whose body is a :class:`FileRegion`,
ranges of files the server process has mapped (a pull's records in the CommitLog). On a client connection that
a front process serves (see :mod:`.relay`), the server sends the front the frame's head and the ranges, and
the front reads the bytes from the files itself and writes head and bytes to the client: the body is never
copied in the server process, nor carried over the channel. On any other connection the body is a copy of the
ranges' bytes, written after the head. Either way the client gets the same bytes.
"""
from __future__ import annotations

import struct
from typing import Protocol, Sequence

from rocketmq_py import codec
from rocketmq_py.codec import RemotingCommand
from rocketmq_py.errors import FrameTooLargeError

__all__ = ["RANGE", "FileRegion", "FileRegionResponse", "SharedFile", "region_head"]

#: One range of a :class:`FileRegion`: the index of its file in ``files``, its position in the file and its
#: size (big-endian u32 each).
RANGE = struct.Struct(">III")


class SharedFile(Protocol):
    """A file of a region, as the server process shares it with a front process."""

    #: False once the file is closed (deleted): it is not opened again.
    available: bool

    def open_for_reading(self) -> int | None:
        """A new read-only descriptor of the file (the caller closes it), or None once it is closed."""


class FileRegion(Protocol):
    """Ranges of files that make a body."""

    @property
    def files(self) -> Sequence[SharedFile]:
        """The files the ranges are in."""

    @property
    def ranges(self) -> bytes:
        """:data:`RANGE` entries, back to back, in the order of the body."""

    @property
    def size(self) -> int:
        """The body's length: the sizes of the ranges together."""

    def copy(self) -> bytes:
        """The body: the ranges' bytes, back to back (also when a file was closed since the region was made)."""


class FileRegionResponse(RemotingCommand):
    """A response whose body is :attr:`region` (its ``body`` stays None)."""

    __slots__ = ("region",)

    def __init__(self, response: RemotingCommand, region: FileRegion) -> None:
        super().__init__(response.code, response.language, response.version, response.opaque, response.flag,
                         response.remark, response.ext_fields, None, response.serialize_type, response.custom_header)
        self.region = region


def region_head(response: FileRegionResponse) -> bytes:
    """The head of ``response``'s frame: ``head + region.copy()`` is the frame (its length field counts the
    region). Raises as ``encode_command`` does, also for a frame too long with the region."""
    head = codec.encode_command(response)
    total = int.from_bytes(head[:4], "big") + response.region.size
    if total + 4 > codec.MAX_FRAME_LENGTH:
        raise FrameTooLargeError(f"frame of {total + 4} bytes exceeds the {codec.MAX_FRAME_LENGTH} byte limit")
    return total.to_bytes(4, "big") + head[4:]
