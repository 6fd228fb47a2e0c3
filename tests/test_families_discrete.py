"""The discrete families of the Laplace route: binomial, categorical, multinomial, poisson.

Each test compares against an independent calculation (hand-computed statistics,
brute force over neighbouring data sets, scipy log-pmfs, closed-form conjugate
posteriors, the Laplace mean absolute deviation), so each assertion can fail.
"""

from __future__ import annotations

import itertools
import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import dask.array as da
import numpy as np
import pandas as pd
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

from pymc_dp.accounting import PrivacyLedger
from pymc_dp.families import ClippedRecordsWarning, family_of_dist, get_family, privatize
from pymc_dp.families.binomial import Binomial
from pymc_dp.families.categorical import Categorical
from pymc_dp.families.multinomial import Multinomial
from pymc_dp.families.poisson import Poisson

RELATIONS = ("replace", "add_remove")


@dataclass
class Case:
    """One family with a small data set and its statistics worked out by hand."""

    family: Any
    data: np.ndarray
    stats: dict[str, list[float]]  # relation -> hand-computed S(X)
    sensitivity: dict[str, float]  # relation -> hand-derived Δ
    bounds: dict[str, Any] = field(default_factory=dict)
    param: str = "p"

    @property
    def name(self) -> str:
        return self.family.name


CASES = {
    # 0 + 1 + 4 + 4 + 3 = 12 successes out of 5·4 = 20 trials, so 8 failures.
    "binomial": Case(Binomial(n_trials=4), np.array([0, 1, 4, 4, 3.0]),
                     {"replace": [12], "add_remove": [12, 8]}, {"replace": 4, "add_remove": 4}),
    # categories 0,2,2,3,2,0 -> two 0s, no 1, three 2s, one 3.
    "categorical": Case(Categorical(k=4), np.array([0, 2, 2, 3, 2, 0.0]),
                        {"replace": [2, 0, 3, 1], "add_remove": [2, 0, 3, 1]}, {"replace": 2, "add_remove": 1}),
    # column sums of four rows of 3 trials each.
    "multinomial": Case(Multinomial(k=3, n_trials=3), np.array([[3, 0, 0], [1, 1, 1], [0, 2, 1], [1, 0, 2.0]]),
                        {"replace": [5, 3, 4], "add_remove": [5, 3, 4]}, {"replace": 6, "add_remove": 3}),
    # 0 + 2 + 5 + 1 + 4 = 12 over 5 records, all within the bound 5.
    "poisson": Case(Poisson(), np.array([0, 2, 5, 1, 4.0]),
                    {"replace": [12], "add_remove": [12, 5]}, {"replace": 5, "add_remove": 6},
                    bounds={"upper": 5}, param="mu"),
}
FAMILY_NAMES = tuple(CASES)


def exact_statistics(fam: Any, x: Any, bounds: dict, relation: str) -> np.ndarray:
    """S(X) computed through the family's own clip + record_statistics (NumPy)."""
    clipped, _ = fam.clip(np.asarray(x, dtype=float), fam.check_bounds(bounds) if fam.bound_keys else bounds)
    return np.asarray(fam.record_statistics(clipped, relation).sum(axis=0), dtype=float)


