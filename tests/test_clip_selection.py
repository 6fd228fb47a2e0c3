"""A log-likelihood clip chosen privately when the only route that takes a model needs one and none is declared."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest

import pymc_dp as pmdp
from pymc_dp.mechanisms.private_bounds import private_median
from pymc_dp.routes.clip_selection import ABOVE, BELOW, clip_window, missing_clip

SAMPLING = dict(draws=200, tune=300, chains=2, progressbar=False)


def _ar1(n: int = 400, seed: int = 0) -> tuple[pm.Model, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = np.zeros(n)
    for t in range(1, n):
        y[t] = 0.6 * y[t - 1] + rng.normal(0.0, 1.0)
    with pm.Model() as model:
        rho = pm.Normal("rho", 0.0, 0.5)
        sigma = pm.HalfNormal("sigma", 2.0)
        pm.AR("y", rho=[rho], sigma=sigma, init_dist=pm.Normal.dist(0.0, 2.0), observed=y)
    return model, y


def _switchpoint(n: int = 600, seed: int = 0) -> tuple[pm.Model, np.ndarray]:
    counts = np.concatenate([np.random.default_rng(seed).poisson(3.0, n // 2),
                             np.random.default_rng(seed + 1).poisson(1.0, n // 2)])
    years = np.arange(n)
    with pm.Model() as model:
        switch = pm.DiscreteUniform("switch", 0, n - 1)
        early, late = pm.Exponential("early", 1.0), pm.Exponential("late", 1.0)
        pm.Poisson("c", pm.math.switch(switch >= years, early, late), observed=counts)
    return model, counts


def _clip_entries(trace) -> list:
    return [e for e in pmdp.ledger(trace).entries if e.details.get("chosen for") == "loglik_clip"]


def test_the_clip_share_is_what_the_median_needs_about_half_a_range():
    """Under replace-one the share is median_needed_epsilon / ε: 16 ln(2G/β)/N, G = 2 001 (0.21 at 1 000 records
    and ε = 1), against 32 ln(4G/β)/N (G = 243) for one range's four quartiles."""
    from pymc_dp.routes.selection import Selection, needed_epsilon
    from pymc_dp.routes.clip_selection import median_needed_epsilon

    assert median_needed_epsilon(1000) == pytest.approx(16 * np.log(2 * 2001 / 0.01) / 1000)
    assert 0.45 < median_needed_epsilon(1000) / needed_epsilon(1, 1000) < 0.6
    assert Selection().share_for(1.0, median_needed_epsilon(1000), "replace") == pytest.approx(0.206, abs=0.001)


def test_the_window_is_the_median_and_public_widths():
    for median in (-300.0, -2.0, 0.5, 40.0):  # Δ is public: the price reserved with the placeholder holds
        lower, upper = clip_window(median)
        assert (lower, upper) == (median - BELOW, median + ABOVE)
        assert upper - lower == pytest.approx(ABOVE + BELOW)


def test_an_ar1_series_with_nothing_declared_runs_on_ops_with_a_clip_chosen_inside_epsilon():
    """The AR(1) of 400 steps: ops is the route that takes it, and it needs a clip. The clip's two median releases
    and the ops draws total ε; the window is the chosen median ± the public widths, around the terms at the start
    point (there ρ = 0, σ = HalfNormal(2)'s central value, so the terms are a few nats down)."""
    model, _ = _ar1()
    trace = pmdp.sample(model=model, epsilon=2.0, random_seed=1, **SAMPLING)
    ledger = pmdp.ledger(trace)
    assert ledger.total().epsilon == pytest.approx(2.0)
    chosen = _clip_entries(trace)
    assert len(chosen) == 2 and {e.mechanism for e in chosen} == {"exponential"}
    median = chosen[0].details["median of the terms at the start point"]
    assert chosen[0].details["clip chosen"] == pytest.approx([median - BELOW, median + ABOVE])
    assert -6.0 < median < 0.0  # terms of N(0, ~1.5)-scaled steps at the start: about −2 (a loose private check)
    assert {e.details.get("route") for e in ledger.entries} == {"ops"}
    assert "every 2-th step's term" in chosen[0].details["terms read"]


