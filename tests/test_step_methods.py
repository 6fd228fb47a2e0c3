"""Private step methods (PrivateGibbs, PrivateMetropolis) and pmdp.sample(method="gibbs").

Statistical checks compare chains with the analytic tempered, truncated posterior.
Tolerances are 4 Monte Carlo standard errors computed from the chains themselves
(sd/√ESS for the mean, sd/√(2·ESS) for the sd): a wrong temperature (T² or 1/T), a
missing truncation or a wrong acceptance rule moves the mean by many standard
errors and fails; a correct sampler fails a check with probability below 1e-4.
Conditional samplers are checked against SciPy with Kolmogorov–Smirnov tests on
20 000 draws at level 1e-4.
"""

from __future__ import annotations

import math

import arviz as az
import numpy as np
import pymc as pm
import pytest
from scipy import integrate, stats

import pymc_dp as pmdp
from pymc_dp import _compat
from pymc_dp.accounting import Budget, BudgetExceededError, PrivacyLedger
from pymc_dp.families import ClippedRecordsWarning
from pymc_dp.step_methods import NotConjugateError, conditionals
from pymc_dp.step_methods._graph import PointFunction

N, SUCCESSES = 40, 6
RECORDS = np.r_[np.ones(SUCCESSES), np.zeros(N - SUCCESSES)].astype(np.int8)
A0 = 0.2  # Δ = ln 4 for p ∈ [0.2, 0.8]
DELTA = math.log(4.0)
T = 4.0
QUIET = dict(progressbar=False, compute_convergence_checks=False)


def beta_bernoulli(records=RECORDS, prior=(1.0, 1.0)) -> pm.Model:
    with pm.Model() as model:
        p = pm.Beta("p", *prior)
        pm.Bernoulli("y", p, observed=records)
    return model


def truncated_model() -> pm.Model:
    return pmdp.truncate(beta_bernoulli(), {"p": (A0, 1 - A0)})


def tempered_moments(temperature: float = T) -> tuple[float, float]:
    """Mean and sd of Beta(1 + s/T, 1 + (N − s)/T) restricted to [A0, 1 − A0]."""
    dist = stats.beta(1 + SUCCESSES / temperature, 1 + (N - SUCCESSES) / temperature)
    lo, hi = A0, 1 - A0
    mass = dist.cdf(hi) - dist.cdf(lo)
    m1 = integrate.quad(lambda t: t * dist.pdf(t), lo, hi)[0] / mass
    m2 = integrate.quad(lambda t: t * t * dist.pdf(t), lo, hi)[0] / mass
    return m1, math.sqrt(m2 - m1 * m1)


def assert_matches(idata, mean: float, sd: float) -> None:
    draws = idata.posterior["p"].values.ravel()
    ess = float(az.ess(idata, var_names=["p"])["p"])
    assert ess > 400, f"too few effective draws ({ess:.0f}) for the tolerance to mean anything"
    assert abs(draws.mean() - mean) < 4 * sd / math.sqrt(ess), (draws.mean(), mean, ess)
    assert abs(draws.std() - sd) < 4 * sd / math.sqrt(2 * ess), (draws.std(), sd, ess)


# --------------------------------------------------------------------------- conditional samplers


def _ks(draws, cdf) -> None:
    assert stats.kstest(draws, cdf).pvalue > 1e-4


def _truncated_cdf(d, lo, hi):
    """CDF of the frozen SciPy ``d`` restricted to [lo, hi], from whichever tail keeps it representable."""
    if d.cdf(lo) > 0.5:
        return lambda x: (d.sf(lo) - d.sf(x)) / (d.sf(lo) - d.sf(hi))
    return lambda x: (d.cdf(x) - d.cdf(lo)) / (d.cdf(hi) - d.cdf(lo))


@pytest.mark.parametrize("a, b, lo, hi", [(3.0, 5.0, 0.0, 1.0), (3.0, 5.0, 0.2, 0.5), (50.0, 2.0, 0.01, 0.3), (2.0, 60.0, 0.5, 0.9)])
def test_truncated_beta_matches_scipy(a, b, lo, hi):
    rng = np.random.default_rng(1)
    draws = conditionals.truncated_beta(np.full(20_000, a), b, lo, hi, rng)
    assert draws.min() >= lo and draws.max() <= hi
    _ks(draws, _truncated_cdf(stats.beta(a, b), lo, hi))


