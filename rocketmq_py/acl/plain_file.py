"""The ``plain_acl.yml`` format (Java's common/PlainAccessConfig, the YAML helpers of acl/common/AclUtils and the
file-editing half of acl/plain/PlainPermissionManager, rocketmq-all-4.9.8).

::

    globalWhiteRemoteAddresses: ["10.10.103.*", "192.168.0.*"]
    accounts:
      - accessKey: RocketMQ            # more than 6 characters
        secretKey: 12345678            # more than 6 characters
        whiteRemoteAddress:            # an address pattern that needs no signature
        admin: false
        defaultTopicPerm: DENY         # PUB, SUB, PUB|SUB or DENY (the default)
        defaultGroupPerm: SUB
        topicPerms: [topicA=DENY, topicB=PUB|SUB]
        groupPerms: [groupA=DENY, groupB=PUB|SUB]
    dataVersion: [{counter: 1, timestamp: 1700000000000}]   # written by the ACL admin requests

The admin requests rewrite the file as Java does: the whole document is read,
one part changed, ``dataVersion`` stepped, and the document written back.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from rocketmq_py.acl.errors import AclError
from rocketmq_py.common.data_version import DataVersion

GLOBAL_WHITE_ADDRS = "globalWhiteRemoteAddresses"
ACCOUNTS = "accounts"
DATA_VERSION = "dataVersion"
KEY_MIN_LENGTH = 6


def java_split(text: str | None, separator: str) -> list[str] | None:
    """Java's ``UtilAll.split`` (``String.split``): trailing empty parts dropped, ``""`` is ``[""]``."""
    if text is None:
        return None
    if separator not in text:
        return [text]
    parts = text.split(separator)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _texts(value: Any) -> list[str] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise AclError(f"expected a YAML list, got {value!r}")
    return [str(item) for item in value]


