"""``rocketmq-py broker`` and ``rocketmq-py quickstart`` as a user runs them."""
from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time

from support.child import child_env
from support.ports import free_broker_port

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
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read()
                time.sleep(0.05)
        # The port opens before the store starts (and writes its abort file): wait for the file too.
        while not (store / "abort").exists():
            assert proc.poll() is None and time.monotonic() < deadline, "the running broker has no abort file"
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        output, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, output
    assert "boot success" in output and "unknownKey" in output and "shut down" in output
    assert not (store / "abort").exists(), "a clean shutdown removes the abort file"
    assert (store / "config" / "topics.json").exists()


def test_quickstart_sends_and_consumes(capsys):
    assert main(["--log-level", "WARNING", "quickstart", "--messages", "20", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["ok"] and summary["sent"] == summary["matched"] == 20
    assert sum(summary["committed_offsets"].values()) == 20