def random_records(name: str, n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if name == "binomial":
        return rng.binomial(4, 0.35, n).astype(float)
    if name == "categorical":
        return rng.integers(0, 4, n).astype(float)
    if name == "multinomial":
        return rng.multinomial(3, [0.2, 0.5, 0.3], n).astype(float)
    return rng.poisson(3.0, n).astype(float)  # some above the bound 5: exercises clipping


# --------------------------------------------------------------------------- statistics by hand


@pytest.mark.parametrize("relation", RELATIONS)
@pytest.mark.parametrize("name", FAMILY_NAMES)
def test_statistic_and_sensitivity_by_hand(name: str, relation: str) -> None:
    case = CASES[name]
    fam = case.family
    np.testing.assert_array_equal(exact_statistics(fam, case.data, case.bounds, relation), case.stats[relation])
    assert len(fam.statistic_names(relation)) == len(case.stats[relation])
    checked = fam.check_bounds(case.bounds)
    assert fam.sensitivity(checked, relation) == case.sensitivity[relation]

    eps = 1e9
    out = privatize(case.data, fam, eps, bounds=case.bounds or None, neighbouring=relation, rng=3)
    assert out.names == fam.statistic_names(relation)
    np.testing.assert_allclose(out.noisy, case.stats[relation], rtol=0, atol=1e-6)
    np.testing.assert_allclose(out.values, case.stats[relation], rtol=0, atol=1e-6)
    # released as they are, or centred and weighted (the Poisson under add/remove) with a smaller weighted Δ
    released_delta = fam.release_design(checked, relation).sensitivity
    assert released_delta == case.sensitivity[relation] or (out.centred and released_delta < case.sensitivity[relation])
    assert out.sensitivity == released_delta
    assert out.scale == pytest.approx(released_delta / eps, rel=1e-12)
    assert out.ledger.entries[-1].details["sensitivity"] == released_delta
    n_true = len(case.data)
    assert out.n == pytest.approx(n_true, abs=1e-6)
    if relation == "add_remove":
        assert fam.n_from_statistics(np.asarray(case.stats[relation], float), relation) == n_true
    else:
        with pytest.raises(ValueError):
            fam.n_from_statistics(np.asarray(case.stats[relation], float), relation)


def test_poisson_clips_to_the_floored_bound_and_warns_with_the_count() -> None:
    x = np.array([0, 9, 7, 1, 12, 5.0])
    with pytest.warns(ClippedRecordsWarning, match=r"\b3 of 6 record"):
        out = privatize(x, "poisson", 1e9, bounds={"upper": 5.9}, rng=0)
    # 5.9 is floored to 5: 0 + 5 + 5 + 1 + 5 + 5 = 21, and Δ = 5.
    np.testing.assert_allclose(out.noisy, [21.0], atol=1e-6)
    assert out.sensitivity == 5.0
    assert dict(out.bounds) == {"upper": 5}
    # a record exactly at the bound is not clipped
    with warnings.catch_warnings():
        warnings.simplefilter("error", ClippedRecordsWarning)
        privatize(np.array([5.0, 0.0]), "poisson", 1.0, bounds={"upper": 5}, rng=0)
    # the same count is reported for Dask records
    with pytest.warns(ClippedRecordsWarning, match=r"\b3 of 6 record"):
        privatize(da.from_array(x, chunks=4), "poisson", 1.0, bounds={"upper": 5}, rng=0)


# --------------------------------------------------------------------------- sensitivity by brute force

BRUTE = {
    "binomial": (Binomial(n_trials=2), [0.0, 1.0, 2.0], {}),
    "categorical": (Categorical(k=3), [0.0, 1.0, 2.0], {}),
    # every row of 3 categories summing to 2 trials
    "multinomial": (Multinomial(k=3, n_trials=2),
                    [np.array(r, float) for r in itertools.product(range(3), repeat=3) if sum(r) == 2], {}),
    # raw values 0..4 with bound 2: records 3 and 4 are clipped, the maximum stays the bound's
    "poisson": (Poisson(), [0.0, 1.0, 2.0, 3.0, 4.0], {"upper": 2}),
}


@pytest.mark.parametrize("name", FAMILY_NAMES)
def test_sensitivity_is_the_maximum_over_all_neighbouring_pairs(name: str) -> None:
    fam, support, bounds = BRUTE[name]
    checked = fam.check_bounds(bounds)

    def stat(records: list, relation: str) -> np.ndarray:
        return exact_statistics(fam, np.array(records, dtype=float), bounds, relation)

    for relation in RELATIONS:
        worst = 0.0
        for records in itertools.product(support, repeat=3):
            s = stat(list(records), relation)
            if relation == "replace":
                neighbours = [list(records[:i]) + [v] + list(records[i + 1:]) for i in range(3) for v in support]
            else:  # adding one record (removing is the same pair read backwards)
                neighbours = [list(records) + [v] for v in support]
            for other in neighbours:
                worst = max(worst, float(np.abs(stat(other, relation) - s).sum()))
        assert worst == fam.sensitivity(checked, relation), (name, relation)


# --------------------------------------------------------------------------- back-ends


def as_pandas(x: np.ndarray) -> Any:
    return pd.DataFrame(x) if x.ndim == 2 else pd.Series(x.astype(int))


def as_dask(x: np.ndarray) -> Any:
    return da.from_array(x, chunks=(17,) + x.shape[1:])


@pytest.mark.parametrize("relation", RELATIONS)
@pytest.mark.parametrize("name", FAMILY_NAMES)
def test_numpy_pandas_and_dask_give_the_same_release(name: str, relation: str) -> None:
    case = CASES[name]
    x = random_records(name, 103, seed=7)
    exact = exact_statistics(case.family, x, case.bounds, relation)
    bounds = case.family.check_bounds(case.bounds)
    lazy = case.family.record_statistics(case.family.clip(as_dask(x), bounds)[0], relation).sum(axis=0)
    assert type(lazy).__module__.startswith("dask")  # stays lazy until privatize computes it
    np.testing.assert_array_equal(lazy.compute(), exact)

    releases = []
    for data in (x, as_pandas(x), as_dask(x)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ClippedRecordsWarning)
            releases.append(privatize(data, case.family, 1.0, bounds=case.bounds or None,
                                      neighbouring=relation, rng=11))
    for out in releases[1:]:
        np.testing.assert_array_equal(out.noisy, releases[0].noisy)
        np.testing.assert_array_equal(out.values, releases[0].values)
        assert out.n == releases[0].n
    # noisy = exact + seeded noise: the same seed on other records adds the same noise
    assert not np.array_equal(releases[0].noisy, exact)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClippedRecordsWarning)
        other = privatize(x[:-1], case.family, 1.0, bounds=case.bounds or None, neighbouring=relation, rng=11)
    np.testing.assert_allclose(other.noisy - exact_statistics(case.family, x[:-1], case.bounds, relation),
                               releases[0].noisy - exact, rtol=0, atol=1e-9)


