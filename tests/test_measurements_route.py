"""The privacy flag on a logistic regression: ``pmdp.sample`` through the measurements route.

The route's contract (what a release holds, refusals before any spend, what a failure
costs) as ``test_routes.py`` checks it for the other routes, on the model users write:
the gallery's logistic regression (coords and dims, ``pm.Data``, an intercept).
"""

from __future__ import annotations

import warnings

import numpy as np
import pymc as pm
import pytest

import pymc_dp as pmdp
from pymc_dp import _compat
from pymc_dp.accounting import PrivacyLedger
from pymc_dp.model.privatize_logistic import PUBLIC_FEATURES

from gallery_models import logistic_regression

SHORT = dict(draws=100, tune=100, chains=1, cores=1, progressbar=False, compute_convergence_checks=False)
BOUNDS = {"y": {"x": (-4.0, 4.0)}}


def _sample(model, ledger=None, epsilon=2.0, **kwargs):
    kw = {**SHORT, **kwargs}
    draws = kw.pop("draws")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pmdp.sample(draws, epsilon=epsilon, model=model, ledger=ledger, **kw)


def test_auto_chooses_the_measurements_route_for_a_gallery_logistic_regression():
    ledger = PrivacyLedger()
    idata = _sample(logistic_regression(), ledger, bounds=BOUNDS, noise_rng=1, random_seed=1)
    # A logistic likelihood: the objective engine, the perturbed point (0.7 ε) and the information there (0.3 ε).
    assert [e.details.get("route") for e in ledger.entries] == ["measurements"] * 2
    assert [e.mechanism for e in ledger.entries] == ["objective_perturbation", "laplace"]
    assert ledger.total().epsilon == pytest.approx(2.0)
    assert [e.epsilon for e in ledger.entries] == pytest.approx([0.7 * 2.0, 0.3 * 2.0])
    assert ledger.entries[0].details["parameters"] == ["beta[0]", "beta[1]", "intercept"]
    # the box's largest design row, (±4, ±4, 1): R = √33; ε′ leaves the Jacobian's term 15 % of the point's ε
    assert ledger.entries[0].details["feature_l2_bound"] == pytest.approx(np.sqrt(33.0))
    assert ledger.entries[0].details["epsilon_prime"] == pytest.approx(0.85 * 1.4)
    # each entry states its own guarantee: the point's rows within R and exact minimiser, the information's clip at
    # the box's worst case (not the newton engine's privately lowered clips)
    assert any("within L2 norm R" in a for a in ledger.entries[0].assumptions)
    assert any("worst case" in a or "largest L1 norm" in a for a in ledger.entries[1].assumptions)
    assert not any("privately chosen high quantile" in a for e in ledger.entries for a in e.assumptions)
    assert ledger.entries[1].details["information clip (L1, per record)"] > 0
    posterior = _compat.get_group(idata, "posterior")
    assert {"intercept", "beta"} <= set(posterior.data_vars)
    assert posterior["beta"].dims[-1] == "coef"
    groups = set(_compat.group_names(idata))
    assert not groups & {"observed_data", "constant_data", "log_likelihood"}, groups
    assert pmdp.ledger(idata).total() == ledger.total()


def test_the_newton_engine_releases_pilot_points_then_the_final_one():
    ledger = PrivacyLedger()
    _sample(logistic_regression(), ledger, method="measurements", engine="newton", bounds=BOUNDS, noise_rng=1,
            random_seed=1)
    # three pilot points and the final one, a score and an information each
    assert [e.details.get("route") for e in ledger.entries] == ["measurements"] * 8
    assert ledger.total().epsilon == pytest.approx(2.0)
    assert [e.epsilon for e in ledger.entries[-2:]] == pytest.approx([0.6 * 2.0 * 0.75, 0.6 * 2.0 * 0.25])


def test_the_objective_engine_is_refused_where_the_likelihood_is_not_logistic():
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, 50)
    with pm.Model() as model:
        pm.Poisson("y", pm.math.exp(pm.Normal("a", 0, 1) + pm.Normal("b", 0, 1) * x), observed=rng.poisson(1.0, 50))
    ledger = PrivacyLedger()
    with pytest.raises(ValueError, match="engine='objective' takes a Bernoulli likelihood with a logit link"):
        _sample(model, ledger, method="measurements", engine="objective", bounds={"y": {"x": (-1, 1), "y": (0, 9)}})
    with pytest.raises(ValueError, match="rounds= is the newton engine's"):
        _sample(logistic_regression(), ledger, method="measurements", engine="objective", bounds=BOUNDS, rounds=3)
    assert len(ledger) == 0 and not ledger.reserved


