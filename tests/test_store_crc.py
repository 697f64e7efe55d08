"""The compiled store's CRC-32 (every record's body CRC) against zlib.crc32, which the twin uses.

It folds with carry-less multiplication on x86-64 and uses a byte table elsewhere; the table is checked too,
in a process started with ROCKETMQ_PY_CRC_TABLE=1 (the method is chosen when the module loads).
"""
from __future__ import annotations

import os
import platform
import random
import subprocess
import sys
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st


@pytest.fixture(scope="module")
def compiled(twins):
    return twins("rocketmq_py.store._layout").compiled


#: Every length up to 600 (the folding's 64-byte start, its 16-byte steps and the byte tail), at
#: offsets that move the data off any alignment.
EDGE_LENGTHS = range(0, 600)


def test_an_x86_64_machine_folds_and_others_use_the_byte_table(compiled):
    # Else the tests below would check the byte table only on x86-64 (the table has its own test below).
    expected = "folding" if platform.machine() in ("x86_64", "AMD64") else "table"
    assert compiled.CRC_METHOD == expected


def test_every_short_length_and_alignment_matches_zlib(compiled):
    data = random.Random(1).randbytes(700)
    for length in EDGE_LENGTHS:
        for offset in (0, 1, 3, 8, 15):
            chunk = data[offset:offset + length]
            assert compiled.crc32(chunk) == zlib.crc32(chunk), (length, offset)


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=20_000))
def test_any_bytes_match_zlib(compiled, data):
    assert compiled.crc32(data) == zlib.crc32(data)


def test_any_buffer_is_read(compiled):
    data = random.Random(2).randbytes(5000)
    for buffer in (bytearray(data), memoryview(data)[17:4000], b"\x00" * 4096, b"\xff" * 1024):
        assert compiled.crc32(buffer) == zlib.crc32(buffer)


def test_the_byte_table_matches_zlib(compiled):  # the compiled module must be there for its subprocess
    script = (
        "import random, sys, zlib\n"
        "from rocketmq_py.store import _layout\n"
        "assert _layout.CRC_METHOD == 'table', _layout.CRC_METHOD\n"
        "data = random.Random(3).randbytes(3000)\n"
        "bad = [(n, o) for n in range(0, 300) for o in (0, 5) if _layout.crc32(data[o:o + n]) != zlib.crc32(data[o:o + n])]\n"
        "bad += [n for n in range(300, 3000, 97) if _layout.crc32(data[:n]) != zlib.crc32(data[:n])]\n"
        "sys.exit(f'mismatches: {bad[:5]}' if bad else 0)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], env={**os.environ, "ROCKETMQ_PY_CRC_TABLE": "1"},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
