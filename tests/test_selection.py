"""``pmdp.sample`` with nothing declared: the ranges a route needs chosen privately inside the same ε."""

from __future__ import annotations

import warnings

import numpy as np
import pymc as pm
import pytest

import pymc_dp as pmdp
from pymc_dp.accounting import BudgetExceededError
from pymc_dp.routes.selection import DEFAULT_SHARE, Selection, missing_bounds, needed_epsilon, resolve_selection

SAMPLING = dict(draws=300, tune=300, chains=2, progressbar=False)


def _normal_model(n: int = 3000, seed: int = 0) -> tuple[pm.Model, np.ndarray]:
    y = np.random.default_rng(seed).normal(50.0, 10.0, n)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 100.0)
        sigma = pm.HalfNormal("sigma", 50.0)
        pm.Normal("y", mu, sigma, observed=y)
    return model, y


def _chosen(trace) -> list:
    return [e for e in pmdp.ledger(trace).entries if "selection" in e.details]


def test_a_normal_with_nothing_declared_runs_and_its_ledger_holds_the_choice_inside_epsilon():
    """3,000 records of N(50, 10) at ε = 1: the range is chosen (four quartile releases, each with the range it
    gave), the Laplace route runs on the rest, and the total is ε. The posterior mean is within 4 of its s.d. plus
    the noise's of the records' mean (a loose check that the chosen range did not cut the records: a range cutting
    the upper 5 % would move μ by about 1, many s.d.)."""
    model, y = _normal_model()
    trace = pmdp.sample(model=model, epsilon=1.0, noise_rng=1, random_seed=1, **SAMPLING)
    chosen, total = _chosen(trace), pmdp.ledger(trace).total().epsilon
    assert total == pytest.approx(1.0)
    assert len(chosen) == 4 and {e.mechanism for e in chosen} == {"exponential"}
    share = sum(e.epsilon for e in chosen)
    assert share == pytest.approx(needed_epsilon(1, len(y)))  # the share from public N: 0.12 here
    lo, hi = chosen[0].details["range chosen for the column"]
    assert lo < y.min() and hi > y.max() and hi - lo < 12 * y.std()
    assert all(e.details["route"] == "laplace" for e in pmdp.ledger(trace).entries)
    mu = trace.posterior["mu"]
    assert abs(float(mu.mean()) - y.mean()) < 4 * float(mu.std())


def test_declared_ranges_win_and_nothing_is_chosen():
    model, _ = _normal_model(500)
    trace = pmdp.sample(model=model, epsilon=1.0, bounds={"y": {"x": (0.0, 100.0)}}, noise_rng=1, random_seed=1,
                        **SAMPLING)
    assert not _chosen(trace) and pmdp.ledger(trace).total().epsilon == pytest.approx(1.0)


def test_selection_false_refuses_and_says_why():
    model, _ = _normal_model(500)
    ledger = pmdp.PrivacyLedger()
    with pytest.raises(ValueError, match="unbounded sensitivity") as err:
        pmdp.sample(model=model, epsilon=1.0, ledger=ledger, selection=False, **SAMPLING)
    assert "selection=False was given" in "".join(getattr(err.value, "__notes__", []))
    assert not ledger.entries


def test_the_budget_is_checked_before_anything_is_chosen():
    model, _ = _normal_model(500)
    ledger = pmdp.PrivacyLedger(budget=pmdp.Budget(epsilon=0.5))
    with pytest.raises(BudgetExceededError):
        pmdp.sample(model=model, epsilon=1.0, ledger=ledger, **SAMPLING)
    assert not ledger.entries


@pytest.mark.parametrize("value, words", [(1.5, "share must"), (-0.1, "share must"), ("yes", "selection must"),
                                          (Selection(share=None, confidence=0.5), None)])
def test_selection_values_are_read_or_refused_by_name(value, words):
    if words is None:
        assert resolve_selection(value).confidence == 0.5
        return
    with pytest.raises(ValueError, match=words):
        resolve_selection(value)


def test_the_share_follows_public_n_under_replace_one_and_is_fixed_under_add_remove():
    auto = Selection()
    assert auto.share_for(1.0, needed_epsilon(1, 100_000), "replace") == pytest.approx(0.05)  # the floor
    assert auto.share_for(1.0, needed_epsilon(1, 1000), "replace") == pytest.approx(needed_epsilon(1, 1000))
    assert auto.share_for(1.0, needed_epsilon(3, 1000), "replace") == pytest.approx(0.5)  # the cap
    assert auto.share_for(1.0, needed_epsilon(1, 1000), "add_remove") == DEFAULT_SHARE  # N private: never read
    assert Selection(share=0.2).share_for(1.0, needed_epsilon(1, 10), "replace") == 0.2


