"""Measurements of DP releases ([WM10]): exact count sums, latent sums, and their validation."""

from __future__ import annotations

import math

import arviz as az
import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from scipy import stats

import pymc_dp as pmdp
from pymc_dp.families._noise_aware import laplace_marginal_count_logp
from pymc_dp.families.base import dist_params
from pymc_dp.model import statistics_of
from pymc_dp.model.measurement import (
    Measurement,
    latent_sum,
    observe_count_measurements,
    observe_measurements,
)

GRID = np.linspace(0.0005, 0.9995, 1000)


def _logit(p):
    return np.log(p) - np.log1p(-p)


def _grid_logp(model, vars=None):
    """log density of ``vars`` (default: the whole model, no Jacobian) at p = each GRID point."""
    fn = model.compile_logp(vars=vars, jacobian=False, mode="FAST_COMPILE")
    return np.array([fn({"p_logodds__": _logit(q)}) for q in GRID])


def _grid_posterior(logp):
    """Mean and sd on GRID of the density ∝ exp(logp) (a flat prior on p is implied)."""
    w = np.exp(logp - logp.max())
    w /= w.sum()
    mean = float((w * GRID).sum())
    return mean, math.sqrt(float((w * (GRID - mean) ** 2).sum()))


def _count_model(measurements, trials, aux=None):
    with pm.Model() as model:
        p = pm.Beta("p", 1, 1)
        pot = observe_count_measurements("released", measurements, pm.Binomial.dist(n=trials, p=p))
        if aux is not None:
            pm.Bernoulli("aux", p=p, observed=aux)
    return model, pot


# --------------------------------------------------------------------------- Measurement.logp


def test_laplace_and_gaussian_logp_match_scipy():
    z = np.array([1.0, -2.5, 7.25])
    t = np.array([0.5, 0.0, 9.0])
    lap = Measurement(z, 1.7)
    gau = Measurement(z, 1.7, mechanism="gaussian")
    assert float(lap.logp(t).eval(mode="FAST_COMPILE")) == pytest.approx(stats.laplace(t, 1.7).logpdf(z).sum(), rel=1e-12)
    assert float(gau.logp(t).eval(mode="FAST_COMPILE")) == pytest.approx(stats.norm(t, 1.7).logpdf(z).sum(), rel=1e-12)
    np.testing.assert_allclose(lap.logp_terms(t).eval(mode="FAST_COMPILE"), stats.laplace(t, 1.7).logpdf(z), rtol=1e-12)
    # A scalar true value broadcasts to every coordinate; a symbolic one works too.
    s = pt.dscalar("s")
    assert float(gau.logp(s).eval({s: 2.0},
        mode="FAST_COMPILE")) == pytest.approx(stats.norm(2.0, 1.7).logpdf(z).sum(), rel=1e-12)


def test_trailing_axes_of_the_true_value_are_batch_axes():
    m = Measurement([3.0, 10.0], 2.0)
    cand = np.array([[0.0, 1.0, 2.0, 3.0], [8.0, 9.0, 10.0, 11.0]])  # 4 candidates per coordinate
    terms = m.logp_terms(cand).eval(mode="FAST_COMPILE")
    assert terms.shape == (2, 4)
    np.testing.assert_allclose(terms, stats.laplace(cand, 2.0).logpdf(np.array([[3.0], [10.0]])), rtol=1e-12)
    np.testing.assert_allclose(m.logp(cand).eval(mode="FAST_COMPILE"), terms.sum(axis=0), rtol=1e-12)
    scalar = Measurement(3.0, 2.0)  # a scalar value: any true_value shape is a batch
    np.testing.assert_allclose(scalar.logp(np.arange(5.0)).eval(mode="FAST_COMPILE"), stats.laplace(np.arange(5.0), 2.0).logpdf(3.0))
    with pytest.raises(ValueError, match="leading axes"):
        m.logp_terms(np.zeros((3, 4)))


