"""The official broker with ``aclEnable=true`` and a given ``plain_acl.yml``.

The file goes where Java 4.9 looks for it: ``$ROCKETMQ_HOME/conf/plain_acl.yml``
(the harness sets ROCKETMQ_HOME and ``-Drocketmq.home.dir`` to the work dir;
``-Drocketmq.acl.plain.file`` would move it, relative to that home).
"""

from __future__ import annotations

from pathlib import Path

from . import wire
from .processes import JavaBroker


def acl_file_of(home: Path) -> Path:
    return home / "conf" / "plain_acl.yml"


class JavaAclBroker(JavaBroker):
    """A JavaBroker whose readiness probe does not need an unsigned request answered (ACL refuses those)."""

    def __init__(self, namesrv, plain_acl: str, **kwargs) -> None:
        extra = dict(kwargs.pop("extra_config", None) or {})
        extra["aclEnable"] = True
        super().__init__(namesrv, extra_config=extra, **kwargs)
        self.plain_acl = plain_acl

    @property
    def acl_file(self) -> Path:
        return acl_file_of(self.workdir)

    def _prepare(self) -> list[str]:
        args = super()._prepare()
        if not self.acl_file.exists():
            self.acl_file.parent.mkdir(parents=True, exist_ok=True)
            self.acl_file.write_text(self.plain_acl)
        return args

    def _ready(self) -> bool:
        if not self._booted():
            return False
        body = wire.cluster_info(self.namesrv_addr, timeout=2.0, tls=self.namesrv_tls)
        return (f'"{self.broker_name}"'.encode() in body and self.addr.encode() in body
                and wire.port_open("127.0.0.1", self.port))


#: The accounts of the ``acl_cluster`` fixture: an admin, and a user denied every topic.
ADMIN_AND_DENIED_ACL = """\
globalWhiteRemoteAddresses: []
accounts:
  - accessKey: py-admin
    secretKey: py-admin-secret-1
    whiteRemoteAddress:
    admin: true
  - accessKey: py-denied
    secretKey: py-denied-secret-1
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: PUB|SUB
"""
