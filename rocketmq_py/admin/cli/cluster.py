"""mqadmin's cluster and broker commands: clusterList, brokerStatus, getBrokerConfig, updateBrokerConfig and
statsAll (Java's ClusterListSubCommand, BrokerStatusSubCommand, GetBrokerConfigCommand,
UpdateBrokerConfigSubCommand and StatsAllSubCommand: the same flags and the same printed columns)."""
from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from typing import TYPE_CHECKING

from rocketmq_py.admin.cli import Command, Output
from rocketmq_py.admin.cli.java_text import printf
from rocketmq_py.common import clock
from rocketmq_py.errors import RocketMQError

if TYPE_CHECKING:
    from rocketmq_py.admin.core import AsyncAdmin
    from rocketmq_py.common.kv import KVTable

_log = logging.getLogger(__name__)


def _broker_or_cluster(parser: argparse.ArgumentParser, what: str) -> None:
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("-b", "--brokerAddr", dest="broker_addr", help=f"{what} which broker")
    target.add_argument("-c", "--clusterName", dest="cluster_name", help=f"{what} which cluster")


# --- clusterList ------------------------------------------------------------------------------------------

def _cluster_list_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-m", "--moreStats", dest="more_stats", action="store_true", help="Print more stats")
    parser.add_argument("-i", "--interval", type=int, help="print again every INTERVAL seconds, until stopped")


async def _stats_or_none(admin: AsyncAdmin, addr: str) -> KVTable | None:
    try:
        return await admin.fetch_broker_runtime_stats(addr)
    except RocketMQError as error:
        print(f"the runtime stats of {addr} cannot be read: {error}", file=sys.stderr)
        return None


async def _cluster_rows(admin: AsyncAdmin) -> list[tuple[str, str, int, str, dict[str, str]]]:
    """(cluster, broker name, broker id, address, runtime stats) of every broker, clusters and names sorted."""
    info = await admin.examine_broker_cluster_info()
    rows = []
    for cluster, names in sorted(info.cluster_addr_table.items()):
        for name in sorted(names):
            broker = info.broker_addr_table.get(name)
            for broker_id, addr in sorted(broker.broker_addrs.items()) if broker is not None else ():
                stats = await _stats_or_none(admin, addr)
                rows.append((cluster, name, broker_id, addr, stats.table if stats is not None else {}))
    return rows


def _first_tps(text: str | None) -> float:
    try:
        return float((text or "").split(" ")[0])
    except ValueError:
        return 0.0


def _base_row(cluster: str, name: str, broker_id: int, addr: str, stats: dict[str, str], now_ms: int) -> str:
    earliest = stats.get("earliestMessageTimeStamp")
    hour = (now_ms - int(earliest)) / 1000.0 / 60.0 / 60.0 if earliest else 0.0
    ratio = stats.get("commitLogDiskRatio")
    space = float(ratio) if ratio else 0.0
    in_load = printf("%9.2f(%s,%sms)", _first_tps(stats.get("putTps")), stats.get("sendThreadPoolQueueSize"),
                     stats.get("sendThreadPoolQueueHeadWaitTimeMills"))
    out_load = printf("%9.2f(%s,%sms)", _first_tps(stats.get("getTransferedTps")), stats.get("pullThreadPoolQueueSize"),
                      stats.get("pullThreadPoolQueueHeadWaitTimeMills"))
    return printf("%-16s  %-22s  %-4s  %-22s %-16s %19s %19s %10s %5s %6s%n", cluster, name, broker_id, addr,
                  stats.get("brokerVersionDesc", ""), in_load, out_load, stats.get("pageCacheLockTimeMills", ""),
                  "%2.2f" % hour, "%.4f" % space)


def _totals(stats: dict[str, str]) -> tuple[int, int, int, int]:
    """Messages in and out yesterday and today (ClusterListSubCommand -m); zeros when a key is missing."""
    try:
        values = [int(stats[key]) for key in ("msgPutTotalYesterdayMorning", "msgPutTotalTodayMorning",
                                              "msgPutTotalTodayNow", "msgGetTotalYesterdayMorning",
                                              "msgGetTotalTodayMorning", "msgGetTotalTodayNow")]
    except (KeyError, ValueError):
        return 0, 0, 0, 0
    put_yesterday, put_morning, put_now, get_yesterday, get_morning, get_now = values
    return put_morning - put_yesterday, get_morning - get_yesterday, put_now - put_morning, get_now - get_morning


async def _cluster_list_once(admin: AsyncAdmin, more_stats: bool) -> Output:
    rows = await _cluster_rows(admin)
    now_ms = clock.now_ms()
    if more_stats:
        text = [printf("%-16s  %-32s %14s %14s %14s %14s%n", "#Cluster Name", "#Broker Name", "#InTotalYest",
                       "#OutTotalYest", "#InTotalToday", "#OutTotalToday")]
        data = []
        for cluster, name, _, addr, stats in rows:
            totals = _totals(stats)
            text.append(printf("%-16s  %-32s %14d %14d %14d %14d%n", cluster, name, *totals))
            data.append({"cluster": cluster, "broker_name": name, "addr": addr, "in_total_yest": totals[0],
                         "out_total_yest": totals[1], "in_total_today": totals[2], "out_total_today": totals[3]})
        return Output("".join(text), data)
    text = [printf("%-16s  %-22s  %-4s  %-22s %-16s %19s %19s %10s %5s %6s%n", "#Cluster Name", "#Broker Name",
                   "#BID", "#Addr", "#Version", "#InTPS(LOAD)", "#OutTPS(LOAD)", "#PCWait(ms)", "#Hour", "#SPACE")]
    text += [_base_row(cluster, name, broker_id, addr, stats, now_ms)
             for cluster, name, broker_id, addr, stats in rows]
    data = [{"cluster": cluster, "broker_name": name, "broker_id": broker_id, "addr": addr, "runtime_stats": stats}
            for cluster, name, broker_id, addr, stats in rows]
    return Output("".join(text), data)