@pytest.mark.parametrize("s", [0.4, 3.0, 250.0])
def test_geometric_logp_is_the_discrete_laplace_pmf(s):
    k = np.arange(-40_000, 40_001)  # the pmf at |k| = 40000 is below e^-160 for every s here
    m = Measurement(0, s, mechanism="geometric")
    logpmf = m.logp(-k.astype(float)).eval(mode="FAST_COMPILE")  # log P(noise = k): value 0, true value -k
    a = math.exp(-1.0 / s)
    np.testing.assert_allclose(logpmf, np.log((1 - a) / (1 + a)) - np.abs(k) / s, rtol=1e-12, atol=1e-12)
    pmf = np.exp(logpmf)
    assert pmf.sum() == pytest.approx(1.0, abs=1e-12)
    assert (pmf * k**2).sum() == pytest.approx(m.variance, rel=1e-10)


def test_variance_of_each_mechanism():
    assert Measurement(0.0, 3.0).variance == pytest.approx(18.0)
    assert Measurement(0.0, 3.0, mechanism="gaussian").variance == pytest.approx(9.0)
    q = math.exp(-1 / 3.0)
    assert Measurement(0, 3.0, mechanism="geometric").variance == pytest.approx(2 * q / (1 - q) ** 2)


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"value": 1.0, "scale": 0.0}, "scale must be finite and > 0"),
        ({"value": 1.0, "scale": -2.0}, "scale must be finite and > 0"),
        ({"value": 1.0, "scale": float("nan")}, "scale must be finite and > 0"),
        ({"value": [1.0, float("nan")], "scale": 1.0}, "NaN or infinite"),
        ({"value": np.inf, "scale": 1.0}, "NaN or infinite"),
        ({"value": [[1.0]], "scale": 1.0}, "1-D"),
        ({"value": [], "scale": 1.0}, "empty"),
        ({"value": 1.0, "scale": 1.0, "mechanism": "exponential"}, r"one of \('laplace', 'gaussian', 'geometric'\)"),
        ({"value": 2.5, "scale": 1.0, "mechanism": "geometric"}, "whole numbers"),
        ({"value": [1.0, 2.0], "scale": 1.0, "of": np.zeros(3)}, "of has shape"),
    ],
)
def test_invalid_measurements_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Measurement(**kwargs)


def test_geometric_accepts_whole_floats():
    assert Measurement(np.array([3.0, -2.0]), 1.5, mechanism="geometric").value.tolist() == [3.0, -2.0]


def test_observe_measurements_needs_of_and_no_data():
    with pm.Model():
        p = pm.Beta("p", 1, 1)
        with pytest.raises(ValueError, match="pass of="):
            observe_measurements("z", Measurement(3.0, 1.0))
        x = pm.Data("x", np.ones(10))
        with pytest.raises(ValueError, match="depends on data"):
            observe_measurements("z", Measurement(3.0, 1.0, of=p * x.sum()))
        y = pm.Normal("y", 0, 1, observed=np.zeros(3))
        with pytest.raises(ValueError, match="observed variable"):
            observe_measurements("z", Measurement(3.0, 1.0, of=p + y.sum()))
        with pytest.raises(ValueError, match="not a Measurement"):
            observe_measurements("z", [3.0])


