"""``rocketmq-py admin``, ``produce`` and ``consume`` against our servers on loopback (the commands in process, or
as processes for the pipes), and the pieces that make mqadmin's text: Java's printf, time formats, version
names, JSON, the ACL file."""
from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import time

import pytest
from support.child import child_cwd, child_env
from support.cluster import ThreadedCluster

from rocketmq_py.admin.cli import jsonable
from rocketmq_py.admin.cli.java_text import (
    front,
    human_ms,
    parse_timestamp,
    perm_string,
    printf,
    topic_config_text,
)
from rocketmq_py.cli import main
from rocketmq_py.cli_connection import connection_options, tools_acl_keys
from rocketmq_py.common.admin_body import TopicOffset
from rocketmq_py.common.message import MessageExt
from rocketmq_py.common.message_queue import MessageQueue
from rocketmq_py.common.mq_version import version_desc
from rocketmq_py.common.topic_config import TopicConfig
from rocketmq_py.shell.consume import render
from rocketmq_py.shell.produce import parse_properties, split_chunk


# --- the pieces ----------------------------------------------------------------------------------------------

def test_printf_prints_as_java_does():
    assert printf("%-6s|%4d|%.2f|%s%n", "ab", 7, 1.5, True) == "ab    |   7|1.50|true\n"
    assert printf("%s %s", None, False) == "null false"
    assert front("abcdef", 3) == "abc" and front("ab", 3) == "ab"
    assert perm_string(6) == "RW-" and perm_string(7) == "RWX"
    assert topic_config_text(TopicConfig("T", 2, 3)) == (
        "TopicConfig [topicName=T, readQueueNums=2, writeQueueNums=3, perm=RW-, topicFilterType=SINGLE_TAG, "
        "topicSysFlag=0, order=false]")


def test_timestamps_are_read_and_shown_in_local_time_as_mqadmin_does():
    when = parse_timestamp("2024-01-31#12:34:56:789")
    assert human_ms(when) == "2024-01-31 12:34:56,789"
    assert parse_timestamp("1700000000000") == 1700000000000
    assert parse_timestamp("now", allow_now=True) == -1
    with pytest.raises(ValueError, match="yyyy-MM-dd#HH:mm:ss:SSS or now"):
        parse_timestamp("yesterday", allow_now=True)
    with pytest.raises(ValueError):
        parse_timestamp("now")


def test_version_ordinals_have_java_names():
    assert version_desc(0) == "V3_0_0_SNAPSHOT"
    assert version_desc(409) == "V4_9_8" and version_desc(397) == "V4_9_2"
    assert version_desc(100_000) == "V5_9_9"


def test_json_output_flattens_maps_keyed_by_queue():
    table = {MessageQueue("T", "b", 1): TopicOffset(0, 5, 9), MessageQueue("T", "b", 0): TopicOffset(1, 2, 3)}
    assert jsonable(table) == [
        {"topic": "T", "broker_name": "b", "queue_id": 0, "min_offset": 1, "max_offset": 2, "last_update_timestamp": 3},
        {"topic": "T", "broker_name": "b", "queue_id": 1, "min_offset": 0, "max_offset": 5, "last_update_timestamp": 9},
    ]
    assert jsonable({"groups": {"b", "a"}}) == {"groups": ["a", "b"]}
    assert jsonable({"queue": MessageQueue("T", "b", 1)}) == {
        "queue": {"topic": "T", "broker_name": "b", "queue_id": 1}}, "a queue is an object, not a list"


def test_the_acl_keys_come_from_the_flags_or_from_tools_yml(tmp_path):
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "tools.yml").write_text("accessKey: RocketMQ\nsecretKey: '12345678'\n")
    assert tools_acl_keys(str(tmp_path)) == ("RocketMQ", "12345678")
    (tmp_path / "conf" / "tools.yml").write_text("accessKey: RocketMQ\n")
    assert tools_acl_keys(str(tmp_path)) == (None, None), "mqadmin turns ACL off when a key is blank"
    args = argparse.Namespace(namesrv_addr=None, access_key="ak", secret_key="sk", tls=None)
    options = connection_options(args, {"NAMESRV_ADDR": "10.0.0.1:9876"})
    assert (options["namesrv_addr"], options["access_key"], options["secret_key"]) == ("10.0.0.1:9876", "ak", "sk")


def test_produce_reads_lines_and_properties():
    assert split_chunk(b"", b"a\r\nb\n\nc") == ([b"a", b"b", b""], b"c")
    assert split_chunk(b"c", b"d\n") == ([b"cd"], b"")
    assert parse_properties(["a=1", "b=x=y"]) == {"a": "1", "b": "x=y"}
    with pytest.raises(ValueError, match="KEY=VALUE"):
        parse_properties(["novalue"])


