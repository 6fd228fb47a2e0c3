"""Noise-aware likelihoods of releases of several numbers: Normal (σ unknown), counts, regression.

The true statistic is modelled by the multivariate CLT, S ≈ Normal(N m, N C), and the
Laplace noise on each coordinate as a scale mixture of normals with one latent
Exponential(1) variable per coordinate (``{name}_noise_mixing``), which NUTS samples
with the parameters. Checked here: the moments (Isserlis) against simulation, the
mixture against the Laplace density, the large-ε limit against the exact non-private
posteriors, honest widening at small ε, the privacy flag end to end, and the
public-records declaration.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from scipy import integrate, stats as sps

import pymc_dp as pmdp
from pymc_dp import _compat
from pymc_dp.families import ClippedRecordsWarning, LinearRegression
from pymc_dp.families._noise_aware import (
    EXACT_HISTOGRAM_MAX_TRIALS,
    clt_noise_aware_logp,
    gaussian_product_moments,
    laplace_marginal_histogram_logp,
)
from pymc_dp.families.categorical import Categorical
from pymc_dp.families.normal import Normal

SAMPLE = dict(draws=1000, tune=1000, chains=2, cores=1, progressbar=False, compute_convergence_checks=False)


def _sample(model: pm.Model, seed: int):
    with model:
        return pm.sample(random_seed=seed, target_accept=0.9, **SAMPLE).posterior


# --------------------------------------------------------------------------- the moments


def test_gaussian_product_moments_match_simulation():
    rng = np.random.default_rng(0)
    mean = np.array([0.5, -1.0, 2.0])
    a = rng.normal(size=(3, 3))
    cov = a @ a.T
    pairs = [(0, 0), (0, 1), (1, 2), (2, 2)]
    m, c = gaussian_product_moments(mean, cov, pairs)
    z = rng.multivariate_normal(mean, cov, size=400_000)
    prods = np.stack([z[:, i] * z[:, j] for i, j in pairs], axis=1)
    # Monte Carlo standard errors: sd/√n for the means; the products have kurtosis well
    # under 100 here, so a covariance entry's s.e. is below 10·sqrt(var_i var_j / n).
    se_mean = prods.std(axis=0) / math.sqrt(len(z))
    assert np.all(np.abs(prods.mean(axis=0) - m) < 5 * se_mean)
    sd = np.sqrt(np.diag(c))
    se_cov = 10 * np.outer(sd, sd) / math.sqrt(len(z))
    assert np.all(np.abs(np.cov(prods.T) - c) < 5 * se_cov)


def test_constant_component_turns_products_into_first_moments():
    """z = (1, x): the pairs (0, 1) and (1, 1) are x and x², with Normal's known moments."""
    mu, s2 = 1.5, 0.7
    m, c = gaussian_product_moments(np.array([1.0, mu]), np.array([[0.0, 0.0], [0.0, s2]]), [(0, 1), (1, 1)])
    np.testing.assert_allclose(m, [mu, mu**2 + s2])
    np.testing.assert_allclose(c, [[s2, 2 * mu * s2], [2 * mu * s2, 2 * s2**2 + 4 * mu**2 * s2]])


def test_categorical_and_regression_moments():
    p = np.array([0.2, 0.3, 0.5])
    mean, cov = Categorical(k=3).record_moments({"p": pt.as_tensor(p)})
    np.testing.assert_allclose(mean.eval(mode="FAST_COMPILE"), p)
    np.testing.assert_allclose(cov.eval(mode="FAST_COMPILE"), np.diag(p) - np.outer(p, p))
    fam = LinearRegression(n_features=1)
    mean, cov = fam.record_moments({"beta": 2.0, "sigma": 0.5, "x_mu": 1.0, "x_sigma": 0.0})
    # x ≡ 1: the statistics (x², xy, y²) are (1, y, y²) with y ~ Normal(2, 0.25).
    np.testing.assert_allclose(mean.eval(mode="FAST_COMPILE"), [1.0, 2.0, 4.25])
    np.testing.assert_allclose(cov.eval(mode="FAST_COMPILE"), [[0, 0, 0], [0, 0.25, 1.0], [0, 1.0, 2 * 0.0625 + 4 * 4 * 0.25]])
    with pytest.raises(ValueError, match="x_mu"):
        fam.record_moments({"beta": 2.0, "sigma": 0.5})


