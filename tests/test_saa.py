"""Subsample and aggregate (method="saa") and the route chooser (method="auto")."""

from __future__ import annotations

import warnings

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

import pymc_dp as pmdp
from pymc_dp import _compat
from pymc_dp.routes.saa import block_model

import gallery_models as G

QUIET = dict(progressbar=False, chains=1, tune=200)


def _regression(n=120, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    y = 1.0 + 2.0 * x + rng.normal(0, 0.5, n)
    with pm.Model(coords={"obs": np.arange(n)}) as model:
        xd = pm.Data("x", x, dims="obs")
        a = pm.Normal("a", 0, 5)
        b = pm.Normal("b", 0, 5)
        s = pm.HalfNormal("s", 2)
        pm.Normal("y", a + b * xd, s, observed=y, dims="obs")
    return model, x, y


def test_a_block_model_holds_exactly_its_rows_of_every_per_record_array():
    model, x, y = _regression()
    rows = np.array([3, 7, 11, 50])
    part = block_model(model, rows)
    # the block's rows are inputs of its graph (shared variables), so every block compiles to the same code
    np.testing.assert_array_equal(part.rvs_to_values[part["y"]].get_value(), y[rows])
    mu = part.replace_rvs_by_values([part["y"].owner.inputs[2]])[0]
    fn = part.compile_fn(mu, inputs=part.value_vars, on_unused_input="ignore", mode="FAST_COMPILE")
    point = {"a": 0.0, "b": 1.0, "s_log__": 0.0}
    np.testing.assert_allclose(fn(point), x[rows])  # mu = a + b x of the block's own covariates
    assert len(part.coords["obs"]) == 4 and part["a"].ndim == 0
    np.testing.assert_array_equal(model.rvs_to_values[model["y"]].data, y)  # the user's model is untouched
    # no number of the block is part of its graph (the rows, the record count): every block is the same graph
    from pytensor.graph.basic import Constant, ancestors

    numbers = [v.data for v in ancestors([part.logp()]) if isinstance(v, Constant)]
    assert not [n for n in numbers if np.size(n) >= rows.size or np.any(np.isin(n, [rows.size, *x[rows], *y[rows]]))]


def test_saa_charges_epsilon_once_with_the_hand_computed_sensitivity_and_recovers_the_estimate():
    model, _, _ = _regression(n=400)
    ranges = {"a": (-5, 5), "b": (-5, 5), "s": (0, 4)}
    ledger = pmdp.PrivacyLedger(budget=pmdp.Budget(epsilon=1000.0))
    idata = pmdp.sample(300, epsilon=1000.0, method="saa", model=model, ranges=ranges, blocks=8, ledger=ledger,
                        noise_rng=1, random_seed=1, **QUIET)
    assert ledger.total().epsilon == pytest.approx(1000.0)
    mean, square = ledger.entries
    # L1 sensitivity: Σ (hi − lo) / k over the released coordinates = (10 + 10 + 4) / 8.
    assert mean.details["sensitivity"] == pytest.approx(24 / 8)
    assert mean.mechanism == "subsample_and_aggregate" and mean.epsilon == 500.0
    assert any("normal approximation" in a for a in mean.assumptions)
    post = _compat.get_group(idata, "posterior")
    assert set(post.data_vars) == {"a", "b", "s"}
    # At ε = 1000 the noise is negligible (scale 0.006): the aggregate is the mean of 8 block fits of
    # 50 records; truth a = 1, b = 2, s = 0.5; block posterior means scatter by about 0.5/√50 ≈ 0.07
    # each, their mean by 0.025, so 0.15 is six standard errors.
    assert float(post["a"].mean()) == pytest.approx(1.0, abs=0.15)
    assert float(post["b"].mean()) == pytest.approx(2.0, abs=0.15)
    # The released spread is the blocks' standard error: about 0.5/√400 = 0.025 for a.
    assert 0.005 < float(post["a"].std()) < 0.1


def test_saa_refuses_before_spending():
    model, _, _ = _regression()
    ledger = pmdp.PrivacyLedger()
    with pytest.raises(ValueError, match=r"none is declared for \['s'\].*ranges="):
        pmdp.sample(100, epsilon=1.0, method="saa", model=model, ranges={"a": (-5, 5), "b": (-5, 5)}, ledger=ledger,
                    **QUIET)
    with pytest.raises(ValueError, match="neighbouring='replace' only"):
        pmdp.sample(100, epsilon=1.0, method="saa", model=model, ranges={"a": (-5, 5)}, var_names=["a"],
                    neighbouring="add_remove", **QUIET)
    with pytest.raises(ValueError, match="at least two records a block"):
        pmdp.sample(100, epsilon=1.0, method="saa", model=model, ranges={"a": (-5, 5)}, var_names=["a"],
                    blocks=100, ledger=ledger, **QUIET)
    with pytest.raises(ValueError, match=r"ranges\['a'\] needs lower < upper"):
        pmdp.sample(100, epsilon=1.0, method="saa", model=model, ranges={"a": (5, -5)}, var_names=["a"],
                    ledger=ledger, **QUIET)
    assert len(ledger) == 0


def test_saa_releases_no_per_record_latents_and_refuses_unaligned_data():
    model = G.rat_tumours(groups=40)
    with pytest.raises(ValueError, match=r"var_names \['theta'\] cannot be released"):
        pmdp.sample(100, epsilon=1.0, method="saa", model=model, ranges={"theta": (0, 1)}, var_names=["theta"],
                    blocks=4, **QUIET)
    y = np.random.default_rng(0).normal(size=30)
    with pm.Model() as lagged:
        m = pm.Normal("m")
        pm.Normal("y", m + 0.1 * pt.as_tensor(y[1:]).sum(), 1.0, observed=y)
    with pytest.raises(ValueError, match="without one row per record"):
        pmdp.sample(100, epsilon=1.0, method="saa", model=lagged, ranges={"m": (-3, 3)}, blocks=3, **QUIET)


def test_auto_picks_the_most_accurate_route_that_takes_the_declarations_and_says_so():
    with pm.Model() as counts:
        lam = pm.Gamma("lam", 2, 1)
        pm.Poisson("c", lam, observed=np.random.default_rng(1).poisson(3, 50))
    idata = pmdp.sample(100, epsilon=1.0, model=counts, bounds={"c": {"upper": 20}}, noise_rng=0, random_seed=0,
                        **QUIET)
    (entry,) = pmdp.ledger(idata).entries
    assert entry.details["route"] == "laplace" and entry.details["route_chosen_by"] == "method='auto'"
    logistic = G.logistic_regression(n=60)
    idata = pmdp.sample(50, epsilon=1.0, model=logistic, loglik_clip=(-6, 0), random_seed=0, **QUIET)
    (entry,) = pmdp.ledger(idata).entries
    assert entry.details["route"] == "ops" and entry.details["routes_passed_over"] == ["laplace", "measurements"]
    with pytest.raises(ValueError, match=r"(?s)no privacy route applies.*method='laplace'.*method='ops'.*"
                                         r"loglik_clip.*method='saa'.*ranges="):
        pmdp.sample(50, epsilon=1.0, model=logistic, selection=False, **QUIET)


def _counts(values):
    with pm.Model() as counts:
        lam = pm.Gamma("lam", 2, 1)
        pm.Poisson("c", lam, observed=np.asarray(values))
    return counts


def _spent(ledger):
    return [(e.mechanism, e.epsilon, e.delta, e.touched, e.noise_source, e.assumptions, e.details.get("route"))
            for e in ledger.entries]


@pytest.mark.parametrize("odd", [-1.0, np.nan], ids=["minus_one", "missing"])
def test_auto_never_lets_record_values_choose_the_route(odd):
    # A count below zero or a missing count neither stops the choice (that would say some record is malformed)
    # nor changes it: the Laplace route runs on the record replaced by the family's default record 0, exactly as
    # on the neighbour holding a 0 there, and the count goes to the curator only.
    values = np.array([1, 2, 3, 3] * 5)
    bad = values.astype(float)
    bad[2] = odd
    ours, theirs = pmdp.PrivacyLedger(), pmdp.PrivacyLedger()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyMC's ImputationWarning, its cast of the NaN
        model = _counts(bad)
    with pytest.warns(pmdp.families.ClippedRecordsWarning, match="1 of 20 record"):
        got = pmdp.sample(50, epsilon=1.0, model=model, bounds={"c": {"upper": 20}}, ledger=ours,
                          noise_rng=0, random_seed=0, **QUIET)
    neighbour = values.copy()
    neighbour[2] = 0
    want = pmdp.sample(50, epsilon=1.0, model=_counts(neighbour), bounds={"c": {"upper": 20}}, ledger=theirs,
                       noise_rng=0, random_seed=0, **QUIET)
    assert _spent(ours) == _spent(theirs) and ours.entries[0].details["route"] == "laplace"
    np.testing.assert_array_equal(_compat.get_group(got, "posterior")["lam"].values,
                                  _compat.get_group(want, "posterior")["lam"].values)


@pytest.mark.parametrize("bad", [-1.0, np.inf], ids=["minus_one", "inf"])
def test_saa_leaves_a_malformed_record_out_of_its_block_and_refuses_nothing(bad):
    # On the saa route a record the likelihood cannot hold is left out of its block's fit (a function of that
    # block alone): the call spends what it spends on a well-formed neighbour and releases the same shapes.
    values = np.random.default_rng(3).poisson(3, 40).astype(float)
    odd = values.copy()
    odd[5] = bad
    ours, theirs = pmdp.PrivacyLedger(), pmdp.PrivacyLedger()
    args = dict(epsilon=5.0, method="saa", ranges={"lam": (0, 10)}, blocks=4, noise_rng=0, random_seed=0)
    with pytest.warns(pmdp.families.ClippedRecordsWarning, match="1 record.*left out of their block's fit, and 0"):
        got = pmdp.sample(30, model=_counts(odd), ledger=ours, **args, **QUIET)
    want = pmdp.sample(30, model=_counts(values), ledger=theirs, **args, **QUIET)
    assert _spent(ours) == _spent(theirs)
    assert _compat.get_group(got, "posterior")["lam"].shape == _compat.get_group(want, "posterior")["lam"].shape


def test_a_block_whose_fit_fails_on_its_records_counts_as_the_middle_of_the_ranges(monkeypatch):
    from pymc.exceptions import SamplingError

    real = pm.sample
    calls = {"n": 0}

    def failing_second_block(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise SamplingError("Initial evaluation of model at starting point failed!")
        return real(*args, **kwargs)

    monkeypatch.setattr(pm, "sample", failing_second_block)
    run = pmdp.routes.plan_saa(_counts(np.full(40, 3.0)), 30, 1e9, pmdp.routes.SAA(ranges={"lam": (0, 10)}, blocks=4,
                               noise_rng=0), None, None, dict(QUIET))
    with pytest.warns(pmdp.families.ClippedRecordsWarning, match="1 block fit.*SamplingError"):
        estimates = run._fit_blocks()
    assert estimates["lam"][1] == 5.0 and calls["n"] == 4  # the midpoint of (0, 10); the other blocks fitted


def test_saa_refuses_a_model_it_cannot_cut_before_spending_without_quoting_records():
    rng = np.random.default_rng(5)
    with pm.Model() as censored:
        mu = pm.Normal("mu", 0, 2)
        pm.Censored("y", pm.Normal.dist(mu, 1.0), lower=-1, upper=1, observed=np.clip(rng.normal(0.3, 1, 60), -1, 1))
    with pm.Model() as walk:
        s = pm.HalfNormal("s", 1)
        pm.GaussianRandomWalk("y", sigma=s, init_dist=pm.Normal.dist(0, 10), observed=np.cumsum(rng.normal(size=60)))
    for model, ranges in ((censored, {"mu": (-3, 3)}), (walk, {"s": (0, 3)})):
        ledger = pmdp.PrivacyLedger()
        with pytest.raises(ValueError, match="could not fit this model to a block") as err:
            pmdp.sample(50, epsilon=1.0, method="saa", model=model, ranges=ranges, blocks=3, ledger=ledger, **QUIET)
        assert len(ledger) == 0 and "array(" not in str(err.value)  # PyTensor's message quotes constants


def test_group_level_data_declared_with_dims_is_public_on_every_route():
    rng = np.random.default_rng(6)
    idx, y = rng.integers(0, 5, 120), rng.normal(size=120)
    with pm.Model(coords={"county": range(5)}) as model:
        uranium = pm.Data("uranium", rng.normal(size=5), dims="county")
        g = pm.Normal("g", 0, 1, shape=2)
        a = pm.Normal("a", g[0] + g[1] * uranium, 1.0, dims="county")
        pm.Deterministic("county_mean", g[0] + g[1] * uranium, dims="county")  # post-processing of public data
        pm.Normal("y", a[pm.Data("county_idx", idx)], 1.0, observed=y)
    assert pmdp.loglik_sensitivity(pmdp.clip_loglik(model, -8, 1)).total == 9
    idata = pmdp.sample(20, epsilon=10.0, model=model, loglik_clip=(-8, 1), random_seed=1, **QUIET)
    assert {"g", "a", "county_mean"} <= set(_compat.get_group(idata, "posterior").data_vars)
    # read as public without a declaration, so the ledger says so
    (entry,) = pmdp.ledger(idata).entries
    assert any("'uranium' (dims county) read as public group-level data" in a for a in entry.assumptions)
    with pm.Model() as undeclared:  # a container without group dims is data
        scale = pm.Data("scale", np.array(0.5))
        pm.Normal("y", pm.Normal("m", 0, scale), 1.0, observed=y)
    with pytest.raises(ValueError, match="prior of 'm' depend"):
        pmdp.loglik_sensitivity(pmdp.clip_loglik(undeclared, -8, 1))


def test_a_container_the_observed_value_is_computed_from_is_never_group_level_data():
    # observed=table[:, 0]: the records' own container, with dims that are not the observed variable's
    from pymc_dp.model._graph import group_level_data, record_dims

    rng = np.random.default_rng(8)
    table = rng.normal(2.0, 1.0, (40, 2))
    with pm.Model(coords={"row": [f"id-{i}" for i in range(40)], "col": ["a", "b"],
                          "patient": [f"p{i}" for i in range(40)]}) as model:
        t = pm.Data("table", table, dims=("row", "col"))
        mu = pm.Normal("mu", 0, 1)
        pm.Normal("z", 0, 1, dims="patient")
        pm.Deterministic("table_mean", t[:, 0].mean() + 0 * mu)
        pm.Normal("y", mu, 1.0, observed=t[:, 0])
    assert group_level_data(model) == []
    assert {"row", "patient"} <= record_dims(model)
    idata = pmdp.sample(20, epsilon=10.0, model=model, method="ops", loglik_clip=(-8, 1), random_seed=1, **QUIET)
    posterior = _compat.get_group(idata, "posterior")
    assert "table_mean" not in posterior.data_vars
    assert list(posterior["patient"].values) == list(range(40))
    with pm.Model(coords={"row": range(40), "col": ["a", "b"]}) as prior_reads_records:
        t = pm.Data("table", table, dims=("row", "col"))
        pm.Normal("y", pm.Normal("m", t[:, 0].mean(), 0.001), 1.0, observed=t[:, 0])
    with pytest.raises(ValueError, match="prior of 'm' depend"):
        pmdp.sample(20, epsilon=10.0, model=prior_reads_records, method="ops", loglik_clip=(-8, 1), **QUIET)


@pytest.mark.parametrize("method", ["laplace", "ops", "saa"])
def test_observed_values_computed_across_records_are_refused_on_every_route(method):
    y = np.random.default_rng(7).normal(size=40)
    with pm.Model() as model:
        yd = pm.Data("yd", y)
        pm.Normal("y", pm.Normal("mu", 0, 1), 1, observed=yd - yd.mean())
    ledger = pmdp.PrivacyLedger()
    with pytest.raises(ValueError, match="computed from the data across records"):
        pmdp.sample(10, epsilon=1.0, method=method, model=model, ledger=ledger, **QUIET)
    assert len(ledger) == 0


def test_a_block_keeps_the_models_initial_values_a_per_record_ones_cut_to_its_rows():
    n = 40
    with pm.Model(coords={"obs": np.arange(n)}) as model:
        cut = pm.Normal("cut", 0.0, 2.0, shape=3, transform=pm.distributions.transforms.ordered, initval=[-1.0, 0.0, 1.0])
        z = pm.Normal("z", 0.0, 1.0, dims="obs", initval=np.arange(n, dtype=float))
        pm.OrderedLogistic("y", eta=z, cutpoints=cut, observed=np.arange(n) % 4, dims="obs")
    part = block_model(model, np.array([2, 5, 9]))
    initial = {rv.name: v for rv, v in part.rvs_to_initial_values.items() if v is not None}
    np.testing.assert_allclose(np.asarray(initial["cut"]), [-1.0, 0.0, 1.0])
    np.testing.assert_allclose(np.asarray(initial["z"]), [2.0, 5.0, 9.0])
    # Without the cutpoints' initial values the ordered transform starts from equal cutpoints, where the
    # log-density is not finite: every block's fit would fail and count as the ranges' midpoint.
    assert np.isfinite(part.compile_logp(mode="FAST_COMPILE")(part.initial_point()))


def test_saa_refuses_an_aggregate_its_noise_would_swamp_with_the_numbers_before_spending():
    model, _, _ = _regression(n=120)
    ledger = pmdp.PrivacyLedger(budget=pmdp.Budget(epsilon=1.0))
    # L1 = (10 + 10 + 4) / 4 = 6; ε/2 for the mean: noise s.d. √2·6/0.5 ≈ 17 ≥ half of every range.
    with pytest.raises(ValueError, match=r"noise, not an answer.*sensitivity.*= 6\b.*s\.d\. 17") as caught:
        pmdp.sample(100, epsilon=1.0, method="saa", model=model, ranges={"a": (-5, 5), "b": (-5, 5), "s": (0, 4)},
                    blocks=4, ledger=ledger, **QUIET)
    assert "Nothing was spent" in str(caught.value) and ledger.total().epsilon == 0.0


def test_saa_warns_from_released_numbers_when_its_noise_dominates_the_blocks_error():
    model, _, _ = _regression(n=200)
    # Noise s.d. √2·(24/10)/2 ≈ 1.7: below half the ranges, far above the blocks' standard error (≈ 0.02–0.05).
    with pytest.warns(pmdp.families.DegenerateReleaseWarning, match="noise-dominated"):
        pmdp.sample(100, epsilon=4.0, method="saa", model=model, ranges={"a": (-5, 5), "b": (-5, 5), "s": (0, 4)},
                    blocks=10, noise_rng=3, random_seed=3, **QUIET)


def test_a_block_failing_for_a_reason_its_records_cannot_cause_says_so_and_that_nothing_was_spent(monkeypatch):
    model, _, _ = _regression(n=120)
    ledger = pmdp.PrivacyLedger(budget=pmdp.Budget(epsilon=100.0))

    def failing_sample(*args, **kwargs):
        raise TypeError("a message quoting a record: 3.14159")

    monkeypatch.setattr(pm, "sample", failing_sample)
    with pytest.raises(RuntimeError, match="a block of records failed with TypeError") as caught:
        pmdp.sample(100, epsilon=100.0, method="saa", model=model, ranges={"a": (-5, 5), "b": (-5, 5), "s": (0, 4)},
                    blocks=4, ledger=ledger, **QUIET)
    assert "3.14159" not in str(caught.value)
    assert "nothing was spent" in " ".join(getattr(caught.value, "__notes__", []))
    assert ledger.total().epsilon == 0.0


def test_ordered_variables_are_released_ordered_in_every_draw():
    rng = np.random.default_rng(4)
    n = 240
    x = rng.normal(size=n)
    y = np.digitize(x + rng.logistic(size=n), [-1.0, 0.0, 1.0])
    with pm.Model(coords={"obs": np.arange(n), "threshold": [0, 1, 2]}) as model:
        b = pm.Normal("b", 0, 2)
        cut = pm.Normal("cut", 0, 3, dims="threshold", transform=pm.distributions.transforms.ordered,
                        initval=[-1.0, 0.0, 1.0])
        pm.OrderedLogistic("y", eta=b * pm.Data("x", x, dims="obs"), cutpoints=cut, observed=y, dims="obs")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trace = pmdp.sample(200, epsilon=20.0, method="saa", model=model, blocks=6, noise_rng=2, random_seed=2,
                            ranges={"b": (-1, 4), "cut": (-4, 4)}, **QUIET)
    draws = np.asarray(_compat.get_group(trace, "posterior")["cut"]).reshape(-1, 3)
    assert np.all(np.diff(draws, axis=1) >= 0)
