"""mqadmin's message commands: queryMsgById, queryMsgByKey, queryMsgByUniqueKey and printMsg (Java's
QueryMsgByIdSubCommand, QueryMsgByKeySubCommand, QueryMsgByUniqueKeySubCommand and PrintMessageSubCommand:
the same flags and the same printed lines). ``queryMsgById -g G -d CLIENT_ID`` and ``queryMsgByUniqueKey
-g G -d CLIENT_ID`` have the consumer consume the message again; the body of a shown message goes to a file
under ``<tmp>/rocketmq/msgbodys``, as mqadmin writes it."""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from rocketmq_py.admin.cli import Command, Output
from rocketmq_py.admin.cli.java_text import (
    consume_directly_text,
    human_ms,
    jstr,
    message_text,
    message_track_text,
    parse_timestamp,
    printf,
    properties_text,
)
from rocketmq_py.admin.cli.topics import java_bool
from rocketmq_py.errors import RocketMQError

if TYPE_CHECKING:
    from rocketmq_py.admin.core import AsyncAdmin
    from rocketmq_py.common.message import MessageExt


def body_file(message: MessageExt, index: int = 0) -> Path:
    """Write the body where mqadmin does, ``<tmp>/rocketmq/msgbodys/<msgId>[_index]``; its path."""
    folder = Path(tempfile.gettempdir()) / "rocketmq" / "msgbodys"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / (message.msg_id + (f"_{index}" if index > 0 else ""))
    path.write_bytes(message.body)
    return path


async def _message_text(admin: AsyncAdmin, message: MessageExt, offset_id_line: bool, index: int = 0) -> str:
    text = []
    if offset_id_line:
        text.append(printf("%-20s %s%n", "OffsetID:", message.offset_msg_id))
    for label, value in (("Topic:", message.topic), ("Tags:", f"[{jstr(message.tags)}]"),
                         ("Keys:", f"[{jstr(message.keys)}]")):
        text.append(printf("%-20s %s%n", label, value))
    for label, number in (("Queue ID:", message.queue_id), ("Queue Offset:", message.queue_offset),
                          ("CommitLog Offset:", message.commit_log_offset),
                          ("Reconsume Times:", message.reconsume_times)):
        text.append(printf("%-20s %d%n", label, number))
    text.append(printf("%-20s %s%n", "Born Timestamp:", human_ms(message.born_timestamp)))
    text.append(printf("%-20s %s%n", "Store Timestamp:", human_ms(message.store_timestamp)))
    text.append(printf("%-20s %s%n", "Born Host:", message.born_host))
    text.append(printf("%-20s %s%n", "Store Host:", message.store_host))
    text.append(printf("%-20s %d%n", "System Flag:", message.sys_flag))
    text.append(printf("%-20s %s%n", "Properties:", properties_text(message.properties)))
    text.append(printf("%-20s %s%n", "Message Body Path:", body_file(message, index)))
    try:
        tracks = await admin.message_track_detail(message)
    except RocketMQError as error:
        print(f"the consumers of {message.msg_id} cannot be tracked: {error}", file=sys.stderr)
        return "".join(text)
    if not tracks:
        text.append("\n\nWARN: No Consumer")
    else:
        text.append("\n\n" + "".join(message_track_text(track) for track in tracks))
    return "".join(text)


# --- queryMsgById ------------------------------------------------------------------------------------------------

def _query_by_id_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-i", "--msgId", dest="msg_id", required=True, help="Message Id (several: comma-separated)")
    parser.add_argument("-g", "--consumerGroup", dest="group", help="consumer group name")
    parser.add_argument("-d", "--clientId", dest="client_id", help="The consumer's client id")


async def _query_msg_by_id(admin: AsyncAdmin, args: argparse.Namespace) -> Output:
    ids = [msg_id.strip() for msg_id in args.msg_id.split(",") if msg_id.strip()]
    text: list[str] = []
    data: list[object] = []
    for msg_id in ids:
        if args.group and args.client_id:
            result = await admin.consume_message_directly(args.group.strip(), args.client_id.strip(), msg_id)
            text.append(consume_directly_text(result))
            data.append(result)
        else:
            message = await admin.view_message(msg_id)
            text.append(await _message_text(admin, message, offset_id_line=True))
            data.append(message)
    return Output("".join(text), data)


# --- queryMsgByKey -----------------------------------------------------------------------------------------------

def _query_by_key_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-t", "--topic", required=True, help="topic name")
    parser.add_argument("-k", "--msgKey", dest="key", required=True, help="Message Key")


