"""Unique names for the topics and groups of a test, so tests sharing a session's servers never collide."""
from __future__ import annotations

import uuid


def unique_name(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"
