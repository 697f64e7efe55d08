"""Every compiled module is paired one way with its twin, and offers the twin's API.

The rule: ``pkg/_name.pyx`` is compiled, ``pkg/_name_py.py`` is its pure-Python twin, and ``pkg/name.py``
selects one of them at run time and, for mypy, imports the twin's types (so mypy checks the twin's code and
every caller against one set of annotations). The compiled module's ``.pyi`` only re-exports the twin's names, so
it cannot drift; here the compiled module is held to the twin's names and call signatures, and the differential
tests hold it to the twin's results.
"""
from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "rocketmq_py"
TESTS = Path(__file__).resolve().parent


def _compiled_modules() -> list[str]:
    return sorted(".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts) for path in PACKAGE.rglob("*.pyx"))


COMPILED_MODULES = _compiled_modules()


def _selector_path(compiled: str) -> Path:
    *package, name = compiled.split(".")
    return PACKAGE.parent.joinpath(*package, name.removeprefix("_") + ".py")


def _taken_from_the_implementation(compiled: str) -> list[str]:
    """The names the selector takes from the chosen module (``_impl.<name>``)."""
    tree = ast.parse(_selector_path(compiled).read_text())
    return sorted({node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)
                   and isinstance(node.value, ast.Name) and node.value.id == "_impl"})


def test_the_package_has_the_compiled_modules_setup_py_builds():
    setup = ast.parse((PACKAGE.parent / "setup.py").read_text())
    built = next(node.value for node in setup.body
                 if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "EXTENSION_MODULES")
    assert sorted(ast.literal_eval(built)) == COMPILED_MODULES


@pytest.mark.parametrize("compiled", COMPILED_MODULES)
def test_each_compiled_module_has_its_twin_and_its_selector_beside_it(compiled, twins):
    *package, name = compiled.split(".")
    folder = PACKAGE.parent.joinpath(*package)
    twin = f"{compiled}_py"
    assert (folder / f"{name}_py.py").is_file()
    stub = ast.parse((folder / f"{name}.pyi").read_text()).body
    assert [(node.module, [alias.name for alias in node.names]) for node in stub if isinstance(node, ast.ImportFrom)] \
        == [(twin, ["*"])], "the compiled module's stub re-exports its twin's types, and nothing else"
    assert all(isinstance(node, (ast.ImportFrom, ast.Expr)) for node in stub)
    assert twins(compiled).twin.__name__ == twin
    selector = ast.parse(_selector_path(compiled).read_text())
    loads = [ast.literal_eval(node.args[0]) for node in ast.walk(selector)
             if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "load"
             and ast.literal_eval(node.args[1]) == twin]
    assert loads == [compiled], "the selector loads the compiled module, or its twin"
    type_checking = next(node for node in selector.body
                         if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING")
    imported = [(f"{node.module}.{alias.name}", alias.asname) for node in type_checking.body
                if isinstance(node, ast.ImportFrom) for alias in node.names]
    assert imported == [(twin, "_impl")], "mypy checks the callers against the twin's annotations"


def _pairs_called(tree: ast.AST) -> set[str]:
    """The pairs named in ``twins("...")`` calls."""
    return {node.args[0].value for node in ast.walk(tree)
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "twins"
            and node.args and isinstance(node.args[0], ast.Constant)}


def _pairs_reached(path: Path, conftest_fixtures: dict[str, set[str]]) -> set[str]:
    """The pairs a test module reaches: by calling ``twins`` itself or through a conftest fixture built on it."""
    tree = ast.parse(path.read_text())
    reached = _pairs_called(tree)
    own = {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test_"):
            for argument in node.args.args:
                if argument.arg not in own:  # a fixture of the module's own hides conftest's of that name
                    reached |= conftest_fixtures.get(argument.arg, set())
    return reached


@pytest.mark.parametrize("compiled", COMPILED_MODULES)
def test_each_pair_has_a_differential_test_through_the_twins_fixture(compiled):
    conftest = ast.parse((TESTS / "conftest.py").read_text())
    fixtures = {node.name: _pairs_called(node) for node in conftest.body if isinstance(node, ast.FunctionDef)}
    callers = [path.name for path in TESTS.glob("test_*.py")
               if path.name != Path(__file__).name and compiled in _pairs_reached(path, fixtures)]
    assert callers, f"no test reaches {compiled} through the twins fixture"


def _shape(function: object) -> list[tuple[str, str, object]] | None:
    """Parameter names, kinds and defaults; None where Cython hides them (a cdef class's ``__init__``)."""
    try:
        parameters = list(inspect.signature(function).parameters.values())  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    if [p.kind for p in parameters[-2:]] == [inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD]:
        return None
    return [(p.name, p.kind.name, p.default) for p in parameters]


@pytest.mark.parametrize("compiled", COMPILED_MODULES)
def test_the_compiled_module_offers_the_names_and_signatures_of_its_twin(compiled, twins):
    pair = twins(compiled)
    compared = 0
    for name in _taken_from_the_implementation(compiled):
        expected, actual = getattr(pair.twin, name), getattr(pair.compiled, name)
        if name == "IMPLEMENTATION":
            assert (expected, actual) == ("python", "cython")
        elif inspect.isclass(expected):
            assert inspect.isclass(actual), name
            for member, value in vars(expected).items():
                if callable(value) and (member == "__init__" or not member.startswith("_")):
                    assert hasattr(actual, member), f"{name}.{member}"
                    wanted, offered = _shape(value), _shape(getattr(actual, member))
                    if offered is not None:
                        assert offered == wanted, f"{name}.{member}"
                        compared += 1
        elif callable(expected):
            assert _shape(actual) == _shape(expected), name
            compared += 1
        else:
            assert actual == expected, name
    assert compared > 0, "no signature was compared"
