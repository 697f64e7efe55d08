"""One coroutine per RPC that a client sends (Java's ``MQClientAPIImpl``).

Each method builds the request, sends it through the remoting client and
turns a non-success response into the typed error for its code.
"""
from __future__ import annotations

from rocketmq_py.client.api_admin import AdminRPCs
from rocketmq_py.common.acl import SessionCredentials
from rocketmq_py.common.codes import RequestCode, ResponseCode
from rocketmq_py.common.headers.base import CommandHeader
from rocketmq_py.common.headers.client import UnregisterClientRequestHeader
from rocketmq_py.common.headers.consumer import (
    ConsumerSendMsgBackRequestHeader,
    GetConsumerListByGroupRequestHeader,
)
from rocketmq_py.common.headers.namesrv import GetRouteInfoRequestHeader, GetTopicsByClusterRequestHeader
from rocketmq_py.common.headers.offset import (
    GetEarliestMsgStoretimeResponseHeader,
    OffsetResponseHeader,
    QueryConsumerOffsetRequestHeader,
    QueueRequestHeader,
    SearchOffsetRequestHeader,
    UpdateConsumerOffsetRequestHeader,
)
from rocketmq_py.common.headers.pull import PullMessageRequestHeader
from rocketmq_py.common.headers.transaction import EndTransactionRequestHeader
from rocketmq_py.common import consumer_body
from rocketmq_py.common.heartbeat import HeartbeatData
from rocketmq_py.common.message_queue import MessageQueue
from rocketmq_py.common.route import ClusterInfo, TopicList, TopicRouteData
from rocketmq_py.errors import NoPermissionError, TopicNotExistError, error_for_response
from rocketmq_py.remoting.client import RemotingClient
from rocketmq_py.remoting.command import RemotingCommand, create_request

DEFAULT_TIMEOUT_MS = 3000

#: Send responses that still mean "stored" (SendStatus FLUSH_DISK_TIMEOUT, FLUSH_SLAVE_TIMEOUT, SLAVE_NOT_AVAILABLE).
STORED_RESPONSE_CODES = frozenset({
    ResponseCode.SUCCESS, ResponseCode.FLUSH_DISK_TIMEOUT, ResponseCode.FLUSH_SLAVE_TIMEOUT,
    ResponseCode.SLAVE_NOT_AVAILABLE,
})

#: Pull responses that carry a pull status (FOUND, NO_NEW_MSG, NO_MATCHED_MSG, OFFSET_ILLEGAL).
PULL_RESPONSE_CODES = frozenset({
    ResponseCode.SUCCESS, ResponseCode.PULL_NOT_FOUND, ResponseCode.PULL_RETRY_IMMEDIATELY,
    ResponseCode.PULL_OFFSET_MOVED,
})


