"""The one place that chooses the fast path of plain sends: compiled (``_send_fast``) or its twin.

The twin, ``_send_fast_py``, says what the path takes and what it does; the
compiled module is the same logic with C types. ``ROCKETMQ_PY_NO_EXTENSIONS=1``
selects the twin, as for the codec and the store layouts.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from rocketmq_py._extensions import load

if TYPE_CHECKING:
    from rocketmq_py.broker import _send_fast_py as _impl
else:
    _impl = load("rocketmq_py.broker._send_fast", "rocketmq_py.broker._send_fast_py")

IMPLEMENTATION: str = _impl.IMPLEMENTATION
SendFastPath = _impl.SendFastPath
answer_placed = _impl.answer_placed

__all__ = ["IMPLEMENTATION", "SendFastPath", "answer_placed"]
