"""The store's hot paths in pure Python: the twin of ``_hot_paths.pyx`` and its specification.

**Plain puts in place.** :meth:`MessageStore.append_plain
<rocketmq_py.store.message_store.MessageStore.append_plain>` appends a plain message (neither transactional
nor delayed) through the store's general steps: make room in every file it may need, append the record,
read it back, build its ConsumeQueue unit and index entries, tell the arrival listeners, wake the flush
thread. Almost every put of a running broker finds all three files already there with room to spare;
``append_in_place`` does that case in one pass, from what the caller already knows of the message (its tags
hash, keys and unique key, as the read-back would find them in the stored properties), and writes the same
bytes; ``append_batch_in_place`` does the same for the records of a batch. Whenever a file is missing or
full, a queue offset does not follow its ConsumeQueue's end, or a host is IPv6, they return None before
changing anything, and the caller goes the general way (tests/test_send_fast.py holds both to the same
store files).

**A pull's records.** ``collect`` walks a pull's ConsumeQueue units and gathers the records that pass the
filter, within Java's transfer limits (Java's DefaultMessageStore.getMessage loop).
"""
from __future__ import annotations

import zlib
from typing import TYPE_CHECKING, Any

from rocketmq_py.store import layout
from rocketmq_py.store.results import GetMessageStatus

if TYPE_CHECKING:
    from rocketmq_py.store.consume_queue import ConsumeQueue, UnitWindow
    from rocketmq_py.store.message_store import MessageStore
    from rocketmq_py.store.reads import MessageFilter, StoreReads
    from rocketmq_py.store.results import GetMessageResult

IMPLEMENTATION = "python"

_CQ_UNIT = 20
_IPV4_HOST = 8
#: Where a record holds its queue id (after its size, magic code and body CRC).
_QUEUE_ID_AT = 12


def index_keys(topic: str, keys: str | None, uniq_key: str | None) -> list[str]:
    """The index keys of a message, in the order they are put (``topic#UNIQ_KEY`` first): the one list the
    index service and the puts in place both use."""
    found = []
    if uniq_key:
        found.append(f"{topic}#{uniq_key}")
    if keys:
        found.extend(f"{topic}#{key}" for key in keys.split(" ") if key)
    return found


def _room(store: MessageStore, consume_queue: ConsumeQueue, topic: str, queue_id: int, length: int, units: int,
          first_size: int, entry_count: int) -> tuple[Any, ...] | None:
    """Where a put of ``length`` bytes in ``units`` records (the first of ``first_size`` bytes) with
    ``entry_count`` index entries goes, when the CommitLog, the ConsumeQueue and the index all have room in
    their last file and the queue offset follows the ConsumeQueue's end: ``(CommitLog file, position,
    physical offset, queue offset, ConsumeQueue file, position, index file or None, the index's end physical
    offset)``; else None. Called under the store's write lock."""
    commit_log = store.commit_log
    log_files = commit_log.queue.files
    cq_files = consume_queue.queue.files
    if not log_files or not cq_files:
        return None
    log_file = log_files[-1]
    cq_file = cq_files[-1]
    position = log_file.wrote_position
    if position + length + layout.END_FILE_MIN_BLANK_LENGTH > commit_log.file_size:
        return None
    queue_offset = commit_log.topic_queue_table.get((topic, queue_id), 0)
    cq_position = cq_file.wrote_position
    physical = log_file.file_from_offset + position
    # A new ConsumeQueue file (position 0) may need its head padded: the general way does that.
    if (cq_position == 0 or cq_position + units * _CQ_UNIT > consume_queue.file_size
            or cq_file.file_from_offset + cq_position != queue_offset * _CQ_UNIT
            or physical + first_size <= consume_queue.max_physic_offset):
        return None
    index_file = None
    end_phy_offset = 0
    if entry_count:
        assert store.index_service is not None
        index_files = store.index_service.files
        if not index_files:
            return None
        index_file = index_files[-1]
        _, _, _, end_phy_offset, _, index_count = index_file.header()
        if index_count + entry_count > index_file.index_num:
            return None
    return log_file, position, physical, queue_offset, cq_file, cq_position, index_file, end_phy_offset