@pytest.mark.parametrize("lo, hi", [(-1.0, 2.0), (5.0, 6.0), (-6.0, -5.0)])
def test_truncated_normal_matches_scipy_also_in_the_tails(lo, hi):
    rng = np.random.default_rng(2)
    draws = conditionals.truncated_normal(np.zeros(20_000), 1.0, lo, hi, rng)
    assert draws.min() >= lo and draws.max() <= hi
    _ks(draws, stats.truncnorm(lo, hi).cdf)


def test_truncated_gamma_and_flat_rate():
    rng = np.random.default_rng(3)
    draws = conditionals.truncated_gamma(np.full(20_000, 3.0), 2.0, 0.5, 4.0, rng)
    _ks(draws, _truncated_cdf(stats.gamma(3.0, scale=0.5), 0.5, 4.0))
    flat = conditionals.truncated_gamma(np.full(20_000, 2.0), 0.0, 1.0, 3.0, rng)  # density ∝ x on [1, 3]
    _ks(flat, lambda x: (x**2 - 1) / 8)


def test_floored_dirichlet_is_inside_and_refuses_an_empty_region():
    rng = np.random.default_rng(4)
    draws = np.array([conditionals.floored_dirichlet(np.array([2.0, 3.0, 4.0]), 0.1, rng)[0] for _ in range(2000)])
    assert draws.min() >= 0.1 and np.allclose(draws.sum(axis=1), 1)
    with pytest.raises(conditionals.EmptyTruncationError, match="lower the floor"):
        conditionals.floored_dirichlet(np.array([0.01, 5000.0]), 0.3, rng)


def test_truncation_without_mass_is_refused():
    with pytest.raises(conditionals.EmptyTruncationError, match="widen the truncation"):
        conditionals.truncated_normal(np.zeros(1), 1.0, 60.0, 61.0, np.random.default_rng(0))


# --------------------------------------------------------------------------- the steps on beta-Bernoulli


def test_private_gibbs_cost_and_stationary_distribution():
    with truncated_model():
        step = pmdp.PrivateGibbs(["p"], temperature=T)
        assert step.cost.epsilon == pytest.approx(2 * DELTA / T, rel=1e-12)
        assert step.cost.delta == 0.0 and step.cost.mechanism == "private_gibbs"
        idata = pm.sample(2000, tune=0, chains=2, cores=1, step=[step], random_seed=5, **QUIET)
    assert_matches(idata, *tempered_moments())
    assert np.all(idata.sample_stats["dp_epsilon"].values == step.cost.epsilon)


@pytest.mark.parametrize("acceptance", ["barker", "metropolis"])
def test_private_metropolis_stationary_distribution(acceptance):
    with truncated_model():
        step = pmdp.PrivateMetropolis(["p"], temperature=T, acceptance=acceptance, scaling=1.0)
        idata = pm.sample(6000, tune=500, chains=2, cores=1, step=[step], random_seed=6, **QUIET)
    assert_matches(idata, *tempered_moments())


def test_metropolis_acceptance_costs_a_delta_and_barker_a_pure_epsilon():
    with truncated_model():
        barker = pmdp.PrivateMetropolis(["p"], temperature=T)
        metropolis = pmdp.PrivateMetropolis(["p"], temperature=T, acceptance="metropolis")
    s = 2 * DELTA / T
    assert (barker.cost.epsilon, barker.cost.delta) == (pytest.approx(s), 0.0)
    # (0, 1 − e^{−s}) and no smaller δ: r = −s under X, r′ = 0 under X′ rejects with 1 − e^{−s} vs 0.
    assert metropolis.cost.epsilon == 0.0 and metropolis.cost.delta == pytest.approx(-math.expm1(-s), rel=1e-12)


def test_epsilon_per_update_sets_the_temperature():
    with truncated_model():
        step = pmdp.PrivateGibbs(["p"], epsilon_per_update=0.25)
        capped = pmdp.PrivateGibbs(["p"], epsilon_per_update=100.0)
    assert step.temperature == pytest.approx(2 * DELTA / 0.25) and step.cost.epsilon == pytest.approx(0.25)
    assert capped.temperature == 1.0 and capped.cost.epsilon == pytest.approx(2 * DELTA)


