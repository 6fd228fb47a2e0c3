"""The leak scanner (pymc_dp.audit.leaks): positive controls, then every release route must scan clean.

Positive controls show the scanner is not vacuous: a raw ``pm.sample`` trace, a
Deterministic of the data, record values and exact statistics hidden in attributes
and JSON, record runs hidden in coordinates are all found. Negative controls run every
route that releases something — ``pmdp.sample`` (laplace through the privacy flag and
through privatize/observe_stats, ops, gibbs with PrivateGibbs and with Barker steps),
``release_posterior``, the war-logs OPS fit and the war-logs demo — on realistic
records (many-digit floats, random 0/1, N >= 30) and require a clean report. A
finding there would be a privacy bug of the route, not of this test.
"""

from __future__ import annotations

import dataclasses
import json
import time
import warnings

import arviz as az
import numpy as np
import pymc as pm
import pytest
import xarray as xr

import pymc_dp as pmdp
from pymc_dp.accounting import Budget, PrivacyLedger
from pymc_dp.audit.leaks import Leak, LeakReport, PrivacyLeakError, scan_for_leaks
from pymc_dp.examples.warlogs import data as warlogs_data
from pymc_dp.examples.warlogs import fit_ops
from pymc_dp import _compat

pytestmark = pytest.mark.usefixtures("quiet_pymc")

QUIET = dict(progressbar=False, compute_convergence_checks=False)
SMALL = dict(draws=100, tune=100, chains=2, cores=1, **QUIET)
A0 = 0.2  # truncation of the Bernoulli p: Δ = ln 4


# --------------------------------------------------------------------------- records


@pytest.fixture(scope="module")
def binary():
    """Random 0/1 records (N = 45; 22 ones: a distinctive count, neither small nor round)."""
    return np.random.default_rng(101).integers(0, 2, 45)


@pytest.fixture(scope="module")
def normal():
    """Many-digit float records inside the declared bounds (-5, 12) (N = 50)."""
    return np.clip(np.random.default_rng(102).normal(3.0, 1.7, 50), -4.9, 11.9)


@pytest.fixture(scope="module")
def records(binary, normal):
    return {"yb": binary, "yn": normal}


def two_observed(binary, normal) -> pm.Model:
    with pm.Model() as model:
        p = pm.Beta("p", 1, 1)
        pm.Bernoulli("yb", p=p, observed=binary)
        mu = pm.Normal("mu", 0.0, 10.0)
        sigma = pm.HalfNormal("sigma", 5.0)
        pm.Normal("yn", mu, sigma, observed=normal)
    return model


def beta_bernoulli(records) -> pm.Model:
    with pm.Model() as model:
        p = pm.Beta("p", 1, 1)
        pm.Bernoulli("y", p, observed=records)
    return model


@pytest.fixture(scope="module")
def raw_trace(binary, normal):
    """An ordinary pm.sample trace with two Deterministics of the data."""
    with two_observed(binary, normal) as model:
        pm.Deterministic("total_b", pm.math.constant(float(binary.sum())) + 0.0 * model["p"])
        pm.Deterministic("total_n", pm.math.constant(float(normal.sum())) + 0.0 * model["mu"])
        return pm.sample(50, tune=50, chains=2, cores=1, random_seed=1, **QUIET)


@pytest.fixture(scope="module")
def laplace_trace(binary, normal):
    with two_observed(binary, normal):
        return pmdp.sample(epsilon=1.0, bounds={"yn": {"x": (-5.0, 12.0)}}, random_seed=2, **SMALL)


def kinds_at(report: LeakReport) -> set[tuple[str, str]]:
    return {(leak.kind, leak.where) for leak in report.leaks}


def assert_clean(report: LeakReport) -> None:
    assert report.scanned > 0
    assert report.clean, str(report)


# --------------------------------------------------------------------------- positive controls


def test_raw_trace_is_flagged_for_its_observed_data_and_deterministics(raw_trace, records, binary, normal):
    report = scan_for_leaks(raw_trace, records)
    found = kinds_at(report)
    assert ("group", "observed_data") in found
    assert ("value", "observed_data/yn") in found
    assert ("sequence", "observed_data/yn") in found
    assert ("sequence", "observed_data/yb") in found  # 0/1 records: the whole copy is a long run
    by_where = {leak.where: leak.detail for leak in report.by_kind("statistic")}
    assert "yb.sum" in by_where["posterior/total_b"]  # a count of 22: distinctive
    assert "yn.sum" in by_where["posterior/total_n"]
    assert not report.clean
    with pytest.raises(PrivacyLeakError, match="observed_data") as err:
        report.raise_if_leaky()
    assert isinstance(err.value, ValueError) and err.value.leaks == report.leaks
    # the report says where, never what: no record value in the text
    text = str(report)
    assert "statistic" in text and "posterior/total_n" in text
    assert repr(float(normal[0]))[:10] not in text and f"{float(normal.sum()):.6g}" not in text


