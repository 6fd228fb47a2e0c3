"""Private annealed importance sampling: ``pmdp.sample(method="ais")``."""

from __future__ import annotations

import math

import numpy as np
import pymc as pm
import pytest

import pymc_dp as pmdp
from pymc_dp.routes.ais import annealing_schedule, weight_sensitivity

A0 = 0.01  # Beta-Bernoulli truncation: Δ = log((1 - a0)/a0)
QUIET = {"progressbar": False}


def _bernoulli(n=200, p=0.3, seed=0):
    y = (np.random.default_rng(seed).uniform(size=n) < p).astype(int)
    with pm.Model() as model:
        q = pm.Beta("p", 1, 1)
        pm.Bernoulli("y", p=q, observed=y)
    return model, y


def _weighted(idata, name):
    x = idata.posterior[name].values.reshape(-1)
    w = idata.sample_stats["weight"].values.reshape(-1)
    mean = np.average(x, weights=w)
    sd = math.sqrt(np.average((x - mean) ** 2, weights=w))
    return mean, sd, 1.0 / np.sum(w**2)


def test_beta_bernoulli_posterior_mean_within_monte_carlo_error():
    """At T = 1 and (nearly) exact weights, the weighted mean of p is the posterior mean.

    Truth: Beta(1 + k, 1 + n − k) (the truncation to [0.01, 0.99] moves it by < 1e-12 at k/n ≈ 0.3). The
    estimator's Monte Carlo s.e. is about sd/√ESS (Kong 1992, with ESS from the weights): the mean is within
    4 s.e. (a 4-sigma band fails by chance with probability < 1e-4 at a fixed seed), and the weighted sd within
    25 % of the true sd (its relative error at ESS ≥ 50 is about 1/√(2 ESS) ≤ 0.1).
    """
    model, y = _bernoulli()
    idata = pmdp.sample(400, method="ais", temperature=1.0, weight_epsilon=1e6, truncate={"p": (A0, 1 - A0)},
                        stages=30, model=model, random_seed=1, **QUIET)
    k, n = int(y.sum()), len(y)
    a, b = 1 + k, 1 + n - k
    truth_mean, truth_sd = a / (a + b), math.sqrt(a * b / ((a + b) ** 2 * (a + b + 1)))
    mean, sd, ess = _weighted(idata, "p")
    assert ess >= 50
    assert abs(mean - truth_mean) < 4 * truth_sd / math.sqrt(ess)
    assert abs(sd / truth_sd - 1) < 0.25


def test_normal_posterior_mean_within_monte_carlo_error():
    """μ ~ N(0, 2²) truncated to [−4, 4], x ~ N(μ, 1), 60 records in [−5, 5]: the posterior is N(m, s²) with
    s² = 1/(1/4 + 60) and m = s² Σx (the truncation is > 30 s.d. away). Same tolerances as above."""
    x = np.clip(np.random.default_rng(3).normal(1.2, 1.0, 60), -5, 5)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 2.0)
        pm.Normal("x", mu, 1.0, observed=x)
    idata = pmdp.sample(400, method="ais", temperature=1.0, weight_epsilon=1e6, truncate={"mu": (-4, 4)},
                        bounds={"x": {"x": (-5, 5)}}, stages=40, model=model, random_seed=2, **QUIET)
    s2 = 1.0 / (1 / 4 + len(x))
    mean, sd, ess = _weighted(idata, "mu")
    assert ess >= 50
    assert abs(mean - s2 * x.sum()) < 4 * math.sqrt(s2) / math.sqrt(ess)
    assert abs(sd / math.sqrt(s2) - 1) < 0.25


