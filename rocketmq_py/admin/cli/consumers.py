"""mqadmin's group, consumer and producer commands: updateSubGroup, deleteSubGroup, consumerProgress,
consumerConnection, consumerStatus, producerConnection, resetOffsetByTime and skipAccumulatedMessage (Java's
UpdateSubGroupSubCommand, DeleteSubscriptionGroupCommand, ConsumerProgressSubCommand,
ConsumerConnectionSubCommand, ConsumerStatusSubCommand, ProducerConnectionSubCommand, ResetOffsetByTimeCommand
with ResetOffsetByTimeOldCommand, and SkipAccumulationSubCommand: the same flags and printed columns)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from rocketmq_py.admin.cli import Command, Output
from rocketmq_py.admin.cli.java_text import (
    date_seconds,
    front,
    jstr,
    parse_timestamp,
    printf,
    running_info_text,
    subscription_group_text,
)
from rocketmq_py.admin.cli.topics import java_bool
from rocketmq_py.common import clock
from rocketmq_py.common.heartbeat_consumer import ConsumeType
from rocketmq_py.common.mq_version import version_desc
from rocketmq_py.common.topic import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX
from rocketmq_py.errors import ConsumerNotOnlineError, RocketMQError

if TYPE_CHECKING:
    from rocketmq_py.admin.core import AsyncAdmin
    from rocketmq_py.admin.results import RollbackStats
    from rocketmq_py.common.consumer_body import ConsumerRunningInfo
    from rocketmq_py.common.message_queue import MessageQueue
    from rocketmq_py.common.subscription_group import SubscriptionGroupConfig


def _broker_or_cluster(parser: argparse.ArgumentParser, what: str) -> None:
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("-b", "--brokerAddr", dest="broker_addr", help=f"{what} which broker")
    target.add_argument("-c", "--clusterName", dest="cluster_name", help=f"{what} which cluster")


# --- updateSubGroup / deleteSubGroup -------------------------------------------------------------------------

def _update_sub_group_arguments(parser: argparse.ArgumentParser) -> None:
    _broker_or_cluster(parser, "create subscription group to")
    parser.add_argument("-g", "--groupName", dest="group_name", required=True, help="consumer group name")
    parser.add_argument("-s", "--consumeEnable", dest="consume_enable", type=java_bool, help="consume enable")
    parser.add_argument("-m", "--consumeFromMinEnable", dest="consume_from_min_enable", type=java_bool,
                        default=False, help="from min offset")
    parser.add_argument("-d", "--consumeBroadcastEnable", dest="consume_broadcast_enable", type=java_bool,
                        default=False, help="broadcast")
    parser.add_argument("-q", "--retryQueueNums", dest="retry_queue_nums", type=int, help="retry queue nums")
    parser.add_argument("-r", "--retryMaxTimes", dest="retry_max_times", type=int, help="retry max times")
    parser.add_argument("-i", "--brokerId", dest="broker_id", type=int, help="consumer from which broker id")
    parser.add_argument("-w", "--whichBrokerWhenConsumeSlowly", dest="which_broker_when_consume_slowly", type=int,
                        help="which broker id when consume slowly")
    parser.add_argument("-a", "--notifyConsumerIdsChanged", dest="notify_consumer_ids_changed_enable",
                        type=java_bool, help="notify consumerId changed")


async def _update_sub_group(admin: AsyncAdmin, args: argparse.Namespace) -> Output:
    # lazy: see rocketmq_py/_lazy.py
    from rocketmq_py.common.subscription_group import SubscriptionGroupConfig

    config = SubscriptionGroupConfig(args.group_name.strip(), consume_from_min_enable=args.consume_from_min_enable,
                                     consume_broadcast_enable=args.consume_broadcast_enable)
    for name in ("consume_enable", "retry_queue_nums", "retry_max_times", "broker_id",
                 "which_broker_when_consume_slowly", "notify_consumer_ids_changed_enable"):
        if getattr(args, name) is not None:
            setattr(config, name, getattr(args, name))
    addrs = [args.broker_addr.strip()] if args.broker_addr else \
        await admin.master_addrs_of_cluster(args.cluster_name.strip())
    text = []
    for addr in addrs:
        await admin.create_and_update_subscription_group_config(addr, config)
        text.append(f"create subscription group to {addr} success.\n")
    text.append(subscription_group_text(config))
    return Output("".join(text), {"created_on": addrs, "subscription_group": config})


def _delete_sub_group_arguments(parser: argparse.ArgumentParser) -> None:
    _broker_or_cluster(parser, "delete subscription group from")
    parser.add_argument("-g", "--groupName", dest="group_name", required=True, help="subscription group name")
    parser.add_argument("-r", "--removeOffset", dest="remove_offset", type=java_bool, default=False,
                        help="remove offset")


async def _delete_sub_group(admin: AsyncAdmin, args: argparse.Namespace) -> Output:
    group = args.group_name.strip()
    if args.broker_addr:
        addr = args.broker_addr.strip()
        await admin.delete_subscription_group(addr, group, args.remove_offset)
        return Output(f"delete subscription group [{group}] from broker [{addr}] success.\n",
                      {"group": group, "deleted_on": [addr]})
    cluster = args.cluster_name.strip()
    masters = await admin.master_addrs_of_cluster(cluster)
    text = []
    for addr in masters:
        await admin.delete_subscription_group(addr, group, args.remove_offset)
        text.append(f"delete subscription group [{group}] from broker [{addr}] in cluster [{cluster}] success.\n")
    for topic in (RETRY_GROUP_TOPIC_PREFIX + group, DLQ_GROUP_TOPIC_PREFIX + group):
        try:  # as mqadmin: the group is gone even when its retry or DLQ topic cannot be deleted
            await admin.delete_topic(topic, cluster)
        except RocketMQError as error:
            print(f"deleting {topic} failed: {error}", file=sys.stderr)
            continue
        text.append(f"delete topic [{topic}] from cluster [{cluster}] success.\n"
                    f"delete topic [{topic}] from NameServer success.\n")
    return Output("".join(text), {"group": group, "deleted_on": masters})


# --- getConsumerConfig ------------------------------------------------------------------------------------------

def _get_consumer_config_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-g", "--groupName", dest="group_name", required=True, help="subscription group name")


async def _get_consumer_config(admin: AsyncAdmin, args: argparse.Namespace) -> Output:
    """Java's GetConsumerConfigSubCommand: the group's settings on every broker that has it."""
    group = args.group_name.strip()
    info = await admin.examine_broker_cluster_info()
    text, data = [], []
    for name, broker in sorted(info.broker_addr_table.items()):
        addr = broker.select_broker_addr()
        config = await admin.examine_subscription_group_config(addr, group) if addr is not None else None
        if config is None:
            continue
        cluster = next((c for c, names in info.cluster_addr_table.items() if name in names), None)
        text.append(f"============================={jstr(cluster)}:{name}=============================\n")
        text += [printf("%s%-40s=  %s\n", "", key, value) for key, value in _java_fields(config)]
        data.append({"cluster": cluster, "broker_name": name, "subscription_group": config})
    return Output("".join(text), data)


def _java_fields(config: SubscriptionGroupConfig) -> list[tuple[str, object]]:
    """SubscriptionGroupConfig's fields by their Java names, in declaration order."""
    return [("groupName", config.group_name), ("consumeEnable", config.consume_enable),
            ("consumeFromMinEnable", config.consume_from_min_enable),
            ("consumeBroadcastEnable", config.consume_broadcast_enable), ("retryQueueNums", config.retry_queue_nums),
            ("retryMaxTimes", config.retry_max_times), ("brokerId", config.broker_id),
            ("whichBrokerWhenConsumeSlowly", config.which_broker_when_consume_slowly),
            ("notifyConsumerIdsChangedEnable", config.notify_consumer_ids_changed_enable)]


