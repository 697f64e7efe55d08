"""Request processors and the table that says, for each request code, what answers it and where it waits.

Ports ``NettyRequestProcessor`` and the answering half of Java's
``NettyRemotingAbstract.processRequestCommand`` (rocketmq-all-4.9.8): lookup
by request code with a default, the reject hook, the hooks that run before
every processor (Java's ``RPCHook.doBeforeRequest``, where the broker checks
ACL), and the error answers (not supported, system busy, system error).
Oneway requests never get an answer. The table also holds each code's lane
(Java's executor) and fast path; when and where a request is served, and the
writing of its answer, are the :mod:`~rocketmq_py.remoting.dispatcher`'s.
"""
from __future__ import annotations

import abc
import asyncio
import inspect
import logging
import time
from concurrent.futures import Executor
from typing import Awaitable, Callable, Union

from rocketmq_py.errors import BadRequestError, CodecError, RocketMQError
from rocketmq_py.remoting import command as commands
from rocketmq_py.remoting.command import RemotingCommand, RemotingSysResponseCode
from rocketmq_py.remoting.lanes import Lane
from rocketmq_py.remoting.protocol import RequestContext

__all__ = [
    "RequestProcessor",
    "SyncProcessor",
    "ProcessorTable",
    "ProcessorLike",
    "RequestHook",
    "FastHandler",
    "RequestRefusedError",
    "as_processor",
    "REJECT_REQUEST_REMARK",
]

_log = logging.getLogger(__name__)

REJECT_REQUEST_REMARK = "[REJECTREQUEST]system busy, start flow control for a while"
#: Bad requests are logged at most this often per (request code, field); the rest are counted into the next line.
BAD_REQUEST_LOG_INTERVAL_S = 10.0