def test_a_discrete_likelihood_gets_the_public_window_and_the_whole_epsilon():
    """Log-probabilities are never above 0: a count model's clip is the public (−11, 0), nothing spent on a choice,
    the whole ε on the route, and the ledger says so."""
    from pymc_dp.routes.clip_selection import DISCRETE_CLIP

    model, _ = _switchpoint()
    assert missing_clip(model, None).public_window == DISCRETE_CLIP
    trace = pmdp.sample(model=model, epsilon=2.0, random_seed=2, **SAMPLING)
    ledger = pmdp.ledger(trace)
    assert not _clip_entries(trace) and ledger.total().epsilon == pytest.approx(2.0)
    assert all(e.details.get("route") == "ops" for e in ledger.entries)
    assert any("loglik_clip (-11, 0)" in a for e in ledger.entries for a in e.assumptions)
    assert ledger.entries[0].details["sensitivity"] == pytest.approx(11.0)


def test_a_choice_too_strained_at_this_epsilon_gives_way_to_one_that_is_not():
    """A Poisson regression of 200 records at ε = 1 could take the measurements route with its three ranges chosen
    (two covariates and the counts), but they need about ε = 5.5 to be reliable and would get 0.5: most came out
    decades off (a covariate's range ±8·10⁵). The count likelihood's public clip needs nothing, so the ops route
    runs with the whole ε instead; with ε = 50 the ranges are reliable and are chosen."""
    from pymc_dp.routes.selection import Selection, missing_bounds, selection_strain

    rng = np.random.default_rng(6)
    X = rng.normal(0.0, 1.0, (200, 2))
    with pm.Model() as model:
        a = pm.Normal("a", 0.0, 2.0)
        b = pm.Normal("b", 0.0, 1.0, shape=2)
        pm.Poisson("y", mu=pm.math.exp(a + X @ b), observed=rng.poisson(np.exp(0.5 + X @ [0.3, -0.2])))
    ranges = missing_bounds(model, None)
    assert selection_strain(ranges, Selection(), 1.0, "replace") > 10
    assert selection_strain(ranges, Selection(), 50.0, "replace") <= 1
    assert selection_strain(ranges, Selection(), 1.0, "add_remove") == 0.0  # N private: the order stands
    trace = pmdp.sample(model=model, epsilon=1.0, random_seed=3, **SAMPLING)
    ledger = pmdp.ledger(trace)
    assert {e.details.get("route") for e in ledger.entries} == {"ops"}
    assert not [e for e in ledger.entries if "selection" in e.details]
    assert ledger.total().epsilon == pytest.approx(1.0)
    assert all(e.details["selection_reason"].startswith("loglik_clip rather than bounds") for e in ledger.entries)
    from pymc_dp.routes import _plan

    plan = _plan(model, 200, 50.0, "auto", None, None, {**SAMPLING})
    assert plan.route == "measurements" and {r.key for r in plan.requests} == {"x", "y"}
    # noise_rng= (which the tempered routes do not take: they draw no noise) does not turn the clip way off
    assert _plan(model, 200, 1.0, "auto", None, None, {**SAMPLING, "noise_rng": 3}).route == "ops"


