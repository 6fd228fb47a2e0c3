"""The continuous families of the Laplace route: normal, exponential, gamma, linear_regression.

Statistics and sensitivities against hand calculations and brute force over the
box, NumPy / pandas / Dask agreement, projection properties (hypothesis), ε → ∞
against the non-private conjugate posterior, log-likelihoods against scipy, the
noise scale, clipping and errors, and reading PyMC distributions.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats as sps

import dask.array as da
import pymc as pm
import pytensor
import pytensor.tensor as pt

from pymc_dp.accounting import PrivacyLedger
from pymc_dp.families import ClippedRecordsWarning, family_of_dist, get_family, privatize
from pymc_dp.families.exponential import Exponential
from pymc_dp.families.gamma import Gamma
from pymc_dp.families.linear_regression import LinearRegression
from pymc_dp.families.normal import Normal, moment_pair_sensitivity

RELATIONS = ("replace", "add_remove")
PROP = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ----------------------------------------------------------------------------- helpers


def exact_statistics(fam, data, bounds, neighbouring):
    """S(X) of the clipped records, the way privatize computes it (NumPy or Dask)."""
    x = fam.records(data)
    clipped, _ = fam.clip(x, fam.check_bounds(bounds))
    total = fam.record_statistics(clipped, neighbouring).sum(axis=0)
    return np.asarray(total.compute() if hasattr(total, "compute") else total, dtype=float)


def private(data, fam, bounds, neighbouring="replace", epsilon=1e9, rng=0, **kw):
    return privatize(data, fam, epsilon, bounds=bounds, neighbouring=neighbouring, rng=rng, **kw)


def regression_data(n=200, d=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, (n, d))
    beta = np.linspace(1.0, -0.5, d)
    y = X @ beta + rng.normal(0.0, 0.3, n)
    return X, y


# ----------------------------------------------------------------------------- hand calculations

X3 = np.array([1.0, -2.0, 3.0])
POS3 = np.array([0.5, 2.0, 4.0])


@pytest.mark.parametrize(
    "fam, data, bounds, neighbouring, names, values, delta",
    [
        # Σx = 2, Σx² = 14; Δ: x = 5, x′ = −½ gives 5.5 + 24.75 = 30.25 (exact maximum on [−5, 5]).
        (Normal(), X3, {"x": (-5, 5)}, "replace", ("sum", "sum_sq"), [2, 14], 30.25),
        (Normal(), X3, {"x": (-5, 5)}, "add_remove", ("sum", "sum_sq", "n"), [2, 14, 3], 5 + 25 + 1),
        (Normal(sigma=2.0), X3, {"x": (-5, 5)}, "replace", ("sum",), [2], 10),
        (Normal(sigma=2.0), X3, {"x": (-5, 4)}, "add_remove", ("sum", "n"), [2, 3], 5 + 1),
        # On [1, 3] the two coordinate ranges are attained together: (3 − 1) + (9 − 1).
        (Normal(), np.array([1.0, 2.0, 3.0]), {"x": (1, 3)}, "replace", ("sum", "sum_sq"), [6, 14], 10),
        (Exponential(), POS3, {"x": (0, 5)}, "replace", ("sum",), [6.5], 5),
        (Exponential(), POS3, {"x": (0.5, 5)}, "replace", ("sum",), [6.5], 4.5),
        (Exponential(), POS3, {"x": (0, 5)}, "add_remove", ("sum", "n"), [6.5, 3], 6),
        (Gamma(shape=2.0), POS3, {"x": (0.5, 5)}, "replace", ("sum",), [6.5], 4.5),
        (Gamma(shape=2.0), POS3, {"x": (0.5, 5)}, "add_remove", ("sum", "n"), [6.5, 3], 6),
    ],
)
def test_statistics_and_sensitivity_by_hand(fam, data, bounds, neighbouring, names, values, delta):
    assert fam.statistic_names(neighbouring) == names
    np.testing.assert_allclose(exact_statistics(fam, data, bounds, neighbouring), values, rtol=1e-12)
    assert fam.sensitivity(bounds, neighbouring) == pytest.approx(delta, rel=1e-12)
    out = private(data, fam, bounds, neighbouring)
    # what is released is the family's design: centred and weighted for a Normal with σ unknown, and for every
    # one of these families under add/remove (the count released with the centred sums)
    design = fam.release_design(fam.check_bounds(bounds), neighbouring)
    assert out.names == names and out.sensitivity == pytest.approx(design.sensitivity, rel=1e-12)
    assert out.centred == ((isinstance(fam, Normal) and fam.sigma is None) or neighbouring == "add_remove")
    if not out.centred:
        assert out.sensitivity == pytest.approx(delta, rel=1e-12)


def test_regression_statistics_and_sensitivity_by_hand():
    fam = LinearRegression(n_features=2)
    X = np.array([[1.0, 2.0], [0.0, -1.0], [3.0, 1.0]])
    y = np.array([1.0, 2.0, -1.0])
    bounds = {"x": (0.0, 3.0), "y": (-2.0, 2.0)}
    assert fam.statistic_names("replace") == ("xtx[0,0]", "xtx[0,1]", "xtx[1,1]", "xty[0]", "xty[1]", "yty")
    assert fam.statistic_names("add_remove")[-1] == "n"
    # The record (0, −1) is clipped to (0, 0) by the box x ∈ [0, 3].
    Xc = np.clip(X, 0.0, 3.0)
    want = [10, 5, 5, Xc[:, 0] @ y, Xc[:, 1] @ y, 6]
    np.testing.assert_allclose(exact_statistics(fam, fam.stack(X, y), bounds, "replace"), want)
    np.testing.assert_allclose(exact_statistics(fam, (X, y), bounds, "add_remove"), want + [3])
    # Replace: x_i² range 9 (×2), x_1x_2 range 9, x_i·y range 6 − (−6) = 12 (×2), y² range 4.
    assert fam.sensitivity(bounds, "replace") == pytest.approx(9 + 9 + 9 + 12 + 12 + 4)
    # Add/remove: |x| ≤ 3, |y| ≤ 2: 9 + 9 + 9 + 6 + 6 + 4 + 1.
    assert fam.sensitivity(bounds, "add_remove") == pytest.approx(44)
    # Per-feature bounds and a constant (intercept) column: its products with itself add nothing.
    per = {"x": ([1.0, -1.0], [1.0, 2.0]), "y": (0.0, 1.0)}
    # x₀ ≡ 1: x₀² 0, x₀x₁ range 3, x₁² range 4, x₀y range 1, x₁y range [−1, 2] → 3, y² range 1.
    assert fam.sensitivity(per, "replace") == pytest.approx(0 + 3 + 4 + 1 + 3 + 1)
    xtx, xty, yty = fam.unpack(np.array([10.0, 5, 6, -2, -1, 6]))
    np.testing.assert_array_equal(xtx, [[10, 5], [5, 6]])
    np.testing.assert_array_equal(xty, [-2, -1])
    assert yty == 6


def test_moment_pair_sensitivity_is_below_the_sum_of_ranges_when_the_box_straddles_zero():
    assert moment_pair_sensitivity(-1.0, 1.0) == pytest.approx(2.25)  # x = −1, x′ = ½
    assert moment_pair_sensitivity(-1.0, 3.0) == pytest.approx(12.25)  # x = 3, x′ = −½
    assert moment_pair_sensitivity(0.0, 2.0) == pytest.approx(2 + 4)
    assert moment_pair_sensitivity(-3.0, -1.0) == pytest.approx(2 + 8)


# ----------------------------------------------------------------------------- brute force over the box


def _max_pairwise_l1(stats):
    """max over rows i, j of ‖stats[i] − stats[j]‖₁."""
    best = 0.0
    for k in range(0, len(stats), 256):
        diff = np.abs(stats[k : k + 256, None, :] - stats[None, :, :]).sum(axis=2)
        best = max(best, float(diff.max()))
    return best


def _brute_force(fam, grid, rest, neighbouring):
    """max ‖S(X) − S(X′)‖₁ over neighbouring tiny data sets built from ``rest`` and one grid record."""
    def s_of(records):
        return fam.record_statistics(np.asarray(records, dtype=float), neighbouring).sum(axis=0)

    with_one = np.array([s_of(np.concatenate([rest, g[None]])) for g in grid])
    if neighbouring == "replace":
        return _max_pairwise_l1(with_one)
    return float(np.abs(with_one - s_of(rest)).sum(axis=1).max())


@pytest.mark.parametrize(
    "fam, lo, hi",
    [
        (Normal(), -1.0, 1.0),
        (Normal(), -1.0, 3.0),
        (Normal(), 1.0, 3.0),
        (Normal(), -4.0, -0.5),
        (Normal(sigma=1.0), -2.0, 5.0),
        (Exponential(), 0.0, 5.0),
        (Exponential(), 1.0, 5.0),
        (Gamma(shape=3.0), 0.5, 4.0),
    ],
)
@pytest.mark.parametrize("neighbouring", RELATIONS)
def test_sensitivity_is_the_true_maximum_1d(fam, lo, hi, neighbouring):
    grid = np.linspace(lo, hi, 801)
    rest = np.array([lo + (hi - lo) / 3, hi - (hi - lo) / 7])
    observed = _brute_force(fam, grid, rest, neighbouring)
    declared = fam.sensitivity({"x": (lo, hi)}, neighbouring)
    assert observed <= declared * (1 + 1e-12)
    assert observed >= 0.99 * declared


def test_sum_of_ranges_would_overstate_the_normal_sensitivity():
    """On [−1, 1] the naive (hi − lo) + max x² = 3 is never reached: the family declares the true 2.25."""
    grid = np.linspace(-1.0, 1.0, 801)
    observed = _brute_force(Normal(), grid, np.array([0.3]), "replace")
    assert observed == pytest.approx(2.25, rel=1e-4)
    assert observed < 0.8 * 3.0


@pytest.mark.parametrize("neighbouring", RELATIONS)
@pytest.mark.parametrize(
    "bounds",
    [
        {"x": ([0.5, 0.0], [2.0, 1.0]), "y": (1.0, 3.0)},
        {"x": ([-2.0, 0.5], [-0.5, 1.5]), "y": (-3.0, 0.0)},  # each interval on one side of 0
    ],
)
def test_regression_sensitivity_is_attained_on_a_one_signed_box(bounds, neighbouring):
    fam = LinearRegression(n_features=2)
    lo, hi = fam.box(bounds)
    grid = np.array(list(itertools.product(*[np.linspace(a, b, 7) for a, b in zip(lo, hi)])))
    rest = (lo + hi) / 2 + np.array([[0.0], [0.1]]) * (hi - lo)
    observed = _brute_force(fam, grid, rest, neighbouring)
    declared = fam.sensitivity(bounds, neighbouring)
    assert observed <= declared * (1 + 1e-12)
    assert observed >= 0.99 * declared


def test_regression_sensitivity_bounds_a_box_that_straddles_zero():
    fam = LinearRegression(n_features=2)
    bounds = {"x": (-1.0, 2.0), "y": (-2.0, 1.0)}
    lo, hi = fam.box(bounds)
    grid = np.array(list(itertools.product(*[np.linspace(a, b, 13) for a, b in zip(lo, hi)])))
    rest = np.array([[0.3, -0.2, 0.1]])
    # Replace: an upper bound (the sum of the coordinate ranges is not attained jointly here).
    assert _brute_force(fam, grid, rest, "replace") <= fam.sensitivity(bounds, "replace") * (1 + 1e-12)
    random_pairs = np.random.default_rng(0).uniform(lo, hi, (20000, 2, 3))
    s = [fam.record_statistics(random_pairs[:, k], "replace") for k in (0, 1)]
    assert np.abs(s[0] - s[1]).sum(axis=1).max() <= fam.sensitivity(bounds, "replace")
    # Add/remove: exact, attained at the corner of largest magnitudes.
    observed = _brute_force(fam, grid, rest, "add_remove")
    assert fam.sensitivity(bounds, "add_remove") * 0.99 <= observed <= fam.sensitivity(bounds, "add_remove")


# ----------------------------------------------------------------------------- NumPy, pandas, Dask

ONE_D_CASES = [
    ("normal", {"sigma": None}, {"x": (-6.0, 8.0)}, lambda r: r.normal(1.0, 3.0, 1000)),
    ("normal", {"sigma": 3.0}, {"x": (-6.0, 8.0)}, lambda r: r.normal(1.0, 3.0, 1000)),
    ("exponential", {}, {"x": (0.0, 4.0)}, lambda r: r.exponential(1.0, 1000)),
    ("gamma", {"shape": 2.0}, {"x": (0.2, 6.0)}, lambda r: r.gamma(2.0, 1.0, 1000)),
]


@pytest.mark.parametrize("name, args, bounds, draw", ONE_D_CASES)
@pytest.mark.parametrize("neighbouring", RELATIONS)
def test_numpy_pandas_dask_agree(name, args, bounds, draw, neighbouring):
    x = draw(np.random.default_rng(1))
    fam = get_family(name, **args)
    ref = exact_statistics(fam, x, bounds, neighbouring)
    lazy = fam.record_statistics(fam.clip(da.from_array(x, chunks=137), bounds)[0], neighbouring).sum(axis=0)
    assert isinstance(lazy, da.Array)
    np.testing.assert_allclose(lazy.compute(), ref, rtol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClippedRecordsWarning)
        outs = [
            privatize(data, name, 1.0, bounds=bounds, neighbouring=neighbouring, rng=11, **args)
            for data in (x, pd.Series(x), da.from_array(x, chunks=137))
        ]
    for out in outs[1:]:
        np.testing.assert_allclose(out.noisy, outs[0].noisy, rtol=1e-12)
        np.testing.assert_allclose(out.values, outs[0].values, rtol=1e-12)
        assert out.n == pytest.approx(outs[0].n)


@pytest.mark.parametrize("neighbouring", RELATIONS)
def test_regression_numpy_pandas_dask_agree(neighbouring):
    X, y = regression_data(n=600, d=3)
    fam = LinearRegression(n_features=3)
    bounds = {"x": (-1.0, 1.0), "y": (-3.0, 3.0)}
    rec = fam.stack(X, y)
    ref = exact_statistics(fam, rec, bounds, neighbouring)
    np.testing.assert_allclose(ref[:6], (X.T @ X)[np.triu_indices(3)], rtol=1e-12)
    np.testing.assert_allclose(ref[6:9], X.T @ y, rtol=1e-12)
    assert ref[9] == pytest.approx(y @ y, rel=1e-12)
    frame = pd.DataFrame(rec, columns=["a", "b", "c", "y"])
    lazy = fam.stack(da.from_array(X, chunks=(101, 3)), da.from_array(y, chunks=101))
    assert isinstance(lazy, da.Array)
    np.testing.assert_allclose(exact_statistics(fam, lazy, bounds, neighbouring), ref, rtol=1e-12)
    outs = [
        privatize(data, "linear_regression", 1.0, bounds=bounds, neighbouring=neighbouring, rng=5, n_features=3)
        for data in (rec, frame, lazy)
    ]
    for out in outs[1:]:
        np.testing.assert_allclose(out.noisy, outs[0].noisy, rtol=1e-12)
        np.testing.assert_allclose(out.values, outs[0].values, rtol=1e-12)


def test_regression_records_format():
    fam = LinearRegression(n_features=2)
    X, y = regression_data(n=5, d=2)
    np.testing.assert_array_equal(fam.records((X, y)), np.column_stack([X, y]))
    np.testing.assert_array_equal(LinearRegression(n_features=1).records((X[:, 0], y)), np.column_stack([X[:, 0], y]))
    with pytest.raises(ValueError, match="3 columns"):
        fam.records(X)
    with pytest.raises(ValueError, match="same number of records"):
        fam.stack(X, y[:4])


# ----------------------------------------------------------------------------- projection




@PROP
@given(
    lo=st.floats(-50, 50),
    width=st.floats(0.01, 100),
    n=st.integers(1, 500),
    noisy=st.lists(st.floats(-1e6, 1e6), min_size=3, max_size=3),
    known=st.booleans(),
    neighbouring=st.sampled_from(RELATIONS),
)
def test_normal_projection_is_valid_and_idempotent(lo, width, n, noisy, known, neighbouring):
    fam = Normal(sigma=1.5 if known else None)
    hi = lo + width
    bounds = {"x": (lo, hi)}
    k = len(fam.statistic_names(neighbouring))
    v = np.array(noisy[:k])
    out = fam.project(v, n, bounds, neighbouring)
    count = fam.n_from_statistics(out, neighbouring) if neighbouring == "add_remove" else n
    assert count >= 1
    scale = count * max(lo * lo, hi * hi, 1.0)
    tol = 1e-9 * scale
    assert count * lo - tol <= out[0] <= count * hi + tol
    if not known:
        mean, second = out[0] / count, out[1] / count
        assert second - mean * mean >= -tol / count  # variance ≥ 0
        assert out[1] <= (lo + hi) * out[0] - count * lo * hi + tol  # consistent with the box
    np.testing.assert_allclose(fam.project(out, n, bounds, neighbouring), out, rtol=1e-12, atol=tol)


@PROP
@given(
    lo=st.floats(-50, 50),
    width=st.floats(0.01, 100),
    n=st.integers(1, 300),
    seed=st.integers(0, 2**31),
    known=st.booleans(),
    neighbouring=st.sampled_from(RELATIONS),
)
def test_normal_projection_keeps_valid_statistics(lo, width, n, seed, known, neighbouring):
    fam = Normal(sigma=1.0 if known else None)
    bounds = {"x": (lo, lo + width)}
    x = np.random.default_rng(seed).uniform(lo, lo + width, n)
    exact = exact_statistics(fam, x, bounds, neighbouring)
    scale = n * max(lo * lo, (lo + width) ** 2, 1.0)
    np.testing.assert_allclose(fam.project(exact, n, bounds, neighbouring), exact, rtol=1e-9, atol=1e-12 * scale)


@PROP
@given(
    lo=st.floats(0.0, 50),
    width=st.floats(0.01, 100),
    n=st.integers(1, 500),
    noisy=st.lists(st.floats(-1e6, 1e6), min_size=2, max_size=2),
    gamma=st.booleans(),
    neighbouring=st.sampled_from(RELATIONS),
)
def test_positive_projection_is_valid_and_idempotent(lo, width, n, noisy, gamma, neighbouring):
    fam = Gamma(shape=2.5) if gamma else Exponential()
    lo = max(lo, 1e-3) if gamma else lo
    hi = lo + width
    bounds = {"x": (lo, hi)}
    v = np.array(noisy[: len(fam.statistic_names(neighbouring))])
    out = fam.project(v, n, bounds, neighbouring)
    count = fam.n_from_statistics(out, neighbouring) if neighbouring == "add_remove" else n
    assert count >= 1
    assert count * lo * (1 - 1e-12) <= out[0] <= count * hi * (1 + 1e-12)
    np.testing.assert_array_equal(fam.project(out, n, bounds, neighbouring), out)
    x = np.random.default_rng(n).uniform(lo, hi, n)
    exact = exact_statistics(fam, x, bounds, neighbouring)
    np.testing.assert_allclose(fam.project(exact, n, bounds, neighbouring), exact, rtol=1e-12)


def _augmented(fam, values):
    xtx, xty, yty = fam.unpack(values)
    return np.block([[xtx, xty[:, None]], [xty[None, :], np.array([[yty]])]])


@PROP
@given(data=st.data(), d=st.integers(1, 3), neighbouring=st.sampled_from(RELATIONS), spread=st.sampled_from([1.0, 1e3]))
def test_regression_projection_is_valid_and_idempotent(data, d, neighbouring, spread):
    fam = LinearRegression(n_features=d)
    k = len(fam.statistic_names(neighbouring))
    noisy = np.array(data.draw(st.lists(st.floats(-spread, spread), min_size=k, max_size=k)))
    bounds = {"x": (-1.0, 1.0), "y": (-1.0, 1.0)}
    out = fam.project(noisy, 50, bounds, neighbouring)
    xtx, xty, yty = fam.unpack(out)
    scale = max(1.0, float(np.abs(out).max()))
    assert np.linalg.eigvalsh(xtx).min() >= -1e-9 * scale  # XᵀX PSD
    beta_hat = np.linalg.lstsq(xtx, xty, rcond=None)[0]
    rss = yty - 2 * beta_hat @ xty + beta_hat @ xtx @ beta_hat
    assert rss >= -1e-9 * scale  # residual sum of squares ≥ 0
    assert np.linalg.eigvalsh(_augmented(fam, out)).min() >= -1e-9 * scale
    if neighbouring == "add_remove":
        assert fam.n_from_statistics(out, neighbouring) >= 1
    np.testing.assert_allclose(fam.project(out, 50, bounds, neighbouring), out, rtol=1e-6, atol=1e-9 * scale)


@PROP
@given(n=st.integers(1, 60), d=st.integers(1, 3), seed=st.integers(0, 2**31), neighbouring=st.sampled_from(RELATIONS))
def test_regression_projection_keeps_valid_statistics(n, d, seed, neighbouring):
    fam = LinearRegression(n_features=d)
    bounds = {"x": (-2.0, 3.0), "y": (-5.0, 5.0)}
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2.0, 3.0, (n, d))
    y = np.clip(X.sum(axis=1) + rng.normal(0, 1, n), -5, 5)
    exact = exact_statistics(fam, fam.stack(X, y), bounds, neighbouring)
    scale = float(np.abs(exact).max())
    np.testing.assert_allclose(fam.project(exact, n, bounds, neighbouring), exact, rtol=1e-7, atol=1e-9 * scale)


def test_regression_projection_repairs_an_indefinite_matrix():
    fam = LinearRegression(n_features=2)
    # XᵀX = [[1, 3], [3, 1]] has eigenvalue −2; yᵀy < 0.
    out = fam.project(np.array([1.0, 3.0, 1.0, 2.0, 2.0, -5.0]), 10, {"x": (-1, 1), "y": (-1, 1)}, "replace")
    xtx, xty, yty = fam.unpack(out)
    np.testing.assert_allclose(xtx, [[2, 2], [2, 2]], atol=1e-12)  # eigenvalue −2 clipped to 0
    np.testing.assert_allclose(xty, [2, 2], atol=1e-12)  # already in the range of XᵀX
    assert yty == pytest.approx(xty @ np.linalg.pinv(xtx) @ xty)  # RSS exactly 0, not negative
    # A component of Xᵀy outside the range of XᵀX is removed.
    out = fam.project(np.array([1.0, 3.0, 1.0, 2.0, 0.0, 5.0]), 10, {"x": (-1, 1), "y": (-1, 1)}, "replace")
    np.testing.assert_allclose(fam.unpack(out)[1], [1, 1], atol=1e-12)


# ----------------------------------------------------------------------------- ε → ∞: the non-private posterior

BIG_EPS = 1e9


@pytest.mark.parametrize("neighbouring", RELATIONS)
def test_normal_private_posterior_is_exact_as_epsilon_grows(neighbouring):
    x = np.random.default_rng(2).normal(1.0, 2.0, 300)
    bounds = {"x": (-10.0, 12.0)}
    n, xbar = len(x), x.mean()
    # Known σ = 2, prior μ ~ N(0.5, 3²).
    fam = Normal(sigma=2.0)
    out = private(x, fam, bounds, neighbouring)
    post = fam.conjugate_posterior(out.values, out.n, mu0=0.5, tau0=3.0)
    prec = 1 / 9 + n / 4
    assert post["mu"] == pytest.approx((0.5 / 9 + x.sum() / 4) / prec, rel=1e-6)
    assert post["sigma"] == pytest.approx(prec**-0.5, rel=1e-6)
    # Unknown σ, NIG(mu0 = 0.5, kappa0 = 2, alpha0 = 3, beta0 = 4), in the "centred" textbook form.
    fam = Normal()
    out = private(x, fam, bounds, neighbouring)
    post = fam.conjugate_posterior(out.values, out.n, mu0=0.5, kappa0=2.0, alpha0=3.0, beta0=4.0)
    kappa = 2.0 + n
    assert post["kappa"] == pytest.approx(kappa, rel=1e-6)
    assert post["mu"] == pytest.approx((2.0 * 0.5 + n * xbar) / kappa, rel=1e-6)
    assert post["alpha"] == pytest.approx(3.0 + n / 2, rel=1e-6)
    beta = 4.0 + 0.5 * ((x - xbar) ** 2).sum() + 2.0 * n * (xbar - 0.5) ** 2 / (2 * kappa)
    assert post["beta"] == pytest.approx(beta, rel=1e-6)


@pytest.mark.parametrize("neighbouring", RELATIONS)
def test_rate_families_private_posterior_is_exact_as_epsilon_grows(neighbouring):
    rng = np.random.default_rng(3)
    x = rng.exponential(0.5, 400)
    post = Exponential().conjugate_posterior(*_vn(private(x, Exponential(), {"x": (0.0, 10.0)}, neighbouring)),
                                             alpha=2.0, beta=1.0)
    assert post == pytest.approx({"alpha": 2.0 + 400, "beta": 1.0 + x.sum()}, rel=1e-6)
    g = rng.gamma(3.0, 0.5, 400)
    fam = Gamma(shape=3.0)
    post = fam.conjugate_posterior(*_vn(private(g, fam, {"x": (0.01, 20.0)}, neighbouring)), alpha=2.0, beta=1.0)
    assert post == pytest.approx({"alpha": 2.0 + 3.0 * 400, "beta": 1.0 + g.sum()}, rel=1e-6)


def _vn(stats):
    return stats.values, stats.n


@pytest.mark.parametrize("neighbouring", RELATIONS)
def test_regression_private_posterior_is_exact_as_epsilon_grows(neighbouring):
    X, y = regression_data(n=300, d=3, seed=4)
    fam = LinearRegression(n_features=3)
    out = private(fam.stack(X, y), fam, {"x": (-1.0, 1.0), "y": (-4.0, 4.0)}, neighbouring)
    mu0, lam0 = np.array([0.1, 0.0, -0.1]), np.diag([2.0, 1.0, 0.5])
    # Known σ = 0.3.
    post = fam.conjugate_posterior(out.values, out.n, mu0=mu0, precision0=lam0, sigma=0.3)
    prec = lam0 + X.T @ X / 0.09
    np.testing.assert_allclose(post["cov"], np.linalg.inv(prec), rtol=1e-6)
    np.testing.assert_allclose(post["mean"], np.linalg.solve(prec, lam0 @ mu0 + X.T @ y / 0.09), rtol=1e-6)
    # Normal-Inverse-Gamma, checked against the residual form of beta_n.
    post = fam.conjugate_posterior(out.values, out.n, mu0=mu0, precision0=lam0, alpha0=2.0, beta0=1.0)
    prec = lam0 + X.T @ X
    mean = np.linalg.solve(prec, lam0 @ mu0 + X.T @ y)
    resid = y - X @ mean
    beta_n = 1.0 + 0.5 * (resid @ resid + (mean - mu0) @ lam0 @ (mean - mu0))
    np.testing.assert_allclose(post["mean"], mean, rtol=1e-6)
    np.testing.assert_allclose(post["precision"], prec, rtol=1e-6)
    assert post["alpha"] == pytest.approx(2.0 + 150, rel=1e-6)
    assert post["beta"] == pytest.approx(beta_n, rel=1e-6)


# ----------------------------------------------------------------------------- log-likelihoods


def _compiled(fam, values, n, names, shapes=None):
    shapes = shapes or {}
    syms = {k: (pt.vector(k) if shapes.get(k) else pt.scalar(k)) for k in names}
    params = dict(syms)
    if "beta" in shapes:
        params["beta"] = pt.specify_shape(syms["beta"], (shapes["beta"],))
    logp = fam.loglik(values, n, params)
    grads = pt.grad(logp, [syms[k] for k in names])
    return pytensor.function([syms[k] for k in names], logp, mode="FAST_COMPILE"), pytensor.function([syms[k] for k in names], grads,
        mode="FAST_COMPILE")


def _check_gradient(grad_f, f, point):
    g = grad_f(*point)
    for i, p in enumerate(point):
        h = 1e-6 * max(1.0, float(np.max(np.abs(p))))
        for j in np.ndindex(np.shape(p)):
            up = [np.array(q, dtype=float, copy=True) for q in point]
            dn = [np.array(q, dtype=float, copy=True) for q in point]
            up[i][j] += h
            dn[i][j] -= h
            fd = (f(*up) - f(*dn)) / (2 * h)
            assert np.asarray(g[i])[j] == pytest.approx(fd, rel=1e-5, abs=1e-6)


@pytest.mark.parametrize("neighbouring", RELATIONS)
def test_loglik_matches_scipy(neighbouring):
    rng = np.random.default_rng(5)
    x = rng.normal(0.7, 1.8, 150)
    bounds = {"x": (-20.0, 20.0)}
    n_arg = 150 if neighbouring == "replace" else None  # add/remove: N comes from the statistics

    fam = Normal()
    f, grad = _compiled(fam, exact_statistics(fam, x, bounds, neighbouring), n_arg, ["mu", "sigma"])
    a, b = (0.3, 1.2), (1.1, 2.5)
    ref = sps.norm.logpdf(x, *a).sum() - sps.norm.logpdf(x, *b).sum()
    assert f(*a) - f(*b) == pytest.approx(ref, rel=1e-9)
    _check_gradient(grad, f, [np.array(0.4), np.array(1.7)])

    fam = Normal(sigma=1.8)
    f, grad = _compiled(fam, exact_statistics(fam, x, bounds, neighbouring), n_arg, ["mu"])
    ref = sps.norm.logpdf(x, 0.2, 1.8).sum() - sps.norm.logpdf(x, 1.3, 1.8).sum()
    assert f(0.2) - f(1.3) == pytest.approx(ref, rel=1e-9)
    _check_gradient(grad, f, [np.array(0.9)])

    e = rng.exponential(2.0, 150)
    fam = Exponential()
    f, grad = _compiled(fam, exact_statistics(fam, e, {"x": (0.0, 100.0)}, neighbouring), n_arg, ["lam"])
    ref = sps.expon.logpdf(e, scale=1 / 0.3).sum() - sps.expon.logpdf(e, scale=1 / 0.9).sum()
    assert f(0.3) - f(0.9) == pytest.approx(ref, rel=1e-9)
    _check_gradient(grad, f, [np.array(0.6)])

    g = rng.gamma(2.5, 1 / 1.5, 150)
    fam = Gamma(shape=2.5)
    f, grad = _compiled(fam, exact_statistics(fam, g, {"x": (1e-6, 100.0)}, neighbouring), n_arg, ["beta"])
    ref = sps.gamma.logpdf(g, 2.5, scale=1 / 1.1).sum() - sps.gamma.logpdf(g, 2.5, scale=1 / 2.2).sum()
    assert f(1.1) - f(2.2) == pytest.approx(ref, rel=1e-9)
    _check_gradient(grad, f, [np.array(1.4)])

    X, y = regression_data(n=150, d=3, seed=6)
    fam = LinearRegression(n_features=3)
    vals = exact_statistics(fam, fam.stack(X, y), {"x": (-1.0, 1.0), "y": (-5.0, 5.0)}, neighbouring)
    f, grad = _compiled(fam, vals, n_arg, ["beta", "sigma"], shapes={"beta": 3})
    a = (np.array([0.9, 0.2, -0.4]), 0.35)
    b = (np.array([0.5, -0.1, 0.3]), 0.8)
    ref = sps.norm.logpdf(y, X @ a[0], a[1]).sum() - sps.norm.logpdf(y, X @ b[0], b[1]).sum()
    assert f(*a) - f(*b) == pytest.approx(ref, rel=1e-9)
    _check_gradient(grad, f, [np.array([0.7, 0.1, -0.2]), np.array(0.5)])


def test_loglik_and_conjugate_posterior_agree_on_a_grid():
    """Posterior means from exp(loglik + log prior) on a grid equal the conjugate ones."""
    rng = np.random.default_rng(7)
    x = rng.normal(1.0, 2.0, 40)
    fam = Normal(sigma=2.0)
    vals = exact_statistics(fam, x, {"x": (-20.0, 20.0)}, "replace")
    mu = pt.vector("mu")
    grid = np.linspace(-3, 5, 20001)
    logp = pytensor.function([mu], fam.loglik(vals, 40, {"mu": mu}),
        mode="FAST_COMPILE")(grid) + sps.norm.logpdf(grid, 0.0, 1.5)
    w = np.exp(logp - logp.max())
    post = fam.conjugate_posterior(vals, 40, mu0=0.0, tau0=1.5)
    assert np.sum(w * grid) / w.sum() == pytest.approx(post["mu"], rel=1e-6)

    fam = Normal()
    vals = exact_statistics(fam, x, {"x": (-20.0, 20.0)}, "replace")
    m, s2 = np.meshgrid(np.linspace(-2, 4, 601), np.linspace(0.5, 15.0, 801), indexing="ij")
    mus, sig = pt.matrix("m"), pt.matrix("s")
    ll = pytensor.function([mus, sig], fam.loglik(vals, 40, {"mu": mus, "sigma": sig}),
        mode="FAST_COMPILE")(m, np.sqrt(s2))
    lp = ll + sps.invgamma.logpdf(s2, 3.0, scale=4.0) + sps.norm.logpdf(m, 0.5, np.sqrt(s2 / 2.0))
    w = np.exp(lp - lp.max())
    post = fam.conjugate_posterior(vals, 40, mu0=0.5, kappa0=2.0, alpha0=3.0, beta0=4.0)
    assert np.sum(w * m) / w.sum() == pytest.approx(post["mu"], rel=1e-3)
    assert np.sum(w * s2) / w.sum() == pytest.approx(post["beta"] / (post["alpha"] - 1), rel=1e-3)

    e = rng.exponential(0.5, 60)
    for fam, data, key in ((Exponential(), e, "lam"), (Gamma(shape=2.0), e + 0.1, "beta")):
        vals = exact_statistics(fam, data, {"x": (0.05, 50.0)}, "replace")
        lam = pt.vector(key)
        grid = np.linspace(1e-3, 20, 40001)
        lp = pytensor.function([lam], fam.loglik(vals, 60, {key: lam}),
            mode="FAST_COMPILE")(grid) + sps.gamma.logpdf(grid, 2.0, scale=1.0)
        w = np.exp(lp - lp.max())
        post = fam.conjugate_posterior(vals, 60, alpha=2.0, beta=1.0)
        assert np.sum(w * grid) / w.sum() == pytest.approx(post["alpha"] / post["beta"], rel=1e-6)


def test_regression_loglik_samples_with_nuts():
    X, y = regression_data(n=200, d=2, seed=8)
    fam = LinearRegression(n_features=2)
    out = private(fam.stack(X, y), fam, {"x": (-1.0, 1.0), "y": (-4.0, 4.0)}, epsilon=50.0, rng=3)
    with pm.Model():
        beta = pm.Normal("beta", 0.0, 10.0, shape=2)
        sigma = pm.HalfNormal("sigma", 2.0)
        pm.Potential("lik", fam.loglik(out.values, out.n, {"beta": beta, "sigma": sigma}))
        idata = pm.sample(draws=300, tune=300, chains=1, cores=1, progressbar=False, random_seed=1,
                          compute_convergence_checks=False)
    xtx, xty, _ = fam.unpack(out.values)
    np.testing.assert_allclose(idata.posterior["beta"].mean(("chain", "draw")), np.linalg.solve(xtx, xty), atol=0.03)
    assert float(idata.posterior["sigma"].mean()) == pytest.approx(0.3, abs=0.05)


# ----------------------------------------------------------------------------- noise scale


@pytest.mark.parametrize(
    "fam, data, bounds, neighbouring",
    [
        (Normal(), np.random.default_rng(9).normal(0.0, 1.0, 50), {"x": (-3.0, 3.0)}, "replace"),
        (Normal(sigma=1.0), np.random.default_rng(9).normal(0.0, 1.0, 50), {"x": (-3.0, 3.0)}, "add_remove"),
        (Exponential(), np.random.default_rng(9).exponential(1.0, 50), {"x": (0.0, 5.0)}, "add_remove"),
        (Gamma(shape=2.0), np.random.default_rng(9).gamma(2.0, 1.0, 50), {"x": (0.1, 8.0)}, "replace"),
        (LinearRegression(n_features=2), np.column_stack(regression_data(50, 2)), {"x": (-1.0, 1.0), "y": (-3.0, 3.0)},
         "replace"),
    ],
)
def test_noise_has_scale_sensitivity_over_epsilon(fam, data, bounds, neighbouring):
    eps, reps = 0.7, 2000
    exact = exact_statistics(fam, data, bounds, neighbouring)
    rng = np.random.default_rng(2024)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClippedRecordsWarning)
        releases = [privatize(data, fam, eps, bounds=bounds, neighbouring=neighbouring, rng=rng) for _ in range(reps)]
    # the noise is on the released coordinates: the statistics themselves, or their centred, weighted form
    design = releases[0].design
    noisy = np.array([r.released for r in releases])
    scale = design.sensitivity / eps
    err = noisy - design.forward(exact, float(releases[0].n))
    se = scale / np.sqrt(reps)  # |Laplace(b)| ~ Exponential(b): mean b, sd b
    assert np.all(np.abs(np.abs(err).mean(axis=0) - scale) < 5 * se)
    assert np.all(np.abs(err.mean(axis=0)) < 5 * np.sqrt(2) * se)  # unbiased
    # Independent coordinates.
    if err.shape[1] > 1:
        assert np.abs(np.corrcoef(err.T)[np.triu_indices(err.shape[1], 1)]).max() < 5 / np.sqrt(reps)


# ----------------------------------------------------------------------------- clipping and errors


def test_clipping_is_counted_and_applied():
    x = np.array([-7.0, -1.0, 0.5, 2.0, 9.0, 12.0])
    with pytest.warns(ClippedRecordsWarning, match=r"3 of 6 record\(s\)"):
        out = private(x, Normal(), {"x": (-5.0, 8.0)})
    clipped = np.array([-5.0, -1.0, 0.5, 2.0, 8.0, 8.0])
    np.testing.assert_allclose(out.values, [clipped.sum(), (clipped**2).sum()], rtol=1e-6)
    with pytest.warns(ClippedRecordsWarning, match=r"2 of 4 record\(s\)"):
        out = private(np.array([0.0, 1.0, 3.0, 7.0]), Exponential(), {"x": (0.5, 5.0)})
    assert out.values[0] == pytest.approx(0.5 + 1 + 3 + 5, rel=1e-6)
    with pytest.warns(ClippedRecordsWarning, match=r"1 of 3 record\(s\)"):
        private(np.array([0.2, 1.0, 30.0]), Gamma(shape=1.5), {"x": (0.1, 10.0)})
    fam = LinearRegression(n_features=2)
    rec = np.array([[0.5, 0.5, 1.0], [2.0, 0.0, 0.0], [0.0, 0.0, -9.0], [0.1, 0.1, 0.1]])
    with pytest.warns(ClippedRecordsWarning, match=r"2 of 4 record\(s\)"):
        out = private(rec, fam, {"x": (-1.0, 1.0), "y": (-2.0, 2.0)})
    np.testing.assert_allclose(out.values, exact_statistics(fam, np.clip(rec, [-1, -1, -2], [1, 1, 2]), {
        "x": (-1.0, 1.0), "y": (-2.0, 2.0)}, "replace"), rtol=1e-6, atol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ClippedRecordsWarning)  # nothing outside: no warning
        private(np.array([1.0, 2.0]), Normal(), {"x": (-5.0, 8.0)})


@pytest.mark.parametrize(
    "name, args, data, bounds, key",
    [
        ("normal", {}, np.ones(3), None, "'x'"),
        ("exponential", {}, np.ones(3), {}, "'x'"),
        ("gamma", {"shape": 2.0}, np.ones(3), None, "'x'"),
        ("linear_regression", {"n_features": 1}, np.ones((3, 2)), {"x": (0, 1)}, "'y'"),
        ("linear_regression", {"n_features": 1}, np.ones((3, 2)), {"y": (0, 1)}, "'x'"),
    ],
)
def test_missing_bounds_name_the_key(name, args, data, bounds, key):
    with pytest.raises(ValueError, match=key):
        privatize(data, name, 1.0, bounds=bounds, rng=0, **args)


@pytest.mark.parametrize("relation", ["replace", "add_remove"])
@pytest.mark.parametrize(
    "name, args, data, bounds, default",
    [
        ("normal", {}, np.array([1.0, np.nan, 2.0]), {"x": (-1, 3)}, 1.0),  # the bounds' midpoint
        ("normal", {"sigma": 1.0}, np.array([1.0, np.inf]), {"x": (-1, 1)}, 0.0),
        ("exponential", {}, np.array([1.0, np.nan]), {"x": (0.5, 1)}, 0.5),  # the lower bound
        ("exponential", {}, np.array([1.0, -0.5]), {"x": (0, 1)}, 0.0),  # outside the support
        ("gamma", {"shape": 2.0}, np.array([1.0, 0.0]), {"x": (0.1, 1)}, 0.1),
        ("linear_regression", {"n_features": 2}, np.array([[1.0, np.nan, 0.0], [0, 0, 0]]),
         {"x": (0, 1), "y": (-1, 2)}, [0.5, 0.5, 0.5]),  # the box's midpoint row
    ],
)
def test_malformed_records_are_replaced_by_the_default_record_not_refused(name, args, data, bounds, default, relation):
    # A refusal would answer "is any record malformed?" for free. The malformed record is replaced by the family's
    # default record inside the bounds: the release is the neighbour's with the default in its place, at the same
    # cost, NumPy or Dask; the count goes to the curator only.
    family = get_family(name, **args)
    assert np.allclose(family.default_record(family.check_bounds(bounds)), default)
    malformed = np.asarray(family.invalid(data))
    neighbour = np.where(malformed[(...,) + (None,) * (data.ndim - 1)], np.asarray(default, dtype=float), data)
    for records in (data, da.from_array(data, chunks=1)):
        ours, theirs = PrivacyLedger(neighbouring=relation), PrivacyLedger(neighbouring=relation)
        with pytest.warns(ClippedRecordsWarning, match=r"1 of 2 record\(s\) were NaN, infinite or outside the support"
                          if len(data) == 2 else r"1 of 3 record"):
            got = privatize(records, name, 1.0, bounds=bounds, ledger=ours, neighbouring=relation, rng=0, **args)
        want = privatize(neighbour, name, 1.0, bounds=bounds, ledger=theirs, neighbouring=relation, rng=0, **args)
        assert np.array_equal(got.noisy, want.noisy)
        assert [(e.epsilon, e.touched, e.assumptions) for e in ours.entries] == [
            (e.epsilon, e.touched, e.assumptions) for e in theirs.entries]


@pytest.mark.parametrize(
    "fam, bounds",
    [
        (Normal(), {"x": (1.0, 1.0)}),
        (Normal(), {"x": (0.0, np.inf)}),
        (Exponential(), {"x": (-1.0, 1.0)}),
        (Gamma(shape=1.0), {"x": (0.0, 1.0)}),
        (LinearRegression(n_features=2), {"x": ([0, 0, 0], [1, 1, 1]), "y": (0, 1)}),
        (LinearRegression(n_features=2), {"x": (1.0, 0.0), "y": (0, 1)}),
        (LinearRegression(n_features=2), {"x": (0.0, 1.0), "y": (1, 1)}),
        (Normal(), {"x": (0.0, 1.0), "y": (0, 1)}),
    ],
)
def test_bad_bounds_are_refused(fam, bounds):
    with pytest.raises(ValueError, match="bounds"):
        fam.check_bounds(bounds)


def test_family_arguments_are_checked():
    for bad in (0.0, -1.0, np.inf, "2", True):
        with pytest.raises(ValueError, match="sigma"):
            Normal(sigma=bad)
    with pytest.raises(ValueError, match="shape"):
        Gamma()
    with pytest.raises(ValueError, match="shape"):
        Gamma(shape=-2.0)
    with pytest.raises(ValueError, match="n_features"):
        LinearRegression()
    with pytest.raises(ValueError, match="n_features"):
        LinearRegression(n_features=1.5)
    with pytest.raises(ValueError, match="takes only"):
        get_family("normal", mu=1.0)
    with pytest.raises(ValueError, match="takes no arguments"):
        get_family("exponential", rate=1.0)
    assert get_family("normal", sigma=2).family_args() == {"sigma": 2.0}
    assert Normal(sigma=2) == Normal(sigma=2.0) != Normal()
    assert get_family("gamma", shape=3).family_args() == {"shape": 3.0}
    assert get_family("linear_regression", n_features=4).family_args() == {"n_features": 4}


# ----------------------------------------------------------------------------- PyMC distributions


def test_normal_from_dist():
    m, s = pt.scalar("m"), pt.scalar("s")
    fam, params = family_of_dist(pm.Normal.dist(mu=m, sigma=s))
    assert fam == Normal()
    assert params["mu"].eval({m: 1.5}, mode="FAST_COMPILE") == pytest.approx(1.5)
    assert params["sigma"].eval({s: 0.7}, mode="FAST_COMPILE") == pytest.approx(0.7)
    fam, params = Normal.from_dist(pm.Normal.dist(mu=m, sigma=2.5))
    assert fam == Normal(sigma=2.5)
    assert params["mu"].eval({m: -0.5}, mode="FAST_COMPILE") == pytest.approx(-0.5)
    assert params["sigma"].eval(mode="FAST_COMPILE") == pytest.approx(2.5)
    with pm.Model():
        mu = pm.Normal("mu")
        sigma = pm.HalfNormal("sigma")
        fam, params = Normal.from_dist(pm.Normal.dist(mu=mu, sigma=sigma))
    assert fam == Normal() and params["mu"] is mu and params["sigma"] is sigma
    # A constant σ given as an expression of constants is still known.
    assert Normal.from_dist(pm.Normal.dist(mu=m, sigma=pt.sqrt(4.0)))[0] == Normal(sigma=2.0)


def test_exponential_from_dist_returns_the_rate():
    fam, params = family_of_dist(pm.Exponential.dist(lam=2.0))
    assert fam == Exponential()
    assert params["lam"].eval(mode="FAST_COMPILE") == pytest.approx(2.0)  # the rate, not the scale 0.5
    assert Exponential.from_dist(pm.Exponential.dist(scale=0.25))[1]["lam"].eval(mode="FAST_COMPILE") == pytest.approx(4.0)
    lam = pt.scalar("lam")
    assert Exponential.from_dist(pm.Exponential.dist(lam=lam))[1]["lam"].eval({lam: 3.0},
        mode="FAST_COMPILE") == pytest.approx(3.0)


def test_gamma_from_dist_returns_known_shape_and_rate():
    b = pt.scalar("b")
    fam, params = family_of_dist(pm.Gamma.dist(alpha=2.0, beta=b))
    assert fam == Gamma(shape=2.0)
    assert params["beta"].eval({b: 3.0}, mode="FAST_COMPILE") == pytest.approx(3.0)
    fam, params = Gamma.from_dist(pm.Gamma.dist(mu=2.0, sigma=1.0))  # alpha = mu²/σ² = 4, beta = mu/σ² = 2
    assert fam == Gamma(shape=4.0)
    assert params["beta"].eval(mode="FAST_COMPILE") == pytest.approx(2.0)
    with pytest.raises(ValueError, match="known shape"):
        Gamma.from_dist(pm.Gamma.dist(alpha=pt.scalar("a"), beta=b))


def test_from_dist_refuses_other_ops_and_per_record_parameters():
    with pytest.raises(ValueError, match="Normal"):
        Normal.from_dist(pm.Exponential.dist(lam=1.0))
    with pytest.raises(ValueError, match="Exponential"):
        Exponential.from_dist(pm.Gamma.dist(alpha=1.0, beta=1.0))
    with pytest.raises(ValueError, match="Gamma"):
        Gamma.from_dist(pm.Normal.dist())
    with pytest.raises(ValueError, match="(?i)per-record"):
        Normal.from_dist(pm.Normal.dist(mu=np.zeros(5), sigma=1.0))
    with pytest.raises(ValueError, match="(?i)per-record"):
        Normal.from_dist(pm.Normal.dist(mu=0.0, sigma=np.ones(5)))
    with pytest.raises(ValueError, match="(?i)per-record"):
        Exponential.from_dist(pm.Exponential.dist(lam=np.ones(4)))
    with pytest.raises(ValueError, match="(?i)per-record"):
        Gamma.from_dist(pm.Gamma.dist(alpha=2.0, beta=np.ones(4)))
    X = np.ones((10, 2))
    beta = pt.vector("beta", shape=(2,))
    with pytest.raises(ValueError, match=r"(?i)per-record.*linear_regression.*observe_stats"):
        Normal.from_dist(pm.Normal.dist(mu=X @ beta, sigma=1.0))
    with pytest.raises(ValueError, match="observe_stats"):
        LinearRegression.from_dist(pm.Normal.dist())
    # A scalar parameter broadcast to many records (shape=) is one shared parameter.
    fam, params = Normal.from_dist(pm.Normal.dist(mu=np.array([0.3]), sigma=1.0, shape=7))
    assert fam == Normal(sigma=1.0) and params["mu"].eval(mode="FAST_COMPILE") == pytest.approx(0.3)
