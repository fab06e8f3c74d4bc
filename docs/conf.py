"""Sphinx configuration of the chemgraph documentation (``make docs`` builds it offline into
``docs/_build/html``; CI builds it with warnings as errors)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import chemgraph

sys.path.insert(0, str(Path(__file__).resolve().parent))  # cli_reference (docs/cli/)

os.environ.setdefault("OMP_NUM_THREADS", "1")

project = "chemgraph"
author = "the chemgraph authors"
copyright = "the chemgraph authors, MIT licence"
release = version = chemgraph.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "cli_reference",  # sphinx-argparse, each option a section (docs/cli_reference.py)
    "myst_parser",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "_templates"]
templates_path = ["_templates"]

# Markdown pages (docs/architecture.md, benchmarks/README.md, ...): GitHub-style heading anchors
# so that their in-page links (#graph-data-keys) resolve.
myst_heading_anchors = 4
myst_enable_extensions = ["colon_fence"]

# API reference: one page per module, from the docstrings (Google style).
autosummary_generate = True
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_class_signature = "separated"
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False
napoleon_custom_sections = ["Shapes", ("Options", "params_style")]
napoleon_use_ivar = True  # Attributes as fields: NamedTuple fields are not documented twice

# Option names such as --model stay as written (smart quotes would make "--" an en dash).
smartquotes = False

html_theme = "furo"
html_title = f"chemgraph {release}"
html_static_path: list[str] = []
autodoc_inherit_docstrings = False  # overrides of Lightning/torch methods: not their docs
