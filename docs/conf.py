"""Sphinx configuration for the skformer documentation.

Build with ``sphinx-build -W -b html docs docs/_build/html``. The build needs no network:
intersphinx is deliberately not configured.
"""

import os
import sys
from importlib.util import find_spec

# Make the in-tree package importable when it is not installed.
sys.path.insert(0, os.path.abspath(".."))
os.environ.setdefault("MPLBACKEND", "Agg")

import skformer  # noqa: E402

# -- Project information -------------------------------------------------------------------
project = "skformer"
author = "The skformer developers"
copyright = "2026, The skformer developers"
release = skformer.__version__
version = ".".join(release.split(".")[:2])

# -- General configuration -----------------------------------------------------------------
extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]
templates_path = ["_templates"]
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "**.ipynb_checkpoints"]
default_role = "autolink"

# autosummary writes one page per listed object into generated/.
autosummary_generate = True
autodoc_typehints = "none"  # numpydoc docstrings already state the types
autodoc_default_options = {"member-order": "bysource"}

# numpydoc: our class template lists the methods itself.
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True
numpydoc_xref_param_type = False

# -- sphinx-gallery ------------------------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": ["../examples"],
    "gallery_dirs": ["auto_examples"],
    "filename_pattern": r"/plot_",
    "within_subsection_order": "FileNameSortKey",
    "download_all_examples": False,
    "abort_on_example_error": True,
    "remove_config_comments": True,
    "plot_gallery": "True",
    "doc_module": ("skformer",),
    "reference_url": {"skformer": None},
}

# -- HTML output ---------------------------------------------------------------------------
if find_spec("pydata_sphinx_theme") is not None:
    html_theme = "pydata_sphinx_theme"
    html_theme_options = {
        "navigation_with_keys": False,
        "show_toc_level": 2,
    }
else:
    html_theme = "alabaster"
html_title = f"skformer {release}"
html_show_sourcelink = False


# -- Members inherited from other libraries ------------------------------------------------
def _skip_foreign_member(app, what, name, obj, skip, options):
    """Hide members that skformer classes inherit from scikit-learn or PyTorch.

    Their docstrings belong to (and cross-reference) those projects' documentation.
    """
    if what != "class":
        return None
    target = getattr(obj, "fget", obj)  # properties: look at the getter
    module = getattr(target, "__module__", None)
    if module is not None and module.split(".")[0] != "skformer":
        return True
    return None


def setup(app):
    app.connect("autodoc-skip-member", _skip_foreign_member)