def test_consume_renders_a_body_a_format_or_a_json_line():
    message = MessageExt("T", b"hello")
    message.queue_id, message.queue_offset, message.broker_name = 1, 7, "b"
    message.keys = "k1"
    assert render(message, None, False) == b"hello\n"
    assert render(message, "{queue_id}/{offset} {keys}: {body}", False) == b"1/7 k1: hello\n"
    assert json.loads(render(message, None, True))["body"] == "hello"
    binary = MessageExt("T", b"\xff\x00")
    assert json.loads(render(binary, None, True))["body_base64"] == "/wA="
    with pytest.raises(ValueError, match="the fields are"):
        render(message, "{nope}", False)


# --- the admin commands ---------------------------------------------------------------------------------------

@pytest.fixture
def threaded(tmp_path):
    with ThreadedCluster(tmp_path) as running:
        yield running


def admin(capsys, namesrv: str, *argv: str) -> tuple[int, str, str]:
    status = main(["admin", *argv, "-n", namesrv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def _wait_for_topic(capsys, namesrv: str, topic: str) -> None:
    deadline = time.monotonic() + 30
    while topic not in admin(capsys, namesrv, "topicList")[1].split():
        assert time.monotonic() < deadline, f"{topic} was not registered"
        time.sleep(0.05)


def test_the_admin_commands_print_mqadmins_columns(threaded, capsys):
    cluster = threaded.cluster
    namesrv, addr = cluster.namesrv_addr, cluster.broker.broker_addr
    status, out, err = admin(capsys, namesrv, "clusterList")
    header, row = out.splitlines()
    assert header.split() == ["#Cluster", "Name", "#Broker", "Name", "#BID", "#Addr", "#Version", "#InTPS(LOAD)",
                              "#OutTPS(LOAD)", "#PCWait(ms)", "#Hour", "#SPACE"]
    assert row.split()[:5] == ["DefaultCluster", "broker-api", "0", addr, "V4_9_8"] and err == ""

    status, out, _ = admin(capsys, namesrv, "updateTopic", "-b", addr, "-t", "CliTopic", "-r", "2", "-w", "2")
    assert out == (f"create topic to {addr} success.\nTopicConfig [topicName=CliTopic, readQueueNums=2, "
                   "writeQueueNums=2, perm=RW-, topicFilterType=SINGLE_TAG, topicSysFlag=0, order=false]")
    _wait_for_topic(capsys, namesrv, "CliTopic")
    threaded.run(cluster.produce("CliTopic", 4))

    status, out, _ = admin(capsys, namesrv, "topicStatus", "-t", "CliTopic")
    lines = out.splitlines()
    assert lines[0] == printf("%-32s  %-4s  %-20s  %-20s    %s", "#Broker Name", "#QID", "#Min Offset", "#Max Offset",
                              "#Last Updated")
    assert [line.split()[:4] for line in lines[1:]] == [["broker-api", "0", "0", "2"], ["broker-api", "1", "0", "2"]]

    status, out, _ = admin(capsys, namesrv, "topicStatus", "-t", "CliTopic", "--json")
    assert [(row["queue_id"], row["max_offset"]) for row in json.loads(out)] == [(0, 2), (1, 2)]

    status, out, _ = admin(capsys, namesrv, "topicRoute", "-t", "CliTopic", "-l")
    assert out.splitlines()[1].split() == ["DefaultCluster", "broker-api", f"{{0={addr}}}", "2", "2", "6"]

    status, out, err = admin(capsys, namesrv, "topicStatus", "-t", "NoSuchTopic")
    assert status == 1 and out == "" and err.count("\n") == 1
    assert err.startswith("rocketmq-py admin topicStatus: response code 17")


def test_the_admin_commands_without_a_name_server_fail_in_one_line(capsys, monkeypatch):
    monkeypatch.delenv("NAMESRV_ADDR", raising=False)
    status = main(["admin", "topicList"])
    captured = capsys.readouterr()
    assert status == 1 and captured.err.strip().startswith("rocketmq-py admin topicList: no name server address")


# --- produce and consume ---------------------------------------------------------------------------------------

def run(namesrv: str, *argv: str, data: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "rocketmq_py", *argv, "-n", namesrv], input=data,
                          capture_output=True, timeout=300, env=child_env(), cwd=child_cwd())


def test_produce_then_consume_with_and_without_a_group(threaded, capsys):
    cluster = threaded.cluster
    namesrv = cluster.namesrv_addr
    admin(capsys, namesrv, "updateTopic", "-b", cluster.broker.broker_addr, "-t", "PipeTopic", "-r", "2", "-w", "2")
    _wait_for_topic(capsys, namesrv, "PipeTopic")
    lines = [f"line {i} é".encode() for i in range(300)]
    data = b"\n".join(lines[:150]) + b"\n\n" + b"\r\n".join(lines[150:]) + b"\n"
    produced = run(namesrv, "produce", "-t", "PipeTopic", "--tags", "TagA", "--keys", "k1 k2", "--property", "p=1",
                   "--batch-size", "32", data=data)
    assert produced.returncode == 0, produced.stderr
    assert produced.stderr.decode().strip() == ("sent 300 message(s) to PipeTopic, skipped 1 empty line(s): "
                                                "RocketMQ refuses empty bodies")

    everything = run(namesrv, "consume", "-t", "PipeTopic", "--from-beginning", "--exit-at-end", "--json")
    assert everything.returncode == 0, everything.stderr
    records = [json.loads(line) for line in everything.stdout.splitlines()]
    assert sorted(r["body"].encode() for r in records) == sorted(lines)
    assert {(r["tags"], r["keys"], r["properties"]["p"]) for r in records} == {("TagA", "k1 k2", "1")}

    assert run(namesrv, "consume", "-t", "PipeTopic", "--exit-at-end").stdout == b"", "no group starts at the end"
    last = run(namesrv, "consume", "-t", "PipeTopic", "--offset", "-1", "--exit-at-end", "--format", "{queue_id}")
    assert sorted(last.stdout.split()) == [b"0", b"1"]

    first = run(namesrv, "consume", "-t", "PipeTopic", "-g", "pipe_group", "--from-beginning", "--max", "100")
    assert first.returncode == 0 and len(first.stdout.splitlines()) == 100
    rest = run(namesrv, "consume", "-t", "PipeTopic", "-g", "pipe_group", "--exit-at-end")
    assert rest.returncode == 0, rest.stderr
    assert sorted(first.stdout.splitlines() + rest.stdout.splitlines()) == sorted(lines), \
        "the group goes on where it committed: every line once"
    assert cluster.committed("pipe_group", "PipeTopic") == cluster.max_offsets("PipeTopic")


def test_produce_delayed_messages_and_refuse_bad_input(threaded, capsys):
    cluster = threaded.cluster
    namesrv = cluster.namesrv_addr
    delayed = run(namesrv, "produce", "-t", "DelayTopic", "--delay", "1", data=b"later\n")
    assert delayed.returncode == 0, delayed.stderr
    stored = threaded.run(_schedule_topic_count(cluster))
    assert stored == 1, "a delayed message waits in SCHEDULE_TOPIC_XXXX"
    bad = run(namesrv, "produce", "-t", "DelayTopic", "--property", "oops", data=b"x\n")
    assert bad.returncode == 1 and bad.stderr.decode().count("\n") == 1 and b"KEY=VALUE" in bad.stderr
    mixed = run(namesrv, "consume", "-t", "DelayTopic", "-g", "g", "--offset", "3")
    assert mixed.returncode == 1 and b"--offset reads without a group" in mixed.stderr


async def _schedule_topic_count(cluster) -> int:
    store = cluster.broker.store
    return sum(max(store.get_max_offset_in_queue("SCHEDULE_TOPIC_XXXX", queue), 0) for queue in range(18))


def start(namesrv: str, *argv: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "rocketmq_py", *argv, "-n", namesrv], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=child_env(), cwd=child_cwd())


