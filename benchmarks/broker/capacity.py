"""The broker capacity benchmark: broker CPU per message, ours against the official Java broker, in one run.

    .venv/bin/python benchmarks/broker/capacity.py [--repeats 2] [--seconds 8] [--warmup 3]
                                                   [--connections 4] [--inflight 1024] [--size 1024]
                                                   [--brokers java,python] [--baseline DIR] [--workers N]
                                                   [--modes single,batch,pull] [--pins one_core,two_cores]

``--baseline DIR`` adds a third broker, "baseline": another build of ours (a checkout in ``DIR`` with its own
``DIR/.venv``, e.g. ``git archive main | tar -x -C DIR`` and ``bash ci/setup.sh`` there), run in the same way
in the same run, so that a change is measured against the code before it on the same machine at the same
time (``--brokers python --baseline DIR`` leaves Java out; ``python_vs_baseline`` ratios in the summary).
``--modes`` and ``--pins`` measure a part of the table alone (``--modes batch --pins two_cores``: batches of 32 on
two cores).

For each repeat and each broker (a fresh store, ASYNC_FLUSH, a topic of 8 queues), with the broker
pinned to core 0 (``taskset``) and then allowed both cores 0-1, with waitTimeMillsInSendQueue raised
to 60 s on both (see BROKER_SETTINGS), ``pipelined_sender.py`` keeps
``--inflight`` requests outstanding on each of ``--connections`` connections, for single sends
(SEND_MESSAGE_V2), batch sends of 32 (SEND_BATCH_MESSAGE) and pulls of 32. The sender runs on core 1
while the broker has core 0 alone, and anywhere when the broker has both; it reports its own CPU, so
one can check it was not the limit. During the single sends a probe times GET_MAX_OFFSET, HEART_BEAT and
QUERY_CONSUMER_OFFSET on a connection of its own (p50/p99; the summary keeps the worst p99 of the repeats). Each broker first gets ``--broker-warmup`` seconds of unmeasured
single and batch sends on both cores, so the JVM has compiled its hot paths before anything is measured. Broker CPU is read from ``/proc/<pid>/stat`` (all threads) over the
measurement window only. Prints one JSON object: every run, then per row the median over the repeats
and the ratios ours/Java (``msgs_per_broker_cpu_s``: above 1 means ours does more per CPU second;
``two_core_gain``: throughput with two cores over one).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "compat-tests"))

from harness import JavaBroker, JavaNameServer, ensure_built, wire  # noqa: E402
from harness.cpu import descendants  # noqa: E402
from harness.py_servers import PythonBroker  # noqa: E402

QUEUES = 8
UPDATE_AND_CREATE_TOPIC = 17
GET_MAX_OFFSET = 30
JAVA_BROKER_JVM = ["-Xms1g", "-Xmx1g", "-XX:MaxDirectMemorySize=1g"]
MODES = ("single", "batch", "pull")
PINS = {"one_core": "0", "two_cores": "0,1"}
#: Both brokers get the same relaxed send-queue limit: with 4096 sends in flight on a loaded machine the
#: default 200 ms would turn most sends into SYSTEM_BUSY answers, and this measures the cost of storing.
BROKER_SETTINGS = {"flushDiskType": "ASYNC_FLUSH", "waitTimeMillsInSendQueue": 60_000}


def _create_topic(broker_addr: str, topic: str) -> None:
    header, _ = wire.request(broker_addr, UPDATE_AND_CREATE_TOPIC, {
        "topic": topic, "defaultTopic": "TBW102", "readQueueNums": str(QUEUES), "writeQueueNums": str(QUEUES),
        "perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false"})
    if header.get("code") != 0:
        raise RuntimeError(f"creating {topic} on {broker_addr} failed: {header}")


def _min_max_offset(broker_addr: str, topic: str) -> int:
    offsets = []
    for queue_id in range(QUEUES):
        header, _ = wire.request(broker_addr, GET_MAX_OFFSET, {"topic": topic, "queueId": str(queue_id)})
        offsets.append(int(header["extFields"]["offset"]))
    return min(offsets)


def _pin(pid: int, cpus: str) -> None:
    """Pin every thread of ``pid`` and of its child processes (our broker's fronts) to ``cpus``."""
    for process in (pid, *descendants(pid)):
        subprocess.run(["taskset", "-a", "-p", "-c", cpus, str(process)], check=True, stdout=subprocess.DEVNULL)


def start_broker(kind: str, namesrv, build, work: Path, args):
    if kind == "java":
        return JavaBroker(namesrv, build=build, workdir=work, broker_name="capacity-java",
                          extra_config=dict(BROKER_SETTINGS), jvm_opts=JAVA_BROKER_JVM).start()
    if kind == "baseline":
        root = Path(args.baseline).resolve()
        return PythonBroker(namesrv.addr, work, broker_name="capacity-baseline", python=str(root / ".venv/bin/python"),
                            root=root, serverWorkerProcesses=args.workers, **BROKER_SETTINGS).start()
    return PythonBroker(namesrv.addr, work, broker_name="capacity-python", serverWorkerProcesses=args.workers,
                        **BROKER_SETTINGS).start()


def run_sender(broker, topic: str, mode: str, pin: str, args, max_offset: int) -> dict:
    command = [sys.executable, str(HERE / "pipelined_sender.py"), "--addr", broker.addr,
               "--broker-pid", str(broker.proc.pid), "--topic", topic, "--mode", mode,
               "--connections", str(args.connections), "--inflight", str(args.inflight), "--size", str(args.size),
               "--queues", str(QUEUES), "--max-offset", str(max_offset), "--warmup", str(args.warmup),
               "--seconds", str(args.seconds)]
    if mode == "single" and args.probe:
        command.append("--probe")
    if pin == "one_core":
        command = ["taskset", "-c", "1", *command]
    done = subprocess.run(command, capture_output=True, text=True, timeout=args.warmup + args.seconds + 120)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"the sender failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(lines[-1])


def run_broker(kind: str, namesrv, build, work: Path, args) -> dict:
    broker = start_broker(kind, namesrv, build, work, args)
    results: dict = {}
    try:
        topic = f"Capacity_{kind}"
        _create_topic(broker.addr, topic)
        time.sleep(1)
        if args.broker_warmup > 0:
            print(f"[capacity] {kind} warming up for {args.broker_warmup:g} s per mode ...", file=sys.stderr, flush=True)
            warmup = argparse.Namespace(**dict(vars(args), warmup=args.broker_warmup, seconds=1.0, probe=False))
            for mode in ("single", "batch"):
                run_sender(broker, topic, mode, "two_cores", warmup, 0)
        for pin in args.pins:
            _pin(broker.proc.pid, PINS[pin])
            results[pin] = {}
            for mode in args.modes:
                max_offset = _min_max_offset(broker.addr, topic) if mode == "pull" else 0
                print(f"[capacity] {kind} {pin} {mode} ...", file=sys.stderr, flush=True)
                results[pin][mode] = run_sender(broker, topic, mode, pin, args, max_offset)
                print(f"[capacity]   {json.dumps(results[pin][mode])}", file=sys.stderr, flush=True)
    finally:
        broker.stop()
        # Each run leaves gigabytes of store files: a second repeat must not find the disk full.
        shutil.rmtree(work, ignore_errors=True)
    return results


def _median(runs: list[dict], pin: str, mode: str, key: str) -> float | None:
    values = [run[pin][mode][key] for run in runs if run[pin][mode].get(key) is not None]
    return round(statistics.median(values), 2) if values else None


def summary(runs: dict[str, list[dict]], pins: list[str], modes: list[str]) -> dict:
    """The medians and ratios of each of ``pins`` x ``modes``, the runs measured."""
    table: dict = {}
    for pin in pins:
        for mode in modes:
            row = {}
            for kind, broker_runs in runs.items():
                for key in ("broker_cpu_us_per_msg", "msgs_per_broker_cpu_s", "msgs_per_s", "sender_cpu_us_per_msg",
                            "broker_process_cpu_us_per_msg", "fronts_cpu_us_per_msg",
                            "broker_main_thread_cpu_us_per_msg"):
                    if kind == "java" and key == "broker_main_thread_cpu_us_per_msg":
                        continue  # the JVM's main thread only waits: its work is on threads of its own
                    row[f"{kind}_{key}"] = _median(broker_runs, pin, mode, key)
                row[f"{kind}_system_busy"] = sum(run[pin][mode]["system_busy"] for run in broker_runs)
                probes = [run[pin][mode]["probe_latency"] for run in broker_runs if "probe_latency" in run[pin][mode]]
                if probes:
                    row[f"{kind}_probe_p99_ms"] = {name: max(p[name]["p99_ms"] or 0 for p in probes)
                                                   for name in probes[0]}
            if row.get("java_msgs_per_broker_cpu_s") and row.get("python_msgs_per_broker_cpu_s"):
                row["python_vs_java_msgs_per_cpu_s"] = round(
                    row["python_msgs_per_broker_cpu_s"] / row["java_msgs_per_broker_cpu_s"], 3)
            if row.get("java_msgs_per_s") and row.get("python_msgs_per_s"):
                row["python_vs_java_msgs_per_s"] = round(row["python_msgs_per_s"] / row["java_msgs_per_s"], 3)
            if row.get("baseline_msgs_per_broker_cpu_s") and row.get("python_msgs_per_broker_cpu_s"):
                row["python_vs_baseline_msgs_per_cpu_s"] = round(
                    row["python_msgs_per_broker_cpu_s"] / row["baseline_msgs_per_broker_cpu_s"], 3)
            table[f"{pin}/{mode}"] = row
    if pins != list(PINS):
        return table  # the two-core gain needs both
    for kind in runs:
        for mode in modes:
            one = table[f"one_core/{mode}"].get(f"{kind}_msgs_per_s")
            two = table[f"two_cores/{mode}"].get(f"{kind}_msgs_per_s")
            table[f"two_cores/{mode}"][f"{kind}_two_core_gain"] = round(two / one, 3) if one and two else None
    return table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--inflight", type=int, default=1024)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--brokers", default="java,python")
    parser.add_argument("--baseline", metavar="DIR",
                        help="also run the build checked out in DIR (with its own DIR/.venv) as broker 'baseline'")
    parser.add_argument("--workers", type=int, default=0,
                        help="our broker's front processes (serverWorkerProcesses); their CPU counts as the broker's")
    parser.add_argument("--no-probe", dest="probe", action="store_false",
                        help="do not time GET_MAX_OFFSET, HEART_BEAT and QUERY_CONSUMER_OFFSET during single sends")
    parser.add_argument("--broker-warmup", type=float, default=15.0,
                        help="seconds of unmeasured single and batch sends after each broker starts (the JIT)")
    parser.add_argument("--modes", default=",".join(MODES),
                        help=f"the requests to measure, comma-separated, of {','.join(MODES)} (e.g. batch alone; "
                             "pulls read what the warm-up stored)")
    parser.add_argument("--pins", default=",".join(PINS),
                        help=f"the broker's cores to measure with, comma-separated, of {','.join(PINS)}")
    args = parser.parse_args()
    args.modes = [mode for mode in MODES if mode in args.modes.split(",")]
    args.pins = [pin for pin in PINS if pin in args.pins.split(",")]
    if not args.modes or not args.pins:
        raise SystemExit(f"--modes takes {','.join(MODES)} and --pins takes {','.join(PINS)}")
    if "pull" in args.modes and args.broker_warmup <= 0:
        parser.error("--modes pull reads what the warm-up's sends stored: give --broker-warmup more than 0")
    if (os.cpu_count() or 1) < 2:
        raise SystemExit("the capacity benchmark needs two cores (the broker on one, the sender on the other)")

    build = ensure_built()
    kinds = args.brokers.split(",") + (["baseline"] if args.baseline else [])
    if args.baseline and not (Path(args.baseline) / ".venv/bin/python").exists():
        raise SystemExit(f"--baseline {args.baseline}: no .venv/bin/python there (run bash ci/setup.sh in it)")
    runs: dict[str, list[dict]] = {kind: [] for kind in kinds}
    with tempfile.TemporaryDirectory(prefix="broker-capacity-") as work:
        namesrv = JavaNameServer(build=build, workdir=Path(work) / "namesrv").start()
        try:
            for repeat in range(args.repeats):
                # Every other repeat in the other order, so that a load that drifts during the run weighs on both.
                for kind in (kinds if repeat % 2 == 0 else kinds[::-1]):
                    runs[kind].append(run_broker(kind, namesrv, build, Path(work) / f"{kind}-{repeat}", args))
        finally:
            namesrv.stop()
    from rocketmq_py import codec

    load = os.getloadavg()
    output = {
        "benchmark": "broker capacity: pipelined sender, broker CPU per message from /proc/<pid>/stat",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": platform.platform(),
        "cpus": os.cpu_count(), "load_average_at_end": load, "connections": args.connections,
        "python_workers": args.workers,
        "inflight_per_connection": args.inflight, "message_size": args.size, "queues": QUEUES,
        "batch": 32, "seconds": args.seconds, "repeats": args.repeats, "python_codec": codec.IMPLEMENTATION,
        "summary": summary(runs, args.pins, args.modes), "runs": runs,
    }
    print(json.dumps(output, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