def test_release_of_the_raw_trace_drops_every_leak(raw_trace, records):
    released = pmdp.release(raw_trace, var_names=["p", "mu", "sigma"])
    assert_clean(scan_for_leaks(released, records))


def test_float_records_in_a_posterior_variable_are_flagged(normal):
    rng = np.random.default_rng(3)
    draws = rng.normal(size=(2, 30))
    one = draws.copy()
    one[1, 17] = normal[5]  # a single record hidden among genuine draws
    idata = _compat.trace_from_dict({"posterior": {"mu": one, "copy": np.broadcast_to(normal, (2, 30, normal.size)).copy()}})
    report = scan_for_leaks(idata, normal)
    found = kinds_at(report)
    assert ("value", "posterior/mu") in found
    assert ("value", "posterior/copy") in found and ("sequence", "posterior/copy") in found
    assert ("sequence", "posterior/mu") not in found  # one value is not a run
    clean = _compat.trace_from_dict({"posterior": {"mu": draws}})
    assert_clean(scan_for_leaks(clean, normal))


@pytest.mark.slow  # the privacy-flag trace compiles a noise-aware Normal model (~45 s)
def test_attrs_and_json_are_searched(laplace_trace, records, binary, normal):
    leaky = _compat.with_attrs(
        laplace_trace,
        {
            **_compat.get_attrs(laplace_trace),
            "note": float(normal[7]),
            "summary": json.dumps({"stats": {"total": float(normal.sum()), "ones": int(binary.sum())}}),
            "log": f"mean was {float(normal.mean())!r} after clipping",
        },
    )
    report = scan_for_leaks(leaky, records)
    found = kinds_at(report)
    assert ("value", "attrs/note") in found
    by_where = {leak.where: leak.detail for leak in report.by_kind("statistic")}
    assert "yn.sum" in by_where["attrs/summary:stats.total"]
    assert "yb.sum" in by_where["attrs/summary:stats.ones"]
    assert "yn.mean" in by_where["attrs/log:(text)"]
    # a variable attribute and a group attribute too
    post = _compat.get_group(laplace_trace, "posterior").copy()
    post["p"].attrs["hint"] = float(normal[3])
    post.attrs["spread"] = float(normal.std(ddof=1))
    report = scan_for_leaks(_compat.with_group(laplace_trace, "posterior", post), records)
    assert ("value", "posterior/p/attrs/hint") in kinds_at(report)
    assert "yn.std_ddof1" in {lk.where: lk.detail for lk in report.leaks}["posterior/attrs/spread"]


def test_allow_suppresses_a_named_statistic(normal, binary):
    released = {"summary": json.dumps({"total": float(normal.sum()), "mean": float(normal.mean())})}
    recs = {"yn": normal, "yb": binary}
    assert {lk.detail for lk in scan_for_leaks(released, recs).leaks} == {
        "equals the exact statistic yn.sum",
        "equals the exact statistic yn.mean",
    }
    report = scan_for_leaks(released, recs, allow="yn.sum")
    assert [lk.detail for lk in report.leaks] == ["equals the exact statistic yn.mean"]
    assert "yn.sum" not in report.statistics and "yn.mean" in report.statistics
    assert_clean(scan_for_leaks(released, recs, allow=("sum", "mean")))
    assert_clean(scan_for_leaks(released, recs, statistics=False))
    with pytest.raises(ValueError, match="allow"):
        scan_for_leaks(released, recs, allow="yn.summ")