def test_steps_refuse_what_they_cannot_prove():
    with beta_bernoulli():
        with pytest.raises(ValueError, match=r"pmdp.truncate\(model, \{'p'"):
            pmdp.PrivateGibbs(["p"], temperature=T)
    with truncated_model():
        with pytest.raises(ValueError, match="exactly one of temperature"):
            pmdp.PrivateGibbs(["p"])
        with pytest.raises(ValueError, match="temperature must be >= 1"):
            pmdp.PrivateGibbs(["p"], temperature=0.5)
        with pytest.raises(ValueError, match="acceptance must be one of"):
            pmdp.PrivateMetropolis(["p"], temperature=T, acceptance="gibbs")
    with pm.Model():
        lam = pm.Truncated("lam", pm.Normal.dist(3, 1), lower=0.5, upper=10)
        pm.Poisson("k", lam, observed=[1, 2, 3])
        with pytest.raises(NotConjugateError, match="PrivateMetropolis"):
            pmdp.PrivateGibbs(["lam"], temperature=T, bounds={"k": {"upper": 10}})


def test_records_outside_the_bounds_are_refused_by_a_step():
    with pm.Model():
        mu = pm.Uniform("mu", -3, 3)
        pm.Normal("x", mu, 1.0, observed=[0.5, 7.0])
        with pytest.raises(ValueError, match="outside the declared bounds"):
            pmdp.PrivateGibbs(["mu"], temperature=T, bounds={"x": {"x": (-5, 5)}})


@pytest.mark.parametrize("family", ["poisson", "exponential", "normal"])
def test_conjugate_updates_match_the_analytic_tempered_posterior(family):
    """Gibbs on one variable draws independently: 4000 draws, 4 standard errors of the mean."""
    rng = np.random.default_rng(7)
    with pm.Model():
        if family == "poisson":
            data = rng.poisson(3.0, size=30)
            theta = pm.Truncated("theta", pm.Gamma.dist(2.0, 1.0), lower=0.5, upper=20.0)
            pm.Poisson("x", theta, observed=data)
            bounds = {"x": {"upper": 12}}
            post = stats.gamma(2.0 + data.sum() / T, scale=1 / (1.0 + len(data) / T))
        elif family == "exponential":
            data = rng.exponential(0.5, size=30)
            theta = pm.Truncated("theta", pm.Gamma.dist(2.0, 1.0), lower=0.1, upper=20.0)
            pm.Exponential("x", theta, observed=data)
            bounds = {"x": {"x": (0.0, 10.0)}}
            post = stats.gamma(2.0 + len(data) / T, scale=1 / (1.0 + data.sum() / T))
        else:
            data = rng.normal(1.0, 2.0, size=30)
            theta = pm.Truncated("theta", pm.Normal.dist(0.0, 3.0), lower=-10, upper=10)
            pm.Normal("x", theta, 2.0, observed=np.clip(data, -8, 8))
            bounds = {"x": {"x": (-8.0, 8.0)}}
            prec = 1 / 9 + len(data) / (4 * T)
            post = stats.norm(np.clip(data, -8, 8).sum() / (4 * T) / prec, 1 / math.sqrt(prec))
        lo, hi = (0.5, 20.0) if family == "poisson" else ((0.1, 20.0) if family == "exponential" else (-10, 10))
        step = pmdp.PrivateGibbs(["theta"], temperature=T, bounds=bounds)
        idata = pm.sample(2000, tune=0, chains=2, cores=1, step=[step], random_seed=8, **QUIET)
    draws = idata.posterior["theta"].values.ravel()
    mass = post.cdf(hi) - post.cdf(lo)
    mean = integrate.quad(lambda t: t * post.pdf(t), lo, hi)[0] / mass
    sd = math.sqrt(integrate.quad(lambda t: (t - mean) ** 2 * post.pdf(t), lo, hi)[0] / mass)
    assert abs(draws.mean() - mean) < 4 * sd / math.sqrt(draws.size)
    assert draws.min() >= lo and draws.max() <= hi


# --------------------------------------------------------------------------- method="gibbs" and the ledger


