"""docs/broker-config.md's Java column against the Java broker's own answer: for every key whose Java default
the page writes as a literal, the official broker's GET_BROKER_CONFIG (through ``mqadmin getBrokerConfig``)
reports that value, unless the harness's broker.conf set the key. Our column is held to our code by
tests/test_docs_broker_config.py.
"""
from __future__ import annotations

import re
from pathlib import Path

from harness import mqadmin

PAGE = Path(__file__).resolve().parent.parent / "docs" / "broker-config.md"
ROW = re.compile(r"^\| `([^`]+)` \| [^|]+ \| ([^|]+) \| [^|]+ \|$")
#: Set by BrokerStartup from another key the harness sets: haListenPort is listenPort + 1.
DERIVED_FROM_HARNESS_KEYS = {"haListenPort"}
#: Keys of Java 4.9.8 that the 4.9.7 broker of the harness does not have (4.9.8 added the admin blacklist).
NOT_IN_4_9_7 = {"configBlackList"}


def javas_literal_defaults() -> dict[str, str]:
    """``key -> value`` of each row whose Java cell is a literal (`value`, or *empty* for the empty string)."""
    defaults = {}
    for line in PAGE.read_text().splitlines():
        match = ROW.match(line)
        if match is None or match.group(1) == "key":
            continue
        key, cell = match.group(1), match.group(2).strip()
        if cell == "*empty*":
            defaults[key] = ""
        elif re.fullmatch(r"`[^`]+`", cell):
            defaults[key] = cell[1:-1]
    return defaults


def broker_config_answer(printed: str) -> dict[str, str]:
    """mqadmin prints each key as ``%-50s=  %s``."""
    answer = {}
    for line in printed.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() and " " not in key.strip():
            answer[key.strip()] = value[2:] if value.startswith("  ") else value.strip()
    return answer


def test_the_pages_java_defaults_are_what_the_java_broker_reports(java_namesrv, java_broker):
    answer = broker_config_answer(mqadmin("getBrokerConfig", "-b", java_broker.addr, namesrv=java_namesrv.addr))
    assert answer.get("brokerName") == java_broker.broker_name, answer
    skipped = set(java_broker.config()) | DERIVED_FROM_HARNESS_KEYS
    documented = {key: value for key, value in javas_literal_defaults().items() if key not in skipped}
    absent = {key for key in documented if key not in answer}
    assert absent == NOT_IN_4_9_7, "the page gives a Java default for keys the Java broker does not have"
    compared = {key: answer[key] for key in documented if key in answer}
    assert len(compared) >= 140
    assert compared == {key: documented[key] for key in compared}