def test_too_few_records_for_the_share_are_warned_of_before_anything_is_spent():
    model, _ = _normal_model(300)
    ledger = pmdp.PrivacyLedger(budget=pmdp.Budget(epsilon=0.5))
    with pytest.warns(UserWarning, match="needs about ε"), pytest.raises(BudgetExceededError):
        pmdp.sample(model=model, epsilon=1.0, ledger=ledger, **SAMPLING)
    assert not ledger.entries


def test_a_poisson_glm_gets_its_covariates_and_its_counts_ranges_chosen():
    """Poisson(exp(a + X @ b)) with two covariates of different scales: the covariates' ranges (one per column, in
    the design's order) and the counts' (whole numbers from 0: the support read from PyMC's log-density) are
    chosen, then the measurements route runs. The slope on the covariate spread over twenty is the one a range in
    the wrong column order would ruin: its posterior must hold the truth within 4 s.d."""
    rng = np.random.default_rng(3)
    n = 5000
    X = np.column_stack([rng.normal(0.0, 1.0, n), rng.uniform(0.0, 20.0, n)])
    counts = rng.poisson(np.exp(0.3 + 0.4 * X[:, 0] - 0.05 * X[:, 1]))
    with pm.Model() as model:
        a = pm.Normal("a", 0.0, 2.0)
        b = pm.Normal("b", 0.0, 1.0, shape=2)
        pm.Poisson("y", pm.math.exp(a + pm.math.dot(X, b)), observed=counts)
    requests = missing_bounds(model, None)
    assert [(r.key, r.width, r.form) for r in requests] == [("x", 2, "arrays"), ("y", 1, "pair")]
    assert requests[1].support == (0.0, np.inf) and requests[1].integer
    # a share of 0.3 (0.6 of ε, about three times what the default asks here): the counts are mostly 0 and 1,
    # a point mass near q₃ that the default share finds only most of the time (mechanisms page, "weak")
    trace = pmdp.sample(model=model, epsilon=2.0, selection=0.3, noise_rng=4, random_seed=4, **SAMPLING)
    chosen = _chosen(trace)
    assert pmdp.ledger(trace).total().epsilon == pytest.approx(2.0)
    ranges = {(e.details["chosen for"], tuple(e.details["range chosen for the column"])) for e in chosen}
    y_range = [r for name, r in ranges if name.endswith("['y']")][0]
    assert y_range[0] == 0.0 and y_range[1] == int(y_range[1]) and y_range[1] >= np.quantile(counts, 0.99)
    narrow, wide = sorted((r for name, r in ranges if name.endswith("['x']")), key=lambda r: r[1] - r[0])
    assert 3 < narrow[1] < 15 and wide[1] > 19 and wide[0] < 1  # each covariate its own range, in order
    slope = trace.posterior["b"].sel(b_dim_0=1) if "b_dim_0" in trace.posterior["b"].dims else trace.posterior["b"][..., 1]
    assert abs(float(slope.mean()) + 0.05) < 4 * float(slope.std()), (float(slope.mean()), float(slope.std()))
    assert float(slope.std()) < 0.05, float(slope.std())  # informative: 20 times narrower than its prior


def test_a_logistic_regression_needs_only_its_covariates_range():
    rng = np.random.default_rng(5)
    x = rng.normal(2.0, 1.0, 4000)
    with pm.Model() as model:
        a, b = pm.Normal("a", 0.0, 2.5), pm.Normal("b", 0.0, 2.5)
        pm.Bernoulli("y", logit_p=a + b * x, observed=rng.random(4000) < 1 / (1 + np.exp(-(x - 2))))
    assert [(r.key, r.width) for r in missing_bounds(model, None)] == [("x", 1)]
    assert not missing_bounds(model, {"y": {"x": (-3.0, 7.0)}})
    assert not missing_bounds(model, None, public=("y",))