def test_resampling_by_the_released_weights_is_free_and_arviz_reads_it():
    import arviz as az

    model, _ = _bernoulli(100)
    idata = pmdp.sample(100, method="ais", temperature=1.0, weight_epsilon=1e6, truncate={"p": (A0, 1 - A0)},
                        stages=10, model=model, random_seed=8, **QUIET)
    even = pmdp.resample_weighted(idata, 500, random_seed=1)
    assert even.posterior["p"].shape == (1, 500)
    assert pmdp.ledger(even) == pmdp.ledger(idata)  # nothing more was spent
    mean, _, _ = _weighted(idata, "p")
    # 500 draws from the weighted particles: their mean is within 4 s.e. of the weighted mean.
    assert abs(float(even.posterior["p"].mean()) - mean) < 4 * float(even.posterior["p"].std()) / math.sqrt(500) + 1e-9
    assert "p" in az.summary(even).index
    with pytest.raises(ValueError, match="no released weights"):
        pmdp.resample_weighted(even)


def test_the_ledger_is_the_hand_computation():
    """Each stage k: M × steps Barker steps at ε = 2Δβ_k, β_k = β_K × schedule_k; then the weights' Laplace entry."""
    model, _ = _bernoulli(50)
    M, steps, T = 20, 3, 4.0
    schedule = [0.1, 0.5, 1.0]
    idata = pmdp.sample(M, method="ais", temperature=T, weight_epsilon=0.5, truncate={"p": (A0, 1 - A0)},
                        schedule=schedule, steps=steps, model=model, random_seed=3, **QUIET)
    ledger = pmdp.ledger(idata)
    delta = math.log((1 - A0) / A0)
    stages = [e for e in ledger.entries if e.mechanism == "private_barker"]
    assert [e.epsilon for e in stages] == pytest.approx([2 * delta * f / T for f in schedule])
    assert all(e.count == M * steps for e in stages)
    (weights,) = [e for e in ledger.entries if e.mechanism == "laplace"]
    assert weights.epsilon == 0.5
    assert weights.details["sensitivity"] == pytest.approx(2 * math.tanh(delta / T / 2))
    assert ledger.total().epsilon == pytest.approx(M * steps * 2 * delta * sum(schedule) / T + 0.5)
    assert idata.posterior["p"].shape == (1, M)
    w = idata.sample_stats["weight"].values.ravel()
    assert w.min() >= 0 and w.sum() == pytest.approx(1.0)


def test_epsilon_is_spent_exactly_under_basic_composition_and_within_it_under_the_tight_accountant():
    model, _ = _bernoulli(50)
    basic = pmdp.sample(30, method="ais", epsilon=4.0, delta=0, truncate={"p": (A0, 1 - A0)}, stages=5,
                        model=model, random_seed=4, **QUIET)
    assert pmdp.ledger(basic).total().epsilon == pytest.approx(4.0, rel=1e-6)
    tight = pmdp.sample(30, method="ais", epsilon=4.0, truncate={"p": (A0, 1 - A0)}, stages=5, model=model,
                        random_seed=4, **QUIET)
    ledger = pmdp.ledger(tight)
    assert ledger.budget.method == "best" and ledger.budget.delta == 1e-6
    assert ledger.total("best", delta=1e-6).epsilon <= 4.0 + 1e-9
    # the tight accountant lets the run anneal further than basic composition does
    beta = lambda idata: pmdp.ledger(idata).entries[-1].details["final_inverse_temperature"]  # noqa: E731
    assert beta(tight) > beta(basic)


def test_resampling_releases_equally_weighted_draws_charged_per_pick():
    model, _ = _bernoulli(50)
    idata = pmdp.sample(25, method="ais", temperature=2.0, weights="resample", truncate={"p": (A0, 1 - A0)},
                        stages=4, model=model, random_seed=5, **QUIET)
    assert "sample_stats" not in set(getattr(idata, "children", None) or idata.groups())
    assert idata.posterior["p"].shape == (1, 25)
    (picks,) = [e for e in pmdp.ledger(idata).entries if e.mechanism == "exponential"]
    delta = math.log((1 - A0) / A0)
    assert picks.count == 25 and picks.epsilon == pytest.approx(2 * delta / 2.0)  # exact resampling: 2Δ/T a pick
    assert picks.details["exact_resampling"]


