"""Sphinx configuration of the wafercoll documentation site.

Build: ``bash tools/docs.sh`` (``sphinx-build -W``: warnings are errors).
The API reference comes from the docstrings (numpydoc); the tutorials are the
notebooks of ``notebooks/``, executed at build time by myst-nb, and a cell
that writes to stderr (a warning, a traceback) fails the build.

Links into the Python, NumPy, pandas and Matplotlib documentation
(intersphinx) need their inventories, which are downloaded at build time; a
failed download is a warning, which ``-W`` makes an error. So they are on only
with ``WAFERCOLL_DOCS_INTERSPHINX=1``, and an offline build (CI has no network
but the package index) passes without them.
"""

from __future__ import annotations

import os
import sys

import wafercoll

project = "wafercoll"
author = "the wafercoll developers"
copyright = "the wafercoll developers, BSD-3-Clause"  # noqa: A001 - Sphinx's name
release = wafercoll.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_nb",
]

# Cross-references to the libraries the API takes and returns.
if os.environ.get("WAFERCOLL_DOCS_INTERSPHINX", "0") == "1":
    extensions.append("sphinx.ext.intersphinx")
    intersphinx_mapping = {
        "python": ("https://docs.python.org/3", None),
        "numpy": ("https://numpy.org/doc/stable", None),
        "pandas": ("https://pandas.pydata.org/docs", None),
        "matplotlib": ("https://matplotlib.org/stable", None),
    }
    intersphinx_timeout = 30
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "**.ipynb_checkpoints"]
root_doc = "index"

# API reference: numpydoc sections, members in source order, no class member
# tables (the methods are documented in full below each class).
autodoc_member_order = "bysource"
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_xref_param_type = False

# The notebooks run at build time (outputs are not committed): every figure
# on the site comes from the code of this release.
nb_execution_mode = os.environ.get("WAFERCOLL_DOCS_EXECUTE", "force")
nb_execution_timeout = 900
nb_execution_raise_on_error = True
nb_merge_streams = True
# A tutorial that warns is a defect: stderr output is an error (failing the
# build), and the kernels show every warning once (they inherit this variable),
# DeprecationWarning and FutureWarning from library code included.
nb_output_stderr = "error"
os.environ.setdefault("PYTHONWARNINGS", "default")
myst_enable_extensions = ["dollarmath", "colon_fence"]

html_theme = "pydata_sphinx_theme"
html_title = f"wafercoll {release}"
html_theme_options = {"navigation_with_keys": False}
html_static_path: list[str] = []

# The notebooks live in notebooks/ beside the docs; the build copies them in.
sys.path.insert(0, os.path.abspath(os.path.dirname(__file__)))


def _copy_notebooks(app) -> None:  # noqa: ANN001 - Sphinx's application
    """Copy ``notebooks/*.ipynb`` into the source tree (``_notebooks/``)."""
    import shutil

    here = os.path.dirname(os.path.abspath(__file__))
    src = os.path.join(here, "..", "notebooks")
    dst = os.path.join(here, "_notebooks")
    os.makedirs(dst, exist_ok=True)
    for name in sorted(os.listdir(src)):
        if name.endswith(".ipynb"):
            shutil.copyfile(os.path.join(src, name), os.path.join(dst, name))


def setup(app) -> None:  # noqa: ANN001 - Sphinx's application
    app.connect("builder-inited", _copy_notebooks)