def test_below_the_measurements_crossover_a_clip_is_preferred_and_the_ledger_says_why():
    """A Poisson regression of 300 records at ε = 10: its covariate and count ranges are reliable there (strain ≤
    1), but they would take it to the measurements route's newton engine at N·ε = 3,000, below its crossover where
    tempered draws are closer. The counts' public clip takes it to ops with the whole ε, and every entry says why.
    At N·ε = 2·10⁴ the ranges are chosen. A logistic regression, on the objective engine (no pilot rounds), has its
    ranges chosen at N·ε = 3,000 (its crossover is 500)."""
    from pymc_dp.routes import _plan
    from pymc_dp.routes.selection import MEASUREMENTS_CROSSOVER, OBJECTIVE_CROSSOVER, _measurements_engine

    def glm(n: int, family: str) -> pm.Model:
        rng = np.random.default_rng(8)
        x = rng.normal(0.0, 1.0, (n, 2))
        eta = 0.3 + x @ [0.6, -0.3]
        with pm.Model() as model:
            a, b = pm.Normal("a", 0.0, 2.0), pm.Normal("b", 0.0, 2.0, shape=2)
            if family == "poisson":
                pm.Poisson("y", pm.math.exp(a + x @ b), observed=rng.poisson(np.exp(eta)))
            else:
                pm.Bernoulli("y", logit_p=a + x @ b, observed=(rng.random(n) < 1 / (1 + np.exp(-eta))) * 1)
        return model

    trace = pmdp.sample(model=glm(300, "poisson"), epsilon=10.0, random_seed=4, **SAMPLING)
    ledger = pmdp.ledger(trace)
    assert {e.details.get("route") for e in ledger.entries} == {"ops"}
    assert ledger.total().epsilon == pytest.approx(10.0)
    assert all("N·ε = 3e+03 is below 1e+04" in e.details["selection_reason"] for e in ledger.entries)
    assert OBJECTIVE_CROSSOVER < 300 * 10.0 < MEASUREMENTS_CROSSOVER <= 20_000 * 1.0
    assert _plan(glm(20_000, "poisson"), 200, 1.0, "auto", None, None, {**SAMPLING}).route == "measurements"
    logistic = _plan(glm(300, "bernoulli"), 200, 10.0, "auto", None, None, {**SAMPLING})
    assert logistic.route == "measurements" and _measurements_engine(logistic) == "objective"


def test_a_declared_clip_wins_and_selection_false_refuses():
    model, _ = _ar1(100)
    trace = pmdp.sample(model=model, epsilon=1.0, loglik_clip=(-8.0, 0.0), random_seed=1, **SAMPLING)
    assert not _clip_entries(trace)
    with pytest.raises(ValueError, match="loglik_clip"):
        pmdp.sample(model=model, epsilon=1.0, selection=False, **SAMPLING)


def test_one_record_moves_at_most_one_of_the_terms_the_choice_reads():
    """The choice's sensitivity: an AR(1) step enters its own term and the next one's, so the choice reads every
    second term; replacing any one step changes at most one of those (checked for every step of a short series)."""
    model, y = _ar1(40)
    base = missing_clip(model, None).terms
    for t in range(len(y)):
        changed = y.copy()
        changed[t] += 50.0
        with pm.Model() as other:
            rho = pm.Normal("rho", 0.0, 0.5)
            sigma = pm.HalfNormal("sigma", 2.0)
            pm.AR("y", rho=[rho], sigma=sigma, init_dist=pm.Normal.dist(0.0, 2.0), observed=changed)
        assert np.sum(missing_clip(other, None).terms != base) <= 1, t


def test_no_clip_is_chosen_where_a_record_reaches_several_variables_or_one_term_holds_every_record():
    with pm.Model() as two:
        mu = pm.Normal("mu")
        pm.Normal("a", mu, 1.0, observed=np.zeros(10))
        pm.Normal("b", mu, 1.0, observed=np.zeros(10))
    assert missing_clip(two, None) is None
    with pm.Model() as one:
        pm.MvNormal("x", mu=np.zeros(5), cov=np.eye(5), observed=np.zeros(5))
    assert missing_clip(one, None) is None


def test_the_private_median_is_near_the_median_and_charged_as_two_releases():
    """1,000 values of N(−3, 1) at ε = 1: the median's rank error at β = 0.01 is 2 ln(G/β)/ε′ ≈ 49 ranks (G = 2 001,
    ε′ = ½), i.e. within the 45th–55th percentiles, −3.13 to −2.87; the band ±0.3 allows that with room."""
    values = np.random.default_rng(3).normal(-3.0, 1.0, 1000)
    ledger = pmdp.PrivacyLedger()
    picked = private_median(values, epsilon=1.0, ledger=ledger, rng=4)
    assert abs(picked.value - np.median(values)) < 0.3
    assert len(picked.entries) == 2 and ledger.total().epsilon == pytest.approx(1.0)


