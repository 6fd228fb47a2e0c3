"""The OPS route of the war-logs HMM: floors, temperature, and the truncated-Dirichlet sweeps."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pymc_dp.examples.warlogs import data, heldout, hmm
from pymc_dp.examples.warlogs.ops import ops_temperature
from pymc_dp.examples.warlogs.steps import truncated_dirichlet_update


def test_ops_temperature_follows_the_floors():
    ops = ops_temperature(1.0, multiplier=10.0)
    assert ops["floors"] == [1 / (10 * k) for k in data.FEATURE_SIZES]
    # Σ_d log((1 − (K_d − 1) a₀) / a₀): log 73 + log 433 + 3 log 19.
    assert ops["sensitivity"] == pytest.approx(math.log(73) + math.log(433) + 3 * math.log(19), rel=1e-12)
    assert ops["temperature"] == pytest.approx(2 * ops["sensitivity"])
    assert ops_temperature(100.0)["temperature"] == 1.0  # capped at T = 1
    with pytest.raises(ValueError):
        ops_temperature(0.0)


def test_truncated_dirichlet_sweeps_leave_the_truncated_dirichlet_invariant():
    # 20 000 independent chains, 60 sweeps each from the centre, against 400 000
    # rejection draws: means within 4.5 s.e. of the difference.
    rng = np.random.default_rng(0)
    alpha, floor = np.array([2.0, 0.5, 5.0]), 0.05
    theta = np.full((20_000, 3), 1 / 3)
    for _ in range(60):
        theta = truncated_dirichlet_update(rng, theta, alpha, floor)
    ref = rng.dirichlet(alpha, size=400_000)
    ref = ref[(ref >= floor).all(axis=1)]
    se = np.sqrt(theta.var(axis=0) / theta.shape[0] + ref.var(axis=0) / ref.shape[0])
    assert np.all(np.abs(theta.mean(axis=0) - ref.mean(axis=0)) <= 4.5 * se)
    assert np.all(theta >= floor) and np.allclose(theta.sum(axis=1), 1.0)


def test_floors_deep_in_the_tail_and_the_ops_engine():
    rng = np.random.default_rng(1)
    theta = np.full((4, 3), 1 / 3)
    for _ in range(20):  # a posterior concentrated far from the start, its floors deep in the tail
        theta = truncated_dirichlet_update(rng, theta, np.array([0.1, 20_000.0, 5.0]), 0.01)
    assert np.all(theta >= 0.01) and np.all(theta[:, 1] > 0.97)
    with pytest.raises(ValueError, match="floor"):
        truncated_dirichlet_update(rng, np.array([[0.001, 0.5, 0.499]]), np.ones(3), 0.01)
    counts = data.feature_counts(data.generate("small", seed=0))
    ops = ops_temperature(5.0)
    fit = hmm.gibbs_hmm(counts, 2, 40, 20, temperature=ops["temperature"], floors=ops["floors"], seed=0)
    for d, floor in enumerate(ops["floors"]):
        assert np.all(np.exp(fit.log_emissions[d]) >= floor * (1 - 1e-12))
    with pytest.raises(ValueError, match="floors"):
        hmm.gibbs_hmm(counts, 2, 4, 2, floors=[0.5] * 5)
