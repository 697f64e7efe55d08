"""Writing several buffers to an asyncio transport with its flow control intact.

``transport.writelines(buffers)`` hands the buffers to the kernel without joining them, but the selector
transport of CPython 3.12.0 to 3.12.8 and 3.13.0 to 3.13.1 never pauses the protocol from it (CPython
gh-127655, fixed in 3.12.9 and 3.13.2): a peer that stops reading lets the write buffer grow until memory
runs out, and ``pause_writing`` never comes. There the buffers are joined and written with ``write``, which
checks the high watermark, as asyncio before 3.12 does inside ``writelines`` itself.
"""
from __future__ import annotations

import asyncio
import sys
from typing import Sequence

__all__ = ["WRITELINES_KEEPS_FLOW_CONTROL", "write_buffers"]

WRITELINES_KEEPS_FLOW_CONTROL = not ((3, 12) <= sys.version_info < (3, 12, 9)
                                     or (3, 13) <= sys.version_info < (3, 13, 2))


def write_buffers(transport: asyncio.WriteTransport, buffers: Sequence[bytes | bytearray | memoryview]) -> None:
    """Write ``buffers`` (at least one) in order, in one call, and without copying them where that keeps the
    transport's flow control."""
    if len(buffers) == 1:
        transport.write(buffers[0])
    elif WRITELINES_KEEPS_FLOW_CONTROL:
        transport.writelines(buffers)
    else:
        transport.write(b"".join(buffers))