def test_count_measurements_validation():
    with pm.Model():
        p = pm.Beta("p", 1, 1)
        with pytest.raises(ValueError, match="of=None"):
            observe_count_measurements("c", Measurement(3.0, 1.0, of=p), pm.Binomial.dist(n=10, p=p))
        with pytest.raises(ValueError, match="pass max_count="):
            observe_count_measurements("c", Measurement(3.0, 1.0), pm.Poisson.dist(mu=10 * p))
        with pytest.raises(ValueError, match="only for a Poisson"):
            observe_count_measurements("c", Measurement(3.0, 1.0), pm.Binomial.dist(n=10, p=p), max_count=5)
        with pytest.raises(ValueError, match="latent_sum"):
            observe_count_measurements("c", Measurement(3.0, 1.0), pm.Binomial.dist(n=200_000, p=p))
        with pytest.raises(ValueError, match="limit"):
            observe_count_measurements("c", Measurement(3.0, 1.0), pm.Poisson.dist(mu=p), max_count=10**6)
        n = pm.Poisson("n", 20)
        with pytest.raises(ValueError, match="constant whole number"):
            observe_count_measurements("c", Measurement(3.0, 1.0), pm.Binomial.dist(n=n, p=p))
        with pytest.raises(ValueError, match=r"pm.Binomial.dist\(n=N, p=p\) or pm.Poisson"):
            observe_count_measurements("c", Measurement(3.0, 1.0), pm.Normal.dist(0, 1))
        with pytest.raises(ValueError, match="unregistered"):
            observe_count_measurements("c", Measurement(3.0, 1.0), n)


def test_latent_sum_validation():
    with pm.Model():
        p = pm.Beta("p", 1, 1)
        for bad in (0, -3, 2.5, True):
            with pytest.raises(ValueError, match="positive whole number"):
                latent_sum("S", pm.Bernoulli.dist(p=p), bad)
        with pytest.raises(ValueError, match="'bernoulli', 'binomial', 'poisson', 'normal', 'exponential'"):
            latent_sum("S", pm.Gamma.dist(alpha=2.0, beta=p), 10)
        with pytest.raises(ValueError, match="one record"):
            latent_sum("S", pm.Bernoulli.dist(p=p, shape=3), 10)


# --------------------------------------------------------------------------- exact count sums


def test_one_count_measurement_equals_the_noise_aware_count_likelihood():
    model, pot = _count_model(Measurement(61.3, 5.0), 200)
    fn = model.compile_logp(vars=[pot], jacobian=False, mode="FAST_COMPILE")
    for q in (0.05, 0.3, 0.31, 0.5, 0.9):
        # np.float64: a Python 0.5 would become a float32 constant (exactly representable).
        want = float(laplace_marginal_count_logp(61.3, 200, np.float64(q), 5.0, method="exact").eval(mode="FAST_COMPILE"))
        assert float(fn({"p_logodds__": _logit(q)})) == pytest.approx(want, rel=1e-9)


def _brute_force_count_logp(zs, scales, trials, p_grid):
    """log Σ_k Binom(k; N, p) Πⱼ Laplace(zⱼ − k; bⱼ) by an explicit (p, k) table."""
    k = np.arange(trials + 1)
    table = stats.binom.pmf(k[None, :], trials, p_grid[:, None])
    for z, b in zip(zs, scales):
        table = table * stats.laplace(k, b).pdf(z)[None, :]
    return np.log(table.sum(axis=1))


def test_two_releases_of_one_count_tighten_the_posterior_exactly():
    rng = np.random.default_rng(7)
    trials, b = 200, 5.0
    count = int(rng.binomial(1, 0.3, trials).sum())
    z1, z2 = count + rng.laplace(0.0, b, size=2)
    logps = {}
    releases = {"1": [Measurement(z1, b)], "2": [Measurement(z2, b)], "both": [Measurement(z1, b), Measurement(z2, b)]}
    for key, ms in releases.items():
        model, pot = _count_model(ms, trials)
        logps[key] = _grid_logp(model, [pot])
    brute = _brute_force_count_logp([z1, z2], [b, b], trials, GRID)
    np.testing.assert_allclose(logps["both"], brute, rtol=1e-9)
    sds = {key: _grid_posterior(lp)[1] for key, lp in logps.items()}
    # Each release alone has noise variance 2b² = 50; both together, about 25 (their
    # mean): the count's sd 6.5 then adds up to posterior sds of p ≈ 0.042 vs 0.034.
    assert sds["both"] < 0.9 * min(sds["1"], sds["2"])
    # The same count released as a 2-vector in one Measurement is the same likelihood.
    model, pot = _count_model(Measurement([z1, z2], b), trials)
    np.testing.assert_allclose(_grid_logp(model, [pot]), logps["both"], rtol=1e-12)


