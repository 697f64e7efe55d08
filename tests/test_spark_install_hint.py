"""``import pyspark_rocketmq`` without pyspark names the extra to install (issue 14)."""
from __future__ import annotations

import subprocess
import sys
import textwrap


def test_import_without_pyspark_gives_the_install_command(tmp_path):
    # A meta-path finder that hides pyspark, as on a machine where the spark extra is not installed.
    script = textwrap.dedent("""
        import importlib.abc, sys
        class Hide(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name == "pyspark" or name.startswith("pyspark."):
                    raise ModuleNotFoundError(f"No module named {name!r}", name=name)
                return None
        sys.meta_path.insert(0, Hide())
        import rocketmq_py.spark  # needs no pyspark
        for module in ("pyspark_rocketmq", "pyspark_rocketmq_store"):
            try:
                __import__(module)
            except ModuleNotFoundError as error:
                print(error.name, "|", error)
            else:
                print("imported")
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 2
    for line in lines:
        assert line.startswith("pyspark |"), line
        assert "pip install 'rocketmq-py[spark]'" in line
