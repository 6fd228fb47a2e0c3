"""Every notebook in ``notebooks/`` must run top to bottom without an error.

They are written for the primary target (PyMC 6 / ArviZ 1) and run there; on the
secondary target (PyMC 5 / ArviZ 0.23, whose plotting API differs) they are skipped.
Each notebook is executed with nbclient in a fresh ``python3`` kernel, with the
notebook's own folder as working directory (as a reader running it in Jupyter
would), and a 600 s limit per cell. Notebooks are stored without outputs; the
executed copy is kept in the docs build's execution cache (docs/notebook_cache.py),
never in the files. A notebook the cache already holds a clean run of — the same code
cells against the same library, locks and Python — is not run again, here or by the
docs build: each notebook runs once per change.

They run in the slow suite (``make test-slow``, which CI runs before the docs build), not in
``make test``: twelve notebooks are about 440 s of worker time, a fifth of the default suite's.
"""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
from nbclient.exceptions import CellExecutionError  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_DIR = ROOT / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
CELL_TIMEOUT = 600  # seconds, per cell


def _notebook_cache():
    """docs/notebook_cache.py (the docs build's own module; docs/ is not a package)."""
    spec = importlib.util.spec_from_file_location("notebook_cache", ROOT / "docs" / "notebook_cache.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_there_are_notebooks() -> None:
    assert NOTEBOOKS, f"no notebooks found in {NOTEBOOK_DIR}"


@pytest.mark.slow
@pytest.mark.skipif(
    not __import__("pymc_dp")._compat.TRACE_IS_DATATREE,
    reason="the notebooks are written for the primary target, PyMC 6 / ArviZ 1 (ArviZ 1's plots and summaries)",
)
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path: Path) -> None:
    jupyter_cache = pytest.importorskip("jupyter_cache")
    from jupyter_cache.base import CacheBundleIn

    nb = nbformat.read(path, as_version=4)
    store = _notebook_cache()
    with store.cache_lock():
        cache = jupyter_cache.get_cache(str(store.cache_path()))
        try:
            cache.match_cache_notebook(nb)
            return  # a clean run of exactly this code against exactly this library is cached
        except KeyError:
            pass
    client = nbclient.NotebookClient(
        nb,
        kernel_name="python3",
        timeout=CELL_TIMEOUT,
        # nbclient starts the kernel in resources["metadata"]["path"].
        resources={"metadata": {"path": str(path.parent)}},
        allow_errors=False,
        record_timing=False,  # cell metadata stays as stored: jupyter-cache hashes it
    )
    start = time.perf_counter()
    try:
        client.execute()
    except CellExecutionError as err:
        pytest.fail(f"{path.name} raised while executing:\n{err}", pytrace=False)
    with store.cache_lock():  # the docs build reads this run instead of executing the notebook again
        jupyter_cache.get_cache(str(store.cache_path())).cache_notebook_bundle(
            CacheBundleIn(nb, str(path), data={"execution_seconds": time.perf_counter() - start}),
            check_validity=False, overwrite=True,
        )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_is_stored_without_outputs(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    with_outputs = [
        i
        for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code" and (cell.get("outputs") or cell.get("execution_count"))
    ]
    assert not with_outputs, (
        f"{path.name}: cells {with_outputs} carry outputs; clear them before committing "
        "(the docs build and the tests execute the notebook themselves)"
    )
