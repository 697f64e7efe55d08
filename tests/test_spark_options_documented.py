"""Every option of the Spark guide's options table (docs/spark.md) appears in a Spark test (issue 14).

A documented option that no test uses is a defect: this reads the table's first column and looks
for each name, quoted or as a keyword argument, in the Spark test files.
"""
from __future__ import annotations

import re
from pathlib import Path

from rocketmq_py.spark.options import KNOWN_OPTIONS

ROOT = Path(__file__).resolve().parent.parent
SPARK_TESTS = sorted([*ROOT.glob("compat-tests/test_spark_*.py"), *ROOT.glob("tests/test_spark_*.py")])


def documented_options() -> list[str]:
    names = []
    for line in (ROOT / "docs" / "spark.md").read_text().splitlines():
        if line.startswith("| `"):
            first_cell = line.split("|")[1]
            names.extend(re.findall(r"`([A-Za-z.]+)`", first_cell))
    return names


def test_the_table_is_found_and_names_only_known_options():
    names = documented_options()
    assert len(names) >= 20, names
    assert sorted(n for n in names if n.lower() not in KNOWN_OPTIONS) == []
    assert sorted(set(KNOWN_OPTIONS) - {n.lower() for n in names} - {"rocketmq.namesrvaddr"}) == [], \
        "an option the source takes is missing from the table of docs/spark.md"


def test_every_documented_option_appears_in_a_spark_test():
    sources = {path.name: path.read_text() for path in SPARK_TESTS if path.name != Path(__file__).name}
    missing = []
    for name in documented_options():
        used = re.compile(rf"""["']{re.escape(name)}["']|\b{re.escape(name)}=""")
        if not any(used.search(text) for text in sources.values()):
            missing.append(name)
    assert missing == [], f"documented in docs/spark.md but used by no Spark test: {missing}"
