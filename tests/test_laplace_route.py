"""The Laplace route end to end: observe_stats, privatize_model and pmdp.sample."""

from __future__ import annotations


import numpy as np
import pymc as pm
import pytest
from scipy import stats as st

import pymc_dp as pmdp
from pymc_dp import _compat
from pymc_dp.families import Bernoulli, PrivateStatistics

SAMPLE = dict(draws=300, tune=300, chains=2, cores=1, progressbar=False, compute_convergence_checks=False)


@pytest.fixture(scope="module")
def records():
    return np.random.default_rng(0).binomial(1, 0.3, size=400)


def beta_bernoulli(records, *, with_deterministics=False):
    with pm.Model(coords={"obs": np.arange(len(records))}) as model:
        p = pm.Beta("p", 1, 1)
        data = pm.Data("y_data", records, dims="obs")
        y = pm.Bernoulli("y", p=p, observed=data, dims="obs")
        if with_deterministics:
            pm.Deterministic("odds", p / (1 - p))
            pm.Deterministic("residual", y - p, dims="obs")
    return model


# ----------------------------------------------------------------------------- observe_stats


def test_observe_stats_adds_the_family_loglik(records):
    stats = pmdp.privatize(records, "bernoulli", 1.0, rng=1)
    with pm.Model() as model:
        p = pm.Beta("p", 1, 1)
        pot = pmdp.observe_stats("y", pm.Bernoulli.dist(p=p), stats)
    assert model.potentials == [pot]
    s, n = stats.values[0], stats.n
    point = {"p_logodds__": np.array(0.4)}
    pval = 1 / (1 + np.exp(-0.4))
    expected = s * np.log(pval) + (n - s) * np.log1p(-pval)
    assert model.compile_logp(vars=[pot], jacobian=False, mode="FAST_COMPILE")(point) == pytest.approx(expected)


def test_observe_stats_refuses_mismatches(records):
    stats = pmdp.privatize(records, "bernoulli", 1.0, rng=1)
    with pm.Model():
        p = pm.Beta("p", 1, 1)
        with pytest.raises(ValueError, match="bernoulli family"):
            pmdp.observe_stats("y", pm.Poisson.dist(mu=p), stats)
        with pytest.raises(ValueError, match="output of pmdp.privatize"):
            pmdp.observe_stats("y", pm.Bernoulli.dist(p=p), {"successes": 3})
        x = pm.Data("x", np.linspace(0.1, 0.9, 5))
        with pytest.raises(ValueError, match="depends on data"):
            pmdp.observe_stats("y", pm.Bernoulli.dist(p=p * x.mean()), stats)
        ps = pm.Beta("ps", 1, 1, shape=3)
        with pytest.raises(ValueError, match="one value shared by all records"):
            pmdp.observe_stats("y3", pm.Bernoulli.dist(p=ps), stats)


# ----------------------------------------------------------------------------- privatize_model


def test_privatize_model_leaves_the_users_model_alone_and_drops_every_record(records):
    model = beta_bernoulli(records, with_deterministics=True)
    before = (list(model.named_vars), [v.name for v in model.observed_RVs], dict(model.coords))
    with pytest.warns(UserWarning, match="residual"):
        private = pmdp.privatize_model(model, 1.0, rng=2)
    assert (list(model.named_vars), [v.name for v in model.observed_RVs], dict(model.coords)) == before
    new = private.model
    assert new.observed_RVs == [] and new.data_vars == []
    assert [v.name for v in new.potentials] == ["y_stats"]
    assert sorted(v.name for v in new.free_RVs) == ["p"]
    assert [v.name for v in new.deterministics] == ["odds"]
    assert "obs" not in new.coords  # record ids are gone
    assert private.dropped == {"residual": "depends on the observed records"}
    assert set(private.statistics) == {"y"} and len(private.ledger) == 1


@pytest.mark.parametrize("noise_aware", [False, True])
def test_privatized_logp_is_the_statistic_loglik_at_large_epsilon(records, noise_aware):
    model = beta_bernoulli(records)
    private = pmdp.privatize_model(model, 1e9, rng=3, noise_aware=noise_aware)
    assert private.noise_aware == {"y": noise_aware}
    a, b = {"p_logodds__": np.array(-0.7)}, {"p_logodds__": np.array(0.2)}
    new, old = private.model.compile_logp(mode="FAST_COMPILE"), model.compile_logp(mode="FAST_COMPILE")
    # With ε = 1e9 the noise is ~1e-9: the private log-joint equals the original one up
    # to a constant (the binomial coefficient and the noise density at the released value).
    assert new(a) - new(b) == pytest.approx(old(a) - old(b), rel=1e-9)


