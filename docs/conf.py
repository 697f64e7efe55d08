"""Sphinx configuration of the rocketmq-py API reference (built by ci/docs.sh with warnings as errors)."""
from __future__ import annotations

import rocketmq_py

project = "rocketmq-py"
author = "The rocketmq-py authors"
release = rocketmq_py.__version__
version = release
extensions = ["sphinx.ext.autodoc"]
autodoc_default_options = {"members": True, "show-inheritance": True, "member-order": "bysource"}
autodoc_typehints = "description"
autodoc_class_signature = "separated"
exclude_patterns = ["_build"]
html_theme = "alabaster"
