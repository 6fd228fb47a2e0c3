"""Tempered posteriors ("one posterior sample"): truncate, clip_loglik, temper and pmdp.sample(method="ops").

The statistical checks compare MCMC draws of a tempered model with the analytic
tempered, truncated Beta posterior. Tolerances are 4 Monte Carlo standard errors
computed from the chains themselves (sd/√ESS for the mean, sd/√(2·ESS) for the sd),
so a wrong temperature (e.g. T² or 1/T) or a missing truncation, which move the mean
by many standard errors, fail, while a correct sampler fails with probability
below 1e-4 per check.
"""

from __future__ import annotations

import math
import warnings

import arviz as az
import numpy as np
import pymc as pm
import pytest
from scipy import integrate, stats

import pymc_dp as pmdp
from pymc_dp import _compat
from pymc_dp.families import ClippedRecordsWarning
from pymc_dp.model.tempering import TEMPERING_POTENTIAL

N, SUCCESSES = 40, 6
RECORDS = np.r_[np.ones(SUCCESSES), np.zeros(N - SUCCESSES)].astype(np.int8)
A0 = 0.2  # [FGWC16] Fig. 1's truncation: Δ = ln 4


def beta_bernoulli(records=RECORDS, prior=(1.0, 1.0)) -> pm.Model:
    with pm.Model() as model:
        p = pm.Beta("p", *prior)
        pm.Bernoulli("y", p, observed=records)
    return model


def truncated_beta_moments(a: float, b: float, lo: float, hi: float) -> tuple[float, float]:
    dist = stats.beta(a, b)
    mass = dist.cdf(hi) - dist.cdf(lo)
    m1 = integrate.quad(lambda t: t * dist.pdf(t), lo, hi)[0] / mass
    m2 = integrate.quad(lambda t: t * t * dist.pdf(t), lo, hi)[0] / mass
    return m1, math.sqrt(m2 - m1 * m1)


def assert_matches(draws: np.ndarray, idata, mean: float, sd: float) -> None:
    ess = float(az.ess(idata, var_names=["p"])["p"])
    assert ess > 300, f"too few effective draws ({ess:.0f}) for the tolerance to mean anything"
    assert abs(draws.mean() - mean) < 4 * sd / math.sqrt(ess), (draws.mean(), mean, ess)
    assert abs(draws.std() - sd) < 4 * sd / math.sqrt(2 * ess), (draws.std(), sd, ess)


# --------------------------------------------------------------------------- transforms


def test_truncate_returns_a_new_model_and_leaves_the_users_alone():
    model = beta_bernoulli()
    truncated = pmdp.truncate(model, {"p": (A0, 1 - A0)})
    assert truncated is not model
    assert type(model.rvs_to_transforms[model["p"]]).__name__ == "LogOddsTransform"
    assert type(truncated.rvs_to_transforms[truncated["p"]]).__name__ == "Interval"
    logp = truncated.compile_logp(vars=[truncated["p"]], jacobian=False, mode="FAST_COMPILE")
    # Beta(1, 1) truncated to [0.2, 0.8] is uniform with density 1/0.6 there (0 on the
    # interval transform's scale is its midpoint, p = 0.5).
    point = {"p_interval__": np.array(0.0)}
    assert float(logp(point)) == pytest.approx(-math.log(0.6))


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"y": (0.1, 0.9)}, "observed variable"),
        ({"nope": (0.1, 0.9)}, "not a free variable"),
        ({"p": (0.9, 0.1)}, "lower < upper"),
        ({"p": 0.1}, r"\(lower, upper\) pair"),
        ({"p": (None, None)}, "at least one"),
        ({"p": (float("nan"), 0.5)}, "finite number"),
        ({}, "non-empty dict"),
    ],
)
def test_truncate_refuses_bad_specifications(spec, message):
    with pytest.raises(ValueError, match=message):
        pmdp.truncate(beta_bernoulli(), spec)


def test_dirichlet_floor_keeps_every_coordinate_above_it():
    with pm.Model() as model:
        theta = pm.Dirichlet("theta", np.array([0.3, 1.0, 4.0]))
        pm.Categorical("c", theta, observed=np.array([2, 2, 1]))
    truncated = pmdp.truncate(model, {"theta": 0.1})
    idata = pm.sample(500, tune=500, chains=1, model=truncated, progressbar=False, random_seed=3)
    draws = idata.posterior["theta"].values.reshape(-1, 3)
    assert draws.min() >= 0.1 - 1e-12
    assert np.allclose(draws.sum(axis=1), 1.0)
    with pytest.raises(ValueError, match=r"\(0, 1/K\)"):
        pmdp.truncate(model, {"theta": 0.4})
    with pm.Model() as hierarchical:
        conc = pm.HalfNormal("conc", 1.0)
        theta = pm.Dirichlet("theta", conc * np.ones(3))
        pm.Categorical("c", theta, observed=np.array([0]))
    with pytest.raises(ValueError, match="random concentration"):
        pmdp.truncate(hierarchical, {"theta": 0.1})


