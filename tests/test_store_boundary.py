"""The line between the broker and the store: the broker imports nothing from ``rocketmq_py/store/`` but the
public names of ``rocketmq_py.store`` (MessageStore and its types), and the store imports nothing of the
broker, so there is no import cycle between the two.

Every import statement of every module is read: Python files and stubs through ``ast``, the compiled
modules' ``.pyx`` sources by their import lines (``cimport`` lines included).
"""
from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import rocketmq_py
from rocketmq_py import store

PACKAGE = Path(rocketmq_py.__file__).parent

_FROM = re.compile(r"^[ \t]*from[ \t]+([\w.]+)[ \t]+c?import[ \t]+(\([^)]*\)|[^\n]+)", re.M)
_IMPORT = re.compile(r"^[ \t]*c?import[ \t]+([\w., \t]+)", re.M)


def imports_of(path: Path) -> list[tuple[str, list[str]]]:
    """``(module, names imported from it)`` for each import in ``path`` (no names for ``import module``)."""
    text = path.read_text()
    found: list[tuple[str, list[str]]] = []
    if path.suffix == ".pyx":
        for module, names in _FROM.findall(text):
            names = names.split("#")[0].strip("() \n")
            found.append((module, [name.split(" as ")[0].strip() for name in names.split(",") if name.strip()]))
        for modules in _IMPORT.findall(text):
            found.extend((module.split(" as ")[0].strip(), []) for module in modules.split(","))
        return found
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            found.append((node.module, [alias.name for alias in node.names]))
        elif isinstance(node, ast.Import):
            found.extend((alias.name, []) for alias in node.names)
    return found


def sources(subpackage: str) -> list[Path]:
    root = PACKAGE / subpackage
    return sorted(p for suffix in ("*.py", "*.pyi", "*.pyx") for p in root.rglob(suffix))


def test_the_broker_imports_only_the_public_names_of_the_store():
    public = set(store.__all__)
    wrong = []
    used = set()
    for path in sources("broker"):
        for module, names in imports_of(path):
            if module == "rocketmq_py.store":
                wrong.extend(f"{path.relative_to(PACKAGE)}: {name}" for name in names if name not in public)
                used.update(names)
            elif module.startswith("rocketmq_py.store.") or (module == "rocketmq_py" and "store" in names):
                wrong.append(f"{path.relative_to(PACKAGE)}: {module} {names}")
    assert wrong == []
    # The check sees the imports it judges: the controller's store, the fast send path's record builders.
    assert {"MessageStore", "encode_record", "encode_batch"} <= used


def test_the_store_imports_nothing_of_the_broker():
    wrong = [f"{path.relative_to(PACKAGE)}: {module}" for path in sources("store")
             for module, names in imports_of(path)
             if module.startswith("rocketmq_py.broker") or (module == "rocketmq_py" and "broker" in names)]
    assert wrong == []
    assert any(module == "rocketmq_py.store._layout" for module, _ in imports_of(PACKAGE / "store/_write_path.pyx")), \
        "the .pyx reader sees cimports"


def test_importing_the_store_loads_no_broker_module():
    code = "import json, sys\nimport rocketmq_py.store\nprint(json.dumps(sorted(sys.modules)))"
    loaded = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                       check=True).stdout)
    assert "rocketmq_py.store.message_store" in loaded
    assert [name for name in loaded if name.startswith("rocketmq_py.broker")] == []


def test_every_public_name_of_the_store_resolves():
    assert set(store.__all__) <= set(dir(store))
    for name in store.__all__:
        assert getattr(store, name) is not None, name