def _flag(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() == "true"
    return bool(value)


@dataclass
class PlainAccessConfig:
    """One account of the file, as written (permissions still text)."""

    access_key: str | None = None
    secret_key: str | None = None
    white_remote_address: str | None = None
    admin: bool = False
    default_topic_perm: str | None = None
    default_group_perm: str | None = None
    topic_perms: list[str] | None = None
    group_perms: list[str] | None = None

    @classmethod
    def from_yaml(cls, entry: Any) -> "PlainAccessConfig":
        if not isinstance(entry, dict):
            raise AclError(f"an entry of accounts must be a mapping, got {entry!r}")
        return cls(
            access_key=_text(entry.get("accessKey")),
            secret_key=_text(entry.get("secretKey")),
            white_remote_address=_text(entry.get("whiteRemoteAddress")),
            admin=_flag(entry.get("admin", False)),
            default_topic_perm=_text(entry.get("defaultTopicPerm")),
            default_group_perm=_text(entry.get("defaultGroupPerm")),
            topic_perms=_texts(entry.get("topicPerms")),
            group_perms=_texts(entry.get("groupPerms")),
        )

    def to_json(self) -> dict[str, Any]:
        """The account as Java's PlainAccessConfig bean serializes it (fastjson: sorted names, nulls left out)."""
        fields = {"accessKey": self.access_key, "admin": self.admin, "defaultGroupPerm": self.default_group_perm,
                  "defaultTopicPerm": self.default_topic_perm, "groupPerms": self.group_perms,
                  "secretKey": self.secret_key, "topicPerms": self.topic_perms,
                  "whiteRemoteAddress": self.white_remote_address}
        return {name: value for name, value in fields.items() if value is not None}

    def check_keys(self) -> None:
        """Both keys must be longer than 6 characters (Java's checkPlainAccessConfig)."""
        if (self.access_key is None or self.secret_key is None or len(self.access_key) <= KEY_MIN_LENGTH
                or len(self.secret_key) <= KEY_MIN_LENGTH):
            raise AclError(f"The accessKey={_java_str(self.access_key)} and secretKey={_java_str(self.secret_key)} "
                           "cannot be null and length should longer than 6")

    def merged_into(self, existing: dict[str, Any] | None) -> dict[str, Any]:
        """The YAML mapping of this account, written over ``existing`` as UPDATE_AND_CREATE_ACL_CONFIG does:
        absent texts keep what was there, ``admin`` is always written."""
        entry: dict[str, Any] = {} if existing is None else existing
        if not self.access_key or len(self.access_key) <= KEY_MIN_LENGTH:
            raise AclError(f"The accessKey={_java_str(self.access_key)} cannot be null and length should longer "
                           "than 6")
        entry["accessKey"] = self.access_key
        if self.secret_key:
            if len(self.secret_key) <= KEY_MIN_LENGTH:
                raise AclError(f"The secretKey={self.secret_key} value length should longer than 6")
            entry["secretKey"] = self.secret_key
        if self.white_remote_address is not None:
            entry["whiteRemoteAddress"] = self.white_remote_address
        entry["admin"] = self.admin
        if self.default_topic_perm:
            entry["defaultTopicPerm"] = self.default_topic_perm
        if self.default_group_perm:
            entry["defaultGroupPerm"] = self.default_group_perm
        if self.topic_perms is not None:
            entry["topicPerms"] = list(self.topic_perms)
        if self.group_perms is not None:
            entry["groupPerms"] = list(self.group_perms)
        return entry


def _java_str(value: str | None) -> str:
    return "null" if value is None else value


@dataclass
class AclDocument:
    """One ACL file as read."""

    global_white_addrs: list[str] = field(default_factory=list)
    accounts: list[PlainAccessConfig] = field(default_factory=list)
    data_version: DataVersion = field(default_factory=DataVersion)


def _yaml() -> Any:
    import yaml

    return yaml


def read_mapping(path: str) -> dict[str, Any] | None:
    """The file's top-level mapping; ``None`` when the file is missing or empty."""
    yaml = _yaml()
    try:
        with open(path, encoding="utf-8") as stream:
            data = yaml.safe_load(stream)
    except FileNotFoundError:
        return None
    except (OSError, yaml.YAMLError) as error:
        raise AclError(f"cannot read the ACL file {path}: {error}") from None
    if data is None:
        return None
    if not isinstance(data, dict):
        raise AclError(f"the ACL file {path} must hold a YAML mapping, not {type(data).__name__}")
    return data


def read_document(path: str) -> AclDocument | None:
    data = read_mapping(path)
    if not data:
        return None
    white = data.get(GLOBAL_WHITE_ADDRS)
    accounts = data.get(ACCOUNTS)
    if accounts is not None and not isinstance(accounts, list):
        raise AclError(f"{ACCOUNTS} in {path} must be a YAML list")
    document = AclDocument(
        global_white_addrs=[str(item) for item in _texts(white) or ()],
        accounts=[PlainAccessConfig.from_yaml(entry) for entry in accounts or ()],
    )
    versions = data.get(DATA_VERSION)
    if isinstance(versions, list) and versions and isinstance(versions[0], dict):
        document.data_version = DataVersion(int(versions[0].get("timestamp", 0)), int(versions[0].get("counter", 0)))
    return document


def write_mapping(path: str, data: dict[str, Any]) -> None:
    """Write ``data`` as block-style YAML (as SnakeYAML's dumpAsMap), through a temporary file so a reader
    (the file watch) never sees half a document."""
    text = _yaml().safe_dump(data, default_flow_style=False, sort_keys=False, allow_unicode=True)
    temporary = f"{path}.tmp"
    try:
        with open(temporary, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.replace(temporary, path)
    except OSError as error:
        raise AclError(f"cannot write the ACL file {path}: {error}") from None


def step_version(data: dict[str, Any]) -> DataVersion:
    """Advance the document's ``dataVersion`` (counter + 1, timestamp now) and return it."""
    version = DataVersion(counter=0)
    versions = data.get(DATA_VERSION)
    if isinstance(versions, list) and versions and isinstance(versions[0], dict):
        version = DataVersion(int(versions[0].get("timestamp", 0)), int(versions[0].get("counter", 0)))
    version.next_version()
    data[DATA_VERSION] = [{"counter": version.counter, "timestamp": version.timestamp}]
    return version