def test_temper_scales_the_log_likelihood_and_nothing_else():
    model = pmdp.truncate(beta_bernoulli(prior=(2.0, 3.0)), {"p": (A0, 1 - A0)})
    point = model.initial_point()
    lik = float(model.compile_logp(vars=model.observed_RVs, mode="FAST_COMPILE")(point))
    prior = float(model.compile_logp(vars=model.free_RVs, mode="FAST_COMPILE")(point))  # includes the Jacobian
    prior_no_jac = float(model.compile_logp(vars=model.free_RVs, jacobian=False, mode="FAST_COMPILE")(point))
    t = 3.5
    tempered = pmdp.temper(model, t)
    assert float(tempered.compile_logp(mode="FAST_COMPILE")(point)) == pytest.approx(prior + lik / t, rel=1e-12)
    joint = pmdp.temper(model, t, part="joint")
    jac = prior - prior_no_jac
    assert float(joint.compile_logp(mode="FAST_COMPILE")(point)) == pytest.approx((prior_no_jac + lik) / t + jac, rel=1e-12)
    assert TEMPERING_POTENTIAL in tempered.named_vars and TEMPERING_POTENTIAL not in model.named_vars
    assert float(pmdp.temper(model, 1.0).compile_logp(mode="FAST_COMPILE")(point)) == pytest.approx(prior + lik)
    with pytest.raises(ValueError, match="≥ 1"):
        pmdp.temper(model, 0.5)
    with pytest.raises(ValueError, match="part"):
        pmdp.temper(model, 2.0, part="prior")
    with pytest.raises(ValueError, match="already tempered"):
        pmdp.temper(tempered, 2.0)


def _random_walk_model() -> pm.Model:
    rng = np.random.default_rng(4)
    with pm.Model(coords={"time": np.arange(60)}) as model:
        drift = pm.Normal("drift", 0, 1)
        s = pm.HalfNormal("s", 1)
        pm.GaussianRandomWalk("z", mu=drift, sigma=s, init_dist=pm.Normal.dist(0, 5),
                              observed=np.cumsum(rng.normal(0.1, 0.5, 60)), dims="time")
    return model


def _mixture_model() -> pm.Model:
    rng = np.random.default_rng(5)
    with pm.Model() as model:
        w = pm.Dirichlet("w", np.ones(2))
        mu = pm.Normal("mu", [-1.0, 1.0], 2.0, shape=2)
        pm.NormalMixture("y", w=w, mu=mu, sigma=1.0, observed=rng.normal(0.5, 1.5, 40))
    return model


@pytest.mark.parametrize("build", [_random_walk_model, _mixture_model], ids=["random_walk", "mixture"])
@pytest.mark.parametrize("part", ["likelihood", "joint"])
def test_temper_gives_a_fixed_density_for_symbolic_distributions(build, part):
    # pm.logp(rv, value) of a random walk lifts clones of its parents' random variables into the
    # graph; a potential built from it drew them afresh at every evaluation (the density was random).
    model = build()
    point = {k: v + 0.3 for k, v in model.initial_point().items()}
    lik = float(model.compile_logp(vars=model.observed_RVs, mode="FAST_COMPILE")(point))
    prior = float(model.compile_logp(vars=model.free_RVs, mode="FAST_COMPILE")(point))
    jac = prior - float(model.compile_logp(vars=model.free_RVs, jacobian=False, mode="FAST_COMPILE")(point))
    t = 64.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # PyMC warns when cloned random variables are left in a graph
        tempered = pmdp.temper(model, t, part=part)
        logp = tempered.compile_logp(mode="FAST_COMPILE")
        values = {float(logp(point)) for _ in range(5)}
    want = prior + lik / t if part == "likelihood" else (prior - jac + lik) / t + jac
    assert len(values) == 1
    assert values.pop() == pytest.approx(want, rel=1e-12)