def test_integer_records_hidden_in_a_coordinate_are_flagged():
    counts = np.random.default_rng(4).poisson(4.0, 60)
    idata = _compat.trace_from_dict({"posterior": {"lam": np.random.default_rng(5).gamma(4.0, size=(2, 40))}})
    post = _compat.get_group(idata, "posterior")
    hidden = post.assign_coords(site=("site", counts[12:32]))
    hidden = hidden.assign(w=(("chain", "draw", "site"), np.zeros((2, 40, 20))))
    report = scan_for_leaks(_compat.with_group(idata, "posterior", hidden), counts, statistics=False)
    assert [(lk.kind, lk.where) for lk in report.leaks] == [("sequence", "posterior/coords/site")]
    # Poisson(4) records have ~10 distinct values: runs of 11 are needed (8 could be chance)
    assert "run(s) of 11 consecutive records along 'site' (e.g. records 12..22 at position 0)" in report.leaks[0].detail
    # the same coordinate with the run broken up is not a leak
    shuffled = post.assign_coords(site=("site", np.random.default_rng(6).permutation(counts[12:32])))
    assert_clean(scan_for_leaks(_compat.with_group(idata, "posterior", shuffled), counts, statistics=False))


def test_binary_records_copied_into_a_variable_are_flagged_and_short_runs_are_not(binary):
    copy = _compat.trace_from_dict({"posterior": {"flags": np.broadcast_to(binary.astype(bool), (2, 10, binary.size)).copy()}})
    report = scan_for_leaks(copy, binary, statistics=False)
    assert [(lk.kind, lk.where) for lk in report.leaks] == [("sequence", "posterior/flags")]
    # 8 random bits match somewhere by chance: a short piece of 0/1 records is no evidence
    short = _compat.trace_from_dict({"posterior": {"flags": np.broadcast_to(binary[:8], (2, 10, 8)).copy()}})
    assert_clean(scan_for_leaks(short, binary, statistics=False))


def test_statistic_rule_constant_across_draws_coordinates_and_trivial_values(normal, binary):
    rng = np.random.default_rng(7)
    mean = float(normal.mean())
    varying = rng.normal(size=(2, 25))
    varying[0, 3] = mean  # a draw that happens to equal the mean is not looked at
    const = np.full((2, 25), float(normal.var()))
    idata = _compat.trace_from_dict({
        "posterior": {"a": varying, "b": const},
        "sample_stats": {"ok": np.full((2, 25), 0.5)},  # 0.5: a setting, not a statistic
    })
    post = _compat.get_group(idata, "posterior").assign_coords(k=("k", [float(normal.max()), 2.0]))
    post = post.assign(c=(("chain", "draw", "k"), rng.normal(size=(2, 25, 2))))
    idata = _compat.with_group(idata, "posterior", post)
    report = scan_for_leaks(idata, {"yn": normal, "yb": binary})
    found = kinds_at(report)
    assert "yn.var" in {lk.where: lk.detail for lk in report.by_kind("statistic")}["posterior/b"]
    assert ("value", "posterior/coords/k") in found  # the max is a record value (and the statistic yn.max)
    assert ("statistic", "posterior/coords/k") in found
    assert not {where for _, where in found} & {"posterior/a", "posterior/c", "sample_stats/ok"}
    # trivial values (0, 1, N) and small integers are never statistics
    names = " = ".join(report.statistics).split(" = ")
    assert "yn.min" in names and "yb.sum" in names and "yb.count[0]" in names  # 22 and 23 of 45
    assert not {"yb.min", "yb.max"} & set(names)  # 0 and 1
    # settings-like values are not looked for: small or round integers, short decimals,
    # and the length of any dimension of the release (23 draws here)
    few = _compat.trace_from_dict({"posterior": {"m": rng.normal(size=(2, 23))}})

    def looked_for(ones: int, zeros: int) -> set[str]:
        x = np.r_[np.ones(ones), np.zeros(zeros)]
        return set(" = ".join(scan_for_leaks(few, {"x": x}).statistics).split(" = "))

    assert "x.sum" not in looked_for(8, 37)  # 8 <= 10
    assert "x.sum" not in looked_for(30, 17)  # round
    assert "x.sum" not in looked_for(23, 21)  # the number of draws
    assert "x.sum" in looked_for(22, 23) and "x.count[0]" not in looked_for(22, 23)  # 23 zeros: draws again
    assert {"x.sum", "x.count[0]"} <= looked_for(22, 22) and not {"x.mean", "x.var", "x.std"} & looked_for(22, 22)


