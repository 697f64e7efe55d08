"""Each shared constant and clock is defined in one module; these checks read the package's sources so that
a second definition cannot come back unnoticed (the compiled modules copy the values at import instead)."""
from __future__ import annotations

import re
from pathlib import Path

import rocketmq_py
from rocketmq_py.common import magic_codes, sysflag
from rocketmq_py.common.message import MessageConst

PACKAGE = Path(rocketmq_py.__file__).parent
SOURCES = sorted(p for suffix in ("*.py", "*.pyx", "*.pxi", "*.pxd") for p in PACKAGE.rglob(suffix))


def _where(pattern: str, allowed: set[str]) -> list[str]:
    """``path:line: text`` of each source line matching ``pattern``, outside the ``allowed`` files."""
    found = []
    regex = re.compile(pattern)
    for path in SOURCES:
        name = path.relative_to(PACKAGE).as_posix()
        if name in allowed:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if regex.search(line):
                found.append(f"{name}:{number}: {line.strip()}")
    return found


def _assigned(names: list[str]) -> str:
    """A line that binds one of ``names`` at its start (``X =``, ``X: int =``, ``cdef int32_t X =``)."""
    return rf"^\s*(cdef\s+\w+\s+)?({'|'.join(names)})\s*(:[^=]*)?=[^=]"


def test_the_sources_are_found():
    assert len(SOURCES) > 100 and PACKAGE / "common" / "clock.py" in SOURCES


def test_clocks_are_defined_only_in_common_clock():
    assert _where(r"^\s*(async\s+)?(c?p?def)\s+\w*(now_ms|monotonic_ms)\s*\(", {"common/clock.py"}) == []
    # nor computed in place: milliseconds from the wall or the monotonic clock are now_ms() and monotonic_ms()
    assert _where(r"time\.(time|monotonic)(_ns)?\(\)\s*(\*\s*1_?000\b|//\s*1_?000_?000\b)", {"common/clock.py"}) == []


def test_the_magic_codes_live_in_common_magic_codes():
    values = [str(magic_codes.MESSAGE_MAGIC_CODE), str(magic_codes.BLANK_MAGIC_CODE),
              f"0x{magic_codes.MESSAGE_MAGIC_CODE & 0xFFFFFFFF:X}", f"0x{magic_codes.BLANK_MAGIC_CODE & 0xFFFFFFFF:X}"]
    literal = r"(?i)(?<![\w])(" + "|".join(re.escape(value) for value in values) + r")(?![\w])"
    assert _where(literal, {"common/magic_codes.py"}) == []
    # DLedger's own BLANK_MAGIC_CODE (-1, its file padding) is a different code in dledger/entry.py.
    assert _where(_assigned(["MESSAGE_MAGIC_CODE"]), {"common/magic_codes.py"}) == []


def test_sysflag_bits_live_in_common_sysflag():
    names = [name for name in vars(sysflag) if name.isupper()]
    assert "MULTI_TAGS_FLAG" in names and "TRANSACTION_TYPE_MASK" in names
    assert _where(_assigned(names + [r"SYSFLAG_(?!POSITION)\w+"]), {"common/sysflag.py"}) == []


def test_property_names_are_message_consts():
    values = sorted({value for name, value in vars(MessageConst).items() if name.isupper() and len(value) > 1})
    literal = r"=\s*b?\"(" + "|".join(re.escape(value) for value in values) + r")\"\s*(#.*)?$"
    assert _where(r"^\s*(cdef\s+\w+\s+)?[A-Z_][A-Z0-9_]*\s*(:[^=]*)?" + literal, {"common/message.py"}) == []


def test_java_string_hash_has_one_python_home_the_codec():
    # The codec's twin pair defines it; the compiled store layout keeps a private C-level _java_string_hash.
    assert _where(r"^\s*(c?p?def)\s+(\w+\s+)?java_string_hash\s*\(", {"_codec_parts/ids.pxi", "_codec_py.py"}) == []
