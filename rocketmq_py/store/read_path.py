"""The one place that chooses the store's compiled hot paths (``_hot_paths``) or their twin (``_hot_paths_py``).

See ``_hot_paths_py`` for what each function takes and does; ``ROCKETMQ_PY_NO_EXTENSIONS=1`` selects the twin.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from rocketmq_py._extensions import load

if TYPE_CHECKING:
    from rocketmq_py.store import _hot_paths_py as _impl
else:
    _impl = load("rocketmq_py.store._hot_paths", "rocketmq_py.store._hot_paths_py")

IMPLEMENTATION: str = _impl.IMPLEMENTATION
append_in_place = _impl.append_in_place
append_batch_in_place = _impl.append_batch_in_place
set_queue_id = _impl.set_queue_id
index_keys = _impl.index_keys
collect = _impl.collect

__all__ = ["IMPLEMENTATION", "append_in_place", "append_batch_in_place", "set_queue_id", "index_keys", "collect"]
