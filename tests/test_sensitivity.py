"""Log-likelihood sensitivity for tempered posteriors: family formulas, the model analysis, refusals.

Every closed form is checked against brute force: the half-range over θ of
d(θ) = log p(x′|θ) − log p(x|θ), maximised over record pairs, on a grid. A formula
below the brute-force value would be a wrong privacy claim; one far above it would
be needlessly loose. Grids include the extreme records and parameter values, where
the maxima lie, so the brute force reaches the formula to rounding.
"""

from __future__ import annotations

import math

import numpy as np
import pymc as pm
import pytest
from scipy import stats

import pymc_dp as pmdp
from pymc_dp.families import Bernoulli, Binomial, Categorical, Exponential, Gamma, Multinomial, Normal, Poisson


def brute_force(logpdf, records, thetas) -> float:
    """max over record pairs of (max_θ d − min_θ d) / 2, with d = logpdf(x′, θ) − logpdf(x, θ)."""
    table = np.array([[logpdf(x, t) for t in thetas] for x in records])  # records × thetas
    best = 0.0
    for i in range(len(records)):
        d = table - table[i]  # every x′ against x = records[i]
        best = max(best, float((d.max(axis=1) - d.min(axis=1)).max()) / 2)
    return best


def test_beta_bernoulli_truncated_at_0_2_has_fgwc16_fig1_temperature():
    # [FGWC16] Fig. 1: a0 = 0.2, ε = 1 ⇒ Δ = ln 4 and T = 2 ln 4 ≈ 2.77.
    with pm.Model() as model:
        p = pm.Beta("p", 1, 1)
        pm.Bernoulli("y", p, observed=np.array([0, 1, 1, 0, 1]))
    report = pmdp.loglik_sensitivity(pmdp.truncate(model, {"p": (0.2, 0.8)}))
    assert report.total == pytest.approx(math.log(4), rel=1e-12)
    assert report.temperature(1.0) == pytest.approx(2 * math.log(4), rel=1e-12)
    assert report.temperature(1.0) == pytest.approx(2.7726, abs=1e-4)


@pytest.mark.parametrize(
    ("family", "ranges", "bounds", "logpdf", "records", "thetas"),
    [
        (Bernoulli(), {"p": (0.2, 0.7)}, {}, lambda x, t: stats.bernoulli.logpmf(x, t), [0, 1], np.linspace(0.2, 0.7, 51)),
        (Binomial(n_trials=4), {"p": (0.1, 0.6)}, {}, lambda x, t: stats.binom.logpmf(x, 4, t), range(5),
         np.linspace(0.1, 0.6, 51)),
        (Poisson(), {"mu": (0.5, 8.0)}, {"upper": 12}, lambda x, t: stats.poisson.logpmf(x, t), range(13),
         np.geomspace(0.5, 8.0, 61)),
        (Normal(sigma=1.5), {"mu": (-1.0, 2.0)}, {"x": (-3.0, 4.0)}, lambda x, t: stats.norm.logpdf(x, t, 1.5),
         np.linspace(-3, 4, 29), np.linspace(-1, 2, 31)),
        (Exponential(), {"lam": (0.2, 3.0)}, {"x": (0.0, 6.0)}, lambda x, t: stats.expon.logpdf(x, scale=1 / t),
         np.linspace(0, 6, 25), np.linspace(0.2, 3.0, 29)),
        (Gamma(shape=2.5), {"beta": (0.5, 2.0)}, {"x": (0.1, 5.0)}, lambda x, t: stats.gamma.logpdf(x, 2.5, scale=1 / t),
         np.linspace(0.1, 5, 25), np.linspace(0.5, 2.0, 31)),
    ],
    ids=["bernoulli", "binomial", "poisson", "normal", "exponential", "gamma"],
)
def test_family_sensitivity_is_the_brute_force_half_range(family, ranges, bounds, logpdf, records, thetas):
    delta, how = family.loglik_sensitivity(ranges, bounds)
    brute = brute_force(logpdf, list(records), thetas)
    assert brute <= delta * (1 + 1e-9), "the formula is below the brute force: a wrong privacy claim"
    assert brute == pytest.approx(delta, rel=1e-6), "the formula is looser than it needs to be"
    assert how


def test_categorical_and_multinomial_sensitivity_on_the_truncated_simplex():
    # K = 3, every θ_k ≥ a0 = 0.1: Δ = log((1 − 2·0.1)/0.1) = log 8 (theory notes §4).
    a0, k = 0.1, 3
    delta, _ = Categorical(k=k).loglik_sensitivity({"p": (a0, 1 - (k - 1) * a0)}, {})
    assert delta == pytest.approx(math.log(8))
    grid = np.linspace(a0, 1 - 2 * a0, 71)
    thetas = [np.array([a, b, 1 - a - b]) for a in grid for b in grid if 1 - a - b >= a0 - 1e-12]
    brute = brute_force(lambda x, t: math.log(t[x]), [0, 1, 2], thetas)
    assert brute == pytest.approx(delta, rel=1e-9)
    # Multinomial with n trials: n times as much (x = n in one category vs n in another).
    delta_m, _ = Multinomial(k=k, n_trials=3).loglik_sensitivity({"p": (a0, 1 - (k - 1) * a0)}, {})
    assert delta_m == pytest.approx(3 * math.log(8))