def test_the_gradients_engine_releases_the_noisy_gradient_heuristics_sums():
    ledger = PrivacyLedger()
    _sample(logistic_regression(), ledger, method="measurements", engine="gradients", bounds=BOUNDS, noise_rng=1,
            random_seed=1)
    assert [e.details.get("route") for e in ledger.entries] == ["measurements", "measurements"]
    # The T gradient sums at 0.8 ε, the covariates' moment at 0.2 ε: ε exactly.
    assert ledger.total().epsilon == pytest.approx(2.0)
    assert ledger.entries[0].count == 10 and ledger.entries[0].epsilon == pytest.approx(0.16)


def test_undeclared_bounds_are_refused_before_anything_is_spent():
    ledger = PrivacyLedger()
    for engine in ("newton", "objective", "gradients"):
        with pytest.raises(ValueError, match=r"bounds=\{'y': \{'x': \(lo, hi\)"):
            _sample(logistic_regression(), ledger, method="measurements", engine=engine, selection=False)
    assert len(ledger) == 0 and not ledger.reserved


@pytest.mark.parametrize(
    "options, match",
    [
        (dict(bounds={"y": {"x": (1.0, -1.0)}}), "lo < hi"),
        (dict(bounds={"y": {"x": (-1, 1), "y": (0, 1)}}, engine="gradients"), "takes only 'x'"),
        (dict(bounds={"y": {"x": (-1, 1), "y": (1, 0)}}), "lo < hi"),
        (dict(bounds=BOUNDS, engine="exact"), "engine must be"),
        (dict(bounds=BOUNDS, rounds=0), "rounds must be a positive integer"),
        (dict(bounds={"z": {"x": (-1, 1)}}), "bounds names"),
        (dict(bounds=BOUNDS, features="uniform"), "'measured' or an array"),
        (dict(bounds=BOUNDS, features=np.zeros((10, 3))), r"\(M, 2\)"),
        (dict(bounds=BOUNDS, features=np.zeros((10, 2))), "needs at least"),
        (dict(bounds=BOUNDS, feature_share=1.0), "feature_share"),
        (dict(bounds=BOUNDS, feature_share=0), "strictly between 0 and 1"),
        (dict(bounds=BOUNDS, iterations=0), "iterations"),
        (dict(bounds=BOUNDS, noise="laplace"), "noise"),
        (dict(bounds=BOUNDS, learning_rate=-1.0), "learning_rate"),
    ],
)
def test_bad_options_are_refused_before_anything_is_spent(options, match):
    ledger = PrivacyLedger()
    with pytest.raises(ValueError, match=match):
        _sample(logistic_regression(), ledger, method="measurements", **options)
    assert len(ledger) == 0 and not ledger.reserved


def _logistic(X, y):
    with pm.Model() as model:
        w = pm.Normal("w", 0, 1, shape=2)
        pm.Bernoulli("y", logit_p=X @ w, observed=y)
    return model


#: What a malformed record becomes on each engine: (label, covariates), None keeping the record's own. The gradients
#: engine replaces a label other than 0/1 by the default record; the newton engine clips a finite label into [0, 1].
_NEIGHBOUR = {
    ("gradients", "label_two"): (0.0, 0.0), ("gradients", "label_minus_one"): (0.0, 0.0),
    ("newton", "label_two"): (1.0, None), ("newton", "label_minus_one"): (0.0, None),
    ("objective", "label_two"): (1.0, None), ("objective", "label_minus_one"): (0.0, None),
}


