"""A fake name server and broker on loopback for the consumer tests: it keeps messages per queue in the store
layout and answers the consumer RPCs as a 4.9 broker does, or the next pulls as a test scripts them."""
from __future__ import annotations

import asyncio
import time

from rocketmq_py import codec
from rocketmq_py.client.consumer import AsyncPushConsumer
from rocketmq_py.common.codes import RequestCode, ResponseCode
from rocketmq_py.common.heartbeat import HeartbeatData
from rocketmq_py.common.message_queue import MessageQueue
from rocketmq_py.common.route import BrokerData, QueueData, TopicRouteData
from rocketmq_py.remoting import ProcessorTable, RemotingCommand, RemotingServer, RequestContext, create_response

BROKER = "broker-a"
GROUP = "cg"
RETRY = f"%RETRY%{GROUP}"
HOLD_S = 0.2


class FakeBroker:
    """Stores messages per queue in the store layout and answers the consumer RPCs as a 4.9 broker does."""

    def __init__(self, topics: dict[str, int]) -> None:
        self.topics = dict(topics)
        self.queues: dict[tuple[str, int], list[bytes]] = {}
        self.offsets: dict[tuple[str, str, int], int] = {}
        self.clients: dict[str, dict[str, RequestContext]] = {}
        self.requests: list[RemotingCommand] = []
        self.locks: dict[MessageQueue, str] = {}
        self.send_backs: list[dict[str, str]] = []
        self.sends: list[RemotingCommand] = []
        self.refuse_send_back = False
        #: Answers to the next pulls of a queue (topic, queue id), before any stored message is looked at:
        #: (code, remark, how far past the pull's offset the answer's nextBeginOffset lies), without a body.
        self.scripted_pulls: dict[tuple[str, int], list[tuple[int, str | None, int]]] = {}
        self.physical = 0
        table = ProcessorTable()
        handlers = {
            RequestCode.HEART_BEAT: self.on_heartbeat, RequestCode.UNREGISTER_CLIENT: self.on_unregister,
            RequestCode.GET_CONSUMER_LIST_BY_GROUP: self.on_consumer_list, RequestCode.PULL_MESSAGE: self.on_pull,
            RequestCode.QUERY_CONSUMER_OFFSET: self.on_query_offset, RequestCode.UPDATE_CONSUMER_OFFSET: self.on_update,
            RequestCode.GET_MAX_OFFSET: self.on_max, RequestCode.GET_MIN_OFFSET: self.on_min,
            RequestCode.SEARCH_OFFSET_BY_TIMESTAMP: self.on_search,
            RequestCode.CONSUMER_SEND_MSG_BACK: self.on_send_back, RequestCode.LOCK_BATCH_MQ: self.on_lock,
            RequestCode.UNLOCK_BATCH_MQ: self.on_unlock, RequestCode.SEND_MESSAGE_V2: self.on_send,
        }
        for code, handler in handlers.items():
            table.register(code, handler)
        self.server = RemotingServer(processors=table)
        self.namesrv = RemotingServer(processors=ProcessorTable())
        self.namesrv.processors.register(RequestCode.GET_ROUTEINFO_BY_TOPIC, self.on_route)

    async def __aenter__(self) -> "FakeBroker":
        await self.server.start()
        await self.namesrv.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.server.shutdown()
        await self.namesrv.shutdown()

    def of_code(self, code: int) -> list[RemotingCommand]:
        return [r for r in self.requests if r.code == code]

    def put(self, topic: str, queue_id: int, body: bytes, tags: str | None = None, reconsume_times: int = 0,
            properties: dict[str, str] | None = None) -> None:
        records = self.queues.setdefault((topic, queue_id), [])
        props = dict(properties or {})
        props.setdefault("UNIQ_KEY", f"ID{topic}{queue_id}{len(records)}")
        if tags:
            props["TAGS"] = tags
        self.physical += 1000
        records.append(codec.encode_store_record(
            topic=topic, body=body, properties=props, queue_id=queue_id, queue_offset=len(records),
            physical_offset=self.physical, born_timestamp=int(time.time() * 1000), store_host=self.server.address,
            store_timestamp=int(time.time() * 1000), reconsume_times=reconsume_times))

    # --- handlers ---------------------------------------------------------------------------------

    async def on_route(self, ctx, request):
        topic = request.ext_fields["topic"]
        if topic not in self.topics:
            return create_response(request, ResponseCode.TOPIC_NOT_EXIST, "no route")
        route = TopicRouteData([QueueData(BROKER, self.topics[topic], self.topics[topic], 6)],
                               [BrokerData("FakeCluster", BROKER, {0: self.server.address})])
        return create_response(request, 0, body=route.encode())

    async def on_heartbeat(self, ctx, request):
        self.requests.append(request)
        heartbeat = HeartbeatData.decode(request.body)
        for consumer in heartbeat.consumer_data:
            self.clients.setdefault(consumer["groupName"], {})[heartbeat.client_id] = ctx
            self.topics.setdefault(f"%RETRY%{consumer['groupName']}", 1)
        return create_response(request, 0)

    async def on_unregister(self, ctx, request):
        self.requests.append(request)
        group = request.ext_fields.get("consumerGroup")
        if group:
            self.clients.get(group, {}).pop(request.ext_fields["clientID"], None)
        return create_response(request, 0)

    async def on_consumer_list(self, ctx, request):
        ids = sorted(self.clients.get(request.ext_fields["consumerGroup"], {}))
        return create_response(request, 0, body=codec.json_dumps({"consumerIdList": ids}).encode())

    async def on_pull(self, ctx, request):
        self.requests.append(request)
        fields = request.ext_fields
        key = (fields["topic"], int(fields["queueId"]))
        offset, wanted = int(fields["queueOffset"]), int(fields["maxMsgNums"])
        if int(fields["sysFlag"]) & 0x1:
            self.offsets[(fields["consumerGroup"], key[0], key[1])] = int(fields["commitOffset"])
        if self.scripted_pulls.get(key):
            code, remark, ahead = self.scripted_pulls[key].pop(0)
            ext = {"suggestWhichBrokerId": "0", "minOffset": "0", "maxOffset": str(len(self.queues.get(key, []))),
                   "nextBeginOffset": str(offset + ahead)}
            return create_response(request, code, remark, ext)
        deadline = time.monotonic() + HOLD_S
        while offset >= len(self.queues.get(key, [])) and int(fields["sysFlag"]) & 0x2 \
                and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        records = self.queues.get(key, [])
        ext = {"suggestWhichBrokerId": "0", "minOffset": "0", "maxOffset": str(len(records))}
        if offset >= len(records):
            ext["nextBeginOffset"] = str(len(records))
            return create_response(request, ResponseCode.PULL_NOT_FOUND, "OFFSET_OVERFLOW_ONE", ext)
        chunk = records[offset:offset + wanted]
        ext["nextBeginOffset"] = str(offset + len(chunk))
        return create_response(request, 0, "FOUND", ext, b"".join(chunk))

    async def on_query_offset(self, ctx, request):
        fields = request.ext_fields
        offset = self.offsets.get((fields["consumerGroup"], fields["topic"], int(fields["queueId"])))
        if offset is None:
            return create_response(request, ResponseCode.QUERY_NOT_FOUND, "Not found, V3_0_6_SNAPSHOT maybe")
        return create_response(request, 0, ext_fields={"offset": str(offset)})

    async def on_update(self, ctx, request):
        self.requests.append(request)
        fields = request.ext_fields
        self.offsets[(fields["consumerGroup"], fields["topic"], int(fields["queueId"]))] = int(fields["commitOffset"])
        return create_response(request, 0)

    async def on_max(self, ctx, request):
        key = (request.ext_fields["topic"], int(request.ext_fields["queueId"]))
        return create_response(request, 0, ext_fields={"offset": str(len(self.queues.get(key, [])))})

    async def on_search(self, ctx, request):
        self.requests.append(request)
        return create_response(request, 0, ext_fields={"offset": "2"})

    async def on_min(self, ctx, request):
        return create_response(request, 0, ext_fields={"offset": "0"})

    async def on_send_back(self, ctx, request):
        self.requests.append(request)
        fields = request.ext_fields
        if self.refuse_send_back:
            return create_response(request, ResponseCode.SYSTEM_ERROR, "refused")
        self.send_backs.append(dict(fields))
        original = next(m for records in self.queues.values() for m in codec.decode_store_records(b"".join(records))
                        if m.commit_log_offset == int(fields["offset"]))
        self.put(f"%RETRY%{fields['group']}", 0, original.body, reconsume_times=original.reconsume_times + 1,
                 properties={**original.properties, "RETRY_TOPIC": original.properties.get("RETRY_TOPIC",
                                                                                           original.topic)})
        return create_response(request, 0)

    async def on_send(self, ctx, request):
        self.sends.append(request)
        fields = request.ext_fields
        return create_response(request, 0, ext_fields={
            "msgId": codec.create_offset_msg_id("127.0.0.1", self.server.port, 1), "queueId": fields["e"],
            "queueOffset": "0", "MSG_REGION": "DefaultRegion", "TRACE_ON": "true"})

    async def on_lock(self, ctx, request):
        self.requests.append(request)
        body = codec.json_loads(request.body)
        locked = []
        for item in body["mqSet"]:
            queue = MessageQueue.from_json(item)
            if self.locks.setdefault(queue, body["clientId"]) == body["clientId"]:
                locked.append(item)
        return create_response(request, 0, body=codec.json_dumps({"lockOKMQSet": locked}).encode())

    async def on_unlock(self, ctx, request):
        self.requests.append(request)
        body = codec.json_loads(request.body)
        for item in body["mqSet"]:
            queue = MessageQueue.from_json(item)
            if self.locks.get(queue) == body["clientId"]:
                del self.locks[queue]
        return create_response(request, 0)


def push(broker: FakeBroker, listener, **options) -> AsyncPushConsumer:
    options.setdefault("consume_from_where", "CONSUME_FROM_FIRST_OFFSET")
    consumer = AsyncPushConsumer(GROUP, namesrv_addr=broker.namesrv.address, **options)
    consumer.subscribe("T", options.pop("selector", "*") if "selector" in options else "*")
    consumer.register_message_listener(listener)
    return consumer


async def until(condition, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        await asyncio.sleep(0.01)


def committed(broker: FakeBroker, topic: str = "T") -> dict[int, int]:
    return {q: o for (g, t, q), o in broker.offsets.items() if g == GROUP and t == topic}
