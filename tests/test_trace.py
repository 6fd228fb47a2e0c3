"""Tests of pymc_dp.trace: the ledger on a trace and the released (whitelisted) trace.

One small real PyMC model (20 Bernoulli records, a pm.Data covariate, record-id
coordinates, Deterministics with and without data) is sampled once per module.
"""

from __future__ import annotations

import copy
import warnings

import arviz as az
import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
import xarray as xr

import pymc_dp as pmdp
from pymc_dp.accounting import Budget, PrivacyLedger
from pymc_dp.trace import (
    MissingLedgerError,
    attach_ledger,
    data_dependent_deterministics,
    ledger,
    release,
)
from pymc_dp import _compat

N = 20
RECORD_IDS = [f"rec-{i:04d}-secret" for i in range(N)]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(20240601)
    y = rng.binomial(1, 0.3, size=N).astype(np.int64)
    x = rng.normal(size=N)
    z = rng.normal(size=N)  # a covariate passed as a plain NumPy array (not pm.Data)
    return y, x, z


@pytest.fixture(scope="module")
def fitted(data):
    y, x, z = data
    with pm.Model(coords={"record": RECORD_IDS}) as model:
        xd = pm.Data("x", x, dims="record")
        a = pm.Normal("a", 0, 1)
        b = pm.Normal("b", 0, 1)
        eta = pm.Deterministic("eta", a + b * xd, dims="record")  # depends on pm.Data
        pm.Deterministic("twice_a", 2 * a)  # data-free
        pm.Deterministic("mu_np", a + b * z)  # depends on a NumPy covariate (a constant)
        y_rv = pm.Bernoulli("y", logit_p=eta, observed=y, dims="record")
        pm.Deterministic("y_total", y_rv.sum() * 1.0)  # depends on the observed variable
        idata = pm.sample(
            draws=50,
            tune=50,
            chains=2,
            cores=1,
            random_seed=1,
            progressbar=False,
            compute_convergence_checks=False,
            idata_kwargs={"log_likelihood": True},
        )
        prior = pm.sample_prior_predictive(draws=20, random_seed=2)
    for group in _compat.group_names(prior):
        idata = _compat.with_group(idata, group, _compat.get_group(prior, group))
    # Pretend a private step method emitted per-draw privacy costs.
    stats = _compat.get_group(idata, "sample_stats").copy()
    shape = (stats.sizes["chain"], stats.sizes["draw"])
    stats["dp_epsilon"] = (("chain", "draw"), np.full(shape, 0.01))
    stats["dp_delta"] = (("chain", "draw"), np.zeros(shape))
    idata = _compat.with_group(idata, "sample_stats", stats)
    return model, idata


def _spend(eps: float = 0.5) -> PrivacyLedger:
    lg = PrivacyLedger(budget=Budget(epsilon=1.0))
    lg.spend("laplace", eps, touched="y:count", noise_source="seeded")
    return lg


def _released(fitted, **kwargs):
    model, idata = fitted
    kwargs.setdefault("ledger", _spend())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return release(idata, model=model, **kwargs)


def _netcdf_bytes(idata, tmp_path, name="t.nc") -> bytes:
    path = tmp_path / name
    # Uncompressed, so raw bytes are searchable (DataTree.to_netcdf does not compress by default).
    idata.to_netcdf(str(path), **({} if _compat.TRACE_IS_DATATREE else {"compress": False}))
    return path.read_bytes()


def _snapshot(idata):
    return (
        list(_compat.group_names(idata)),
        copy.deepcopy(_compat.get_attrs(idata)),
        {g: _compat.get_group(idata, g).copy(deep=True) for g in _compat.group_names(idata)},
    )


# --------------------------------------------------------------------------- release


def test_release_keeps_only_whitelisted_groups(fitted):
    _, idata = fitted
    assert {"observed_data", "constant_data", "log_likelihood", "prior"} <= set(_compat.group_names(idata))
    out = _released(fitted)
    assert set(_compat.group_names(out)) == {"posterior", "sample_stats", "privacy"}
    # any other group, e.g. warmup draws, is never copied
    model, _ = fitted
    with_warmup = _compat.with_group(idata, "warmup_posterior", idata.posterior)
    with_warmup = _compat.with_group(with_warmup, "posterior_predictive", idata.prior_predictive)
    out = _released((model, with_warmup))
    assert set(_compat.group_names(out)) == {"posterior", "sample_stats", "privacy"}