def test_distributed_cluster_gives_the_same_statistics() -> None:
    """Two worker processes reduce the chunks; the release equals the in-memory one (≈ 2–4 s, so not slow)."""
    from distributed import Client, LocalCluster, get_task_stream

    data = {name: random_records(name, 60, seed=5) for name in FAMILY_NAMES}
    local = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClippedRecordsWarning)
        for name, x in data.items():
            local[name] = privatize(x, CASES[name].family, 1.0, bounds=CASES[name].bounds or None, rng=2)
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
                Client(cluster) as client:
            assert len(client.scheduler_info()["workers"]) == 2
            for name, x in data.items():
                with get_task_stream(client) as tasks:
                    out = privatize(da.from_array(x, chunks=(13,) + x.shape[1:]), CASES[name].family, 1.0,
                                    bounds=CASES[name].bounds or None, rng=2)
                assert len(tasks.data) > 0  # the reduction ran on the cluster
                np.testing.assert_array_equal(out.noisy, local[name].noisy)
                np.testing.assert_array_equal(out.values, local[name].values)


# --------------------------------------------------------------------------- projection


def simplex_tolerance(noisy: np.ndarray, total: float) -> float:
    """Round-off allowed in Σc after projecting ``noisy`` onto the simplex scaled to ``total``."""
    return 64 * noisy.size * np.finfo(float).eps * max(1.0, float(np.abs(noisy).max()), total)


def assert_valid(fam: Any, values: np.ndarray, noisy: np.ndarray, n: int, bounds: dict, relation: str) -> None:
    values = np.asarray(values)
    assert values.shape == (len(fam.statistic_names(relation)),)
    assert np.all(np.isfinite(values)) and np.all(values >= 0)
    if isinstance(fam, Binomial) and relation == "replace":
        assert values[0] <= n * fam.n_trials
    if isinstance(fam, (Categorical, Multinomial)) and relation == "replace":
        total = n * (fam.n_trials if isinstance(fam, Multinomial) else 1)
        assert abs(values.sum() - total) <= simplex_tolerance(noisy, total)
    if isinstance(fam, Poisson):
        count = n if relation == "replace" else values[1]
        assert values[0] <= count * bounds["upper"]


big_floats = st.floats(min_value=-1e12, max_value=1e12, allow_nan=False, allow_infinity=False)