def test_unsupported_family_is_named_and_points_to_ops():
    with pm.Model() as model:
        mu = pm.Normal("mu")
        pm.StudentT("t", nu=3, mu=mu, sigma=1, observed=np.zeros(5))
    with pytest.raises(ValueError, match=r"'t'.*method='ops'"):
        pmdp.privatize_model(model, 1.0)


def test_a_regression_is_recognised_and_a_glm_is_refused_with_the_routes_that_serve_it():
    x = np.linspace(0, 1, 20)
    with pm.Model() as model:
        beta = pm.Normal("beta")
        pm.Normal("y", mu=beta * pm.Data("x", x), sigma=1.0, observed=2 * x)
    with pytest.raises(ValueError, match=r"linear regression on 1 covariate.*'y': \(lo, hi\)"):
        pmdp.privatize_model(model, 1.0, bounds={"y": {"x": (-5, 5)}})
    private = pmdp.privatize_model(model, 1.0, bounds={"y": {"x": (0, 1), "y": (0, 2)}}, rng=0)
    assert private.ledger.entries[0].touched.startswith("y")
    with pm.Model() as glm:
        beta = pm.Normal("beta")
        pm.Poisson("c", mu=pm.math.exp(beta * pm.Data("x", x)), observed=np.arange(20) % 3)
    with pytest.raises(ValueError, match="loglik_clip.*method='saa'"):
        pmdp.privatize_model(glm, 1.0, bounds={"c": {"upper": 5}})


def test_a_failure_on_any_variable_spends_nothing(records):
    ledger = pmdp.PrivacyLedger()
    with pm.Model() as model:
        p = pm.Beta("p", 1, 1)
        pm.Bernoulli("a", p=p, observed=records)
        pm.Poisson("b", mu=10 * p, observed=np.array([0, 1, 2]))  # a Poisson needs its bound: none declared
    with pytest.raises(ValueError, match="'b'"):
        pmdp.privatize_model(model, 1.0, ledger=ledger)
    assert len(ledger) == 0


def test_budget_is_checked_for_the_whole_model_before_any_noise(records):
    ledger = pmdp.PrivacyLedger(budget=pmdp.Budget(epsilon=1.0))
    ledger.spend("earlier release", 0.5)
    with pm.Model() as model:
        p = pm.Beta("p", 1, 1)
        pm.Bernoulli("a", p=p, observed=records)
        pm.Bernoulli("b", p=p, observed=records[:100])
    with pytest.raises(pmdp.BudgetExceededError):
        pmdp.privatize_model(model, 0.6, ledger=ledger)
    assert len(ledger) == 1


def test_epsilon_is_split_as_asked(records):
    with pm.Model() as model:
        p = pm.Beta("p", 1, 1)
        pm.Bernoulli("a", p=p, observed=records)
        pm.Bernoulli("b", p=p, observed=records[:100])
    even = pmdp.privatize_model(model, 1.0, rng=1)
    assert sorted(e.epsilon for e in even.ledger.entries) == pytest.approx([0.5, 0.5])
    weighted = pmdp.privatize_model(model, 1.0, rng=1, epsilon_split={"a": 3, "b": 1})
    assert {e.touched.split(":")[0]: e.epsilon for e in weighted.ledger.entries} == pytest.approx({"a": 0.75, "b": 0.25})
    with pytest.raises(ValueError, match="missing"):
        pmdp.privatize_model(model, 1.0, epsilon_split={"a": 1})
    with pytest.raises(ValueError, match="positive"):
        pmdp.privatize_model(model, 1.0, epsilon_split={"a": 1, "b": 0})


def test_bounds_must_name_observed_variables(records):
    model = beta_bernoulli(records)
    with pytest.raises(ValueError, match="not observed variables"):
        pmdp.privatize_model(model, 1.0, bounds={"z": {"upper": 3}})


