"""ACL signing as Java's AclClientRPCHook does it, with the expected values computed from the algorithm:
values ordered by key in Java String order (uppercase before lowercase), no keys, Signature left out,
body appended, Base64(HmacSHA1(secretKey, content))."""
from __future__ import annotations

import base64
import hashlib
import hmac

from rocketmq_py.client.api import MQClientAPI
from rocketmq_py.common.acl import SessionCredentials, calculate_signature, signed_content
from rocketmq_py.remoting import RemotingClient


def _expected(secret: str, ordered_values: list[str], body: bytes = b"") -> str:
    content = "".join(ordered_values).encode() + body
    return base64.b64encode(hmac.new(secret.encode(), content, hashlib.sha1).digest()).decode()


def test_values_in_java_key_order_then_body():
    fields = {"b": "topicB", "a": "group", "AccessKey": "ak", "Z": "zz", "_UNIQUE_KEY_QUERY": "true"}
    assert signed_content(fields, b"\x00body") == b"akzzgrouptopicB\x00body"


def test_sign_adds_access_key_token_and_signature():
    fields = {"b": "T", "a": "pg", "i": "KEYS\x01k\x02TAGS\x01t"}
    SessionCredentials("myAk", "mySecret", "tok").sign(fields, b"hello")
    # Java String order: "AccessKey" < "SecurityToken" < "a" < "b" < "i"
    assert fields["Signature"] == _expected("mySecret", ["myAk", "tok", "pg", "T", "KEYS\x01k\x02TAGS\x01t"], b"hello")
    assert fields["AccessKey"] == "myAk" and fields["SecurityToken"] == "tok"


def test_signature_ignores_an_old_signature_and_no_body():
    fields = {"topic": "T", "Signature": "stale"}
    SessionCredentials("ak", "sk").sign(fields, None)
    assert fields["Signature"] == _expected("sk", ["ak", "T"])


def test_non_ascii_values_are_utf8():
    assert calculate_signature("värde".encode(), "k") == _expected("k", ["värde"])


def test_api_signs_every_request():
    api = MQClientAPI(RemotingClient(), credentials=SessionCredentials("ak", "sk"))
    request = api._request(105, {"topic": "T"}, b"x")
    assert request.ext_fields["Signature"] == _expected("sk", ["ak", "T"], b"x")
    unsigned = MQClientAPI(RemotingClient())._request(105, {"topic": "T"})
    assert unsigned.ext_fields == {"topic": "T"}