def append_in_place(store: MessageStore, topic: str, topic_bytes: bytes, queue_id: int, body: bytes,
                    properties: bytes, properties_text: str, flag: int, sys_flag: int, born_timestamp: int,
                    born_host: bytes, store_host: bytes, reconsume_times: int, tags_code: int, keys: str | None,
                    uniq_key: str | None) -> tuple[int, int, int, int] | None:
    """Append, dispatch and announce a plain message whose files all have room: ``(physical offset, size,
    queue offset, store timestamp)``, or None, having changed nothing, for the general way.

    The caller has asked ``store.refuses_plain`` and ``store.put_waits``.
    """
    if len(born_host) != _IPV4_HOST or len(store_host) != _IPV4_HOST:
        return None
    consume_queue = store.get_consume_queue(topic, queue_id)
    if consume_queue is None:
        return None
    commit_log = store.commit_log
    config = store.config
    indexing = config.message_index_enable and store.index_service is not None
    entries = index_keys(topic, keys, uniq_key) if indexing else []
    record_size = layout.record_length(sys_flag & ~0x30, len(body), len(topic_bytes), len(properties))
    body_crc = zlib.crc32(body) & 0x7FFFFFFF
    with store._write_lock:
        room = _room(store, consume_queue, topic, queue_id, record_size, 1, record_size, len(entries))
        if room is None:
            return None
        log_file, position, physical, queue_offset, cq_file, cq_position, index_file, end_phy_offset = room
        file_size = commit_log.file_size
        key = (topic, queue_id)
        with commit_log.put_lock:
            store_timestamp = commit_log.begin_time_in_lock = commit_log.clock()
            try:
                written = layout.append_message(
                    log_file.mm, position, file_size, topic_bytes, body, properties, queue_id, flag, queue_offset,
                    physical, sys_flag, born_timestamp, born_host, store_timestamp, store_host, reconsume_times, 0,
                    body_crc,
                )
                log_file.wrote_position = position + written
                log_file.store_timestamp = store_timestamp
                commit_log.topic_queue_table[key] = queue_offset + 1
            finally:
                commit_log.begin_time_in_lock = 0
        layout.cq_put_unit(cq_file.mm, cq_position, physical, written, tags_code)
        cq_file.wrote_position = cq_position + _CQ_UNIT
        consume_queue.max_physic_offset = physical + written
        assert store.checkpoint is not None
        store.checkpoint.logics_msg_timestamp = store_timestamp
        if index_file is not None and physical >= end_phy_offset:
            for entry in entries:
                layout.index_put(index_file.mapped.mm, index_file.hash_slot_num, index_file.index_num,
                                 layout.index_key_hash(entry), physical, store_timestamp)
    if store.arrival_listeners:
        store.tell_arrivals([(topic, queue_id, queue_offset + 1, tags_code, store_timestamp, properties_text)])
    store.wake_flush()
    return physical, written, queue_offset, store_timestamp


def set_queue_id(records: bytearray, queue_id: int) -> None:
    """Write ``queue_id`` into every record of ``records`` (encoded before a random queue was drawn)."""
    position = 0
    value = queue_id.to_bytes(4, "big", signed=True)
    while position + _QUEUE_ID_AT + 4 <= len(records):
        records[position + _QUEUE_ID_AT:position + _QUEUE_ID_AT + 4] = value
        size = int.from_bytes(records[position:position + 4], "big", signed=True)
        if size <= 0:
            raise ValueError(f"record at byte {position} declares a bad size {size}")
        position += size


