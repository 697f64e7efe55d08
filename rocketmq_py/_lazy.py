"""How importing the client stays cheap: what is loaded late, and the one helper that does it.

A producer or consumer program should pay at import for the classes it names, not for the broker, the
store, the name server, TLS, compression or the RPC layer it reaches only once a client starts. Two
rules keep it so:

1. A package that re-exports names (``rocketmq_py``, ``rocketmq_py.client.producer``,
   ``rocketmq_py.client.consumer``, ``rocketmq_py.remoting``) resolves each one on first access, with
   :func:`lazy_exports` (PEP 562 module ``__getattr__``). The package also imports the names under
   ``TYPE_CHECKING``, so type checkers and IDEs see them as if imported eagerly.
2. A client module imports a module it needs only in some calls (the client instance and its RPCs,
   the request headers, the codec and JSON, TLS files, hashing) inside the function that needs it,
   marked ``# lazy:`` (with the reason when it is particular to that place). A repeated import is a
   lookup in ``sys.modules``, cheap next to the network call such a function makes. Names used only
   in annotations are imported under ``TYPE_CHECKING``.

``tests/test_import_cost.py`` checks that the client names load no broker, store or name-server module,
and ``benchmarks/imports/import_time.py`` measures the import time against aiokafka (docs/python-api.md,
"Import time").
"""
from __future__ import annotations

import sys
from typing import Any, Callable, Mapping


def lazy_exports(package: str, names: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``, which re-exports ``names`` (name -> defining module).

    A name is imported from its module on first access and then cached in the package's namespace, so
    the second access costs a dictionary lookup.
    """

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        # The import statement's machinery (not importlib.import_module), so `python -X importtime` reports
        # the module and the import-time benchmark counts it.
        __import__(module)
        value = getattr(sys.modules[module], name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(names))

    return __getattr__, __dir__
