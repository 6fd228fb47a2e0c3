"""Missing and malformed records: never refused, never imputed, counted for the curator only.

A refusal is a release to whoever runs the call ("some value is missing"), and PyMC's
imputation releases how many (a free variable of one entry per missing value).
:func:`pymc_dp.model.missing.restore_missing` undoes the imputation; each route then treats
a NaN as a malformed record.
"""

from __future__ import annotations

import warnings

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

import pymc_dp as pmdp
from simple_models import normal_model
from pymc_dp import _compat
from pymc_dp.model.missing import restore_missing

QUIET = dict(progressbar=False, compute_convergence_checks=False)


def _imputed(build):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyMC's ImputationWarning
        return build()


def _regression(y):
    x = np.linspace(-1, 1, len(y))
    with pm.Model(coords={"obs": np.arange(len(y))}) as model:
        a = pm.Normal("a", 0, 1)
        b = pm.Normal("b", 0, 1)
        pm.Normal("y", a + b * x, 1.0, observed=y, dims="obs")
    return model


def test_restore_missing_rebuilds_the_variable_pymc_split_with_nan_where_missing():
    y = np.array([0.5, -0.2, np.nan, 1.0, 0.3])
    restored = restore_missing(_imputed(lambda: _regression(y)))
    complete = _regression(np.where(np.isnan(y), 9.0, y))
    assert [v.name for v in restored.free_RVs] == [v.name for v in complete.free_RVs] == ["a", "b"]
    assert [v.name for v in restored.observed_RVs] == ["y"] and not restored.deterministics
    assert tuple(restored.named_vars_to_dims["y"]) == ("obs",)  # PyMC 5 keeps a list
    np.testing.assert_array_equal(np.isnan(restored.rvs_to_values[restored["y"]].data), np.isnan(y))
    point = {"a": 0.3, "b": -0.4}
    ours = restored.compile_logp(vars=[restored["y"]], sum=False, mode="FAST_COMPILE")(point)[0]
    theirs = complete.compile_logp(vars=[complete["y"]], sum=False, mode="FAST_COMPILE")(point)[0]
    np.testing.assert_allclose(ours[~np.isnan(y)], theirs[~np.isnan(y)])  # each record's own mean: rows aligned


def test_restore_missing_handles_counts_rows_mixtures_and_masked_data_containers():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pm.Model() as counts:
            pm.Poisson("c", pm.Gamma("lam", 2, 1), observed=np.array([1, 2, np.nan, 4]))
        with pm.Model() as rows:
            pm.Multinomial("z", 3, pm.Dirichlet("p", np.ones(3)), observed=np.array([[1, 1, 1], [np.nan] * 3, [3, 0, 0]]))
        with pm.Model() as mixture:
            pm.NormalMixture("q", pm.Dirichlet("w", np.ones(2)), mu=np.array([-1.0, 1.0]), sigma=1.0,
                             observed=np.array([0.1, np.nan, 1.0]))
        with pm.Model() as table:  # one missing entry of a 2-D variable: PyMC indexes the parameters by nonzero()
            grid = np.random.default_rng(0).normal(size=(4, 3))
            grid[1, 1] = np.nan
            pm.Normal("t", pm.Normal("mt", size=3), 1.0, observed=grid)
        with pm.Model() as container:
            d = pm.Data("d", np.zeros(4))
            pm.Normal("v", pm.Normal("m"), 1.0, observed=d)
            pm.set_data({"d": np.array([1.0, np.nan, 2.0, 3.0])})
    c = restore_missing(counts)
    assert [v.name for v in c.free_RVs] == ["lam"] and c.rvs_to_values[c["c"]].data[2] == np.iinfo(np.int64).min
    r = restore_missing(rows)
    assert [v.name for v in r.free_RVs] == ["p"] and (r.rvs_to_values[r["z"]].data[1] < 0).all()
    m = restore_missing(mixture)
    assert [v.name for v in m.free_RVs] == ["w"] and [v.name for v in m.observed_RVs] == ["q"]
    t = restore_missing(table)
    assert [v.name for v in t.free_RVs] == ["mt"] and t.rvs_to_values[t["t"]].data.shape == (4, 3)
    k = restore_missing(container)
    value = k["d"].get_value()
    assert not np.ma.isMaskedArray(value) and np.isnan(value[1])
    assert np.ma.isMaskedArray(container["d"].get_value())  # the user's model is untouched
    assert restore_missing(k) is k  # nothing left to restore