def test_prior_hyperparameter_arrays_are_public_but_record_arrays_are_not(records):
    with pm.Model() as model:
        theta = pm.Dirichlet("theta", a=np.ones(3))
        pm.Categorical("c", p=theta, observed=np.tile([0, 1, 2, 2], 25))
    private = pmdp.privatize_model(model, 1.0, rng=1, noise_aware=False)
    assert [v.name for v in private.model.free_RVs] == ["theta"]
    aware = pmdp.privatize_model(model, 1.0, rng=1)  # noise-aware: 100 records, the exact histogram sum
    assert aware.noise_aware == {"c": True} and [v.name for v in aware.model.free_RVs] == ["theta"]
    with pm.Model() as model:
        p = pm.Beta("p", 1, 1)
        pm.Deterministic("weighted", p * np.linspace(0, 1, len(records)).sum())  # scalar: fine
        pm.Potential("record_term", (p * records.astype(float)).sum())  # raw records as a constant
        pm.Bernoulli("y", p=p, observed=records)
    with pytest.raises(ValueError, match="record-length array"):
        pmdp.privatize_model(model, 1.0)


def test_data_used_outside_the_likelihood_is_refused(records):
    with pm.Model() as model:
        scale = pm.Data("prior_scale", np.array([1.0, 2.0]))
        p = pm.Beta("p", 1, scale.sum())
        pm.Bernoulli("y", p=p, observed=records)
    with pytest.raises(ValueError, match="prior_scale"):
        pmdp.privatize_model(model, 1.0)


# ----------------------------------------------------------------------------- pmdp.sample


def test_privacy_flag_returns_a_released_trace_with_its_ledger(records, tmp_path):
    model = beta_bernoulli(records)
    with model:
        idata = pmdp.sample(epsilon=0.5, noise_rng=4, random_seed=1, **SAMPLE)
    assert set(_compat.group_names(idata)) == {"posterior", "sample_stats", "privacy"}
    assert list(idata.posterior.data_vars) == ["p"]
    assert "obs" not in idata.posterior.coords
    assert "diverging" in idata.sample_stats and "step_size" in idata.sample_stats
    assert not [s for s in idata.sample_stats.data_vars if "time" in s or "perf_counter" in s]
    led = pmdp.ledger(idata)
    assert [(e.mechanism, e.epsilon, e.touched) for e in led.entries] == [("geometric", 0.5, "y:successes")]
    path = tmp_path / "private.nc"
    idata.to_netcdf(path)
    assert pmdp.ledger(str(path)) == led
    # the user's model still samples normally afterwards
    assert [v.name for v in model.observed_RVs] == ["y"]


def test_privacy_flag_at_huge_epsilon_matches_the_conjugate_posterior(records):
    with beta_bernoulli(records):
        idata = pmdp.sample(epsilon=1e9, noise_rng=5, random_seed=2, **SAMPLE)
    k, n = records.sum(), len(records)
    exact = st.beta(1 + k, 1 + n - k)
    draws = idata.posterior["p"].values.ravel()
    # 600 draws with ESS of a few hundred: the mean is within 5 exact posterior sd / sqrt(100)
    assert abs(draws.mean() - exact.mean()) < 5 * exact.std() / np.sqrt(100)
    assert draws.std() == pytest.approx(exact.std(), rel=0.2)


def test_statistics_route_attaches_the_ledgers_it_used(records):
    stats = pmdp.privatize(records, "bernoulli", 0.3, rng=6)
    with pm.Model():
        p = pm.Beta("p", 1, 1)
        pmdp.observe_stats("y", pm.Bernoulli.dist(p=p), stats)
        idata = pmdp.sample(random_seed=1, **SAMPLE)
    assert [e.id for e in pmdp.ledger(idata).entries] == [stats.entry_id]


def test_sample_refuses_what_it_cannot_do(records):
    with beta_bernoulli(records):
        with pytest.raises(ValueError, match="pass epsilon="):
            pmdp.sample(**SAMPLE)
        with pytest.raises(ValueError, match="method must be one of"):
            pmdp.sample(epsilon=1.0, method="hmc", **SAMPLE)
        with pytest.raises(ValueError, match="truncate applies to method='ops' / 'gibbs' / 'ais', not method='laplace'"):
            pmdp.sample(epsilon=1.0, method="laplace", truncate={"p": (0.1, 0.9)}, **SAMPLE)
    with pm.Model():
        pm.Beta("p", 1, 1)
        with pytest.raises(ValueError, match="neither records nor privatised statistics"):
            pmdp.sample(**SAMPLE)