@pytest.mark.parametrize("cores", [1, 2])
def test_ledger_basic_total_is_exact_and_the_tight_total_smaller(cores):
    tune, draws, chains = 100, 300, 2
    with beta_bernoulli():
        idata = pmdp.sample(
            draws, method="gibbs", temperature=T, truncate={"p": (A0, 1 - A0)}, tune=tune, chains=chains, cores=cores,
            random_seed=9, **QUIET,
        )
    ledger = pmdp.ledger(idata)
    expected = (tune + draws) * chains * 2 * DELTA / T
    assert ledger.total().epsilon == pytest.approx(expected, rel=1e-12)
    (entry,) = ledger.entries
    assert entry.count == (tune + draws) * chains and entry.mechanism == "private_gibbs"
    assert any("without convergence" in a for a in entry.assumptions)
    for method in ("rdp", "pld"):
        assert ledger.total(method, delta=1e-6).epsilon < expected
    assert set(_compat.group_names(idata)) == {"posterior", "sample_stats", "warmup_sample_stats", "privacy"}
    assert set(idata.sample_stats.data_vars) == {"dp_epsilon", "dp_delta"}
    assert idata.posterior.sizes["draw"] == draws and idata.warmup_sample_stats.sizes["draw"] == tune


def test_a_run_over_budget_is_refused_before_any_draw(monkeypatch):
    ledger = PrivacyLedger(budget=Budget(epsilon=5.0))

    def no_sampling(*args, **kwargs):  # pragma: no cover - reached only if the check failed
        raise AssertionError("pm.sample ran although the run exceeds the budget")

    monkeypatch.setattr(pm, "sample", no_sampling)
    with beta_bernoulli():
        with pytest.raises(BudgetExceededError):
            pmdp.sample(100, method="gibbs", temperature=T, truncate={"p": (A0, 1 - A0)}, tune=10, chains=2,
                        ledger=ledger, **QUIET)
    assert len(ledger) == 0


def test_epsilon_fits_the_temperature_to_the_budget():
    with beta_bernoulli():
        basic = pmdp.sample(200, method="gibbs", epsilon=3.0, delta=0, truncate={"p": (A0, 1 - A0)}, tune=50, chains=2,
                            cores=1, random_seed=10, **QUIET)
        tight = pmdp.sample(200, method="gibbs", epsilon=3.0, delta=1e-6, truncate={"p": (A0, 1 - A0)}, tune=50,
                            chains=2, cores=1, random_seed=10, **QUIET)
    assert pmdp.ledger(basic).total().epsilon == pytest.approx(3.0, rel=1e-9)
    assert pmdp.ledger(basic).total().epsilon <= 3.0 * (1 + 1e-9)
    lt = pmdp.ledger(tight)
    assert lt.total("best", delta=1e-6).epsilon <= 3.0 * (1 + 1e-9)
    assert lt.total("best", delta=1e-6).epsilon > 2.9  # it spends the budget, not a fraction of it
    assert lt.total().epsilon > 3.0  # the basic sum of the same run is larger
    assert lt.entries[0].details["temperature"] < pmdp.ledger(basic).entries[0].details["temperature"]
    assert lt.entries[0].details["fitted_to"] == {"epsilon": 3.0, "delta": 1e-6, "accountant": "best"}
    assert pmdp.ledger(basic).entries[0].details["fitted_to"] == {"epsilon": 3.0, "delta": 0.0, "accountant": "basic"}


def test_by_default_epsilon_is_fitted_by_the_tightest_accountant_and_the_ledger_says_so():
    from pymc_dp.routes.gibbs import DEFAULT_DELTA

    with beta_bernoulli():
        default = pmdp.sample(100, method="gibbs", epsilon=3.0, truncate={"p": (A0, 1 - A0)}, tune=20, chains=2,
                              cores=1, random_seed=10, **QUIET)
        explicit = pmdp.sample(100, method="gibbs", epsilon=3.0, delta=DEFAULT_DELTA, truncate={"p": (A0, 1 - A0)},
                               tune=20, chains=2, cores=1, random_seed=10, **QUIET)
    ld = pmdp.ledger(default)
    assert ld.entries[0].details["temperature"] == pytest.approx(pmdp.ledger(explicit).entries[0].details["temperature"])
    # The fresh ledger carries the budget the run was fitted to; spent reads the total under it.
    assert ld.budget == Budget(3.0, DEFAULT_DELTA, "best")
    assert 2.9 < ld.spent.epsilon <= 3.0 * (1 + 1e-9) and ld.spent.delta == pytest.approx(DEFAULT_DELTA)
    assert "Total (best at δ = 1e-06, the budget's accountant): ε = 2.99" in ld.summary()