class MQClientAPI(AdminRPCs):
    """The RPCs of a client, over one :class:`RemotingClient` (the admin RPCs come from :class:`AdminRPCs`)."""

    def __init__(
        self,
        remoting: RemotingClient,
        timeout_ms: float = DEFAULT_TIMEOUT_MS,
        serialize_type: int | None = None,
        credentials: SessionCredentials | None = None,
    ) -> None:
        self.remoting = remoting
        self.timeout_ms = timeout_ms
        #: JSON or ROCKETMQ for every request; None follows ROCKETMQ_SERIALIZE_TYPE (JSON by default).
        self.serialize_type = serialize_type
        #: With credentials every request is signed as Java's AclClientRPCHook signs it.
        self.credentials = credentials

    def _request(
        self, code: int, ext_fields: dict[str, str] | None = None, body: bytes | None = None, remark: str | None = None,
        custom_header: CommandHeader | None = None,
    ) -> RemotingCommand:
        request = create_request(code, ext_fields, body, remark=remark, serialize_type=self.serialize_type,
                                 custom_header=custom_header)
        if self.credentials is not None:
            # Signing reads the fields as strings: the header's go into ext_fields first, as Java's ACL hook calls
            # makeCustomHeaderToNet before it signs (the frame's bytes stay the same). The caller's dict is kept.
            request.make_custom_header_to_net()
            signed = dict(request.ext_fields) if request.ext_fields else {}
            self.credentials.sign(signed, body)
            request.ext_fields = signed
        return request

    def _header_request(
        self, code: int, header: CommandHeader, body: bytes | None = None, remark: str | None = None,
    ) -> RemotingCommand:
        """A request carrying ``header`` as its custom header, which the encoder writes straight into the frame."""
        return self._request(code, None, body, remark, header)

    async def _call(self, addr: str, request: RemotingCommand, timeout_ms: float | None) -> RemotingCommand:
        response = await self.remoting.invoke(addr, request, timeout_ms or self.timeout_ms)
        if response.code != ResponseCode.SUCCESS:
            raise response_error(response, addr)
        return response

    async def get_topic_route(self, namesrv_addr: str, topic: str, timeout_ms: float | None = None) -> TopicRouteData:
        request = self._header_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic=topic))
        try:
            response = await self._call(namesrv_addr, request, timeout_ms)
        except TopicNotExistError as error:
            raise TopicNotExistError(
                error.code,
                f"no route info of topic {topic!r}: is the topic created and the name server address right? "
                f"({error.remark})",
                namesrv_addr,
            ) from None
        return TopicRouteData.decode(response.body or b"{}")

    async def get_cluster_info(self, namesrv_addr: str, timeout_ms: float | None = None) -> ClusterInfo:
        response = await self._call(namesrv_addr, self._request(RequestCode.GET_BROKER_CLUSTER_INFO), timeout_ms)
        return ClusterInfo.decode(response.body or b"{}")

    async def get_all_topics(self, namesrv_addr: str, timeout_ms: float | None = None) -> TopicList:
        request = self._request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
        response = await self._call(namesrv_addr, request, timeout_ms)
        return TopicList.decode(response.body or b"{}")

    async def get_topics_by_cluster(self, namesrv_addr: str, cluster: str, timeout_ms: float | None = None) -> TopicList:
        header = GetTopicsByClusterRequestHeader(cluster=cluster)
        request = self._header_request(RequestCode.GET_TOPICS_BY_CLUSTER, header)
        response = await self._call(namesrv_addr, request, timeout_ms)
        return TopicList.decode(response.body or b"{}")

    # --- producer RPCs ------------------------------------------------------------------

    async def send_message(
        self, addr: str, code: int, header: CommandHeader, body: bytes, timeout_ms: float,
    ) -> RemotingCommand:
        """SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE / SEND_REPLY_MESSAGE_V2; the response when the message was stored."""
        response = await self.remoting.invoke(addr, self.send_message_request(code, header, body), timeout_ms)
        return stored_or_raise(response, addr)

    def send_message_request(self, code: int, header: CommandHeader, body: bytes) -> RemotingCommand:
        """The request :meth:`send_message` sends (also sent from the calling thread, see producer.direct)."""
        return self._header_request(code, header, body)

    async def send_message_oneway(
        self, addr: str, code: int, header: CommandHeader, body: bytes, timeout_ms: float,
    ) -> None:
        await self.remoting.invoke_oneway(addr, self.send_message_request(code, header, body), timeout_ms)

    async def send_heartbeat(self, addr: str, heartbeat: HeartbeatData, timeout_ms: float | None = None) -> int:
        """HEART_BEAT; the broker's version from the response."""
        response = await self._call(addr, self._request(RequestCode.HEART_BEAT, None, heartbeat.encode()), timeout_ms)
        return response.version

    async def unregister_client(
        self,
        addr: str,
        client_id: str,
        producer_group: str | None = None,
        consumer_group: str | None = None,
        timeout_ms: float | None = None,
    ) -> None:
        header = UnregisterClientRequestHeader(client_id, producer_group, consumer_group)
        await self._call(addr, self._header_request(RequestCode.UNREGISTER_CLIENT, header), timeout_ms)

    async def end_transaction_oneway(
        self, addr: str, header: EndTransactionRequestHeader, remark: str | None, timeout_ms: float | None = None,
    ) -> None:
        request = self._header_request(RequestCode.END_TRANSACTION, header, remark=remark)
        await self.remoting.invoke_oneway(addr, request, timeout_ms or self.timeout_ms)

    # --- consumer RPCs -------------------------------------------------------------------

    async def pull_message(self, addr: str, header: PullMessageRequestHeader, timeout_ms: float) -> RemotingCommand:
        """PULL_MESSAGE; the response when its code is a pull status (found, not found, retry, offset moved)."""
        request = self._header_request(RequestCode.PULL_MESSAGE, header)
        response = await self.remoting.invoke(addr, request, timeout_ms)
        if response.code not in PULL_RESPONSE_CODES:
            raise response_error(response, addr)
        return response

    async def query_consumer_offset(self, addr: str, header: QueryConsumerOffsetRequestHeader,
                                    timeout_ms: float | None = None) -> int:
        """The group's committed offset; QueryNotFoundError when the broker holds none."""
        request = self._header_request(RequestCode.QUERY_CONSUMER_OFFSET, header)
        response = await self._call(addr, request, timeout_ms)
        return OffsetResponseHeader.from_command(response).offset

    async def update_consumer_offset(self, addr: str, header: UpdateConsumerOffsetRequestHeader,
                                     timeout_ms: float | None = None) -> None:
        await self._call(addr, self._header_request(RequestCode.UPDATE_CONSUMER_OFFSET, header), timeout_ms)

    async def update_consumer_offset_oneway(self, addr: str, header: UpdateConsumerOffsetRequestHeader,
                                            timeout_ms: float | None = None) -> None:
        request = self._header_request(RequestCode.UPDATE_CONSUMER_OFFSET, header)
        await self.remoting.invoke_oneway(addr, request, timeout_ms or self.timeout_ms)

    async def _queue_offset(self, code: int, addr: str, queue: MessageQueue, timeout_ms: float | None) -> int:
        header = QueueRequestHeader(queue.topic, queue.queue_id, queue.broker_name)
        response = await self._call(addr, self._header_request(code, header), timeout_ms)
        return OffsetResponseHeader.from_command(response).offset

    async def get_max_offset(self, addr: str, queue: MessageQueue, timeout_ms: float | None = None) -> int:
        return await self._queue_offset(RequestCode.GET_MAX_OFFSET, addr, queue, timeout_ms)

    async def get_min_offset(self, addr: str, queue: MessageQueue, timeout_ms: float | None = None) -> int:
        return await self._queue_offset(RequestCode.GET_MIN_OFFSET, addr, queue, timeout_ms)

    async def search_offset(self, addr: str, queue: MessageQueue, timestamp_ms: int,
                            timeout_ms: float | None = None) -> int:
        header = SearchOffsetRequestHeader(queue.topic, queue.queue_id, int(timestamp_ms), queue.broker_name)
        request = self._header_request(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, header)
        response = await self._call(addr, request, timeout_ms)
        return OffsetResponseHeader.from_command(response).offset

    async def get_earliest_msg_storetime(self, addr: str, queue: MessageQueue, timeout_ms: float | None = None) -> int:
        header = QueueRequestHeader(queue.topic, queue.queue_id, queue.broker_name)
        request = self._header_request(RequestCode.GET_EARLIEST_MSG_STORETIME, header)
        response = await self._call(addr, request, timeout_ms)
        return GetEarliestMsgStoretimeResponseHeader.from_command(response).timestamp

    async def get_consumer_id_list(self, addr: str, group: str, timeout_ms: float | None = None) -> list[str]:
        header = GetConsumerListByGroupRequestHeader(group)
        request = self._header_request(RequestCode.GET_CONSUMER_LIST_BY_GROUP, header)
        response = await self._call(addr, request, timeout_ms)
        return consumer_body.decode_consumer_id_list(response.body)

    async def lock_batch_mq(self, addr: str, group: str, client_id: str, queues: list[MessageQueue] | set[MessageQueue],
                            timeout_ms: float | None = None) -> set[MessageQueue]:
        """LOCK_BATCH_MQ; the queues the broker locked for this client."""
        body = consumer_body.lock_batch_request(group, client_id, queues)
        response = await self._call(addr, self._request(RequestCode.LOCK_BATCH_MQ, None, body), timeout_ms)
        return consumer_body.decode_lock_batch_response(response.body)

    async def unlock_batch_mq(self, addr: str, group: str, client_id: str,
                              queues: list[MessageQueue] | set[MessageQueue], timeout_ms: float | None = None,
                              oneway: bool = False) -> None:
        body = consumer_body.lock_batch_request(group, client_id, queues)
        request = self._request(RequestCode.UNLOCK_BATCH_MQ, None, body)
        if oneway:
            await self.remoting.invoke_oneway(addr, request, timeout_ms or self.timeout_ms)
        else:
            await self._call(addr, request, timeout_ms)

    async def consumer_send_message_back(self, addr: str, header: ConsumerSendMsgBackRequestHeader,
                                         timeout_ms: float | None = None) -> None:
        request = self._header_request(RequestCode.CONSUMER_SEND_MSG_BACK, header)
        await self._call(addr, request, timeout_ms)


def response_error(response: RemotingCommand, addr: str | None) -> Exception:
    """The typed error of a failed response; an ACL refusal (SYSTEM_ERROR from the broker's ACL hook)
    becomes :class:`NoPermissionError`, with a hint about the credentials."""
    remark = response.remark or ""
    if response.code == ResponseCode.SYSTEM_ERROR and "AclException" in remark:
        return NoPermissionError(
            response.code, f"{remark} (check access_key and secret_key and the account's permissions)", addr,
        )
    return error_for_response(response.code, response.remark, addr)


def stored_or_raise(response: RemotingCommand, addr: str) -> RemotingCommand:
    """``response`` to a send when it means the message was stored, else its typed error."""
    if response.code not in STORED_RESPONSE_CODES:
        raise response_error(response, addr)
    return response
