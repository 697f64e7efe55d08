"""mqadmin's topic and KV config commands: updateTopic, deleteTopic, topicList, topicRoute, topicStatus,
topicClusterList, updateKvConfig and deleteKvConfig (Java's UpdateTopicSubCommand, DeleteTopicSubCommand,
TopicListSubCommand, TopicRouteSubCommand, TopicStatusSubCommand, TopicClusterSubCommand,
UpdateKvConfigCommand and DeleteKvConfigCommand: the same flags and the same printed columns)."""
from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from rocketmq_py.admin.cli import Command, Output
from rocketmq_py.admin.cli.java_text import front, human_ms, jstr, printf, topic_config_text
from rocketmq_py.common.topic import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX
from rocketmq_py.errors import RocketMQError

if TYPE_CHECKING:
    from rocketmq_py.admin.core import AsyncAdmin

#: TopicSysFlag bits that ``updateTopic -u`` and ``-s`` set.
FLAG_UNIT = 0x1
FLAG_UNIT_SUB = 0x2


def java_bool(text: str) -> bool:
    """Boolean.parseBoolean: ``true`` in any case is true, anything else false."""
    return text.strip().lower() == "true"


# --- updateTopic ------------------------------------------------------------------------------------------------

def _update_topic_arguments(parser: argparse.ArgumentParser) -> None:
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("-b", "--brokerAddr", dest="broker_addr", help="create topic to which broker")
    target.add_argument("-c", "--clusterName", dest="cluster_name", help="create topic to which cluster")
    parser.add_argument("-t", "--topic", required=True, help="topic name")
    parser.add_argument("-r", "--readQueueNums", dest="read_queue_nums", type=int, default=8,
                        help="set read queue nums")
    parser.add_argument("-w", "--writeQueueNums", dest="write_queue_nums", type=int, default=8,
                        help="set write queue nums")
    parser.add_argument("-p", "--perm", type=int, default=6, help="set topic's permission(2|4|6), intro[2:W 4:R; 6:RW]")
    parser.add_argument("-o", "--order", type=java_bool, default=False, help="set topic's order(true|false)")
    parser.add_argument("-u", "--unit", type=java_bool, default=False, help="is unit topic (true|false)")
    parser.add_argument("-s", "--hasUnitSub", dest="has_unit_sub", type=java_bool, default=False,
                        help="has unit sub (true|false)")


async def _update_topic(admin: AsyncAdmin, args: argparse.Namespace) -> Output:
    # lazy: see rocketmq_py/_lazy.py
    from rocketmq_py.common.topic_config import TopicConfig

    sys_flag = (FLAG_UNIT if args.unit else 0) | (FLAG_UNIT_SUB if args.has_unit_sub else 0)
    config = TopicConfig(args.topic.strip(), args.read_queue_nums, args.write_queue_nums, args.perm,
                         topic_sys_flag=sys_flag, order=args.order)
    text = []
    order_conf = None
    if args.broker_addr:
        addrs = [args.broker_addr.strip()]
        await admin.create_and_update_topic_config(addrs[0], config)
        if args.order:
            order_conf = f"{await admin.broker_name_of_addr(addrs[0])}:{config.write_queue_nums}"
            await admin.create_or_update_order_conf(config.topic_name, order_conf, False)
            text.append(f"set broker orderConf. isOrder={jstr(args.order)}, orderConf=[{order_conf}]")
        text.append(f"create topic to {addrs[0]} success.\n")
    else:
        cluster = args.cluster_name.strip()
        addrs = await admin.master_addrs_of_cluster(cluster)
        for addr in addrs:
            await admin.create_and_update_topic_config(addr, config)
            text.append(f"create topic to {addr} success.\n")
        if args.order:
            info = await admin.examine_broker_cluster_info()
            names = sorted(info.cluster_addr_table.get(cluster, ()))
            order_conf = ";".join(f"{name}:{config.write_queue_nums}" for name in names)
            await admin.create_or_update_order_conf(config.topic_name, order_conf, True)
            text.append(f"set cluster orderConf. isOrder={jstr(args.order)}, orderConf=[{order_conf}]")
    text.append(topic_config_text(config))
    return Output("".join(text), {"created_on": addrs, "topic_config": config, "order_conf": order_conf})


# --- deleteTopic ------------------------------------------------------------------------------------------------

def _delete_topic_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-t", "--topic", required=True, help="topic name")
    parser.add_argument("-c", "--clusterName", dest="cluster_name", required=True,
                        help="delete topic from which cluster")


async def _delete_topic(admin: AsyncAdmin, args: argparse.Namespace) -> Output:
    topic, cluster = args.topic.strip(), args.cluster_name.strip()
    masters = await admin.delete_topic(topic, cluster)
    text = (f"delete topic [{topic}] from cluster [{cluster}] success.\n"
            f"delete topic [{topic}] from NameServer success.\n")
    return Output(text, {"topic": topic, "cluster": cluster, "deleted_on": masters,
                         "name_servers": admin.name_server_addresses()})


# --- topicList ------------------------------------------------------------------------------------------------

def _topic_list_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-c", "--clusterModel", dest="cluster_model", action="store_true", help="clusterModel")