# --- consumerProgress -------------------------------------------------------------------------------------------

def _consumer_progress_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-g", "--groupName", dest="group_name", help="consumer group name")
    parser.add_argument("-s", "--showClientIP", dest="show_client_ip", help="Show Client IP per Queue")


async def _client_ips(admin: AsyncAdmin, group: str) -> dict[MessageQueue, str]:
    """The IP of the consumer each queue is allocated to (from the consumers' running info); {} on failure."""
    found: dict[MessageQueue, str] = {}
    try:
        for connection in (await admin.examine_consumer_connection_info(group)).connection_set:
            info = await admin.get_consumer_running_info(group, connection.client_id)
            found.update((queue, connection.client_id.split("@")[0]) for queue in info.mq_table)
    except RocketMQError:
        pass  # mqadmin prints N/A for every queue then
    return found


async def _consumer_progress(admin: AsyncAdmin, args: argparse.Namespace) -> Output:
    if not args.group_name:
        return await _all_groups_progress(admin)
    group = args.group_name.strip()
    stats = await admin.examine_consume_stats(group)
    show_ip = (args.show_client_ip or "").lower() == "true"
    ips = await _client_ips(admin, group) if show_ip else {}
    if show_ip:
        text = [printf("%-64s  %-32s  %-4s  %-20s  %-20s  %-20s %-20s  %s%n", "#Topic", "#Broker Name", "#QID",
                       "#Broker Offset", "#Consumer Offset", "#Client IP", "#Diff", "#LastTime")]
    else:
        text = [printf("%-64s  %-32s  %-4s  %-20s  %-20s  %-20s  %s%n", "#Topic", "#Broker Name", "#QID",
                       "#Broker Offset", "#Consumer Offset", "#Diff", "#LastTime")]
    data = []
    for queue, offset in sorted(stats.offset_table.items()):
        last = "N/A" if offset.last_timestamp == 0 else date_seconds(offset.last_timestamp)
        row = [front(queue.topic, 64), front(queue.broker_name, 32), queue.queue_id, offset.broker_offset,
               offset.consumer_offset]
        if show_ip:
            text.append(printf("%-64s  %-32s  %-4d  %-20d  %-20d  %-20s %-20d  %s%n", *row, ips.get(queue, "N/A"),
                               offset.diff, last))
        else:
            text.append(printf("%-64s  %-32s  %-4d  %-20d  %-20d  %-20d  %s%n", *row, offset.diff, last))
        data.append({"topic": queue.topic, "broker_name": queue.broker_name, "queue_id": queue.queue_id,
                     "broker_offset": offset.broker_offset, "consumer_offset": offset.consumer_offset,
                     "diff": offset.diff, "last_timestamp": offset.last_timestamp,
                     **({"client_ip": ips.get(queue)} if show_ip else {})})
    total = stats.compute_total_diff()
    text.append(printf("%nConsume TPS: %.2f%nDiff Total: %d%n", stats.consume_tps, total))
    return Output("".join(text), {"queues": data, "consume_tps": stats.consume_tps, "diff_total": total})


