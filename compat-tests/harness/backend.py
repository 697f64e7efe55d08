"""Choose how the official servers run: ``ROCKETMQ_COMPAT_BACKEND=jvm`` (default) or ``docker``."""

from __future__ import annotations

import os

BACKENDS = ("jvm", "docker")


def backend_name() -> str:
    name = os.environ.get("ROCKETMQ_COMPAT_BACKEND", "jvm").strip().lower() or "jvm"
    if name not in BACKENDS:
        raise ValueError(f"ROCKETMQ_COMPAT_BACKEND must be one of {BACKENDS}, got {name!r}")
    return name


def server_classes():
    """(NameServerClass, BrokerClass) of the selected backend; both have the same interface."""
    if backend_name() == "docker":
        from .docker_backend import JavaBroker, JavaNameServer
    else:
        from .processes import JavaBroker, JavaNameServer
    return JavaNameServer, JavaBroker