def test_public_auxiliary_records_tighten_the_posterior():
    rng = np.random.default_rng(11)
    trials, b = 200, 5.0
    z = rng.binomial(1, 0.3, trials).sum() + rng.laplace(0.0, b)
    aux = rng.binomial(1, 0.3, 50)
    m_alone, sd_alone = _grid_posterior(_grid_logp(_count_model(Measurement(z, b), trials)[0]))
    m_aux, sd_aux = _grid_posterior(_grid_logp(_count_model(Measurement(z, b), trials, aux=aux)[0]))
    # Fisher information 50/(p(1-p)) ≈ 240 from the records next to ≈ 570 from the release.
    assert sd_aux < 0.9 * sd_alone
    # And it is exactly the product of the two likelihoods.
    extra = aux.sum() * np.log(GRID) + (len(aux) - aux.sum()) * np.log1p(-GRID)
    m_prod, sd_prod = _grid_posterior(_grid_logp(_count_model(Measurement(z, b), trials)[0]) + extra)
    assert (m_aux, sd_aux) == pytest.approx((m_prod, sd_prod), rel=1e-9)


def test_poisson_count_with_geometric_and_gaussian_releases_matches_brute_force():
    zs = [Measurement(23, 2.0, mechanism="geometric"), Measurement(25.4, 3.0, mechanism="gaussian")]
    with pm.Model() as model:
        mu = pm.Gamma("mu", 2.0, 0.1)
        pot = observe_count_measurements("c", zs, pm.Poisson.dist(mu=mu), max_count=400)
    fn = model.compile_logp(vars=[pot], jacobian=False, mode="FAST_COMPILE")
    k = np.arange(401)
    a = math.exp(-1 / 2.0)
    noise = np.log((1 - a) / (1 + a)) - np.abs(23 - k) / 2.0 + stats.norm(k, 3.0).logpdf(25.4)
    for m in (5.0, 24.0, 60.0):
        want = np.log(np.sum(stats.poisson.pmf(k, m) * np.exp(noise)))
        assert float(fn({"mu_log__": np.log(m)})) == pytest.approx(want, rel=1e-9)


# --------------------------------------------------------------------------- latent sums


@pytest.mark.parametrize("centered", [True, False])
@pytest.mark.parametrize(
    "make, mean, var",
    [
        (lambda: pm.Bernoulli.dist(p=0.3), 0.3, 0.21),
        (lambda: pm.Binomial.dist(n=4, p=0.25), 1.0, 0.75),
        (lambda: pm.Poisson.dist(mu=2.5), 2.5, 2.5),
        (lambda: pm.Normal.dist(1.5, 2.0), 1.5, 4.0),
        (lambda: pm.Exponential.dist(lam=4.0), 0.25, 1 / 16),
    ],
)
def test_latent_sum_has_the_clt_moments(make, mean, var, centered):
    n = 10
    with pm.Model() as model:
        s = latent_sum("S", make(), n, centered=centered)
    if centered:
        loc, sd = (float(v.eval(mode="FAST_COMPILE")) for v in dist_params(s))
        assert "S_std" not in model.named_vars
    else:
        raw = model["S_std"]
        loc = float(s.eval({raw: 0.0}, mode="FAST_COMPILE"))
        sd = float(s.eval({raw: 1.0}, mode="FAST_COMPILE")) - loc
    assert loc == pytest.approx(n * mean, rel=1e-6)
    assert sd == pytest.approx(math.sqrt(n * var), rel=1e-6)