def test_datatree_is_walked_through_compat(normal):
    posterior = xr.Dataset({"mu": (("chain", "draw"), np.random.default_rng(8).normal(size=(2, 20)))})
    observed = xr.Dataset({"y": ("obs", normal)})
    tree = xr.DataTree.from_dict({"posterior": posterior, "observed_data": observed})
    tree.attrs = {"ledger": json.dumps({"details": {"clipped_sum": float(normal.sum())}})}
    report = scan_for_leaks(tree, normal)
    found = kinds_at(report)
    assert ("group", "observed_data") in found and ("value", "observed_data/y") in found
    assert ("statistic", "attrs/ledger:details.clipped_sum") in found
    assert_clean(scan_for_leaks(xr.DataTree.from_dict({"posterior": posterior}), normal))


def test_generic_objects_are_walked(binary, normal):
    labels = np.random.default_rng(9).integers(0, 3, 45)
    counts = np.bincount(labels, minlength=3).astype(float)
    leaky = pmdp.PosteriorRelease(alpha=counts, entry=None)  # the exact counts, no mechanism
    report = scan_for_leaks(leaky, labels)
    assert report.by_kind("statistic") and report.by_kind("statistic")[0].where == "alpha"
    nested = {"fit": [{"result": {"observed_data": {"y": normal}}}], "note": "ok"}
    found = kinds_at(scan_for_leaks(nested, normal))
    assert ("group", "fit[0]/result/observed_data") in found and ("value", "fit[0]/result/observed_data/y") in found
    with two_observed(binary, normal) as model:
        pass
    assert ("group", "model") in kinds_at(scan_for_leaks({"model": model}, normal))


# --------------------------------------------------------------------------- bad input and the report


@pytest.mark.parametrize(
    "records, error, match",
    [
        (np.array([]), ValueError, "records is empty"),
        ({}, ValueError, "records is an empty mapping"),
        ({"y": []}, ValueError, r"records\['y'\] is empty"),
        (np.array([np.nan, np.nan]), ValueError, "no complete record"),  # NaN marks a missing value
        (np.array([0.5, np.inf]), ValueError, "infinite"),
        (np.float64(2.5), ValueError, "scalar"),
        ("0.5, 0.7", TypeError, "records"),
        (np.array(["a", "b"]), TypeError, "records must hold numbers"),
        (None, TypeError, "records"),
    ],
)
def test_bad_records_are_refused_naming_the_argument(records, error, match):
    with pytest.raises(error, match=match):
        scan_for_leaks({"x": 1.5}, records)


@pytest.mark.parametrize("released", [None, 3.0, "trace.nc", b"x", len, int])
def test_bad_released_is_refused(released):
    with pytest.raises(TypeError, match="released"):
        scan_for_leaks(released, np.array([0.5, 1.5]))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(min_run=1), "min_run"),
        (dict(min_run=2.5), "min_run"),
        (dict(rtol=-1e-9), "rtol"),
        (dict(rtol=0.1), "rtol"),
        (dict(statistics="yes"), "statistics"),
        (dict(statistics=0.0), "statistics"),
        (dict(allow="nope"), "allow"),
    ],
)
def test_bad_options_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        scan_for_leaks({"x": 1.5}, np.array([0.25, 1.75, 2.125]), **kwargs)


def test_report_has_no_truth_value_and_is_frozen():
    report = LeakReport((Leak("group", "observed_data", "raw data"),), scanned=3)
    with pytest.raises(TypeError, match="report.clean"):
        bool(report)
    assert not report.clean and LeakReport().clean
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.leaks = ()  # type: ignore[misc]
    text = str(report)
    assert "kind" in text and "where" in text and "observed_data" in text and "1 LEAK" in text
    assert "clean" in str(LeakReport(scanned=2))
    LeakReport(scanned=2).raise_if_leaky()
    with pytest.raises(ValueError, match="kind"):
        report.by_kind("values")


def test_a_4_by_1000_trace_scans_in_well_under_a_second():
    rng = np.random.default_rng(10)
    idata = _compat.trace_from_dict({
        "posterior": {"mu": rng.normal(size=(4, 1000)), "sigma": rng.gamma(2.0, size=(4, 1000)),
                      "beta": rng.normal(size=(4, 1000, 5)), "z": rng.integers(0, 2, size=(4, 1000, 50))},
        "sample_stats": {"lp": rng.normal(size=(4, 1000)), "diverging": np.zeros((4, 1000), bool),
                         "tree_depth": rng.integers(1, 4, (4, 1000)), "step_size": np.repeat(rng.random((4, 1)), 1000, 1)},
    })
    recs = {"y": rng.normal(size=1000), "b": rng.integers(0, 2, 1000), "X": rng.normal(size=(1000, 3))}
    best = np.inf
    for _ in range(2):
        start = time.perf_counter()
        report = scan_for_leaks(idata, recs)
        best = min(best, time.perf_counter() - start)
    assert_clean(report)
    assert best < 1.0, f"scan took {best:.2f} s"