def _normal(y):
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 1)
        pm.Normal("y", mu, 1.0, observed=pt.constant(y))  # a form PyMC does not impute: NaN reaches the routes
    return model


@pytest.mark.parametrize("method", ["ops", "gibbs", "ais"])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_a_nan_record_on_a_loglik_clip_route_has_the_constant_lower_term(method, bad):
    # With a clipped log-likelihood, a NaN or infinite record's term is the lower clip whatever the parameters:
    # exactly the term of a record so far out that its clipped term is the lower clip everywhere (1e6 here).
    # Same seed, same release (up to rounding: the two compiled graphs differ); same ledger entries; nothing refused.
    y = np.random.default_rng(0).normal(0.3, 1.0, 30)
    odd, far = y.copy(), y.copy()
    odd[4], far[4] = bad, 1e6
    args = dict(epsilon=2.0, method=method, loglik_clip=(-6.0, 0.0), random_seed=2)
    args.update({"ops": dict(tune=50, chains=1, cores=1), "gibbs": dict(tune=20, chains=1, cores=1),
                 "ais": dict(stages=3, noise_rng=0)}[method])
    ours, theirs = pmdp.PrivacyLedger(), pmdp.PrivacyLedger()
    got = pmdp.sample(20, model=_normal(odd), ledger=ours, **args, **({} if method == "ais" else QUIET))
    want = pmdp.sample(20, model=_normal(far), ledger=theirs, **args, **({} if method == "ais" else QUIET))
    assert [(e.mechanism, e.epsilon, e.count, e.touched) for e in ours.entries] == [
        (e.mechanism, e.epsilon, e.count, e.touched) for e in theirs.entries]
    np.testing.assert_allclose(_compat.get_group(got, "posterior")["mu"].values,
                               _compat.get_group(want, "posterior")["mu"].values, rtol=1e-8)


def test_a_missing_value_on_the_laplace_route_is_the_default_record():
    # NaN in a Normal's records (imputed by PyMC, then restored) is the midpoint of the declared bounds: the
    # release is the neighbour's holding that midpoint, at the same cost; the curator hears how many.
    y = np.random.default_rng(1).normal(0.5, 1.0, 25)
    odd, mid = y.copy(), y.copy()
    odd[7], mid[7] = np.nan, 0.0  # bounds (-4, 4): midpoint 0
    args = dict(epsilon=1.0, bounds={"y": {"x": (-4.0, 4.0)}}, noise_rng=3, random_seed=3, tune=50, chains=1, **QUIET)
    ours, theirs = pmdp.PrivacyLedger(), pmdp.PrivacyLedger()
    with pytest.warns(pmdp.families.ClippedRecordsWarning, match="1 of 25 record"):
        got = pmdp.sample(20, model=_imputed(lambda: _regression_free(odd)), ledger=ours, **args)
    want = pmdp.sample(20, model=_regression_free(mid), ledger=theirs, **args)
    assert [(e.epsilon, e.touched, e.details.get("route")) for e in ours.entries] == [
        (e.epsilon, e.touched, e.details.get("route")) for e in theirs.entries]
    np.testing.assert_array_equal(_compat.get_group(got, "posterior")["mu"].values,
                                  _compat.get_group(want, "posterior")["mu"].values)


def _regression_free(y):
    return normal_model(y, mu_sd=2.0, sigma_sd=2.0)


def test_privatize_model_counts_a_missing_value_as_a_record_of_the_default_value():
    # pmdp.privatize_model directly (not through pmdp.sample): N stays the number of records, the missing value
    # is the family's default record, and the record-free model holds no imputed variable.
    y = np.random.default_rng(4).normal(0.5, 1.0, 25)
    odd = y.copy()
    odd[7] = np.nan
    model = _imputed(lambda: _regression_free(odd))
    with pytest.warns(pmdp.families.ClippedRecordsWarning, match="1 of 25 record"):
        private = pmdp.privatize_model(model, 1.0, bounds={"y": {"x": (-4.0, 4.0)}}, rng=0)
    (stats,) = private.statistics.values()
    assert stats.n == 25
    assert [v.name for v in private.model.free_RVs] == ["mu", "sigma"]