def test_temper_refuses_a_model_whose_own_density_is_random():
    data = np.cumsum(np.random.default_rng(6).normal(0.1, 0.5, 30))
    with pm.Model() as model:
        drift = pm.Normal("drift", 0, 1)
        s = pm.HalfNormal("s", 1)
        walk = pm.GaussianRandomWalk.dist(mu=drift, sigma=s, init_dist=pm.Normal.dist(0, 5), steps=29)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # PyMC's warning about the clones it lifted
            pm.Potential("walk_loglik", pm.logp(walk, data).sum())
        pm.Normal("y", drift, 1.0, observed=data[:5])
    with pytest.raises(ValueError, match="still holds random variables.*model.logp"):
        pmdp.temper(model, 4.0)


def test_clip_loglik_clips_every_record_term():
    records = np.array([0.1, -0.4, 9.0, 30.0])
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 1)
        pm.StudentT("t", nu=3, mu=mu, sigma=1, observed=records)
    clipped = pmdp.clip_loglik(model, -5.0, -1.2)
    point = {"mu": np.array(0.3)}
    terms = stats.t.logpdf(records, 3, loc=0.3, scale=1)
    got = clipped.compile_logp(vars=clipped.observed_RVs, sum=False, mode="FAST_COMPILE")(point)[0]
    # PyMC and SciPy evaluate the Student-t log-density to ~1e-9 of each other.
    np.testing.assert_allclose(got, np.clip(terms, -5.0, -1.2), rtol=1e-7)
    assert float(model.compile_logp(vars=model.observed_RVs,
        mode="FAST_COMPILE")(point)) == pytest.approx(terms.sum())  # untouched


# --------------------------------------------------------------------------- the tempered posterior


@pytest.mark.parametrize("sampler", ["nuts", "metropolis"])
def test_tempered_model_matches_the_analytic_tempered_truncated_beta(sampler):
    # Likelihood tempering at T = 2 ln 4 (a0 = 0.2, ε = 1): Beta(1 + s/T, 1 + (N − s)/T) on [0.2, 0.8].
    # With s = 6 of 40 the untruncated tempered mean is ≈ 0.19: the truncation carries real weight.
    truncated = pmdp.truncate(beta_bernoulli(), {"p": (A0, 1 - A0)})
    t = pmdp.loglik_sensitivity(truncated).temperature(1.0)
    assert t == pytest.approx(2 * math.log(4))
    mean, sd = truncated_beta_moments(1 + SUCCESSES / t, 1 + (N - SUCCESSES) / t, A0, 1 - A0)
    tempered = pmdp.temper(truncated, t)
    with tempered:
        step = pm.Metropolis() if sampler == "metropolis" else None
        draws = 6000 if sampler == "metropolis" else 2000
        idata = pm.sample(draws, tune=1000, chains=2, cores=1, step=step, progressbar=False, random_seed=11,
                          compute_convergence_checks=False)
    assert_matches(idata.posterior["p"].values.ravel(), idata, mean, sd)
    # The untempered posterior is clearly different (the test can fail):
    plain_mean, _ = truncated_beta_moments(1 + SUCCESSES, 1 + N - SUCCESSES, A0, 1 - A0)
    assert abs(plain_mean - mean) > 10 * sd / math.sqrt(2000)


def test_joint_tempering_matches_fgwc16_eq14():
    # Beta(2, 3) prior tempered with the likelihood: Beta(1 + (1 + s)/T, 1 + (2 + N − s)/T) on [0.2, 0.8].
    truncated = pmdp.truncate(beta_bernoulli(prior=(2.0, 3.0)), {"p": (A0, 1 - A0)})
    t = 4.0
    mean, sd = truncated_beta_moments(1 + (1 + SUCCESSES) / t, 1 + (2 + N - SUCCESSES) / t, A0, 1 - A0)
    idata = pm.sample(2000, tune=1000, chains=2, cores=1, model=pmdp.temper(truncated, t, part="joint"),
                      progressbar=False, random_seed=5, compute_convergence_checks=False)
    assert_matches(idata.posterior["p"].values.ravel(), idata, mean, sd)


# --------------------------------------------------------------------------- pmdp.sample(method="ops")

OPS = dict(method="ops", tune=300, cores=1, progressbar=False, compute_convergence_checks=False)


