"""Whole-number statistics are released with discrete Laplace noise, and modelled with its pmf."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import scipy.stats as sps

import pymc_dp as pmdp
from pymc_dp.families._noise_aware import (
    laplace_equivalent_scale,
    laplace_marginal_count_logp,
    laplace_marginal_histogram_logp,
)
from pymc_dp.mechanisms.geometric import geometric_variance


def _discrete_laplace_logpmf(d, s):
    a = math.exp(-1.0 / s)
    return math.log((1 - a) / (1 + a)) - np.abs(d) / s


@pytest.mark.parametrize("s", [0.5, 1.0, 3.0])
def test_exact_count_likelihood_sums_the_discrete_laplace_pmf(s):
    trials, z = 40, 17.0
    k = np.arange(trials + 1)
    for p in (0.2, 0.45, 0.8):
        want = sps.binom.logpmf(k, trials, p) + _discrete_laplace_logpmf(z - k, s)
        got = laplace_marginal_count_logp(z, trials, np.float64(p), s, method="exact", mechanism="geometric").eval(mode="FAST_COMPILE")
        assert float(got) == pytest.approx(float(np.logaddexp.reduce(want)), rel=1e-10)


def test_exact_histogram_likelihood_sums_the_discrete_laplace_pmf():
    z, trials, s, p = np.array([3.0, -1.0, 4.0]), 6, 0.8, np.array([0.3, 0.2, 0.5])
    terms = [
        sps.multinomial.logpmf(c, trials, p) + _discrete_laplace_logpmf(z - np.array(c), s).sum()
        for c in itertools.product(range(trials + 1), repeat=3) if sum(c) == trials
    ]
    got = laplace_marginal_histogram_logp(z, trials, p, s, mechanism="geometric").eval(mode="FAST_COMPILE")
    assert float(got) == pytest.approx(float(np.logaddexp.reduce(terms)), rel=1e-10)


@pytest.mark.parametrize("s", [0.3, 1.0, 2.0, 10.0, 100.0])
def test_the_central_limit_form_uses_the_laplace_of_the_same_variance(s):
    b = laplace_equivalent_scale(s, "geometric")
    assert 2 * b * b == pytest.approx(geometric_variance(s), rel=1e-12)
    assert b < s
    assert float(laplace_equivalent_scale(np.float64(s) * 1.0, "geometric")) == pytest.approx(b)


def test_the_equivalent_scale_is_floored_where_the_noise_vanishes():
    # at s = 0.01 the noise is 0 but with probability e^-100: the floor s/2 keeps a CLT covariance regular
    assert laplace_equivalent_scale(0.01, "geometric") == 0.005
    assert laplace_equivalent_scale(2.0, "laplace") == 2.0


@pytest.mark.parametrize("family, data, args", [
    ("bernoulli", np.array([0, 1, 1, 0, 1]), {}),
    ("binomial", np.array([0, 3, 4]), {"n_trials": 4}),
    ("categorical", np.array([0, 2, 2, 1]), {"k": 3}),
    ("multinomial", np.array([[1, 2, 0], [0, 0, 3]]), {"k": 3, "n_trials": 3}),
])
@pytest.mark.parametrize("relation", ["replace", "add_remove"])
def test_counts_are_released_as_integers_by_the_geometric_mechanism(family, data, args, relation):
    ledger = pmdp.PrivacyLedger(neighbouring=relation)
    stats = pmdp.privatize(data, family, 0.5, ledger=ledger, rng=3, neighbouring=relation, **args)
    (entry,) = ledger.entries
    assert stats.mechanism == entry.mechanism == "geometric"
    assert entry.event["type"] == "discrete_laplace" and entry.event["sensitivity"] == stats.sensitivity
    assert np.all(stats.noisy == np.round(stats.noisy))
    assert stats.scale == pytest.approx(stats.sensitivity / 0.5)


def test_poisson_sums_are_counts_and_normal_sums_are_not():
    poisson = pmdp.privatize(np.array([0, 3, 7]), "poisson", 1.0, bounds={"upper": 7.6}, rng=1)
    assert poisson.mechanism == "geometric" and poisson.sensitivity == 7.0  # the bound is floored to a count
    normal = pmdp.privatize(np.array([0.0, 3.0]), "normal", 1.0, bounds={"x": (0, 4)}, rng=1)
    assert normal.mechanism == "laplace"


def test_noise_aware_bernoulli_is_calibrated_with_discrete_noise():
    """Truth drawn from the prior, the exact posterior on a grid: 90 % intervals cover 90 % of the time.

    400 releases at N = 30, ε = 0.5 (s = 2: the noise is as large as the sampling spread). The
    coverage of a calibrated interval is Binomial(400, 0.9)/400: sd 0.015, so [0.85, 0.95] is
    ±3.3 sd. The likelihood is the one ``observe_stats`` builds (the exact sum, discrete pmf).
    """
    import pytensor
    import pytensor.tensor as pt

    n, eps, reps = 30, 0.5, 400
    grid = np.linspace(0.0005, 0.9995, 1000)
    z = pt.dscalar("z")
    logp = pytensor.function([z], laplace_marginal_count_logp(z, n, grid, 1.0 / eps, mechanism="geometric"),
        mode="FAST_COMPILE")
    rng = np.random.default_rng(11)
    covered = 0
    for _ in range(reps):
        p = rng.uniform()
        stats = pmdp.privatize(rng.binomial(1, p, n), "bernoulli", eps, rng=rng)
        post = np.exp(logp(float(stats.noisy[0])) - logp(float(stats.noisy[0])).max())
        cdf = np.cumsum(post) / post.sum()
        lo, hi = grid[np.searchsorted(cdf, 0.05)], grid[np.searchsorted(cdf, 0.95)]
        covered += lo <= p <= hi
    assert 0.85 <= covered / reps <= 0.95


def test_the_summary_names_the_discrete_noise():
    stats = pmdp.privatize(np.array([0, 1, 1]), "bernoulli", 1.0, rng=1)
    assert "released with discrete Laplace noise of scale 1" in stats.summary()


def test_integer_sums_beyond_two_to_the_62_are_clamped_not_refused():
    # a refusal on the clipped sum would reveal Σx > 2⁶² at no cost: both data sets are released
    ledger = pmdp.PrivacyLedger()
    upper = 10**15
    low = pmdp.privatize(np.zeros(5000, dtype=int), "poisson", 1.0, bounds={"upper": upper}, ledger=ledger, rng=1)
    high = pmdp.privatize(np.full(5000, upper), "poisson", 1.0, bounds={"upper": upper}, ledger=ledger, rng=1)
    assert len(ledger.entries) == 2 and low.mechanism == high.mechanism == "geometric"
    assert abs(high.noisy[0] - 2.0**62) < 50 * upper  # clamped to 2⁶², then noise of scale 10¹⁵
    # a noise scale above 2⁵⁶ keeps the continuous Laplace (an integer release could overflow int64)
    assert pmdp.privatize(np.zeros(3, dtype=int), "poisson", 1e-3, bounds={"upper": 10**16}, rng=1).mechanism == "laplace"


def test_the_poisson_clipped_moments_need_no_sum_over_a_huge_bound():
    import pytensor
    import pytensor.tensor as pt

    from pymc_dp.families.poisson import CLIPPED_SUM_MAX_UPPER, Poisson

    mu = pt.dscalar("mu")
    upper = CLIPPED_SUM_MAX_UPPER - 1
    by_sum = pytensor.function([mu], list(Poisson.clipped_moments(mu, upper)), mode="FAST_COMPILE")
    closed = pytensor.function([mu], list(Poisson._clipped_moments_closed_form(mu, upper)), mode="FAST_COMPILE")
    for m in (0.5, 30.0, 0.9 * upper, upper, 1.2 * upper):
        np.testing.assert_allclose(closed(m), by_sum(m), rtol=1e-7, atol=1e-9)
    huge = pytensor.function([mu], list(Poisson.clipped_moments(mu, 2**36)),
        mode="FAST_COMPILE")  # O(1): no arange(2³⁶)
    np.testing.assert_allclose(huge(5.0), [5.0, 5.0], rtol=1e-12)