def _grouped_mixture(groups_of_records: np.ndarray, n_groups: int = 3) -> pm.Model:
    y = np.random.default_rng(3).normal(size=len(groups_of_records))
    with pm.Model(coords={"obs": range(len(y)), "grp": range(n_groups)}) as model:
        g = pm.Data("g", groups_of_records, dims="obs")
        th = pm.Normal("th", 0, 1, dims="grp")
        pm.NormalMixture("y", w=np.array([0.5, 0.5]), mu=pm.math.stack([th[g], th[g] + 1], axis=-1),
                         sigma=pm.HalfNormal("s", 1), observed=y, dims="obs")
    return model


def test_a_record_with_a_group_index_out_of_range_moves_its_own_term_only():
    """One record's group index out of range (7 of 3 groups, or −9) would make the terms' evaluation fail; it reads
    group 0 instead, so only that record's term can move and the median keeps its sensitivity of one (reading every
    term as malformed had moved the median, the window and a warning with one record). Whether the choice runs
    does not depend on the record either."""
    from pymc_dp.routes import _plan
    from pymc_dp.routes.selection import SelectionPlan

    groups = np.random.default_rng(3).integers(0, 3, size=40)
    seen = []
    for bad in (None, 7, -9, 0):
        g = groups.copy()
        if bad is not None:
            g[-1] = bad
        plan = _plan(_grouped_mixture(g), 100, 1.0, "auto", None, None, {})
        assert isinstance(plan, SelectionPlan) and [r.what for r in plan.requests] == ["loglik_clip"]
        terms = plan.requests[0].terms
        assert terms.shape == (40,) and np.all(np.isfinite(terms) & (terms > -50)), terms
        seen.append(terms)
    for other in seen[1:]:
        assert np.array_equal(other[:-1], seen[0][:-1])  # every other record's term untouched
    assert np.array_equal(seen[1], seen[3]) and np.array_equal(seen[2], seen[3])  # it reads group 0


def test_the_start_point_is_the_priors_centre_never_an_initval():
    """An initval computed from the records (initval=y.max()) would set every record's term: it is not read."""
    y = np.random.default_rng(0).normal(5.0, 1.0, 50)

    def model(initval):
        with pm.Model() as m:
            mu = pm.Normal("mu", 0.0, 10.0, initval=initval)
            pm.Normal("y", mu, 1.0, observed=y)
        return m

    assert np.array_equal(missing_clip(model(None), None).terms, missing_clip(model(float(y.max())), None).terms)


def test_whether_a_clip_is_chosen_does_not_read_the_number_of_records():
    """Under add/remove N is private: one record or many, the request is offered (structure decides)."""
    for n in (1, 2, 30):
        assert missing_clip(_grouped_mixture(np.zeros(n, dtype=int)), None) is not None


def test_under_add_remove_a_small_mixture_plans_like_a_large_one():
    """A NormalMixture on a NumPy array: below ten records PyTensor's graph held a reduction the record check read
    as a TypeError, so whether the request planned (with a clip declared or chosen) told N < 10, private there."""
    from pymc_dp.routes import _plan

    y = np.random.default_rng(4).normal(size=12)
    for n in (1, 5, 9, 10, 12):
        with pm.Model() as model:
            mu = pm.Normal("mu", 0, 1, shape=2)
            pm.NormalMixture("y", w=np.array([0.5, 0.5]), mu=mu, sigma=pm.HalfNormal("s", 1), observed=y[:n])
        for declared in ({"loglik_clip": (-10.0, 0.0)}, {}):
            plan = _plan(model, 100, 1.0, "auto", None, "add_remove", dict(declared))
            assert plan.route == "ops", (n, declared)


def test_ais_with_nothing_declared_and_no_ledger_reserves_the_whole_epsilon():
    """AIS budgets a ledger of its own at the ε it is given (the rest, after the share): the choice's reservation is
    made on one budgeted at the whole ε instead (it failed with BudgetExceededError before)."""
    y = np.random.default_rng(18).normal(size=300)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 1, shape=2)
        pm.NormalMixture("y", w=np.array([0.5, 0.5]), mu=mu, sigma=pm.HalfNormal("s", 1), observed=y)
    trace = pmdp.sample(20, model=model, epsilon=1.0, method="ais", stages=3, progressbar=False)
    ledger = pmdp.ledger(trace)
    assert ledger.budget.epsilon == 1.0 and len(_clip_entries(trace)) == 2