def test_ops_shares_the_total_epsilon_among_the_released_draws(tmp_path):
    ledger = pmdp.PrivacyLedger(budget=pmdp.Budget(epsilon=3.0))
    with beta_bernoulli():
        idata = pmdp.sample(200, epsilon=2.0, truncate={"p": (A0, 1 - A0)}, ledger=ledger, chains=2,
                            random_seed=1, **OPS)
    assert set(_compat.group_names(idata)) == {"posterior", "privacy"}  # no data, no log-likelihood, no sampler statistics
    assert idata.posterior.sizes == {"chain": 2, "draw": 1}
    assert float(idata.posterior["draw"][0]) == 199  # the last draw of each chain
    (entry,) = pmdp.ledger(idata).entries
    assert entry.mechanism == "one_posterior_sample"
    # random_seed fixed the sampler, which is this route's privacy randomness: recorded as seeded.
    assert (entry.epsilon, entry.count, entry.noise_source) == (1.0, 2, "seeded")
    assert entry.assumptions[0].startswith("assumes convergence")
    assert entry.details["temperature"] == pytest.approx(2 * math.log(4))
    assert entry.details["sensitivity"] == pytest.approx(math.log(4))
    assert entry.details["epsilon_total_requested"] == 2.0
    assert ledger.total().epsilon == pytest.approx(2.0)
    path = tmp_path / "ops.nc"
    idata.to_netcdf(path)
    assert pmdp.ledger(path) == pmdp.ledger(idata)
    assert az.summary(idata, kind="stats")["mean"].notna().all()


def test_ops_with_several_samples_and_a_budget_that_refuses_before_sampling(monkeypatch):
    ledger = pmdp.PrivacyLedger(budget=pmdp.Budget(epsilon=5.0))
    with beta_bernoulli():
        idata = pmdp.sample(300, epsilon=3.0, truncate={"p": (A0, 1 - A0)}, samples=3, chains=2, ledger=ledger,
                            random_seed=2, **OPS)
    assert idata.posterior.sizes["draw"] == 3
    assert list(idata.posterior["draw"].values) == [99, 199, 299]
    assert ledger.total().epsilon == pytest.approx(2 * 3 * 0.5)
    assert any("independent" in a for a in ledger.entries[0].assumptions)

    def must_not_run(*args, **kwargs):
        raise AssertionError("pm.sample ran although the budget could not pay")

    monkeypatch.setattr(pm, "sample", must_not_run)
    with beta_bernoulli():
        with pytest.raises(pmdp.BudgetExceededError, match=r"6 posterior sample\(s\) \(method='ops'\)"):
            pmdp.sample(300, epsilon=3.0, truncate={"p": (A0, 1 - A0)}, samples=3, chains=2, ledger=ledger, **OPS)
    assert ledger.total().epsilon == pytest.approx(3.0)  # nothing recorded


def test_ops_caps_the_temperature_at_one_and_charges_what_an_exact_sample_costs():
    with beta_bernoulli():
        idata = pmdp.sample(100, epsilon=10.0, truncate={"p": (A0, 1 - A0)}, samples=1, chains=1, random_seed=3, **OPS)
    (entry,) = pmdp.ledger(idata).entries
    assert entry.details["temperature"] == 1.0
    assert entry.epsilon == pytest.approx(2 * math.log(4))  # 2Δ < ε
    assert entry.details["exact_samples_at_T1"] == 3


@pytest.mark.parametrize("epsilon, chains, per_chain", [(10.0, 1, 3), (10.0, 2, 1), (30.0, 2, 5), (1.0, 2, 1), (1000.0, 1, 10)])
def test_ops_releases_by_default_as_many_exact_samples_as_epsilon_buys(epsilon, chains, per_chain):
    # Δ = ln 4 for p in [0.2, 0.8]: ε buys ⌊ε / 2Δ⌋ exact (T = 1) samples, shared by the chains,
    # at most one in ten draws of a chain (ε = 1000 buys 360; a chain of 100 draws releases 10).
    with beta_bernoulli():
        idata = pmdp.sample(100, epsilon=epsilon, truncate={"p": (A0, 1 - A0)}, chains=chains, random_seed=3,
                            **OPS)
    (entry,) = pmdp.ledger(idata).entries
    assert idata.posterior.sizes["draw"] == per_chain and entry.count == chains * per_chain
    assert entry.details["samples_per_chain_chosen"] == "auto"
    exact = math.floor(epsilon / (2 * math.log(4)))
    assert entry.details["exact_samples_at_T1"] == math.floor(epsilon / (chains * per_chain) / (2 * math.log(4)))
    if exact >= chains:
        assert entry.details["temperature"] == 1.0 and entry.epsilon == pytest.approx(2 * math.log(4))
    else:  # one tempered draw per chain spends the whole budget
        assert entry.details["temperature"] > 1.0 and entry.epsilon == pytest.approx(epsilon / chains)
    assert pmdp.ledger(idata).total().epsilon <= epsilon * (1 + 1e-12)


