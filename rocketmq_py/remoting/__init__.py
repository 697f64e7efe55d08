"""RocketMQ remoting over asyncio: frames, request/response matching, processors, dispatching, client and server.

This layer moves ``RemotingCommand`` frames and knows nothing about messages.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from rocketmq_py._lazy import lazy_exports

#: public name -> the module that defines it (imported on first access: a client that needs only the
#: connection does not pay for the server, and the broker does not pay for the blocking facade)
_LAZY_NAMES: dict[str, str] = {
    "BackgroundLoop": "rocketmq_py.remoting.blocking",
    "BlockingRemotingClient": "rocketmq_py.remoting.blocking",
    "ClientAuth": "rocketmq_py.remoting.tls",
    "ConnectionListener": "rocketmq_py.remoting.protocol",
    "DEFAULT_SERIALIZE_TYPE": "rocketmq_py.remoting.command",
    "InvokeCallback": "rocketmq_py.remoting.invoker",
    "Lane": "rocketmq_py.remoting.lanes",
    "OpaqueCounter": "rocketmq_py.remoting.command",
    "Outcome": "rocketmq_py.remoting.future",
    "ProcessorTable": "rocketmq_py.remoting.processor",
    "REJECT_REQUEST_REMARK": "rocketmq_py.remoting.processor",
    "RemotingClient": "rocketmq_py.remoting.client",
    "RemotingClientConfig": "rocketmq_py.remoting.config",
    "RemotingCommand": "rocketmq_py.remoting.command",
    "RemotingConnection": "rocketmq_py.remoting.protocol",
    "RemotingServer": "rocketmq_py.remoting.server",
    "RemotingServerConfig": "rocketmq_py.remoting.config",
    "RemotingSysResponseCode": "rocketmq_py.remoting.command",
    "RequestContext": "rocketmq_py.remoting.protocol",
    "RequestDispatcher": "rocketmq_py.remoting.dispatcher",
    "RequestHook": "rocketmq_py.remoting.processor",
    "RequestProcessor": "rocketmq_py.remoting.processor",
    "RequestRefusedError": "rocketmq_py.remoting.processor",
    "ResponseFuture": "rocketmq_py.remoting.future",
    "SyncProcessor": "rocketmq_py.remoting.processor",
    "TlsConfig": "rocketmq_py.remoting.tls",
    "TlsMode": "rocketmq_py.remoting.tls",
    "create_request": "rocketmq_py.remoting.command",
    "create_response": "rocketmq_py.remoting.command",
    "mark_oneway": "rocketmq_py.remoting.command",
    "mark_response": "rocketmq_py.remoting.command",
    "new_event_loop": "rocketmq_py.remoting.loop",
    "next_opaque": "rocketmq_py.remoting.command",
    "parse_address": "rocketmq_py.remoting.client",
    "uvloop_enabled": "rocketmq_py.remoting.loop",
}

__all__ = [
    "BackgroundLoop",
    "BlockingRemotingClient",
    "ClientAuth",
    "ConnectionListener",
    "DEFAULT_SERIALIZE_TYPE",
    "InvokeCallback",
    "Lane",
    "OpaqueCounter",
    "Outcome",
    "ProcessorTable",
    "REJECT_REQUEST_REMARK",
    "RemotingClient",
    "RemotingClientConfig",
    "RemotingCommand",
    "RemotingConnection",
    "RemotingServer",
    "RemotingServerConfig",
    "RemotingSysResponseCode",
    "RequestContext",
    "RequestDispatcher",
    "RequestHook",
    "RequestProcessor",
    "RequestRefusedError",
    "ResponseFuture",
    "SyncProcessor",
    "TlsConfig",
    "TlsMode",
    "create_request",
    "create_response",
    "mark_oneway",
    "mark_response",
    "new_event_loop",
    "next_opaque",
    "parse_address",
    "uvloop_enabled",
]

if TYPE_CHECKING:
    from rocketmq_py.remoting.blocking import BackgroundLoop, BlockingRemotingClient
    from rocketmq_py.remoting.client import RemotingClient, parse_address
    from rocketmq_py.remoting.command import (
        DEFAULT_SERIALIZE_TYPE,
        OpaqueCounter,
        RemotingCommand,
        RemotingSysResponseCode,
        create_request,
        create_response,
        mark_oneway,
        mark_response,
        next_opaque,
    )
    from rocketmq_py.remoting.config import RemotingClientConfig, RemotingServerConfig
    from rocketmq_py.remoting.dispatcher import RequestDispatcher
    from rocketmq_py.remoting.future import Outcome, ResponseFuture
    from rocketmq_py.remoting.invoker import InvokeCallback
    from rocketmq_py.remoting.lanes import Lane
    from rocketmq_py.remoting.loop import new_event_loop, uvloop_enabled
    from rocketmq_py.remoting.processor import (
        REJECT_REQUEST_REMARK,
        ProcessorTable,
        RequestHook,
        RequestProcessor,
        RequestRefusedError,
        SyncProcessor,
    )
    from rocketmq_py.remoting.protocol import ConnectionListener, RemotingConnection, RequestContext
    from rocketmq_py.remoting.server import RemotingServer
    from rocketmq_py.remoting.tls import ClientAuth, TlsConfig, TlsMode

__getattr__, __dir__ = lazy_exports(__name__, _LAZY_NAMES)