def test_untruncated_beta_is_refused_naming_the_truncation():
    with pm.Model() as model:
        q = pm.Beta("q", 2, 2)
        pm.Bernoulli("y", q, observed=np.array([0, 1]))
    with pytest.raises(ValueError, match=r"observed variable 'y'.*unbounded.*pmdp\.truncate\(model, \{'q': \(0\.05, 0\.95\)\}\)"):
        pmdp.loglik_sensitivity(model)


def test_untruncated_dirichlet_is_refused_with_a_floor_suggestion():
    with pm.Model() as model:
        theta = pm.Dirichlet("theta", np.ones(3))
        pm.Categorical("c", theta, observed=np.array([0, 2, 1]))
    with pytest.raises(ValueError, match=r"pmdp\.truncate\(model, \{'theta': 0\.01\}\)"):
        pmdp.loglik_sensitivity(model)
    report = pmdp.loglik_sensitivity(pmdp.truncate(model, {"theta": 0.05}))
    assert report.total == pytest.approx(math.log(0.9 / 0.05))


def test_uniform_prior_and_monotone_functions_bound_a_parameter():
    with pm.Model() as model:
        log_rate = pm.Uniform("log_rate", -1.0, 2.0)
        rate = pm.Deterministic("rate", pm.math.exp(log_rate))
        pm.Poisson("c", rate, observed=np.array([1, 4, 2]))
        logit_p = pm.Uniform("logit_p", -2.0, 1.0)
        pm.Bernoulli("y", logit_p=logit_p, observed=np.array([0, 1]))
    report = pmdp.loglik_sensitivity(model, bounds={"c": {"upper": 10}})
    assert report.per_variable["c"] == pytest.approx(10 * 3.0 / 2)  # U (log hi − log lo)/2 = 10·(2 − (−1))/2
    assert report.per_variable["y"] == pytest.approx(3.0 / 2)  # (logit hi − logit lo)/2 = (1 − (−2))/2
    assert report.total == pytest.approx(16.5)


def test_missing_data_bounds_unknown_sigma_and_unsupported_likelihoods_are_refused():
    with pm.Model() as model:
        mu = pm.Uniform("mu", -1, 1)
        pm.Normal("z", mu, 1.0, observed=np.array([0.3, -0.2]))
    with pytest.raises(ValueError, match=r"observed variable 'z'.*declare bounds=\{'z': \.\.\.\}"):
        pmdp.loglik_sensitivity(model)
    assert pmdp.loglik_sensitivity(model, bounds={"z": {"x": (-2, 2)}}).total == pytest.approx(4 * 2 / 2)
    with pm.Model() as unknown_sigma:
        mu = pm.Uniform("mu", -1, 1)
        pm.Normal("z", mu, pm.HalfNormal("s", 1), observed=np.array([0.3]))
    with pytest.raises(ValueError, match=r"sigma is a model parameter.*pmdp\.clip_loglik"):
        pmdp.loglik_sensitivity(unknown_sigma, bounds={"z": {"x": (-2, 2)}})
    with pm.Model() as student:
        mu = pm.Uniform("mu", -1, 1)
        pm.StudentT("t", nu=3, mu=mu, sigma=1, observed=np.array([0.3]))
    with pytest.raises(ValueError, match=r"observed variable 't'.*clip_loglik"):
        pmdp.loglik_sensitivity(student)
    with pytest.raises(ValueError, match="not observed variables"):
        pmdp.loglik_sensitivity(model, bounds={"w": {"x": (0, 1)}})


def test_data_outside_the_observed_variables_is_refused():
    x = np.linspace(0, 1, 20)
    with pm.Model() as regression:
        beta = pm.Uniform("beta", -1, 1)
        pm.Normal("y", beta * x, 1.0, observed=np.zeros(20))
    with pytest.raises(ValueError, match=r"observed variable 'y' vary by record.*loglik_clip=\(lower, upper\)"):
        pmdp.loglik_sensitivity(regression, bounds={"y": {"x": (-1, 1)}})
    # The covariate is part of each record: under a clip, Δ is the clip's width.
    assert pmdp.loglik_sensitivity(pmdp.clip_loglik(regression, -5, 1)).total == 6
    with pm.Model() as potential:
        p = pm.Uniform("p", 0.1, 0.9)
        pm.Bernoulli("y", p, observed=np.zeros(20))
        pm.Potential("extra", (p * x).sum())
    with pytest.raises(ValueError, match=r"Potential 'extra' depend"):
        pmdp.loglik_sensitivity(potential)
    with pm.Model() as data_prior:
        scale = pm.Data("scale", np.array(0.5))
        p = pm.Uniform("p", 0.1, scale + 0.4)
        pm.Bernoulli("y", p, observed=np.zeros(3))
    with pytest.raises(ValueError, match=r"prior of 'p' depend"):
        pmdp.loglik_sensitivity(data_prior)


