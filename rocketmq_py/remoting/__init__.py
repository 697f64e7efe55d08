"""RocketMQ remoting over asyncio: frames, request/response matching, processors, client and server.

This layer moves ``RemotingCommand`` frames and knows nothing about messages.
"""
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
from rocketmq_py.remoting.future import Outcome, ResponseFuture
from rocketmq_py.remoting.invoker import InvokeCallback
from rocketmq_py.remoting.lanes import Lane
from rocketmq_py.remoting.listener import ConnectionListener
from rocketmq_py.remoting.loop import new_event_loop, uvloop_enabled
from rocketmq_py.remoting.processor import (
    REJECT_REQUEST_REMARK,
    ProcessorTable,
    RequestContext,
    RequestHook,
    RequestProcessor,
    RequestRefusedError,
    SyncProcessor,
)
from rocketmq_py.remoting.protocol import RemotingConnection
from rocketmq_py.remoting.server import RemotingServer
from rocketmq_py.remoting.tls import ClientAuth, TlsConfig, TlsMode

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
