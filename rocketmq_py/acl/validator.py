"""The check the broker runs before every request when ``aclEnable=true`` (Java's
acl/plain/PlainAccessValidator, registered as an RPC hook by BrokerController.initialAcl, rocketmq-all-4.9.8).

A refusal is answered as Java's remoting layer answers an exception thrown by
a hook: SYSTEM_ERROR (1), remark ``org.apache.rocketmq.acl.common.AclException: <message>``
(Java appends the first stack frame, which names no part of the request).
"""
from __future__ import annotations

import logging
import os
import time

from rocketmq_py.acl.access_resource import parse_request
from rocketmq_py.acl.errors import AclError
from rocketmq_py.acl.permission_manager import DEFAULT_PLAIN_ACL_FILE, PlainPermissionManager
from rocketmq_py.remoting import RemotingCommand, RemotingSysResponseCode, RequestContext, RequestRefusedError

__all__ = ["PlainAccessValidator"]

_log = logging.getLogger(__name__)

#: At most one refusal line per this many seconds (a misconfigured client retries in a loop).
_REFUSAL_LOG_INTERVAL_S = 10.0


class PlainAccessValidator:
    def __init__(self, rocketmq_home: str | os.PathLike[str], plain_file: str = DEFAULT_PLAIN_ACL_FILE) -> None:
        self.manager = PlainPermissionManager(rocketmq_home, plain_file)
        self._last_log = 0.0
        self._quiet_refusals = 0

    def check(self, request: RemotingCommand, remote_address: str | None) -> None:
        """Return when ``request`` may go on; raise :class:`AclError` when not."""
        self.manager.validate(parse_request(request, remote_address))

    def __call__(self, ctx: RequestContext, request: RemotingCommand) -> None:
        """The request hook: refuses with Java's code and remark."""
        try:
            self.check(request, ctx.remote_address)
        except AclError as error:
            self._log_refusal(request, ctx.remote_address, error)
            raise RequestRefusedError(RemotingSysResponseCode.SYSTEM_ERROR, error.java_remark) from None

    def _log_refusal(self, request: RemotingCommand, remote_address: str, error: AclError) -> None:
        now = time.monotonic()
        if now - self._last_log < _REFUSAL_LOG_INTERVAL_S:
            self._quiet_refusals += 1
            return
        more = f" ({self._quiet_refusals} more refusals not logged)" if self._quiet_refusals else ""
        self._last_log, self._quiet_refusals = now, 0
        _log.warning("ACL refused request code %d from %s: %s%s", request.code, remote_address, error, more)
