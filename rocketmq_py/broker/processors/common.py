"""Pieces every broker processor uses: answers, and the Java-style error for a header that does not decode."""
from __future__ import annotations

import functools
import logging
import re
from typing import Awaitable, Callable

from rocketmq_py.common.codes import ResponseCode
from rocketmq_py.common.headers.base import MissingHeaderFieldError
from rocketmq_py.remoting import RemotingCommand, RequestContext, create_response

_log = logging.getLogger(__name__)

FAQ_URL = "http://rocketmq.apache.org/docs/faq/"
#: MQVersion.Version.V3_4_9: from this client version on, maxReconsumeTimes of the header is honoured.
VERSION_3_4_9 = 121

Handler = Callable[[RequestContext, RemotingCommand], Awaitable["RemotingCommand | None"]]

_MISSING_FIELD = re.compile(r"field '([^']*)'")


def suggest_todo(url: str = FAQ_URL) -> str:
    """Java's FAQUrl.suggestTodo."""
    return f"\nSee {url} for further details."


def ok(request: RemotingCommand, ext_fields: dict[str, str] | None = None, body: bytes | None = None,
       remark: str | None = None) -> RemotingCommand:
    return create_response(request, ResponseCode.SUCCESS, remark, ext_fields, body)


def fail(request: RemotingCommand, code: int, remark: str | None,
         ext_fields: dict[str, str] | None = None) -> RemotingCommand:
    return create_response(request, code, remark, ext_fields)


def guarded(handler: Handler) -> Handler:
    """Answer a request whose custom header misses a required field with SYSTEM_ERROR and the text of Java's
    RemotingCommandException. (Java 4.9.8 itself logs that exception, goes on with the field null and
    answers SYSTEM_ERROR with whatever failed next, mostly a NullPointerException.)"""

    @functools.wraps(handler)
    async def guard(ctx: RequestContext, request: RemotingCommand) -> RemotingCommand | None:
        try:
            return await handler(ctx, request)
        except MissingHeaderFieldError as error:
            match = _MISSING_FIELD.search(str(error))
            name = match.group(1) if match else "?"
            _log.warning("request %d from %s misses header field %s", request.code, ctx.remote_address, name)
            return fail(request, ResponseCode.SYSTEM_ERROR,
                        f"org.apache.rocketmq.remoting.exception.RemotingCommandException: "
                        f"the custom field <{name}> is null")

    return guard