def test_typed_lines_go_at_once_and_signals_stop_both_commands_cleanly(threaded, capsys):
    cluster = threaded.cluster
    namesrv = cluster.namesrv_addr
    admin(capsys, namesrv, "updateTopic", "-b", cluster.broker.broker_addr, "-t", "Typed", "-r", "1", "-w", "1")
    _wait_for_topic(capsys, namesrv, "Typed")
    producer = start(namesrv, "produce", "-t", "Typed")
    assert producer.stdin is not None
    producer.stdin.write(b"first line\n")
    producer.stdin.flush()  # and the input stays open, as at a terminal
    deadline = time.monotonic() + 60
    while cluster.max_offsets("Typed") != {0: 1}:
        assert time.monotonic() < deadline, "a typed line was not sent before the next one came"
        time.sleep(0.05)
    producer.send_signal(signal.SIGINT)
    _, err = producer.communicate(timeout=60)
    assert producer.returncode == 130 and err.decode().strip() == "sent 1 message(s) to Typed (interrupted)"

    consumer = start(namesrv, "consume", "-t", "Typed", "-g", "typed_group", "--from-beginning")
    assert consumer.stdout is not None
    assert consumer.stdout.readline() == b"first line\n"
    consumer.send_signal(signal.SIGTERM)
    _, err = consumer.communicate(timeout=60)
    assert consumer.returncode == 0 and err.decode().strip() == "consumed 1 message(s) from Typed"
    assert cluster.committed("typed_group", "Typed") == {0: 1}, "the group committed what it printed"

    # More than a pipe holds, so that the consumer writes on after its reader is gone (``| head -1``).
    filler = b"".join(b"%039d\n" % i for i in range(20_000))
    assert run(namesrv, "produce", "-t", "Typed", data=filler).returncode == 0
    reader_gone = start(namesrv, "consume", "-t", "Typed", "--from-beginning", "--exit-at-end")
    assert reader_gone.stdout is not None and reader_gone.stdout.readline() == b"first line\n"
    reader_gone.stdout.close()
    assert reader_gone.wait(timeout=120) == 0
    assert reader_gone.stderr is not None and reader_gone.stderr.read() == b"", "it stops quietly"
