"""Issue 31: DLedger's peer bodies, entries and frames, byte for byte as DLedger 0.3.1.2 writes them.

Every expected byte comes from Java at test time (``Peer dledger-golden``, built on the dledger jar the
4.9.7 broker uses): each body class with no field set and with random fields, entries of the data and
index files, and the request and response frames of DLedgerRpcNettyService.
"""
from __future__ import annotations

import base64
import dataclasses
import json
import random

import pytest

from harness.dledger_golden import body_from_spec, entry_from_spec, entry_spec, golden_cases
from harness.peers import run_peer
from rocketmq_py import codec
from rocketmq_py.dledger import protocol
from rocketmq_py.dledger.codes import RequestCode, ResponseCode
from rocketmq_py.dledger.entry import IndexUnit, decode_entry, decode_index_unit, encode_entry, encode_index_unit
from rocketmq_py.dledger.rpc import build_request, build_response

SEED = 31
PER_CLASS = 40


def _java(cases: list[dict]) -> list[dict]:
    lines = run_peer("dledger-golden", input="".join(json.dumps(c) + "\n" for c in cases), timeout=300)
    assert len(lines) == len(cases)
    errors = [(case, line["error"]) for case, line in zip(cases, lines) if "error" in line]
    assert not errors, errors[:3]
    return lines


@pytest.fixture(scope="module")
def body_cases(java_build):
    cases = golden_cases(SEED, PER_CLASS)
    return list(zip(cases, _java(cases)))


def test_every_body_class_is_covered(body_cases):
    assert {case["class"] for case, _ in body_cases} == set(protocol.BODY_CLASSES)


def test_bodies_are_byte_equal_to_java(body_cases):
    mismatches = []
    for case, line in body_cases:
        java = base64.b64decode(line["json"])
        ours = body_from_spec(case).encode()
        if ours != java:
            mismatches.append((case["class"], ours.decode(), java.decode()))
    assert not mismatches, f"{len(mismatches)} of {len(body_cases)} differ; first: {mismatches[0]}"


def test_java_bodies_decode_to_the_same_objects(body_cases):
    for case, line in body_cases:
        expected = body_from_spec(case)
        decoded = type(expected).decode(base64.b64decode(line["json"]))
        if isinstance(expected, protocol.PushEntryRequest):
            # totalSize has no setter: a reader leaves it 0, in Java as here
            assert isinstance(decoded, protocol.PushEntryRequest)
            decoded = dataclasses.replace(decoded, total_size=expected.total_size)
        assert decoded == expected, case


def test_entries_and_index_units_are_byte_equal_to_java(java_build):
    rng = random.Random(SEED)
    specs = [entry_spec(rng) for _ in range(200)]
    specs.append({**entry_spec(rng), "body": ""})
    lines = _java([{"entry": spec} for spec in specs])
    for spec, line in zip(specs, lines):
        entry = entry_from_spec(spec)
        data = encode_entry(entry)
        assert bytes(data) == base64.b64decode(line["data"]), spec
        unit = encode_index_unit(entry.pos, entry.size, entry.magic, entry.index, entry.term)
        assert unit == base64.b64decode(line["index"]), spec
        read = decode_entry(base64.b64decode(line["data"]))
        assert read == dataclasses.replace(entry, size=48 + len(entry.body or b""))
        assert decode_index_unit(unit) == IndexUnit(entry.magic, entry.pos, entry.size, entry.index, entry.term)


def test_frames_match_java(java_build):
    body = protocol.VoteRequest(group="g", term=3)
    body_base64 = base64.b64encode(body.encode()).decode()
    cases = [{"frame": {"response": False, "code": int(code), "opaque": 77, "bodyBase64": body_base64}}
             for code in RequestCode]
    cases.append({"frame": {"response": True, "opaque": 77, "bodyBase64": body_base64}})
    java = [codec.decode_frame(base64.b64decode(line["frame"])[4:]) for line in _java(cases)]
    ours = [build_request(code, body) for code in RequestCode]
    ours.append(build_response(ours[0], body))
    for java_frame, our_frame in zip(java, ours):
        assert (our_frame.code, our_frame.flag, our_frame.remark, our_frame.ext_fields or None, our_frame.body) == \
            (java_frame.code, java_frame.flag, java_frame.remark, java_frame.ext_fields or None, java_frame.body)
    assert java[-1].code == ResponseCode.SUCCESS == 200