def test_a_ledger_budget_decides_how_epsilon_is_fitted():
    # A basic budget checks the basic sum: the run is fitted by basic composition and fits it.
    pure = PrivacyLedger(budget=Budget(epsilon=3.0))
    tight = PrivacyLedger(budget=Budget(epsilon=3.0, delta=1e-7, method="pld"))
    with beta_bernoulli():
        for ledger in (pure, tight):
            pmdp.sample(50, method="gibbs", epsilon=3.0, truncate={"p": (A0, 1 - A0)}, tune=10, chains=1, cores=1,
                        random_seed=10, ledger=ledger, **QUIET)
    assert pure.entries[0].details["fitted_to"] == {"epsilon": 3.0, "delta": 0.0, "accountant": "basic"}
    assert pure.total().epsilon == pytest.approx(3.0, rel=1e-9)
    assert tight.entries[0].details["fitted_to"] == {"epsilon": 3.0, "delta": 1e-7, "accountant": "pld"}
    assert 2.9 < tight.spent.epsilon <= 3.0 * (1 + 1e-9) < tight.total().epsilon


def test_the_summary_states_how_a_run_was_fitted_and_flags_combined_overspends():
    mine = PrivacyLedger()  # no budget: the run is still fitted at δ = 1e-6, and the summary says so
    with beta_bernoulli():
        pmdp.sample(50, method="gibbs", epsilon=2.0, truncate={"p": (A0, 1 - A0)}, tune=10, chains=1, cores=1,
                    random_seed=1, ledger=mine, **QUIET)
        a, b = (pmdp.sample(50, method="gibbs", epsilon=2.0, truncate={"p": (A0, 1 - A0)}, tune=10, chains=1,
                            cores=1, random_seed=s, **QUIET) for s in (1, 2))
        with pytest.raises(ValueError, match="delta= applies only with epsilon="):
            pmdp.sample(50, method="gibbs", temperature=50.0, delta=1e-6, truncate={"p": (A0, 1 - A0)}, **QUIET)
        pure = pmdp.sample(50, method="gibbs", epsilon=2.0, delta=0, truncate={"p": (A0, 1 - A0)}, tune=10, chains=1,
                           cores=1, random_seed=1, **QUIET)
    assert "Total (best at δ = 1e-06, as a run was fitted): ε = 1.99" in mine.summary()
    assert pmdp.ledger(pure).budget == Budget(2.0, 0.0, "basic")
    both = pmdp.ledger(pmdp.concat([a, b], dim="chain"))
    assert len(both) == 2 and "OVER BUDGET" in both.summary()
    assert "OVER BUDGET" not in pmdp.ledger(a).summary()


def test_non_private_steps_on_data_are_refused():
    model = truncated_model()
    with model:
        with pytest.raises(ValueError, match="NUTS on 'p' is refused"):
            pmdp.sample(50, method="gibbs", temperature=T, step=[pm.NUTS([model["p"]])], tune=10, chains=1, **QUIET)


def test_gibbs_route_argument_errors():
    with beta_bernoulli():
        with pytest.raises(ValueError, match="exactly one of epsilon"):
            pmdp.sample(10, method="gibbs", truncate={"p": (A0, 1 - A0)})
        with pytest.raises(ValueError, match="temperature applies to method='gibbs' / 'ais', not method='laplace'"):
            pmdp.sample(10, epsilon=1.0, method="laplace", temperature=2.0)
        with pytest.raises(ValueError, match="Make it finite"):
            pmdp.sample(10, method="gibbs", temperature=T)


def test_non_conjugate_variables_get_barker_steps_and_records_are_clipped():
    with pm.Model():
        mu = pm.Truncated("mu", pm.Laplace.dist(0.0, 2.0), lower=-4, upper=4)
        pm.Normal("x", mu, 1.0, observed=[0.5, 1.5, 9.0])
        with pytest.warns(ClippedRecordsWarning):
            idata = pmdp.sample(100, method="gibbs", temperature=50.0, bounds={"x": {"x": (-5, 5)}}, tune=20,
                                chains=1, random_seed=11, **QUIET)
    (entry,) = pmdp.ledger(idata).entries
    assert entry.mechanism == "private_barker"
    assert entry.epsilon == pytest.approx(2 * (10 * 8 / 2) / 50.0)


