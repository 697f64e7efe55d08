"""A user program that touches every public class of ``rocketmq_py``, checked by ``mypy --strict`` in CI.

It is also a runnable tour: ``python examples/typed_client.py 127.0.0.1:9876`` sends to and consumes from
``TypedClientTopic`` with each kind of client (the topic must exist, or the broker must auto-create it).
"""
from __future__ import annotations

import asyncio
import logging
import sys
from typing import Any, Sequence

from rocketmq_py import (
    AllocateMessageQueueAveragely,
    AllocateMessageQueueAveragelyByCircle,
    AllocateMessageQueueConsistentHash,
    AllocateMessageQueueStrategy,
    AsyncLitePullConsumer,
    AsyncProducer,
    AsyncPushConsumer,
    AsyncTransactionProducer,
    BrokerResponseError,
    ClientConfig,
    ClientError,
    ClientStateError,
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    ConsumeOrderlyContext,
    ConsumeOrderlyStatus,
    ExpressionType,
    InvalidArgumentError,
    LitePullConsumer,
    LitePullConsumerConfig,
    LocalTransactionState,
    Message,
    MessageExt,
    MessageListenerConcurrently,
    MessageListenerOrderly,
    MessageModel,
    MessageQueue,
    MessageQueueSelector,
    MessageSelector,
    NoNameServerError,
    NoRouteInfoError,
    Producer,
    ProducerConfig,
    PushConsumer,
    PushConsumerConfig,
    RebalanceListener,
    RemotingConnectError,
    RemotingError,
    RemotingTimeoutError,
    RequestTimeoutError,
    RocketMQError,
    SelectMessageQueueByHash,
    SelectMessageQueueByRandom,
    SendFailedError,
    SendResult,
    SendStatus,
    SendTimeoutError,
    TlsConfig,
    TransactionListener,
    TransactionProducer,
    TransactionSendResult,
    __version__,
)

TOPIC = "TypedClientTopic"
log = logging.getLogger("typed_client")


class Orders(TransactionListener):
    def execute_local_transaction(self, message: Message, arg: Any) -> LocalTransactionState:
        return LocalTransactionState.COMMIT_MESSAGE

    def check_local_transaction(self, message: MessageExt) -> LocalTransactionState:
        return LocalTransactionState.COMMIT_MESSAGE


class ByFirstQueue(MessageQueueSelector):
    def select(self, queues: Sequence[MessageQueue], message: Message, arg: Any) -> MessageQueue:
        return queues[0]


