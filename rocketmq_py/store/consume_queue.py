"""One topic-queue's index into the CommitLog (Java's store/ConsumeQueue).

Files ``{root}/consumequeue/{topic}/{queueId}/{20-digit byte offset}`` of
20-byte units ``(CommitLog offset, size, tags code)``; queue offset N is the
unit at byte N*20. The units are written by the store's write path
(:func:`rocketmq_py.store.write_path.put_unit`, which also pads the head of a
queue's first file when the queue starts above 0, as Java does); this module
keeps the files, reads the units and recovers them.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterator

from rocketmq_py.store import layout
from rocketmq_py.store.mapped_file import MappedFile, MappedFileQueue

UNIT = layout.CQ_UNIT_SIZE
#: A pull reads at most this many bytes of units (Java: max(16000, maxMsgNums * 20)).
MAX_FILTER_BYTES = 16000


def names_a_directory(topic: str) -> bool:
    """Whether ``topic`` can name a ConsumeQueue directory: a name that cannot (a retry topic made from a group
    name no check looked at, say) must be refused before its queue's file is made."""
    return bool(topic) and topic not in (".", "..") and "/" not in topic and "\x00" not in topic


class ConsumeQueue:
    def __init__(self, topic: str, queue_id: int, root: Path, file_size: int) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.file_size = file_size
        self.queue = MappedFileQueue(Path(root) / topic / str(queue_id), file_size)
        #: CommitLog offset just after the last record indexed here (-1 when none).
        self.max_physic_offset = -1
        #: Byte offset of the first unit still pointing at existing CommitLog data.
        self.min_logic_offset = 0

    def load(self) -> None:
        self.queue.load()

    @property
    def min_offset_in_queue(self) -> int:
        return self.min_logic_offset // UNIT

    @property
    def max_offset_in_queue(self) -> int:
        return self.queue.max_offset // UNIT

    @property
    def message_total(self) -> int:
        return self.max_offset_in_queue - self.min_offset_in_queue

    def roll_next_file(self, index: int) -> int:
        units = self.file_size // UNIT
        return index + units - index % units

    # --- read ----------------------------------------------------------------------------------

    def _window(self, start_index: int, max_bytes: int) -> tuple[MappedFile, int, int] | None:
        """The file and byte span ``[position, limit)`` holding the units read from ``start_index`` (None: none)."""
        offset = start_index * UNIT
        if offset < self.min_logic_offset:
            return None
        mapped = self.queue.find_mapped_file_by_offset(offset)
        if mapped is None:
            return None
        position = offset % self.file_size
        limit = min(mapped.wrote_position, position + max_bytes)
        if limit <= position:
            return None
        return mapped, position, limit

    def read_units(self, start_index: int, max_bytes: int = MAX_FILTER_BYTES) -> list[tuple[int, int, int]] | None:
        """Units from queue offset ``start_index`` to the end of its file (at most ``max_bytes`` of them).

        None when that offset is below the minimum or its file is gone.
        """
        window = self._window(start_index, max_bytes)
        if window is None:
            return None
        mapped, position, limit = window
        try:
            return layout.cq_read_units(mapped.mm, position, limit, max_bytes // UNIT)
        except ValueError:  # deleted meanwhile
            return None

    def read_units_lazily(self, start_index: int, max_bytes: int, chunk_units: int) -> UnitWindow | None:
        """The units :meth:`read_units` gives, read ``chunk_units`` at a time as the caller iterates.

        A pull reads a window of up to 16 000 bytes (800 units, room for filtering) but mostly takes the first
        few dozen: building all 800 tuples cost a pull a quarter of its CPU. The window is fixed up front, as
        in :meth:`read_units`, so the units are the same; None in the same cases.
        """
        window = self._window(start_index, max_bytes)
        if window is None:
            return None
        mapped, position, limit = window
        units = UnitWindow(mapped, position, limit, chunk_units)
        # The first chunk now, so that a file deleted meanwhile gives None, as read_units does.
        return units if units.read_ahead() else None

    def unit_at(self, index: int) -> tuple[int, int, int] | None:
        units = self.read_units(index, UNIT)
        return units[0] if units else None

    def first_offset_at_or_after(self, commit_log_offset: int) -> int | None:
        """The queue offset of the first unit whose record starts at or after ``commit_log_offset`` (the
        queue's max offset when none does); None when a unit could not be read (its file deleted meanwhile).

        Units are in CommitLog order, so a binary search reads about log2(units) of them."""
        low, high = self.min_offset_in_queue, self.max_offset_in_queue
        while low < high:
            middle = (low + high) // 2
            unit = self.unit_at(middle)
            if unit is None:
                return None
            if unit[0] < commit_log_offset:
                low = middle + 1
            else:
                high = middle
        return low

    def get_offset_in_queue_by_time(self, timestamp: int, min_physic_offset: int,
                                    store_time_at: Callable[[int, int], int]) -> int:
        """The queue offset whose message was stored closest to ``timestamp`` (Java's binary search)."""
        mapped = self.queue.get_mapped_file_by_time(timestamp)
        if mapped is None:
            return 0
        low = max(self.min_logic_offset - mapped.file_from_offset, 0)
        high = mapped.wrote_position - UNIT
        left = right = -1
        left_value = right_value = -1
        target = -1
        while high >= low:
            middle = (low + high) // (2 * UNIT) * UNIT
            unit = mapped.read(middle, UNIT)
            if unit is None:
                return 0
            physical = int.from_bytes(unit[:8], "big", signed=True)
            size = int.from_bytes(unit[8:12], "big", signed=True)
            if physical < min_physic_offset:
                low = middle + UNIT
                left = middle
                continue
            stored = store_time_at(physical, size)
            if stored < 0:
                return 0
            if stored == timestamp:
                target = middle
                break
            if stored > timestamp:
                high = middle - UNIT
                right, right_value = middle, stored
            else:
                low = middle + UNIT
                left, left_value = middle, stored
        if target != -1:
            offset = target
        elif left_value == -1:
            offset = right
        elif right_value == -1:
            offset = left
        else:
            offset = right if abs(timestamp - left_value) > abs(timestamp - right_value) else left
        return (mapped.file_from_offset + offset) // UNIT

    # --- recovery and cleaning -----------------------------------------------------------------

    def recover(self) -> None:
        """Find where the valid units end (from the third last file on) and cut the files there."""
        files = self.queue.files
        if not files:
            return
        index = max(len(files) - 3, 0)
        while True:
            mapped = files[index]
            end, max_physical = layout.cq_valid_end(mapped.mm, 0, self.file_size)
            if max_physical >= 0:
                self.max_physic_offset = max_physical
            if end == self.file_size and index + 1 < len(files):
                index += 1
                continue
            process_offset = mapped.file_from_offset + end
            break
        self.queue.flushed_where = process_offset
        self.queue.truncate_dirty_files(process_offset)

    def truncate_dirty_logic_files(self, phy_offset: int) -> None:
        """Drop the units that point at or beyond CommitLog ``phy_offset`` (data lost in the CommitLog)."""
        self.max_physic_offset = phy_offset
        while True:
            mapped = self.queue.last_file()
            if mapped is None:
                return
            units = layout.cq_read_units(mapped.mm, 0, self.file_size, self.file_size // UNIT)
            mapped.wrote_position = mapped.flushed_position = 0
            if not units or units[0][0] >= phy_offset:
                self.queue.delete_last_mapped_file()
                continue
            for i, (offset, size, _tags) in enumerate(units):
                if i > 0 and (offset < 0 or size <= 0 or offset >= phy_offset):
                    return
                mapped.wrote_position = mapped.flushed_position = (i + 1) * UNIT
                self.max_physic_offset = offset + size
            return

    def correct_min_offset(self, phy_min_offset: int) -> None:
        first = self.queue.first_file()
        if first is None:
            return
        try:
            units = layout.cq_read_units(first.mm, 0, first.wrote_position, first.wrote_position // UNIT)
        except ValueError:
            return
        for i, (offset, _size, _tags) in enumerate(units):
            if offset >= phy_min_offset:
                self.min_logic_offset = first.file_from_offset + i * UNIT
                return

    def delete_expired_file(self, commit_log_min_offset: int) -> int:
        count = self.queue.delete_expired_file_by_offset(commit_log_min_offset, UNIT)
        self.correct_min_offset(commit_log_min_offset)
        return count

    def flush(self, least_pages: int) -> bool:
        return self.queue.flush(least_pages)

    def shutdown(self) -> None:
        self.queue.shutdown()

    def destroy(self) -> None:
        self.max_physic_offset = -1
        self.min_logic_offset = 0
        self.queue.destroy()


class UnitWindow:
    """The units of one ConsumeQueue file in ``[position, limit)``, read ``chunk_units`` at a time.

    Iterating gives ``(offset, size, tags_code)`` tuples. The compiled pull takes the chunks as stored
    instead (:meth:`next_chunk`) and reads the units out of them without a tuple each. Either way a
    window is read once, and a file deleted before a chunk is read ends the window there (the units
    read so far stand).
    """

    __slots__ = ("_mapped", "_position", "_limit", "_chunk_bytes", "_ahead", "_done")

    def __init__(self, mapped: MappedFile, position: int, limit: int, chunk_units: int) -> None:
        self._mapped = mapped
        self._position = position
        self._limit = limit
        self._chunk_bytes = max(1, chunk_units) * UNIT
        self._ahead: bytes | None = None
        self._done = False

    def read_ahead(self) -> bool:
        """Read the first chunk now; False when the file was deleted meanwhile."""
        try:
            self._ahead = self._read()
        except ValueError:  # the mapping was closed by the clean service
            return False
        return True

    def next_chunk(self) -> bytes | None:
        """The next whole units as stored (up to ``chunk_units`` of them), or None after the last."""
        chunk, self._ahead = self._ahead, None
        if chunk is None:
            try:
                chunk = self._read()
            except ValueError:  # the mapping was closed by the clean service: the units read so far stand
                self._done = True
                return None
        return chunk or None

    def _read(self) -> bytes:
        if self._done:
            return b""
        position = self._position
        length = min(self._chunk_bytes, (self._limit - position) // UNIT * UNIT)
        chunk = self._mapped.mm[position:position + length]
        self._position = position + len(chunk)
        # A short chunk is the window's last, as a whole one that reaches the limit is.
        self._done = len(chunk) < self._chunk_bytes or self._position >= self._limit
        return chunk

    def __iter__(self) -> Iterator[tuple[int, int, int]]:
        while (chunk := self.next_chunk()) is not None:
            yield from layout.cq_read_units(chunk, 0, len(chunk), len(chunk) // UNIT)
