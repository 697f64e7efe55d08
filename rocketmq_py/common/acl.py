"""ACL request signing, compatible with Java's acl/common/AclClientRPCHook and AclUtils.

The signed content is the values of every extField except ``Signature``,
ordered by key as Java's ``TreeMap<String,String>`` orders them (UTF-16 code
unit order), then the body. The signature is Base64(HmacSHA1(secretKey, content)).
``_UNIQUE_KEY_QUERY`` is left out because the broker leaves it out when it checks.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import dataclass

ACCESS_KEY = "AccessKey"
SECRET_KEY = "SecretKey"
SIGNATURE = "Signature"
SECURITY_TOKEN = "SecurityToken"
UNIQUE_KEY_QUERY = "_UNIQUE_KEY_QUERY"

_NOT_SIGNED = (SIGNATURE, UNIQUE_KEY_QUERY)


def _java_string_order(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")


def signed_content(ext_fields: dict[str, str], body: bytes | None) -> bytes:
    """The bytes the signature covers."""
    values = "".join(
        ext_fields[key] for key in sorted(ext_fields, key=_java_string_order) if key not in _NOT_SIGNED
    )
    data = values.encode("utf-8")
    return data + body if body else data


def calculate_signature(content: bytes, secret_key: str) -> str:
    digest = hmac.new(secret_key.encode("utf-8"), content, hashlib.sha1).digest()
    return base64.b64encode(digest).decode("ascii")


@dataclass(frozen=True)
class SessionCredentials:
    access_key: str
    secret_key: str
    security_token: str | None = None

    def sign(self, ext_fields: dict[str, str], body: bytes | None) -> None:
        """Add ``AccessKey`` (and ``SecurityToken``) to ``ext_fields``, then the ``Signature`` over them and the body."""
        ext_fields[ACCESS_KEY] = self.access_key
        if self.security_token is not None:
            ext_fields[SECURITY_TOKEN] = self.security_token
        ext_fields[SIGNATURE] = calculate_signature(signed_content(ext_fields, body), self.secret_key)
