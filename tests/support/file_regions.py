"""File regions for the remoting tests: files of known bytes a server shares with its fronts, and a processor
that answers with ranges of them (a ``FileRegionResponse``), as the broker's pull answers with its records."""
from __future__ import annotations

import os
import random
from pathlib import Path

from rocketmq_py.remoting import ProcessorTable, RemotingCommand, RequestContext, create_response
from rocketmq_py.remoting.file_region import RANGE, FileRegionResponse

#: Answers with the ranges that ext_fields["ranges"] spells ("file:position:size,...") of the registered files.
REGION = 120


class KnownFile:
    """A file of ``size`` random bytes, shared as a ``SharedFile``; :meth:`close` is what the clean service does
    to a store file (the bytes stay known here, for the expected answers)."""

    def __init__(self, path: Path, size: int, seed: int) -> None:
        self.path = path
        self.data = random.Random(seed).randbytes(size)
        path.write_bytes(self.data)
        self.available = True
        self.opened = 0

    def open_for_reading(self) -> int | None:
        if not self.available:
            return None
        self.opened += 1
        return os.open(self.path, os.O_RDONLY)

    def close(self) -> None:
        self.available = False


class KnownRegion:
    """A ``FileRegion`` over :class:`KnownFile` objects."""

    def __init__(self, files: list[KnownFile], ranges: list[tuple[int, int, int]]) -> None:
        self.files = files
        self.ranges = b"".join(RANGE.pack(*entry) for entry in ranges)
        self.size = sum(size for _, _, size in ranges)
        self._entries = ranges

    def copy(self) -> bytes:
        return b"".join(self.files[index].data[position:position + size] for index, position, size in self._entries)


def parse_ranges(text: str) -> list[tuple[int, int, int]]:
    return [(int(file), int(position), int(size))
            for file, position, size in (entry.split(":") for entry in text.split(","))]


def region_processors(files: list[KnownFile]) -> ProcessorTable:
    """A table with one processor, :data:`REGION`, over ``files``."""
    table = ProcessorTable()

    async def on_region(ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        ranges = parse_ranges((request.ext_fields or {})["ranges"])
        used = sorted({index for index, _, _ in ranges})
        region = KnownRegion([files[index] for index in used], [(used.index(i), p, s) for i, p, s in ranges])
        return FileRegionResponse(create_response(request, 0, "region", {"n": str(len(ranges))}), region)

    table.register(REGION, on_region)
    return table


def expected_body(files: list[KnownFile], text: str) -> bytes:
    return b"".join(files[index].data[position:position + size] for index, position, size in parse_ranges(text))


def mapped_by(pid: int, path: Path) -> bool:
    """Whether process ``pid`` maps ``path`` (also once it is deleted)."""
    with open(f"/proc/{pid}/maps") as maps:
        return any(line.split(None, 5)[5].split(" (deleted)")[0].strip() == str(path)
                   for line in maps if len(line.split(None, 5)) == 6)
