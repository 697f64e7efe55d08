"""A fake name server and fake brokers on loopback that record what producers send them."""
from __future__ import annotations

import asyncio

from rocketmq_py import codec
from rocketmq_py.common.codes import RequestCode, ResponseCode
from rocketmq_py.common.route import BrokerData, QueueData, TopicRouteData
from rocketmq_py.remoting import (
    ProcessorTable,
    RemotingCommand,
    RemotingConnection,
    RemotingServer,
    RequestContext,
    create_response,
)


class FakeBroker:
    """Answers sends with the next code of ``codes`` (SUCCESS when empty) and records every request."""

    def __init__(self, name: str, log: list[tuple[str, RemotingCommand]]) -> None:
        self.name = name
        self.log = log
        self.requests: list[RemotingCommand] = []
        #: the connection of each request in ``requests``, in the same order
        self.connections: list[RemotingConnection] = []
        self.codes: list[int] = []
        #: seconds each send waits before it is answered
        self.delay_s = 0.0
        self.offset = 0
        table = ProcessorTable()
        for code in (RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE, RequestCode.SEND_REPLY_MESSAGE_V2):
            table.register(code, self.on_send)
        for code in (RequestCode.HEART_BEAT, RequestCode.UNREGISTER_CLIENT, RequestCode.END_TRANSACTION):
            table.register(code, self.on_other)
        self.server = RemotingServer(processors=table)

    def of_code(self, code: int) -> list[RemotingCommand]:
        return [r for r in self.requests if r.code == code]

    async def on_send(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        self.requests.append(request)
        self.connections.append(ctx.connection)
        self.log.append((self.name, request))
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        code = self.codes.pop(0) if self.codes else ResponseCode.SUCCESS
        if code not in (0, 10, 11, 12):
            return create_response(request, code, f"refused by {self.name}")
        fields = request.ext_fields or {}
        self.offset += 1
        ext = {"msgId": codec.create_offset_msg_id("127.0.0.1", self.server.port, self.offset * 100),
               "queueId": fields.get("e", "0"), "queueOffset": str(self.offset),
               "MSG_REGION": "RegionX", "TRACE_ON": "true"}
        return create_response(request, code, None, ext)

    async def on_other(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        self.requests.append(request)
        self.connections.append(ctx.connection)
        return create_response(request, 0)


class FakeCluster:
    def __init__(self, broker_count: int = 2, queues: int = 4) -> None:
        self.send_log: list[tuple[str, RemotingCommand]] = []
        self.brokers = [FakeBroker(f"broker-{chr(ord('a') + i)}", self.send_log) for i in range(broker_count)]
        self.queues = queues
        self.known_topics: set[str] = set()
        self.route_requests: list[str] = []
        table = ProcessorTable()
        table.register(RequestCode.GET_ROUTEINFO_BY_TOPIC, self.on_route)
        self.namesrv = RemotingServer(processors=table)

    def route(self, queues: int, perm: int = 6) -> TopicRouteData:
        return TopicRouteData(
            [QueueData(b.name, queues, queues, perm) for b in self.brokers],
            [BrokerData("FakeCluster", b.name, {0: b.server.address}) for b in self.brokers],
        )

    async def on_route(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        topic = (request.ext_fields or {})["topic"]
        self.route_requests.append(topic)
        if topic == "TBW102":
            return create_response(request, 0, body=self.route(8, perm=7).encode())
        if topic not in self.known_topics:
            return create_response(request, ResponseCode.TOPIC_NOT_EXIST, f"No topic route info in name server for {topic}")
        return create_response(request, 0, body=self.route(self.queues).encode())

    async def __aenter__(self) -> "FakeCluster":
        await self.namesrv.start()
        for broker in self.brokers:
            await broker.server.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        for broker in self.brokers:
            await broker.server.shutdown()
        await self.namesrv.shutdown()

    def answer_next_sends(self, codes: list[int]) -> None:
        """Every broker answers its next sends with ``codes``, in order (then SUCCESS again)."""
        for broker in self.brokers:
            broker.codes = list(codes)

    def delay_sends(self, seconds: float) -> None:
        """Every broker waits ``seconds`` before it answers a send."""
        for broker in self.brokers:
            broker.delay_s = seconds

    def sends(self) -> list[tuple[str, RemotingCommand]]:
        """(broker name, request) of every send, in arrival order."""
        return list(self.send_log)