# --------------------------------------------------------------------------- negative controls: every route


@pytest.mark.slow  # the privacy-flag trace compiles a noise-aware Normal model (~45 s)
def test_laplace_privacy_flag_release_is_clean_also_after_netcdf(laplace_trace, records, tmp_path):
    assert_clean(scan_for_leaks(laplace_trace, records))
    path = tmp_path / "released.nc"
    laplace_trace.to_netcdf(str(path))
    reloaded = az.from_netcdf(str(path))
    report = scan_for_leaks(reloaded, records)
    assert_clean(report)
    assert len(report.statistics) > 5 and report.scanned >= scan_for_leaks(laplace_trace, records).scanned - 5


def test_privatize_and_observe_stats_release_is_clean(binary, normal, records):
    bern = pmdp.privatize(binary, "bernoulli", 0.5)
    norm = pmdp.privatize(normal, "normal", 0.5, bounds={"x": (-5.0, 12.0)})
    with pm.Model():
        p = pm.Beta("p", 1, 1)
        pmdp.observe_stats("yb", pm.Bernoulli.dist(p=p), bern)
        mu = pm.Normal("mu", 0.0, 10.0)
        sigma = pm.HalfNormal("sigma", 5.0)
        pmdp.observe_stats("yn", pm.Normal.dist(mu, sigma), norm)
        idata = pmdp.sample(random_seed=3, **SMALL)
    assert_clean(scan_for_leaks(idata, records))


def test_ops_release_is_clean(binary):
    with beta_bernoulli(binary):
        idata = pmdp.sample(100, epsilon=1.0, method="ops", truncate={"p": (A0, 1 - A0)}, tune=100, chains=2,
                            cores=1, random_seed=4, **QUIET)
    assert_clean(scan_for_leaks(idata, binary))


def test_gibbs_release_is_clean_with_private_gibbs(binary):
    with pmdp.truncate(beta_bernoulli(binary), {"p": (A0, 1 - A0)}):
        idata = pmdp.sample(100, method="gibbs", temperature=4.0, tune=20, chains=2, cores=1, random_seed=5, **QUIET)
    assert pmdp.ledger(idata).entries[0].mechanism == "private_gibbs"
    assert_clean(scan_for_leaks(idata, binary))


def test_gibbs_release_is_clean_with_barker_steps(normal):
    x = np.clip(normal - 3.0, -4.9, 4.9)  # inside the bounds: nothing is clipped
    with pm.Model():
        mu = pm.Truncated("mu", pm.Laplace.dist(0.0, 2.0), lower=-4, upper=4)
        pm.Normal("x", mu, 1.0, observed=x)
        idata = pmdp.sample(100, method="gibbs", temperature=50.0, bounds={"x": {"x": (-5, 5)}}, tune=20, chains=2,
                            cores=1, random_seed=6, **QUIET)
    assert pmdp.ledger(idata).entries[0].mechanism == "private_barker"
    assert_clean(scan_for_leaks(idata, x))


@pytest.mark.parametrize("mechanism", ["lshist", "ehds"])
def test_release_posterior_is_clean(mechanism):
    labels = np.random.default_rng(11).integers(0, 3, 45)
    release = pmdp.release_posterior(np.bincount(labels, minlength=3), prior=[1, 1, 1], epsilon=1.0,
                                     mechanism=mechanism)
    # The release IS a noisy version of the counts: an integer mechanism lands on an
    # exact count with sizeable probability, so the counts are named as released.
    assert_clean(scan_for_leaks(release, labels, allow="count"))
    assert_clean(scan_for_leaks(release, labels, statistics=False))


@pytest.fixture(scope="module")
def warlogs():
    logs = warlogs_data.generate("small", seed=0)
    counts = warlogs_data.feature_counts(logs)
    return logs, counts


def warlog_records(logs, counts) -> dict[str, np.ndarray]:
    records = {"region": logs.region, "month": logs.month, "features": logs.features}
    records.update({f"counts_{name}": c for name, c in zip(warlogs_data.FEATURES, counts)})
    return records