def test_release_drops_sampler_internals_and_timing(fitted):
    out = _released(fitted)
    assert sorted(out.sample_stats.data_vars) == ["dp_delta", "dp_epsilon"]
    for group in _compat.group_names(out):
        attrs = _compat.get_group(out, group).attrs
        assert "sampling_time" not in attrs and "tuning_steps" not in attrs
    assert "sampling_time" not in out.attrs
    assert out.attrs["pymc_dp_version"]
    # created_at is one value across groups (no timing channel between groups)
    created = {_compat.get_group(out, g).attrs.get("created_at") for g in ("posterior", "sample_stats")}
    assert len(created) == 1
    # ... and a date, not a time: with the ledger's entries it would time the run
    (day,) = created
    assert len(day) == 10 and day == fitted[1].posterior.attrs["created_at"][:10]
    assert all(e.timestamp.endswith("T00:00:00+00:00") for e in pmdp.ledger(out).entries)


def test_release_sample_stats_only_when_whitelisted_explicitly(fitted):
    out = _released(fitted, sample_stats=("diverging", "dp_epsilon", "not_a_stat"))
    assert sorted(out.sample_stats.data_vars) == ["diverging", "dp_epsilon"]
    out = _released(fitted, sample_stats=())
    assert "sample_stats" not in _compat.group_names(out)


def test_release_drops_record_coordinates(fitted):
    out = _released(fitted)
    for group in _compat.group_names(out):
        ds = _compat.get_group(out, group)
        assert "record" not in ds.dims and "record" not in ds.coords


def test_released_bytes_do_not_contain_the_data(fitted, data, tmp_path):
    y, x, z = data
    needles = {
        "y int64": y.astype("<i8").tobytes(),
        "y int8": y.astype("i1").tobytes(),
        "y float64": y.astype("<f8").tobytes(),
        "x": x.astype("<f8").tobytes(),
        "z": z.astype("<f8").tobytes(),
        "record id": RECORD_IDS[7].encode(),
    }
    _, idata = fitted
    # Positive control: the raw trace does hold them, so the search can find them.
    raw = _netcdf_bytes(idata, tmp_path, "raw.nc")
    for name in ("y int64", "x", "record id"):
        assert needles[name] in raw, name
    released = _netcdf_bytes(_released(fitted), tmp_path, "released.nc")
    for name, needle in needles.items():
        assert needle not in released, f"{name} leaked into the released trace"


def test_release_drops_data_dependent_deterministics(fitted):
    model, idata = fitted
    with pytest.warns(UserWarning, match="dropped data-dependent"):
        out = release(idata, model=model)
    assert sorted(out.posterior.data_vars) == ["a", "b", "twice_a"]


@pytest.mark.parametrize(
    ("name", "why"),
    [("eta", "pm.Data container 'x'"), ("y_total", "observed"), ("mu_np", "constant array")],
)
def test_release_refuses_requested_data_dependent_variable(fitted, name, why):
    model, idata = fitted
    with pytest.raises(ValueError, match=why):
        release(idata, model=model, var_names=["a", name])


def test_release_var_names(fitted):
    model, idata = fitted
    out = release(idata, model=model, var_names=["a"])
    assert list(out.posterior.data_vars) == ["a"]
    with pytest.raises(ValueError, match="not in the posterior"):
        release(idata, model=model, var_names=["nope"])


def test_release_uses_the_context_model(fitted):
    model, idata = fitted
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        out = release(idata)
    assert "eta" not in out.posterior


def test_release_without_model_warns_and_keeps_everything(fitted):
    _, idata = fitted
    with pytest.warns(UserWarning, match="cannot check"):
        out = release(idata)
    assert set(out.posterior.data_vars) == set(idata.posterior.data_vars)
    assert "observed_data" not in _compat.group_names(out)


def test_keep_prior_filters_prior_variables(fitted):
    out = _released(fitted, keep_prior=True)
    assert "prior" in _compat.group_names(out)
    assert sorted(out.prior.data_vars) == ["a", "b", "twice_a"]
    assert "prior" not in _compat.group_names(_released(fitted))


def test_release_does_not_mutate_input(fitted):
    _, idata = fitted
    before = _snapshot(idata)
    out = _released(fitted)
    attach_ledger(idata, _spend())
    after = _snapshot(idata)
    assert before[0] == after[0]
    assert before[1] == after[1]
    for g in before[0]:
        assert before[2][g].identical(after[2][g]), g
    # and the result does not share Dataset objects with the input
    out.posterior["a"].values[:] = 0.0
    assert not np.all(idata.posterior["a"].values == 0.0)


