"""Where our broker process's CPU goes when its fronts serve the sends: per thread, per function, per symbol.

    .venv/bin/python benchmarks/broker/fronts_profile.py [--workers 2] [--modes batch,single] [--seconds 8]
                                                         [--warmup 3] [--cprofile] [--perf] [--perf-fronts]
                                                         [--top 25]

For each mode, our name server and a fresh broker with ``--workers`` front processes (ASYNC_FLUSH, the
send-queue limit of capacity.py, both cores) take capacity.py's pipelined sender (``--connections`` x
``--inflight`` sends of ``--size`` bytes, batches of 32, or pulls of 32 of what a second of unmeasured batch
sends stored first) for ``--warmup`` then ``--seconds`` seconds. The
sender reports, over the window, the CPU per message of the broker process, of its main thread (the event
loop: the fronts' channels, the placement) and of the fronts, from /proc.

``--cprofile`` runs the broker process under cProfile (the main thread; the profile covers the broker's whole
life, start and warm-up included, so read its shares, and its calls per message as an upper bound) and prints
the ``--top`` functions by own time, in µs per message of the window's count. cProfile's own cost per Python
call inflates Python-level functions against C ones: take the shares as an order, not as figures.

``--perf`` samples the broker process (all its threads) with ``perf record`` over the window and prints the
share of each thread with its top symbols (the prefault thread shows as the kernel's zeroing), the main
thread's share in page faults, system calls and user space, and its ``--top`` symbols, the kernel's included;
``--perf-dir`` keeps the data for ``perf report``. ``--perf-fronts`` samples the front processes instead (all of
them, as one), and prints the ``--top`` symbols of their samples: where a front's CPU goes (the interpreter, the
compiled fast path, the kernel's socket reads and writes). Needs ``perf`` and a perf_event_paranoid that lets
this user sample.

Prints one JSON object. The machine's load moves these figures: it is in the output (``loadavg``).
"""
from __future__ import annotations

import argparse
import io
import json
import os
import pstats
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "compat-tests"))

from capacity import BROKER_SETTINGS, _create_topic, _min_max_offset, run_sender  # noqa: E402
from harness.py_servers import PythonBroker, PythonNameServer  # noqa: E402


def _wrapper(work: Path, profile: Path) -> str:
    """An interpreter that runs its arguments under cProfile, writing ``profile`` at exit (a clean stop)."""
    script = work / "python-cprofile"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m cProfile -o "{profile}" "$@"\n')
    script.chmod(0o755)
    return str(script)


def _front_pids(pid: int) -> list[int]:
    """The broker's front processes: its child processes."""
    children: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        children.extend(int(child) for child in (task / "children").read_text().split())
    return children


