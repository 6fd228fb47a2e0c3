"""Poisson counts seen through Laplace noise: the exact marginal, the exact imputation, and the noise-aware HMM."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import poisson

from pymc_dp.examples.warlogs import data
from pymc_dp.examples.warlogs.hmm import adjusted_rand_index, gibbs_hmm, gibbs_hmm_noise_aware
from pymc_dp.examples.warlogs.laplace_counts import add_log_marginals, impute_counts, log_marginal


def _brute_force(y: float, lam: float, b: float) -> float:
    n = np.arange(0, int(max(lam, y, 0) * 3 + 60 * b + 300))
    return float(logsumexp(poisson.logpmf(n, lam) - np.abs(y - n) / b))


def test_log_marginal_matches_the_full_sum():
    rng = np.random.default_rng(0)
    for _ in range(200):
        lam = float(np.exp(rng.uniform(-8, 9)))
        b = float(np.exp(rng.uniform(-1, 5)))
        y = float(rng.normal(lam, 3 * b + np.sqrt(lam))) if rng.random() < 0.8 else float(rng.uniform(-500, 5000))
        ref = _brute_force(y, lam, b)
        # the window drops terms below e^-36 of the mode's; the rest is rounding in the ratio walk
        assert log_marginal(y, np.log(lam), 1 / b) == pytest.approx(ref, rel=1e-9, abs=1e-9)


def _closed_form(y: float, lam: float, b: float) -> float:
    """The same sum through two Poisson tails at λe^{±1/b}, in 40-digit arithmetic (an independent reference)."""
    mpmath = pytest.importorskip("mpmath")
    with mpmath.workdps(40):
        y, lam, b = mpmath.mpf(y), mpmath.mpf(lam), mpmath.mpf(b)
        m = int(mpmath.floor(y))
        lo, hi = lam * mpmath.e ** (1 / b), lam * mpmath.e ** (-1 / b)
        below = mpmath.e ** (lo - y / b) * mpmath.gammainc(m + 1, lo, mpmath.inf, regularized=True) if m >= 0 else 0
        above = mpmath.e ** (hi + y / b) * (mpmath.gammainc(m + 1, 0, hi, regularized=True) if m >= 0 else 1)
        return float(mpmath.log(below + above) - lam)


def test_log_marginal_is_exact_to_rounding():
    """The truncation leaves out less than 2e-16 of the sum (module docstring): only rounding remains.

    The log-marginal is a difference of terms as large as λ and |y|/b, so its rounding
    error scales with them; 1e-13 of that scale is about 500 ulps.
    """
    rng = np.random.default_rng(5)
    cases = [(3.0, 0.5, 3.0), (3.0, 0.5, -2.5), (1e-9, 2.0, 40.0), (4000.0, 2.0, 3500.5), (0.3, 40.0, 2.0), (700.0, 0.2, 650.0)]
    for _ in range(300):
        lam = float(np.exp(rng.uniform(-8, 9)))
        b = float(np.exp(rng.uniform(-2, 5)))
        y = float(rng.normal(lam, 3 * b + np.sqrt(lam))) if rng.random() < 0.8 else float(rng.uniform(-500, 5000))
        cases.append((lam, b, float(np.round(y)) if rng.random() < 0.2 else y))
    for lam, b, y in cases:
        scale = max(1.0, lam, abs(y) / b)
        assert abs(log_marginal(y, np.log(lam), 1 / b) - _closed_form(y, lam, b)) <= 1e-13 * scale, (lam, b, y)


def test_log_marginal_of_a_zero_rate_is_the_noise_at_zero():
    assert log_marginal(7.5, -800.0, 0.5) == pytest.approx(-3.75)


def test_imputation_draws_the_exact_conditional():
    lam, b, y, draws = 20.0, 5.0, 30.3, 200_000
    rng = np.random.default_rng(1)
    values = impute_counts(
        np.full((1, 1, draws), y), np.zeros((1, 1)), np.full((1, draws), np.log(lam)), np.zeros((1, 1), dtype=np.int64),
        1 / b, np.ones((1, 1), dtype=bool), rng.random((1, 1, draws)),
    )[0, 0]
    n = np.arange(120)
    log_p = poisson.logpmf(n, lam) - np.abs(y - n) / b
    p = np.exp(log_p - logsumexp(log_p))
    freq = np.bincount(values, minlength=n.size)[: n.size] / draws
    # each bin's frequency has s.d. sqrt(p(1-p)/N); 5 s.d. over 120 bins fails by chance with prob. < 1e-4
    assert np.all(np.abs(freq - p) <= 5 * np.sqrt(p * (1 - p) / draws) + 1e-5)
    assert values.min() >= 0


@pytest.mark.parametrize(
    ("lam", "b", "y"),
    [(20.0, 5.0, 8.0), (3.0, 0.7, 12.6), (150.0, 2.0, 149.0), (0.2, 3.0, -4.2), (60.0, 30.0, 95.5)],
)
def test_imputation_is_exact_on_both_sides_of_the_mode(lam, b, y):
    """Counts below, at and above y; noise sharper or flatter than the Poisson; the draws follow the exact pmf."""
    draws = 100_000
    rng = np.random.default_rng(int(lam * 10 + b))
    values = impute_counts(
        np.full((1, 1, draws), y), np.zeros((1, 1)), np.full((1, draws), np.log(lam)), np.zeros((1, 1), dtype=np.int64),
        1 / b, np.ones((1, 1), dtype=bool), rng.random((1, 1, draws)),
    )[0, 0]
    n = np.arange(int(lam + abs(y) + 30 * b + 100))
    log_p = poisson.logpmf(n, lam) - np.abs(y - n) / b
    p = np.exp(log_p - logsumexp(log_p))
    freq = np.bincount(values, minlength=n.size)[: n.size] / draws
    assert values.max() < n.size
    # 5 s.d. per bin: a chance failure anywhere has probability below 1e-4
    assert np.all(np.abs(freq - p) <= 5 * np.sqrt(p * (1 - p) / draws) + 1e-5)


def test_one_call_with_per_value_scales_equals_one_call_per_release():
    rng = np.random.default_rng(6)
    y = [rng.normal(30, 5, (2, 4, 3)), rng.normal(2, 3, (2, 4, 5))]
    log_theta = [np.log(rng.dirichlet(np.ones(3), 2)), np.log(rng.dirichlet(np.ones(5), 2))]
    log_mu, seen, scales = np.log(rng.uniform(10, 90, (2, 4))), np.ones((2, 4), dtype=bool), [0.5, 3.0]
    apart = np.zeros((2, 4, 2))
    for c, lt, b in zip(y, log_theta, scales):
        add_log_marginals(apart, c, log_mu, lt, 1 / b, seen)
    together = np.zeros((2, 4, 2))
    inv_b = np.repeat(1 / np.array(scales), [3, 5])
    add_log_marginals(together, np.concatenate(y, axis=2), log_mu, np.concatenate(log_theta, axis=1), inv_b, seen)
    np.testing.assert_allclose(together, apart, rtol=1e-14)
    with pytest.raises(ValueError, match="inv_b"):
        add_log_marginals(together, np.concatenate(y, axis=2), log_mu, np.concatenate(log_theta, axis=1), [1.0, 2.0], seen)


def test_unobserved_cells_add_nothing_and_impute_zero():
    y = np.full((1, 2, 3), 4.0)
    out = np.zeros((1, 2, 2))
    observed = np.array([[True, False]])
    log_theta = np.log(np.array([[0.2, 0.3, 0.5], [0.6, 0.2, 0.2]]))
    add_log_marginals(out, y, np.log(np.full((1, 2), 12.0)), log_theta, 1.0, observed)
    assert np.all(out[0, 1] == 0) and np.all(out[0, 0] != 0)
    n = impute_counts(y, np.zeros((1, 2)), log_theta, np.zeros((1, 2), dtype=np.int64), 1.0, observed, np.full((1, 2, 3), 0.5))
    assert np.all(n[0, 1] == 0)


def _small_counts():
    logs = data.generate("small", seed=0)
    return logs, data.feature_counts(logs)


def test_noise_aware_removes_the_plug_in_bias():
    """Naive Bayes on per-cell counts with Laplace(1) noise: clamping each cell inflates rare values, the model does not.

    About 0.5 records per category and cell: clamping adds E[max(0, L)] = b/2 = 0.5 to
    every empty cell, doubling the rare categories, while the noise in a category's
    total over 216 cells has s.d. only about 21 against about 125 records.
    """
    logs, counts = _small_counts()
    rng = np.random.default_rng(2)
    noisy = [c + rng.laplace(0.0, 1.0, c.shape) for c in counts]
    truth = counts[1].sum(axis=(0, 1)) / counts[1].sum()
    plug = np.exp(gibbs_hmm(noisy, 1, 60, 30, seed=3).log_emissions[1][:, 0]).mean(axis=0)
    aware = np.exp(gibbs_hmm_noise_aware(noisy, 1.0, 1, 60, 30, seed=3).log_emissions[1][:, 0]).mean(axis=0)
    plug_l1, aware_l1 = np.abs(plug - truth).sum(), np.abs(aware - truth).sum()
    assert aware_l1 < 0.5 * plug_l1, (aware_l1, plug_l1)


def test_noise_aware_recovers_the_regimes():
    logs, counts = _small_counts()
    rng = np.random.default_rng(4)
    noisy = [c + rng.laplace(0.0, 2.0, c.shape) for c in counts]  # ε = 1 per feature
    fit = gibbs_hmm_noise_aware(noisy, 2.0, 2, 60, 30, seed=5)
    modal = np.apply_along_axis(lambda s: np.bincount(s, minlength=2).argmax(), 0, fit.states)
    assert adjusted_rand_index(modal, logs.true_states) >= 0.8


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"noise_scales": 0.0}, "noise_scales"),
        ({"noise_scales": [1.0, 1.0]}, None),
        ({"observed": np.ones((2, 2), dtype=bool)}, "observed"),
        ({"rate_prior": (0.0, 1.0)}, "rate_prior"),
    ],
)
def test_noise_aware_refuses_bad_arguments(kwargs, match):
    y = [np.zeros((1, 3, 2))] * 5
    args = {"noise_scales": 1.0, **kwargs}
    with pytest.raises(ValueError, match=match):
        gibbs_hmm_noise_aware(y, num_states=2, iterations=2, burn_in=1, **args)


def test_noise_aware_refuses_non_finite_counts():
    y = [np.zeros((1, 3, 2))] * 4 + [np.full((1, 3, 2), np.nan)]
    with pytest.raises(ValueError, match="finite"):
        gibbs_hmm_noise_aware(y, 1.0, 2, 2, 1)
