"""Every notebook in ``notebooks/`` must run top to bottom without an error.

They are written for the primary target (PyMC 6 / ArviZ 1) and run there; on the
secondary target (PyMC 5 / ArviZ 0.23, whose plotting API differs) they are skipped.
Each notebook is executed with nbclient in a fresh ``python3`` kernel, with the
notebook's own folder as working directory (as a reader running it in Jupyter
would), and a 600 s limit per cell. Notebooks are stored without outputs; the
executed copy is kept in memory only, so the tests never modify the files.
"""

from __future__ import annotations

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
from nbclient.exceptions import CellExecutionError  # noqa: E402

NOTEBOOK_DIR = Path(__file__).resolve().parent.parent / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
CELL_TIMEOUT = 600  # seconds, per cell


def test_there_are_notebooks() -> None:
    assert NOTEBOOKS, f"no notebooks found in {NOTEBOOK_DIR}"


@pytest.mark.skipif(
    not __import__("pymc_dp")._compat.TRACE_IS_DATATREE,
    reason="the notebooks are written for the primary target, PyMC 6 / ArviZ 1 (ArviZ 1's plots and summaries)",
)
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb,
        kernel_name="python3",
        timeout=CELL_TIMEOUT,
        # nbclient starts the kernel in resources["metadata"]["path"].
        resources={"metadata": {"path": str(path.parent)}},
        allow_errors=False,
    )
    try:
        client.execute()
    except CellExecutionError as err:
        pytest.fail(f"{path.name} raised while executing:\n{err}", pytrace=False)


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
