"""A DLedger node's settings (Java's ``DLedgerConfig``, dledger-all-0.3.1.2), with its names in Python spelling.

``peers`` is DLedger's ``n0-127.0.0.1:40911;n1-127.0.0.1:40912;...``: each member's id, a dash, and the
address its peer port listens on. :meth:`DLedgerConfig.for_commit_log` fills the settings from the
``broker.conf`` keys the way RocketMQ 4.9.7's ``DLedgerCommitLog`` does.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from rocketmq_py.errors import ConfigError

__all__ = ["DLedgerConfig", "parse_peers"]

_INDEX_UNIT_SIZE = 32


def parse_peers(peers: str) -> dict[str, str]:
    """``n0-host:port;n1-host:port`` as member id -> address, in the order given.

    As Java, an id is the text before the first dash and the address is the rest.
    """
    members: dict[str, str] = {}
    for item in peers.split(";"):
        member_id, dash, address = item.strip().partition("-")
        host, colon, port = address.rpartition(":")
        if not member_id or not dash or not host or not colon or not port.isdigit() or not 0 < int(port) < 65536:
            raise ConfigError(f"dLegerPeers {peers!r}: {item!r} is not a member as id-host:port "
                              f"(write the members as n0-127.0.0.1:40911;n1-127.0.0.1:40912;...)")
        if member_id in members:
            raise ConfigError(f"dLegerPeers {peers!r}: member {member_id} is listed twice")
        members[member_id] = address
    return members


@dataclass
class DLedgerConfig:
    group: str = "default"
    self_id: str = "n0"
    peers: str = "n0-localhost:20911"
    store_base_dir: str = os.path.join(os.sep, "tmp", "dledgerstore")
    #: Where the data files go; None means ``{storeBaseDir}/dledger-{selfId}/data``.
    data_store_path: str | None = None

    #: A follower more than this many bytes (and 1000 entries) behind gets at most ``peerPushQuota`` bytes a
    #: second, so catching it up does not starve the others.
    peer_push_throttle_point: int = 300 * 1024 * 1024
    peer_push_quota: int = 20 * 1024 * 1024
    max_pending_requests_num: int = 10000
    #: How long an append waits for a majority before it fails with WAIT_QUORUM_ACK_TIMEOUT.
    max_wait_ack_time_ms: int = 2500
    #: How long a leader waits for a follower's answer to a push before it pushes that entry again.
    max_push_time_out_ms: int = 1000
    enable_leader_elector: bool = True
    heart_beat_time_interval_ms: int = 2000
    #: A follower that misses this many heartbeats in a row stands for election.
    max_heart_beat_leak: int = 3
    min_vote_interval_ms: int = 300
    max_vote_interval_ms: int = 1000

    file_reserved_hours: int = 72
    delete_when: str = "04"
    disk_space_ratio_to_check_expired: float = 0.70
    disk_space_ratio_to_force_clean: float = 0.85
    #: Above ``diskSpaceRatioToForceClean``, delete data files before they expire: here only those the state
    #: machine lets go (the broker: files whose records every consumer has consumed).
    enable_disk_force_clean: bool = True
    #: Our own setting: let that forced clean delete the oldest files whatever they hold, as Java does.
    clean_unconsumed_file_forcibly_enable: bool = False

    flush_file_interval: int = 10
    check_point_interval: int = 3000

    mapped_file_size_for_entry_data: int = 1024 * 1024 * 1024
    mapped_file_size_for_entry_index: int = _INDEX_UNIT_SIZE * 5 * 1024 * 1024

    #: Members (``n1`` or ``n1;n2``) the leader hands leadership to when one of them is alive and caught up.
    preferred_leader_ids: str | None = None
    max_leadership_transfer_wait_index: int = 1000
    min_take_leadership_vote_interval_ms: int = 30
    max_take_leadership_vote_interval_ms: int = 100
    leadership_transfer_wait_timeout: int = 1000

    #: Push several entries to a follower in one request (``isEnableBatchPush``).
    enable_batch_push: bool = False
    max_batch_push_size: int = 4 * 1024

    # --- derived ---------------------------------------------------------------------------------

    @property
    def peer_map(self) -> dict[str, str]:
        """Member id -> peer address, in the order of ``peers``."""
        return parse_peers(self.peers)

    @property
    def self_address(self) -> str:
        address = self.peer_map.get(self.self_id)
        if address is None:
            raise ConfigError(f"dLegerSelfId {self.self_id!r} is not one of the members of dLegerPeers "
                              f"{self.peers!r}")
        return address

    @property
    def default_path(self) -> str:
        """``{storeBaseDir}/dledger-{selfId}``: the index files, ``checkpoint`` and ``currterm``."""
        return os.path.join(self.store_base_dir, f"dledger-{self.self_id}")

    @property
    def data_path(self) -> str:
        return self.data_store_path or os.path.join(self.default_path, "data")

    @property
    def index_path(self) -> str:
        return os.path.join(self.default_path, "index")

    @property
    def preferred_leaders(self) -> list[str]:
        return [member for member in (self.preferred_leader_ids or "").split(";") if member]

    def validate(self) -> None:
        """Raise :class:`ConfigError` naming the first setting that cannot start a node."""
        self.self_address  # noqa: B018 - the check is the property
        if not self.group:
            raise ConfigError("dLegerGroup is empty: name the DLedger group (usually the broker name)")
        if self.mapped_file_size_for_entry_index % _INDEX_UNIT_SIZE:
            raise ConfigError(f"mappedFileSizeForEntryIndex {self.mapped_file_size_for_entry_index} is not a "
                              f"multiple of the {_INDEX_UNIT_SIZE}-byte index unit")
        if self.mapped_file_size_for_entry_data < 4096:
            raise ConfigError(f"mappedFileSizeForEntryData {self.mapped_file_size_for_entry_data} is too small "
                              f"for a data file")
        if not 0 < self.min_vote_interval_ms < self.max_vote_interval_ms:
            raise ConfigError("minVoteIntervalMs must be above 0 and below maxVoteIntervalMs")
        if not 0 < self.min_take_leadership_vote_interval_ms < self.max_take_leadership_vote_interval_ms:
            raise ConfigError("minTakeLeadershipVoteIntervalMs must be above 0 and below "
                              "maxTakeLeadershipVoteIntervalMs")
        if self.heart_beat_time_interval_ms <= 0 or self.max_heart_beat_leak <= 0:
            raise ConfigError("heartBeatTimeIntervalMs and maxHeartBeatLeak must be above 0")

    @classmethod
    def for_commit_log(
        cls,
        *,
        group: str,
        self_id: str,
        peers: str,
        store_path_root_dir: str,
        store_path_dledger_commit_log: str | None = None,
        mapped_file_size_commit_log: int = 1024 * 1024 * 1024,
        delete_when: str = "04",
        file_reserved_time: int = 72,
        preferred_leader_id: str | None = None,
        enable_batch_push: bool = False,
        disk_max_used_space_ratio: int = 75,
        clean_file_forcibly_enable: bool = True,
        clean_unconsumed_file_forcibly_enable: bool = False,
    ) -> DLedgerConfig:
        """The settings RocketMQ 4.9.7's ``DLedgerCommitLog`` gives its DLedger server, from the broker's keys
        (``dLegerGroup``, ``dLegerSelfId``, ``dLegerPeers``, ``storePathRootDir``,
        ``storePathDLedgerCommitLog``, ``mappedFileSizeCommitLog``, ``deleteWhen``, ``fileReservedTime``,
        ``preferredLeaderId``, ``isEnableBatchPush``, ``diskMaxUsedSpaceRatio``, ``cleanFileForciblyEnable``,
        and our ``cleanUnconsumedFileForciblyEnable``).
        """
        return cls(
            group=group, self_id=self_id, peers=peers, store_base_dir=store_path_root_dir,
            data_store_path=store_path_dledger_commit_log or None,
            mapped_file_size_for_entry_data=mapped_file_size_commit_log, delete_when=delete_when,
            # Java keeps DLedger files an hour longer than the broker's fileReservedTime.
            file_reserved_hours=file_reserved_time + 1, preferred_leader_ids=preferred_leader_id,
            enable_batch_push=enable_batch_push,
            disk_space_ratio_to_check_expired=disk_max_used_space_ratio / 100,
            enable_disk_force_clean=clean_file_forcibly_enable,
            clean_unconsumed_file_forcibly_enable=clean_unconsumed_file_forcibly_enable,
        )