def append_batch_in_place(store: MessageStore, topic: str, queue_id: int, records: bytearray,
                          count: int) -> tuple[int, int, int, int, list[int]] | None:
    """Append, dispatch and announce the ``count`` encoded records of a batch whose files all have room:
    ``(physical offset, bytes, first queue offset, store timestamp, each record's offset)``, or None, having
    changed nothing, for the general way (``MessageStore.append_records_plain``)."""
    consume_queue = store.get_consume_queue(topic, queue_id)
    if consume_queue is None:
        return None
    commit_log = store.commit_log
    config = store.config
    indexing = config.message_index_enable and store.index_service is not None
    infos = []
    entries = []
    position = 0
    while position < len(records):
        info = layout.check_record(records, position, len(records), False)
        if info.size <= 0:
            return None
        infos.append(info)
        entries.append(index_keys(topic, info.keys, info.uniq_key) if indexing else [])
        position += info.size
    if len(infos) != count:
        return None
    with store._write_lock:
        room = _room(store, consume_queue, topic, queue_id, len(records), count, infos[0].size,
                     sum(len(keys) for keys in entries))
        if room is None:
            return None
        log_file, position, physical, queue_offset, cq_file, cq_position, index_file, end_phy_offset = room
        file_size = commit_log.file_size
        key = (topic, queue_id)
        with commit_log.put_lock:
            store_timestamp = commit_log.begin_time_in_lock = commit_log.clock()
            try:
                layout.append_records(log_file.mm, position, file_size, records, queue_offset, physical,
                                      store_timestamp)
                log_file.wrote_position = position + len(records)
                log_file.store_timestamp = store_timestamp
                commit_log.topic_queue_table[key] = queue_offset + count
            finally:
                commit_log.begin_time_in_lock = 0
        offsets = []
        offset = physical
        for number, info in enumerate(infos):
            offsets.append(offset)
            layout.cq_put_unit(cq_file.mm, cq_position + number * _CQ_UNIT, offset, info.size, info.tags_code)
            if index_file is not None and offset >= end_phy_offset and entries[number]:
                for entry in entries[number]:
                    layout.index_put(index_file.mapped.mm, index_file.hash_slot_num, index_file.index_num,
                                     layout.index_key_hash(entry), offset, store_timestamp)
                end_phy_offset = offset
            offset += info.size
        cq_file.wrote_position = cq_position + count * _CQ_UNIT
        consume_queue.max_physic_offset = offset
        assert store.checkpoint is not None
        store.checkpoint.logics_msg_timestamp = store_timestamp
    if store.arrival_listeners:
        store.tell_arrivals([(topic, queue_id, queue_offset + number + 1, info.tags_code, store_timestamp,
                              info.properties) for number, info in enumerate(infos)])
    store.wake_flush()
    return physical, len(records), queue_offset, store_timestamp, offsets


def collect(reads: StoreReads, result: GetMessageResult, units: UnitWindow, offset: int,
            max_msg_nums: int, message_filter: MessageFilter | None, memory: int) -> None:
    """Fill ``result`` with the records of ``units`` (read from queue offset ``offset``) that pass
    ``message_filter``, until ``max_msg_nums`` or the transfer limits; ``memory`` is the byte distance
    behind the CommitLog's end past which data is taken to be on disk (the smaller limits apply).
    The records go into ``result.body`` back to back."""
    result.status = GetMessageStatus.NO_MATCHED_MESSAGE
    commit_log = reads.commit_log
    config = reads.config
    max_physical = commit_log.max_offset
    next_file_start = None
    last_physical = 0
    total_size = 0
    read = 0
    records: list[bytes] = []
    # A filter that passes everything (a subscription to "*") is not asked about each message.
    check_tags = message_filter is not None and message_filter.checks_tags
    check_records = message_filter is not None and message_filter.checks_records
    for physical, size, tags_code in units:
        last_physical = physical
        if next_file_start is not None and physical < next_file_start:
            read += 1
            continue
        count = len(records)
        if count:
            if max_msg_nums <= count:
                break
            if max_physical - physical > memory:
                if (total_size + size > config.max_transfer_bytes_on_message_in_disk
                        or count > config.max_transfer_count_on_message_in_disk - 1):
                    break
            elif (total_size + size > config.max_transfer_bytes_on_message_in_memory
                  or count > config.max_transfer_count_on_message_in_memory - 1):
                break
        read += 1
        if check_tags and not message_filter.is_matched_by_consume_queue(tags_code):  # type: ignore[union-attr]
            continue
        record = commit_log.get_message(physical, size)
        if record is None:
            if not records:
                result.status = GetMessageStatus.MESSAGE_WAS_REMOVING
            next_file_start = commit_log.roll_next_file(physical)
            continue
        if check_records and not message_filter.is_matched_by_commit_log(record):  # type: ignore[union-attr]
            continue
        records.append(record)
        result.queue_offsets.append(offset + read - 1)
        total_size += size
        result.status = GetMessageStatus.FOUND
        next_file_start = None
    result.body = b"".join(records)
    result.next_begin_offset = offset + read
    result.suggest_pulling_from_slave = max_physical - last_physical > memory