def test_ops_clips_records_to_the_declared_bounds_and_refuses_what_it_cannot_prove():
    records = np.array([0.5, 1.5, 12.0, -7.0])
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 3)
        pm.Normal("y", mu, 2.0, observed=records)
    with model, pytest.warns(ClippedRecordsWarning, match="'y': 2"):
        idata = pmdp.sample(100, epsilon=1.0, truncate={"mu": (-3, 3)}, bounds={"y": {"x": (-5, 5)}}, chains=1,
                            random_seed=4, **OPS)
    assert pmdp.ledger(idata).entries[0].details["sensitivity"] == pytest.approx(10 * 6 / (2 * 4))
    assert float(model.rvs_to_values[model["y"]].data.max()) == 12.0  # the user's data untouched
    with model:
        with pytest.raises(ValueError, match=r"pmdp\.truncate\(model, \{'mu'"):
            pmdp.sample(100, epsilon=1.0, bounds={"y": {"x": (-5, 5)}}, selection=False, **OPS)
        with pytest.raises(ValueError, match="needs epsilon"):
            pmdp.sample(100, truncate={"mu": (-3, 3)}, **OPS)
        with pytest.raises(ValueError, match="noise_rng applies to method='laplace' / 'measurements' / 'saa' / 'ais', not method='ops'"):
            pmdp.sample(100, epsilon=1.0, noise_rng=1, **OPS)
        with pytest.raises(ValueError, match="samples=5 draws"):
            pmdp.sample(4, epsilon=1.0, truncate={"mu": (-3, 3)}, bounds={"y": {"x": (-5, 5)}}, samples=5, **OPS)


def test_ops_with_a_clipped_log_likelihood_takes_models_the_laplace_route_cannot():
    records = np.array([0.2, -1.0, 0.7, 25.0])
    with pm.Model():
        mu = pm.Normal("mu", 0, 2)
        pm.StudentT("t", nu=4, mu=mu, sigma=1, observed=records)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            idata = pmdp.sample(100, epsilon=2.0, loglik_clip=(-8.0, 0.0), chains=1, random_seed=6, **OPS)
    entry = pmdp.ledger(idata).entries[0]
    assert entry.details["sensitivity"] == 8.0 and entry.details["temperature"] == pytest.approx(8.0)
    assert "observed_data" not in _compat.group_names(idata)


def test_ops_refuses_releasing_draws_closer_than_one_in_ten():
    with beta_bernoulli():
        with pytest.raises(ValueError, match=r"samples=20 .* draws=100 would release draws 5 apart.*samples <= 10"):
            pmdp.sample(100, epsilon=4.0, truncate={"p": (A0, 1 - A0)}, samples=20, chains=1, **OPS)


def test_ops_shows_and_logs_nothing_about_the_draws_it_withholds(monkeypatch, caplog, capfd):
    # PyMC's bar shows divergences and step sizes, and its convergence checks log R-hat and ESS,
    # of the whole chain: the route turns both off and counts draws on a line of its own.
    seen = {}
    original = pm.sample

    def recording(*args, **kwargs):
        seen.update(kwargs)
        return original(*args, **kwargs)

    monkeypatch.setattr(pm, "sample", recording)
    with beta_bernoulli(), caplog.at_level("INFO", logger="pymc"):
        pmdp.sample(100, method="ops", epsilon=4.0, truncate={"p": (A0, 1 - A0)}, tune=20, chains=2, cores=1,
                    random_seed=1)
    assert seen["progressbar"] is False and seen["compute_convergence_checks"] is False
    assert "OPS: 240/240 draws" in capfd.readouterr().err
    assert not any(word in caplog.text.lower() for word in ("rhat", "r-hat", "effective sample size", "diverg"))
    # how long sampling took (PyMC's INFO line) is a function of the density that reads the records
    assert "took" not in caplog.text and "NUTS" not in caplog.text
    with beta_bernoulli():
        with pytest.raises(ValueError, match="compute_convergence_checks=True cannot run with method='ops'"):
            pmdp.sample(60, method="ops", epsilon=4.0, truncate={"p": (A0, 1 - A0)}, compute_convergence_checks=True)


