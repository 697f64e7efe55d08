"""Text as ``mqadmin`` prints it: Java's printf with ``%n``, its ``toString`` of booleans and nulls, its time
formats (in the local time zone, as Java's Calendar) and the ``toString`` of the objects some commands print
whole (TopicConfig, SubscriptionGroupConfig, ConsumeMessageDirectlyResult, MessageTrack, MessageExt,
ConsumerRunningInfo.formatString)."""
from __future__ import annotations

import time
from datetime import datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rocketmq_py.admin.results import MessageTrack
    from rocketmq_py.common.consumer_body import ConsumeMessageDirectlyResult, ConsumerRunningInfo, ProcessQueueInfo
    from rocketmq_py.common.message import MessageExt
    from rocketmq_py.common.subscription_group import SubscriptionGroupConfig
    from rocketmq_py.common.topic_config import TopicConfig

#: The date format ``resetOffsetByTime`` and ``printMsg`` read (Java's UtilAll.YYYY_MM_DD_HH_MM_SS_SSS).
DATE_INPUT_FORMAT = "%Y-%m-%d#%H:%M:%S:%f"


def printf(fmt: str, *args: object) -> str:
    """Java's ``String.format`` for the conversions mqadmin uses (``%s %d %f`` with flags and widths, ``%n``)."""
    return fmt.replace("%n", "\n") % tuple(jstr(arg) if not isinstance(arg, (int, float)) or isinstance(arg, bool)
                                           else arg for arg in args)


def jstr(value: object) -> str:
    """``String.valueOf``: ``true``/``false`` for booleans, ``null`` for None."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def front(text: str | None, size: int) -> str:
    """Java's UtilAll.frontStringAtLeast: at most the first ``size`` characters (despite its name)."""
    return "null" if text is None else text[:size]


def human_ms(timestamp_ms: int) -> str:
    """UtilAll.timeMillisToHumanString2: ``2024-01-31 12:00:00,123``."""
    when = _local(timestamp_ms)
    return f"{when:%Y-%m-%d %H:%M:%S},{timestamp_ms % 1000:03d}"


def compact_ms(timestamp_ms: int) -> str:
    """UtilAll.timeMillisToHumanString: ``20240131120000123``."""
    return f"{_local(timestamp_ms):%Y%m%d%H%M%S}{timestamp_ms % 1000:03d}"


def date_seconds(timestamp_ms: int) -> str:
    """UtilAll.formatDate with ``yyyy-MM-dd HH:mm:ss``."""
    return f"{_local(timestamp_ms):%Y-%m-%d %H:%M:%S}"


