"""What importing the client loads: the broker, store and name server stay out, and so does the client's
runtime (the instance, its RPCs, the connection) until a client starts (rocketmq_py/_lazy.py)."""
from __future__ import annotations

import json
import subprocess
import sys

import rocketmq_py

CLIENT_NAMES = ("Producer", "AsyncProducer", "PushConsumer", "AsyncPushConsumer", "LitePullConsumer",
                "AsyncLitePullConsumer", "Message")

#: Module prefixes a program that only imports the client API must not load.
NOT_AT_IMPORT = (
    "rocketmq_py.broker", "rocketmq_py.store", "rocketmq_py.namesrv", "rocketmq_py.spark", "rocketmq_py.acl",
    "rocketmq_py.cli",
    "rocketmq_py.client.instance", "rocketmq_py.client.api", "rocketmq_py.remoting.client",
    "rocketmq_py.remoting.server", "rocketmq_py.common.headers",
    "lz4", "zstandard", "uvloop", "pyspark", "tempfile",
)


def loaded_after(statement: str) -> list[str]:
    """The modules in ``sys.modules`` after ``statement`` runs in a fresh interpreter."""
    code = f"import json, sys\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded: list[str] = json.loads(out)
    return loaded


def unexpected(loaded: list[str]) -> list[str]:
    return [name for name in loaded if any(name == prefix or name.startswith(prefix + ".") for prefix in NOT_AT_IMPORT)]


def test_the_producer_and_consumer_names_load_no_server_and_no_client_runtime():
    loaded = loaded_after(f"from rocketmq_py import {', '.join(CLIENT_NAMES)}")
    assert "rocketmq_py.client.producer.core" in loaded and "rocketmq_py.client.consumer.push" in loaded
    assert unexpected(loaded) == []


def test_every_public_name_loads_no_server_and_no_client_runtime():
    loaded = loaded_after("import rocketmq_py\nfor name in rocketmq_py.__all__: getattr(rocketmq_py, name)")
    assert unexpected(loaded) == []


def test_a_push_consumer_program_does_not_load_the_lite_pull_consumer():
    loaded = loaded_after("from rocketmq_py import PushConsumer")
    assert "rocketmq_py.client.consumer.blocking" in loaded
    assert "rocketmq_py.client.consumer.lite_pull" not in loaded
    assert "rocketmq_py.client.consumer.push" not in loaded  # loaded when a PushConsumer is made


def test_the_check_itself_sees_a_server_module():
    loaded = loaded_after("import rocketmq_py.broker.controller")
    assert "rocketmq_py.broker.controller" in unexpected(loaded)


def test_the_subpackages_still_resolve_every_name_they_export():
    from rocketmq_py import remoting
    from rocketmq_py.client import consumer, producer

    for package in (remoting, producer, consumer):
        for name in package.__all__:
            assert getattr(package, name) is not None, name
        assert set(package.__all__) <= set(dir(package))
    assert producer.Producer is rocketmq_py.Producer