async def _query_msg_by_key(admin: AsyncAdmin, args: argparse.Namespace) -> Output:
    result = await admin.query_message(args.topic.strip(), args.key.strip(), 64)
    text = [printf("%-50s %4s %40s%n", "#Message ID", "#QID", "#Offset")]
    text += [printf("%-50s %4d %40d%n", message.msg_id, message.queue_id, message.queue_offset)
             for message in result.message_list]
    data = [{"msg_id": message.msg_id, "queue_id": message.queue_id, "queue_offset": message.queue_offset,
             "broker_name": message.broker_name, "offset_msg_id": message.offset_msg_id}
            for message in result.message_list]
    return Output("".join(text), data)


# --- queryMsgByUniqueKey -----------------------------------------------------------------------------------------

def _query_by_unique_key_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-i", "--msgId", dest="msg_id", required=True, help="Message Id")
    parser.add_argument("-g", "--consumerGroup", dest="group", help="consumer group name")
    parser.add_argument("-d", "--clientId", dest="client_id", help="The consumer's client id")
    parser.add_argument("-t", "--topic", required=True, help="The topic of msg")
    parser.add_argument("-a", "--showAll", dest="show_all", action="store_true", help="Print all message, the limit is 32")


async def _query_msg_by_unique_key(admin: AsyncAdmin, args: argparse.Namespace) -> Output:
    msg_id, topic = args.msg_id.strip(), args.topic.strip()
    if args.group and args.client_id:
        result = await admin.consume_message_directly(args.group.strip(), args.client_id.strip(), msg_id, topic)
        return Output(consume_directly_text(result), result)
    found = (await admin.query_message_by_unique_key(topic, msg_id)).message_list
    found.sort(key=lambda message: message.store_timestamp)
    shown = found if args.show_all else found[:1]
    text = [await _message_text(admin, message, offset_id_line=False, index=index) for index, message in
            enumerate(shown)]
    return Output("".join(text), shown)


# --- printMsg ----------------------------------------------------------------------------------------------------

def _print_msg_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-t", "--topic", required=True, help="topic name")
    parser.add_argument("-c", "--charsetName", dest="charset", default="UTF-8", help="CharsetName(eg: UTF-8,GBK)")
    parser.add_argument("-s", "--subExpression", dest="sub_expression", default="*",
                        help="Subscribe Expression(eg: TagA || TagB)")
    parser.add_argument("-b", "--beginTimestamp", dest="begin", help="Begin timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]")
    parser.add_argument("-e", "--endTimestamp", dest="end", help="End timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]")
    parser.add_argument("-d", "--printBody", dest="print_body", type=java_bool, default=True, help="print body")


async def _print_msg(admin: AsyncAdmin, args: argparse.Namespace) -> Output:
    # lazy: see rocketmq_py/_lazy.py
    from rocketmq_py.client.consumer.brokers import subscribe_queues
    from rocketmq_py.client.consumer.pull import PullStatus

    topic = args.topic.strip()
    text: list[str] = []
    data: list[object] = []
    for queue in sorted(subscribe_queues(topic, await admin.examine_topic_route_info(topic))):
        min_offset, max_offset = await admin.min_offset(queue), await admin.max_offset(queue)
        if args.begin:
            min_offset = await admin.search_offset(queue, parse_timestamp(args.begin))
        if args.end:
            max_offset = await admin.search_offset(queue, parse_timestamp(args.end))
        text.append(f"minOffset={min_offset}, maxOffset={max_offset}, {queue}\n")
        offset = min_offset
        while offset < max_offset:
            try:
                result = await admin.pull_messages(queue, offset, 32, args.sub_expression.strip())
            except RocketMQError as error:
                print(f"pulling {queue} at {offset} failed: {error}", file=sys.stderr)
                break
            offset = result.next_begin_offset
            if result.status is PullStatus.FOUND:
                for message in result.messages:
                    body = message.body.decode(args.charset, "replace") if args.print_body else "NOT PRINT BODY"
                    text.append(f"MSGID: {message.msg_id} {message_text(message)} BODY: {body}\n")
                    data.append(message)
            elif result.status is PullStatus.NO_MATCHED_MSG:
                text.append(f"{queue} no matched msg. status={result.status.value}, offset={offset}\n")
            else:
                text.append(f"{queue} print msg finished. status={result.status.value}, offset={offset}\n")
                break
        text.append("--------------------------------------------------------\n")
    return Output("".join(text), data)


COMMANDS = [
    Command("queryMsgById", "Query Message by Id", _query_by_id_arguments, _query_msg_by_id),
    Command("queryMsgByKey", "Query Message by Key", _query_by_key_arguments, _query_msg_by_key),
    Command("queryMsgByUniqueKey", "Query Message by Unique key", _query_by_unique_key_arguments,
            _query_msg_by_unique_key),
    Command("printMsg", "Print Message Detail", _print_msg_arguments, _print_msg),
]