@pytest.mark.parametrize("engine", ["newton", "objective", "gradients"])
@pytest.mark.parametrize("bad", ["label_two", "label_minus_one", "nan_covariate", "inf_covariate"])
def test_a_malformed_record_is_replaced_by_the_default_record_not_refused(bad, engine):
    # Refusing would say "some record is malformed" (and stopping the choice of route would too). The record
    # becomes the default one (label 0 and the middle of the box) or is clipped into the box: the call spends what
    # it spends on the neighbour holding that record, and with the same seeds releases exactly the neighbour's trace.
    rng = np.random.default_rng(2)
    X, y = rng.uniform(-1, 1, size=(30, 2)), rng.binomial(1, 0.5, 30).astype(float)
    odd_X, odd_y = X.copy(), y.copy()
    if bad.startswith("label"):
        odd_y[7] = 2.0 if bad == "label_two" else -1.0
    else:
        odd_X[7, 1] = np.nan if bad == "nan_covariate" else np.inf
    near_X, near_y = X.copy(), y.copy()
    label, covariates = _NEIGHBOUR.get((engine, bad), (0.0, 0.0))
    near_y[7] = label
    if covariates is not None:
        near_X[7] = covariates
    ours, theirs = PrivacyLedger(), PrivacyLedger()
    seeds = dict(bounds={"y": {"x": (-1, 1)}}, noise_rng=1, random_seed=1, method="measurements", engine=engine)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pmdp.curator_reports():
            got = pmdp.sample(50, epsilon=2.0, model=_logistic(odd_X, odd_y), ledger=ours, **seeds,
                              **{k: v for k, v in SHORT.items() if k != "draws"})
    said = "had a label other than 0 and 1" if engine == "gradients" else "lay outside the declared bounds or were not"
    assert any(f"1 record(s) of 'y' {said}" in str(w.message) for w in caught), [str(w.message) for w in caught]
    want = _sample(_logistic(near_X, near_y), theirs, draws=50, **seeds)
    assert [(e.mechanism, e.epsilon, e.count, e.touched, e.details.get("route")) for e in ours.entries] == [
        (e.mechanism, e.epsilon, e.count, e.touched, e.details.get("route")) for e in theirs.entries]
    assert ours.entries[0].details["route"] == "measurements"
    np.testing.assert_array_equal(_compat.get_group(got, "posterior")["w"].values,
                                  _compat.get_group(want, "posterior")["w"].values)


def test_other_likelihoods_are_refused_by_this_route_with_what_it_takes():
    with pm.Model() as model:
        p = pm.Beta("p", 1, 1)
        pm.Bernoulli("y", p=p, observed=np.ones(10))
    with pytest.raises(ValueError, match="no parameter of its likelihood is a function of a linear predictor"):
        _sample(model, method="measurements", bounds={"y": {"x": (-1, 1)}})
    with pytest.raises(ValueError, match="not the logistic function of a linear predictor"):
        _sample(model, method="measurements", engine="gradients", bounds={"y": {"x": (-1, 1)}})


def test_public_covariate_rows_buy_the_gradients_with_all_of_epsilon():
    rows = np.random.default_rng(0).normal(size=(2000, 2))  # the design's distribution, declared
    ledger = PrivacyLedger()
    _sample(logistic_regression(), ledger, method="measurements", bounds=BOUNDS, features=rows, noise_rng=2)
    assert len(ledger) == 1 and ledger.total().epsilon == pytest.approx(2.0)
    assert "covariates" not in ledger.entries[0].touched
    assert ledger.entries[0].details["route"] == "measurements"  # chosen explicitly, still recorded
    assert PUBLIC_FEATURES in ledger.entries[0].assumptions


def test_a_public_survey_enters_as_observed_data_and_is_recorded_as_an_assumption():
    # Gallery style: the survey has its own pm.Data rows; a prior's scale sits in a scalar pm.Data
    # (declared public) and its mean in a pm.Data with the coefficients' dims (public as dims are).
    rng = np.random.default_rng(3)
    X, Xp = rng.normal(size=(300, 2)), rng.normal(size=(40, 2))
    w = np.array([1.6, -1.0])
    with pm.Model(coords={"coef": ["x1", "x2"]}) as model:
        scale = pm.Data("prior_scale", 2.5)
        centre = pm.Data("prior_centre", np.zeros(2), dims="coef")
        beta = pm.Normal("beta", centre, scale, dims="coef")
        pm.Bernoulli("y", logit_p=pm.Data("X", X) @ beta, observed=rng.binomial(1, 1 / (1 + np.exp(-X @ w))))
        pm.Bernoulli("survey", logit_p=pm.Data("X_survey", Xp) @ beta,
                     observed=rng.binomial(1, 1 / (1 + np.exp(-Xp @ w))))
    ledger = PrivacyLedger()
    with pytest.raises(ValueError, match=r"'prior_scale'.*declare them public=\[\.\.\.\]"):
        _sample(model, PrivacyLedger(), method="measurements", bounds=BOUNDS, public=["survey"])
    with pytest.raises(ValueError, match=r"cannot be declared public"):
        _sample(model, PrivacyLedger(), method="measurements", bounds=BOUNDS, public=["survey", "prior_scale", "X"])
    idata = _sample(model, ledger, method="measurements", bounds=BOUNDS, public=["survey", "prior_scale"], noise_rng=4)
    assert all(any("'prior_scale', 'survey' declared public" in a for a in e.assumptions) for e in ledger.entries)
    assert ledger.total().epsilon == pytest.approx(2.0)
    assert not set(_compat.group_names(idata)) & {"observed_data", "constant_data"}


def _failing_callback(**_: object) -> None:
    raise RuntimeError("the analyst's callback failed")


