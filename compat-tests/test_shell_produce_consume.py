"""Issue 32, must-show 3: ``rocketmq-py produce`` and ``consume`` on the Java servers and on ours: a shell pipe of
100,000 lines goes in and comes back whole with ``--exit-at-end``; what our produce sends, Java's consumer
reads with its tags, keys and properties, and what Java's producer sends, our consume prints."""
from __future__ import annotations

import base64
import json
import os
import shlex
import subprocess
import sys
import time

from harness import mqadmin, run_peer, unique_name
from harness.admin_text import ROOT, run_rocketmq_py

LINES = 100_000


def test_a_pipe_of_100000_lines_round_trips(servers):
    namesrv, broker = servers
    topic = unique_name("Pipe")
    mqadmin("updateTopic", "-b", broker.addr, "-t", topic, "-r", "4", "-w", "4", namesrv=namesrv.addr)
    command = [sys.executable, "-m", "rocketmq_py"]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    started = time.monotonic()
    produce = subprocess.run(
        ["bash", "-c", f"seq 1 {LINES} | {shlex.join(command)} produce -t {topic} -n {namesrv.addr}"],
        capture_output=True, text=True, env=env, timeout=600)
    produced_s = time.monotonic() - started
    assert produce.returncode == 0, produce.stderr
    assert produce.stderr.strip() == f"sent {LINES} message(s) to {topic}"
    consume = run_rocketmq_py("consume", "-t", topic, "--from-beginning", "--exit-at-end", namesrv=namesrv.addr,
                              timeout=600)
    assert sorted(int(line) for line in consume.stdout.split()) == list(range(1, LINES + 1)), \
        f"every line once (produce took {produced_s:.1f} s)"
    assert consume.stderr.decode().strip() == f"consumed {LINES} message(s) from {topic}"


def test_our_produce_reaches_java_consumers_and_java_messages_reach_our_consume(servers):
    namesrv, broker = servers
    topic = unique_name("Shell")
    mqadmin("updateTopic", "-b", broker.addr, "-t", topic, "-r", "2", "-w", "2", namesrv=namesrv.addr)
    lines = [f"ours-{i}" for i in range(20)]
    run_rocketmq_py("produce", "-t", topic, "--tags", "TagS", "--keys", "k1 k2", "--property", "origin=shell",
                    "--batch-size", "8", namesrv=namesrv.addr, input="\n".join(lines).encode() + b"\n")
    *received, done = run_peer("consume", namesrv=namesrv.addr, topic=topic, group=unique_name("java_cg"),
                               count=len(lines), sub="TagS", timeout_ms=60000)
    assert done["count"] == len(lines) and not done["timedOut"]
    assert sorted(base64.b64decode(m["bodyBase64"]).decode() for m in received) == sorted(lines)
    assert {(m["tags"], m["keys"], m["properties"]["origin"]) for m in received} == {("TagS", "k1 k2", "shell")}

    sent = run_peer("produce", namesrv=namesrv.addr, topic=topic, count=5, tags="TagJ", keys="java-{i}",
                    body="java-{i}")
    printed = run_rocketmq_py("consume", "-t", topic, "--from-beginning", "--exit-at-end", "--json",
                              namesrv=namesrv.addr).stdout.decode()
    java = [record for record in map(json.loads, printed.splitlines()) if record["tags"] == "TagJ"]
    assert sorted((r["msg_id"], r["body"], r["keys"]) for r in java) == sorted(
        (m["msgId"], f"java-{i}", f"java-{i}") for i, m in enumerate(sent))
    assert len(printed.splitlines()) == len(lines) + len(sent)
