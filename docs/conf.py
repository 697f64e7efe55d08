"""Sphinx configuration of the rocketmq-py documentation (built by ci/test.sh with warnings as errors).

Pages are Markdown (MyST) except the API reference, which is reStructuredText for autodoc. A new page joins
the site by one line in the toctree of its section in ``index.md``.
"""
from __future__ import annotations

import rocketmq_py

project = "rocketmq-py"
author = "The rocketmq-py authors"
release = rocketmq_py.__version__
version = release
extensions = ["myst_parser", "sphinx.ext.autodoc"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
# Headings down to ### get anchors, so a page links to another's section as [text](page.md#the-heading).
myst_heading_anchors = 3
# The glossary is a definition list.
myst_enable_extensions = ["deflist"]
autodoc_default_options = {"members": True, "show-inheritance": True, "member-order": "bysource"}
autodoc_typehints = "description"
autodoc_class_signature = "separated"
exclude_patterns = ["_build"]
html_theme = "alabaster"
