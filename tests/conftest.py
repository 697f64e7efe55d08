"""Fixtures shared by the test suite: every codec test runs against both implementations.

``codec_impl`` is parametrized over the pure-Python twin (``_codec_py``) and
the compiled extension (``_codec``). When the extension does not import, its
parameter is skipped with the import error as the reason, unless
``ROCKETMQ_PY_REQUIRE_EXTENSIONS=1``: then the test fails, so that a broken
build can never pass as "twin only".

``twin_pending(name)`` tells whether the twin still has a known bug that was
reported with its fix (see ``PENDING_TWIN_FIXES``); the compiled module
implements the fixed behaviour, and tests mark the twin's case xfail only
while the probe still sees the bug, so they tighten by themselves once the
fix lands.
"""
from __future__ import annotations

import array
import functools
import importlib
import os
import struct
import zlib

import pytest

from rocketmq_py import _codec_py
from rocketmq_py.errors import CodecError

EXTENSIONS_REQUIRED = os.environ.get("ROCKETMQ_PY_REQUIRE_EXTENSIONS") == "1"


def _import_compiled():
    try:
        return importlib.import_module("rocketmq_py._codec"), None
    except ImportError as error:
        return None, error


COMPILED, COMPILED_IMPORT_ERROR = _import_compiled()


def pytest_configure(config):
    # ci/wheel.sh runs this suite against the installed wheel: make sure it really is the wheel.
    if os.environ.get("ROCKETMQ_PY_EXPECT_INSTALLED") == "1":
        import rocketmq_py

        if "site-packages" not in rocketmq_py.__file__:
            raise pytest.UsageError(f"rocketmq_py comes from {rocketmq_py.__file__}, not from an installed wheel")


def compiled_codec():
    """The compiled module, or skip (fail when required) with the import error."""
    if COMPILED is not None:
        return COMPILED
    reason = f"compiled rocketmq_py._codec did not import: {COMPILED_IMPORT_ERROR}"
    if EXTENSIONS_REQUIRED:
        pytest.fail(reason + " (ROCKETMQ_PY_REQUIRE_EXTENSIONS=1)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session", params=["python", "cython"])
def codec_impl(request):
    """One codec implementation: the twin, then the compiled module."""
    if request.param == "python":
        return _codec_py
    return compiled_codec()


@pytest.fixture(scope="session")
def twin():
    return _codec_py


@pytest.fixture(scope="session")
def compiled():
    return compiled_codec()


# --- known twin bugs, reported with their fixes -----------------------------------------------


def _accepts_truncated_zlib() -> bool:
    try:
        _codec_py.decompress(zlib.compress(b"rocketmq " * 200)[:-6], _codec_py.COMPRESSION_ZLIB)
    except CodecError:
        return False
    return True


def _keeps_value_before_empty_duplicate() -> bool:
    ext = b"".join((
        struct.pack(">h", 1), b"a", struct.pack(">i", 1), b"1",
        struct.pack(">h", 1), b"a", struct.pack(">i", 0),
    ))
    header = struct.pack(">hbhiiii", 10, 0, 409, 1, 0, 0, len(ext)) + ext
    return _codec_py.decode_rocketmq_header(header).ext_fields == {"a": "1"}


def _rejects_memoryview_header() -> bool:
    try:
        _codec_py.decode_json_header(memoryview(b'{"code":1}'))
    except AttributeError:
        return True
    return False


def _miscounts_item_body() -> bool:
    from rocketmq_py._codec_types import RemotingCommand

    body = memoryview(array.array("i", [1, 2]))
    frame = _codec_py.encode_command(RemotingCommand(body=body))
    return struct.unpack_from(">i", frame)[0] + 4 != len(frame)


def _month_start_ignores_dst() -> bool:
    import time

    if not hasattr(time, "tzset") or not os.path.exists("/usr/share/zoneinfo/Europe/Berlin"):
        return False
    saved = os.environ.get("TZ")
    os.environ["TZ"] = "Europe/Berlin"
    time.tzset()
    try:
        # 2024-03-31 12:00 UTC is summer time (UTC+2) in Berlin, but March 1st 00:00
        # was winter time (UTC+1): 2024-02-29 23:00 UTC.
        start, _ = _codec_py._month_start_ms(1711886400000)
        return start != 1709247600000
    finally:
        if saved is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = saved
        time.tzset()


def _zstd_output_unbounded() -> bool:
    import tracemalloc

    import zstandard

    bomb = zstandard.ZstdCompressor(write_content_size=False).compress(bytes(8 << 20))
    saved = _codec_py.MAX_DECOMPRESSED_SIZE
    _codec_py.MAX_DECOMPRESSED_SIZE = 1 << 16
    tracemalloc.start()
    try:
        try:
            _codec_py.decompress(bomb, _codec_py.COMPRESSION_ZSTD)
        except CodecError:
            pass
        return tracemalloc.get_traced_memory()[1] > 4 << 20
    finally:
        tracemalloc.stop()
        _codec_py.MAX_DECOMPRESSED_SIZE = saved


def _object_key_sort_fails() -> bool:
    from rocketmq_py._codec_types import JsonObjectKey

    try:
        JsonObjectKey({1: 1, "1": "x"})
    except TypeError:
        return True
    return False


#: Bug id -> probe that returns True while the twin (or the shared class) still has it.
PENDING_TWIN_FIXES = {
    "truncated-compression": _accepts_truncated_zlib,
    "binary-ext-empty-duplicate": _keeps_value_before_empty_duplicate,
    "memoryview-header": _rejects_memoryview_header,
    "command-body-nbytes": _miscounts_item_body,
    "month-start-dst": _month_start_ignores_dst,
    "zstd-unbounded": _zstd_output_unbounded,
    "object-key-mixed-types": _object_key_sort_fails,
}


@functools.lru_cache(maxsize=None)
def twin_pending(name: str) -> bool:
    """True while the twin still shows the reported bug ``name``."""
    return PENDING_TWIN_FIXES[name]()


def xfail_if_twin_pending(codec, name: str) -> None:
    """Mark the running test xfail when it runs the twin and bug ``name`` is still there."""
    if codec is _codec_py and twin_pending(name):
        pytest.xfail(f"twin bug {name!r} reported with its fix; the compiled codec has the fix")


@pytest.fixture(scope="session")
def expected_implementation():
    """``expected_implementation("rocketmq_py.store._write_path")``: the IMPLEMENTATION a selector must report in
    this run, "python" or "cython". The twin under ``ROCKETMQ_PY_NO_EXTENSIONS=1``; else the compiled module
    when it imports, and the twin when it does not, which fails the test when ``ROCKETMQ_PY_REQUIRE_EXTENSIONS=1``
    (so that the check asserts something in every run, a plain local one included)."""

    def expected(compiled: str) -> str:
        if os.environ.get("ROCKETMQ_PY_NO_EXTENSIONS") == "1":
            return "python"
        try:
            importlib.import_module(compiled)
        except ImportError as error:
            if EXTENSIONS_REQUIRED:
                pytest.fail(f"{compiled} did not import (ROCKETMQ_PY_REQUIRE_EXTENSIONS=1): {error}", pytrace=False)
            return "python"
        return "cython"

    return expected