def test_warlogs_ops_release_is_clean(warlogs):
    logs, counts = warlogs
    released = fit_ops(counts, 2, 1.0, ledger=PrivacyLedger(budget=Budget(epsilon=2.0)), draws=3, tune=2, chains=2,
                       random_seed=3)
    assert_clean(scan_for_leaks(released, warlog_records(logs, counts)))


def test_warlogs_demo_release_is_clean(tmp_path):
    from pymc_dp.examples.warlogs.demo import run_demo

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run_demo(tmp_path, preset="small", epsilon=5.0, num_states=3, iterations=4, seed=1, progressbar=False,
                 verbose=False)
    logs = warlogs_data.generate("small", seed=1)  # the demo's data: seed 1
    released = az.from_netcdf(str(tmp_path / "trace.nc"))
    assert_clean(scan_for_leaks(released, warlog_records(logs, warlogs_data.feature_counts(logs))))


# --------------------------------------------------------------------------- shapes, folders (audit classes 1 and 3)


def test_scanner_flags_imputed_missing_values_and_data_dependent_lengths():
    """PyMC's imputation of missing records in a trace is found by name and by its length."""
    y = np.random.default_rng(7).normal(2.0, 1.0, 40)
    y[[3, 11, 17]] = np.nan
    posterior = xr.Dataset(
        {
            "mu": (("chain", "draw"), np.random.default_rng(1).normal(size=(2, 50))),
            "y_unobserved": (("chain", "draw", "y_unobserved_dim_0"), np.zeros((2, 50, 3))),
            "renamed": (("chain", "draw", "k"), np.zeros((2, 50, 3))),
        }
    )
    report = scan_for_leaks(_compat.new_trace({"posterior": posterior}), y)
    shapes = {lk.where for lk in report.leaks if lk.kind == "shape"}
    assert "posterior/y_unobserved" in shapes
    assert "posterior/renamed:k" in shapes  # same length as the number missing, whatever its name
    assert any("missing entries" in lk.detail for lk in report.leaks)
    # No missing values, replace neighbouring: a length-40 dimension is public N, not a leak.
    full = np.random.default_rng(7).normal(2.0, 1.0, 40)
    per_record = xr.Dataset({"z": (("chain", "draw", "obs"), np.zeros((2, 50, 40)))})
    assert scan_for_leaks(_compat.new_trace({"posterior": per_record}), full).clean
    # Under add_remove N is private: the same dimension is a leak.
    flagged = scan_for_leaks(_compat.new_trace({"posterior": per_record}), full, neighbouring="add_remove")
    assert [lk.kind for lk in flagged.leaks] == ["shape"]


@pytest.fixture(scope="module")
def report_records():
    logs = warlogs_data.generate("small", seed=4)  # median 26 records per region-month: a distinctive integer
    frame = logs.to_frame()
    cells = {"region-month": (frame["region"].to_numpy(), frame["month"].to_numpy())}
    records = {f: frame[f].to_numpy() for f in warlogs_data.FEATURES}
    per_cell = logs.records_per_cell()
    return logs, records, cells, per_cell


def test_folder_scan_finds_the_exact_record_count_and_the_median_per_cell(report_records, tmp_path):
    """The report an audit found: exact N and the median per region-month, printed as plain integers."""
    logs, records, cells, per_cell = report_records
    (tmp_path / "summary.txt").write_text(
        f"records            {logs.num_records:,} in {len(logs.regions)} regions x 72 months\n"
        f"median per region-month: {np.median(per_cell):.3f}\n"
    )
    (tmp_path / "figure.png").write_bytes(b"\x89PNG not read")
    report = pmdp.audit.scan_folder(
        tmp_path, records, groups=cells, public=(len(logs.regions), 72), neighbouring="add_remove"
    )
    found = {lk.where: lk.detail for lk in report.leaks}
    assert set(found) == {"summary.txt:1", "summary.txt:2"}
    assert ".n" in found["summary.txt:1"] and "region-month.count.median" in found["summary.txt:2"]
    assert report.files == ("summary.txt",) and report.skipped == ("figure.png",)
    # Noisy, rounded sizes (what the demo prints now) are clean; so is a two-digit number,
    # which a report's ESS or draw counts match by chance too often to be evidence.
    (tmp_path / "summary.txt").write_text(
        f"records            about 6,800 (noisy), median about 31 per region-month; ess {np.median(per_cell):.0f}\n"
    )
    assert pmdp.audit.scan_folder(tmp_path, records, groups=cells, neighbouring="add_remove").clean


