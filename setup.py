"""Builds the Cython extensions only; all metadata lives in pyproject.toml.

Set ROCKETMQ_PY_NO_EXTENSIONS=1 to build a pure-Python package: every compiled
module has a pure-Python twin that the package falls back to.
"""
import os

from setuptools import Extension, setup

EXTENSION_MODULES = ["rocketmq_py._codec", "rocketmq_py._store"]


def extensions():
    if os.environ.get("ROCKETMQ_PY_NO_EXTENSIONS") == "1":
        return []
    from Cython.Build import cythonize

    modules = [
        Extension(name, [name.replace(".", "/") + ".pyx"], extra_compile_args=["-O2"])
        for name in EXTENSION_MODULES
    ]
    return cythonize(
        modules,
        language_level=3,
        compiler_directives={"boundscheck": False, "wraparound": False, "cdivision": True},
    )


setup(ext_modules=extensions())
