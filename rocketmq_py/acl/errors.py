"""The one error of the ACL checks (Java's acl/common/AclException)."""
from __future__ import annotations

from rocketmq_py.errors import RocketMQError

#: The Java class name a refusal's remark starts with, so tools that match on it work with this broker.
JAVA_EXCEPTION_NAME = "org.apache.rocketmq.acl.common.AclException"


class AclError(RocketMQError):
    """A request fails the ACL checks, or an ACL file or ACL admin request is not valid."""

    @property
    def java_remark(self) -> str:
        """The remark Java's broker answers with: ``<exception class>: <message>``."""
        return f"{JAVA_EXCEPTION_NAME}: {self}"
