"""``pymc-dp demo``: the Laplace-private war-logs HMM and its report folder."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import pymc_dp as pmdp
from pymc_dp import _compat
from pymc_dp.examples.warlogs.demo import modal_states, run_demo


def test_modal_states():
    states = np.array([[[0, 1]], [[0, 2]], [[1, 2]]])  # 3 draws of a 1 × 2 grid
    np.testing.assert_array_equal(modal_states(states, 3), [[0, 2]])


def test_iraq_like_demo_recovers_the_regimes_and_uses_few_states(tmp_path):
    # The check: Iraq-like data with 2 true regimes, Laplace at ε = 5 (1 per
    # feature), K = 10 given: the modal states match the true regimes (adjusted Rand
    # index ≥ 0.8; measured 1.0) and almost all region-months sit in a few states.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # ArviZ on constant label-free quantities
        facts = run_demo(tmp_path, preset="iraq", epsilon=5.0, num_states=10, iterations=60, seed=1, progressbar=False, verbose=False)
    assert facts["adjusted_rand_index"] >= 0.8
    assert facts["states_in_use"] <= 3 and sum(sorted(facts["shares"], reverse=True)[:2]) >= 0.95
    assert facts["epsilon_spent"] == pytest.approx(5.0)
    names = {p.name for p in tmp_path.iterdir()}
    assert names == {"states.png", "emissions.png", "ledger.txt", "diagnostics.txt", "trace.nc", "summary.txt",
                     "leak_scan.txt"}
    # Everything that leaves holds only charged or public values: the demo's own scan is
    # clean, and neither the exact record count nor the median per region-month is printed.
    assert facts["leak_scan"].clean, str(facts["leak_scan"])
    summary = (tmp_path / "summary.txt").read_text()
    assert f"{facts['records']:,}" not in summary and str(facts["records"]) not in summary
    assert "noisy" in summary
    trace = pmdp.ledger(str(tmp_path / "trace.nc"))
    assert trace.total().epsilon == pytest.approx(5.0) and len(trace) == 5
    import arviz as az

    released = az.from_netcdf(tmp_path / "trace.nc")
    assert not {"observed_data", "constant_data", "log_likelihood"} & set(_compat.group_names(released))
    assert "R-hat" in (tmp_path / "summary.txt").read_text()


def _demo_command(output) -> list[str]:
    """``pymc-dp demo`` on the small preset, from the environment running the tests."""
    exe = Path(sys.executable).with_name("pymc-dp")
    assert exe.exists(), "the pymc-dp command is not installed beside this Python"
    return [str(exe), "demo", "--preset", "small", "--iterations", "20", "--output", str(output)]


def test_demo_runs_as_make_demo_runs_it_with_the_progress_bar_on(tmp_path):
    # `make demo` runs `pymc-dp demo` with PyMC's progress bar on. Each of the HMM's step
    # methods must return exactly one stats dict per step: PyMC 5.28's progress bar zips
    # the stats against the steps with strict=True and crashed the demo before it drew
    # anything when they returned []. Run the command itself, as a user does.
    proc = subprocess.run(_demo_command(tmp_path / "out"), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "ledger.txt" in proc.stdout and (tmp_path / "out" / "trace.nc").exists()
    assert "leak scan          clean" in proc.stdout  # secure noise, as make demo runs it
    assert pmdp.ledger(str(tmp_path / "out" / "trace.nc")).total().epsilon == pytest.approx(5.0)


def test_demo_runs_in_a_terminal(tmp_path):
    # The same in a pseudo-terminal, where rich draws the live progress bar.
    leader, follower = pty.openpty()
    proc = subprocess.Popen(_demo_command(tmp_path / "out"), stdin=follower, stdout=follower, stderr=follower)
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # the terminal closed: the demo exited
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    rc = proc.wait(timeout=600)
    text = b"".join(chunks).decode(errors="replace")
    assert rc == 0, text[-3000:]
    assert "draws/s" in text, "no progress bar was drawn"
    assert (tmp_path / "out" / "trace.nc").exists()


def test_convergence_line_reads_settled_quantities_by_chain():
    # A quantity constant within each chain has an R-hat of NaN or ~1e15 (no within-chain
    # variance) that says nothing: it is shown by its value per chain instead.
    from pymc_dp.examples.warlogs.demo import _convergence, _describe_r_hat

    rng = np.random.default_rng(0)
    quantities = {"log_likelihood_of_release": rng.normal(size=(2, 50)),
                  "occupied_states": np.array([[2.0] * 50, [3.0] * 50])}
    line = _convergence(quantities, {"log_likelihood_of_release": 1.0042, "occupied_states": 9.8e15})
    assert line == "R-hat 1.004 (worst of the label-free quantities); occupied states 2 | 3 by chain (settled)"
    assert "different state configurations" in _describe_r_hat(9.8e15)
    assert "have not converged" in _describe_r_hat(2.1)
    assert "undefined" in _describe_r_hat(float("nan"))
