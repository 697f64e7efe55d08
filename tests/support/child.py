"""How a test starts a child Python that must import the same rocketmq_py as the suite.

In the checkout the child gets the checkout on PYTHONPATH. When the suite tests an installed wheel
(``ROCKETMQ_PY_EXPECT_INSTALLED=1``, ci/wheel.sh), nothing may point the child at the checkout: its compiled
modules are built for the Python of .venv, not for the one under test, and the child would test the checkout
rather than the wheel. Such a child also starts outside the checkout's root, which ``python -c`` and
``python -m`` put first on sys.path.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
INSTALLED = os.environ.get("ROCKETMQ_PY_EXPECT_INSTALLED") == "1"


def child_env(base: Mapping[str, str] | None = None, **extra: str) -> dict[str, str]:
    """``base`` (default: this process's environment) and ``extra``, with the checkout on PYTHONPATH unless the
    suite tests an installed wheel."""
    env = dict(os.environ if base is None else base, **extra)
    if INSTALLED:
        env.pop("PYTHONPATH", None)
    else:
        env["PYTHONPATH"] = str(ROOT)
    return env


def child_cwd() -> Path:
    """Where a child that imports rocketmq_py from its current folder starts: the checkout's root, or the
    tests folder (which holds no package of that name) when the suite tests an installed wheel."""
    return TESTS if INSTALLED else ROOT