def test_scale_mixture_integrates_to_the_normal_laplace_density():
    """In one dimension the latent form, u integrated out numerically, is the closed form."""
    b, n, m, v, z = 3.0, 50.0, 0.4, 0.9, 27.0
    u = pt.dvector("u")
    latent = clt_noise_aware_logp("t", np.array([z, 0.0]), n, b, "replace", pt.as_tensor([m, 0.0]),
                                  pt.as_tensor(np.diag([v, 1.0])), u)
    f = pytensor.function([u], latent, mode="FAST_COMPILE")
    second = sps.norm(0.0, math.sqrt(n * 1.0 + 2 * b * b * 1.0))  # the dummy coordinate at u₂ = 1

    def density(u1: float) -> float:
        return math.exp(f(np.array([u1, 1.0])) - second.logpdf(0.0)) * math.exp(-u1)

    marginal = integrate.quad(density, 0, np.inf, limit=200)[0]
    closed = clt_noise_aware_logp("t", np.array([z]), n, b, "replace", pt.as_tensor(m), pt.as_tensor(v)).eval(mode="FAST_COMPILE")
    assert math.log(marginal) == pytest.approx(float(closed), abs=1e-6)


# --------------------------------------------------------------------------- posteriors


def _normal_release(n: int, epsilon: float, seed: int):
    x = np.random.default_rng(seed).normal(1.0, 1.5, n)
    return pmdp.privatize(x, "normal", epsilon, bounds={"x": (-8.0, 8.0)}, rng=seed)


def _normal_model(stats, noise_aware: bool) -> pm.Model:
    with pm.Model() as model:
        s2 = pm.InverseGamma("sigma2", 3.0, 3.0)
        mu = pm.Normal("mu", 0.0, pt.sqrt(s2 / 0.5))
        pmdp.observe_stats("x", pm.Normal.dist(mu, pt.sqrt(s2)), stats, noise_aware=noise_aware)
    return model


def test_normal_unknown_sigma_at_huge_epsilon_is_the_exact_posterior():
    stats = _normal_release(1000, 1e5, seed=3)
    post = _sample(_normal_model(stats, True), seed=1)
    conj = Normal().conjugate_posterior(stats.values, 1000, mu0=0.0, kappa0=0.5, alpha0=3.0, beta0=3.0)
    mu_sd = math.sqrt(conj["beta"] / ((conj["alpha"] - 1) * conj["kappa"]))
    s2_mean = conj["beta"] / (conj["alpha"] - 1)
    s2_sd = s2_mean / math.sqrt(conj["alpha"] - 2)
    # Tolerances: Monte Carlo error (ESS ≳ 500: 0.05 sd) plus the CLT's O(1/√N) error in
    # the (Σx, Σx²) likelihood (≈ 0.03 sd at N = 1000): 0.15 sd for the means; the sds
    # within 10 %.
    assert abs(float(post["mu"].mean()) - conj["mu"]) < 0.15 * mu_sd
    assert float(post["mu"].std()) == pytest.approx(mu_sd, rel=0.1)
    assert abs(float(post["sigma2"].mean()) - s2_mean) < 0.15 * s2_sd
    assert float(post["sigma2"].std()) == pytest.approx(s2_sd, rel=0.1)


def test_normal_noise_aware_is_wider_than_plugin_when_noise_dominates():
    stats = _normal_release(100, 0.5, seed=4)  # Δ ≈ 72, b ≈ 145: noise ≫ spread of Σx²
    aware = _sample(_normal_model(stats, True), seed=2)
    plug = _sample(_normal_model(stats, False), seed=2)
    # The noise-aware posterior of σ² must carry the noise: at least twice as wide
    # (with noise sd ≈ 200 against a Σx² spread of ≈ 45, it is several times wider).
    assert float(aware["sigma2"].std()) > 2 * float(plug["sigma2"].std())
    assert "x_noise_mixing" not in aware  # two numbers: the bivariate density, nothing latent