def test_az_summary_on_released_trace(fitted):
    summary = az.summary(_released(fitted), kind="stats")
    assert {"a", "b", "twice_a"} <= set(summary.index)


# --------------------------------------------------------------------------- ledger


def test_attach_and_read_back(fitted):
    _, idata = fitted
    lg = _spend()
    out = attach_ledger(idata, lg)
    assert ledger(out) == lg
    privacy = out.privacy
    assert privacy["ledger"].dims == ("chain",)
    assert list(privacy["chain"].values) == list(idata.posterior["chain"].values)
    np.testing.assert_allclose(privacy["epsilon"].values, 0.5)
    np.testing.assert_allclose(privacy["delta"].values, 0.0)
    assert PrivacyLedger.from_json(out.attrs["pymc_dp_ledger"]) == lg
    assert "privacy" not in _compat.group_names(idata)


def test_attach_twice_keeps_both_spends(fitted):
    _, idata = fitted
    first, second = _spend(0.25), _spend(0.5)
    out = attach_ledger(attach_ledger(idata, first), second)
    ids = {e.id for e in ledger(out).entries}
    assert ids == {first.entries[0].id, second.entries[0].id}
    # re-attaching the same ledger does not double count
    again = attach_ledger(out, first)
    assert len(ledger(again)) == 2


@pytest.mark.parametrize("released", [False, True])
def test_netcdf_round_trip(fitted, tmp_path, released):
    _, idata = fitted
    lg = _spend()
    out = _released(fitted, ledger=lg) if released else attach_ledger(idata, lg)
    path = tmp_path / "trace.nc"
    out.to_netcdf(str(path))
    back = az.from_netcdf(str(path))
    assert back.privacy["ledger"].dtype.kind in "OU"  # a string variable survived netCDF
    assert ledger(back) == lg
    assert ledger(str(path)) == lg


def test_zarr_round_trip(fitted, tmp_path):
    # ArviZ 0.23's to_zarr refuses zarr >= 3; _compat.save goes through a DataTree on both.
    pytest.importorskip("zarr")
    lg = _spend()
    out = _released(fitted, ledger=lg)
    path = tmp_path / "trace.zarr"
    _compat.save(out, path)
    back = _compat.load(path)
    assert type(back) is type(out)
    assert set(_compat.group_names(back)) == set(_compat.group_names(out))
    assert ledger(back) == lg
    assert ledger(str(path)) == lg
    np.testing.assert_array_equal(back.posterior["a"].values, out.posterior["a"].values)


def test_concat_keeps_a_ledger_stored_only_as_the_attribute(fitted):
    # A trace whose ledger survives only in the top-level attribute (its privacy group
    # dropped on the way) still counts: concat attaches the union of every input ledger.
    first, second = _spend(0.5), _spend(0.25)
    a = _released(fitted, ledger=first)
    groups = {g: _compat.get_group(a, g) for g in _compat.group_names(a) if g != "privacy"}
    b = _compat.new_trace(groups, _compat.get_attrs(_released(fitted, ledger=second)), like=a)
    both = pmdp.concat([a, b])
    assert {e.id for e in ledger(both).entries} == {first.entries[0].id, second.entries[0].id}
    assert ledger(both).total().epsilon == pytest.approx(0.75)


def test_concat_keeps_each_traces_chains_in_a_group_only_some_traces_have():
    # an ops release has no sample_stats, a gibbs release has its per-draw cost: after concat the
    # cost must sit against the gibbs release's chains (2, 3), not the first two
    ops = _compat.trace_from_dict({"posterior": {"mu": np.zeros((2, 5))}})
    gibbs = _compat.trace_from_dict({"posterior": {"mu": np.ones((2, 5))},
                                     "sample_stats": {"dp_epsilon": np.full((2, 5), 0.1)}})
    out = _compat.concat([ops, gibbs])
    posterior, stats = _compat.get_group(out, "posterior"), _compat.get_group(out, "sample_stats")
    assert list(posterior["chain"].values) == [0, 1, 2, 3]
    assert list(stats["chain"].values) == [2, 3]
    assert np.all(posterior["mu"].sel(chain=stats["chain"]).values == 1.0)


def test_concat_along_draw_is_refused_for_traces_with_a_ledger(fitted):
    a = _released(fitted, ledger=_spend())
    with pytest.raises(ValueError, match="along 'chain' only"):
        pmdp.concat([a, a], dim="draw")
    with pytest.raises(ValueError, match="at least one"):
        pmdp.concat([])