@st.composite
def noisy_cases(draw: Any) -> tuple:
    name = draw(st.sampled_from(FAMILY_NAMES))
    relation = draw(st.sampled_from(RELATIONS))
    case = CASES[name]
    d = len(case.stats[relation])
    noisy = np.array(draw(st.lists(big_floats | st.floats(-50, 50), min_size=d, max_size=d)))
    n = draw(st.integers(min_value=1, max_value=10**6))
    return case.family, case.family.check_bounds(case.bounds), relation, noisy, n


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(noisy_cases())
def test_projection_is_valid_and_idempotent(args: tuple) -> None:
    fam, bounds, relation, noisy, n = args
    once = fam.project(noisy, n, bounds, relation)
    assert_valid(fam, once, noisy, n, bounds, relation)
    twice = fam.project(once, n, bounds, relation)
    np.testing.assert_allclose(twice, once, rtol=1e-12, atol=simplex_tolerance(noisy, 0))


@st.composite
def valid_cases(draw: Any) -> tuple:
    """Statistics that are already valid (not necessarily integers)."""
    name = draw(st.sampled_from(FAMILY_NAMES))
    relation = draw(st.sampled_from(RELATIONS))
    fam = CASES[name].family
    bounds = fam.check_bounds(CASES[name].bounds)
    d = len(CASES[name].stats[relation])
    n = draw(st.integers(min_value=1, max_value=10**4))
    frac = st.floats(min_value=0, max_value=1)
    if name in ("categorical", "multinomial"):
        counts = np.array(draw(st.lists(st.integers(0, 10**4), min_size=d, max_size=d)), float)
        if relation == "replace":  # on the simplex scaled to N (· n_trials): make the sum a valid total
            per = getattr(fam, "n_trials", 1)
            counts[-1] += (-counts.sum()) % per
            n = int(counts.sum() // per)
        return fam, bounds, relation, counts, n
    if name == "binomial":
        if relation == "replace":
            return fam, bounds, relation, np.array([draw(frac) * n * fam.n_trials]), n
        return fam, bounds, relation, np.array([draw(frac) * 1e5, draw(frac) * 1e5]), n
    # poisson
    if relation == "replace":
        return fam, bounds, relation, np.array([draw(frac) * n * bounds["upper"]]), n
    count = draw(frac) * 1e4
    return fam, bounds, relation, np.array([draw(frac) * count * bounds["upper"], count]), n


@settings(max_examples=300, deadline=None)
@given(valid_cases())
def test_projection_leaves_valid_statistics_unchanged(args: tuple) -> None:
    fam, bounds, relation, valid, n = args
    np.testing.assert_allclose(fam.project(valid, n, bounds, relation), valid, rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("relation", RELATIONS)
@pytest.mark.parametrize("name", FAMILY_NAMES)
def test_projection_examples(name: str, relation: str) -> None:
    """A few hand-worked projections (the property tests check validity, these the actual map)."""
    fam = CASES[name].family
    bounds = fam.check_bounds(CASES[name].bounds)
    expected: dict[tuple[str, str], tuple[list, int, list]] = {
        ("binomial", "replace"): ([25.0], 5, [20.0]),
        ("binomial", "add_remove"): ([-3.0, 7.5], 0, [0.0, 7.5]),
        # simplex projection onto Σ = 6: subtract θ = 1 from [5, 3, -2, 0] and clip: [4, 2, 0, 0]
        ("categorical", "replace"): ([5.0, 3.0, -2.0, 0.0], 6, [4.0, 2.0, 0.0, 0.0]),
        ("categorical", "add_remove"): ([5.0, -3.0, 2.0, -0.1], 0, [5.0, 0.0, 2.0, 0.0]),
        # Σ must be 2·3 = 6: [7, 1, 4] − θ with θ = 2 gives [5, -1, 2] → [5, 0, 2] (sum 7): θ = 2.5 → [4.5, 0, 1.5]
        ("multinomial", "replace"): ([7.0, 1.0, 4.0], 2, [4.5, 0.0, 1.5]),
        ("multinomial", "add_remove"): ([-1.0, 2.0, 3.0], 0, [0.0, 2.0, 3.0]),
        ("poisson", "replace"): ([-4.0], 3, [0.0]),
        # N̂ = 2 ⇒ S ≤ 2·5 = 10
        ("poisson", "add_remove"): ([40.0, 2.0], 0, [10.0, 2.0]),
    }
    noisy, n, out = expected[(name, relation)]
    np.testing.assert_allclose(fam.project(np.array(noisy), n if relation == "replace" else None, bounds, relation),
                               out, atol=1e-12)


def test_poisson_projection_with_no_records_left_has_zero_sum() -> None:
    out = Poisson().project(np.array([17.0, -0.4]), None, {"upper": 5}, "add_remove")
    np.testing.assert_array_equal(out, [0.0, 0.0])


# --------------------------------------------------------------------------- ε → ∞: the exact posterior

PRIORS = {
    "binomial": {"alpha": 2.0, "beta": 3.0},
    "categorical": {"alpha": np.array([1.0, 2.0, 3.0, 4.0])},
    "multinomial": {"alpha": 0.5},
    "poisson": {"alpha": 2.0, "beta": 0.5},
}
# closed-form conjugate posteriors of the hand data sets (CASES) under PRIORS
POSTERIORS = {
    "binomial": {"alpha": 2 + 12, "beta": 3 + 8},
    "categorical": {"alpha": [1 + 2, 2 + 0, 3 + 3, 4 + 1]},
    "multinomial": {"alpha": [0.5 + 5, 0.5 + 3, 0.5 + 4]},
    "poisson": {"alpha": 2 + 12, "beta": 0.5 + 5},
}


@pytest.mark.parametrize("relation", RELATIONS)
@pytest.mark.parametrize("name", FAMILY_NAMES)
def test_huge_epsilon_recovers_the_conjugate_posterior(name: str, relation: str) -> None:
    case = CASES[name]
    fam = case.family
    exact = exact_statistics(fam, case.data, case.bounds, relation)
    n = len(case.data)
    out = privatize(case.data, fam, 1e9, bounds=case.bounds or None, neighbouring=relation, rng=42)
    private = fam.conjugate_posterior(out.values, out.n, **PRIORS[name])
    reference = fam.conjugate_posterior(exact, n, **PRIORS[name])
    assert set(private) == set(POSTERIORS[name])
    for key, value in POSTERIORS[name].items():
        np.testing.assert_allclose(reference[key], value, rtol=1e-12)
        np.testing.assert_allclose(private[key], reference[key], rtol=1e-6)


def scipy_loglik(name: str, x: np.ndarray, theta: Any) -> float:
    fam = CASES[name].family
    if name == "binomial":
        return float(stats.binom.logpmf(x, fam.n_trials, theta).sum())
    if name == "categorical":
        return float(np.log(np.asarray(theta)[x.astype(int)]).sum())
    if name == "multinomial":
        return float(stats.multinomial.logpmf(x, fam.n_trials, theta).sum())
    return float(stats.poisson.logpmf(x, theta).sum())


THETAS = {
    "binomial": [0.3, 0.55, 0.9],
    "categorical": [[0.1, 0.2, 0.3, 0.4], [0.25, 0.25, 0.25, 0.25], [0.6, 0.05, 0.3, 0.05]],
    "multinomial": [[0.2, 0.3, 0.5], [0.6, 0.3, 0.1], [1 / 3, 1 / 3, 1 / 3]],
    "poisson": [0.5, 2.4, 7.0],
}


def compiled_loglik(fam: Any, param: str, values: np.ndarray, n: float, vector: bool) -> Any:
    theta = pt.dvector(param) if vector else pt.dscalar(param)
    ll = fam.loglik(values, n, {param: theta})
    return pytensor.function([theta], ll, mode="FAST_COMPILE"), pytensor.function([theta], pytensor.grad(ll, theta),
        mode="FAST_COMPILE")


@pytest.mark.parametrize("relation", RELATIONS)
@pytest.mark.parametrize("name", FAMILY_NAMES)
def test_loglik_matches_scipy_up_to_a_constant(name: str, relation: str) -> None:
    case = CASES[name]
    fam = case.family
    vector = name in ("categorical", "multinomial")
    n = len(case.data)
    for values in (exact_statistics(fam, case.data, case.bounds, relation),
                   privatize(case.data, fam, 1e9, bounds=case.bounds or None, neighbouring=relation, rng=1).values):
        f, _ = compiled_loglik(fam, case.param, values, float(n), vector)
        offsets = [float(f(np.asarray(t, float))) - scipy_loglik(name, case.data, t) for t in THETAS[name]]
        # the offset (base measure) is the same at every parameter value, and it is not 0 in general
        np.testing.assert_allclose(offsets, offsets[0], rtol=0, atol=1e-6 * (1 + abs(offsets[0])))


@pytest.mark.parametrize("relation", RELATIONS)
@pytest.mark.parametrize("name", FAMILY_NAMES)
def test_loglik_gradient_is_finite_and_matches_finite_differences(name: str, relation: str) -> None:
    """NUTS needs a smooth log-likelihood in the parameters; compare its gradient with central differences."""
    case = CASES[name]
    fam = case.family
    vector = name in ("categorical", "multinomial")
    values = exact_statistics(fam, case.data, case.bounds, relation)
    f, grad = compiled_loglik(fam, case.param, values, float(len(case.data)), vector)
    theta = np.asarray(THETAS[name][0], float)
    g = np.atleast_1d(grad(theta))
    assert np.all(np.isfinite(g))
    h = 1e-6
    basis = np.eye(theta.size) if vector else np.ones((1, 1))
    numeric = [(f(theta + h * e.reshape(theta.shape)) - f(theta - h * e.reshape(theta.shape))) / (2 * h)
               for e in basis]
    np.testing.assert_allclose(g, numeric, rtol=1e-5)


# --------------------------------------------------------------------------- noise scale Δ/ε


@pytest.mark.parametrize("relation", RELATIONS)
@pytest.mark.parametrize("name", FAMILY_NAMES)
def test_noise_scale_is_sensitivity_over_epsilon(name: str, relation: str) -> None:
    """The noise has scale Δ/ε, checked on the mean of |noise| over m draws (±5 SE).

    |Laplace(b)| is Exponential: mean b, sd b. Whole-number statistics get discrete Laplace
    noise of scale s, pmf ∝ a^|k| with a = e^(−1/s): E|K| = 2a/(1 − a²), E K² = 2a/(1 − a)²,
    and the sd of |K| is at most √(E K²).
    """
    case = CASES[name]
    fam = case.family
    eps = 0.7
    design = fam.release_design(fam.check_bounds(case.bounds or None), relation)
    scale = design.sensitivity / eps  # on the released coordinates (the statistics themselves, or centred)
    exact = exact_statistics(fam, case.data, case.bounds, relation)
    exact = exact if design.is_identity else design.forward(exact, 0.0)
    gen = np.random.default_rng(2024)
    reps = 2000
    deviations = np.empty((reps, exact.size))
    for i in range(reps):
        out = privatize(case.data, fam, eps, bounds=case.bounds or None, neighbouring=relation, rng=gen)
        deviations[i] = out.released - exact
    assert out.scale == pytest.approx(scale, rel=1e-12)
    m = deviations.size
    if fam.integer_statistics(fam.check_bounds(case.bounds or None), relation) and design.is_identity:
        assert out.mechanism == "geometric" and np.all(deviations == np.round(deviations))
        a = math.exp(-1.0 / scale)
        mean_abs, sd = 2 * a / (1 - a * a), math.sqrt(2 * a) / (1 - a)
    else:
        assert out.mechanism == "laplace"
        mean_abs, sd = scale, math.sqrt(2) * scale  # Var Laplace(b) = 2b²
    assert abs(np.abs(deviations).mean() - mean_abs) <= 5 * sd / math.sqrt(m)
    assert abs(deviations.mean()) <= 5 * sd / math.sqrt(m)  # centred


# --------------------------------------------------------------------------- bad input

INVALID = {
    "binomial": [[0, 1, 5], [0, -1], [2.5, 1], [np.nan, 1], [np.inf]],
    "categorical": [[0, 4], [-1, 0], [1.5], [np.nan], [np.inf, 0]],
    "multinomial": [[[3, 0, 0], [2, 0, 0]],   # row sums to 2, not 3
                    [[4, -1, 0]],              # negative
                    [[1.5, 1.5, 0]],           # not integers
                    [[np.nan, 3, 0]],
                    [[3, 0, np.inf]]],
    "poisson": [[0, -1], [1.5, 2], [np.nan], [np.inf, 1], [-np.inf]],
}


def spent(ledger: PrivacyLedger) -> list[tuple]:
    """What a ledger's entries say, without their ids and times."""
    return [(e.mechanism, e.epsilon, e.delta, e.touched, e.noise_source, e.assumptions) for e in ledger.entries]


@pytest.mark.parametrize("relation", RELATIONS)
@pytest.mark.parametrize("name", FAMILY_NAMES)
def test_malformed_records_are_replaced_by_the_default_record_not_refused(name: str, relation: str) -> None:
    # A refusal would answer "is any record malformed?" for free. A malformed record (NaN, infinite, outside the
    # support) is replaced by the family's default record: the release is exactly the neighbour's in which that
    # record is the default, at the same cost and with the same ledger entry; the count goes to the curator only.
    case = CASES[name]
    default = np.asarray(case.family.default_record(case.bounds))
    for bad in INVALID[name]:
        bad = np.array(bad, float)
        malformed = np.asarray(case.family.invalid(bad))
        neighbour = np.where(malformed[(...,) + (None,) * (bad.ndim - 1)], default, bad)
        assert not case.family.invalid(neighbour).any()
        for data in (bad, as_dask(bad)):
            ours, theirs = PrivacyLedger(neighbouring=relation), PrivacyLedger(neighbouring=relation)
            with pytest.warns(ClippedRecordsWarning, match=f"{int(malformed.sum())} of {len(bad)} record"):
                got = privatize(data, case.family, 1.0, bounds=case.bounds or None, ledger=ours,
                                neighbouring=relation, rng=0)
            want = privatize(neighbour, case.family, 1.0, bounds=case.bounds or None, ledger=theirs,
                             neighbouring=relation, rng=0)
            assert np.array_equal(got.noisy, want.noisy) and np.array_equal(got.values, want.values)
            assert spent(ours) == spent(theirs) and len(ours.entries) == 1


def test_multinomial_records_must_be_rows_of_k_counts() -> None:
    ledger = PrivacyLedger()
    for bad in (np.array([1.0, 2.0, 0.0]), np.ones((4, 2)), np.ones((2, 3, 1))):
        with pytest.raises(ValueError, match="row of 3 counts"):
            privatize(bad, "multinomial", 1.0, k=3, n_trials=3, ledger=ledger)
    assert len(ledger.entries) == 0


@pytest.mark.parametrize("bounds", [None, {}, {"lower": 0}])
def test_poisson_without_an_upper_bound_is_an_error_naming_it(bounds: Any) -> None:
    ledger = PrivacyLedger()
    with pytest.raises(ValueError, match="upper"):
        privatize(np.array([1.0, 2.0]), "poisson", 1.0, bounds=bounds, ledger=ledger)
    assert len(ledger.entries) == 0


@pytest.mark.parametrize("upper", [0, 0.5, -3, math.inf, math.nan, "10", True, None, [5]])
def test_poisson_rejects_a_bad_upper_bound(upper: Any) -> None:
    with pytest.raises(ValueError, match="upper"):
        Poisson().check_bounds({"upper": upper})


@pytest.mark.parametrize("upper, floored", [(1, 1), (50, 50), (50.7, 50), (np.float64(3.0), 3), (np.int64(7), 7)])
def test_poisson_floors_the_upper_bound(upper: Any, floored: int) -> None:
    checked = Poisson().check_bounds({"upper": upper})
    assert checked == {"upper": floored}
    assert Poisson().sensitivity(checked, "replace") == floored
    assert Poisson().sensitivity(checked, "add_remove") == floored + 1


@pytest.mark.parametrize(
    "name, args",
    [
        ("binomial", {}),
        ("binomial", {"n_trials": 0}),
        ("binomial", {"n_trials": -2}),
        ("binomial", {"n_trials": 2.5}),
        ("binomial", {"n_trials": True}),
        ("binomial", {"n_trials": "3"}),
        ("binomial", {"n_trials": math.inf}),
        ("binomial", {"n_trials": 3, "k": 2}),
        ("categorical", {}),
        ("categorical", {"k": 1}),
        ("categorical", {"k": 3.5}),
        ("multinomial", {"k": 3}),
        ("multinomial", {"n_trials": 3}),
        ("multinomial", {"k": 1, "n_trials": 3}),
        ("multinomial", {"k": 3, "n_trials": 0}),
        ("poisson", {"upper": 5}),
    ],
)
def test_bad_family_arguments(name: str, args: dict) -> None:
    with pytest.raises(ValueError):
        get_family(name, **args)


@pytest.mark.parametrize(
    "fam", [Binomial(n_trials=4), Binomial(n_trials=np.int64(2)), Binomial(n_trials=3.0), Categorical(k=5),
            Multinomial(k=3, n_trials=2), Poisson()]
)
def test_family_args_round_trip_through_the_registry(fam: Any) -> None:
    args = fam.family_args()
    assert all(type(v) is int for v in args.values())
    again = get_family(fam.name, **args)
    assert again == fam and hash(again) == hash(fam)
    assert repr(again) == repr(fam)
    assert fam != get_family("bernoulli")


# --------------------------------------------------------------------------- from_dist


def test_from_dist_reads_each_distribution() -> None:
    fam, params = family_of_dist(pm.Binomial.dist(n=10, p=0.3))
    assert fam == Binomial(n_trials=10)
    assert float(params["p"].eval(mode="FAST_COMPILE")) == pytest.approx(0.3)

    fam, params = family_of_dist(pm.Binomial.dist(n=10, p=0.3, shape=5))  # shared p broadcast to (1,)
    assert fam == Binomial(n_trials=10) and params["p"].ndim == 0

    fam, params = family_of_dist(pm.Categorical.dist(p=[0.2, 0.3, 0.5]))
    assert fam == Categorical(k=3)
    np.testing.assert_allclose(params["p"].eval(mode="FAST_COMPILE"), [0.2, 0.3, 0.5])

    fam, params = family_of_dist(pm.Multinomial.dist(n=4, p=[0.25, 0.75], shape=(6, 2)))
    assert fam == Multinomial(k=2, n_trials=4)
    np.testing.assert_allclose(params["p"].eval(mode="FAST_COMPILE"), [0.25, 0.75])

    fam, params = family_of_dist(pm.Poisson.dist(mu=2.5))
    assert fam == Poisson()
    assert float(params["mu"].eval(mode="FAST_COMPILE")) == pytest.approx(2.5)


def test_from_dist_passes_model_variables_through() -> None:
    with pm.Model():
        p = pm.Beta("p", 1.0, 1.0)
        theta = pm.Dirichlet("theta", a=np.ones(4))
        lam = pm.Gamma("lam", 2.0, 1.0)
        assert Binomial.from_dist(pm.Binomial.dist(n=7, p=p))[1]["p"] is p
        fam, params = Categorical.from_dist(pm.Categorical.dist(p=theta))
        assert fam == Categorical(k=4)
        np.testing.assert_allclose(params["p"].eval({theta: np.full(4, 0.25)}, mode="FAST_COMPILE"), np.full(4, 0.25))
        assert Poisson.from_dist(pm.Poisson.dist(mu=lam))[1]["mu"] is lam


@pytest.mark.parametrize(
    "cls, dist",
    [
        (Binomial, lambda: pm.Poisson.dist(mu=1.0)),
        (Categorical, lambda: pm.Bernoulli.dist(p=0.5)),
        (Multinomial, lambda: pm.Categorical.dist(p=[0.5, 0.5])),
        (Poisson, lambda: pm.Normal.dist()),
    ],
)
def test_from_dist_refuses_another_distribution(cls: Any, dist: Any) -> None:
    with pytest.raises(ValueError, match="expected a"):
        cls.from_dist(dist())


@pytest.mark.parametrize(
    "dist, match",
    [
        (lambda: pm.Binomial.dist(n=10, p=np.full(5, 0.3)), "per-record parameters"),
        (lambda: pm.Binomial.dist(n=np.array([3, 4, 5]), p=0.3), "per-record trial counts"),
        (lambda: pm.Binomial.dist(n=pt.lscalar("n"), p=0.3), "must be a constant"),
        (lambda: pm.Poisson.dist(mu=np.array([1.0, 2.0, 3.0])), "per-record parameters"),
        (lambda: pm.Categorical.dist(p=np.full((5, 3), 1 / 3)), "per-record parameters"),
        (lambda: pm.Categorical.dist(p=pt.dvector("p")), "not known statically"),
        (lambda: pm.Multinomial.dist(n=3, p=np.full((5, 2), 0.5)), "per-record parameters"),
        (lambda: pm.Multinomial.dist(n=pt.lscalar("n"), p=[0.5, 0.5]), "must be a constant"),
    ],
)
def test_from_dist_refuses_record_level_or_unknown_parameters(dist: Any, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        family_of_dist(dist())
