"""One coroutine per RPC that a client sends (Java's ``MQClientAPIImpl``).

Each method builds the request, sends it through the remoting client and
turns a non-success response into the typed error for its code.
"""
from __future__ import annotations

from rocketmq_py.common.codes import RequestCode, ResponseCode
from rocketmq_py.common.headers.namesrv import GetRouteInfoRequestHeader, GetTopicsByClusterRequestHeader
from rocketmq_py.common.route import ClusterInfo, TopicList, TopicRouteData
from rocketmq_py.errors import TopicNotExistError, error_for_response
from rocketmq_py.remoting.client import RemotingClient
from rocketmq_py.remoting.command import RemotingCommand, create_request

DEFAULT_TIMEOUT_MS = 3000


class MQClientAPI:
    """The RPCs of a client, over one :class:`RemotingClient`."""

    def __init__(
        self,
        remoting: RemotingClient,
        timeout_ms: float = DEFAULT_TIMEOUT_MS,
        serialize_type: int | None = None,
    ) -> None:
        self.remoting = remoting
        self.timeout_ms = timeout_ms
        #: JSON or ROCKETMQ for every request; None follows ROCKETMQ_SERIALIZE_TYPE (JSON by default).
        self.serialize_type = serialize_type

    def _request(self, code: int, ext_fields: dict[str, str] | None = None, body: bytes | None = None) -> RemotingCommand:
        return create_request(code, ext_fields, body, serialize_type=self.serialize_type)

    async def _call(self, addr: str, request: RemotingCommand, timeout_ms: float | None) -> RemotingCommand:
        response = await self.remoting.invoke(addr, request, timeout_ms or self.timeout_ms)
        if response.code != ResponseCode.SUCCESS:
            raise error_for_response(response.code, response.remark, addr)
        return response

    async def get_topic_route(self, namesrv_addr: str, topic: str, timeout_ms: float | None = None) -> TopicRouteData:
        request = self._request(RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic=topic).to_ext_fields())
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
        request = self._request(RequestCode.GET_TOPICS_BY_CLUSTER, header.to_ext_fields())
        response = await self._call(namesrv_addr, request, timeout_ms)
        return TopicList.decode(response.body or b"{}")
