"""The remoting layer's imports: no circle among its modules, and nothing from the layers above it.

The graph is read from the source, not from ``sys.modules``: every ``import`` statement of a module counts,
those under ``if TYPE_CHECKING:`` and those inside functions included. A circle that only the type checker
walks is still two modules that each need the other to be understood, so it is refused like any other.

``from rocketmq_py.remoting import command`` names the module ``command``; it is an arrow to that module, not
to the package's ``__init__``, which Python runs first for every submodule alike. A name taken from the package
itself (``from rocketmq_py.remoting import RemotingCommand``) is an arrow to ``__init__``, which imports every
module of the package for its type hints: such an import inside the package closes a circle, and is refused.
"""
from __future__ import annotations

import ast
from pathlib import Path

import rocketmq_py.remoting

PACKAGE = "rocketmq_py.remoting"
#: The layers above remoting (STYLE.md: remoting moves frames and knows nothing about messages or their users).
HIGHER_LAYERS = ("rocketmq_py.broker", "rocketmq_py.client", "rocketmq_py.namesrv", "rocketmq_py.store",
                 "rocketmq_py.spark", "rocketmq_py.cli")


def _module_names(directory: Path, package: str) -> dict[str, Path]:
    names = {}
    for path in sorted(directory.glob("*.py")):
        names[package if path.stem == "__init__" else f"{package}.{path.stem}"] = path
    return names


def _imports(tree: ast.Module, package: str) -> list[tuple[str, list[str]]]:
    """Every import statement anywhere in ``tree``, as the absolute module it reads and the names it takes
    from it (none for ``import a.b``); ``package`` is the package relative imports start from."""
    found: list[tuple[str, list[str]]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((alias.name, []) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            source = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1])
                source = f"{base}.{source}" if source else base
            found.append((source, [alias.name for alias in node.names]))
    return found


def _own_package(name: str, path: Path) -> str:
    return name if path.stem == "__init__" else name.rpartition(".")[0]


def import_graph(directory: Path, package: str) -> dict[str, set[str]]:
    """Each module of the package in ``directory`` (``__init__`` under the package's own name), with the
    modules of the same package that it imports."""
    modules = _module_names(directory, package)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        targets = set()
        for source, names in _imports(tree, _own_package(name, path)):
            submodules = [f"{source}.{taken}" for taken in names if f"{source}.{taken}" in modules]
            targets.update(submodules)
            if len(submodules) < len(names) or not names:
                targets.add(source)  # a name defined by ``source`` itself, or ``import source``
        graph[name] = {target for target in targets if target in modules and target != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected parts of ``graph`` with more than one module (Tarjan's algorithm), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            part = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                part.append(member)
                if member == node:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def _remoting_directory() -> Path:
    return Path(rocketmq_py.remoting.__file__).parent


def test_the_remoting_modules_import_each_other_in_no_circle() -> None:
    graph = import_graph(_remoting_directory(), PACKAGE)
    assert f"{PACKAGE}.protocol" in graph and f"{PACKAGE}.dispatcher" in graph
    assert cycles(graph) == []


def test_the_remoting_modules_import_nothing_from_the_layers_above() -> None:
    above = {}
    for path in sorted(_remoting_directory().glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        read = {module for source, names in _imports(tree, PACKAGE)
                for module in (source, *(f"{source}.{taken}" for taken in names))}
        names = {module for module in read
                 if any(module == layer or module.startswith(layer + ".") for layer in HIGHER_LAYERS)}
        if names:
            above[path.name] = sorted(names)
    assert above == {}


def test_the_graph_sees_a_circle_closed_only_for_the_type_checker(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                         "    from pkg.low import Low\n")
    (package / "low.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                    "    from pkg.high import High\n")
    (package / "high.py").write_text("from pkg import low\n\n\ndef later():\n    from . import side\n")
    (package / "side.py").write_text("from .high import later\n")
    graph = import_graph(package, "pkg")
    assert graph == {"pkg": {"pkg.low"}, "pkg.low": {"pkg.high"}, "pkg.high": {"pkg.low", "pkg.side"},
                     "pkg.side": {"pkg.high"}}
    assert cycles(graph) == [["pkg.high", "pkg.low", "pkg.side"]]


def test_a_name_taken_from_the_package_itself_is_an_arrow_to_its_init(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("from pkg.user import User\n")
    (package / "user.py").write_text("from pkg import User as Again, user\n")
    assert cycles(import_graph(package, "pkg")) == [["pkg", "pkg.user"]]