@pytest.mark.parametrize("n", [150, 1000], ids=["exact-sum", "clt"])
def test_categorical_at_huge_epsilon_is_the_dirichlet_posterior(n):
    rng = np.random.default_rng(5)
    x = rng.choice(3, p=[0.2, 0.3, 0.5], size=n)
    stats = pmdp.privatize(x, "categorical", 1e5, k=3, rng=5)
    with pm.Model() as model:
        p = pm.Dirichlet("p", np.ones(3))
        pmdp.observe_stats("c", pm.Categorical.dist(p=p), stats, noise_aware=True)
    assert ("c_noise_mixing" in model.named_vars) == (n > EXACT_HISTOGRAM_MAX_TRIALS)
    with model:  # 2 × 500 draws: NUTS on a 2-D simplex gives ESS ≈ 800-1000, so Monte Carlo error ≈ 0.035 sd
        post = pm.sample(**{**SAMPLE, "draws": 500, "tune": 500}, random_seed=3, target_accept=0.9).posterior
    alpha = 1.0 + np.bincount(x, minlength=3)
    exact = sps.dirichlet(alpha)
    got_mean = post["p"].mean(("chain", "draw")).values
    got_sd = post["p"].std(("chain", "draw")).values
    exact_sd = np.sqrt(exact.var())
    # Exact sum: only Monte Carlo error (≈ 0.035 sd for the means, ≈ 2.5 % for the sds: 4 of
    # their s.e. inside the bounds below). CLT: counts of ≥ 200 (relative skew ≲ 0.1) on top.
    # 0.15 sd for the means, 10 % for the sds.
    assert np.all(np.abs(got_mean - exact.mean()) < 0.15 * exact_sd)
    np.testing.assert_allclose(got_sd, exact_sd, rtol=0.1)


def _laplace_logpdf(z, b):
    return -np.abs(z) / b - math.log(2 * b)


def test_histogram_sum_with_two_categories_is_the_binomial_sum():
    n, b, p1 = 60, 3.0, 0.35
    z = np.array([41.7, 16.2])
    s = np.arange(n + 1)
    brute = np.logaddexp.reduce(
        sps.binom(n, p1).logpmf(s) + _laplace_logpdf(z[0] - (n - s), b) + _laplace_logpdf(z[1] - s, b)
    )
    got = laplace_marginal_histogram_logp(z, n, np.array([1 - p1, p1]), b).eval(mode="FAST_COMPILE")
    assert float(got) == pytest.approx(brute, rel=1e-10)


def test_histogram_sum_with_three_categories_matches_enumeration():
    n, b, p = 15, 1.5, np.array([0.2, 0.5, 0.3])
    z = np.array([2.4, 9.1, 3.3])
    terms = [
        sps.multinomial(n, p).logpmf([c1, c2, n - c1 - c2])
        + sum(_laplace_logpdf(z[j] - c, b) for j, c in enumerate((c1, c2, n - c1 - c2)))
        for c1 in range(n + 1)
        for c2 in range(n + 1 - c1)
    ]
    got = laplace_marginal_histogram_logp(z, n, p, b).eval(mode="FAST_COMPILE")
    assert float(got) == pytest.approx(np.logaddexp.reduce(terms), rel=1e-10)