def test_concat_of_two_releases_keeps_both_ledgers(fitted, tmp_path):
    first, second = _spend(0.5), _spend(0.5)  # same ε: attrs would be de-duplicated
    a = _released(fitted, ledger=first)
    b = _released(fitted, ledger=second)
    both = pmdp.concat([a, b], dim="chain")
    assert type(both) is type(a)
    assert both.posterior.sizes["chain"] == 4
    assert both.posterior["chain"].values.tolist() == [0, 1, 2, 3]  # renumbered, as az.concat did
    combined = ledger(both)
    expected = {first.entries[0].id, second.entries[0].id}
    assert {e.id for e in combined.entries} == expected
    assert combined.total().epsilon == pytest.approx(1.0)
    path = tmp_path / "both.nc"
    both.to_netcdf(str(path))
    assert {e.id for e in ledger(az.from_netcdf(str(path))).entries} == expected
    # releasing the concatenation again keeps the per-chain ledgers
    again = release(both, var_names=["a"])
    assert {e.id for e in ledger(again).entries} == expected
    assert len(set(again.privacy["ledger"].values.tolist())) == 2


def test_concat_of_releases_sharing_a_ledger_counts_it_once(fitted):
    lg = _spend()
    both = pmdp.concat([_released(fitted, ledger=lg), _released(fitted, ledger=lg)], dim="chain")
    assert ledger(both) == lg


def test_missing_ledger_is_a_clear_error(fitted):
    _, idata = fitted
    with pytest.raises(MissingLedgerError, match="not produced by pymc_dp"):
        ledger(idata)


def test_attach_rejects_non_ledger(fitted):
    _, idata = fitted
    with pytest.raises(TypeError, match="PrivacyLedger"):
        attach_ledger(idata, {"epsilon": 1.0})


# --------------------------------------------------------------------------- data dependence


def test_data_dependent_deterministics(fitted):
    model, _ = fitted
    found = data_dependent_deterministics(model)
    assert set(found) == {"eta", "mu_np", "y_total"}
    assert "pm.Data container 'x'" in found["eta"]


def test_free_rv_with_data_prior_keeps_its_deterministic():
    # The walk stops at free RVs: a Deterministic of a free RV whose *prior* uses data
    # is post-processing of that RV's posterior draws, not of the data.
    with pm.Model() as model:
        scale = pm.Data("scale", 2.0)
        a = pm.Normal("a", 0, scale)
        pm.Deterministic("a_sq", a**2)
        pm.Deterministic("a_scaled", a / scale)
        pm.Normal("obs", a, 1, observed=np.array([0.1, 0.2]))
    assert set(data_dependent_deterministics(model)) == {"a_scaled"}


def test_deterministics_of_parameters_alone_are_released_whatever_their_shape_and_hidden_data_is_not():
    """An LKJ prior's correlations and standard deviations (its packing indices are constants) are functions of the
    parameters; a per-record index, or data closed over by an inner graph, is data."""
    from pytensor.compile.builders import OpFromGraph

    rows = np.random.default_rng(1).normal(size=(40, 3))
    index = np.random.default_rng(2).integers(0, 3, 40)
    m = pt.scalar("m")
    closed_over = OpFromGraph([m], [m + pt.as_tensor(rows[:, 0]).sum()])
    with pm.Model() as model:
        chol, _, _ = pm.LKJCholeskyCov("chol", n=3, eta=2.0, sd_dist=pm.Exponential.dist(1.0), compute_corr=True)
        a = pm.Normal("a", shape=3)
        pm.Deterministic("per_record", a[index])
        pm.Deterministic("hidden", closed_over(a[0]))
        pm.MvNormal("y", mu=0, chol=chol, observed=rows)
    assert set(data_dependent_deterministics(model)) == {"per_record", "hidden"}


# --------------------------------------------------------------------------- DataTree branch


def _tree() -> xr.DataTree:
    post = xr.Dataset(
        {"a": (("chain", "draw"), np.arange(10.0).reshape(2, 5)), "e": (("chain", "draw", "record"), np.ones((2, 5, 3)))},
        coords={"chain": [0, 1], "draw": np.arange(5), "record": ["r1", "r2", "r3"]},
        attrs={"sampling_time": 1.5, "created_at": "now"},
    )
    obs = xr.Dataset({"y": ("record", [1, 0, 1])}, coords={"record": ["r1", "r2", "r3"]})
    return xr.DataTree.from_dict({"posterior": post, "observed_data": obs})


