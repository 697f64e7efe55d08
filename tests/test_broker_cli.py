"""``rocketmq-py broker`` and ``rocketmq-py quickstart`` as a user runs them."""
from __future__ import annotations

import json
import logging
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.child import child_env
from support.ports import free_broker_port

from rocketmq_py.broker import BrokerController
from rocketmq_py.broker import config as broker_config
from rocketmq_py.broker.config import BrokerConfig, worker_processes_from_cores
from rocketmq_py.cli import main


def test_print_config_lists_java_keys(tmp_path, capsys):
    conf = tmp_path / "broker.conf"
    conf.write_text("brokerName=printed\nflushDiskType=SYNC_FLUSH\n")
    assert main(["broker", "-c", str(conf), "-p"]) == 0
    printed = capsys.readouterr().out
    assert "brokerName=printed\n" in printed and "flushDiskType=SYNC_FLUSH\n" in printed
    assert "brokerIP1=" in printed and "listenPort=10911\n" in printed


def test_broker_process_starts_serves_and_stops_cleanly_on_sigterm(tmp_path):
    port = free_broker_port()
    store = tmp_path / "store"
    conf = tmp_path / "broker.conf"
    conf.write_text(f"brokerName=cli-broker\nlistenPort={port}\nbrokerIP1=127.0.0.1\nbrokerIP2=127.0.0.1\n"
                    f"storePathRootDir={store}\nmappedFileSizeCommitLog=1048576\nnamesrvAddr=127.0.0.1:1\n"
                    "unknownKey=1\n")
    proc = subprocess.Popen([sys.executable, "-m", "rocketmq_py", "broker", "-c", str(conf)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=child_env())
    fronts = worker_processes_from_cores()
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read()
                time.sleep(0.05)
        # The store runs (and has written its abort file) before the port opens, as in Java.
        assert (store / "abort").exists(), "the port opened before the store started"
        # serverWorkerProcesses is not set: the command runs the fronts the cores give.
        assert _front_processes(proc.pid) == fronts
        proc.send_signal(signal.SIGTERM)
        output, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, output
    assert "boot success" in output and "unknownKey" in output and "shut down" in output
    cores = broker_config._processors()
    startup = (f"{fronts} front processes, from {cores} cores (serverWorkerProcesses is not set)" if fronts else
               "no front processes, from 1 core (serverWorkerProcesses is not set)")
    assert startup in output, output
    assert not (store / "abort").exists(), "a clean shutdown removes the abort file"
    assert (store / "config" / "topics.json").exists()


def test_quickstart_sends_and_consumes(capsys):
    assert main(["--log-level", "WARNING", "quickstart", "--messages", "20", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["ok"] and summary["sent"] == summary["matched"] == 20
    assert sum(summary["committed_offsets"].values()) == 20


def _front_processes(pid: int) -> int:
    """The front processes among the children of ``pid``."""
    children = [child for task in Path(f"/proc/{pid}/task").iterdir()
                for child in (task / "children").read_text().split()]
    return sum(b"rocketmq_py.remoting.front" in Path(f"/proc/{child}/cmdline").read_bytes() for child in children)


def _printed_workers(capsys, *args: str) -> str:
    assert main(["broker", *args, "-p"]) == 0
    line, = [line for line in capsys.readouterr().out.splitlines() if line.startswith("serverWorkerProcesses=")]
    return line.partition("=")[2]


@pytest.mark.parametrize("cores, fronts", [(1, "0"), (2, "2"), (8, "8")])
def test_the_command_picks_the_fronts_from_the_cores_when_the_key_is_not_set(capsys, monkeypatch, cores, fronts):
    monkeypatch.setattr(broker_config, "_processors", lambda: cores)
    assert _printed_workers(capsys) == fronts


def test_the_key_and_workers_choose_the_fronts(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(broker_config, "_processors", lambda: 8)
    conf = tmp_path / "broker.conf"
    conf.write_text("serverWorkerProcesses=0\n")
    assert _printed_workers(capsys, "-c", str(conf)) == "0", "0 keeps one process"
    conf.write_text("serverWorkerProcesses=3\n")
    assert _printed_workers(capsys, "-c", str(conf)) == "3"
    assert _printed_workers(capsys, "-c", str(conf), "--workers", "1") == "1", "--workers overrides the key"
    assert _printed_workers(capsys, "--workers", "0") == "0"


def test_an_embedded_broker_runs_no_fronts_unless_asked():
    assert BrokerController(BrokerConfig(listen_port=0)).config.server_worker_processes == 0
    assert BrokerController(BrokerConfig(listen_port=0, server_worker_processes=2)).config.server_worker_processes == 2


@pytest.mark.parametrize("value, refusal", [
    ("-1", "serverWorkerProcesses (--workers) must be 0 (one process) or more, not -1"),
    ("two", "config key serverWorkerProcesses='two' is not a valid int"),
])
def test_a_bad_value_refuses_to_start_with_one_line(tmp_path, value, refusal):
    store = tmp_path / "store"
    conf = tmp_path / "broker.conf"
    conf.write_text(f"serverWorkerProcesses={value}\nstorePathRootDir={store}\nnamesrvAddr=127.0.0.1:1\n")
    done = subprocess.run([sys.executable, "-m", "rocketmq_py", "broker", "-c", str(conf)], capture_output=True,
                          text=True, env=child_env(), timeout=60)
    assert done.returncode == 1
    line, = done.stderr.splitlines()
    assert line.endswith(f"broker failed: {refusal}")
    assert not store.exists(), "refused before the store"


def test_a_negative_workers_option_refuses_to_start(caplog):
    with caplog.at_level(logging.ERROR, "rocketmq_py.cli"):
        assert main(["broker", "--workers", "-2"]) == 1
    assert [record.getMessage() for record in caplog.records] == [
        "broker failed: serverWorkerProcesses (--workers) must be 0 (one process) or more, not -2"]