def test_folder_scan_reads_traces_and_json_and_names_the_file(report_records, tmp_path):
    logs, records, cells, _ = report_records
    leaky = xr.Dataset({"casualties": (("row",), records["civilian_casualty"].astype(float))})
    _compat.save(_compat.new_trace({"posterior_predictive": leaky}), tmp_path / "trace.nc")
    (tmp_path / "stats.json").write_text(json.dumps({"total": int(records["friendly_casualty"].sum()) + 0}))
    report = pmdp.audit.scan_folder(tmp_path, records)
    places = {lk.where.split("/")[0].split(":")[0] for lk in report.leaks}
    assert places == {"trace.nc", "stats.json"}, str(report)


def test_cli_audit_scan_exits_nonzero_on_a_leaky_folder(report_records, tmp_path):
    import subprocess
    import sys

    logs, records, _, _ = report_records
    logs.to_frame().to_csv(tmp_path / "records.csv", index=False)
    report_dir = tmp_path / "report"
    report_dir.mkdir()
    (report_dir / "summary.txt").write_text(f"{logs.num_records} records\n")
    cmd = [sys.executable, "-m", "pymc_dp.cli", "audit", "--scan", str(report_dir), "--records",
           str(tmp_path / "records.csv"), "--group", "region", "month", "--neighbouring", "add_remove"]
    leaky = subprocess.run(cmd, capture_output=True, text=True)
    assert leaky.returncode == 1 and "summary.txt:1" in leaky.stdout
    (report_dir / "summary.txt").write_text("about 7,000 records\n")
    clean = subprocess.run(cmd, capture_output=True, text=True)
    assert clean.returncode == 0, clean.stdout + clean.stderr


def test_folder_scan_reads_csv_columns_notebooks_and_untyped_text(report_records, tmp_path):
    logs, records, cells, per_cell = report_records
    # Exact per-region-month counts as a CSV column: small integers, found as a run.
    frame = logs.to_frame()
    counts = frame.groupby(["region", "month"], sort=True).size().to_numpy()
    (tmp_path / "cells.csv").write_text("count\n" + "\n".join(map(str, counts)) + "\n")
    (tmp_path / "notes").write_text(f"{logs.num_records} records\n")  # no extension, still text
    (tmp_path / "analysis.ipynb").write_text(json.dumps({"cells": [{"outputs": [{"text": str(logs.num_records)}]}]}))
    report = pmdp.audit.scan_folder(tmp_path, records, groups=cells, neighbouring="add_remove")
    where = {lk.where.split(":")[0].split("/")[0] for lk in report.leaks}
    assert where == {"cells.csv", "notes", "analysis.ipynb"}, str(report)
    assert report.skipped == ()


@pytest.mark.parametrize("name", ["export", "line.txt", "save.dat", "arr.npy"])
def test_folder_scan_finds_yes_no_records_laid_out_as_data_in_any_file(name, tmp_path):
    y = (np.random.default_rng(3).random(60) < 0.3).astype(int)
    write = {
        "export": lambda p: p.write_text("y\n" + "\n".join(map(str, y)) + "\n"),
        "line.txt": lambda p: p.write_text(" ".join(map(str, y)) + "\n"),
        "save.dat": lambda p: np.savetxt(p, y, fmt="%d"),
        "arr.npy": lambda p: np.save(p, y),
    }[name]
    write(tmp_path / name)
    report = pmdp.audit.scan_folder(tmp_path, y)
    assert [lk.kind for lk in report.leaks] == ["sequence"] and not report.skipped


def test_a_hex_digest_that_happens_to_spell_a_statistic_is_not_a_leak(laplace_trace, records, binary):
    # A ledger's SHA-256 digests and entry UUIDs are random hex; a run such as "37e0" in one is not 37.
    ones = int(binary.sum())
    spelled = _compat.with_attrs(laplace_trace, {
        **_compat.get_attrs(laplace_trace), "digest": (f"{ones}e0" + "a" * 64)[:64],
        "id": (f"{ones}e0" + "b" * 32)[:32], "log": f"count was {ones}e0"})
    flagged = {leak.where for leak in scan_for_leaks(spelled, records).by_kind("statistic")}
    assert "attrs/log:(text)" in flagged and not any("digest" in w or "attrs/id" in w for w in flagged)
