"""How every selector (``pkg/name.py``) chooses the compiled module (``pkg/_name``) or its twin (``pkg/_name_py``).

The compiled extension is used when it was built; the twin when
``ROCKETMQ_PY_NO_EXTENSIONS=1`` or when the extension is missing.
``ROCKETMQ_PY_REQUIRE_EXTENSIONS=1`` turns a missing extension into an error
(the test suite sets it, so a broken build cannot pass as the twin).
"""
from __future__ import annotations

import importlib
import logging
import os
from types import ModuleType

_log = logging.getLogger(__name__)


def load(compiled: str, twin: str) -> ModuleType:
    """The module named ``compiled`` (for example ``rocketmq_py._codec``), or its twin."""
    if os.environ.get("ROCKETMQ_PY_NO_EXTENSIONS") == "1":
        return importlib.import_module(twin)
    try:
        return importlib.import_module(compiled)
    except ImportError as error:
        if os.environ.get("ROCKETMQ_PY_REQUIRE_EXTENSIONS") == "1":
            raise ImportError(
                f"the compiled {compiled} extension is required (ROCKETMQ_PY_REQUIRE_EXTENSIONS=1) "
                f"but did not load: {error}; build it with `pip install -e .`"
            ) from error
        _log.debug("compiled %s unavailable (%s); using the pure-Python twin %s", compiled, error, twin)
        return importlib.import_module(twin)