def test_what_a_failing_route_spent_after_the_choice_is_recorded(monkeypatch):
    """The ranges were released before the route failed: their entries are recorded, the rest given back."""
    from pymc_dp.routes import selection

    def broken(self, bounds):
        raise RuntimeError("the route failed after the choice")

    model, _ = _normal_model(3000)
    original = selection.SelectionPlan.run

    def run(self):
        self.replan = lambda chosen: broken(self, chosen)
        return original(self)

    monkeypatch.setattr(selection.SelectionPlan, "run", run)
    ledger = pmdp.PrivacyLedger()
    with pytest.raises(RuntimeError, match="failed after the choice") as err:
        pmdp.sample(model=model, epsilon=1.0, ledger=ledger, noise_rng=1, **SAMPLING)
    assert len(ledger.entries) == 4 and all("selection" in e.details for e in ledger.entries)
    assert "spent" in "".join(getattr(err.value, "__notes__", []))
    assert ledger.total().epsilon < 1.0


def test_under_add_remove_the_share_is_the_default_and_nothing_reads_n():
    model, _ = _normal_model(3000)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # no warning may read N
        trace = pmdp.sample(model=model, epsilon=1.0, neighbouring="add_remove", noise_rng=2, random_seed=2,
                            **SAMPLING)
    assert sum(e.epsilon for e in _chosen(trace)) == pytest.approx(DEFAULT_SHARE)


def test_a_poisson_count_bound_is_chosen_as_a_whole_number_above_the_counts():
    """The Laplace route's Poisson family takes bounds={'c': {'upper': U}}: U is the chosen range's upper end, a
    whole number at or above the counts' 99th percentile."""
    counts = np.random.default_rng(1).poisson(3.0, 4000)
    with pm.Model() as model:
        lam = pm.Gamma("lam", 2.0, 1.0)
        pm.Poisson("c", lam, observed=counts)
    (request,) = missing_bounds(model, None)
    assert (request.key, request.form, request.integer, request.support) == ("upper", "upper", True, (0.0, np.inf))
    trace = pmdp.sample(model=model, epsilon=1.0, noise_rng=2, random_seed=2, **SAMPLING)
    lo, hi = _chosen(trace)[0].details["range chosen for the column"]
    assert lo == 0.0 and hi == int(hi) and hi >= np.quantile(counts, 0.99)
    assert abs(float(trace.posterior["lam"].mean()) - counts.mean()) < 0.2


def test_an_indicator_covariate_of_integer_dtype_gets_its_range_from_the_tails():
    """A varying-intercept regression with a 0/1 floor indicator held as integers (the radon model): the fences
    would give the quartiles 0 and 1 three IQRs either side, (−3, 4), seven times the range and about seven times
    the noise per coordinate on the Laplace route. Its dtype is public, so the ends come from the private tails,
    rounded outward to whole numbers: (0, 1) or (0, 2). The same indicator held as floats keeps the fences (its
    values are not read to decide)."""
    rng = np.random.default_rng(10)
    n, groups = 3000, 8
    county, floor = rng.integers(0, groups, n), rng.binomial(1, 0.3, n)
    y = rng.normal(1.5, 0.4, groups)[county] - 0.6 * floor + rng.normal(0.0, 0.7, n)

    def radon(x):
        with pm.Model(coords={"county": range(groups)}) as model:
            floor_data, county_data = pm.Data("floor", x), pm.Data("county_idx", county)
            alpha = pm.Normal("alpha", pm.Normal("mu_a", 0.0, 5.0), pm.Exponential("sigma_a", 1.0), dims="county")
            beta = pm.Normal("beta", 0.0, 2.0)
            pm.Normal("y", alpha[county_data] + beta * floor_data, pm.Exponential("sigma", 1.0), observed=y)
        return model

    request = [r for r in missing_bounds(radon(floor), None) if r.key == "x"][0]
    assert (request.method, request.integer) == ("tails", True)
    assert [r for r in missing_bounds(radon(floor.astype(float)), None) if r.key == "x"][0].method == "fences"
    # the choice itself, at the share pmdp.sample gives it here (0.05 of ε = 4 for both ranges; the tails' part of it
    # 0.04 of 0.16 needed in all): the route's run is the gallery benchmark's (minutes, for the noise mixture)
    ledger = pmdp.PrivacyLedger()
    (low, high), entries, released = request.choose(0.05 * 4.0 / 2, ledger, 0.01, np.random.default_rng(3))
    assert (float(low[0]), float(high[0])) in ((0.0, 1.0), (0.0, 2.0)), (low, high)
    assert len(entries) == 2 and ledger.total().epsilon == pytest.approx(0.1)  # two ends, each a release
