"""Builds the Cython extensions only; all metadata lives in pyproject.toml.

Set ROCKETMQ_PY_NO_EXTENSIONS=1 to build a pure-Python package: every compiled
module has a pure-Python twin that the package falls back to.

The extensions are linked stripped on Linux (their symbol tables are most of their
size); set ROCKETMQ_PY_KEEP_SYMBOLS=1 to keep them, for a debugger or a profiler.
"""
import os
import sys

from setuptools import Extension, setup

EXTENSION_MODULES = [
    "rocketmq_py._codec",
    "rocketmq_py.store._layout",
    "rocketmq_py.store._read_path",
    "rocketmq_py.store._write_path",
    "rocketmq_py.broker._send_fast",
    "rocketmq_py.broker._place_messages",
]


def link_args():
    if sys.platform.startswith("linux") and os.environ.get("ROCKETMQ_PY_KEEP_SYMBOLS") != "1":
        return ["-Wl,--strip-all"]
    return []


def extensions():
    if os.environ.get("ROCKETMQ_PY_NO_EXTENSIONS") == "1":
        return []
    from Cython.Build import cythonize

    modules = [
        Extension(name, [name.replace(".", "/") + ".pyx"], extra_compile_args=["-O2"],
                  extra_link_args=link_args())
        for name in EXTENSION_MODULES
    ]
    return cythonize(
        modules,
        language_level=3,
        compiler_directives={"boundscheck": False, "wraparound": False, "cdivision": True},
    )


setup(ext_modules=extensions())