async def _all_groups_progress(admin: AsyncAdmin) -> Output:
    text = [printf("%-64s  %-6s  %-24s %-5s  %-14s  %-7s  %s%n", "#Group", "#Count", "#Version", "#Type", "#Model",
                   "#TPS", "#Diff Total")]
    data = []
    topics = sorted((await admin.fetch_all_topic_list()).topics)
    for group in (topic[len(RETRY_GROUP_TOPIC_PREFIX):] for topic in topics if topic.startswith(RETRY_GROUP_TOPIC_PREFIX)):
        tps, diff, count, version, kind, model = 0, 0, 0, "OFFLINE", "", ""
        try:
            stats = await admin.examine_consume_stats(group)
            tps, diff = int(stats.consume_tps), stats.compute_total_diff()
        except RocketMQError:
            pass  # a group without offsets shows zeros, as in mqadmin
        try:
            connection = await admin.examine_consumer_connection_info(group)
        except RocketMQError:
            connection = None
        if connection is not None and connection.connection_set:
            count = len(connection.connection_set)
            version = version_desc(connection.compute_min_version())
            push = connection.consume_type is ConsumeType.CONSUME_PASSIVELY
            kind = "PUSH" if push else "PULL"
            model = connection.message_model.value if push and connection.message_model is not None else ""
        text.append(printf("%-64s  %-6d  %-24s %-5s  %-14s  %-7d  %d%n", front(group, 64), count, version, kind, model,
                           tps, diff))
        data.append({"group": group, "count": count, "version": version, "type": kind, "model": model, "tps": tps,
                     "diff_total": diff})
    return Output("".join(text), data)


# --- consumerConnection / producerConnection -------------------------------------------------------------------

def _consumer_connection_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-g", "--consumerGroup", dest="group", required=True, help="consumer group name")
    parser.add_argument("-b", "--brokerAddr", dest="broker_addr", help="broker address")


async def _consumer_connection(admin: AsyncAdmin, args: argparse.Namespace) -> Output:
    connection = await admin.examine_consumer_connection_info(args.group.strip(),
                                                              args.broker_addr.strip() if args.broker_addr else None)
    text = [printf("%-36s %-22s %-10s %s%n", "#ClientId", "#ClientAddr", "#Language", "#Version")]
    text += [printf("%-36s %-22s %-10s %s%n", c.client_id, c.client_addr, c.language, version_desc(c.version))
             for c in connection.connection_set]
    text.append("\nBelow is subscription:\n")
    text.append(printf("%-20s %s%n", "#Topic", "#SubExpression"))
    text += [printf("%-20s %s%n", sub.topic, sub.sub_string) for _, sub in sorted(connection.subscription_table.items())]
    text.append("\n")
    for label, value in (("ConsumeType", connection.consume_type), ("MessageModel", connection.message_model),
                         ("ConsumeFromWhere", connection.consume_from_where)):
        text.append(f"{label}: {jstr(value.value if value is not None else None)}\n")
    return Output("".join(text), connection)


