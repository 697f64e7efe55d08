"""Namespaced key/value settings of the name server (Java's namesrv/kvconfig/KVConfigManager).

Persisted after every change to ``kvConfigPath`` in Java's format,
``{"configTable":{"<namespace>":{"key":"value"}}}``, with the tmp/bak write
method, so a Java name server can take the file over (and the other way round).
"""
from __future__ import annotations

import logging
import os

from rocketmq_py import codec
from rocketmq_py.common.config_file import read_file_with_backup, write_file_safely
from rocketmq_py.common.kv import KVTable
from rocketmq_py.errors import CodecError

_log = logging.getLogger(__name__)


class KVConfigManager:
    def __init__(self, path: str | os.PathLike[str] | None) -> None:
        self.path = path
        self.config_table: dict[str, dict[str, str]] = {}

    def load(self) -> None:
        if self.path is None:
            return
        text = read_file_with_backup(self.path)
        if text is None:
            return
        try:
            data = codec.json_loads(text)
            table = data.get("configTable") if isinstance(data, dict) else None
        except (CodecError, ValueError) as error:
            _log.warning("cannot read the KV config %s (%s); starting without it", self.path, error)
            return
        for namespace, entries in (table or {}).items():
            if isinstance(entries, dict):
                self.config_table[str(namespace)] = {str(k): str(v) for k, v in entries.items()}
        _log.info("loaded the KV config from %s: %d namespaces", self.path, len(self.config_table))

    def persist(self) -> None:
        if self.path is None:
            return
        table = {ns: dict(sorted(entries.items())) for ns, entries in sorted(self.config_table.items())}
        try:
            write_file_safely(self.path, codec.json_dumps({"configTable": table}, pretty=True))
        except OSError:
            _log.exception("persisting the KV config to %s failed", self.path)

    def put(self, namespace: str, key: str, value: str) -> None:
        entries = self.config_table.setdefault(namespace, {})
        previous = entries.get(key)
        entries[key] = value
        _log.info("KV config %s %s: %s=%s", "updated" if previous is not None else "created", namespace, key, value)
        self.persist()

    def get(self, namespace: str, key: str) -> str | None:
        return self.config_table.get(namespace, {}).get(key)

    def delete(self, namespace: str, key: str) -> None:
        entries = self.config_table.get(namespace)
        if entries is not None and key in entries:
            value = entries.pop(key)
            _log.info("KV config deleted %s: %s=%s", namespace, key, value)
        self.persist()

    def get_kv_list_by_namespace(self, namespace: str) -> bytes | None:
        """The KVTable body of ``namespace``, or ``None`` when the namespace is unknown."""
        entries = self.config_table.get(namespace)
        return KVTable(dict(entries)).encode() if entries is not None else None