def test_the_budget_is_checked_before_anything_runs():
    model, _ = _bernoulli(50)
    ledger = pmdp.PrivacyLedger(budget=pmdp.Budget(epsilon=1.0))
    with pytest.raises(pmdp.BudgetExceededError):
        pmdp.sample(30, method="ais", temperature=1.0, weight_epsilon=1.0, truncate={"p": (A0, 1 - A0)},
                    ledger=ledger, model=model, **QUIET)
    assert len(ledger) == 0


@pytest.mark.parametrize("kw, match", [
    ({"tune": 100}, "runs no pm.sample"),
    ({"temperature": 2.0}, "exactly one of epsilon"),
    ({"weights": "both"}, "weights must be"),
    ({"weight_share": 1.5}, "weight_share"),
    ({"stages": 0}, "stages"),
    ({"schedule": [0.5, 0.2, 1.0]}, "schedule"),
    ({"steps": 0}, "steps"),
    ({"var_names": "p"}, "not a string"),
    ({"weight_epsilon": 0.5}, "weight_share"),
    ({"schedule": [0.5, 1.0], "stages": 3}, "not both"),
    ({"epsilon": 1e-300, "delta": 0}, "stay at the prior"),
    ({"var_names": ["q"]}, "cannot release 'q'|not free variables"),
])
def test_bad_requests_are_refused_before_any_spend(kw, match):
    model, _ = _bernoulli(30)
    ledger = pmdp.PrivacyLedger()
    kw = {"epsilon": 1.0, **kw}
    with pytest.raises(ValueError, match=match):
        pmdp.sample(10, method="ais", truncate={"p": (A0, 1 - A0)}, ledger=ledger, model=model, **kw)
    assert len(ledger) == 0


def test_models_ais_cannot_take_are_refused_with_the_reason():
    model, _ = _bernoulli(30)
    with pytest.raises(ValueError, match="weight_epsilon"):
        pmdp.sample(10, method="ais", temperature=2.0, truncate={"p": (A0, 1 - A0)}, model=model)
    with pytest.raises(ValueError, match="Make it finite|truncat"):
        pmdp.sample(10, method="ais", epsilon=1.0, model=model, selection=False)  # on: the public clip
    with pm.Model() as discrete:
        k = pm.Categorical("k", np.ones(3) / 3)
        pm.Normal("x", k, 1.0, observed=np.zeros(5))
    with pytest.raises(ValueError, match="discrete"):
        pmdp.sample(10, method="ais", epsilon=1.0, model=discrete)
    with pm.Model() as potential:
        q = pm.Beta("p", 1, 1)
        pm.Potential("extra", pm.math.log(q))
        pm.Bernoulli("y", p=q, observed=np.ones(5))
    with pytest.raises(ValueError, match="Potential"):
        pmdp.sample(10, method="ais", epsilon=1.0, model=potential)


def test_an_advanced_composition_budget_is_fitted_or_refused_by_name():
    """Heterogeneous advanced composition charges every round at the largest ε (here the weights' release), so it
    can total more than basic whatever β_K: β_K is lowered while that helps, and otherwise the refusal names the
    accountant, before anything is spent."""
    model, _ = _bernoulli(30)
    ledger = pmdp.PrivacyLedger(budget=pmdp.Budget(epsilon=50.0, delta=1e-5, method="advanced"))
    with pytest.raises(ValueError, match="'advanced' composition"):
        pmdp.sample(10, method="ais", epsilon=50.0, truncate={"p": (A0, 1 - A0)}, ledger=ledger, stages=2, steps=1,
                    model=model, random_seed=1, **QUIET)
    assert len(ledger) == 0
    fits = pmdp.PrivacyLedger(budget=pmdp.Budget(epsilon=50.0, delta=1e-5, method="advanced"))
    pmdp.sample(10, method="ais", epsilon=50.0, truncate={"p": (A0, 1 - A0)}, ledger=fits, stages=2, steps=1,
                weights="resample", model=model, random_seed=1, **QUIET)
    assert 0 < fits.total("advanced", delta=1e-5).epsilon <= 50.0 + 1e-9


