"""The admin RPCs of a client (the administration half of Java's ``MQClientAPIImpl``): topics, subscription
groups, broker configuration and statistics, consumer progress and connections, message lookups and the name
server's KV config. One coroutine per RPC, as in :mod:`rocketmq_py.client.api`, whose ``MQClientAPI``
inherits these; each turns a non-success response into the typed error of its code and a body that does
not decode into :class:`CodecError`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Mapping, TypeVar

from rocketmq_py import codec
from rocketmq_py.common.admin_body import (
    BrokerStatsData,
    ConsumeStats,
    ConsumerConnection,
    GroupList,
    ProducerConnection,
    TopicStatsTable,
)
from rocketmq_py.common.codes import RequestCode
from rocketmq_py.common.config_file import format_properties, parse_properties
from rocketmq_py.common.consumer_body import (
    ConsumeMessageDirectlyResult,
    ConsumerRunningInfo,
    decode_reset_offset_body,
)
from rocketmq_py.common.headers.admin import (
    CreateTopicRequestHeader,
    DeleteSubscriptionGroupRequestHeader,
    GetConsumerConnectionListRequestHeader,
    GetConsumeStatsRequestHeader,
    GetProducerConnectionListRequestHeader,
    TopicRequestHeader,
    ViewBrokerStatsDataRequestHeader,
)
from rocketmq_py.common.headers.consumer import (
    ConsumeMessageDirectlyResultRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    ResetOffsetRequestHeader,
)
from rocketmq_py.common.headers.namesrv import (
    DeleteKVConfigRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    GetKVConfigRequestHeader,
    GetKVConfigResponseHeader,
    GetKVListByNamespaceRequestHeader,
    PutKVConfigRequestHeader,
)
from rocketmq_py.common.headers.query import (
    UNIQUE_MSG_QUERY_FLAG,
    QueryMessageRequestHeader,
    QueryMessageResponseHeader,
    ViewMessageRequestHeader,
)
from rocketmq_py.common.kv import KVTable
from rocketmq_py.common.message import MessageExt
from rocketmq_py.common.message_queue import MessageQueue
from rocketmq_py.common.subscription_group import SubscriptionGroupConfig, decode_subscription_group_wrapper
from rocketmq_py.common.topic_config import TopicConfig, TopicConfigSerializeWrapper
from rocketmq_py.errors import CodecError

if TYPE_CHECKING:
    from rocketmq_py.common.headers.base import CommandHeader
    from rocketmq_py.remoting.client import RemotingClient
    from rocketmq_py.remoting.command import RemotingCommand

_T = TypeVar("_T")

#: The request language an admin sets to reset the offsets of C++ consumers (Java's LanguageCode.CPP).
LANGUAGE_CPP = codec.LANGUAGE_CODES["CPP"]


def decoded(decode: Callable[[bytes | None], _T], response: RemotingCommand, what: str, addr: str) -> _T:
    """``decode(response.body)``; a body that does not decode is a :class:`CodecError` naming ``what``."""
    try:
        return decode(response.body)
    except (ValueError, TypeError, KeyError) as error:
        raise CodecError(f"the {what} answer from {addr} does not decode: {error}") from None


class AdminRPCs:
    """The admin RPCs, mixed into :class:`rocketmq_py.client.api.MQClientAPI` (which provides the plumbing)."""

    if TYPE_CHECKING:
        remoting: RemotingClient
        timeout_ms: float

        def _request(self, code: int, ext_fields: dict[str, str] | None = None, body: bytes | None = None,
                     remark: str | None = None, custom_header: CommandHeader | None = None) -> RemotingCommand: ...

        def _header_request(self, code: int, header: CommandHeader, body: bytes | None = None,
                            remark: str | None = None) -> RemotingCommand: ...

        async def _call(self, addr: str, request: RemotingCommand, timeout_ms: float | None) -> RemotingCommand: ...

    # --- broker configuration and runtime ------------------------------------------------------------

    async def get_broker_runtime_info(self, addr: str, timeout_ms: float | None = None) -> KVTable:
        response = await self._call(addr, self._request(RequestCode.GET_BROKER_RUNTIME_INFO), timeout_ms)
        return decoded(lambda body: KVTable.decode(body or b"{}"), response, "broker runtime info", addr)

    async def get_broker_config(self, addr: str, timeout_ms: float | None = None) -> dict[str, str]:
        response = await self._call(addr, self._request(RequestCode.GET_BROKER_CONFIG), timeout_ms)
        return parse_properties((response.body or b"").decode("utf-8", "replace"))

    async def update_broker_config(self, addr: str, properties: Mapping[str, str],
                                   timeout_ms: float | None = None) -> None:
        """UPDATE_BROKER_CONFIG; nothing is sent for no properties (as Java)."""
        text = format_properties(dict(properties))
        if text:
            request = self._request(RequestCode.UPDATE_BROKER_CONFIG, None, text.encode("utf-8"))
            await self._call(addr, request, timeout_ms)

    # --- topics ---------------------------------------------------------------------------------------

    async def create_topic(self, addr: str, default_topic: str, config: TopicConfig,
                           timeout_ms: float | None = None) -> None:
        header = CreateTopicRequestHeader(config.topic_name, default_topic, config.read_queue_nums,
                                          config.write_queue_nums, config.perm, config.topic_filter_type,
                                          config.topic_sys_flag, config.order)
        await self._call(addr, self._header_request(RequestCode.UPDATE_AND_CREATE_TOPIC, header), timeout_ms)

    async def delete_topic_in_broker(self, addr: str, topic: str, timeout_ms: float | None = None) -> None:
        header = TopicRequestHeader(topic)
        await self._call(addr, self._header_request(RequestCode.DELETE_TOPIC_IN_BROKER, header), timeout_ms)

    async def delete_topic_in_namesrv(self, namesrv_addr: str, topic: str, cluster: str | None,
                                      timeout_ms: float | None = None) -> None:
        header = DeleteTopicFromNamesrvRequestHeader(topic, cluster)
        request = self._header_request(RequestCode.DELETE_TOPIC_IN_NAMESRV, header)
        await self._call(namesrv_addr, request, timeout_ms)

    async def get_all_topic_config(self, addr: str, timeout_ms: float | None = None) -> TopicConfigSerializeWrapper:
        response = await self._call(addr, self._request(RequestCode.GET_ALL_TOPIC_CONFIG), timeout_ms)
        return decoded(lambda body: TopicConfigSerializeWrapper.decode(body or b"{}"), response, "topic config",
                       addr)

    async def get_topic_stats_info(self, addr: str, topic: str, timeout_ms: float | None = None) -> TopicStatsTable:
        request = self._header_request(RequestCode.GET_TOPIC_STATS_INFO, TopicRequestHeader(topic))
        response = await self._call(addr, request, timeout_ms)
        return decoded(TopicStatsTable.decode, response, "topic stats", addr)

    async def query_topic_consume_by_who(self, addr: str, topic: str, timeout_ms: float | None = None) -> GroupList:
        request = self._header_request(RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, TopicRequestHeader(topic))
        response = await self._call(addr, request, timeout_ms)
        return decoded(GroupList.decode, response, "group list", addr)

    # --- subscription groups --------------------------------------------------------------------------

    async def create_subscription_group(self, addr: str, config: SubscriptionGroupConfig,
                                        timeout_ms: float | None = None) -> None:
        body = codec.json_dumps(config.to_json()).encode()
        request = self._request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None, body)
        await self._call(addr, request, timeout_ms)

    async def delete_subscription_group(self, addr: str, group: str, remove_offset: bool = False,
                                        timeout_ms: float | None = None) -> None:
        header = DeleteSubscriptionGroupRequestHeader(group, remove_offset)
        await self._call(addr, self._header_request(RequestCode.DELETE_SUBSCRIPTIONGROUP, header), timeout_ms)

    async def get_all_subscription_group(self, addr: str,
                                         timeout_ms: float | None = None) -> dict[str, SubscriptionGroupConfig]:
        request = self._request(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        response = await self._call(addr, request, timeout_ms)
        return decoded(decode_subscription_group_wrapper, response, "subscription groups", addr)

    # --- consumers and producers ------------------------------------------------------------------------

    async def get_consume_stats(self, addr: str, group: str, topic: str | None = None,
                                timeout_ms: float | None = None) -> ConsumeStats:
        header = GetConsumeStatsRequestHeader(group, topic)
        response = await self._call(addr, self._header_request(RequestCode.GET_CONSUME_STATS, header), timeout_ms)
        return decoded(ConsumeStats.decode, response, "consume stats", addr)

    async def get_consumer_connection_list(self, addr: str, group: str,
                                           timeout_ms: float | None = None) -> ConsumerConnection:
        header = GetConsumerConnectionListRequestHeader(group)
        request = self._header_request(RequestCode.GET_CONSUMER_CONNECTION_LIST, header)
        response = await self._call(addr, request, timeout_ms)
        return decoded(ConsumerConnection.decode, response, "consumer connections", addr)

    async def get_producer_connection_list(self, addr: str, group: str,
                                           timeout_ms: float | None = None) -> ProducerConnection:
        header = GetProducerConnectionListRequestHeader(group)
        request = self._header_request(RequestCode.GET_PRODUCER_CONNECTION_LIST, header)
        response = await self._call(addr, request, timeout_ms)
        return decoded(ProducerConnection.decode, response, "producer connections", addr)

    async def invoke_broker_to_reset_offset(self, addr: str, topic: str, group: str, timestamp_ms: int,
                                            force: bool, cpp: bool = False,
                                            timeout_ms: float | None = None) -> dict[MessageQueue, int]:
        """INVOKE_BROKER_TO_RESET_OFFSET: the broker moves the group's offsets and tells its online consumers;
        ``cpp`` marks the request as a C++ client's, for the broker to answer C++ consumers in their format."""
        request = self._header_request(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
                                       ResetOffsetRequestHeader(topic, group, timestamp_ms, force))
        if cpp:
            request.language = LANGUAGE_CPP
        response = await self._call(addr, request, timeout_ms)
        return decoded(decode_reset_offset_body, response, "reset offsets", addr)

    async def get_consumer_running_info(self, addr: str, group: str, client_id: str, jstack: bool = False,
                                        timeout_ms: float | None = None) -> ConsumerRunningInfo:
        header = GetConsumerRunningInfoRequestHeader(group, client_id, jstack)
        request = self._header_request(RequestCode.GET_CONSUMER_RUNNING_INFO, header)
        response = await self._call(addr, request, timeout_ms)
        return decoded(ConsumerRunningInfo.decode, response, "consumer running info", addr)

    async def consume_message_directly(self, addr: str, group: str, client_id: str | None, msg_id: str,
                                       timeout_ms: float | None = None) -> ConsumeMessageDirectlyResult:
        header = ConsumeMessageDirectlyResultRequestHeader(group, client_id, msg_id)
        request = self._header_request(RequestCode.CONSUME_MESSAGE_DIRECTLY, header)
        response = await self._call(addr, request, timeout_ms)
        return decoded(ConsumeMessageDirectlyResult.decode, response, "consume message directly", addr)

    # --- messages ---------------------------------------------------------------------------------------

    async def view_message(self, addr: str, commit_log_offset: int, timeout_ms: float | None = None) -> MessageExt:
        """VIEW_MESSAGE_BY_ID: the record at ``commit_log_offset`` of the broker at ``addr``."""
        request = self._header_request(RequestCode.VIEW_MESSAGE_BY_ID, ViewMessageRequestHeader(commit_log_offset))
        response = await self._call(addr, request, timeout_ms)
        messages = decoded(lambda body: codec.decode_store_records(body or b""), response, "view message", addr)
        if not messages:
            raise CodecError(f"the view message answer from {addr} holds no message")
        return messages[0]

    async def query_message(self, addr: str, header: QueryMessageRequestHeader, unique_key: bool,
                            timeout_ms: float | None = None) -> tuple[int, list[MessageExt]]:
        """QUERY_MESSAGE by key (or by unique key): (the index's last update timestamp, the messages found).
        A QUERY_NOT_FOUND answer raises its typed error, as the other failures do."""
        # The flag rides beside the header, so that ACL signing covers it as Java's hook does.
        request = self._request(RequestCode.QUERY_MESSAGE, {UNIQUE_MSG_QUERY_FLAG: "true" if unique_key else "false"},
                                custom_header=header)
        response = await self._call(addr, request, timeout_ms)
        last_update = QueryMessageResponseHeader.from_command(response).index_last_update_timestamp
        return last_update, decoded(lambda body: codec.decode_store_records(body or b""), response, "query message",
                                    addr)

    # --- statistics ---------------------------------------------------------------------------------------

    async def view_broker_stats_data(self, addr: str, stats_name: str, stats_key: str,
                                     timeout_ms: float | None = None) -> BrokerStatsData:
        header = ViewBrokerStatsDataRequestHeader(stats_name, stats_key)
        response = await self._call(addr, self._header_request(RequestCode.VIEW_BROKER_STATS_DATA, header),
                                    timeout_ms)
        return decoded(BrokerStatsData.decode, response, "broker stats", addr)

    # --- the name server's KV config -----------------------------------------------------------------------

    async def get_kv_config(self, namesrv_addr: str, namespace: str, key: str,
                            timeout_ms: float | None = None) -> str | None:
        request = self._header_request(RequestCode.GET_KV_CONFIG, GetKVConfigRequestHeader(namespace, key))
        response = await self._call(namesrv_addr, request, timeout_ms)
        return GetKVConfigResponseHeader.from_command(response).value

    async def put_kv_config(self, namesrv_addr: str, namespace: str, key: str, value: str,
                            timeout_ms: float | None = None) -> None:
        request = self._header_request(RequestCode.PUT_KV_CONFIG, PutKVConfigRequestHeader(namespace, key, value))
        await self._call(namesrv_addr, request, timeout_ms)

    async def delete_kv_config(self, namesrv_addr: str, namespace: str, key: str,
                               timeout_ms: float | None = None) -> None:
        request = self._header_request(RequestCode.DELETE_KV_CONFIG, DeleteKVConfigRequestHeader(namespace, key))
        await self._call(namesrv_addr, request, timeout_ms)

    async def get_kv_list_by_namespace(self, namesrv_addr: str, namespace: str,
                                       timeout_ms: float | None = None) -> KVTable:
        request = self._header_request(RequestCode.GET_KVLIST_BY_NAMESPACE, GetKVListByNamespaceRequestHeader(namespace))
        response = await self._call(namesrv_addr, request, timeout_ms)
        return decoded(lambda body: KVTable.decode(body or b"{}"), response, "KV list", namesrv_addr)