def _producer_connection_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-g", "--producerGroup", dest="group", required=True, help="producer group name")
    parser.add_argument("-t", "--topic", required=True, help="topic name")


async def _producer_connection(admin: AsyncAdmin, args: argparse.Namespace) -> Output:
    connection = await admin.examine_producer_connection_info(args.group.strip(), args.topic.strip())
    text = [printf("%04d  %-32s %-22s %-8s %s%n", index, c.client_id, c.client_addr, c.language,
                   version_desc(c.version)) for index, c in enumerate(connection.connection_set, 1)]
    return Output("".join(text), connection)


# --- consumerStatus ---------------------------------------------------------------------------------------------

def _consumer_status_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-g", "--consumerGroup", dest="group", required=True, help="consumer group name")
    parser.add_argument("-i", "--clientId", dest="client_id", help="The consumer's client id")
    parser.add_argument("-b", "--brokerAddr", dest="broker_addr", help="broker address")
    parser.add_argument("-s", "--jstack", action="store_true", help="Run jstack command in the consumer progress")


def _same_subscriptions(infos: dict[str, ConsumerRunningInfo], now_ms: int) -> bool:
    """Java's ConsumerRunningInfo.analyzeSubscription: push consumers running for over two minutes must all
    subscribe alike, and to something."""
    first = infos[min(infos)]
    push = first.properties.get("PROP_CONSUME_TYPE") == "CONSUME_PASSIVELY"
    started = int(first.properties.get("PROP_CONSUMER_START_TIMESTAMP", "0") or 0)
    if not push or now_ms - started <= 120_000:
        return True
    subscriptions = [sorted((sub.topic, sub.sub_string) for sub in info.subscription_set) for info in infos.values()]
    return all(subs == subscriptions[0] for subs in subscriptions) and bool(subscriptions[-1])


def _blocked_queues(client_id: str, info: ConsumerRunningInfo, now_ms: int) -> str:
    """Java's ConsumerRunningInfo.analyzeProcessQueue: queues a push consumer cannot lock or consume."""
    if info.properties.get("PROP_CONSUME_TYPE") != "CONSUME_PASSIVELY":
        return ""
    orderly = info.properties.get("PROP_CONSUMEORDERLY", "").lower() == "true"
    found = []
    for queue, process in sorted(info.mq_table.items()):
        if orderly and not process.locked:
            found.append(f"{client_id} {queue} can't lock for a while, {now_ms - process.last_lock_timestamp}ms\n")
        elif orderly and process.droped and process.try_unlock_times > 0:
            found.append(f"{client_id} {queue} unlock {process.try_unlock_times} times, still failed\n")
        elif not orderly and now_ms - process.last_consume_timestamp > 60_000 and process.cached_msg_count > 0:
            found.append(f"{client_id} {queue} can't consume for a while, maybe blocked, "
                         f"{now_ms - process.last_consume_timestamp}ms\n")
    return "".join(found)


async def _consumer_status(admin: AsyncAdmin, args: argparse.Namespace) -> Output:
    group = args.group.strip()
    connection = await admin.examine_consumer_connection_info(group, args.broker_addr.strip() if args.broker_addr
                                                              else None)
    if args.client_id:
        info = await admin.get_consumer_running_info(group, args.client_id.strip(), args.jstack)
        return Output(running_info_text(info), info)
    now_ms = clock.now_ms()
    text = [printf("%-10s %-40s %-20s %s%n", "#Index", "#ClientId", "#Version", "#ConsumerRunningInfoFile")]
    infos: dict[str, ConsumerRunningInfo] = {}
    for index, client in enumerate(connection.connection_set, 1):
        try:
            info = await admin.get_consumer_running_info(group, client.client_id, args.jstack)
        except RocketMQError as error:
            print(f"the running info of {client.client_id} cannot be read: {error}", file=sys.stderr)
            continue
        infos[client.client_id] = info
        path = Path(str(now_ms)) / client.client_id  # where mqadmin writes each consumer's running info
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(running_info_text(info), encoding="utf-8")
        text.append(printf("%-10d %-40s %-20s %s%n", index, client.client_id, version_desc(client.version), path))
    if infos:
        if _same_subscriptions(infos, now_ms):
            text.append("\n\nSame subscription in the same group of consumer")
            text.append("\n\nRebalance OK\n")
            text += [_blocked_queues(client_id, info, now_ms) for client_id, info in sorted(infos.items())]
        else:
            text.append("\n\nWARN: Different subscription in the same group of consumer!!!")
    return Output("".join(text), infos)


