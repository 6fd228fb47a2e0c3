"""Noise-aware likelihoods of released counts (Bernoulli, Binomial) and their calibration."""

from __future__ import annotations

import math

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from scipy import integrate, stats

import pymc_dp as pmdp
from pymc_dp.examples.noise_aware_calibration import beta_bernoulli_coverage
from pymc_dp.families._noise_aware import (
    EXACT_SUM_MAX_TRIALS,
    laplace_marginal_count_logp,
    normal_laplace_logpdf,
)

GRID = np.linspace(0.0005, 0.9995, 1000)


def _normal_laplace(mean, sd, b):
    z = pt.dscalar("z")
    return pytensor.function([z], normal_laplace_logpdf(z, mean, sd, b), mode="FAST_COMPILE")


@pytest.mark.parametrize("z", [-5.0, 0.0, 3.0, 7.0, 12.0])
def test_normal_laplace_density_matches_numerical_convolution(z):
    f = _normal_laplace(3.0, 2.0, 1.5)
    exact = integrate.quad(
        lambda l: stats.norm(3, 2).pdf(z - l) * stats.laplace(0, 1.5).pdf(l), -60, 60, points=[0.0, z - 3.0], limit=200
    )[0]
    assert float(f(z)) == pytest.approx(math.log(exact), rel=1e-9)


def test_normal_laplace_density_has_the_right_limits_and_far_tails():
    # b → 0: the normal; b → ∞: the Laplace; far tail (-50): the closed form
    # log(1/(2b)) − |d|/b + σ²/(2b²) that dominates there (checked to 40 digits elsewhere).
    assert float(_normal_laplace(3.0, 2.0, 1e-9)(4.0)) == pytest.approx(stats.norm(3, 2).logpdf(4.0), abs=1e-9)
    assert float(_normal_laplace(3.0, 1e-6, 1.5)(7.0)) == pytest.approx(stats.laplace(3, 1.5).logpdf(7.0), abs=1e-6)
    tail = -math.log(3.0) - 53 / 1.5 + 4 / (2 * 1.5**2)
    assert float(_normal_laplace(3.0, 2.0, 1.5)(-50.0)) == pytest.approx(tail, abs=1e-6)
    z = pt.dscalar()
    grad = pytensor.function([z], pytensor.grad(normal_laplace_logpdf(z, 3.0, 2.0, 1e-7), z), mode="FAST_COMPILE")
    assert float(grad(4.0)) == pytest.approx(-0.25, rel=1e-6)


def _grid_posterior(logp):
    w = np.exp(logp - logp.max())
    w /= w.sum()
    mean = (w * GRID).sum()
    sd = math.sqrt((w * (GRID - mean) ** 2).sum())
    return w, mean, sd


def _count_logp_fn(trials, b, method):
    z = pt.dscalar("z")
    p = pt.dvector("p")
    return pytensor.function([z, p], laplace_marginal_count_logp(z, trials, p, b, method=method), mode="FAST_COMPILE")


def test_exact_and_clt_count_likelihoods_agree_where_both_apply():
    trials, b = EXACT_SUM_MAX_TRIALS, 5.0  # the switch point: the largest exact sum
    z = 0.3 * trials + 4.2
    _, m_exact, s_exact = _grid_posterior(_count_logp_fn(trials, b, "exact")(z, GRID))
    _, m_clt, s_clt = _grid_posterior(_count_logp_fn(trials, b, "clt")(z, GRID))
    # At the switch point the binomial is close to normal: posterior means agree to 2% of
    # a posterior sd and the sds to 2%, so "auto" is accurate on both sides of it.
    assert abs(m_exact - m_clt) < 0.02 * s_exact
    assert s_clt == pytest.approx(s_exact, rel=0.02)


def test_huge_epsilon_noise_aware_posterior_is_the_non_private_one():
    x = np.random.default_rng(1).binomial(1, 0.3, size=300)
    stats_ = pmdp.privatize(x, "bernoulli", 1e8, rng=2)
    fn = _count_logp_fn(300, stats_.scale, "exact")
    _, mean, sd = _grid_posterior(fn(float(stats_.noisy[0]), GRID))
    exact = stats.beta(1 + x.sum(), 1 + 300 - x.sum())
    assert mean == pytest.approx(exact.mean(), abs=1e-3 * exact.std())
    assert sd == pytest.approx(exact.std(), rel=1e-3)


def test_noise_aware_posterior_is_wider_than_plug_in_when_noise_matters():
    x = np.random.default_rng(3).binomial(1, 0.3, size=50)
    s = pmdp.privatize(x, "bernoulli", 0.1, rng=4)
    aware = _grid_posterior(_count_logp_fn(50, s.scale, "exact")(float(s.noisy[0]), GRID))[2]
    k = s.values[0]
    plug = _grid_posterior(k * np.log(GRID) + (50 - k) * np.log1p(-GRID))[2]
    # noise sd √2·10 ≈ 14 counts against a binomial sd of ~3: the honest posterior is far wider.
    assert aware > 2 * plug


@pytest.mark.parametrize("n, epsilon", [(50, 0.1), (50, 1.0), (500, 0.1), (500, 1.0)])
def test_noise_aware_intervals_are_calibrated(n, epsilon):
    aware, plug = beta_bernoulli_coverage(n, epsilon, repeats=200, seed=0)
    # True p drawn from the prior (simulation-based calibration): over 200 data sets the
    # coverage of a calibrated 90% interval has sd 0.021, so a
    # calibrated method lands in [0.85, 0.95] (the criterion) with ~98% chance;
    # fixed seeds make the check deterministic.
    assert 0.85 <= aware <= 0.95, (aware, plug)
    if (n, epsilon) == (50, 0.1):
        assert plug < 0.6  # the plug-in is far from honest when the noise dominates


def test_observe_stats_noise_aware_samples_with_nuts():
    x = np.random.default_rng(5).binomial(4, 0.6, size=40)
    s = pmdp.privatize(x, "binomial", 0.5, n_trials=4, rng=6)
    with pm.Model():
        p = pm.Beta("p", 1, 1)
        pmdp.observe_stats("k", pm.Binomial.dist(n=4, p=p), s, noise_aware=True)
        idata = pmdp.sample(draws=300, tune=300, chains=1, progressbar=False, random_seed=1)
    assert 0.3 < float(idata.posterior["p"].mean()) < 0.9


def test_noise_aware_refusals_spend_nothing():
    ledger = pmdp.PrivacyLedger(neighbouring="add_remove")
    with pm.Model() as model:
        p = pm.Beta("p", 1, 1)
        pm.Bernoulli("y", p=p, observed=np.array([0, 1, 1, 0]))
    with pytest.raises(ValueError, match="nothing was spent"):  # an unknown setting, refused before spending
        pmdp.privatize_model(model, 1.0, ledger=ledger, noise_aware="yes")
    assert len(ledger) == 0
    auto = pmdp.privatize_model(model, 1.0, ledger=ledger, rng=1)
    assert auto.noise_aware == {"y": True}  # auto: N private, so a latent count (tests/test_latent_count.py)