async def _cluster_list(admin: AsyncAdmin, args: argparse.Namespace) -> Output:
    if not args.interval:
        return await _cluster_list_once(admin, args.more_stats)
    while True:  # until the user stops it, as mqadmin's -i
        output = await _cluster_list_once(admin, args.more_stats)
        sys.stdout.write(output.text)
        sys.stdout.flush()
        await asyncio.sleep(args.interval)


# --- brokerStatus -------------------------------------------------------------------------------------------

def _broker_status_arguments(parser: argparse.ArgumentParser) -> None:
    _broker_or_cluster(parser, "of")


async def _broker_status(admin: AsyncAdmin, args: argparse.Namespace) -> Output:
    if args.broker_addr:
        table = (await admin.fetch_broker_runtime_stats(args.broker_addr.strip())).table
        return Output("".join(printf("%-32s: %s%n", key, value) for key, value in sorted(table.items())), table)
    text, data = [], {}
    groups = await admin.broker_addrs_of_cluster(args.cluster_name.strip())
    for addr in sorted({addr for master, slaves in groups.items() for addr in (master, *slaves)}):
        stats = await _stats_or_none(admin, addr)
        if stats is None:
            continue
        data[addr] = stats.table
        text += [printf("%-24s %-32s: %s%n", addr, key, value) for key, value in sorted(stats.table.items())]
    return Output("".join(text), data)


# --- getBrokerConfig / updateBrokerConfig -----------------------------------------------------------------

def _get_broker_config_arguments(parser: argparse.ArgumentParser) -> None:
    _broker_or_cluster(parser, "get")


async def _config_text(admin: AsyncAdmin, title: str, addr: str, data: dict[str, dict[str, str]]) -> str:
    config = await admin.get_broker_config(addr)
    data[addr] = config
    return title + "".join(printf("%-50s=  %s\n", key, value) for key, value in config.items()) + "\n"


async def _get_broker_config(admin: AsyncAdmin, args: argparse.Namespace) -> Output:
    data: dict[str, dict[str, str]] = {}
    if args.broker_addr:
        addr = args.broker_addr.strip()
        return Output(await _config_text(admin, f"============{addr}============\n", addr, data), data)
    text = []
    for master, slaves in (await admin.broker_addrs_of_cluster(args.cluster_name.strip())).items():
        text.append(await _config_text(admin, f"============Master: {master}============\n", master, data))
        for slave in slaves:
            text.append(await _config_text(admin, f"============My Master: {master}=====Slave: {slave}============\n",
                                           slave, data))
    return Output("".join(text), data)


def _update_broker_config_arguments(parser: argparse.ArgumentParser) -> None:
    _broker_or_cluster(parser, "update")
    parser.add_argument("-k", "--key", required=True, help="config key")
    parser.add_argument("-v", "--value", required=True, help="config value")


async def _update_broker_config(admin: AsyncAdmin, args: argparse.Namespace) -> Output:
    properties = {args.key.strip(): args.value.strip()}
    if args.broker_addr:
        addrs = [args.broker_addr.strip()]
    else:
        addrs = await admin.master_addrs_of_cluster(args.cluster_name.strip())
    for addr in addrs:
        await admin.update_broker_config(addr, properties)
    return Output("".join(f"update broker config success, {addr}\n" for addr in addrs),
                  {"updated": addrs, "properties": properties})


# --- statsAll -------------------------------------------------------------------------------------------------

def _stats_all_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-a", "--activeTopic", dest="active_topic", action="store_true", help="print active topic only")
    parser.add_argument("-t", "--topic", help="print select topic only")


async def _stats_all(admin: AsyncAdmin, args: argparse.Namespace) -> Output:
    rows = await admin.stats_all(args.topic or None, args.active_topic)
    text = [printf("%-64s  %-64s %12s %11s %11s %14s %14s%n", "#Topic", "#Consumer Group", "#Accumulation", "#InTPS",
                   "#OutTPS", "#InMsg24Hour", "#OutMsg24Hour")]
    for row in rows:
        if row.consumer_group is None:
            text.append(printf("%-64s  %-64s %12d %11.2f %11s %14d %14s%n", row.topic[:64], "", 0, row.in_tps, "",
                               row.in_msg_24_hour, "NO_CONSUMER"))
        else:
            text.append(printf("%-64s  %-64s %12d %11.2f %11.2f %14d %14d%n", row.topic[:64], row.consumer_group[:64],
                               row.accumulation, row.in_tps, row.out_tps or 0.0, row.in_msg_24_hour,
                               row.out_msg_24_hour or 0))
    return Output("".join(text), rows)


COMMANDS = [
    Command("clusterList", "List all of clusters", _cluster_list_arguments, _cluster_list),
    Command("brokerStatus", "Fetch broker runtime status data", _broker_status_arguments, _broker_status),
    Command("getBrokerConfig", "Get broker config by cluster or special broker!", _get_broker_config_arguments,
            _get_broker_config),
    Command("updateBrokerConfig", "Update broker's config", _update_broker_config_arguments, _update_broker_config),
    Command("statsAll", "Topic and Consumer tps stats", _stats_all_arguments, _stats_all),
]