def test_a_failed_sampling_run_still_records_the_releases_it_drew():
    # Sampling settings pm.sample would fail on are refused before the spend; what fails during the
    # draws (here the analyst's own callback) fails after it, and the releases stay on the ledger.
    ledger = PrivacyLedger()
    with pytest.raises(ValueError, match=r"nuts\['max_treedepth'\] must be >= 1"):
        _sample(logistic_regression(), ledger, bounds=BOUNDS, noise_rng=5, nuts={"max_treedepth": -1})
    assert len(ledger) == 0
    with pytest.raises(RuntimeError, match="callback failed"):
        _sample(logistic_regression(), ledger, bounds=BOUNDS, noise_rng=5, callback=_failing_callback)
    assert ledger.total().epsilon == pytest.approx(2.0) and not ledger.reserved


@pytest.mark.slow
def test_at_large_epsilon_the_posterior_approaches_plain_pymcs():
    """ε = 200 on 300 records: the noise on each gradient coordinate (scale 2·B·T/(0.8ε) ≈ 1 with B = 9)
    is small next to the sums' sampling spread (√N·0.4 ≈ 7), so the private posterior
    should sit within one plain posterior s.d. of plain PyMC's mean on every coordinate;
    the CLT likelihood and the measured design (a Gaussian stand-in) add a bias well
    below that at N = 300 (measured: at most 0.5 s.d.)."""
    model = logistic_regression()
    with model:
        plain = pm.sample(500, tune=500, chains=2, cores=1, random_seed=1, progressbar=False)
    private = _sample(model, epsilon=200.0, bounds=BOUNDS, noise_rng=6, random_seed=2, draws=500, tune=500, chains=2)
    for name in ("intercept", "beta"):
        mean, sd = plain.posterior[name].mean(("chain", "draw")), plain.posterior[name].std(("chain", "draw"))
        got = _compat.get_group(private, "posterior")[name].mean(("chain", "draw"))
        assert np.all(np.abs(got.values - mean.values) < sd.values), (name, got.values, mean.values, sd.values)


def test_the_stand_in_design_follows_the_release_when_it_is_precise_and_the_box_when_it_is_not():
    from pymc_dp.model.privatize_logistic import _measure, _stand_in_design

    rng = np.random.default_rng(8)
    design = np.column_stack([rng.normal(1.0, 0.5, 20_000).clip(-2, 2), rng.uniform(-2, 0, 20_000), np.ones(20_000)])
    lower, upper = np.array([-2.0, -2.0, 1.0]), np.array([2.0, 2.0, 1.0])
    precise = _measure(design, lower, upper, True, 1e4, PrivacyLedger(), 1, ())
    rows = _stand_in_design(precise, lower, upper, True)
    # ε = 10⁴ on 20 000 rows: the moments' noise is ~10⁻³ of their size, so the stand-in's
    # mean and s.d. match the records' to Monte Carlo error of 4 000 rows (≈ 0.01) and clipping.
    assert np.allclose(rows[:, :2].mean(0), design[:, :2].mean(0), atol=0.05)
    assert np.allclose(rows[:, :2].std(0), design[:, :2].std(0), atol=0.05)
    assert np.all(rows[:, 2] == 1.0) and np.all((rows >= lower) & (rows <= upper))
    noisy = _measure(design[:50], lower, upper, True, 1e-3, PrivacyLedger(), 1, ())
    rows = _stand_in_design(noisy, lower, upper, True)
    # ε = 10⁻³ on 50 rows: the release is noise; the box's uniform moments (mean 0, s.d. 2/√3 ≈ 1.15)
    # take over instead of a covariance made of noise.
    assert np.allclose(rows[:, :2].mean(0), 0.0, atol=0.1)
    assert np.allclose(rows[:, :2].std(0), 2 / np.sqrt(3), atol=0.15)


def test_clip_counts_are_silent_unless_the_curator_asks_for_them():
    # A warning is a release: by default it must not say how many records lay outside the bounds
    # (here even a refused call would print it at epsilon = 0).
    import pymc_dp.accounting.curator as curator

    model = logistic_regression()
    ledger = PrivacyLedger(budget=pmdp.Budget(epsilon=1e-9))
    for enabled, expected in ((False, 0), (True, 1)):
        with curator.curator_reports(enabled), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with pytest.raises(pmdp.BudgetExceededError):
                pmdp.sample(10, epsilon=1.0, model=model, ledger=ledger, bounds={"y": {"x": (-0.5, 0.5)}})
        reports = [w for w in caught if "clipped" in str(w.message)]
        assert len(reports) == expected, [str(w.message) for w in caught]
    assert len(ledger) == 0
