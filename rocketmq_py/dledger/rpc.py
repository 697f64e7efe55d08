"""The peer RPCs: each member serves them on its own port and calls the others' (Java's DLedgerRpcNettyService).

A request is a RemotingCommand of the RPC's code (see :class:`~rocketmq_py.dledger.codes.RequestCode`) with
the request's fastjson body and no header fields. Every answer is a response frame of code 200 whose body
is the response object; the real status is the body's ``code``. A call that gets no answer within 3 s
(or no connection) ends as Java's does: a vote as a vote of UNKNOWN, a heartbeat as NETWORK_ERROR, the
others as NETWORK_ERROR with the request's common fields.

:attr:`PeerTransport.reachable` is the network between this member and each peer: tests cut it to make
a partition (a request to or from a member it rejects is dropped, as a lost packet is).
"""
from __future__ import annotations

import asyncio
import logging
from typing import Awaitable, Callable, Protocol, TypeVar

from rocketmq_py.dledger.codes import FRAME_RESPONSE_CODE, RequestCode, ResponseCode
from rocketmq_py.dledger.config import DLedgerConfig
from rocketmq_py.dledger.protocol import (
    REQUEST_CLASSES,
    AppendEntryRequest,
    AppendEntryResponse,
    GetEntriesRequest,
    GetEntriesResponse,
    HeartBeatRequest,
    HeartBeatResponse,
    LeadershipTransferRequest,
    LeadershipTransferResponse,
    MetadataRequest,
    MetadataResponse,
    PushEntryRequest,
    PushEntryResponse,
    RequestOrResponse,
    VoteRequest,
    VoteResponse,
)
from rocketmq_py.errors import BadRequestError, RocketMQError
from rocketmq_py.remoting.client import RemotingClient, parse_address
from rocketmq_py.remoting.command import RemotingCommand, create_request, create_response
from rocketmq_py.remoting.processor import ProcessorTable
from rocketmq_py.remoting.protocol import RequestContext
from rocketmq_py.remoting.server import RemotingServer

__all__ = ["PeerTransport", "PeerHandler", "build_request", "build_response", "RPC_TIMEOUT_MS"]

_log = logging.getLogger(__name__)

#: How long a call waits for its answer (Java's 3000 ms on every peer call).
RPC_TIMEOUT_MS = 3000

_Response = TypeVar("_Response", bound=RequestOrResponse)


class PeerHandler(Protocol):
    """What a member does with the requests it is sent."""

    async def handle_metadata(self, request: MetadataRequest) -> MetadataResponse: ...

    async def handle_append(self, request: AppendEntryRequest) -> AppendEntryResponse: ...

    async def handle_get(self, request: GetEntriesRequest) -> GetEntriesResponse: ...

    async def handle_vote(self, request: VoteRequest) -> VoteResponse: ...

    async def handle_heart_beat(self, request: HeartBeatRequest) -> HeartBeatResponse: ...

    async def handle_push(self, request: PushEntryRequest) -> PushEntryResponse | None:
        """None leaves the push unanswered (the follower dropped it)."""

    async def handle_leadership_transfer(self, request: LeadershipTransferRequest) -> LeadershipTransferResponse: ...


def build_request(code: RequestCode, body: RequestOrResponse) -> RemotingCommand:
    """The frame of a peer request (Java's ``createRequestCommand(code, null)`` with the JSON body)."""
    return create_request(int(code), body=body.encode())


def build_response(request: RemotingCommand, body: RequestOrResponse) -> RemotingCommand:
    """The frame of an answer: code 200 whatever the outcome, the status in the body."""
    return create_response(request, FRAME_RESPONSE_CODE, body=body.encode())