def test_private_statistics_are_public_types():
    assert pmdp.PrivateStatistics is PrivateStatistics
    s = pmdp.privatize(np.array([0, 1, 1]), Bernoulli(), 1.0, rng=1)
    assert "Bernoulli" in s.summary() and s["successes"] == s.values[0]


def test_arviz_works_on_the_released_trace(records):
    import arviz as az
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with beta_bernoulli(records):
        idata = pmdp.sample(epsilon=1.0, noise_rng=8, random_seed=3, **SAMPLE)
    assert az.summary(idata).index.tolist() == ["p"]
    az.plot_trace(idata)
    (az.plot_posterior if hasattr(az, "plot_posterior") else az.plot_dist)(idata)  # ArviZ 1 renamed it
    plt.close("all")


def test_regression_through_privatize_and_observe_stats():
    rng = np.random.default_rng(11)
    X = rng.uniform(-1, 1, size=(2000, 2))
    y = X @ np.array([1.5, -0.5]) + rng.normal(0, 0.3, size=2000)
    stats = pmdp.privatize((X, y), "linear_regression", 50.0, n_features=2, rng=12,
                           bounds={"x": (-1, 1), "y": (-4, 4)})
    with pm.Model():
        beta = pm.Normal("beta", 0, 5, shape=2)
        sigma = pm.HalfNormal("sigma", 1)
        pmdp.observe_stats("y", {"beta": beta, "sigma": sigma}, stats)
        idata = pmdp.sample(random_seed=4, **SAMPLE)
    est = idata.posterior["beta"].mean(("chain", "draw")).values
    # ε = 50 on 2,000 records: noise scale ~0.7 per statistic vs XᵀX entries ~670, so the
    # posterior mean sits within 0.1 of the truth (posterior sd ~0.01 plus noise bias).
    np.testing.assert_allclose(est, [1.5, -0.5], atol=0.1)


def test_statistics_are_not_mistaken_for_records_when_n_equals_their_length():
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 5)
        sigma = pm.HalfNormal("sigma", 2)
        pm.Normal("y", mu, sigma, observed=np.array([0.5, 1.5]))  # N = 2 = number of statistics
    private = pmdp.privatize_model(model, 1.0, rng=1, bounds={"y": {"x": (-3, 3)}})
    assert [v.name for v in private.model.potentials] == ["y_stats"]


@pytest.mark.parametrize("step", ["Metropolis", "Slice"])
def test_any_pymc_sampler_runs_on_privatised_statistics(records, step):
    stats = pmdp.privatize(records, "bernoulli", 1e9, rng=9)
    k, n = records.sum(), len(records)
    with pm.Model():
        p = pm.Beta("p", 1, 1)
        pmdp.observe_stats("y", pm.Bernoulli.dist(p=p), stats)
        idata = pmdp.sample(draws=2000, tune=1000, chains=2, cores=1, progressbar=False,
                            step=getattr(pm, step)(), random_seed=5, compute_convergence_checks=False)
    exact = st.beta(1 + k, 1 + n - k)
    # 4,000 correlated draws (ESS in the hundreds): the mean is within 5 sd/sqrt(100) of exact.
    assert abs(idata.posterior["p"].values.mean() - exact.mean()) < 5 * exact.std() / 10


def test_privacy_flag_returns_what_pm_sample_returns_and_takes_its_keywords(quiet_pymc):
    # A PyMC 6 user gets a DataTree from pm.sample and must get one from pmdp.sample too
    # (an InferenceData on PyMC 5), and the keywords of the installed pm.sample pass through.
    import inspect

    records = np.r_[np.ones(30), np.zeros(70)].astype(np.int8)
    accepted = inspect.signature(pm.sample).parameters
    extra = {k: v for k, v in {"quiet": True, "compile_kwargs": {}, "blas_cores": 1}.items() if k in accepted}
    with beta_bernoulli(records):
        plain = pm.sample(20, tune=20, chains=1, progressbar=False, compute_convergence_checks=False)
        private = pmdp.sample(20, tune=20, chains=1, epsilon=1.0, noise_rng=3, progressbar=False, **extra)
    assert type(private) is type(plain)
    assert private.posterior.sizes["draw"] == 20
