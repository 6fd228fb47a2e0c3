"""Sphinx configuration for the pymc_dp documentation.

Build with ``make docs`` (``python -m sphinx -W --keep-going -b html docs docs/_build/html``):
warnings are errors, so a broken reference, a docstring that does not parse or a
notebook that raises fails the build.

The build needs no network: there is no intersphinx, and the notebooks in
``notebooks/`` (reached through the ``docs/notebooks`` symlink) are executed
locally by myst-nb.
"""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
# The package is installed editable into .venv by `make`; the path entry keeps a
# plain `sphinx-build` from a source checkout working too.
sys.path.insert(0, str(ROOT))

import pymc_dp  # noqa: E402

# -- Project ---------------------------------------------------------------------------

project = "pymc_dp"
author = "pymc_dp developers"
copyright = "pymc_dp developers"
release = pymc_dp.__version__
version = ".".join(release.split(".")[:2])

# -- General ---------------------------------------------------------------------------

extensions = [
    "myst_nb",  # MyST Markdown *and* notebooks (it loads myst_parser itself)
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "sphinx.ext.mathjax",
]

source_suffix = {
    ".rst": "restructuredtext",
    ".md": "myst-nb",
    ".ipynb": "myst-nb",
}
root_doc = "index"
templates_path = ["_templates"]
exclude_patterns = [
    "_build",
    "Thumbs.db",
    ".DS_Store",
    "**.ipynb_checkpoints",
    "notebooks/README.md",
]

# -- MyST ------------------------------------------------------------------------------

myst_enable_extensions = [
    "amsmath",
    "colon_fence",
    "deflist",
    "dollarmath",
    "fieldlist",
    "substitution",
]
myst_heading_anchors = 3
myst_dmath_double_inline = True

# -- Notebooks (myst-nb) ---------------------------------------------------------------
# Notebooks are stored without outputs. "cache" executes a notebook, in its own folder,
# unless the cache already holds a clean run of the same code cells against the same
# library (docs/notebook_cache.py names the cache by a digest of the package's sources,
# the locks and the Python version; tests/test_notebooks.py fills the same cache), so the
# site always shows what the current code does and nothing runs twice. Execution errors
# are raised so that -W turns them into a failed build.
sys.path.insert(0, str(DOCS))
from notebook_cache import cache_path  # noqa: E402

nb_execution_mode = "cache"
nb_execution_cache_path = str(cache_path())
nb_execution_timeout = 600
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_execution_excludepatterns: list[str] = []
nb_merge_streams = True
nb_kernel_rgx_aliases = {".*": "python3"}

# -- autodoc / autosummary / napoleon ---------------------------------------------------

autosummary_generate = True
autosummary_generate_overwrite = True
autosummary_ignore_module_all = False  # document exactly each module's __all__
autosummary_imported_members = False
autodoc_default_options = {
    "members": True,
    "show-inheritance": True,
}
autodoc_typehints = "description"
autodoc_typehints_description_target = "documented_params"
autodoc_member_order = "bysource"
autodoc_preserve_defaults = True
autoclass_content = "both"

napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
napoleon_use_ivar = True
napoleon_preprocess_types = False

# Type annotations name third-party classes (numpy.random.Generator,
# arviz.InferenceData, ...). Without intersphinx (no network) Sphinx cannot link them;
# that is expected and must not fail the -W build.
nitpicky = False


def _constant_doc(package: str, name: str) -> list[str] | None:
    """The ``#:`` doc comment of constant ``name`` re-exported by ``package``.

    Packages re-export constants (``pymc_dp.accounting.COMPOSITION_METHODS`` is
    defined in ``pymc_dp.accounting.budget``); autodoc only reads doc comments in
    the module it documents, and would otherwise show the docstring of ``tuple``.
    """
    import importlib
    import pkgutil

    from sphinx.pycode import ModuleAnalyzer

    try:
        pkg = importlib.import_module(package)
    except ImportError:
        return None
    modules = [package]
    if hasattr(pkg, "__path__"):
        modules += [m.name for m in pkgutil.iter_modules(pkg.__path__, prefix=package + ".")]
    for modname in modules:
        try:
            docs = ModuleAnalyzer.for_module(modname).find_attr_docs()
        except Exception:  # noqa: BLE001 - a module without source: skip it
            continue
        if ("", name) in docs:
            return [line for line in docs[("", name)]]
    return None


def _document_reexported_constants(app, what, name, obj, options, lines):  # noqa: ANN001
    if what != "data" or not name.startswith("pymc_dp."):
        return
    package, _, const = name.rpartition(".")
    found = _constant_doc(package, const)
    type_doc = (type(obj).__doc__ or "").strip().splitlines()
    if found is not None:
        lines[:] = found
    elif type_doc and lines and lines[0].strip() == type_doc[0].strip():
        lines[:] = []  # never show the docstring of ``tuple`` as if it were ours


def setup(app):  # noqa: ANN001, ANN201
    app.connect("autodoc-process-docstring", _document_reexported_constants)
    return {"parallel_read_safe": True}


# -- HTML ------------------------------------------------------------------------------

html_theme = "pydata_sphinx_theme"
html_title = f"pymc_dp {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "header_links_before_dropdown": 6,
    "secondary_sidebar_items": ["page-toc", "sourcelink"],
}
html_context = {"default_mode": "auto"}
html_show_sourcelink = True
html_last_updated_fmt = None
