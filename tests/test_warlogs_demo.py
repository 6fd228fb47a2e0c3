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
    assert "R-hat" in summary and "on label-invariant quantities (chains relabelled to chain 0" in summary
    assert 0 <= facts["modal_agreement"] <= 1


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


TYPE_MEANS = np.array([[0.3, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1], [0.05, 0.05, 0.1, 0.1, 0.1, 0.1, 0.2, 0.3]])
CASUALTY_MEANS = np.array([0.1, 0.4])  # P(casualties > 0) of regimes 0 and 1, for each casualty feature


def _released_draws(partitions, labels, type_means=(TYPE_MEANS, TYPE_MEANS), num_states=4, draws=200, seed=0):
    """Released-like ``(chain, draw, ...)`` draws of a K-state HMM, one chain per partition.

    Chain ``c`` puts region-month ``(r, t)`` in regime ``partitions[c][r, t]`` in every draw
    (a settled chain) and names regime ``j`` ``labels[c][j]``; each draw's emission
    probabilities of regime ``j`` are Dirichlet around ``type_means[c][j]`` (and
    ``CASUALTY_MEANS``); unused labels hold prior draws.
    """
    from pymc_dp.examples.warlogs.data import FEATURE_SIZES, FEATURES

    rng = np.random.default_rng(seed)
    chains = len(partitions)
    theta = {f"theta_{f}": rng.dirichlet(np.ones(size), size=(chains, draws, num_states))
             for f, size in zip(FEATURES, FEATURE_SIZES)}
    states = np.zeros((chains, draws) + partitions[0].shape, dtype=int)
    for c, (partition, names, means) in enumerate(zip(partitions, labels, type_means)):
        states[c] = np.asarray(names)[partition]
        for regime, label in enumerate(names[: partition.max() + 1]):
            mean = means[min(regime, len(means) - 1)]
            theta["theta_type"][c, :, label] = rng.dirichlet(500 * mean, size=draws)
            rate = CASUALTY_MEANS[min(regime, 1)]
            for f in FEATURES[2:]:
                theta[f"theta_{f}"][c, :, label] = rng.dirichlet(500 * np.array([1 - rate, rate]), size=draws)
    return {"states": states, **theta}


REGIMES = (np.arange(4 * 30) % 3 == 0).reshape(4, 30).astype(int)  # 2 regimes on a 4 x 30 grid


def test_chains_that_name_the_same_regimes_differently_are_judged_converged():
    # The regression: two chains that found the same two regimes under different labels.
    # Compared label by label they disagree completely (a state-indexed R-hat far above
    # 1.1); relabelled to chain 0 they agree.
    import arviz as az
    from pymc_dp.examples.warlogs.demo import convergence_report

    draws = _released_draws([REGIMES, REGIMES], [[0, 1, 2, 3], [2, 0, 3, 1]])
    assert float(az.rhat(draws["theta_type"][:, :, 0, 0])) > 1.1  # label 0 means different regimes
    report = convergence_report(draws, 4)
    assert report["max_r_hat"] < 1.1 and report["modal_agreement"] == 1.0
    assert report["line"].startswith("R-hat 1.0")
    assert "on label-invariant quantities (chains relabelled to chain 0: shares, type and casualty probabilities " \
           "of the 2 states all chains use); modal states agree on 100.0 % of region-months; occupied states " \
           "2 | 2 by chain" in report["line"]
    assert "state 0: share" in report["diagnostics"].index and "state 1: enemy_casualty > 0" in report["diagnostics"].index


def test_a_state_only_one_chain_uses_for_one_region_month_is_named_not_judged():
    # As in the default preset: one chain holds an extra state for a single region-month.
    # The two regimes every chain uses agree; the extra state shows in the occupied
    # states and the modal agreement (119 of 120 region-months).
    from pymc_dp.examples.warlogs.demo import convergence_report

    extra = REGIMES.copy()
    extra[0, 1] = 2
    draws = _released_draws([extra, REGIMES], [[3, 1, 0, 2], [1, 2, 0, 3]])
    report = convergence_report(draws, 4)
    assert report["max_r_hat"] < 1.1 and report["modal_agreement"] == pytest.approx(119 / 120)
    assert ": the chains" not in report["line"]
    assert "of the 2 states all chains use); modal states agree on 99.2 % of region-months; occupied states 3 | 2 " \
           "by chain" in report["line"]


def test_chains_that_differ_beyond_their_labels_are_flagged():
    from pymc_dp.examples.warlogs.demo import convergence_report

    # Same allocation up to labels, but chain 1's regime 1 emits differently.
    other = np.stack([TYPE_MEANS[0], TYPE_MEANS[1][::-1]])
    report = convergence_report(_released_draws([REGIMES, REGIMES], [[0, 1, 2, 3], [1, 0, 2, 3]], (TYPE_MEANS, other)), 4)
    assert report["max_r_hat"] > 1.1
    assert "2 states all chains use): the chains have not converged" in report["line"]
    # Same emissions, but a fifth of the region-months sit in the other regime in chain 1.
    moved = REGIMES.copy()
    moved[:, :6] = 1 - moved[:, :6]
    report = convergence_report(_released_draws([REGIMES, moved], [[0, 1, 2, 3], [3, 2, 1, 0]]), 4)
    assert report["modal_agreement"] == pytest.approx(0.8)
    assert "all chains use): the chains settled in different state configurations" in report["line"]
    assert "modal states agree on 80.0 % of region-months" in report["line"]
    # A chain that switches its labels half-way is not repaired by one permutation: flagged.
    draws = _released_draws([REGIMES, REGIMES], [[0, 1, 2, 3], [0, 1, 2, 3]])
    for name, values in draws.items():
        values[1, 100:] = 1 - values[1, 100:] if name == "states" else values[1, 100:][:, [1, 0, 2, 3]]
    assert ": the chains settled in different state configurations" in convergence_report(draws, 4)["line"]


def test_relabelling_matches_states_by_the_region_months_they_hold():
    from pymc_dp.examples.warlogs.relabel import allocation, common_states, modal_agreement, reference_permutations, relabel

    states = np.stack([np.asarray(names)[REGIMES][None].repeat(3, axis=0) for names in ([0, 1], [1, 0])])
    alloc = allocation(states, 3)
    perms = reference_permutations(alloc)
    np.testing.assert_array_equal(perms[:, :2], [[0, 1], [1, 0]])
    np.testing.assert_array_equal(common_states(alloc, perms), [0, 1])
    assert modal_agreement(alloc, perms) == 1.0
    values = np.arange(2 * 3 * 3).reshape(2, 1, 3, 3)  # (chain, draw, K, ...)
    np.testing.assert_array_equal(relabel(values, perms)[1, 0, :2], values[1, 0, [1, 0]])


def test_convergence_line_says_when_no_quantity_varies_within_the_chains():
    from pymc_dp.examples.warlogs.demo import _convergence

    line = _convergence({"occupied_states": np.full((2, 5), 2.0)}, float("nan"), 1.0, 0)
    assert line.startswith("R-hat undefined on label-invariant quantities (chains relabelled to chain 0: shares, type "
                           "and casualty probabilities of the 0 states all chains use); modal states agree on 100.0 %")
