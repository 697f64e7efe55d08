"""The one place that chooses how a plain put is done in place: compiled (``_plain``) or its twin (``_plain_py``).

See ``_plain_py`` for what ``append_in_place`` takes and does; ``ROCKETMQ_PY_NO_EXTENSIONS=1`` selects the twin.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from rocketmq_py._extensions import load

if TYPE_CHECKING:
    from rocketmq_py.store import _plain_py as _impl
else:
    _impl = load("rocketmq_py.store._plain", "rocketmq_py.store._plain_py")

IMPLEMENTATION: str = _impl.IMPLEMENTATION
append_in_place = _impl.append_in_place
append_batch_in_place = _impl.append_batch_in_place
set_queue_id = _impl.set_queue_id
index_keys = _impl.index_keys

__all__ = ["IMPLEMENTATION", "append_in_place", "append_batch_in_place", "set_queue_id", "index_keys"]
