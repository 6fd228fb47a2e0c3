"""Gibbs sampling of the war-logs HMM on exact and Laplace-noised counts."""

from __future__ import annotations

import numpy as np
import pytest

from pymc_dp.examples.warlogs import data, hmm


def test_log_dirichlet_sample_has_the_dirichlet_mean_and_survives_tiny_concentrations():
    rng = np.random.default_rng(0)
    alpha = np.array([0.5, 2.0, 7.5])
    draws = np.exp(hmm.log_dirichlet_sample(rng, np.broadcast_to(alpha, (40_000, 3))))
    mean = alpha / alpha.sum()
    sd = np.sqrt(mean * (1 - mean) / (alpha.sum() + 1) / 40_000)  # s.e. of the mean of Dir components
    assert np.all(np.abs(draws.mean(axis=0) - mean) <= 4.5 * sd)
    tiny = hmm.log_dirichlet_sample(rng, np.full((1000, 4), 1e-3))
    assert np.all(np.isfinite(tiny)) and np.allclose(np.logaddexp.reduce(tiny, axis=1), 0.0)


def test_adjusted_rand_index():
    a = np.array([0, 0, 1, 1, 2, 2])
    assert hmm.adjusted_rand_index(a, a) == 1.0
    assert hmm.adjusted_rand_index(a, (a + 1) % 3) == 1.0  # renaming does not matter
    # Hubert & Arabie's example value: {0,0,0,1,1,1} vs {0,0,1,1,2,2} gives 0.2424...
    assert hmm.adjusted_rand_index([0, 0, 0, 1, 1, 1], [0, 0, 1, 1, 2, 2]) == pytest.approx(0.24242424, abs=1e-8)
    with pytest.raises(ValueError):
        hmm.adjusted_rand_index([0], [0])


@pytest.mark.parametrize(("noise", "threshold"), [(None, 0.95), (1.0, 0.8)])
def test_gibbs_recovers_the_regimes_of_the_small_preset(noise, threshold):
    # 3 regions × 72 months, ≈ 26 records per region-month, 2 regimes. Exact counts:
    # ARI ≈ 1.0; Laplace noise of scale 2/ε per count at ε = 1 per feature: ≈ 0.89
    # (seeded; the thresholds leave room for the sampler's own randomness).
    logs = data.generate("small", seed=0)
    counts = data.feature_counts(logs)
    if noise is not None:
        rng = np.random.default_rng(0)
        counts = [c + rng.laplace(0.0, 2.0 / noise, size=c.shape) for c in counts]
    fit = hmm.gibbs_hmm(counts, 2, iterations=200, burn_in=100, seed=2)
    assert fit.states.shape == (100, 3, 72) and fit.log_transitions.shape == (100, 2, 2)
    ari = np.mean([hmm.adjusted_rand_index(s, logs.true_states) for s in fit.states[::10]])
    assert ari >= threshold
    assert np.all(np.isfinite(fit.log_likelihood))


def test_naive_bayes_is_the_one_state_case():
    logs = data.generate("small", seed=1)
    counts = data.feature_counts(logs)
    fit = hmm.gibbs_hmm(counts, 1, iterations=20, burn_in=10, seed=0)
    assert np.all(fit.states == 0)
    # Its emission distribution is the pooled feature frequencies (to within the posterior's spread).
    pooled = counts[0].sum(axis=(0, 1)) / counts[0].sum()
    assert np.allclose(np.exp(fit.log_emissions[0]).mean(axis=0)[0], pooled, atol=0.01)


def test_noisy_counts_are_clamped_cell_by_cell():
    from pymc_dp.examples.warlogs.steps import clamped_counts

    noisy = np.array([[[3.5, -2.0], [-0.1, 4.0]]])
    np.testing.assert_array_equal(clamped_counts(noisy), [[[3.5, 0.0], [0.0, 4.0]]])
    with pytest.raises(ValueError, match="grid"):
        hmm.gibbs_hmm([np.zeros((2, 3, 4)), np.zeros((2, 4, 4))], 2)


def test_bad_arguments():
    counts = data.feature_counts(data.generate("small", seed=1))
    with pytest.raises(ValueError, match="num_states"):
        hmm.gibbs_hmm(counts, 0)
    with pytest.raises(ValueError, match="burn_in"):
        hmm.gibbs_hmm(counts, 2, iterations=10, burn_in=10)
    with pytest.raises(ValueError, match="finite"):
        hmm.gibbs_hmm([np.full((2, 3, 4), np.nan)], 2)
    with pytest.raises(ValueError, match="shape"):
        hmm.gibbs_hmm([np.zeros((2, 3))], 2)
