"""Fixtures shared by the test suite; every compiled module is tested with its pure-Python twin.

``twins("rocketmq_py.store._layout")`` is the one way a test reaches a compiled module and its twin, side by
side: differential tests feed both the same input, and ``codec_impl`` (and the like in test modules) runs a
test on each. The compiled side must import when ``ROCKETMQ_PY_REQUIRE_EXTENSIONS=1``, else the test fails, so
that a broken build can never pass as "twin only"; in any other run a compiled module that does not import
skips the test with the import error as the reason.
"""
from __future__ import annotations

import functools
import importlib
import os
from types import ModuleType

import pytest

EXTENSIONS_REQUIRED = os.environ.get("ROCKETMQ_PY_REQUIRE_EXTENSIONS") == "1"


def pytest_configure(config):
    # ci/wheel.sh runs this suite against the installed wheel: make sure it really is the wheel.
    if os.environ.get("ROCKETMQ_PY_EXPECT_INSTALLED") == "1":
        import rocketmq_py

        if "site-packages" not in rocketmq_py.__file__:
            raise pytest.UsageError(f"rocketmq_py comes from {rocketmq_py.__file__}, not from an installed wheel")


# --- twins: each compiled module and its pure-Python twin ---------------------------------------------

#: Each compiled module and its twin, named by the rule ``pkg/_name.pyx`` <-> ``pkg/_name_py.py``; the selector
#: ``pkg/name.py`` chooses one of them at run time.
TWIN_PAIRS = {
    "rocketmq_py._codec": "rocketmq_py._codec_py",
    "rocketmq_py.store._layout": "rocketmq_py.store._layout_py",
    "rocketmq_py.store._read_path": "rocketmq_py.store._read_path_py",
    "rocketmq_py.store._write_path": "rocketmq_py.store._write_path_py",
    "rocketmq_py.broker._send_fast": "rocketmq_py.broker._send_fast_py",
    "rocketmq_py.broker._place_messages": "rocketmq_py.broker._place_messages_py",
}


@functools.cache
def _import_compiled(name: str) -> ModuleType | ImportError:
    try:
        return importlib.import_module(name)
    except ImportError as error:
        return error


class Twins:
    """A compiled module (``compiled``) and its twin (``twin``); ``side("twin")`` or ``side("compiled")``."""

    def __init__(self, compiled_name: str) -> None:
        self.compiled_name = compiled_name
        self.twin = importlib.import_module(TWIN_PAIRS[compiled_name])

    @property
    def compiled(self) -> ModuleType:
        """The compiled module; when it does not import, the test fails under ROCKETMQ_PY_REQUIRE_EXTENSIONS=1
        and is skipped, with the import error as the reason, in any other run."""
        module = _import_compiled(self.compiled_name)
        if isinstance(module, ModuleType):
            return module
        reason = f"the compiled {self.compiled_name} did not import: {module}"
        if EXTENSIONS_REQUIRED:
            pytest.fail(f"{reason} (ROCKETMQ_PY_REQUIRE_EXTENSIONS=1)", pytrace=False)
        pytest.skip(reason)

    def side(self, name: str) -> ModuleType:
        """``twin`` or ``compiled``: the params of a fixture that runs a test once on each side."""
        if name == "twin":
            return self.twin
        if name == "compiled":
            return self.compiled
        raise ValueError(f"a side is 'twin' or 'compiled', not {name!r}")


@pytest.fixture(scope="session")
def twins():
    """``twins("rocketmq_py.store._layout")``: that compiled module and its twin (see :class:`Twins`)."""
    return Twins


@pytest.fixture(scope="session", params=["twin", "compiled"])
def codec_impl(request, twins):
    """One codec implementation: the twin, then the compiled module."""
    return twins("rocketmq_py._codec").side(request.param)


@pytest.fixture(scope="session")
def twin(twins):
    """The codec's twin."""
    return twins("rocketmq_py._codec").twin


@pytest.fixture(scope="session")
def compiled(twins):
    """The compiled codec."""
    return twins("rocketmq_py._codec").compiled


@pytest.fixture(scope="session")
def expected_implementation():
    """``expected_implementation("rocketmq_py.store._write_path")``: the IMPLEMENTATION a selector must report in
    this run, "python" or "cython". The twin under ``ROCKETMQ_PY_NO_EXTENSIONS=1``; else the compiled module
    when it imports, and the twin when it does not, which fails the test when ``ROCKETMQ_PY_REQUIRE_EXTENSIONS=1``
    (so that the check asserts something in every run, a plain local one included)."""

    def expected(compiled: str) -> str:
        if os.environ.get("ROCKETMQ_PY_NO_EXTENSIONS") == "1":
            return "python"
        if isinstance(_import_compiled(compiled), ModuleType):
            return "cython"
        if EXTENSIONS_REQUIRED:
            Twins(compiled).compiled  # fails the test with the import error
        return "python"

    return expected