def test_clipped_loglik_sensitivity_and_neighbouring_relations():
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 1)
        pm.StudentT("t", nu=3, mu=mu, sigma=1, observed=np.array([0.3, 8.0]))
        pm.Poisson("c", pm.math.exp(mu), observed=np.array([1, 2]))
    clipped = pmdp.clip_loglik(model, -6.0, -0.5)
    report = pmdp.loglik_sensitivity(clipped)
    assert report.per_variable == {"t": pytest.approx(5.5), "c": pytest.approx(5.5)}
    assert report.total == pytest.approx(11.0)
    # Add/remove: d is one clipped term, whose range is upper − lower: Δ = half of it.
    assert pmdp.loglik_sensitivity(clipped, neighbouring="add_remove").total == pytest.approx(5.5)
    with pm.Model() as family_model:
        q = pm.Uniform("q", 0.2, 0.8)
        pm.Bernoulli("y", q, observed=np.array([0, 1]))
    with pytest.raises(ValueError, match="replace-one neighbouring only"):
        pmdp.loglik_sensitivity(family_model, neighbouring="add_remove")
    with pytest.raises(ValueError, match="already clipped"):
        pmdp.clip_loglik(clipped, -1.0, 0.0)
    for bad in ((0.0, 0.0), (-np.inf, 0.0), (1.0, -1.0)):
        with pytest.raises(ValueError, match="clip_loglik"):
            pmdp.clip_loglik(model, *bad)


def test_conditional_sensitivity_of_one_variable():
    with pm.Model() as model:
        p = pm.Uniform("p", 0.2, 0.8)
        q = pm.Uniform("q", 0.1, 0.9)
        a = pm.HalfNormal("a", 1)
        pm.Bernoulli("y", p, observed=np.array([0, 1]))
        pm.Bernoulli("z", q, observed=np.array([1, 1]))
    full = pmdp.loglik_sensitivity(model)
    only_p = pmdp.loglik_sensitivity(model, wrt="p")
    assert list(only_p.per_variable) == ["y"] and only_p.total == pytest.approx(full.per_variable["y"])
    assert pmdp.loglik_sensitivity(model, wrt="a").total == 0.0  # a touches no likelihood
    assert full.total == pytest.approx(full.per_variable["y"] + full.per_variable["z"])
    with pytest.raises(ValueError, match="wrt names"):
        pmdp.loglik_sensitivity(model, wrt="nope")


def test_report_prices_exact_samples_at_temperature_one():
    with pm.Model() as model:
        p = pm.Uniform("p", 0.2, 0.8)
        pm.Bernoulli("y", p, observed=np.array([0, 1]))
    report = pmdp.loglik_sensitivity(model)  # Δ = ln 4, 2Δ = 2.77
    assert report.temperature(10.0) == 1.0
    assert report.epsilon_per_sample(10.0) == pytest.approx(2 * math.log(4))
    assert report.exact_samples(10.0) == 3  # ⌊10 / 2.77⌋
    assert report.exact_samples(2 * 2 * math.log(4)) == 2  # ε′ = 2qΔ buys q exact samples
    assert "buys 3 exact sample(s)" in report.describe(10.0)
    with pytest.raises(ValueError, match="epsilon"):
        report.temperature(0.0)


def test_parameter_range_of_expressions():
    from pymc_dp.model import parameter_range

    with pm.Model() as model:
        u = pm.Uniform("u", 1.0, 3.0)
        v = pm.Uniform("v", -2.0, 1.0)
        free = pm.Normal("free", 0, 1)
    assert parameter_range(u * v, model) == pytest.approx((-6.0, 3.0))
    assert parameter_range(u - v, model) == pytest.approx((0.0, 5.0))
    assert parameter_range(1.0 / u, model) == pytest.approx((1 / 3, 1.0))
    assert parameter_range(pm.math.sigmoid(v), model) == pytest.approx((1 / (1 + math.e**2), 1 / (1 + math.e**-1)))
    assert parameter_range(free + u, model) == (-math.inf, math.inf)
    assert parameter_range(1.0 / v, model) == (-math.inf, math.inf)  # v spans 0


def test_reductions_in_a_likelihood_parameter_scale_the_range():
    """A sum of three parameters in [-1, 1] ranges over [-3, 3]; it was taken for [-1, 1] (Δ three times too small)."""
    import pytensor.tensor as pt

    records = (np.arange(40) % 3 == 0).astype(int)
    with pm.Model() as summed:
        b = pm.Uniform("b", -1, 1, shape=3)
        pm.Bernoulli("y", logit_p=pt.sum(b), observed=records)
    assert pmdp.loglik_sensitivity(summed).total == pytest.approx(3.0)
    with pm.Model() as product:
        a = pm.Uniform("a", 0.5, 0.9, shape=2)
        pm.Bernoulli("y", p=pt.prod(a), observed=records)
    with pytest.raises(ValueError, match="can take values in"):
        pmdp.loglik_sensitivity(product)  # a product over entries is not bounded by the entries' range