def _local(timestamp_ms: int) -> datetime:
    return datetime.fromtimestamp(timestamp_ms // 1000)


def parse_timestamp(text: str, allow_now: bool = False) -> int:
    """A timestamp argument as mqadmin reads one: milliseconds since the epoch, ``yyyy-MM-dd#HH:mm:ss:SSS``
    in local time, or (with ``allow_now``) ``now``, which means -1 (the end of each queue).
    ValueError for anything else."""
    text = text.strip()
    if allow_now and text == "now":
        return -1
    try:
        return int(text)
    except ValueError:
        pass
    try:
        parsed = datetime.strptime(text, DATE_INPUT_FORMAT)
    except ValueError:
        raise ValueError(f"{text!r} is not a timestamp: give milliseconds since the epoch or "
                         "yyyy-MM-dd#HH:mm:ss:SSS" + (" or now" if allow_now else "")) from None
    return int(time.mktime(parsed.timetuple())) * 1000 + parsed.microsecond // 1000


def perm_string(perm: int) -> str:
    """PermName.perm2String: ``RW-``."""
    return ("R" if perm & 4 else "-") + ("W" if perm & 2 else "-") + ("X" if perm & 1 else "-")


def topic_config_text(config: TopicConfig) -> str:
    return (f"TopicConfig [topicName={config.topic_name}, readQueueNums={config.read_queue_nums}, "
            f"writeQueueNums={config.write_queue_nums}, perm={perm_string(config.perm)}, "
            f"topicFilterType={config.topic_filter_type}, topicSysFlag={config.topic_sys_flag}, "
            f"order={jstr(config.order)}]")


def subscription_group_text(group: SubscriptionGroupConfig) -> str:
    return (f"SubscriptionGroupConfig [groupName={group.group_name}, consumeEnable={jstr(group.consume_enable)}, "
            f"consumeFromMinEnable={jstr(group.consume_from_min_enable)}, "
            f"consumeBroadcastEnable={jstr(group.consume_broadcast_enable)}, retryQueueNums={group.retry_queue_nums}, "
            f"retryMaxTimes={group.retry_max_times}, brokerId={group.broker_id}, "
            f"whichBrokerWhenConsumeSlowly={group.which_broker_when_consume_slowly}, "
            f"notifyConsumerIdsChangedEnable={jstr(group.notify_consumer_ids_changed_enable)}]")


def consume_directly_text(result: ConsumeMessageDirectlyResult) -> str:
    outcome = result.consume_result.value if result.consume_result is not None else None
    return (f"ConsumeMessageDirectlyResult [order={jstr(result.order)}, autoCommit={jstr(result.auto_commit)}, "
            f"consumeResult={jstr(outcome)}, remark={jstr(result.remark)}, spentTimeMills={result.spent_time_mills}]")


def message_track_text(track: MessageTrack) -> str:
    return (f"MessageTrack [consumerGroup={track.consumer_group}, trackType={track.track_type.value}, "
            f"exceptionDesc={jstr(track.exception_desc)}]")


def properties_text(properties: dict[str, str]) -> str:
    """A Java map's toString (``{a=1, b=2}``); Java's order is its hash order, this one is sorted."""
    return "{" + ", ".join(f"{key}={value}" for key, value in sorted(properties.items())) + "}"


def message_text(message: MessageExt) -> str:
    """MessageExt.toString (the body as Java's Arrays.toString of signed bytes)."""
    body = "[" + ", ".join(str(b - 256 if b > 127 else b) for b in message.body) + "]"
    return (f"MessageExt [brokerName={jstr(message.broker_name)}, queueId={message.queue_id}, "
            f"storeSize={message.store_size}, queueOffset={message.queue_offset}, sysFlag={message.sys_flag}, "
            f"bornTimestamp={message.born_timestamp}, bornHost=/{message.born_host}, "
            f"storeTimestamp={message.store_timestamp}, storeHost=/{message.store_host}, msgId={message.msg_id}, "
            f"commitLogOffset={message.commit_log_offset}, bodyCRC={message.body_crc}, "
            f"reconsumeTimes={message.reconsume_times}, "
            f"preparedTransactionOffset={message.prepared_transaction_offset}, toString()=Message{{topic='"
            f"{message.topic}', flag={message.flag}, properties={properties_text(message.properties)}, body={body}, "
            f"transactionId='{jstr(message.transaction_id)}'}}]")


def process_queue_text(info: ProcessQueueInfo) -> str:
    return (f"ProcessQueueInfo [commitOffset={info.commit_offset}, cachedMsgMinOffset={info.cached_msg_min_offset}, "
            f"cachedMsgMaxOffset={info.cached_msg_max_offset}, cachedMsgCount={info.cached_msg_count}, "
            f"cachedMsgSizeInMiB={info.cached_msg_size_in_mib}, "
            f"transactionMsgMinOffset={info.transaction_msg_min_offset}, "
            f"transactionMsgMaxOffset={info.transaction_msg_max_offset}, "
            f"transactionMsgCount={info.transaction_msg_count}, locked={jstr(info.locked)}, "
            f"tryUnlockTimes={info.try_unlock_times}, lastLockTimestamp={compact_ms(info.last_lock_timestamp)}, "
            f"droped={jstr(info.droped)}, lastPullTimestamp={compact_ms(info.last_pull_timestamp)}, "
            f"lastConsumeTimestamp={compact_ms(info.last_consume_timestamp)}]")


def running_info_text(info: ConsumerRunningInfo) -> str:
    """ConsumerRunningInfo.formatString, what ``mqadmin consumerStatus -i`` prints."""
    lines = ["#Consumer Properties#\n"]
    lines += [printf("%-40s: %s%n", key, value) for key, value in sorted(info.properties.items())]
    lines.append("\n\n#Consumer Subscription#\n")
    subscriptions = sorted(info.subscription_set, key=lambda sub: (sub.topic, sub.sub_string))
    lines += [printf("%03d Topic: %-40s ClassFilter: %-8s SubExpression: %s%n", index, sub.topic,
                     sub.class_filter_mode, sub.sub_string) for index, sub in enumerate(subscriptions, 1)]
    lines.append("\n\n#Consumer Offset#\n")
    lines.append(printf("%-64s  %-32s  %-4s  %-20s%n", "#Topic", "#Broker Name", "#QID", "#Consumer Offset"))
    queues = sorted(info.mq_table.items())
    lines += [printf("%-32s  %-32s  %-4d  %-20d%n", queue.topic, queue.broker_name, queue.queue_id,
                     process.commit_offset) for queue, process in queues]
    lines.append("\n\n#Consumer MQ Detail#\n")
    lines.append(printf("%-64s  %-32s  %-4s  %-20s%n", "#Topic", "#Broker Name", "#QID", "#ProcessQueueInfo"))
    lines += [printf("%-64s  %-32s  %-4d  %s%n", queue.topic, queue.broker_name, queue.queue_id,
                     process_queue_text(process)) for queue, process in queues]
    lines.append("\n\n#Consumer RT&TPS#\n")
    lines.append(printf("%-64s  %14s %14s %14s %14s %18s %25s%n", "#Topic", "#Pull RT", "#Pull TPS", "#Consume RT",
                        "#ConsumeOK TPS", "#ConsumeFailed TPS", "#ConsumeFailedMsgsInHour"))
    lines += [printf("%-32s  %14.2f %14.2f %14.2f %14.2f %18.2f %25d%n", topic, status.pull_rt, status.pull_tps,
                     status.consume_rt, status.consume_ok_tps, status.consume_failed_tps, status.consume_failed_msgs)
              for topic, status in sorted(info.status_table.items())]
    if info.jstack is not None:
        lines.append("\n\n#Consumer jstack#\n")
        lines.append(info.jstack)
    return "".join(lines)
