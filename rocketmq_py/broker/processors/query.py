"""Lookups: QUERY_MESSAGE (12), VIEW_MESSAGE_BY_ID (33), GET_MAX_OFFSET (30), GET_MIN_OFFSET (31),
GET_EARLIEST_MSG_STORETIME (32) and SEARCH_OFFSET_BY_TIMESTAMP (29) (Java's QueryMessageProcessor and the
offset handlers of AdminBrokerProcessor)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from rocketmq_py.broker.processors.common import fail, ok
from rocketmq_py.common.codes import RequestCode, ResponseCode
from rocketmq_py.common.headers.offset import (
    GetEarliestMsgStoretimeResponseHeader,
    OffsetResponseHeader,
    QueueRequestHeader,
    SearchOffsetRequestHeader,
)
from rocketmq_py.common.headers.query import (
    UNIQUE_MSG_QUERY_FLAG,
    QueryMessageRequestHeader,
    QueryMessageResponseHeader,
    ViewMessageRequestHeader,
)
from rocketmq_py.remoting import ProcessorTable, RemotingCommand, RequestContext

if TYPE_CHECKING:
    from rocketmq_py.broker.controller import BrokerController


class QueryMessageProcessor:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    def register_into(self, table: ProcessorTable) -> None:
        handlers = {
            RequestCode.QUERY_MESSAGE: self.query_message,
            RequestCode.VIEW_MESSAGE_BY_ID: self.view_message_by_id,
            RequestCode.GET_MAX_OFFSET: self.get_max_offset,
            RequestCode.GET_MIN_OFFSET: self.get_min_offset,
            RequestCode.GET_EARLIEST_MSG_STORETIME: self.get_earliest_msg_storetime,
            RequestCode.SEARCH_OFFSET_BY_TIMESTAMP: self.search_offset_by_timestamp,
        }
        for code, handler in handlers.items():
            table.register(code, handler)

    async def query_message(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        header = QueryMessageRequestHeader.from_command(request)
        max_num = header.max_num
        if (request.ext_fields or {}).get(UNIQUE_MSG_QUERY_FLAG) == "true":
            max_num = self.broker.store_config.default_query_max_num
        result = self.broker.store.query_message(header.topic, header.key, max_num, header.begin_timestamp,
                                                 header.end_timestamp)
        fields = QueryMessageResponseHeader(result.index_last_update_timestamp,
                                            result.index_last_update_phyoffset).to_ext_fields()
        if result.buffer_total_size > 0:
            return ok(request, fields, result.body)
        response = fail(request, ResponseCode.QUERY_NOT_FOUND, "can not find message, maybe time range not correct",
                        fields)
        return response

    async def view_message_by_id(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        header = ViewMessageRequestHeader.from_command(request)
        record = self.broker.store.select_one_message_by_offset(header.offset)
        if record is None:
            return fail(request, ResponseCode.SYSTEM_ERROR, f"can not find message by the offset, {header.offset}")
        return ok(request, body=record)

    async def get_max_offset(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        header = QueueRequestHeader.from_command(request)
        offset = self.broker.store.get_max_offset_in_queue(header.topic, header.queue_id)
        return ok(request, OffsetResponseHeader(offset).to_ext_fields())

    async def get_min_offset(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        header = QueueRequestHeader.from_command(request)
        offset = self.broker.store.get_min_offset_in_queue(header.topic, header.queue_id)
        return ok(request, OffsetResponseHeader(offset).to_ext_fields())

    async def get_earliest_msg_storetime(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        header = QueueRequestHeader.from_command(request)
        timestamp = self.broker.store.get_earliest_message_time(header.topic, header.queue_id)
        return ok(request, GetEarliestMsgStoretimeResponseHeader(timestamp).to_ext_fields())

    async def search_offset_by_timestamp(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        header = SearchOffsetRequestHeader.from_command(request)
        offset = self.broker.store.get_offset_in_queue_by_time(header.topic, header.queue_id, header.timestamp)
        return ok(request, OffsetResponseHeader(offset).to_ext_fields())