class RequestProcessor(abc.ABC):
    """Handles the requests of the codes it is registered for."""

    @abc.abstractmethod
    async def process(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand | None:
        """The response to ``request``, or ``None`` to send none (a suspended pull, for one)."""

    def reject_request(self) -> bool:
        """True to answer SYSTEM_BUSY without processing (flow control)."""
        return False


class RequestRefusedError(RocketMQError):
    """Raised by a :data:`RequestHook` to answer ``code`` and ``remark`` instead of running the processor."""

    def __init__(self, code: int, remark: str) -> None:
        super().__init__(remark)
        self.code = code
        self.remark = remark


#: Runs before the processor of every request that has one (Java's RPCHook.doBeforeRequest); it returns to let
#: the request through, or raises :class:`RequestRefusedError`.
RequestHook = Callable[[RequestContext, RemotingCommand], None]

SyncHandler = Callable[[RequestContext, RemotingCommand], Union[RemotingCommand, None]]
#: A request code's fast path: the response to a request it takes, served at once, or None (having changed
#: nothing) for a request it leaves to the processor. See :meth:`ProcessorTable.register_fast`.
FastHandler = Callable[[RequestContext, RemotingCommand], Union[RemotingCommand, None]]
AsyncHandler = Callable[[RequestContext, RemotingCommand], Awaitable[Union[RemotingCommand, None]]]
ProcessorLike = Union[RequestProcessor, SyncHandler, AsyncHandler]


class SyncProcessor(RequestProcessor):
    """A plain function as a processor, run in ``executor`` when given (for blocking work).

    Without an executor the function runs on the event loop and must not
    block. In an executor it runs on another thread, so it may use ``ctx``
    only to read the remote address.
    """

    def __init__(self, function: SyncHandler, executor: Executor | None = None) -> None:
        self.function = function
        self.executor = executor

    async def process(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand | None:
        if self.executor is None:
            return self.function(ctx, request)
        return await asyncio.get_running_loop().run_in_executor(self.executor, self.function, ctx, request)


class _CoroutineProcessor(RequestProcessor):
    def __init__(self, function: AsyncHandler) -> None:
        self.function = function

    async def process(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand | None:
        return await self.function(ctx, request)


def as_processor(handler: ProcessorLike, executor: Executor | None = None) -> RequestProcessor:
    """``handler`` as a :class:`RequestProcessor`: coroutine functions are awaited, plain functions called."""
    if isinstance(handler, RequestProcessor):
        if executor is not None:
            raise TypeError("an executor applies to plain functions only; a RequestProcessor schedules itself")
        return handler
    if not callable(handler):
        raise TypeError(f"a processor must be a RequestProcessor or a function, not {type(handler).__name__}")
    if inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(type(handler).__call__):
        if executor is not None:
            raise TypeError("an executor applies to plain functions only, not to coroutine functions")
        return _CoroutineProcessor(handler)  # type: ignore[arg-type]
    return SyncProcessor(handler, executor)  # type: ignore[arg-type]


def _error_response(request: RemotingCommand, code: int, remark: str) -> RemotingCommand:
    # Java builds its error answers with the node's default serialization, not the request's.
    return commands.create_response(request, code, remark, serialize_type=commands.DEFAULT_SERIALIZE_TYPE)


def _describe(error: BaseException) -> str:
    text = str(error)
    name = type(error).__name__
    return f"{name}: {text}" if text else name


class _BadRequestLog:
    """One WARNING line per bad request, at most one per (code, field) every interval, with a count of the rest:
    a peer that floods bad frames must not flood the log."""

    def __init__(self, interval_s: float = BAD_REQUEST_LOG_INTERVAL_S) -> None:
        self.interval_s = interval_s
        self._last: dict[tuple[int, str], tuple[float, int]] = {}

    def report(self, request: RemotingCommand, peer: str, error: CodecError) -> None:
        field = getattr(error, "field", "body")
        key = (request.code, field)
        now = time.monotonic()
        last_time, suppressed = self._last.get(key, (float("-inf"), 0))
        if now - last_time < self.interval_s:
            self._last[key] = (last_time, suppressed + 1)
            return
        if len(self._last) > 4096:
            self._last.clear()
        self._last[key] = (now, 0)
        more = f" ({suppressed} more like it not logged)" if suppressed else ""
        _log.warning("refused request code %d from %s: bad field %s: %s%s", request.code, peer, field, error, more)


class ProcessorTable:
    """Processors by request code, plus a default for the codes nobody registered.

    A processor that raises :class:`~rocketmq_py.errors.CodecError` (a header field or a body that is missing
    or does not decode, found before any state was touched) gets SYSTEM_ERROR, as Java answers a
    RemotingCommandException, and one rate-limited WARNING line; any other exception is a bug in the processor
    and is logged with its traceback.

    A code registered with a :class:`~rocketmq_py.remoting.lanes.Lane` waits in
    that lane's queue; the other codes are served as soon as they are read.
    """

    def __init__(self, default: ProcessorLike | None = None, executor: Executor | None = None) -> None:
        self._processors: dict[int, RequestProcessor] = {}
        self._default = None if default is None else as_processor(default, executor)
        self._lanes: dict[int, Lane] = {}
        self._fast: dict[int, FastHandler] = {}
        self._hooks: list[RequestHook] = []
        self._bad_requests = _BadRequestLog()

    def add_hook(self, hook: RequestHook) -> None:
        """Run ``hook`` before the processor of every request, in the order hooks were added."""
        self._hooks.append(hook)

    def register(self, code: int, processor: ProcessorLike, executor: Executor | None = None, *,
                 lane: Lane | None = None) -> None:
        """Route requests with ``code`` to ``processor``, replacing any earlier one (and its lane)."""
        self._processors[int(code)] = as_processor(processor, executor)
        self.set_lane(code, lane)

    def set_lane(self, code: int, lane: Lane | None) -> None:
        """Make requests with ``code`` wait in ``lane`` (None: serve them at once)."""
        if lane is None:
            self._lanes.pop(int(code), None)
        else:
            self._lanes[int(code)] = lane

    def lane_of(self, code: int) -> Lane | None:
        """The lane requests with ``code`` wait in, or None when they are served at once."""
        return self._lanes.get(code)

    @property
    def lanes(self) -> list[Lane]:
        """Every lane of this table, once each."""
        return list({id(lane): lane for lane in self._lanes.values()}.values())

    def register_fast(self, code: int, handler: FastHandler | None) -> None:
        """Give ``code`` a fast path (None: take it away), tried before its processor.

        The handler runs synchronously where the request is served (in its lane, if it has one), so it
        skips the processor's coroutines. It must decline (return None) any request it does not answer
        exactly as the processor would, before changing anything. Requests go to it only while the table
        has no hooks: a hook (the ACL check) sees every request first.
        """
        if handler is None:
            self._fast.pop(int(code), None)
        else:
            self._fast[int(code)] = handler

    def answer_fast(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand | None:
        """The fast path's answer to ``request`` (ready to send), or None to serve it with :meth:`dispatch`."""
        handler = self._fast.get(request.code)
        if handler is None or self._hooks:
            return None
        try:
            response = handler(ctx, request)
        except Exception as error:
            _log.error("the fast path of %r from %s failed", request, ctx.remote_address, exc_info=True)
            response = _error_response(request, RemotingSysResponseCode.SYSTEM_ERROR, _describe(error))
        else:
            if response is None:
                return None
            # As _answer answers a processed request: in the request's serialization.
            response.serialize_type = request.serialize_type
        response.opaque = request.opaque
        commands.mark_response(response)
        return response

    def register_default(self, processor: ProcessorLike | None, executor: Executor | None = None) -> None:
        """Route unregistered codes to ``processor`` (``None`` answers them REQUEST_CODE_NOT_SUPPORTED)."""
        self._default = None if processor is None else as_processor(processor, executor)

    def get(self, code: int) -> RequestProcessor | None:
        """The processor that would handle ``code``."""
        return self._processors.get(code, self._default)

    def __contains__(self, code: object) -> bool:
        return code in self._processors

    async def dispatch(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand | None:
        """Run the request through its processor; the answer to send, or ``None`` when none is due."""
        response = await self._answer(ctx, request)
        if response is None or request.is_oneway:
            return None
        response.opaque = request.opaque
        commands.mark_response(response)
        return response

    async def _answer(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand | None:
        processor = self.get(request.code)
        if processor is None:
            remark = f" request type {request.code} not supported"
            _log.error("%s%s", ctx.remote_address, remark)
            return _error_response(request, RemotingSysResponseCode.REQUEST_CODE_NOT_SUPPORTED, remark)
        try:
            if processor.reject_request():
                return _error_response(request, RemotingSysResponseCode.SYSTEM_BUSY, REJECT_REQUEST_REMARK)
            for hook in self._hooks:
                hook(ctx, request)
            response = await processor.process(ctx, request)
        except RequestRefusedError as refusal:
            return _error_response(request, refusal.code, refusal.remark)
        except CodecError as error:
            self._bad_requests.report(request, ctx.remote_address, error)
            remark = error.remark if isinstance(error, BadRequestError) else _describe(error)
            return _error_response(request, RemotingSysResponseCode.SYSTEM_ERROR, remark)
        except Exception as error:
            _log.error("processing %r from %s failed", request, ctx.remote_address, exc_info=True)
            return _error_response(request, RemotingSysResponseCode.SYSTEM_ERROR, _describe(error))
        if response is None:
            return None
        if not isinstance(response, RemotingCommand):
            _log.error("processor %r returned %r instead of a RemotingCommand or None", processor, response)
            return _error_response(
                request, RemotingSysResponseCode.SYSTEM_ERROR,
                f"processor returned {type(response).__name__}, not a RemotingCommand",
            )
        # Java 4.9.4+ answers a processed request in the request's serialization.
        response.serialize_type = request.serialize_type
        return response