def mixture_model(n: int = 60) -> pm.Model:
    rng = np.random.default_rng(12)
    z = rng.integers(0, 2, n)
    x = np.clip(rng.normal(np.array([-2.0, 2.0])[z], 1.0), -5, 5)
    with pm.Model() as model:
        w = pm.Dirichlet("w", np.ones(2))
        mu = pm.Truncated("mu", pm.Normal.dist(0, 3), lower=-5, upper=5, shape=2)
        assignment = pm.Categorical("z", w, shape=n)
        pm.Normal("x", mu[assignment], 1.0, observed=x)
    return model


def test_per_record_latents_are_charged_by_parallel_composition():
    tune, draws, chains, temperature = 20, 80, 2, 100.0
    with mixture_model():
        idata = pmdp.sample(draws, method="gibbs", temperature=temperature, bounds={"x": {"x": (-5, 5)}}, tune=tune,
                            chains=chains, cores=1, random_seed=13, initvals={"mu": np.array([-1.0, 1.0])}, **QUIET)
    ledger = pmdp.ledger(idata)
    # Δ of one record's term, x ∈ [-5, 5], μ ∈ [-5, 5], σ = 1: 10 × 10 / 2 = 50; each update 2Δ/T = 1.
    by_var = {e.touched: e for e in ledger.entries}
    assert set(by_var) == {"z", "mu"}  # w's conditional reads only z: a free exact update
    n_draws = (tune + draws) * chains
    assert by_var["z"].epsilon == pytest.approx(1.0) and by_var["z"].count == n_draws  # once per scan, not × 60
    assert by_var["mu"].epsilon == pytest.approx(1.0)
    assert ledger.total().epsilon == pytest.approx(2.0 * n_draws)
    assert "parallel_composition" in by_var["z"].details
    assert idata.posterior["z"].shape == (chains, draws, 60)
    assert set(np.unique(idata.posterior["z"].values)) <= {0, 1}


def test_random_scan_event_is_pure_epsilon_but_tighter_under_rdp():
    model = mixture_model()
    with model:
        full = pmdp.PrivateGibbs(["z"], temperature=100.0, bounds={"x": {"x": (-5, 5)}})
        part = pmdp.PrivateGibbs(["z"], temperature=100.0, bounds={"x": {"x": (-5, 5)}}, scan=6)
        with pytest.raises(ValueError, match="exceeds the 60 records"):
            pmdp.PrivateGibbs(["z"], temperature=100.0, bounds={"x": {"x": (-5, 5)}}, scan=61)
    assert part.cost.epsilon == full.cost.epsilon  # the release shows which latents changed: no pure amplification
    assert part.cost.event == {"type": "random_scan", "epsilon": full.cost.epsilon, "probability": 0.1}
    runs = {}
    for name, step in (("full", full), ("part", part)):
        ledger = PrivacyLedger()
        ledger.spend(step.cost.mechanism, step.cost.epsilon, count=500, event=step.cost.event)
        runs[name] = ledger.total("rdp", delta=1e-6).epsilon
    assert runs["part"] < 0.5 * runs["full"]
    rng = np.random.default_rng(0)
    point = model.initial_point()
    new = part.updates[0].draw(point, rng)
    assert np.count_nonzero(new["z"] != point["z"]) <= 6


# --------------------------------------------------------------------------- ArviZ and the ledger


def _run(seed: int, **kw):
    with beta_bernoulli():
        return pmdp.sample(200, method="gibbs", temperature=T, truncate={"p": (A0, 1 - A0)}, tune=50, chains=2,
                           cores=1, random_seed=seed, **QUIET, **kw)