class Printer(MessageListenerConcurrently):
    def consume_message(self, messages: list[MessageExt],
                        context: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        for message in messages:
            log.info("got %s from %s", message.msg_id, context.message_queue)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS


class InOrder(MessageListenerOrderly):
    def consume_message(self, messages: list[MessageExt], context: ConsumeOrderlyContext) -> ConsumeOrderlyStatus:
        return ConsumeOrderlyStatus.SUCCESS


class Queues(RebalanceListener):
    def on_queues_assigned(self, assigned: set[MessageQueue]) -> None:
        log.info("assigned %s", sorted(assigned))

    async def on_queues_revoked(self, revoked: set[MessageQueue]) -> None:
        log.info("revoked %s", sorted(revoked))


def a_listener(messages: list[MessageExt], context: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
    """A plain function listener, annotated as users write it."""
    return ConsumeConcurrentlyStatus.CONSUME_SUCCESS


def strategies() -> list[AllocateMessageQueueStrategy]:
    return [AllocateMessageQueueAveragely(), AllocateMessageQueueAveragelyByCircle(),
            AllocateMessageQueueConsistentHash()]


def settings(namesrv: str) -> tuple[ClientConfig, ProducerConfig, PushConsumerConfig, LitePullConsumerConfig]:
    tls = TlsConfig(enable=False)
    client = ClientConfig(namesrv_addr=namesrv, tls_config=tls)
    producer = ProducerConfig(namesrv_addr=namesrv, producer_group="typed_pg", send_msg_timeout=5_000)
    push = PushConsumerConfig(namesrv_addr=namesrv, consumer_group="typed_push",
                              message_model=MessageModel.CLUSTERING,
                              consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    lite = LitePullConsumerConfig(namesrv_addr=namesrv, consumer_group="typed_lite", auto_commit=True)
    return client, producer, push, lite


def blocking_tour(namesrv: str) -> None:
    _, producer_config, push_config, lite_config = settings(namesrv)
    with Producer(config=producer_config) as producer:
        result: SendResult = producer.send(Message(TOPIC, b"hello", tags="TagA"))
        assert result.send_status is SendStatus.SEND_OK
        producer.send(Message(TOPIC, b"ordered"), selector=SelectMessageQueueByHash(), arg="order-1")
        producer.send(Message(TOPIC, b"random"), selector=SelectMessageQueueByRandom())
        producer.send(Message(TOPIC, b"first"), selector=ByFirstQueue())
        producer.send_async(Message(TOPIC, b"later"), on_success=lambda sent: log.info("sent %s", sent.msg_id))
        producer.flush()
    with TransactionProducer("typed_tx_pg", Orders(), namesrv_addr=namesrv) as transactional:
        outcome: TransactionSendResult = transactional.send_message_in_transaction(Message(TOPIC, b"tx"))
        log.info("transaction %s", outcome.local_transaction_state)

    push = PushConsumer(config=push_config, rebalance_listener=Queues())
    push.subscribe(TOPIC, MessageSelector.by_tag("TagA || TagB"))
    push.register_message_listener(Printer())
    push.start()
    push.close()
    orderly = PushConsumer("typed_orderly", namesrv_addr=namesrv)
    orderly.subscribe(TOPIC, "*")
    orderly.register_message_listener(InOrder())
    functional = PushConsumer("typed_function", namesrv_addr=namesrv)
    functional.register_message_listener(a_listener)

    with LitePullConsumer(config=lite_config) as lite:
        lite.subscribe(TOPIC, MessageSelector(ExpressionType.TAG, "*"))
        for message in lite:
            log.info("pulled %s", message.body)
            break


async def asyncio_tour(namesrv: str) -> None:
    async with AsyncProducer("typed_async_pg", namesrv_addr=namesrv) as producer:
        sent = await producer.send(Message(TOPIC, b"async hello"))
        log.info("sent %s to %s", sent.msg_id, sent.message_queue)
        producer.send_async(Message(TOPIC, b"in flight"))
        await producer.flush()
    transactional = AsyncTransactionProducer("typed_async_tx", Orders(), namesrv_addr=namesrv)
    await transactional.start()
    await transactional.close()

    lite = AsyncLitePullConsumer("typed_async_lite", namesrv_addr=namesrv,
                                 consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    lite.subscribe(TOPIC)
    async with lite:
        async for message in lite:
            log.info("pulled %s", message.msg_id)
            break

    push = AsyncPushConsumer("typed_async_push", namesrv_addr=namesrv, rebalance_listener=Queues(),
                             allocate_message_queue_strategy=strategies()[0])
    push.subscribe(TOPIC)
    batches = push.messages()
    async with push:
        async for batch in batches:
            log.info("a batch of %d", len(batch))
            break


def explain(error: RocketMQError) -> str:
    """Every public error class, most specific first."""
    kinds: list[type[RocketMQError]] = [
        InvalidArgumentError, ClientStateError, NoNameServerError, NoRouteInfoError, SendTimeoutError,
        RequestTimeoutError, SendFailedError, ClientError, RemotingConnectError, RemotingTimeoutError,
        RemotingError, BrokerResponseError,
    ]
    for kind in kinds:
        if isinstance(error, kind):
            return kind.__name__
    return "RocketMQError"


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO)
    namesrv = argv[1] if len(argv) > 1 else "127.0.0.1:9876"
    log.info("rocketmq-py %s", __version__)
    try:
        blocking_tour(namesrv)
        asyncio.run(asyncio_tour(namesrv))
    except RocketMQError as error:
        log.error("%s: %s", explain(error), error)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
