"""Import time of our producer and consumer next to aiokafka's, measured with ``python -X importtime``.

    .venv/bin/pip install aiokafka     # for this measurement only; not a dependency
    .venv/bin/python benchmarks/imports/import_time.py [--runs 15]

Each run is a fresh interpreter importing one client's producer and consumer classes; the runs of both
alternate, so a loaded machine slows both alike. The import time of a run is the sum of the cumulative
times of its top-level imports as ``-X importtime`` reports them (the interpreter's own start-up, the same
for both, is left out). Each client is imported once before the runs with bytecode writing on, so both load
from ``.pyc`` files as an installed package does (even when ``PYTHONDONTWRITEBYTECODE`` is set). A second
figure, the wall-clock time of the import statement in a fresh interpreter without ``-X importtime``, checks
the first: it also counts what ``-X importtime`` does not see (``importlib.import_module`` calls).
Prints JSON: the median, min and max milliseconds of each, the wall-clock median, and the ratios ours / aiokafka
(of the medians, of the minimums, of the wall-clock medians).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

STATEMENTS = {
    "rocketmq_py": "from rocketmq_py import Producer, AsyncProducer, PushConsumer, AsyncPushConsumer, "
                   "LitePullConsumer, AsyncLitePullConsumer, Message",
    "aiokafka": "from aiokafka import AIOKafkaProducer, AIOKafkaConsumer",
}


def import_ms(statement: str) -> float:
    result = subprocess.run([sys.executable, "-X", "importtime", "-c", statement], capture_output=True, text=True,
                            check=True)
    total_us = 0
    baseline = {line for line in _startup_lines()}
    for line in result.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _self, cumulative, name = line[len("import time:"):].split("|")
        if name.startswith(" ") and not name.startswith("  ") and name.strip() not in baseline:
            total_us += int(cumulative)
    return total_us / 1000.0


def wall_ms(statement: str) -> float:
    code = f"import time\nstarted = time.perf_counter()\n{statement}\nprint(time.perf_counter() - started)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(result.stdout) * 1000.0


def write_bytecode(statement: str) -> None:
    """Import once with bytecode writing on, so the measured runs read ``.pyc`` files."""
    env = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-c", statement], env=env, check=True)


_STARTUP: list[str] = []


def _startup_lines() -> list[str]:
    """The top-level modules the interpreter imports before any statement (site, encodings, ...)."""
    if not _STARTUP:
        result = subprocess.run([sys.executable, "-X", "importtime", "-c", "pass"], capture_output=True, text=True,
                                check=True)
        for line in result.stderr.splitlines():
            if line.startswith("import time:") and "cumulative" not in line:
                name = line.split("|")[2]
                if name.startswith(" ") and not name.startswith("  "):
                    _STARTUP.append(name.strip())
    return _STARTUP


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    for statement in STATEMENTS.values():
        write_bytecode(statement)
    samples: dict[str, list[float]] = {name: [] for name in STATEMENTS}
    walls: dict[str, list[float]] = {name: [] for name in STATEMENTS}
    for _ in range(runs):
        for name, statement in STATEMENTS.items():
            samples[name].append(import_ms(statement))
            walls[name].append(wall_ms(statement))
    report: dict[str, object] = {
        name: {"median_ms": round(statistics.median(values), 1), "min_ms": round(min(values), 1),
               "max_ms": round(max(values), 1), "wall_median_ms": round(statistics.median(walls[name]), 1),
               "statement": STATEMENTS[name]}
        for name, values in samples.items()}
    ours, theirs = samples["rocketmq_py"], samples["aiokafka"]
    report["ratio_median_ours_over_aiokafka"] = round(statistics.median(ours) / statistics.median(theirs), 2)
    report["ratio_min_ours_over_aiokafka"] = round(min(ours) / min(theirs), 2)
    report["ratio_wall_median_ours_over_aiokafka"] = round(
        statistics.median(walls["rocketmq_py"]) / statistics.median(walls["aiokafka"]), 2)
    report["python"] = sys.version.split()[0]
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