def test_overlapping_releases_of_latent_sums():
    # A total and its parts, released separately: the likelihood is the sum over releases.
    with pm.Model() as model:
        p = pm.Beta("p", 1, 1)
        s1 = latent_sum("S1", pm.Bernoulli.dist(p=p), 100)
        s2 = latent_sum("S2", pm.Bernoulli.dist(p=p), 150)
        pot = observe_measurements(
            "z",
            [Measurement(80.0, 2.0, of=s1 + s2, label="total"),
             Measurement([31.0, 47.5], 1.5, mechanism="gaussian", of=pt.stack([s1, s2]))],
        )
    fn = model.compile_logp(vars=[pot], jacobian=False, mode="FAST_COMPILE")
    got = fn({"p_logodds__": 0.0, "S1": 30.0, "S2": 52.0})
    want = stats.laplace(82.0, 2.0).logpdf(80.0) + stats.norm([30.0, 52.0], 1.5).logpdf([31.0, 47.5]).sum()
    assert float(got) == pytest.approx(want, rel=1e-12)


def test_latent_sum_nuts_posterior_matches_the_exact_count_posterior():
    rng = np.random.default_rng(2024)
    trials, b = 1000, 2.0
    z = rng.binomial(1, 0.3, trials).sum() + rng.laplace(0.0, b)
    with pm.Model():
        p = pm.Beta("p", 1, 1)
        s = latent_sum("S", pm.Bernoulli.dist(p=p), trials)
        observe_measurements("z", Measurement(z, b, of=s))
        idata = pm.sample(
            500, tune=500, chains=2, cores=1, random_seed=3, progressbar=False, compute_convergence_checks=False
        )
    q = pt.dvector("q")
    exact_mean, exact_sd = _grid_posterior(laplace_marginal_count_logp(z, trials, q, b, method="exact").eval({q: GRID},
        mode="FAST_COMPILE"))
    clt_mean, _ = _grid_posterior(laplace_marginal_count_logp(z, trials, q, b, method="clt").eval({q: GRID},
        mode="FAST_COMPILE"))
    # The latent-sum model's marginal likelihood of z is exactly the CLT (normal ⊛ Laplace)
    # one, so NUTS targets clt_mean; its distance to the exact posterior mean is the CLT
    # error, which at N·p ≈ 300 is a few percent of a posterior sd at most.
    clt_error = abs(clt_mean - exact_mean)
    assert clt_error < 0.05 * exact_sd
    ess = float(az.ess(idata, var_names=["p"])["p"])
    mcse = float(az.mcse(idata, var_names=["p"])["p"])
    assert ess > 200
    assert int(idata.sample_stats.diverging.sum()) == 0
    # Tolerance: CLT error + 4 Monte-Carlo standard errors (mcse ≈ sd/√ESS ≈ 0.0006).
    post_mean = float(idata.posterior["p"].mean())
    assert abs(post_mean - exact_mean) < clt_error + 4 * mcse
    assert float(idata.posterior["p"].std()) == pytest.approx(exact_sd, rel=0.15)


# --------------------------------------------------------------------------- privatised statistics


def test_measurement_from_privatised_statistics():
    records = np.random.default_rng(5).binomial(1, 0.4, 300)
    released = pmdp.privatize(records, "bernoulli", 1.0, rng=np.random.default_rng(0))
    m = Measurement.from_statistics(released)
    np.testing.assert_array_equal(m.value, released.noisy)
    assert m.scale == 1.0 == released.scale
    assert (m.mechanism, m.label, m.of, m.source) == ("geometric", "bernoulli", None, released)  # a count
    with pm.Model() as model:
        p = pm.Beta("p", 1, 1)
        pot = observe_count_measurements("c", m, pm.Binomial.dist(n=300, p=p))
    # The release's ledger is recorded with the model, as with observe_stats.
    assert statistics_of(model) == [released]
    want = laplace_marginal_count_logp(float(released.noisy[0]), 300, np.float64(0.4), 1.0, method="exact",
                                       mechanism="geometric").eval(mode="FAST_COMPILE")
    got = model.compile_logp(vars=[pot], jacobian=False, mode="FAST_COMPILE")({"p_logodds__": _logit(0.4)})
    assert float(got) == pytest.approx(float(want), rel=1e-9)
    with pytest.raises(ValueError, match="output of pmdp.privatize"):
        Measurement.from_statistics({"noisy": [3.0], "scale": 1.0})
