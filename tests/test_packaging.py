"""The Pythons the package claims are the ones CI tests (ci/pythons.sh), as the installed metadata says them."""
from __future__ import annotations

import re
import sys
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _supported() -> list[str]:
    line = re.search(r'^SUPPORTED_PYTHONS="([^"]+)"', (ROOT / "ci" / "pythons.sh").read_text(), re.M)
    assert line is not None
    return line.group(1).split()


def test_the_claimed_pythons_are_the_tested_ones():
    supported = _supported()
    claimed = metadata.metadata("rocketmq-py")
    classified = [c.rsplit(" :: ", 1)[1] for c in claimed.get_all("Classifier") or []
                  if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)]
    assert classified == supported
    assert claimed["Requires-Python"] == f">={supported[0]}"
    wheels = re.search(r'^build = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)
    assert wheels is not None and wheels.group(1).split() == [f"cp{v.replace('.', '')}-*" for v in supported]


def test_this_python_is_one_of_them():
    assert "%d.%d" % sys.version_info[:2] in _supported()