# --- resetOffsetByTime / skipAccumulatedMessage -------------------------------------------------------------------

def _reset_arguments(parser: argparse.ArgumentParser, with_timestamp: bool) -> None:
    parser.add_argument("-g", "--group", required=True, help="set the consumer group")
    parser.add_argument("-t", "--topic", required=True, help="set the topic")
    if with_timestamp:
        parser.add_argument("-s", "--timestamp", required=True,
                            help="set the timestamp[now|currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]")
        parser.add_argument("-c", "--cplus", action="store_true", help="reset c++ client offset")
    parser.add_argument("-f", "--force", type=java_bool, default=True,
                        help="set the force rollback by timestamp switch[true|false]")


def _new_offsets_text(offsets: dict[MessageQueue, int]) -> str:
    text = [printf("%-40s  %-40s  %-40s%n", "#brokerName", "#queueId", "#offset")]
    text += [printf("%-40s  %-40d  %-40d%n", front(queue.broker_name, 32), queue.queue_id, offset)
             for queue, offset in sorted(offsets.items())]
    return "".join(text)


def _rollback_text(rows: list[RollbackStats]) -> str:
    text = [printf("%-20s  %-20s  %-20s  %-20s  %-20s  %-20s%n", "#brokerName", "#queueId", "#brokerOffset",
                   "#consumerOffset", "#timestampOffset", "#rollbackOffset")]
    text += [printf("%-20s  %-20d  %-20d  %-20d  %-20d  %-20d%n", front(row.broker_name, 32), row.queue_id,
                    row.broker_offset, row.consumer_offset, row.timestamp_offset, row.rollback_offset) for row in rows]
    return "".join(text)


async def _reset_offset_by_time(admin: AsyncAdmin, args: argparse.Namespace) -> Output:
    group, topic, when = args.group.strip(), args.topic.strip(), args.timestamp.strip()
    timestamp = parse_timestamp(when, allow_now=True)
    described = f"topic[{topic}], force[{jstr(args.force)}], timestamp(string)[{when}], timestamp(long)[{timestamp}]\n"
    try:
        offsets = await admin.reset_offset_by_timestamp(topic, group, timestamp, args.force, args.cplus)
    except ConsumerNotOnlineError:
        rows = await admin.reset_offset_by_timestamp_old(group, topic, timestamp, args.force)
        return Output(f"rollback consumer offset by specified consumerGroup[{group}], {described}"
                      + _rollback_text(rows), rows)
    return Output(f"rollback consumer offset by specified group[{group}], {described}" + _new_offsets_text(offsets),
                  offsets)


async def _skip_accumulated_message(admin: AsyncAdmin, args: argparse.Namespace) -> Output:
    result = await admin.skip_accumulated_message(args.group.strip(), args.topic.strip(), args.force)
    if isinstance(result, dict):
        return Output(_new_offsets_text(result), result)
    return Output(_rollback_text(result), result)


COMMANDS = [
    Command("updateSubGroup", "Update or create subscription group", _update_sub_group_arguments, _update_sub_group),
    Command("deleteSubGroup", "Delete subscription group from broker.", _delete_sub_group_arguments, _delete_sub_group),
    Command("getConsumerConfig", "Get consumer config by subscription group name!", _get_consumer_config_arguments,
            _get_consumer_config),
    Command("consumerProgress", "Query consumers's progress, speed", _consumer_progress_arguments, _consumer_progress),
    Command("consumerConnection", "Query consumer's socket connection, client version and subscription",
            _consumer_connection_arguments, _consumer_connection),
    Command("consumerStatus", "Query consumer's internal data structure", _consumer_status_arguments,
            _consumer_status),
    Command("producerConnection", "Query producer's socket connection and client version",
            _producer_connection_arguments, _producer_connection),
    Command("resetOffsetByTime", "Reset consumer offset by timestamp(without client restart).",
            lambda parser: _reset_arguments(parser, True), _reset_offset_by_time),
    Command("skipAccumulatedMessage", "Skip all messages that are accumulated (not consumed) currently",
            lambda parser: _reset_arguments(parser, False), _skip_accumulated_message),
]
