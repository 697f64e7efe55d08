"""Message store settings (Java's store/config/MessageStoreConfig, FlushDiskType, BrokerRole,
StorePathConfigHelper and the broker's BrokerPathConfigHelper).

Field names are Java's in Python spelling, so the store keys of a
``broker.conf`` apply unchanged (see :func:`rocketmq_py.common.config_file.apply_properties`).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

ASYNC_FLUSH = "ASYNC_FLUSH"
SYNC_FLUSH = "SYNC_FLUSH"

ASYNC_MASTER = "ASYNC_MASTER"
SYNC_MASTER = "SYNC_MASTER"
SLAVE = "SLAVE"

CQ_UNIT_SIZE = 20
DEFAULT_MESSAGE_DELAY_LEVEL = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
_TIME_UNITS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


@dataclass(kw_only=True)
class StoreKeysWithoutEffect:
    """Java 4.9's MessageStoreConfig keys that this store accepts, reports (GET_BROKER_CONFIG, ``-p``) and
    persists with Java's defaults, but that change nothing here: the transient store pool, the
    ConsumeQueue extension, LMQ and the schedule service's tuning. A None is a key Java reports
    only once it is set."""

    read_only_commit_log_store_paths: str | None = None
    enable_consume_queue_ext: bool = False
    mapped_file_size_consume_queue_ext: int = 48 * 1024 * 1024
    bit_map_length_consume_queue_ext: int = 64
    commit_interval_commit_log: int = 200
    use_reentrant_lock_when_put_message: bool = True
    put_msg_index_hight_water: int = 600_000
    commit_commit_log_least_pages: int = 4
    flush_least_pages_when_warm_maped_file: int = 1024 // 4 * 16
    commit_commit_log_thorough_interval: int = 200
    warm_maped_file_enable: bool = False
    debug_lock_enable: bool = False
    duplication_enable: bool = False
    transient_store_pool_enable: bool = False
    transient_store_pool_size: int = 5
    fast_fail_if_no_buffer_in_store_pool: bool = False
    enable_schedule_message_stats: bool = True
    enable_lmq: bool = False
    enable_multi_dispatch: bool = False
    max_lmq_consume_queue_num: int = 20_000
    enable_schedule_async_deliver: bool = False
    schedule_async_deliver_max_pending_limit: int = 2000
    schedule_async_deliver_max_resend_num2_blocked: int = 3


@dataclass
class MessageStoreConfig(StoreKeysWithoutEffect):
    store_path_root_dir: str = field(default_factory=lambda: str(Path.home() / "store"))
    #: Empty means ``{storePathRootDir}/commitlog``.
    store_path_commit_log: str = ""
    mapped_file_size_commit_log: int = 1024 * 1024 * 1024
    mapped_file_size_consume_queue: int = 300_000 * CQ_UNIT_SIZE
    flush_interval_commit_log: int = 500
    #: Our own setting: fault this many bytes of the CommitLog in ahead of the writes, from a thread of its own
    #: (``rocketmq_py.store.prefault``); 0 leaves the page faults to the putting thread, as Java does.
    commit_log_prefault_bytes: int = 32 * 1024 * 1024
    flush_commit_log_timed: bool = True
    flush_interval_consume_queue: int = 1000
    clean_resource_interval: int = 10_000
    delete_commit_log_files_interval: int = 100
    delete_consume_queue_files_interval: int = 100
    destroy_maped_file_interval_forcibly: int = 120_000
    redelete_hanged_file_interval: int = 120_000
    #: Hours of the day (``"04"``, or several as ``"04;16"``) when expired files are deleted.
    delete_when: str = "04"
    #: Above this share of the disk (percent, 10..95), expired files are deleted at once.
    disk_max_used_space_ratio: int = 75
    #: Hours a CommitLog file is kept after its last write.
    file_reserved_time: int = 72
    max_message_size: int = 4 * 1024 * 1024
    check_crc_on_recover: bool = field(default=True, metadata={"java": "checkCRCOnRecover"})
    flush_commit_log_least_pages: int = 4
    flush_consume_queue_least_pages: int = 2
    flush_commit_log_thorough_interval: int = 10_000
    flush_consume_queue_thorough_interval: int = 60_000
    max_transfer_bytes_on_message_in_memory: int = 256 * 1024
    max_transfer_count_on_message_in_memory: int = 32
    max_transfer_bytes_on_message_in_disk: int = 64 * 1024
    max_transfer_count_on_message_in_disk: int = 8
    access_message_in_memory_max_ratio: int = 40
    message_index_enable: bool = True
    max_hash_slot_num: int = 5_000_000
    max_index_num: int = 5_000_000 * 4
    max_msgs_num_batch: int = 64
    message_index_safe: bool = False
    broker_role: str = ASYNC_MASTER
    flush_disk_type: str = ASYNC_FLUSH
    sync_flush_timeout: int = 5000
    message_delay_level: str = DEFAULT_MESSAGE_DELAY_LEVEL
    flush_delay_offset_interval: int = 10_000
    #: Above ``diskSpaceCleanForciblyRatio`` (85 %), delete CommitLog files before they expire: here only those
    #: whose messages every consumer group has consumed (``rocketmq_py.store.consumed``).
    clean_file_forcibly_enable: bool = True
    #: Our own setting: let that forced clean delete the oldest files whether consumed or not, as Java does.
    clean_unconsumed_file_forcibly_enable: bool = False
    offset_check_in_slave: bool = False
    disk_fall_recorded: bool = True
    default_query_max_num: int = 32
    #: Java reads these two from system properties (rocketmq.broker.diskSpace*Ratio).
    disk_space_warning_level_ratio: float = 0.90
    disk_space_clean_forcibly_ratio: float = 0.85
    # --- HA (master-slave replication, rocketmq_py.store.ha) -----------------------------------
    #: How often a slave reports its CommitLog end to the master, and a master sends an empty frame.
    ha_send_heartbeat_interval: int = 5000
    #: A slave closes its connection after this long without a frame from the master (and a master
    #: closes a slave's connection after this long without a report).
    ha_housekeeping_interval: int = 20_000
    #: At most this many CommitLog bytes per frame.
    ha_transfer_batch_size: int = 32 * 1024
    #: A slave's fixed master HA address (host:port); empty means the one the name server answers.
    ha_master_address: str = ""
    #: A SYNC_MASTER answers SLAVE_NOT_AVAILABLE when its slave is more than this many bytes behind.
    ha_slave_fallbehind_max: int = 256 * 1024 * 1024
    #: How long a SYNC_MASTER put waits for a slave's acknowledgment before FLUSH_SLAVE_TIMEOUT (ms).
    slave_timeout: int = 3000
    #: A put lock held longer than this (ms) means the page cache is struggling: new puts are refused.
    os_page_cache_busy_time_out_mills: int = 1000
    # --- DLedger (the CommitLog as a Raft log, rocketmq_py.dledger; docs/broker-dledger.md) ------------
    enable_d_leger_commit_log: bool = False
    #: The DLedger group (usually the broker name), this member's id (n0, n1, ...) and every member's
    #: peer address: ``n0-127.0.0.1:40911;n1-127.0.0.1:40912;n2-127.0.0.1:40913``.
    d_leger_group: str | None = None
    d_leger_peers: str | None = None
    d_leger_self_id: str | None = None
    #: The member(s) the leader hands leadership to when they are alive and caught up (``n1`` or ``n1;n2``).
    preferred_leader_id: str | None = None
    #: Push several entries to a follower in one request. Java reports the key as ``isEnableBatchPush``, but a
    #: broker.conf sets it as ``enableBatchPush`` (its setter's name; Java ignores ``isEnableBatchPush=``).
    is_enable_batch_push: bool = field(default=False, metadata={"java_key": "enableBatchPush"})
    #: Where the DLedger data files go; None means ``{storePathRootDir}/dledger-{selfId}/data``.
    store_path_d_ledger_commit_log: str | None = None

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        if self.flush_disk_type not in (ASYNC_FLUSH, SYNC_FLUSH):
            raise ValueError(f"flushDiskType must be ASYNC_FLUSH or SYNC_FLUSH, not {self.flush_disk_type!r}")
        if self.broker_role not in (ASYNC_MASTER, SYNC_MASTER, SLAVE):
            raise ValueError(f"brokerRole must be ASYNC_MASTER, SYNC_MASTER or SLAVE, not {self.broker_role!r}")
        if self.mapped_file_size_commit_log < 4096:
            raise ValueError("mappedFileSizeCommitLog must be at least 4096 bytes")
        delay_level_table(self.message_delay_level)

    # --- Java's getters that adjust the raw values --------------------------------------------

    @property
    def commit_log_dir(self) -> Path:
        return Path(self.store_path_commit_log or os.path.join(self.store_path_root_dir, "commitlog"))

    @property
    def consume_queue_file_size(self) -> int:
        """The ConsumeQueue file size rounded up to whole 20-byte units, as Java's getter does."""
        units = -(-self.mapped_file_size_consume_queue // CQ_UNIT_SIZE)
        return units * CQ_UNIT_SIZE

    @property
    def effective_disk_max_used_space_ratio(self) -> int:
        return min(max(self.disk_max_used_space_ratio, 10), 95)

    # --- paths (StorePathConfigHelper, BrokerPathConfigHelper) -----------------------------

    @property
    def root(self) -> Path:
        return Path(self.store_path_root_dir)

    @property
    def consume_queue_dir(self) -> Path:
        return self.root / "consumequeue"

    @property
    def index_dir(self) -> Path:
        return self.root / "index"

    @property
    def checkpoint_path(self) -> Path:
        return self.root / "checkpoint"

    @property
    def abort_path(self) -> Path:
        return self.root / "abort"

    @property
    def lock_path(self) -> Path:
        return self.root / "lock"

    @property
    def config_dir(self) -> Path:
        return self.root / "config"


def delay_level_table(levels: str) -> dict[int, int]:
    """``messageDelayLevel`` ("1s 5s ... 2h") as level (from 1) -> delay in ms; units s, m, h, d."""
    table = {}
    for level, item in enumerate(levels.split(" "), start=1):
        unit = _TIME_UNITS.get(item[-1:])
        try:
            amount = int(item[:-1])
        except ValueError:
            amount = None
        if unit is None or amount is None:
            raise ValueError(f"messageDelayLevel item {item!r} is not a number followed by s, m, h or d")
        table[level] = amount * unit
    return table