def test_arviz_works_and_concat_composes_the_ledgers(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    a, b = _run(14), _run(14)
    summary = az.summary(a)
    assert "p" in summary.index and np.isfinite(float(az.rhat(a)["p"])) and float(az.ess(a)["p"]) > 100
    az.plot_trace(a)
    both = pmdp.concat([a, b], dim="chain")
    one = pmdp.ledger(a).total().epsilon
    assert pmdp.ledger(both).total().epsilon == pytest.approx(2 * one)  # two runs, two spends: no de-duplication
    path = tmp_path / "private.nc"
    both.to_netcdf(path)
    loaded = az.from_netcdf(path)
    assert pmdp.ledger(loaded) == pmdp.ledger(both)
    assert pmdp.ledger(path).total().epsilon == pytest.approx(2 * one)


def test_plot_ledger():
    import matplotlib

    matplotlib.use("Agg")
    idata = _run(15)
    ax = pmdp.plot_ledger(idata)
    lines = [ln for ln in ax.get_lines() if ln.get_label().startswith("chain")]
    assert len(lines) == 2
    assert lines[0].get_ydata()[-1] == pytest.approx(250 * 2 * DELTA / T)
    assert "tightest accountant" in ax.get_title()
    with pm.Model():
        p = pm.Beta("p", 1, 1)
        pm.Bernoulli("y", p, observed=RECORDS)
        laplace = pmdp.sample(50, epsilon=1.0, tune=50, chains=1, noise_rng=1, random_seed=1, **QUIET)
    with pytest.raises(ValueError, match="no per-draw 'dp_epsilon'"):
        pmdp.plot_ledger(laplace)


def test_latent_scan_draws_each_record_from_its_tempered_conditional():
    """2000 scans at fixed μ, w: each record's frequency of z_i = 1 within 4.5 binomial sd of
    p_i ∝ w_k N(x_i | μ_k, 1)^{1/T} (60 records: family-wise failure rate below 1e-3)."""
    model = mixture_model()
    temperature = 3.0
    with model:
        step = pmdp.PrivateGibbs(["z"], temperature=temperature, bounds={"x": {"x": (-5, 5)}})
    point = model.initial_point()
    point["mu_interval__"] = np.array([-0.6, 0.4])
    point["w_simplex__"] = np.array([0.4])
    mu, w = PointFunction(model, [model["mu"], model["w"]])(point)
    assert abs(mu[0] - mu[1]) > 1.0 and abs(w[0] - 0.5) > 0.1
    x = model.rvs_to_values[model["x"]].data
    logits = np.log(w)[:, None] + stats.norm.logpdf(x[None, :], mu[:, None], 1.0) / temperature
    p1 = np.exp(logits[1] - np.logaddexp(logits[0], logits[1]))
    rng = np.random.default_rng(16)
    draws = np.array([step.updates[0].draw(point, rng)["z"] for _ in range(2000)])
    freq = draws.mean(axis=0)
    assert np.all(np.abs(freq - p1) <= 4.5 * np.sqrt(p1 * (1 - p1) / 2000) + 1e-12)


def test_plan_gibbs_knows_the_cost_before_sampling():
    from pymc_dp.routes import plan_gibbs

    with truncated_model() as model:
        plan = plan_gibbs(model, draws=300, tune=100, chains=3, temperature=T)
    assert [type(s).__name__ for s in plan.steps] == ["PrivateGibbs"]
    assert plan.iterations == 1200
    assert plan.total().epsilon == pytest.approx(1200 * 2 * DELTA / T, rel=1e-12)
    assert "1200 charged draws" in str(plan)
    with pm.Model() as model:  # a Normal prior on a Bernoulli p: not conjugate, so Barker or Metropolis
        p = pm.Truncated("p", pm.Normal.dist(0.5, 0.2), lower=A0, upper=1 - A0)
        pm.Bernoulli("y", p, observed=RECORDS)
        fitted = plan_gibbs(model, draws=100, tune=0, chains=1, epsilon=2.0)
        with pytest.raises(ValueError, match="acceptance='metropolis' is not supported"):
            plan_gibbs(model, draws=100, tune=0, chains=1, epsilon=2.0, acceptance="metropolis")
    assert type(fitted.steps[0]).__name__ == "PrivateMetropolis"
    assert fitted.total().epsilon == pytest.approx(2.0, rel=1e-9)


def test_cumulative_epsilon_counts_tuning_first():
    from pymc_dp.trace import cumulative_epsilon

    idata = _run(17)
    cumulative, tune = cumulative_epsilon(idata)
    assert tune == 50 and cumulative.shape == (2, 250)
    assert np.allclose(np.diff(cumulative, axis=1), 2 * DELTA / T)
