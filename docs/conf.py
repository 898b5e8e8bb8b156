"""Sphinx configuration of the onnx-relu documentation (``make docs``).

The pages are Markdown (MyST), like README.md, CHANGELOG.md and BENCHMARKS.md, which the site
includes rather than copies; the Python API comes from the installed package's numpydoc
docstrings (autodoc + napoleon), the command line from its argparse parsers (``_ext``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import onnx_relu

sys.path.insert(0, str(Path(__file__).parent / "_ext"))

project = "onnx-relu"
author = "the onnx-relu developers"
copyright = "the onnx-relu developers"
release = onnx_relu.__version__
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "onnx_relu_docs",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_ext", "_static"]
# Every page below docs/ is a page of the site (index.md's toctree takes the ones it does not
# name through a glob), so a page other work adds is built and checked with the rest.

myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 3

# The numpydoc docstring sections (Parameters, Returns, Raises, Examples) through napoleon,
# which ships with Sphinx: numpydoc's own extension is stricter about section names than the
# docstrings need and adds nothing the pages use.
napoleon_google_docstring = False
napoleon_numpy_docstring = True
# The docstrings' own return types ("numpy.ndarray or scalar") as the rtype: the annotations
# of functions that return what a dispatched ufunc returns say only Any.
napoleon_use_rtype = True
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_preserve_defaults = True
# A method without a docstring of its own shows none rather than its base class's, whose
# docstrings (onnx's, for the reference op) follow other conventions.
autodoc_inherit_docstrings = False

# No intersphinx: the machines that build the documentation (development and CI) reach only
# the package registries, not numpy.org or onnx.ai, and a build that needs the network to
# succeed cannot run with -W there. References to numpy and onnx are plain text.

html_theme = "alabaster"
html_title = f"onnx-relu {release}"
html_theme_options = {
    "description": "The ONNX Relu operator as a strict, exact, fast NumPy ufunc",
    # 1240 px: a 100-column code line fits the body at a 1280 px window; below 875 px alabaster
    # puts the sidebar under the page (and _static/onnx-relu.css lets code and tables scroll
    # inside themselves).
    "page_width": "1240px",
    "sidebar_width": "220px",
}
# The site's own CSS and its copy buttons (no extension for them is in the locked docs extra).
html_static_path = ["_static"]
html_css_files = ["onnx-relu.css"]
html_js_files = ["onnx-relu-copy.js"]
html_sidebars = {"**": ["about.html", "navigation.html", "searchbox.html"]}
