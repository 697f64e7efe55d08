"""The one place that chooses the broker process's per-send work on a front's PLACE message: compiled
(``_place_messages``) or its twin.

The twin, ``_place_messages_py``, says what it does; the compiled module is the same loops with C types.
``ROCKETMQ_PY_NO_EXTENSIONS=1`` selects the twin, as for the codec and the store layouts.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from rocketmq_py._extensions import load

if TYPE_CHECKING:
    from rocketmq_py.broker import _place_messages_py as _impl
else:
    _impl = load("rocketmq_py.broker._place_messages", "rocketmq_py.broker._place_messages_py")

IMPLEMENTATION: str = _impl.IMPLEMENTATION
SEND_HEAD = _impl.SEND_HEAD
TOPIC_NAMES_KEPT: int = _impl.TOPIC_NAMES_KEPT
read_sends = _impl.read_sends
placed_payload = _impl.placed_payload

__all__ = ["IMPLEMENTATION", "SEND_HEAD", "TOPIC_NAMES_KEPT", "placed_payload", "read_sends"]
