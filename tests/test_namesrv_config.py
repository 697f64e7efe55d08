"""Name server configuration: Java properties files, unknown keys, the KV config file and the command line."""
from __future__ import annotations

import logging
import signal
import socket
import subprocess
import sys
import time

import pytest

from support.child import child_env
from support.ports import free_port

from rocketmq_py import codec
from rocketmq_py.cli import build_parser
from rocketmq_py.common.config_file import (
    apply_properties,
    format_properties,
    parse_properties,
    read_file_with_backup,
    write_file_safely,
)
from rocketmq_py.namesrv import KVConfigManager, NamesrvConfig, load_namesrv_config


def test_properties_syntax_as_java_reads_it():
    text = (
        "# comment\n! also a comment\n"
        "listenPort=9877\n"
        "  kvConfigPath : /tmp/kv.json\n"
        "productEnvName  spaced value \n"
        "multi=one \\\n    two\n"
        "escaped\\=key=a\\tb\\u0041\n"
        "empty=\n"
    )
    assert parse_properties(text) == {
        "listenPort": "9877",
        "kvConfigPath": "/tmp/kv.json",
        "productEnvName": "spaced value ",
        "multi": "one two",
        "escaped=key": "a\tbA",
        "empty": "",
    }


def test_load_config_file_warns_about_unknown_keys(tmp_path, caplog):
    path = tmp_path / "namesrv.properties"
    path.write_text("listenPort=9999\norderMessageEnable=TRUE\nnoSuchKey=1\nkvConfigPath=/x/kv.json\n")
    with caplog.at_level(logging.WARNING):
        config = load_namesrv_config(path, listen_port=None)
    assert (config.listen_port, config.order_message_enable, config.kv_config_path) == (9999, True, "/x/kv.json")
    assert "noSuchKey" in caplog.text
    assert load_namesrv_config(path, listen_port=1234).listen_port == 1234


def test_bad_number_names_the_key():
    with pytest.raises(ValueError, match="listenPort"):
        apply_properties(NamesrvConfig(), {"listenPort": "ninety"})


def test_format_properties_round_trips():
    config = NamesrvConfig(kv_config_path="/a/b.json", listen_port=1)
    from rocketmq_py.common.config_file import config_to_properties

    again = NamesrvConfig()
    assert apply_properties(again, parse_properties(format_properties(config_to_properties(config)))) == []
    assert again == config


def test_safe_write_keeps_a_backup(tmp_path):
    path = tmp_path / "sub" / "x.json"
    write_file_safely(path, "one")
    write_file_safely(path, "two")
    assert path.read_text() == "two"
    assert (tmp_path / "sub" / "x.json.bak").read_text() == "one"
    assert not (tmp_path / "sub" / "x.json.tmp").exists()
    path.write_text("")
    assert read_file_with_backup(path) == "one"
    assert read_file_with_backup(tmp_path / "missing") is None


def test_kv_config_persists_in_java_format(tmp_path):
    path = tmp_path / "kvConfig.json"
    kv = KVConfigManager(path)
    kv.put("ORDER_TOPIC_CONFIG", "T", "broker-a:4")
    kv.put("ns", "k", "v")
    kv.delete("ns", "k")
    data = codec.json_loads(path.read_text())
    assert data == {"configTable": {"ORDER_TOPIC_CONFIG": {"T": "broker-a:4"}, "ns": {}}}
    again = KVConfigManager(path)
    again.load()
    assert again.get("ORDER_TOPIC_CONFIG", "T") == "broker-a:4"
    assert codec.json_loads(again.get_kv_list_by_namespace("ORDER_TOPIC_CONFIG")) == {"table": {"T": "broker-a:4"}}
    assert again.get_kv_list_by_namespace("none") is None


def test_kv_config_reads_a_java_written_file(tmp_path):
    path = tmp_path / "kvConfig.json"
    path.write_text('{\n\t"configTable":{\n\t\t"NS":{\n\t\t\t"a":"1"\n\t\t}\n\t}\n}')
    kv = KVConfigManager(path)
    kv.load()
    assert kv.get("NS", "a") == "1"


def test_cli_parses_namesrv_options():
    args = build_parser().parse_args(["namesrv", "-c", "x.properties", "--port", "9999"])
    assert (args.command, args.config, args.port, args.print_config) == ("namesrv", "x.properties", 9999, False)
    assert build_parser().parse_args(["namesrv", "-p"]).print_config is True


def test_cli_print_config(tmp_path, capsys):
    from rocketmq_py.cli import main

    assert main(["namesrv", "--port", "1234", "-p"]) == 0
    assert "listenPort=1234\n" in capsys.readouterr().out


def test_python_m_namesrv_serves_and_stops_on_sigterm(tmp_path):
    port = free_port()
    conf = tmp_path / "namesrv.properties"
    conf.write_text(f"kvConfigPath={tmp_path / 'kv.json'}\nbindAddress=127.0.0.1\n")
    proc = subprocess.Popen([sys.executable, "-m", "rocketmq_py", "namesrv", "-c", str(conf), "--port", str(port)],
                            stderr=subprocess.PIPE, text=True, env=child_env(), cwd=tmp_path)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.05)
        else:
            pytest.fail("the name server did not start listening")
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "boot success" in err and "shut down" in err