class PeerTransport:
    """Serves this member's peer port and sends its requests to the other members."""

    def __init__(self, config: DLedgerConfig, handler: PeerHandler) -> None:
        self.config = config
        self.handler = handler
        self.peer_map = config.peer_map
        _, port = parse_address(config.self_address)
        processors = ProcessorTable()
        self._handlers: dict[RequestCode, Callable[[RequestOrResponse], Awaitable[RequestOrResponse | None]]] = {
            RequestCode.METADATA: handler.handle_metadata,  # type: ignore[dict-item]
            RequestCode.APPEND: handler.handle_append,  # type: ignore[dict-item]
            RequestCode.GET: handler.handle_get,  # type: ignore[dict-item]
            RequestCode.VOTE: handler.handle_vote,  # type: ignore[dict-item]
            RequestCode.HEART_BEAT: handler.handle_heart_beat,  # type: ignore[dict-item]
            RequestCode.PUSH: handler.handle_push,  # type: ignore[dict-item]
            RequestCode.LEADERSHIP_TRANSFER: handler.handle_leadership_transfer,  # type: ignore[dict-item]
        }
        for code in RequestCode:
            processors.register(int(code), self._serve)
        # Java's Netty server listens on every interface of the port its own address names.
        self.server = RemotingServer("0.0.0.0", port, processors)
        self.client = RemotingClient()
        #: Whether this member can talk to a peer (by id): the network, which tests cut.
        self.reachable: Callable[[str], bool] = lambda member_id: True
        self._calls: set[asyncio.Task[object]] = set()

    async def start(self) -> None:
        await self.server.start()
        _log.info("[%s] DLedger peer port %d of group %s listening", self.config.self_id, self.server.port,
                  self.config.group)

    async def shutdown(self) -> None:
        await self.server.shutdown(timeout_s=1.0)
        await self.client.shutdown()

    # --- serving ------------------------------------------------------------------------------

    async def _serve(self, ctx: RequestContext, command: RemotingCommand) -> RemotingCommand | None:
        code = RequestCode(command.code)
        if code is RequestCode.PULL:
            # DLedger 0.3.1.2 registers PULL but has no handler: the Java server fails it with SYSTEM_ERROR.
            raise BadRequestError("DLedger does not serve PULL", field="code")
        request_class, _ = REQUEST_CLASSES[code]
        request = request_class.decode(command.body)
        if request.local_id is not None and not self.reachable(request.local_id):
            return None
        response = await self._handlers[code](request)
        return None if response is None else build_response(command, response)

    # --- calling ------------------------------------------------------------------------------

    async def _call(self, code: RequestCode, request: RequestOrResponse, response_class: type[_Response],
                    failed: Callable[[], _Response]) -> _Response:
        remote = request.remote_id
        address = self.peer_map.get(remote) if remote is not None else None
        if address is None:
            _log.error("[%s] %s to %s: not a member of group %s", self.config.self_id, code.name, remote,
                       self.config.group)
            return failed()
        if not self.reachable(remote):  # type: ignore[arg-type]
            return failed()
        try:
            answer = await self.client.invoke(address, build_request(code, request), RPC_TIMEOUT_MS)
        except (RocketMQError, OSError) as error:
            _log.debug("[%s] %s to %s at %s failed: %s", self.config.self_id, code.name, remote, address, error)
            return failed()
        if answer.code != FRAME_RESPONSE_CODE:
            _log.warning("[%s] %s to %s answered frame code %d: %s", self.config.self_id, code.name, remote,
                         answer.code, answer.remark)
            return failed()
        try:
            return response_class.decode(answer.body)
        except BadRequestError as error:
            _log.warning("[%s] %s to %s: unreadable answer: %s", self.config.self_id, code.name, remote, error)
            return failed()

    def _network_error(self, request: RequestOrResponse, response_class: type[_Response]) -> Callable[[], _Response]:
        def failed() -> _Response:
            response = response_class().copy_base_info(request)
            response.code = ResponseCode.NETWORK_ERROR
            return response
        return failed

    async def vote(self, request: VoteRequest) -> VoteResponse:
        return await self._call(RequestCode.VOTE, request, VoteResponse, VoteResponse)

    async def heart_beat(self, request: HeartBeatRequest) -> HeartBeatResponse:
        return await self._call(RequestCode.HEART_BEAT, request, HeartBeatResponse,
                                lambda: HeartBeatResponse(code=ResponseCode.NETWORK_ERROR))

    async def push(self, request: PushEntryRequest) -> PushEntryResponse:
        return await self._call(RequestCode.PUSH, request, PushEntryResponse,
                                self._network_error(request, PushEntryResponse))

    async def append(self, request: AppendEntryRequest) -> AppendEntryResponse:
        return await self._call(RequestCode.APPEND, request, AppendEntryResponse,
                                self._network_error(request, AppendEntryResponse))

    async def leadership_transfer(self, request: LeadershipTransferRequest) -> LeadershipTransferResponse:
        return await self._call(RequestCode.LEADERSHIP_TRANSFER, request, LeadershipTransferResponse,
                                self._network_error(request, LeadershipTransferResponse))

    def spawn(self, call: Awaitable[object]) -> asyncio.Task[object]:
        """Run ``call`` in the background (a push or heartbeat whose answer a callback takes); shutdown cancels
        what is still running."""
        task: asyncio.Task[object] = asyncio.ensure_future(call)
        self._calls.add(task)
        task.add_done_callback(self._calls.discard)
        return task

    def cancel_calls(self) -> None:
        for task in list(self._calls):
            task.cancel()
