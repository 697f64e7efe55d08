"""Headers of the ACL admin RPCs (Java's CreateAccessConfigRequestHeader, DeleteAccessConfigRequestHeader,
UpdateGlobalWhiteAddrsConfigRequestHeader and GetBrokerAclConfigResponseHeader): UPDATE_AND_CREATE_ACL_CONFIG (50),
DELETE_ACL_CONFIG (51), GET_BROKER_CLUSTER_ACL_INFO (52) and UPDATE_GLOBAL_WHITE_ADDRS_CONFIG (53)."""
from __future__ import annotations

from dataclasses import dataclass

from rocketmq_py.common.headers.base import CommandHeader, wire


@dataclass(slots=True)
class CreateAccessConfigRequestHeader(CommandHeader):
    """``topic_perms`` and ``group_perms`` are comma-separated ``name=PERM`` entries."""

    access_key: str = wire("accessKey", required=True)
    secret_key: str | None = wire("secretKey")
    white_remote_address: str | None = wire("whiteRemoteAddress")
    admin: bool = wire("admin", False)
    default_topic_perm: str | None = wire("defaultTopicPerm")
    default_group_perm: str | None = wire("defaultGroupPerm")
    topic_perms: str | None = wire("topicPerms")
    group_perms: str | None = wire("groupPerms")


@dataclass(slots=True)
class DeleteAccessConfigRequestHeader(CommandHeader):
    access_key: str = wire("accessKey", required=True)


@dataclass(slots=True)
class UpdateGlobalWhiteAddrsConfigRequestHeader(CommandHeader):
    """``global_white_addrs`` is comma-separated; an empty ``acl_file_full_path`` means the default ACL file."""

    global_white_addrs: str = wire("globalWhiteAddrs", required=True)
    acl_file_full_path: str = wire("aclFileFullPath", required=True)


@dataclass(slots=True)
class GetBrokerAclConfigResponseHeader(CommandHeader):
    """``version`` is the default file's DataVersion JSON; ``all_acl_file_version`` maps each file to its own."""

    version: str = wire("version", required=True)
    all_acl_file_version: str | None = wire("allAclFileVersion")
    broker_name: str = wire("brokerName", required=True)
    broker_addr: str = wire("brokerAddr", required=True)
    cluster_name: str = wire("clusterName", required=True)