async def _topic_list(admin: AsyncAdmin, args: argparse.Namespace) -> Output:
    topics = sorted((await admin.fetch_all_topic_list()).topics)
    if not args.cluster_model:
        return Output("".join(f"{topic}\n" for topic in topics), topics)
    info = await admin.examine_broker_cluster_info()
    text = [printf("%-20s  %-48s  %-48s%n", "#Cluster Name", "#Topic", "#Consumer Group")]
    data = []
    for topic in topics:
        if topic.startswith((RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX)):
            continue
        cluster: str | None = ""
        groups: list[str] = []
        try:
            route = await admin.examine_topic_route_info(topic)
            broker_name = route.broker_datas[0].broker_name if route.broker_datas else None
            cluster = next((name for name, brokers in info.cluster_addr_table.items() if broker_name in brokers), None)
            groups = sorted((await admin.query_topic_consume_by_who(topic)).group_list)
        except RocketMQError:
            pass  # mqadmin prints the topic with what it found
        for group in groups or [""]:
            text.append(printf("%-20s  %-64s  %-64s%n", front(cluster, 20), front(topic, 64), front(group, 64)))
            data.append({"cluster": cluster, "topic": topic, "consumer_group": group})
    return Output("".join(text), data)


# --- topicRoute -------------------------------------------------------------------------------------------------

_ROUTE_FORMAT = "%-45s %-32s %-50s %-10s %-11s %-5s%n"


def _topic_route_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-t", "--topic", required=True, help="topic name")
    parser.add_argument("-l", "--list", dest="list_format", action="store_true", help="Use list format to print data")


async def _topic_route(admin: AsyncAdmin, args: argparse.Namespace) -> Output:
    route = await admin.examine_topic_route_info(args.topic.strip())
    if not args.list_format:
        return Output(route.encode(standard_json=False, pretty=True).decode() + "\n", route)
    queues = {queue.broker_name: queue for queue in route.queue_datas}
    text = [printf(_ROUTE_FORMAT, "#ClusterName", "#BrokerName", "#BrokerAddrs", "#ReadQueue", "#WriteQueue", "#Perm")]
    total_read = total_write = 0
    for broker in sorted(route.broker_datas, key=lambda b: b.broker_name):
        queue = queues.get(broker.broker_name)
        if queue is None:
            continue
        total_read += queue.read_queue_nums
        total_write += queue.write_queue_nums
        addrs = "{" + ", ".join(f"{broker_id}={addr}" for broker_id, addr in sorted(broker.broker_addrs.items())) + "}"
        text.append(printf(_ROUTE_FORMAT, broker.cluster, broker.broker_name, addrs, queue.read_queue_nums,
                           queue.write_queue_nums, queue.perm))
    text.append("-" * 158 + "\n")
    text.append(printf(_ROUTE_FORMAT, "Total:", len(queues), "", total_read, total_write, ""))
    return Output("".join(text), route)


# --- topicStatus ------------------------------------------------------------------------------------------------

def _topic_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-t", "--topic", required=True, help="topic name")


async def _topic_status(admin: AsyncAdmin, args: argparse.Namespace) -> Output:
    stats = await admin.examine_topic_stats(args.topic.strip())
    text = [printf("%-32s  %-4s  %-20s  %-20s    %s%n", "#Broker Name", "#QID", "#Min Offset", "#Max Offset",
                   "#Last Updated")]
    for queue, offset in sorted(stats.offset_table.items()):
        updated = human_ms(offset.last_update_timestamp) if offset.last_update_timestamp > 0 else ""
        text.append(printf("%-32s  %-4d  %-20d  %-20d    %s%n", front(queue.broker_name, 32), queue.queue_id,
                           offset.min_offset, offset.max_offset, updated))
    return Output("".join(text), stats.offset_table)


async def _topic_cluster_list(admin: AsyncAdmin, args: argparse.Namespace) -> Output:
    clusters = sorted(await admin.get_topic_cluster_list(args.topic.strip()))
    return Output("".join(f"{cluster}\n" for cluster in clusters), clusters)


# --- updateKvConfig / deleteKvConfig ---------------------------------------------------------------------------

def _kv_arguments(parser: argparse.ArgumentParser, with_value: bool) -> None:
    parser.add_argument("-s", "--namespace", required=True, help="set the namespace")
    parser.add_argument("-k", "--key", required=True, help="set the key name")
    if with_value:
        parser.add_argument("-v", "--value", required=True, help="set the key value")


async def _update_kv_config(admin: AsyncAdmin, args: argparse.Namespace) -> Output:
    namespace, key, value = args.namespace.strip(), args.key.strip(), args.value.strip()
    await admin.create_and_update_kv_config(namespace, key, value)
    return Output("create or update kv config to namespace success.\n",
                  {"namespace": namespace, "key": key, "value": value})


async def _delete_kv_config(admin: AsyncAdmin, args: argparse.Namespace) -> Output:
    namespace, key = args.namespace.strip(), args.key.strip()
    await admin.delete_kv_config(namespace, key)
    return Output("delete kv config from namespace success.\n", {"namespace": namespace, "key": key})


COMMANDS = [
    Command("updateTopic", "Update or create topic", _update_topic_arguments, _update_topic),
    Command("deleteTopic", "Delete topic from broker and NameServer.", _delete_topic_arguments, _delete_topic),
    Command("topicList", "Fetch all topic list from name server", _topic_list_arguments, _topic_list),
    Command("topicRoute", "Examine topic route info", _topic_route_arguments, _topic_route),
    Command("topicStatus", "Examine topic Status info", _topic_arguments, _topic_status),
    Command("topicClusterList", "get cluster info for topic", _topic_arguments, _topic_cluster_list),
    Command("updateKvConfig", "Create or update KV config.", lambda parser: _kv_arguments(parser, True),
            _update_kv_config),
    Command("deleteKvConfig", "Delete KV config.", lambda parser: _kv_arguments(parser, False), _delete_kv_config),
]
