"""Event loop selection: uvloop when it is installed, unless ``ROCKETMQ_PY_NO_UVLOOP=1``."""
from __future__ import annotations

import asyncio
import importlib
import os
from typing import Awaitable, cast

__all__ = ["uvloop_enabled", "new_event_loop", "run_on_new_loop"]


def uvloop_enabled() -> bool:
    """True when uvloop is importable and not switched off by ``ROCKETMQ_PY_NO_UVLOOP=1``."""
    if os.environ.get("ROCKETMQ_PY_NO_UVLOOP") == "1":
        return False
    try:
        importlib.import_module("uvloop")
    except ImportError:
        return False
    return True


def new_event_loop() -> asyncio.AbstractEventLoop:
    """A new event loop: uvloop's when :func:`uvloop_enabled`, else asyncio's default."""
    if uvloop_enabled():
        return cast(asyncio.AbstractEventLoop, importlib.import_module("uvloop").new_event_loop())
    return asyncio.new_event_loop()


def run_on_new_loop(main: Awaitable[object]) -> None:
    """Run ``main`` to completion on a fresh event loop (uvloop's when available)."""
    loop = new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        loop.run_until_complete(main)
        loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        asyncio.set_event_loop(None)
        loop.close()