def test_no_info_or_debug_line_leaves_while_the_records_are_read_whatever_logger_levels_say(caplog):
    # PyMC logs sampling times (INFO) and divergent energies (DEBUG); numba's DEBUG log prints the
    # code it compiles, observed arrays included. A level set on a child logger must not get around it.
    import logging

    child = logging.getLogger("pymc.sampling.mcmc")
    before = child.level
    child.setLevel(logging.DEBUG)
    try:
        with beta_bernoulli(), caplog.at_level(logging.DEBUG):
            pmdp.sample(30, method="ops", epsilon=4.0, truncate={"p": (A0, 1 - A0)}, tune=20, chains=1, cores=1,
                        random_seed=1, progressbar=False)
    finally:
        child.setLevel(before)
    leaked = [r for r in caplog.records if r.levelno < logging.WARNING and not r.name.startswith("arviz")]
    assert not leaked, [(r.name, r.getMessage()[:80]) for r in leaked]
    assert logging.root.manager.disable == logging.NOTSET  # switched back on afterwards


@pytest.mark.parametrize("compile_kwargs", [{"mode": "monitor"}, {"profile": True}, {"mode": "object"}])
def test_compile_options_that_could_run_user_code_on_the_density_are_refused_before_spending(compile_kwargs):
    # a MonitorMode (any Mode object) calls user code on every node's value; profiles time the density
    from pytensor.compile.mode import Mode

    if compile_kwargs.get("mode") in ("monitor", "object"):
        compile_kwargs = {"mode": Mode(linker="py")}
    lg = pmdp.PrivacyLedger()
    with beta_bernoulli():
        with pytest.raises(ValueError, match="compile_kwargs on this route.*may only name a compilation mode"):
            pmdp.sample(20, method="ops", epsilon=4.0, truncate={"p": (A0, 1 - A0)}, ledger=lg,
                        compile_kwargs=compile_kwargs)
    assert not lg.entries


def test_a_callback_is_refused_where_the_sampler_reads_the_records_and_taken_where_it_does_not():
    calls = []
    lg = pmdp.PrivacyLedger()
    with beta_bernoulli():
        with pytest.raises(ValueError, match="callback= cannot run on this route.*nothing was spent"):
            pmdp.sample(60, method="ops", epsilon=4.0, truncate={"p": (A0, 1 - A0)}, ledger=lg,
                        callback=lambda **kw: calls.append(1))
    assert not lg.entries and not calls
    y = np.random.default_rng(2).normal(0.5, 1.0, 40)
    with pm.Model():
        mu = pm.Normal("mu", 0, 5)
        pm.Normal("y", mu, 1.0, observed=y)
        pmdp.sample(20, tune=20, chains=1, epsilon=1.0, bounds={"y": {"x": (-5.0, 5.0)}}, ledger=lg,
                    progressbar=False, nuts_sampler="pymc", callback=lambda **kw: calls.append(1))
    assert len(calls) == 40 and len(lg.entries) == 1  # the Laplace route samples a record-free model


def test_releasing_fewer_draws_than_asked_says_so_with_public_numbers_only():
    """ε = 1 at Δ = 6 buys no exact sample: one tempered draw a chain of the 200 asked for, and a warning that says
    why (ε, Δ, chains and T: declared or chosen numbers, nothing of the records)."""
    rng = np.random.default_rng(0)
    with pm.Model() as model:
        pm.Normal("y", pm.Normal("mu", 0, 1), 1, observed=rng.normal(size=200))
    with pytest.warns(UserWarning, match=r"release 1 draw\(s\) per chain, not the 200 asked for.*2Δ = 12.*T = 24"):
        idata = pmdp.sample(200, tune=200, chains=2, model=model, epsilon=1.0, method="ops", loglik_clip=(-6, 0),
                            progressbar=False, random_seed=1)
    assert idata.posterior.sizes["draw"] == 1


def test_a_release_limited_by_thinning_alone_does_not_warn():
    """Where ε buys every draw the thinning allows (one in ten), fewer released draws than ``draws`` is the design,
    not the budget: no warning."""
    rng = np.random.default_rng(0)
    with pm.Model() as model:
        pm.Normal("y", pm.Normal("mu", 0, 1), 1, observed=rng.normal(size=200))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        warnings.filterwarnings("ignore", message=".*(converge|R-hat|effective|divergen|chains|random_seed).*")
        idata = pmdp.sample(50, tune=100, chains=1, model=model, epsilon=1000.0, method="ops", loglik_clip=(-6, 0),
                            progressbar=False, random_seed=1)
    assert idata.posterior.sizes["draw"] == 5  # 50 // 10: exact samples, as many as the thinning allows