def _perf_record(pids: Callable[[], list[int]], delay_s: float, seconds: float, output: Path) -> threading.Thread:
    """Sample the processes ``pids()`` names after ``delay_s`` (the sender's warm-up), for ``seconds``."""
    def record() -> None:
        time.sleep(delay_s)
        targets = ",".join(map(str, pids()))
        subprocess.run(["perf", "record", "-q", "-F", "999", "-g", "-p", targets, "-o", str(output), "--",
                        "sleep", str(seconds)], check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    thread = threading.Thread(target=record, daemon=True)
    thread.start()
    return thread


def _perf_split(data: Path, main_tid: int, top: int) -> dict:
    """The samples of ``data`` by thread (each with its top symbols), the main thread's top symbols, and the
    main thread's share in page faults, system calls and the rest. Read from ``perf script`` (the sampled
    stacks), since ``perf report``'s thread filter and sort keys differ between perf versions."""
    done = subprocess.run(["perf", "script", "-i", str(data)], capture_output=True, text=True)
    threads: Counter[int] = Counter()
    symbols: dict[int, Counter[str]] = defaultdict(Counter)
    main_kinds: Counter[str] = Counter()
    for sample in done.stdout.split("\n\n"):
        lines = [line.strip() for line in sample.strip().splitlines()]
        if len(lines) < 2 or len(lines[0].split()) < 2 or not lines[0].split()[1].isdigit():
            continue
        tid = int(lines[0].split()[1])
        frame = lines[1].split(None, 1)[-1]
        symbol = frame.split("+0x")[0] + ("  [kernel]" if "kernel.kallsyms" in frame else "")
        threads[tid] += 1
        symbols[tid][symbol] += 1
        if tid == main_tid:
            stack = " ".join(lines[1:])
            main_kinds["page faults" if "exc_page_fault" in stack else "system calls" if "entry_SYSCALL" in stack
                       else "interrupts" if "asm_sysvec" in stack or "asm_common_interrupt" in stack
                       else "user space"] += 1
    total = sum(threads.values()) or 1
    main_total = threads[main_tid] or 1
    return {
        "samples": total,
        "threads": [f"{count / total:6.1%}  {'main' if tid == main_tid else tid}: "
                    + ", ".join(f"{name} {n / count:.0%}" for name, n in symbols[tid].most_common(3))
                    for tid, count in threads.most_common()],
        "main_thread_by_kind": {kind: f"{n / main_total:.1%}" for kind, n in main_kinds.most_common()},
        "main_thread_symbols": [f"{n / main_total:6.1%}  {name}" for name, n in symbols[main_tid].most_common(top)],
    }


def _perf_top(data: Path, top: int, sort: str, *extra: str) -> list[str]:
    if not data.exists():
        raise SystemExit(f"perf record wrote no {data}: is perf_event_paranoid too high for this user?")
    done = subprocess.run(["perf", "report", "-i", str(data), "--stdio", "--no-children", "-g", "none",
                           "--sort", sort, "--percent-limit", "0.5", *extra], capture_output=True, text=True)
    lines = [line.strip() for line in done.stdout.splitlines() if line.strip() and not line.startswith("#")]
    return lines[:top]


def _cprofile_top(profile: Path, messages: int, top: int) -> list[str]:
    stats = pstats.Stats(str(profile), stream=io.StringIO())
    rows = []
    for (filename, line, name), (_, calls, own, cumulative, _) in stats.stats.items():  # type: ignore[attr-defined]
        rows.append((own, calls, cumulative, f"{Path(filename).name}:{line}({name})"))
    rows.sort(reverse=True)
    total = sum(row[0] for row in rows)
    return [f"{own * 1e6 / messages:7.3f} us/msg own ({own / total:5.1%}), {cumulative * 1e6 / messages:7.3f} cum, "
            f"{calls / messages:8.4f} calls/msg  {where}" for own, calls, cumulative, where in rows[:top]]


def profile_mode(mode: str, namesrv: PythonNameServer, work: Path, args: argparse.Namespace) -> dict:
    profile = work / f"broker-{mode}.prof"
    python = _wrapper(work, profile) if args.cprofile else None
    broker = PythonBroker(namesrv.addr, work / f"broker-{mode}", broker_name=f"profile-{mode}", python=python,
                          serverWorkerProcesses=args.workers, **BROKER_SETTINGS).start()
    result: dict = {}
    try:
        topic = f"Profile_{mode}"
        _create_topic(broker.addr, topic)
        max_offset = 0
        if mode == "pull":  # the pulls read what batch sends stored first, unmeasured
            run_sender(broker, topic, "batch", "two_cores", argparse.Namespace(**dict(vars(args), seconds=1.0)), 0)
            max_offset = _min_max_offset(broker.addr, topic)
        recorder = None
        perf_data = Path(args.perf_dir or work) / f"perf-{mode}.data"
        perf_data.parent.mkdir(parents=True, exist_ok=True)
        if args.perf_fronts:
            recorder = _perf_record(lambda: _front_pids(broker.proc.pid), args.warmup, args.seconds, perf_data)
        elif args.perf:
            recorder = _perf_record(lambda: [broker.proc.pid], args.warmup, args.seconds, perf_data)
        sent = run_sender(broker, topic, mode, "two_cores", args, max_offset)
        result["sender"] = sent
        if recorder is not None and args.perf_fronts:
            recorder.join()
            result["perf_fronts"] = _perf_top(perf_data, args.top, "dso,sym")
        elif recorder is not None:
            recorder.join()
            # By thread first (the main thread's id is the process's), then the symbols of each part.
            result["perf"] = _perf_split(perf_data, broker.proc.pid, args.top)
    finally:
        broker.stop()
    if args.cprofile:
        result["cprofile_top"] = _cprofile_top(profile, max(1, sent["messages"]), args.top)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--modes", default="batch,single")
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--inflight", type=int, default=1024)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--cprofile", action="store_true", help="run the broker process under cProfile")
    parser.add_argument("--perf", action="store_true", help="sample the broker process with perf record")
    parser.add_argument("--perf-fronts", action="store_true", help="sample the front processes with perf record")
    parser.add_argument("--perf-dir", help="keep perf's data files here (perf report -i DIR/perf-MODE.data)")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    args.probe = False
    if (args.perf or args.perf_fronts) and shutil.which("perf") is None:
        raise SystemExit("--perf: no perf on this machine")
    results = {}
    with tempfile.TemporaryDirectory(prefix="fronts-profile-") as directory:
        work = Path(directory)
        namesrv = PythonNameServer(work / "namesrv").start()
        try:
            for mode in args.modes.split(","):
                results[mode] = profile_mode(mode, namesrv, work, args)
        finally:
            namesrv.stop()
    print(json.dumps({"workers": args.workers, "loadavg": os.getloadavg(),
                      "modes": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
