"""Side-by-side speed of the compiled codec, its pure-Python twin and (optionally) Java's.

Mirrors the inputs of the Java ``codec-bench`` peer
(compat-tests/java/peers/.../CodecBench.java), so the numbers line up:

* ``send_v2_json_ops_per_s`` / ``send_v2_rocketmq_ops_per_s``: one op encodes a
  SEND_MESSAGE_V2 request (the V2 short-name header a..n as the 4.9.8 producer
  sends it, 1 KiB body) to a frame and decodes it back through a FrameDecoder, reading its
  extFields dict (which a ROCKETMQ frame's command makes on first read) as Java's decode fills its map.
* ``pull32_decode_ops_per_s``: one op decodes a pull body of 32 store records
  (1 KiB bodies, the properties a pulled message carries).

Java's send op also builds the request and its custom-header object (and
decodes the header object back), which rocketmq-py does outside the codec, so
compiled/java on the send ops favours Python by an amount not measured here.
With ``--java-inputs`` the decoders read the bytes Java's encoder wrote.

Usage: ``python benchmarks/codec/bench_codec.py [--iterations N] [--repeats R]
[--java-json PATH] [--java-inputs DIR]``; prints one JSON object. ``run()`` is
the same measurement for a script that drives both sides.
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
import zlib
from pathlib import Path
from typing import Callable

from rocketmq_py import _codec_py as twin
from rocketmq_py._codec_types import RemotingCommand

try:
    from rocketmq_py import _codec as compiled
except ImportError as error:  # reported in the output instead of failing
    compiled = None
    COMPILED_ERROR: str | None = str(error)
else:
    COMPILED_ERROR = None

OPS = ("send_v2_json_ops_per_s", "send_v2_rocketmq_ops_per_s", "pull32_decode_ops_per_s")

# The fixed inputs of CodecBench.java.
SEND_MESSAGE_V2 = 310
VERSION_4_9_8 = 409
TOPIC = "BenchmarkTopic"
GROUP = "BenchmarkProducerGroup"
BROKER = "broker-a"
BORN_TS = 1700000000000
STORE_TS = 1700000000123
OPAQUE = 1000
UNIQ = "7F0000010F2A18B4AAC27E4B3C9D0000"
BODY = bytes(ord("a") + i % 26 for i in range(1024))
PULL_COUNT = 32


def send_properties() -> dict[str, str]:
    return {"UNIQ_KEY": UNIQ, "WAIT": "true", "TAGS": "TagA", "KEYS": "OrderID-1000"}


def send_request(serialize_type: int) -> RemotingCommand:
    """SEND_MESSAGE_V2 with the ext fields SendMessageRequestHeaderV2 writes (l is null, so absent)."""
    ext_fields = {
        "a": GROUP, "b": TOPIC, "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": str(BORN_TS), "h": "0",
        "i": twin.properties_to_string(send_properties()), "j": "0", "k": "false", "m": "false", "n": BROKER,
    }
    return RemotingCommand(code=SEND_MESSAGE_V2, language=0, version=VERSION_4_9_8, opaque=OPAQUE,
                           ext_fields=ext_fields, body=BODY, serialize_type=serialize_type)


def pull_body() -> bytes:
    records = []
    offset = 0
    for i in range(PULL_COUNT):
        properties = send_properties()
        properties["UNIQ_KEY"] = UNIQ[:-4] + f"{i:04X}"
        properties.update({"MIN_OFFSET": "0", "MAX_OFFSET": str(PULL_COUNT), "CLUSTER": "DefaultCluster"})
        record = twin.encode_store_record(
            topic=TOPIC, body=BODY, properties=properties, queue_id=0, queue_offset=i,
            physical_offset=offset, born_timestamp=BORN_TS, born_host="127.0.0.1:50000",
            store_timestamp=STORE_TS, store_host="127.0.0.1:10911",
            body_crc=zlib.crc32(BODY) & 0x7FFFFFFF,
        )
        records.append(record)
        offset += len(record)
    return b"".join(records)


def _operations(codec, inputs: dict) -> dict[str, Callable[[], object]]:
    json_request, binary_request = inputs["json_request"], inputs["binary_request"]
    json_decoder, binary_decoder = codec.FrameDecoder(), codec.FrameDecoder()
    pull = inputs["pull"]
    json_frame, binary_frame = inputs.get("json_frame"), inputs.get("binary_frame")

    def send(request, decoder, fixed_frame):
        encode, feed = codec.encode_command, decoder.feed

        def op():
            frame = encode(request)
            [command] = feed(frame if fixed_frame is None else fixed_frame)
            # Java's decode fills the extFields map; ours makes a ROCKETMQ frame's dict when it is first read.
            return command.ext_fields

        return op

    def pull_op():
        return codec.decode_store_records(pull)

    return {
        "send_v2_json_ops_per_s": send(json_request, json_decoder, json_frame),
        "send_v2_rocketmq_ops_per_s": send(binary_request, binary_decoder, binary_frame),
        "pull32_decode_ops_per_s": pull_op,
    }


def _rate(op: Callable[[], object], count: int) -> float:
    start = time.perf_counter()
    for _ in range(count):
        op()
    return count / (time.perf_counter() - start)


def _check_alike(inputs: dict) -> None:
    """Both codecs must decode the benchmark inputs to the same values before they are timed."""
    for name in ("json_request", "binary_request"):
        frame = inputs.get(name.replace("request", "frame")) or twin.encode_command(inputs[name])
        assert compiled.encode_command(inputs[name]) == twin.encode_command(inputs[name]), name
        assert compiled.decode_frame(frame[4:]) == twin.decode_frame(frame[4:]), name
    mine, oracle = compiled.decode_store_records(inputs["pull"]), twin.decode_store_records(inputs["pull"])
    assert len(mine) == PULL_COUNT and mine == oracle, "pull32"


def build_inputs(java_inputs: Path | None = None) -> dict:
    inputs = {
        "json_request": send_request(0),
        "binary_request": send_request(1),
        "pull": pull_body(),
    }
    if java_inputs is not None:
        # Decode the bytes Java's encoder wrote instead of our own.
        inputs["json_frame"] = (java_inputs / "send_v2_json.frame").read_bytes()
        inputs["binary_frame"] = (java_inputs / "send_v2_rocketmq.frame").read_bytes()
        inputs["pull"] = (java_inputs / "pull32.body").read_bytes()
    return inputs


def run(iterations: int = 20000, repeats: int = 7, java_inputs: Path | None = None) -> dict:
    """Operations per second of the compiled codec and of the twin (best of ``repeats``).

    ``iterations`` is the loop count of the compiled send ops; the twin runs a
    tenth of it and the pull op an eighth (as Java's pull count), so that each
    repeat takes comparable time.
    """
    inputs = build_inputs(java_inputs)
    implementations = {"twin": twin}
    if compiled is not None:
        _check_alike(inputs)
        implementations["compiled"] = compiled
    loops = {
        "compiled": {op: max(1, iterations // (8 if op.startswith("pull") else 1)) for op in OPS},
        "twin": {op: max(1, iterations // (80 if op.startswith("pull") else 10)) for op in OPS},
    }
    samples: dict[str, dict[str, list[float]]] = {name: {op: [] for op in OPS} for name in implementations}
    operations = {name: _operations(codec, inputs) for name, codec in implementations.items()}
    for name, ops in operations.items():  # warm-up
        for op, function in ops.items():
            _rate(function, max(1, loops[name][op] // 10))
    for _ in range(repeats):  # interleaved, so that machine noise hits both alike
        for op in OPS:
            for name, ops in operations.items():
                samples[name][op].append(_rate(ops[op], loops[name][op]))
    result: dict = {
        "python": platform.python_version(),
        "iterations": iterations,
        "repeats": repeats,
        "inputs": "java" if java_inputs else "python",
        "compiled_import_error": COMPILED_ERROR,
    }
    for name in ("compiled", "twin"):
        if name in samples:
            result[name] = {op: round(max(values), 1) for op, values in samples[name].items()}
            result[name + "_median"] = {op: round(statistics.median(values), 1) for op, values in samples[name].items()}
        else:
            result[name] = None
    result["compiled_vs_twin"] = _ratios(result["compiled"], result["twin"])
    return result


def add_java(result: dict, java: dict | None) -> dict:
    """Put Java's numbers (codec-bench output, or None) and the compiled/java ratios into ``result``."""
    result["java"] = {op: java.get(op) for op in OPS} if java else None
    result["compiled_vs_java"] = _ratios(result.get("compiled"), result["java"])
    return result


def _ratios(numerator: dict | None, denominator: dict | None) -> dict | None:
    if not numerator or not denominator:
        return None
    return {
        op: round(numerator[op] / denominator[op], 2) if denominator.get(op) and numerator.get(op) else None
        for op in OPS
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--java-json", type=Path, help="Java codec-bench output with the same three keys")
    parser.add_argument("--java-inputs", type=Path, help="directory written by codec-bench --dump-inputs")
    args = parser.parse_args(argv)
    result = run(args.iterations, args.repeats, args.java_inputs)
    add_java(result, json.loads(args.java_json.read_text()) if args.java_json else None)
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
