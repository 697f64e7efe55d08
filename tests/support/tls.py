"""Certificates for the TLS tests, made with the ``cryptography`` package or else the ``openssl`` command."""
from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from rocketmq_py.errors import TlsConfigError
from rocketmq_py.remoting.tls import generate_self_signed_certificate


@dataclass(frozen=True)
class KeyPair:
    cert: str
    key: str


def make_key_pair(directory: Path, name: str) -> KeyPair:
    cert, key = directory / f"{name}.crt", directory / f"{name}.key"
    try:
        generate_self_signed_certificate(cert, key, common_name=name)
    except TlsConfigError:
        if shutil.which("openssl") is None:
            pytest.skip("neither the cryptography package nor the openssl command is here to make certificates")
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-sha256", "-days", "2",
             "-subj", f"/CN={name}", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
             "-keyout", str(key), "-out", str(cert)],
            check=True, capture_output=True,
        )
    return KeyPair(str(cert), str(key))
