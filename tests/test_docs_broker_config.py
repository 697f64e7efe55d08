"""docs/broker-config.md against the code: every broker key we read is on the page, with our default as the
config dataclasses give it, and the page names no key we do not read.

A key that takes effect is a field of ``BrokerConfig`` or ``MessageStoreConfig`` (``load_broker_config`` applies
one file to both) that is not in ``JAVA_KEYS_WITHOUT_EFFECT``; a Java key accepted without effect is in
``JAVA_KEYS_WITHOUT_EFFECT`` (reported by GET_BROKER_CONFIG with Java's default) or ``LATER_JAVA_KEYS`` (keys of
later Java brokers, accepted quietly). A default computed at
start (the host name, an environment variable) is described in italics on the page; a literal default is
written as the properties file would carry it. Java's defaults, the third column, are checked against the Java
broker's own answer by compat-tests/test_broker_config_page.py.
"""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

from rocketmq_py.broker.config import (
    JAVA_KEYS_WITHOUT_EFFECT,
    LATER_JAVA_KEYS,
    UNSUPPORTED_WHEN_TRUE,
    BrokerConfig,
)
from rocketmq_py.common.config_file import java_name
from rocketmq_py.store.config import MessageStoreConfig

PAGE = Path(__file__).resolve().parent.parent / "docs" / "broker-config.md"
NO_EFFECT = "*no effect*"
REFUSED_WHEN_TRUE = "*refused when true*"
ROW = re.compile(r"^\| `([^`]+)` \| ([^|]+) \| ([^|]+) \| [^|]+ \|$")


def page_rows() -> dict[str, tuple[str, str]]:
    """``key -> (ours, Java's)`` cells of every table row of the page; a key listed twice fails."""
    rows: dict[str, tuple[str, str]] = {}
    for line in PAGE.read_text().splitlines():
        match = ROW.match(line)
        if match is None or match.group(1) == "key":
            continue
        key, ours, java = match.groups()
        assert key not in rows, f"{key} is listed twice"
        rows[key] = (ours.strip(), java.strip())
    return rows


#: Keys accepted without effect: on the page as such, not with a default of ours.
ACCEPTED_WITHOUT_EFFECT = JAVA_KEYS_WITHOUT_EFFECT | LATER_JAVA_KEYS


def fields() -> dict[str, dataclasses.Field[Any]]:
    """The keys that take effect here, with their fields."""
    return {java_name(f): f for config in (BrokerConfig, MessageStoreConfig) for f in dataclasses.fields(config)
            if java_name(f) not in ACCEPTED_WITHOUT_EFFECT}


def expected_cell(field: dataclasses.Field[Any]) -> str | None:
    """The cell our literal default must have, or None for a default computed at start."""
    if field.default is dataclasses.MISSING:
        return None
    value = field.default
    if value is None:
        return "*none*"  # a key not set unless a file sets it, as Java's null
    if isinstance(value, bool):
        return "`true`" if value else "`false`"
    if value == "":
        return "*empty*"
    return f"`{value}`"


def test_the_page_has_its_tables():
    assert len(page_rows()) >= len(fields()) + len(ACCEPTED_WITHOUT_EFFECT)


def test_every_key_we_read_is_on_the_page_with_our_default():
    rows = page_rows()
    wrong = {}
    for key, field in fields().items():
        ours = rows.get(key, ("(missing)", ""))[0]
        expected = expected_cell(field)
        if expected is None:
            if not (ours.startswith("*") and ours.endswith("*") and ours != NO_EFFECT):
                wrong[key] = f"{ours} (a computed default, described in italics)"
        elif ours != expected:
            wrong[key] = f"{ours} (write {expected})"
    assert wrong == {}


def test_every_java_key_accepted_without_effect_is_on_the_page_as_such():
    rows = page_rows()
    expected = {key: REFUSED_WHEN_TRUE if key in UNSUPPORTED_WHEN_TRUE else NO_EFFECT for key in ACCEPTED_WITHOUT_EFFECT}
    assert {key: rows.get(key, ("(missing)",))[0] for key in ACCEPTED_WITHOUT_EFFECT} == expected


def test_the_page_names_no_key_we_do_not_read():
    assert sorted(set(page_rows()) - set(fields()) - ACCEPTED_WITHOUT_EFFECT) == []


def test_every_row_gives_javas_default():
    """Java's cell is a literal, a description in italics, or — for a key of our own that Java lacks."""
    malformed = {key: java for key, (_, java) in page_rows().items()
                 if not (java == "—" or re.fullmatch(r"`[^`]+`", java) or re.fullmatch(r"\*.+\*", java))}
    assert malformed == {}
