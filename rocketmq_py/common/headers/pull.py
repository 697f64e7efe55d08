"""Headers of PULL_MESSAGE (11): Java's PullMessageRequestHeader and PullMessageResponseHeader, PullSysFlag, and
the remarks of a PULL_RETRY_IMMEDIATELY answer that let a consumer move past messages it did not receive."""
from __future__ import annotations

from dataclasses import dataclass

from rocketmq_py.common.headers.base import CommandHeader, wire

FLAG_COMMIT_OFFSET = 0x1
FLAG_SUSPEND = 0x2
FLAG_SUBSCRIPTION = 0x4
FLAG_CLASS_FILTER = 0x8
FLAG_LITE_PULL_MESSAGE = 0x10


def build_pull_sys_flag(commit_offset: bool, suspend: bool, subscription: bool, class_filter: bool = False,
                        lite_pull: bool = False) -> int:
    """Java's PullSysFlag.buildSysFlag."""
    flag = 0
    if commit_offset:
        flag |= FLAG_COMMIT_OFFSET
    if suspend:
        flag |= FLAG_SUSPEND
    if subscription:
        flag |= FLAG_SUBSCRIPTION
    if class_filter:
        flag |= FLAG_CLASS_FILTER
    if lite_pull:
        flag |= FLAG_LITE_PULL_MESSAGE
    return flag


@dataclass(slots=True)
class PullMessageRequestHeader(CommandHeader):
    fast_codes = True  # a FastCodesHeader in Java

    consumer_group: str = wire("consumerGroup", required=True)
    topic: str = wire("topic", required=True)
    queue_id: int = wire("queueId", required=True)
    queue_offset: int = wire("queueOffset", required=True, bits=64)
    max_msg_nums: int = wire("maxMsgNums", required=True)
    sys_flag: int = wire("sysFlag", required=True)
    commit_offset: int = wire("commitOffset", required=True, bits=64)
    suspend_timeout_millis: int = wire("suspendTimeoutMillis", required=True, bits=64)
    sub_version: int = wire("subVersion", required=True, bits=64)
    subscription: str | None = wire("subscription")
    expression_type: str | None = wire("expressionType")
    broker_name: str | None = wire("bname")


@dataclass(slots=True)
class PullMessageResponseHeader(CommandHeader):
    fast_codes = True  # a FastCodesHeader in Java

    suggest_which_broker_id: int = wire("suggestWhichBrokerId", 0, bits=64)
    next_begin_offset: int = wire("nextBeginOffset", 0, bits=64)
    min_offset: int = wire("minOffset", 0, bits=64)
    max_offset: int = wire("maxOffset", 0, bits=64)


#: The remarks (Java's GetMessageStatus names) of a PULL_RETRY_IMMEDIATELY (20) answer whose ``nextBeginOffset``
#: a consumer may move to without the messages before it: none of them matched its subscription, or their
#: CommitLog file was deleted. Any other 20 carries no messages and no way forward: a 4.9 slave's offset out of
#: range (without ``offsetCheckInSlave`` its ``nextBeginOffset`` is the requested offset), or an older slave of
#: ours that answered FOUND with 20, no body and an advanced ``nextBeginOffset``.
RETRY_PAST_UNMATCHED = "NO_MATCHED_MESSAGE"
RETRY_PAST_REMOVED = "MESSAGE_WAS_REMOVING"
