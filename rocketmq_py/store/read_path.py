"""The one place that chooses the store's compiled read path (``_read_path``) or its twin (``_read_path_py``).

See ``_read_path_py`` for what ``collect`` takes and does; ``ROCKETMQ_PY_NO_EXTENSIONS=1`` selects the twin.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from rocketmq_py._extensions import load

if TYPE_CHECKING:
    from rocketmq_py.store import _read_path_py as _impl
else:
    _impl = load("rocketmq_py.store._read_path", "rocketmq_py.store._read_path_py")

IMPLEMENTATION: str = _impl.IMPLEMENTATION
collect = _impl.collect

__all__ = ["IMPLEMENTATION", "collect"]
