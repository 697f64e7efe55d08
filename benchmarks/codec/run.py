"""The codec benchmark, Python and Java in one run; prints one JSON object with the ratios.

    .venv/bin/python benchmarks/codec/run.py [--iterations N] [--repeats R]

1. Java's own codec: the ``codec-bench`` peer (compat-tests/java) measures SEND_MESSAGE_V2
   encode+decode in JSON and ROCKETMQ serialization and the decoding of a 32-record pull body,
   after JIT warm-up, and writes the exact bytes it used.
2. The compiled codec and its pure-Python twin (bench_codec.py) measure the same operations,
   decoding the bytes Java wrote.
3. Because Java's send operation also builds and parses the SendMessageRequestHeaderV2 object,
   ``send_v2_*_with_header`` measures the same full path in Python, through the producer's and the
   broker's own calls: header object and request, frame, and back to the header object.
   ``compiled_vs_java_like_for_like`` compares those.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "compat-tests"))
sys.path.insert(0, str(HERE))

import bench_codec  # noqa: E402
from harness import ensure_built, run_peer  # noqa: E402

from rocketmq_py.remoting.command import create_request  # noqa: E402
from rocketmq_py.common.headers.send import SendMessageRequestHeaderV2  # noqa: E402

HEADER_OPS = {"send_v2_json_ops_per_s": 0, "send_v2_rocketmq_ops_per_s": 1}


def header_path_rates(codec, iterations: int, repeats: int) -> dict[str, float]:
    """Ops/s of header object -> frame -> header object, as Java's send op does it.

    Each step is the one the producer and the broker take: the message's properties written to their
    string and the header built as the producer builds it (positionally; Java's op also makes the
    properties map and string each time), a request from ``create_request`` carrying it as its custom
    header (a fresh opaque, as Java's constructor takes one), ``encode_command`` writing its fields
    straight into the frame, ``FrameDecoder.feed`` and ``from_command``, as the broker's send
    processor reads it.
    """
    rates = {}
    for op, serialize_type in HEADER_OPS.items():
        decoder = codec.FrameDecoder()

        def once() -> SendMessageRequestHeaderV2:
            properties = codec.properties_to_string(bench_codec.send_properties())
            header = SendMessageRequestHeaderV2(
                bench_codec.GROUP, bench_codec.TOPIC, "TBW102", 4, 0, 0, bench_codec.BORN_TS, 0, properties, 0, False,
                None, False, bench_codec.BROKER)
            command = create_request(bench_codec.SEND_MESSAGE_V2, None, bench_codec.BODY,
                                     serialize_type=serialize_type, custom_header=header)
            [decoded] = decoder.feed(codec.encode_command(command))
            return SendMessageRequestHeaderV2.from_command(decoded)

        check = once()
        assert (check.topic, check.born_timestamp, check.broker_name) == (
            bench_codec.TOPIC, bench_codec.BORN_TS, bench_codec.BROKER)
        bench_codec._rate(once, max(1, iterations // 10))
        rates[op.replace("_ops_per_s", "_with_header_ops_per_s")] = round(
            max(bench_codec._rate(once, iterations) for _ in range(repeats)), 1)
    return rates


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--java-iterations", type=int, default=100000)
    args = parser.parse_args()

    ensure_built()
    with tempfile.TemporaryDirectory(prefix="codec-bench-") as inputs:
        [java] = run_peer("codec-bench", "--iterations", str(args.java_iterations),
                          "--warmup", str(args.java_iterations // 5), "--dump-inputs", inputs, timeout=600)
        result = bench_codec.run(args.iterations, args.repeats, java_inputs=Path(inputs))
    bench_codec.add_java(result, java)

    if bench_codec.compiled is not None:
        full = header_path_rates(bench_codec.compiled, args.iterations // 4, args.repeats)
        result["compiled_with_header"] = full
        result["compiled_vs_java_like_for_like"] = {
            op: round(full[op.replace("_ops_per_s", "_with_header_ops_per_s")] / java[op], 2)
            for op in HEADER_OPS
        }
        result["compiled_vs_java_like_for_like"]["pull32_decode_ops_per_s"] = \
            result["compiled_vs_java"]["pull32_decode_ops_per_s"]
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
