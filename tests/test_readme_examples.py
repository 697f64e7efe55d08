"""The README's self-contained Python examples run as written (the ones that need a running name
server or broker are exercised by the compatibility suite instead)."""
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
SELF_CONTAINED = [block for block in BLOCKS if "127.0.0.1:9876" not in block and "NAMESRV" not in block]


def test_readme_has_self_contained_examples():
    assert len(SELF_CONTAINED) >= 2


@pytest.mark.parametrize("block", SELF_CONTAINED, ids=lambda block: block.splitlines()[0][:40])
def test_readme_example_runs(block, tmp_path):
    script = tmp_path / "example.py"
    script.write_text(block)
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
