"""The accounts and whitelists of the ACL files, and the check of each request against them (Java's
acl/plain/PlainPermissionManager and srvutil/AclFileWatchService, rocketmq-all-4.9.8).

Files: ``$ROCKETMQ_HOME/conf/plain_acl.yml`` (or the ``rocketmq.acl.plain.file`` setting, relative to
``$ROCKETMQ_HOME`` unless absolute) and every ``*.yml`` / ``*.yaml`` under ``$ROCKETMQ_HOME/conf/acl``.
An access key defined in two files counts in the first only. :meth:`reload_if_changed` re-reads the files
when one changed, appeared or went away (the broker calls it every 5 s, as Java's watch service polls); a
file that does not read leaves the previous accounts in force.

A request passes when its address is in a global whitelist, or it names an account and comes from that
account's whitelist, or its signature is right and the account holds the permissions it needs. Every
refusal is an :class:`AclError` with Java's message.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rocketmq_py.acl import permission
from rocketmq_py.acl.access_resource import AccessResource, describe_resource, is_group_resource
from rocketmq_py.acl.errors import AclError
from rocketmq_py.acl.plain_file import (
    ACCOUNTS,
    GLOBAL_WHITE_ADDRS,
    PlainAccessConfig,
    read_document,
    read_mapping,
    step_version,
    write_mapping,
)
from rocketmq_py.acl.remote_address import AddressPattern, address_pattern
from rocketmq_py.common.acl import calculate_signature
from rocketmq_py.common.data_version import DataVersion
from rocketmq_py.common.topic import RMQ_SYS_TRACE_TOPIC

__all__ = ["Account", "PlainPermissionManager", "DEFAULT_PLAIN_ACL_FILE", "WATCH_INTERVAL_S"]

_log = logging.getLogger(__name__)

DEFAULT_PLAIN_ACL_FILE = "conf/plain_acl.yml"
WATCH_INTERVAL_S = 5.0
_ACL_DIR = "conf/acl"
_TOOLS_FILE = "tools.yml"


@dataclass
class Account:
    """One account, ready to check requests against (Java's PlainAccessResource as the broker owns it)."""

    access_key: str
    secret_key: str
    admin: bool
    default_topic_perm: int
    default_group_perm: int
    #: Resource -> permission from topicPerms and groupPerms (groups as ``%RETRY%group``); ``None`` when both empty.
    resources: dict[str, int] | None
    white_address: AddressPattern

    @classmethod
    def build(cls, config: PlainAccessConfig) -> "Account":
        config.check_keys()
        resources = {**permission.parse_resource_perms(config.group_perms, topics=False),
                     **permission.parse_resource_perms(config.topic_perms, topics=True)}
        return cls(
            access_key=str(config.access_key), secret_key=str(config.secret_key), admin=config.admin,
            default_topic_perm=permission.parse_perm(config.default_topic_perm),
            default_group_perm=permission.parse_perm(config.default_group_perm),
            resources=resources or None, white_address=address_pattern(config.white_remote_address),
        )


@dataclass
class _Tables:
    """Everything read from the files, swapped in as one piece."""

    files: list[str] = field(default_factory=list)
    accounts: dict[str, Account] = field(default_factory=dict)
    file_of_key: dict[str, str] = field(default_factory=dict)
    global_white: list[AddressPattern] = field(default_factory=list)
    versions: dict[str, DataVersion] = field(default_factory=dict)


def _normalize(path: str | os.PathLike[str]) -> str:
    return os.path.normpath(os.path.abspath(path))


class PlainPermissionManager:
    def __init__(self, rocketmq_home: str | os.PathLike[str], plain_file: str = DEFAULT_PLAIN_ACL_FILE) -> None:
        if not str(rocketmq_home):
            raise AclError("aclEnable=true needs rocketmqHome (or the ROCKETMQ_HOME environment variable): the ACL "
                           f"file is read from $ROCKETMQ_HOME/{plain_file}")
        self.home = _normalize(rocketmq_home)
        self.acl_dir = _normalize(os.path.join(self.home, _ACL_DIR))
        self.default_file = _normalize(os.path.join(self.home, plain_file))
        #: Version of the default file (what Java reports as GET_BROKER_CLUSTER_ACL_INFO's ``version``).
        self.default_version = DataVersion(counter=0)
        self._tables = _Tables()
        self._stamps: dict[str, tuple[int, int]] = {}
        self.load()

    # --- files ---------------------------------------------------------------------------------------

    def acl_files(self) -> list[str]:
        """The ACL files now on disk: those under conf/acl (sorted), then the default file."""
        files: list[str] = []
        if os.path.isdir(self.acl_dir):
            for root, dirs, names in os.walk(self.acl_dir):
                dirs.sort()
                for name in sorted(names):
                    path = os.path.join(root, name)
                    if path == os.path.join(self.acl_dir, _TOOLS_FILE):
                        continue
                    if name.endswith((".yml", ".yaml")):
                        files.append(_normalize(path))
        if os.path.exists(self.default_file) and self.default_file not in files:
            files.append(self.default_file)
        return files

    def _ensure_default_file(self) -> None:
        # The global whitelist lives in the default file, so it must exist (Java creates it empty too).
        path = Path(self.default_file)
        if not path.exists():
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.touch()
            except OSError as error:
                raise AclError(f"cannot create the ACL file {path}: {error}") from None

    def _stamp(self, files: list[str]) -> dict[str, tuple[int, int]]:
        stamps = {}
        for path in files:
            try:
                status = os.stat(path)
            except OSError:
                continue
            stamps[path] = (status.st_mtime_ns, status.st_size)
        return stamps

    def load(self) -> None:
        """Read every ACL file; raise :class:`AclError` (and keep the previous tables) when one cannot be used."""
        self._ensure_default_file()
        files = self.acl_files()
        stamps = self._stamp(files)
        tables = _Tables(files=files)
        for path in files:
            document = read_document(path)
            if document is None:
                _log.warning("No data in ACL file %s", path)
                continue
            try:
                tables.global_white.extend(address_pattern(text) for text in document.global_white_addrs)
                for config in document.accounts:
                    account = Account.build(config)
                    if account.access_key in tables.file_of_key:
                        _log.warning("The accessKey %s is repeated in multiple ACL files; %s is ignored",
                                     account.access_key, path)
                        continue
                    tables.accounts[account.access_key] = account
                    tables.file_of_key[account.access_key] = path
            except AclError as error:
                raise AclError(f"{path}: {error}") from None
            tables.versions[path] = document.data_version
        self._tables = tables
        self._stamps = stamps
        if self.default_file in tables.versions:
            self.default_version.assign(tables.versions[self.default_file])
        _log.info("ACL loaded from %s: %d account(s), %d global white address pattern(s)",
                  ", ".join(files) or "(no file)", len(tables.accounts), len(tables.global_white))

    def reload_if_changed(self) -> bool:
        """Re-read the files if one changed since the last load; True when they were re-read."""
        stamps = self._stamp(self.acl_files())
        if stamps == self._stamps:
            return False
        try:
            self.load()
        except AclError as error:
            self._stamps = stamps  # warn once per change, not at every poll
            _log.warning("the ACL files changed but cannot be used, the previous ACL stays in force: %s", error)
            return False
        return True

    # --- checking a request ------------------------------------------------------------------------------

    def validate(self, resource: AccessResource) -> None:
        """Return if the request may go on; raise :class:`AclError` with Java's message if not."""
        tables = self._tables
        if any(pattern.match(resource.remote_ip) for pattern in tables.global_white):
            return
        if resource.access_key is None:
            raise AclError("No accessKey is configured")
        account = tables.accounts.get(resource.access_key)
        if account is None or resource.access_key not in tables.file_of_key:
            raise AclError(f"No acl config for {resource.access_key}")
        if account.white_address.match(resource.remote_ip):
            return
        if calculate_signature(resource.content, account.secret_key) != resource.signature:
            raise AclError(f"Check signature failed for accessKey={resource.access_key}")
        # Message traces go to the trace topic with the sender's credentials, whatever its topic rights.
        if resource.resources is not None and resource.resources.get(RMQ_SYS_TRACE_TOPIC) == permission.PUB:
            return
        self._check_perms(resource, account)

    @staticmethod
    def _check_perms(resource: AccessResource, account: Account) -> None:
        if permission.needs_admin(resource.request_code) and not account.admin:
            raise AclError(f"Need admin permission for request code={resource.request_code}, "
                           f"but accessKey={account.access_key} is not")
        if resource.resources is None:
            return
        if account.resources is None and account.admin:
            return
        owned_map = account.resources or {}
        for name, needed in resource.resources.items():
            group = is_group_resource(name)
            owned = owned_map.get(name)
            if owned is None:
                owned = account.default_group_perm if group else account.default_topic_perm
            if not permission.check_permission(needed, owned):
                raise AclError(f"No default permission for {describe_resource(name)}")

    # --- the ACL admin requests ------------------------------------------------------------------------------

    def update_account(self, config: PlainAccessConfig) -> bool:
        """Create or change one account (UPDATE_AND_CREATE_ACL_CONFIG) in the file that defines it, or in the
        default file; the new rights apply at once."""
        config.check_keys()
        permission.check_resource_perms(config.topic_perms)
        permission.check_resource_perms(config.group_perms)
        tables = self._tables
        key = str(config.access_key)
        path = tables.file_of_key.get(key, self.default_file)
        data = read_mapping(path) or {}
        accounts = data.get(ACCOUNTS)
        if not isinstance(accounts, list):
            accounts = []
        existing = next((entry for entry in accounts if isinstance(entry, dict) and entry.get("accessKey") == key),
                        None)
        if existing is not None:
            accounts.remove(existing)
        accounts.append(config.merged_into(existing))
        data[ACCOUNTS] = accounts
        account = Account.build(config)
        self._write(path, data)
        tables.accounts[key] = account
        tables.file_of_key[key] = path
        return True

    def delete_account(self, access_key: str | None) -> bool:
        """Remove one account (DELETE_ACL_CONFIG); False when no file defines it."""
        if not access_key:
            _log.error("DELETE_ACL_CONFIG without an access key")
            return False
        tables = self._tables
        path = tables.file_of_key.get(access_key)
        if path is None:
            return False
        data = read_mapping(path)
        if not data:
            _log.warning("No data found in %s when deleting access config of %s", path, access_key)
            return True
        accounts: Any = data.get(ACCOUNTS)
        for entry in accounts if isinstance(accounts, list) else ():
            if isinstance(entry, dict) and entry.get("accessKey") == access_key:
                accounts.remove(entry)
                del tables.file_of_key[access_key]
                tables.accounts.pop(access_key, None)
                self._write(path, data)
                return True
        return False

    def update_global_white_addrs(self, addresses: list[str] | None, file: str | None = None) -> bool:
        """Replace the global whitelist of one ACL file (UPDATE_GLOBAL_WHITE_ADDRS_CONFIG); it applies once the
        file watch re-reads the file, as in Java."""
        path = self.default_file if not file else _normalize(file)
        if addresses is None:
            _log.error("UPDATE_GLOBAL_WHITE_ADDRS_CONFIG without addresses")
            return False
        if not os.path.isfile(path):
            _log.error("the ACL file %s does not exist or is a directory", path)
            return False
        if not path.startswith(self.home):
            _log.error("the ACL file %s is not under rocketmqHome %s", path, self.home)
            return False
        if not path.endswith((".yml", ".yaml")):
            _log.error("%s is not an ACL file (*.yml or *.yaml)", path)
            return False
        for text in addresses:
            address_pattern(text)
        data = read_mapping(path) or {}
        data[GLOBAL_WHITE_ADDRS] = list(addresses)
        self._write(path, data)
        return True

    def _write(self, path: str, data: dict[str, Any]) -> None:
        version = step_version(data)
        write_mapping(path, data)
        self._tables.versions[path] = version
        if path == self.default_file:
            self.default_version.assign(version)

    # --- versions -------------------------------------------------------------------------------------------

    @property
    def versions(self) -> dict[str, DataVersion]:
        """Data version of each ACL file."""
        return dict(self._tables.versions)

    @property
    def files(self) -> list[str]:
        return list(self._tables.files)

    def all_acl_config(self) -> tuple[list[str], list[PlainAccessConfig]]:
        """The global white addresses and the accounts of every ACL file, read from disk now (Java 4.9.7's
        getAllAclConfig): the files in load order; of an access key repeated across files, the first."""
        white: list[str] = []
        accounts: list[PlainAccessConfig] = []
        seen: set[str | None] = set()
        for path in self._tables.files:
            document = read_document(path)
            if document is None:
                continue
            white.extend(document.global_white_addrs)
            for config in document.accounts:
                if config.access_key not in seen:
                    seen.add(config.access_key)
                    accounts.append(config)
        return white, accounts

    def account(self, access_key: str) -> Account | None:
        return self._tables.accounts.get(access_key) if access_key in self._tables.file_of_key else None