def test_histogram_exact_sum_limit_and_multinomial_trials():
    from pymc_dp.families.multinomial import Multinomial

    cat = Categorical(k=3)
    assert cat.noise_mixing_size(3, EXACT_HISTOGRAM_MAX_TRIALS) == 0
    assert cat.noise_mixing_size(3, EXACT_HISTOGRAM_MAX_TRIALS + 1) == 3
    multi = Multinomial(k=3, n_trials=4)  # N records of 4 trials: 4N trials in all
    assert multi.noise_mixing_size(3, EXACT_HISTOGRAM_MAX_TRIALS // 4) == 0
    assert multi.noise_mixing_size(3, EXACT_HISTOGRAM_MAX_TRIALS // 4 + 1) == 3
    x = np.random.default_rng(12).multinomial(4, [0.3, 0.3, 0.4], size=25)
    stats = pmdp.privatize(x, "multinomial", 1.0, k=3, n_trials=4, rng=12)
    p = pt.dvector("p")
    got = pytensor.function([p], multi.noise_aware_loglik(stats.noisy, 25, stats.scale, "replace", {"p": p}),
        mode="FAST_COMPILE")
    direct = laplace_marginal_histogram_logp(stats.noisy, 100, p, stats.scale)
    assert got(np.array([0.2, 0.3, 0.5])) == pytest.approx(float(direct.eval({p: np.array([0.2, 0.3, 0.5])},
        mode="FAST_COMPILE")))
    mean, cov = multi.record_moments({"p": pt.as_tensor(np.array([0.2, 0.3, 0.5]))})  # the CLT form above the limit
    np.testing.assert_allclose(mean.eval(mode="FAST_COMPILE"), [0.8, 1.2, 2.0])
    np.testing.assert_allclose(cov.eval(mode="FAST_COMPILE"), 4 * (np.diag([0.2, 0.3, 0.5]) - np.outer([0.2, 0.3, 0.5], [0.2, 0.3, 0.5])))


def test_regression_at_huge_epsilon_matches_the_conjugate_posterior():
    rng = np.random.default_rng(6)
    n = 2000
    x = rng.normal(0.0, 0.5, n)
    y = 0.8 * x + rng.normal(0.0, 0.3, n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClippedRecordsWarning)
        stats = pmdp.privatize(LinearRegression.stack(x, y), "linear_regression", 1e6, n_features=1,
                               bounds={"x": (-3.0, 3.0), "y": (-4.0, 4.0)}, rng=6)
    with pm.Model() as model:
        s2 = pm.InverseGamma("sigma2", 3.0, 0.2)
        beta = pm.Normal("beta", 0.0, pt.sqrt(s2 / 0.1))
        xs = pm.HalfNormal("x_sigma", 1.0)
        pmdp.observe_stats("xy", {"beta": beta, "sigma": pt.sqrt(s2), "x_mu": 0.0, "x_sigma": xs}, stats,
                           noise_aware=True)
    post = _sample(model, seed=4)
    conj = LinearRegression(n_features=1).conjugate_posterior(stats.values, n, precision0=0.1, alpha0=3.0,
                                                              beta0=0.2)
    scale = math.sqrt(conj["beta"] / conj["alpha"] / float(conj["precision"][0, 0]))
    beta_sd = scale * math.sqrt(2 * conj["alpha"] / (2 * conj["alpha"] - 2))
    # β enters through Σxy ≈ β Σx²; the CLT likelihood also uses the 4th moments of x
    # (modelled Gaussian, as the data are): 0.2 sd for the mean, 15 % for the sd.
    assert abs(float(post["beta"].mean()) - float(conj["mean"][0])) < 0.2 * beta_sd
    assert float(post["beta"].std()) == pytest.approx(beta_sd, rel=0.15)


def test_regression_noise_aware_needs_a_model_of_x():
    stats = pmdp.privatize(np.array([[0.1, 0.2], [0.3, -0.1]]), "linear_regression", 1.0, n_features=1,
                           bounds={"x": (-1, 1), "y": (-1, 1)}, rng=0)
    with pm.Model():
        beta = pm.Normal("beta", 0, 1)
        with pytest.raises(ValueError, match="x_mu"):
            pmdp.observe_stats("xy", {"beta": beta, "sigma": 1.0}, stats, noise_aware=True)


# --------------------------------------------------------------------------- the privacy flag


def test_privacy_flag_uses_the_multivariate_noise_aware_likelihood_by_default():
    x = np.random.default_rng(7).normal(2.0, 1.0, 300)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 5.0)
        sigma = pm.HalfNormal("sigma", 3.0)
        pm.Normal("y", mu, sigma, observed=x)
    private = pmdp.privatize_model(model, 2.0, bounds={"y": {"x": (-3.0, 7.0)}}, rng=7)
    assert private.noise_aware == {"y": True}
    assert sorted(v.name for v in private.model.free_RVs) == ["mu", "sigma"]  # (Σx, Σx²): no latents
    idata = pmdp.sample(300, epsilon=2.0, bounds={"y": {"x": (-3.0, 7.0)}}, noise_rng=7, model=model, tune=300,
                        chains=1, random_seed=1, progressbar=False)
    assert set(idata.posterior.data_vars) == {"mu", "sigma"}
    assert abs(float(idata.posterior["mu"].mean()) - 2.0) < 0.5


# --------------------------------------------------------------------------- public records


def _aux_model(private_records, public_records) -> pm.Model:
    with pm.Model() as model:
        p = pm.Beta("p", 1.0, 1.0)
        pm.Bernoulli("y", p=p, observed=private_records)
        pm.Bernoulli("aux", p=p, observed=public_records)
    return model


def test_public_records_stay_in_the_model_uncharged_and_tighten_the_posterior():
    rng = np.random.default_rng(8)
    private_records, public_records = rng.binomial(1, 0.3, 100), rng.binomial(1, 0.3, 400)
    model = _aux_model(private_records, public_records)
    ledger = pmdp.PrivacyLedger()
    private = pmdp.privatize_model(model, 0.5, public=["aux"], ledger=ledger, rng=8)
    assert [rv.name for rv in private.model.observed_RVs] == ["aux"]
    assert list(private.statistics) == ["y"]
    assert len(ledger.entries) == 1 and ledger.total().epsilon == pytest.approx(0.5)
    assert any("'aux' declared public" in a for a in ledger.entries[0].assumptions)
    with_aux = pmdp.sample(500, epsilon=0.5, public=["aux"], noise_rng=8, model=model, tune=500, chains=2,
                           cores=1, random_seed=2, progressbar=False)
    with pm.Model() as alone:
        p = pm.Beta("p", 1.0, 1.0)
        pm.Bernoulli("y", p=p, observed=private_records)
    without = pmdp.sample(500, epsilon=0.5, noise_rng=8, model=alone, tune=500, chains=2, cores=1,
                          random_seed=2, progressbar=False)
    # 400 public records against 100 private ones (noise scale 4 on the count): the sd
    # falls from ≈ 0.05 to ≈ 0.02; asking for a factor 1.5 leaves a wide margin.
    assert float(with_aux.posterior["p"].std()) * 1.5 < float(without.posterior["p"].std())
    assert "observed_data" not in _compat.group_names(with_aux)
    assert any("declared public" in a for e in pmdp.ledger(with_aux).entries for a in e.assumptions)


def test_public_declarations_are_checked():
    rng = np.random.default_rng(9)
    model = _aux_model(rng.binomial(1, 0.3, 50), rng.binomial(1, 0.3, 50))
    with pytest.raises(ValueError, match="neither observed variables"):
        pmdp.privatize_model(model, 1.0, public=["nope"])
    with pytest.raises(ValueError, match="neither observed variables"):
        pmdp.sample(10, epsilon=1.0, public=["nope"], model=model)
    with pytest.raises(ValueError, match="declared public"):
        pmdp.privatize_model(model, 1.0, public=["y", "aux"])
    with pytest.raises(ValueError, match="public="):
        pmdp.sample(10, model=model)  # the private records need epsilon= (or a declaration)


def test_statistics_route_with_declared_public_records():
    rng = np.random.default_rng(10)
    stats = pmdp.privatize(rng.binomial(1, 0.4, 200), "bernoulli", 1.0, rng=10)
    with pm.Model() as model:
        p = pm.Beta("p", 1.0, 1.0)
        pmdp.observe_stats("y", pm.Bernoulli.dist(p=p), stats, noise_aware=True)
        pm.Bernoulli("aux", p=p, observed=rng.binomial(1, 0.4, 100))
    with pytest.raises(ValueError, match="public="):
        pmdp.sample(10, model=model)
    idata = pmdp.sample(200, public=["aux"], model=model, tune=200, chains=1, random_seed=3, progressbar=False)
    assert pmdp.ledger(idata).total().epsilon == pytest.approx(1.0)
    assert "observed_data" not in _compat.group_names(idata)


# --------------------------------------------------------------------------- the calibration study's models


def test_calibration_models_are_the_observe_stats_likelihood():
    """The study swaps releases through pm.Data; its log density must be observe_stats'."""
    from pymc_dp.examples import noise_aware_calibration as cal

    x = np.random.default_rng(11).normal(0.3, 1.1, 150)
    stats = pmdp.privatize(x, "normal", 1.0, bounds={"x": cal.NORMAL_BOUNDS}, rng=11)
    study = cal.normal_model(150, 1.0, released=stats.released)
    pr = cal.NORMAL_PRIOR
    with pm.Model() as direct:
        s2 = pm.InverseGamma("sigma2", pr["alpha0"], pr["beta0"])
        mu = pm.Normal("mu", pr["mu0"], pt.sqrt(s2 / pr["kappa0"]))
        pmdp.observe_stats("x", pm.Normal.dist(mu, pt.sqrt(s2)), stats, noise_aware=True)
    point = {"sigma2_log__": np.log(1.3), "mu": 0.2}
    assert study.compile_logp(mode="FAST_COMPILE")(point) == pytest.approx(direct.compile_logp(mode="FAST_COMPILE")(point), rel=1e-12)