def test_compat_datatree_branch(tmp_path):
    tree = _tree()
    lg = _spend()
    with_ledger = attach_ledger(tree, lg)
    assert isinstance(with_ledger, xr.DataTree)
    assert _compat.group_names(tree) == ["posterior", "observed_data"]
    assert ledger(with_ledger) == lg
    out = release(with_ledger, var_names=["a"])
    assert isinstance(out, xr.DataTree)
    assert set(_compat.group_names(out)) == {"posterior", "privacy"}
    assert "record" not in out["posterior"].to_dataset().dims
    assert "sampling_time" not in out["posterior"].attrs
    assert ledger(out) == lg
    path = tmp_path / "tree.nc"
    out.to_netcdf(str(path))
    assert ledger(xr.open_datatree(str(path))) == lg


def test_the_records_dim_is_released_with_numbers_not_its_labels():
    # Coordinate labels along the records are often identifiers ("patient_7_HIV+"): a released
    # variable along that dim keeps its values but is labelled 0..N-1; other dims keep their labels.
    import pymc_dp as pmdp

    y = np.array([0, 1, 1, 0, 1])
    labels = [f"patient_{i}_{'pos' if v else 'neg'}" for i, v in enumerate(y)]
    with pm.Model(coords={"obs": labels, "coef": ["a", "b"]}) as model:
        pm.Normal("b", dims="coef")
        pm.Normal("u", 0, 1, dims="obs")
        pm.Bernoulli("y", p=0.5, observed=y, dims="obs")
        idata = pm.sample(20, tune=20, chains=1, cores=1, progressbar=False, random_seed=0,
                          compute_convergence_checks=False)
    released = pmdp.release(idata, ledger=pmdp.PrivacyLedger(), model=model)
    posterior = released.posterior
    assert list(posterior["obs"].values) == [0, 1, 2, 3, 4]
    assert list(posterior["coef"].values) == ["a", "b"]
    assert np.array_equal(posterior["u"].values, idata.posterior["u"].values)


@pytest.mark.parametrize("observed_dims", [None, "obs"], ids=["observed_without_dims", "observed_on_another_dim"])
def test_a_per_record_latents_labels_are_renumbered_whatever_dim_the_observed_variable_has(observed_dims):
    # A per-record latent on "patient" beside an observed variable declared without dims (or on a
    # dim of its own): "patient" is as long as the records, so its labels are identifiers too.
    import pymc_dp as pmdp

    y = np.array([0.3, -1.2, 0.8, 2.1, -0.4])
    ids = [f"MRN-{1000 + 37 * i}" for i in range(y.size)]
    with pm.Model(coords={"patient": ids, "obs": np.arange(y.size), "coef": ["a", "b"]}) as model:
        pm.Normal("b", dims="coef")
        z = pm.Normal("z", 0, 1, dims="patient")
        pm.Normal("y", z, 1.0, observed=y, dims=observed_dims)
        idata = pm.sample(20, tune=20, chains=1, cores=1, progressbar=False, random_seed=0,
                          compute_convergence_checks=False)
    posterior = pmdp.release(idata, ledger=pmdp.PrivacyLedger(), model=model).posterior
    assert list(posterior["patient"].values) == list(range(y.size))
    assert list(posterior["coef"].values) == ["a", "b"]


def test_labels_of_a_dim_one_shorter_than_the_records_are_renumbered():
    # a random walk's innovations labelled by dates[1:], a sum-to-zero vector by ids[1:]
    import pymc_dp as pmdp

    y = np.array([0.3, -1.2, 0.8, 2.1, -0.4])
    with pm.Model(coords={"date": [f"2026-01-0{i + 1}" for i in range(5)],
                          "step": [f"2026-01-0{i + 2}" for i in range(4)]}) as model:
        innovations = pm.Normal("innovations", 0, 1, dims="step")
        level = pm.Deterministic("level", pt.concatenate([[0.0], pt.cumsum(innovations)]), dims="date")
        pm.Normal("y", level, 1.0, observed=y, dims="date")
        idata = pm.sample(20, tune=20, chains=1, cores=1, progressbar=False, random_seed=0,
                          compute_convergence_checks=False)
    posterior = pmdp.release(idata, ledger=pmdp.PrivacyLedger(), model=model).posterior
    assert list(posterior["step"].values) == [0, 1, 2, 3]
