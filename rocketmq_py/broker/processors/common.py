"""Pieces every broker processor uses: answers and remarks. (A header that does not decode is answered by the
processor table: see :class:`rocketmq_py.remoting.ProcessorTable`.)"""
from __future__ import annotations

from rocketmq_py.common.codes import ResponseCode
from rocketmq_py.remoting import RemotingCommand, create_response

FAQ_URL = "http://rocketmq.apache.org/docs/faq/"
#: MQVersion.Version.V3_4_9: from this client version on, maxReconsumeTimes of the header is honoured.
VERSION_3_4_9 = 121


def suggest_todo(url: str = FAQ_URL) -> str:
    """Java's FAQUrl.suggestTodo."""
    return f"\nSee {url} for further details."


def ok(request: RemotingCommand, ext_fields: dict[str, str] | None = None, body: bytes | None = None,
       remark: str | None = None) -> RemotingCommand:
    return create_response(request, ResponseCode.SUCCESS, remark, ext_fields, body)


def fail(request: RemotingCommand, code: int, remark: str | None,
         ext_fields: dict[str, str] | None = None) -> RemotingCommand:
    return create_response(request, code, remark, ext_fields)
