"""The held-out experiment: its score, its routes and its table."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pymc_dp.examples.warlogs import data, heldout
from pymc_dp.examples.warlogs.hmm import HMMFit


def test_heldout_loglik_sums_the_state_out_by_hand():
    """One draw, one region of 3 months, K = 2, the middle month held out; checked against the formula."""
    log_a = np.log(np.array([[0.9, 0.1], [0.3, 0.7]]))
    log_pi = np.log(np.array([0.5, 0.5]))
    theta = np.array([[0.2, 0.8], [0.6, 0.4]])
    fit = HMMFit(np.array([[[0, 1, 1]]]), [np.log(theta)[None]], log_a[None], log_pi[None], np.zeros(1))
    mask = np.array([[False, True, False]])
    test = [np.zeros((1, 3, 2))]
    test[0][0, 1] = [3, 1]
    prior = np.exp(log_a[0, :] + log_a[:, 1])  # s_{t-1} = 0, s_{t+1} = 1
    prior /= prior.sum()
    expected = math.log((prior * theta[:, 0] ** 3 * theta[:, 1]).sum()) / 4
    assert heldout.heldout_loglik(fit, test, mask) == pytest.approx(expected, rel=1e-12)


def test_naive_bayes_releases_only_the_totals(monkeypatch):
    counts = data.feature_counts(data.generate("small", seed=0))
    shapes = []
    real = heldout._laplace_counts

    def spy(train, epsilon, mask, rng):
        shapes.append([c.shape for c in train])
        return real(train, epsilon, mask, rng)

    monkeypatch.setattr(heldout, "_laplace_counts", spy)
    mask = np.zeros(counts[0].shape[:2], dtype=bool)
    mask[0, :7] = True
    fits = heldout._laplace_fits(counts, 1, 1.0, mask, np.random.default_rng(0), 6, 3, 0)
    assert shapes == [[(1, 1, s) for s in data.FEATURE_SIZES]]
    assert set(fits) == {"Laplace plug-in", "Laplace noise-aware"}
    assert all(f.states.shape == (3, *mask.shape) for f in fits.values())


def test_run_heldout_table_and_plot(tmp_path):
    rows = heldout.run_heldout("small", epsilons=(1.0,), num_states=2, splits=2, iterations=12, burn_in=6, seed=0)
    assert len(rows) == 2 * 2 * (1 + len(heldout.ROUTES))
    assert {r["route"] for r in rows} == {*heldout.ROUTES, "non-private"}
    assert all(np.isfinite(r["loglik"]) and r["loglik"] < 0 for r in rows)
    summary = heldout.summarize(rows)
    table = heldout.format_table(summary)
    assert all(route in table.splitlines()[0] for route in heldout.ROUTES)
    assert len(table.splitlines()) == 2 + 2  # header, rule, one row per model
    heldout.plot_heldout(summary, tmp_path / "heldout.png")
    assert (tmp_path / "heldout.png").stat().st_size > 0


def test_paired_differences_pair_by_split():
    rows = [
        {"preset": "p", "model": "HMM", "route": route, "epsilon": 1.0, "split": s, "loglik": base + shift}
        for s, base in enumerate((-6.0, -5.0, -7.0))
        for route, shift in (("OPS", 0.0), ("Laplace plug-in", 0.1 * (s + 1)), ("Laplace noise-aware", -0.2))
    ]
    diffs = {d["route"]: d for d in heldout.paired_differences(rows)}
    assert diffs["Laplace plug-in"]["mean"] == pytest.approx(0.2)
    assert diffs["Laplace plug-in"]["se"] == pytest.approx(0.1 / np.sqrt(3))  # s.d. of (0.1, 0.2, 0.3) over sqrt(3)
    assert diffs["Laplace noise-aware"]["mean"] == pytest.approx(-0.2) and diffs["Laplace noise-aware"]["se"] == pytest.approx(0.0, abs=1e-12)
    table = heldout.format_differences(list(diffs.values()))
    assert "Laplace plug-in − OPS" in table and "+0.2000 ± 0.0577" in table
