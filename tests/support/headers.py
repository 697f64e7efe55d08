"""Header classes and strategies for the header mapping tests (test_header_mapping, test_custom_header): every
header class of ``common.headers``, extFields and ROCKETMQ ext blocks a peer might send for one, and the outcome of
reading one, comparable across the two codecs."""
from __future__ import annotations

import dataclasses
import importlib
import math
import pkgutil
import struct

from hypothesis import strategies as st

import rocketmq_py.common.headers as headers_package
from rocketmq_py.common.headers.base import BadHeaderFieldError, CommandHeader, MissingHeaderFieldError


def _all_header_classes() -> list[type[CommandHeader]]:
    for module in pkgutil.iter_modules(headers_package.__path__):
        importlib.import_module(f"{headers_package.__name__}.{module.name}")
    found, pending = [], list(CommandHeader.__subclasses__())
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        # @dataclass(slots=True) makes a new class: the one it replaced may linger among the subclasses until collected.
        module = importlib.import_module(cls.__module__)
        if dataclasses.is_dataclass(cls) and getattr(module, cls.__name__, None) is cls:
            found.append(cls)
    return sorted(found, key=lambda cls: cls.__qualname__)


HEADER_CLASSES = _all_header_classes()

# Numbers as Java sees them: plain, signed, out of range, Unicode digits, blanks, floats, words.
number_text = st.one_of(
    st.integers(-(1 << 70), 1 << 70).map(str),
    st.integers(0, 10**18).map(lambda n: f"+{n}"),
    st.sampled_from(["", "-", "+", " 1", "1 ", "1_000", "1.5", "0x10", "٣", "１２", "00000000000000000001",
                     "2147483647", "2147483648", "-2147483648", "-2147483649", "9223372036854775807",
                     "9223372036854775808", "true", "True", "FALSE", "nan", "inf", "1e3"]),
)
field_text = st.one_of(number_text, st.text(max_size=12))


def outcome(function, *args):
    try:
        header = function(*args)
    except (MissingHeaderFieldError, BadHeaderFieldError) as error:
        return ("raised", type(error).__name__, str(error))
    values = {field.name: getattr(header, field.name) for field in dataclasses.fields(header)}
    return ("returned", type(header).__name__,
            {name: ("nan" if isinstance(value, float) and math.isnan(value) else value)
             for name, value in values.items()})


@st.composite
def ext_fields_of(draw, cls):
    names = [entry[1] for entry in cls._plan().entries]
    chosen = draw(st.lists(st.sampled_from(names), unique=True)) if names else []
    fields = {name: draw(field_text) for name in chosen}
    fields.update(draw(st.dictionaries(st.text(max_size=6), st.text(max_size=6), max_size=2)))
    return fields


def _text_or_bytes(text_strategy):
    """UTF-8 of a text, or raw bytes that need not decode (a replacement character stands for them)."""
    return st.one_of(text_strategy.map(lambda text: text.encode("utf-8", "surrogatepass")),
                     st.binary(max_size=6))


@st.composite
def ext_block_entries(draw, cls):
    """Entries of a ROCKETMQ ext block as a peer might send them for ``cls``: its wire names in any order, repeated,
    with empty values (Java reads them as null), other keys, empty keys, and bytes that are not UTF-8."""
    names = [entry[1] for entry in cls._plan().entries]
    key = st.one_of(st.sampled_from(names).map(str.encode), _text_or_bytes(st.text(max_size=6))) if names else \
        _text_or_bytes(st.text(max_size=6))
    value = st.one_of(st.just(b""), _text_or_bytes(field_text))
    return draw(st.lists(st.tuples(key, value), max_size=2 * len(names) + 3))


def rocketmq_header(entries) -> bytes:
    block = b"".join(struct.pack(">h", len(key)) + key + struct.pack(">i", len(value)) + value
                     for key, value in entries)
    # code 310, language JAVA, version 409, opaque 7, flag 0, no remark, then the ext block.
    return struct.pack(">hbhiii", 310, 0, 409, 7, 0, 0) + struct.pack(">i", len(block)) + block