def test_deterministics_are_not_released_by_name():
    with pm.Model() as model:
        q = pm.Beta("p", 1, 1)
        pm.Deterministic("twice", 2 * q)
        pm.Bernoulli("y", p=q, observed=np.ones(20))
    with pytest.raises(ValueError, match="free variables only"):
        pmdp.sample(10, method="ais", epsilon=5.0, truncate={"p": (A0, 1 - A0)}, model=model, var_names=["twice"])


def test_auto_never_chooses_ais_and_helpers_are_sane():
    assert "ais" not in pmdp.routes.chooser.AUTO_ORDER
    s = annealing_schedule(5)
    assert s[0] == pytest.approx(1e-3) and s[-1] == 1.0 and np.all(np.diff(s) > 0)
    assert weight_sensitivity(1e9, 1.0) == pytest.approx(2.0)  # never above the simplex's diameter
    assert weight_sensitivity(0.01, 1.0) == pytest.approx(0.01, rel=1e-4)


def test_a_gallery_regression_with_coords_runs_and_releases_only_its_parameters():
    """The gallery's linear regression (coords, pm.Data covariates, X @ beta), clipped log-likelihood."""
    rng = np.random.default_rng(6)
    X = rng.normal(size=(80, 2))
    y = 0.5 + X @ np.array([1.0, -0.5]) + rng.normal(0, 0.5, 80)
    with pm.Model(coords={"obs": np.arange(80), "feature": ["x1", "x2"]}) as model:
        x = pm.Data("X", X, dims=("obs", "feature"))
        a = pm.Normal("a", 0, 2)
        beta = pm.Normal("beta", 0, 2, dims="feature")
        sigma = pm.HalfNormal("sigma", 1)
        pm.Normal("y", a + x @ beta, sigma, observed=y, dims="obs")
    idata = pmdp.sample(40, method="ais", epsilon=50.0, loglik_clip=(-6, 0), stages=5, model=model, random_seed=7,
                        **QUIET)
    assert set(idata.posterior.data_vars) == {"a", "beta", "sigma"}
    assert list(idata.posterior["beta"].coords["feature"].values) == ["x1", "x2"]
    assert not {"observed_data", "constant_data"} & set(getattr(idata, "children", None) or idata.groups())


def test_a_seeded_run_is_recorded_as_seeded_with_a_warning_as_on_every_sampler_route():
    # random_seed= fixes the particles' moves, which are this route's privacy randomness: the same rule as ops and
    # gibbs (a warning, and every sampler entry says seeded); the weights' noise stays secure (noise_rng unset).
    from pymc_dp.routes.base import SEEDED_SAMPLER

    model, _ = _bernoulli(n=50)
    kwargs = dict(method="ais", epsilon=1.0, truncate={"p": (A0, 1 - A0)}, stages=3, model=model, **QUIET)
    with pytest.warns(UserWarning, match="random_seed= fixes the sampler's randomness"):
        seeded = pmdp.sample(20, random_seed=3, **kwargs)
    moves = [e for e in pmdp.ledger(seeded).entries if e.mechanism == "private_barker"]
    assert moves and all(e.noise_source == "seeded" and SEEDED_SAMPLER in e.assumptions for e in moves)
    assert all(e.noise_source == "secure" for e in pmdp.ledger(seeded).entries if e.mechanism == "laplace")
    unseeded = pmdp.sample(20, **kwargs)
    assert all(e.noise_source == "sampler" and SEEDED_SAMPLER not in e.assumptions
               for e in pmdp.ledger(unseeded).entries if e.mechanism == "private_barker")
