"""ACL, as Java RocketMQ 4.9's acl module (plain_acl.yml accounts, whitelists, signatures, per-resource rights).

The client side (signing) lives in :mod:`rocketmq_py.common.acl`; this package is what the broker checks.
"""
from rocketmq_py.acl.access_resource import AccessResource, parse_request
from rocketmq_py.acl.errors import AclError
from rocketmq_py.acl.permission_manager import DEFAULT_PLAIN_ACL_FILE, WATCH_INTERVAL_S, PlainPermissionManager
from rocketmq_py.acl.plain_file import PlainAccessConfig
from rocketmq_py.acl.remote_address import address_pattern
from rocketmq_py.acl.validator import PlainAccessValidator

__all__ = [
    "AccessResource",
    "AclError",
    "DEFAULT_PLAIN_ACL_FILE",
    "PlainAccessConfig",
    "PlainAccessValidator",
    "PlainPermissionManager",
    "WATCH_INTERVAL_S",
    "address_pattern",
    "parse_request",
]
