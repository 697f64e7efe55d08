"""The two frames of the HA stream (Java's store/ha/HAConnection and HAService.HAClient).

* slave -> master: the slave's CommitLog end, 8 bytes big-endian (a report, and the acknowledgment);
* master -> slave: ``[CommitLog offset 8][size 4]`` then ``size`` CommitLog bytes; ``size`` 0 is a heartbeat.
"""
from __future__ import annotations

import struct

REPORT = struct.Struct(">q")
TRANSFER_HEADER = struct.Struct(">qi")


def encode_report(offset: int) -> bytes:
    return REPORT.pack(offset)


def encode_transfer_header(offset: int, size: int) -> bytes:
    return TRANSFER_HEADER.pack(offset, size)
