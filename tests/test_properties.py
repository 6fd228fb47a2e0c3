"""Hostile-input properties of the public entry points (hypothesis).

Every call either returns a valid result or raises a clear ``ValueError`` / ``TypeError``
(``BudgetExceededError`` when a budget cannot pay), with a non-empty message; never
another exception type, never a NaN or infinite answer, never a privacy claim weaker
than the noise drawn, never a half-updated ledger. Concretely, for each call:

* on error: the ledger passed in is unchanged (entries, ids, counts, basic total);
* on success: exactly one new ledger entry whose (ε, δ) is what was asked, finite and
  > 0; the output has the documented shape and no NaN/inf; the recorded scale and
  sensitivity are finite and positive, and the scale really buys the recorded ε (exact
  rational check for Laplace-type noise, 60-digit ``mpmath`` for the Gaussian);
* the ledger's total never decreases and is never NaN.

Inputs: ε, δ, sensitivities and bounds of every kind (0, negative, NaN, ±inf, 5e-324,
1e-300, 1e300, ints beyond the double range, bools, strings, complex, NumPy scalars,
lists, 0-d and 1-d arrays, Fraction, Decimal); values and records of every shape (0-d,
empty, 2-d, ragged) and dtype (bool, int8, int64 and uint64 up to their limits,
float16/32/64 with NaN, inf and 1e308, complex, object, strings), data outside declared
bounds, counts near and past int64's limit, and a 10⁶-record array.

Examples per test (stated once here, in the constants below): ``EXAMPLES`` = 200 for
the NumPy-level entry points (mechanisms with seeded noise, ``privatize``,
``release_posterior``, ``hellinger``, the ledger, its basic/advanced/RDP totals and
subsampling), cheap enough that 200 cost about a second; ``TIGHT_EXAMPLES`` = 60 where
each example runs the PLD accountant (dp-accounting, ~10-100 ms) or OpenDP's secure
samplers; ``MODEL_EXAMPLES`` = 25 for the model transforms, each of which copies and
compiles a small PyMC model (~0.3 s). The
``ci`` profile (``tests/conftest.py``, the default) derandomises them, so every run
draws the same examples; ``HYPOTHESIS_PROFILE=dev`` draws fresh ones, 10x as many.
The whole file runs in about a minute on two cores.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import pymc_dp as pmdp
from pymc_dp.accounting import Budget, BudgetExceededError, LedgerEntry, PrivacyCost, PrivacyLedger, amplify_by_subsampling
from pymc_dp.families import ClippedRecordsWarning
from pymc_dp.mechanisms import (
    analytic_gaussian_sigma,
    discrete_laplace_mechanism,
    exponential_mechanism,
    exponential_mechanism_probabilities,
    gaussian_mechanism,
    geometric_mechanism,
    laplace_mechanism,
    randomized_response,
    randomized_response_debias,
    randomized_response_truth_probability,
)
from pymc_dp.mechanisms.hellinger_mechanisms import MECHANISMS as POSTERIOR_MECHANISMS

_SCALE = 10 if os.environ.get("HYPOTHESIS_PROFILE") == "dev" else 1
EXAMPLES = 200 * _SCALE
TIGHT_EXAMPLES = 60 * _SCALE
MODEL_EXAMPLES = 25 * _SCALE

FAST = settings(max_examples=EXAMPLES)
TIGHT = settings(max_examples=TIGHT_EXAMPLES)
MODEL = settings(max_examples=MODEL_EXAMPLES)

#: What a refusal may raise.
CLEAR = (ValueError, TypeError, BudgetExceededError)

MAX = float(np.finfo(float).max)
I64 = np.iinfo(np.int64)
U64 = np.iinfo(np.uint64)

# ---------------------------------------------------------------------------- strategies

#: Scalars nobody should pass as ε, δ, a sensitivity, a bound or a count (and a few one should).
ODD_SCALARS = [
    0, -1, 0.0, -0.0, 1, 2, 0.5, 1e-17, 5e-324, 1e-300, 1e300, MAX, -MAX, math.inf, -math.inf, math.nan,
    True, False, None, "1", "abc", "", b"1", 1 + 0j, complex(math.nan, 0), [1.0], (1.0,), {}, [], object(),
    np.float16(0.5), np.float32(1e-3), np.float64(1e300), np.int8(3), np.int8(-128), np.int64(I64.max),
    np.uint64(U64.max), np.bool_(True), 2**63, 2**64, 10**400, -10**400, np.array(1.0), np.array([1.0]),
    np.array([1.0, 2.0]), np.array(math.nan), Fraction(1, 3), Decimal("0.1"), Decimal("NaN"),
]

odd_scalars = st.sampled_from(ODD_SCALARS)
any_floats = st.floats(allow_nan=True, allow_infinity=True)
#: Positive floats spread over the whole double range (log-uniform in spirit).
wide_positive = st.builds(lambda m, e: m * 10.0**e, st.floats(1.0, 9.99), st.integers(-320, 307))
moderate = st.floats(1e-3, 1e3)



def mostly(plausible, hostile, weight: int = 3):
    """``plausible`` ``weight`` times as often as ``hostile``, so that both paths are exercised."""
    return st.one_of(*([plausible] * weight), hostile)


hostile_epsilon = mostly(st.one_of(moderate, wide_positive, st.integers(1, 10)),
                         st.one_of(odd_scalars, any_floats, st.integers(-5, 10**30)), weight=2)
hostile_delta = mostly(
    st.one_of(st.floats(1e-12, 0.5), st.sampled_from([1e-300, 1e-100, 1e-6, 0.5, 1 - 2**-53])),
    st.one_of(odd_scalars, any_floats, st.sampled_from([0.0, 1.0, 1.5, -1e-9]), st.floats(0, 1)),
)
hostile_sensitivity = mostly(st.one_of(moderate, wide_positive, st.integers(0, 10)),
                             st.one_of(odd_scalars, any_floats, st.integers(-3, 10**20)), weight=2)
hostile_counts = st.one_of(
    odd_scalars, st.integers(-3, 10), st.integers(2**62, 2**64), st.sampled_from([1e18, 1e300, 2.5, float(2**53)])
)

BIG_FLOATS = np.linspace(-1.0, 1.0, 10**6)
BIG_BITS = (np.arange(10**6) % 2).astype(np.int64)

_ARRAY_KINDS = ["bool", "int8", "int64", "uint64", "float16", "float32", "float64", "complex", "object", "str",
                "ragged", "scalar", "big"]


@st.composite
def hostile_arrays(draw, max_side=4, big=BIG_FLOATS):
    """An array (or array-like) of any shape and dtype, NaN, inf and the integer limits included."""
    kind = draw(st.sampled_from(_ARRAY_KINDS))
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=max_side))
    if kind in ("bool", "int8", "int64", "uint64", "float16", "float32", "float64"):
        return draw(hnp.arrays(np.dtype(kind), shape))
    if kind == "complex":
        return draw(hnp.arrays(np.complex128, shape))
    if kind == "object":
        items = draw(st.lists(st.one_of(st.none(), st.integers(-(2**70), 2**70), any_floats, st.text(max_size=2)),
                              max_size=max_side))
        out = np.empty(len(items), dtype=object)
        out[:] = items
        return out
    if kind == "str":
        return draw(hnp.arrays(np.dtype("U3"), shape))
    if kind == "ragged":
        return [[1.0], [1.0, 2.0]]
    if kind == "scalar":
        return draw(st.one_of(odd_scalars, any_floats))
    return big


def plausible_floats(max_side=6):
    return hnp.arrays(np.float64, hnp.array_shapes(min_dims=0, max_dims=2, max_side=max_side),
                      elements=st.floats(-1e6, 1e6))


values = mostly(plausible_floats(), hostile_arrays(), weight=1)
ledgers = st.sampled_from(["plain", "plain", "budget", "tight_budget", "add_remove", "spent"])
rngs = mostly(st.just("gen"), st.sampled_from([0, 7, np.int64(3), -1, 1.5, "seed", True]))


def make_ledger(kind: str) -> PrivacyLedger:
    """A fresh ledger of the named kind (some with history, some with a budget that can refuse)."""
    if kind == "budget":
        return PrivacyLedger(budget=Budget(epsilon=5.0, delta=1e-3))
    if kind == "tight_budget":
        return PrivacyLedger(budget=Budget(epsilon=1e-3))
    if kind == "add_remove":
        return PrivacyLedger(neighbouring="add_remove")
    ledger = PrivacyLedger()
    if kind == "spent":
        ledger.spend("warm-up", 0.25, 1e-9, touched="earlier")
        ledger.spend("warm-up", 0.5, count=3)
    return ledger


def make_rng(spec):
    return np.random.default_rng(0) if spec == "gen" else spec


# ---------------------------------------------------------------------------- the property itself


def snapshot(ledger: PrivacyLedger):
    """Everything a refused call must leave as it was."""
    return (len(ledger), [(e.id, e.count, e.epsilon, e.delta) for e in ledger.entries], tuple(ledger.total()))


def check_total(ledger: PrivacyLedger, before: PrivacyCost | None = None) -> None:
    total = ledger.total()
    assert not (math.isnan(total.epsilon) or math.isnan(total.delta)), total
    assert total.epsilon >= 0 and 0 <= total.delta <= 1, total
    if before is not None:
        assert total.epsilon >= before[2][0] and total.delta >= before[2][1], (before, total)


def attempt(fn, ledger: PrivacyLedger | None = None, *, strict: bool = True):
    """Run ``fn``: return ``(True, result)``, or ``(False, error)`` for a clear refusal.

    A refusal must carry a message and leave ``ledger`` exactly as it was; any other
    exception type propagates and fails the test. With ``strict``, a ``RuntimeWarning``
    (overflow, invalid value, division by zero: float arithmetic the library did not
    plan for) is an error too, even when the answer survives it.
    """
    before = snapshot(ledger) if ledger is not None else None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ClippedRecordsWarning)
            if strict:
                warnings.simplefilter("error", RuntimeWarning)
            out = fn()
    except CLEAR as err:
        event(f"refused: {type(err).__name__}")  # see --hypothesis-show-statistics
        assert str(err).strip(), f"{type(err).__name__} without a message"
        if isinstance(err, BudgetExceededError):
            assert ledger is not None and ledger.budget is not None
        if ledger is not None:
            assert snapshot(ledger) == before, "a refused call changed the ledger"
        return False, err
    event("returned")
    if ledger is not None:
        check_total(ledger, before)
    return True, out


def new_entry(ledger: PrivacyLedger, before_len: int) -> LedgerEntry:
    assert len(ledger) == before_len + 1, "a release must record exactly one entry"
    return ledger.entries[-1]


def as_float(x) -> float:
    return float(np.asarray(x).item()) if not isinstance(x, (Fraction, Decimal)) else float(x)


def assert_finite_like(out, value) -> None:
    """``out`` has the shape of ``value`` (a scalar for a scalar) and no NaN or inf."""
    arr = np.asarray(out, dtype=float)
    assert arr.shape == np.shape(value), (arr.shape, np.shape(value))
    assert np.all(np.isfinite(arr)), out
    if np.ndim(value) == 0:
        assert np.ndim(out) == 0


def scale_buys_epsilon(numerator: float, scale: float, epsilon: float) -> None:
    """Exact rational check that noise of ``scale`` for sensitivity ``numerator`` is ``epsilon``-DP."""
    assert math.isfinite(scale) and scale > 0, scale
    assert Fraction(numerator) <= Fraction(epsilon) * Fraction(scale), (numerator, scale, epsilon)


def exact_gaussian_delta(sigma_unit: float, epsilon: float) -> float:
    """Balle & Wang's δ(ε) at noise multiplier ``sigma_unit``, in enough digits to be exact."""
    mp = pytest.importorskip("mpmath")
    dps = int(60 + 2 * abs(math.log10(sigma_unit)))
    with mp.workdps(dps):
        s, e = mp.mpf(sigma_unit), mp.mpf(epsilon)
        return float(mp.ncdf(1 / (2 * s) - e * s) - mp.exp(e) * mp.ncdf(-1 / (2 * s) - e * s))


# ============================================================================ additive mechanisms


@FAST
@given(value=values, epsilon=hostile_epsilon, sensitivity=hostile_sensitivity, ledger_kind=ledgers, rng=rngs)
def test_laplace_mechanism(value, epsilon, sensitivity, ledger_kind, rng):
    ledger = make_ledger(ledger_kind)
    n = len(ledger)
    ok, out = attempt(
        lambda: laplace_mechanism(value, epsilon=epsilon, sensitivity=sensitivity, ledger=ledger, rng=make_rng(rng)),
        ledger,
    )
    if not ok:
        return
    entry = new_entry(ledger, n)
    eps, sens = as_float(epsilon), as_float(sensitivity)
    assert entry.epsilon == eps and entry.delta == 0.0 and 0 < eps < math.inf
    assert_finite_like(out, value)
    assert entry.details["sensitivity"] == sens
    arr = np.asarray(value, dtype=float)
    if sens == 0:
        assert entry.details["scale"] == 0 and entry.event is None
        assert np.array_equal(np.asarray(out, dtype=float), arr)
        return
    scale = entry.details["scale"]
    scale_buys_epsilon(sens, scale, eps)
    assert entry.event == {"type": "laplace", "noise_multiplier": scale / sens}
    # the noise is really there: where it dwarfs the spacing of the value, the value moved
    visible = scale > 1e6 * np.spacing(np.abs(arr))
    if visible.any():
        assert np.any(np.asarray(out, dtype=float)[visible] != arr[visible])


@FAST
@given(value=values, epsilon=hostile_epsilon, delta=hostile_delta, sensitivity=hostile_sensitivity,
       ledger_kind=ledgers, rng=rngs)
def test_gaussian_mechanism(value, epsilon, delta, sensitivity, ledger_kind, rng):
    ledger = make_ledger(ledger_kind)
    n = len(ledger)
    ok, out = attempt(
        lambda: gaussian_mechanism(value, epsilon=epsilon, delta=delta, sensitivity=sensitivity, ledger=ledger,
                                   rng=make_rng(rng)),
        ledger,
    )
    if not ok:
        return
    entry = new_entry(ledger, n)
    eps, d, sens = as_float(epsilon), as_float(delta), as_float(sensitivity)
    assert (entry.epsilon, entry.delta) == (eps, d) and 0 < eps < math.inf and 0 < d < 1
    assert_finite_like(out, value)
    if sens == 0:
        assert entry.details["scale"] == 0 and entry.event is None
        return
    sigma = entry.details["scale"]
    assert math.isfinite(sigma) and sigma > 0
    assert entry.event["noise_multiplier"] == sigma / sens
    # No wrong claim: at the recorded noise the mechanism is (min(ε, 1e4), δ)-DP, hence (ε, δ).
    assert exact_gaussian_delta(sigma / sens, min(eps, 1e4)) <= d * (1 + 1e-9)


@FAST
@given(epsilon=hostile_epsilon, delta=hostile_delta, sensitivity=hostile_sensitivity)
def test_analytic_gaussian_sigma(epsilon, delta, sensitivity):
    ok, sigma = attempt(lambda: analytic_gaussian_sigma(epsilon, delta, sensitivity))
    if not ok:
        return
    sens = as_float(sensitivity)
    assert isinstance(sigma, float) and math.isfinite(sigma)
    if sens == 0:
        assert sigma == 0.0
        return
    assert sigma >= np.finfo(float).tiny
    assert exact_gaussian_delta(sigma / sens, min(as_float(epsilon), 1e4)) <= as_float(delta) * (1 + 1e-9)


integer_values = mostly(
    hnp.arrays(np.int64, hnp.array_shapes(min_dims=0, max_dims=2, max_side=5),
               elements=st.integers(-(2**62), 2**62)),
    st.one_of(hostile_arrays(big=BIG_BITS), st.integers(-(2**64), 2**64)),
    weight=2,
)


@FAST
@given(value=integer_values, epsilon=hostile_epsilon, sensitivity=st.one_of(hostile_sensitivity, st.integers(0, 5)),
       ledger_kind=ledgers, rng=rngs, alias=st.booleans())
def test_geometric_mechanism(value, epsilon, sensitivity, ledger_kind, rng, alias):
    mechanism = discrete_laplace_mechanism if alias else geometric_mechanism
    ledger = make_ledger(ledger_kind)
    n = len(ledger)
    ok, out = attempt(
        lambda: mechanism(value, epsilon=epsilon, sensitivity=sensitivity, ledger=ledger, rng=make_rng(rng)), ledger
    )
    if not ok:
        return
    entry = new_entry(ledger, n)
    eps, sens = as_float(epsilon), as_float(sensitivity)
    assert entry.epsilon == eps and entry.delta == 0.0 and 0 < eps < math.inf
    arr = np.asarray(value)
    assert np.shape(out) == arr.shape
    out_arr = np.asarray(out)
    assert out_arr.dtype == np.int64 or isinstance(out, int), type(out)
    if sens == 0:
        assert np.array_equal(out_arr, arr)
        return
    scale = entry.details["scale"]
    scale_buys_epsilon(sens, scale, eps)
    assert entry.event == {"type": "discrete_laplace", "noise_parameter": 1.0 / scale, "sensitivity": int(sens)}
    if scale > 1e6 and arr.size:  # P(no noise) ≈ 1/(2·scale) per entry
        assert np.any(out_arr != arr)


@TIGHT
@given(which=st.sampled_from(["laplace", "gaussian", "geometric", "exponential", "randomized_response"]),
       value=hnp.arrays(np.int64, st.integers(0, 4), elements=st.integers(-(2**62), 2**62)),
       epsilon=hostile_epsilon, ledger_kind=ledgers)
def test_default_secure_noise(which, value, epsilon, ledger_kind):
    """The default source (OpenDP, no ``rng``): same properties, and the entry says ``secure``."""
    ledger = make_ledger(ledger_kind)
    n = len(ledger)
    utilities = value.astype(float) / 2**40 if value.size else np.zeros(1)
    call = {
        "laplace": lambda: laplace_mechanism(value.astype(float) / 4, epsilon=epsilon, sensitivity=1.0, ledger=ledger),
        "gaussian": lambda: gaussian_mechanism(value.astype(float) / 4, epsilon=epsilon, delta=1e-6, sensitivity=1.0,
                                               ledger=ledger),
        "geometric": lambda: geometric_mechanism(value, epsilon=epsilon, ledger=ledger),
        "exponential": lambda: exponential_mechanism(list(range(utilities.size)), utilities, epsilon=epsilon,
                                                     sensitivity=1.0, ledger=ledger),
        "randomized_response": lambda: randomized_response(value % 2 == 0, epsilon=epsilon, ledger=ledger),
    }[which]
    ok, out = attempt(call, ledger)
    if not ok:
        return
    entry = new_entry(ledger, n)
    assert entry.noise_source == "secure" and entry.epsilon == as_float(epsilon)
    if which in ("laplace", "gaussian", "geometric"):
        assert np.shape(out) == value.shape
        assert np.all(np.isfinite(np.asarray(out, dtype=float)))
    if which == "geometric":  # OpenDP saturates at the int64 limits instead of wrapping
        assert np.asarray(out).dtype == np.int64


# ============================================================================ exponential mechanism


utilities = mostly(
    hnp.arrays(np.float64, st.integers(1, 6), elements=st.one_of(st.floats(-1e6, 1e6), st.sampled_from([MAX, -MAX]))),
    hostile_arrays(),
)
base_measures = mostly(st.none(), st.one_of(
    hostile_arrays(),
    hnp.arrays(np.float64, st.integers(1, 6), elements=st.one_of(st.floats(0, 10), st.sampled_from([5e-324, 1e-300, 1e300, 0.0]))),
))
monotonic = st.one_of(st.booleans(), st.sampled_from([np.bool_(True), 1, "yes", None]))


@FAST
@given(u=utilities, epsilon=hostile_epsilon, sensitivity=hostile_sensitivity, mu=base_measures, mono=monotonic)
def test_exponential_mechanism_probabilities(u, epsilon, sensitivity, mu, mono):
    ok, p = attempt(lambda: exponential_mechanism_probabilities(u, epsilon=epsilon, sensitivity=sensitivity,
                                                                 base_measure=mu, monotonic=mono))
    if not ok:
        return
    u_arr = np.asarray(u, dtype=float)
    assert p.shape == u_arr.shape and u_arr.ndim == 1
    assert np.all(np.isfinite(p)) and np.all(p >= 0)
    assert math.isclose(p.sum(), 1.0, rel_tol=1e-9)
    if mu is not None:
        assert np.all(p[np.asarray(mu, dtype=float) == 0] == 0)
    # the best candidate (among the allowed) is never less likely than a worse one of no larger weight
    allowed = np.ones(p.size, bool) if mu is None else np.asarray(mu, dtype=float) > 0
    best = np.flatnonzero(allowed & (u_arr == u_arr[allowed].max()))
    if mu is None:
        assert np.all(p[best, None] >= p[None, :] * (1 - 1e-12))


@st.composite
def exponential_calls(draw):
    """Arguments of ``exponential_mechanism``: matching lengths, with at most one part hostile."""
    hostile = draw(st.sampled_from([None, None, "utilities", "base", "candidates", "epsilon", "sensitivity",
                                    "monotonic"]))
    size = draw(st.integers(1, 6))
    u = draw(hnp.arrays(np.float64, size, elements=st.one_of(st.floats(-1e6, 1e6), st.sampled_from([MAX, -MAX]))))
    if hostile == "utilities":
        u = draw(hostile_arrays())
    mu = draw(st.one_of(st.none(), hnp.arrays(np.float64, size, elements=st.one_of(
        st.floats(0, 10), st.sampled_from([5e-324, 1e-300, 1e300, 0.0]))).map(lambda m: m + np.eye(size)[0])))
    if hostile == "base":
        mu = draw(st.one_of(hostile_arrays(), st.just(np.zeros(size))))
    candidates = draw(st.sampled_from(["str", 5]) if hostile == "candidates"
                      else st.sampled_from(["range", "strings", "rows", "generator"]))
    epsilon = draw(st.one_of(odd_scalars, any_floats) if hostile == "epsilon" else st.one_of(moderate, wide_positive))
    sensitivity = draw(st.one_of(odd_scalars, any_floats) if hostile == "sensitivity"
                       else st.one_of(moderate, wide_positive))
    mono = draw(st.sampled_from([1, "yes", None]) if hostile == "monotonic" else st.sampled_from([False, True,
                                                                                                  np.bool_(True)]))
    return u, epsilon, sensitivity, mu, mono, candidates


@FAST
@given(call=exponential_calls(), ledger_kind=ledgers, rng=rngs)
def test_exponential_mechanism(call, ledger_kind, rng):
    u, epsilon, sensitivity, mu, mono, candidates = call
    try:
        size = max(len(u), 1)
    except TypeError:  # a scalar or 0-d array
        size = 1
    cands = {"range": list(range(size)), "strings": [f"c{i}" for i in range(size)],
             "rows": np.arange(2 * size).reshape(size, 2), "generator": (i for i in range(size)),
             "str": "abc", 5: 5}[candidates]
    ledger = make_ledger(ledger_kind)
    n = len(ledger)
    ok, out = attempt(
        lambda: exponential_mechanism(cands, u, epsilon=epsilon, sensitivity=sensitivity, ledger=ledger,
                                      base_measure=mu, rng=make_rng(rng), monotonic=mono),
        ledger,
    )
    if not ok:
        return
    entry = new_entry(ledger, n)
    eps, sens = as_float(epsilon), as_float(sensitivity)
    assert entry.epsilon == eps and entry.delta == 0.0 and 0 < eps < math.inf
    scale_buys_epsilon((1.0 if entry.details["monotonic"] else 2.0) * sens, entry.details["scale"], eps)
    # the chosen candidate, and its index (every candidate encodes its own)
    if candidates in ("range", "generator"):
        assert isinstance(out, int) and 0 <= out < size
        index = out
    elif candidates == "strings":
        index = int(out[1:])
        assert out == f"c{index}"
    else:
        index = int(out[0]) // 2
        assert np.array_equal(out, cands[index])
    if mu is not None:  # a zero weight excludes a candidate
        assert np.asarray(mu, dtype=float)[index] > 0


# ============================================================================ randomised response

@st.composite
def rr_calls(draw):
    """``(answers, categories)``: matching kinds most of the time, hostile otherwise."""
    mode = draw(st.sampled_from(["bool", "int", "named", "hostile"]))
    if mode == "bool":
        return draw(st.one_of(hnp.arrays(bool, hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=5)),
                              st.booleans(), st.just(BIG_BITS.astype(bool)))), None
    if mode == "int":
        k = draw(st.one_of(st.integers(2, 6), st.sampled_from([2**62, 2**40])))
        return draw(hnp.arrays(np.int64, st.integers(0, 6), elements=st.integers(0, min(k, 10) - 1))), k
    if mode == "named":
        cats = draw(st.sampled_from([["a", "b", "c"], [1.0, 2.0], ("x", "y"), {"p": 1, "q": 2}]))
        return draw(st.lists(st.sampled_from(list(cats)), max_size=5)), cats
    answers = draw(st.one_of(hostile_arrays(big=BIG_BITS.astype(bool)), st.booleans(), st.integers(-1, 7),
                             st.lists(st.sampled_from(["a", "b", "c", 1.0, 2.0]), max_size=5)))
    cats = draw(st.one_of(st.none(), st.integers(-1, 6), st.sampled_from(
        [2**62 + 1, 10**30, ["a", "b", "c"], [1.0, 2.0], [[1], [2]], ["x"], "ab", (True, False), [math.nan, 1.0], 2.0])))
    return answers, cats


small_epsilon = st.one_of(hostile_epsilon, st.sampled_from([1e-15, 2e-16, 1e-16, 36.0, 37.0, 40.0]))


@FAST
@given(call=rr_calls(), epsilon=small_epsilon, ledger_kind=ledgers, rng=rngs)
def test_randomized_response(call, epsilon, ledger_kind, rng):
    value, cats = call
    ledger = make_ledger(ledger_kind)
    n = len(ledger)
    ok, out = attempt(
        lambda: randomized_response(value, epsilon=epsilon, ledger=ledger, categories=cats, rng=make_rng(rng)), ledger
    )
    if not ok:
        return
    entry = new_entry(ledger, n)
    eps = as_float(epsilon)
    assert entry.epsilon == eps and entry.delta == 0.0
    k = entry.details["num_categories"]
    p = entry.details["truth_probability"]
    # ε-DP both ways: e^-ε ≤ p (k − 1)/(1 − p) ≤ e^ε (1/k ≤ p < 1), checked exactly
    assert Fraction(1, k) <= Fraction(p) < 1
    assert Fraction(p) * (k - 1) <= Fraction(math.exp(eps) if eps < 700 else MAX) * (1 - Fraction(p)) * (1 + Fraction(1, 10**15))
    assert np.shape(out) == np.shape(value)
    if cats is None:
        assert np.asarray(out).dtype == bool
    elif isinstance(cats, int):
        assert np.all((np.asarray(out) >= 0) & (np.asarray(out) < k))
    else:
        assert all(o in list(cats) for o in np.ravel(np.asarray(out, dtype=object)))


@FAST
@given(call=rr_calls(), epsilon=small_epsilon)
def test_randomized_response_debias(call, epsilon):
    responses, cats = call
    if isinstance(cats, int) and cats > 10**6:
        cats = 10**6 + 1  # the estimate has one entry per category
    ok, est = attempt(lambda: randomized_response_debias(responses, epsilon=epsilon, categories=cats))
    if not ok:
        return
    arr = np.atleast_1d(np.asarray(est, dtype=float))
    assert np.all(np.isfinite(arr))
    if cats is None:
        assert isinstance(est, float)
    else:
        assert math.isclose(arr.sum(), 1.0, rel_tol=1e-6, abs_tol=1e-6 * np.abs(arr).max())


@FAST
@given(epsilon=small_epsilon, k=st.one_of(st.integers(-2, 10**20), odd_scalars))
def test_randomized_response_truth_probability(epsilon, k):
    ok, p = attempt(lambda: randomized_response_truth_probability(epsilon, k))
    if not ok:
        return
    k = int(k)
    assert isinstance(p, float) and Fraction(1, k) <= Fraction(p) < 1


# ============================================================================ privatize (every family)

FAMILY_NAMES = ["bernoulli", "binomial", "poisson", "categorical", "multinomial", "normal", "exponential", "gamma",
                "linear_regression"]
hostile_pair = st.one_of(
    st.tuples(st.one_of(any_floats, odd_scalars), st.one_of(any_floats, odd_scalars)),
    st.tuples(st.floats(-1e3, 1e3), st.floats(-1e3, 1e3)),
    st.sampled_from([(0.0, 1.0), (1.0, 0.0), (1.0, 1.0), (-1e200, 1e200), (0.0, 5e-324), (0, 10**400),
                     (1e-300, 1e300), (0.01, 20.0), "ab", (0, 1, 2), None]),
)
#: (lo, hi) with 0 < lo < hi: valid for every family with bounds (most of the time).
plausible_pair = st.tuples(st.floats(1e-3, 10), st.floats(1e-3, 1e3)).map(lambda t: (min(t), max(t) + 1.0))
bounds_pair = mostly(plausible_pair, hostile_pair, weight=2)


#: Which part of a ``privatize`` call is hostile (None: all plausible).
PRIVATIZE_PARTS = [None, None, None, "family", "params", "data", "bounds", "args", "epsilon", "neighbouring", "ledger",
                   "rng"]


@st.composite
def family_calls(draw, hostile=None):
    """``(data, family, family_args, bounds)`` for one family: plausible, except the ``hostile`` part."""
    name = draw(st.sampled_from(FAMILY_NAMES if hostile != "family" else ["BERNOULLI", "nope", 5, None]))
    bad = hostile == "params"
    args, bounds = {}, None
    side = st.integers(1, 8) if hostile != "data" else st.integers(0, 8)
    if name in ("bernoulli", "BERNOULLI"):
        data = draw(st.one_of(hnp.arrays(np.int64, side, elements=st.integers(0, 1)), st.just(BIG_BITS)))
    elif name == "binomial":
        args["n_trials"] = draw(hostile_counts if bad else st.integers(1, 5))
        data = draw(hnp.arrays(np.int64, side, elements=st.integers(0, 5 if bad else args["n_trials"])))
    elif name == "poisson":
        bounds = {"upper": draw(st.one_of(wide_positive, odd_scalars, any_floats) if bad else st.integers(1, 50))}
        data = draw(hnp.arrays(np.int64, side, elements=st.integers(0, 100)))
    elif name in ("categorical", "multinomial"):
        args["k"] = draw(hostile_counts if bad else st.integers(2, 4))
        k = args["k"] if isinstance(args["k"], int) and 2 <= args["k"] <= 4 else 3
        if name == "categorical":
            data = draw(hnp.arrays(np.int64, side, elements=st.integers(0, k - 1)))
        else:
            args["n_trials"] = draw(hostile_counts if bad else st.just(1))
            rows = draw(st.lists(st.integers(0, k - 1), min_size=1, max_size=6))
            data = np.eye(k, dtype=np.int64)[rows]
    elif name in ("normal", "exponential", "gamma"):
        if name == "normal":
            args["sigma"] = draw(odd_scalars if bad else st.one_of(st.none(), moderate))
        if name == "gamma":
            args["shape"] = draw(odd_scalars if bad else moderate)
        bounds = {"x": draw(hostile_pair if bad else plausible_pair)}
        data = draw(hnp.arrays(np.float64, side, elements=st.floats(0, 30)))
    elif name == "linear_regression":
        args["n_features"] = draw(hostile_counts.filter(lambda c: not isinstance(c, int) or c < 10) if bad
                                  else st.integers(1, 3))
        d = args["n_features"] if isinstance(args["n_features"], int) and 1 <= args["n_features"] <= 3 else 1
        bounds = {"x": draw(hostile_pair if bad else plausible_pair), "y": draw(hostile_pair if bad else plausible_pair)}
        data = draw(st.one_of(hnp.arrays(np.float64, st.tuples(st.integers(1, 6), st.just(d + 1)),
                                         elements=st.floats(-5, 5)),
                              st.just((np.ones((3, d)), np.zeros(3)))))
    else:
        data = draw(hnp.arrays(np.int64, side, elements=st.integers(0, 1)))
    if hostile == "data":
        data = draw(st.one_of(hostile_arrays(), st.tuples(st.integers(0, 1), st.integers(0, 1)),
                              hnp.arrays(np.float64, side, elements=any_floats)))
    if hostile == "bounds":
        bounds = draw(st.sampled_from([None, {}, {"x": (0, 1), "zzz": 1}, [1], "abc", {"upper": None}]))
    if hostile == "args":
        args["bogus"] = 1
    return data, name, args, bounds


@st.composite
def privatize_calls(draw):
    hostile = draw(st.sampled_from(PRIVATIZE_PARTS))
    data, family, args, bounds = draw(family_calls(hostile))
    epsilon = draw(st.one_of(odd_scalars, any_floats) if hostile == "epsilon" else st.one_of(moderate, wide_positive))
    neighbouring = draw(st.sampled_from(["bogus", None, "REPLACE"]) if hostile == "neighbouring"
                        else st.sampled_from(["replace", "replace", "add_remove"]))
    if hostile == "ledger":
        ledger = draw(st.sampled_from(["budget", "tight_budget", "spent", "mismatched", "not a ledger"]))
    else:
        ledger = "matching"
    rng = draw(st.sampled_from([-1, 1.5, "seed", True]) if hostile == "rng" else st.just("gen"))
    return data, family, args, bounds, epsilon, neighbouring, ledger, rng


@FAST
@given(call=privatize_calls())
def test_privatize(call):
    data, family, args, bounds, epsilon, neighbouring, ledger_kind, rng = call
    relation = neighbouring if neighbouring == "add_remove" else "replace"
    if ledger_kind == "matching":
        ledger = PrivacyLedger(neighbouring=relation)
    elif ledger_kind == "mismatched":
        ledger = PrivacyLedger(neighbouring="replace" if relation == "add_remove" else "add_remove")
    elif ledger_kind == "not a ledger":
        ledger = None  # privatize then makes its own; the call below passes a non-ledger instead
    else:
        ledger = make_ledger(ledger_kind)
    target = ledger if ledger is not None else "not a ledger"
    n = len(ledger) if ledger is not None else 0
    ok, stats = attempt(
        lambda: pmdp.privatize(data, family, epsilon, bounds=bounds, ledger=target, neighbouring=neighbouring,
                               rng=make_rng(rng), **args),
        ledger,
    )
    if not ok:
        return
    entry = new_entry(ledger, n)
    eps = as_float(epsilon)
    assert stats.epsilon == entry.epsilon == eps and entry.delta == 0 and 0 < eps < math.inf
    assert stats.entry_id == entry.id and stats.ledger is ledger
    for field in ("values", "noisy"):
        arr = np.asarray(getattr(stats, field))
        assert arr.shape == (len(stats.names),) and np.all(np.isfinite(arr)), (field, arr)
    assert math.isfinite(stats.n) and stats.n >= 0  # an estimate under add/remove (0 for some families)
    if neighbouring == "replace":
        assert stats.n == len(np.asarray(data if not isinstance(data, tuple) or family != "linear_regression"
                                         else data[1]))
    assert math.isfinite(stats.sensitivity) and stats.sensitivity > 0
    assert stats.scale == entry.details["scale"] and entry.details["sensitivity"] == stats.sensitivity
    scale_buys_epsilon(stats.sensitivity, stats.scale, eps)
    if stats.family.name in ("bernoulli", "binomial", "poisson", "categorical", "multinomial"):
        assert np.all(stats.values >= 0)


# ============================================================================ Hellinger and posterior releases


@st.composite
def dirichlet_pairs(draw):
    """``(a, b)``: parameter arrays with the same k and broadcastable batches; sometimes extreme, sometimes junk."""
    mode = draw(st.sampled_from(["moderate", "moderate", "wide", "extreme", "junk", "k=1"]))
    if mode == "junk":
        return draw(hostile_arrays()), draw(st.one_of(hostile_arrays(), hnp.arrays(np.float64, (2,), elements=moderate)))
    k = 1 if mode == "k=1" else draw(st.integers(2, 4))
    shapes = draw(st.sampled_from([((k,), (k,)), ((3, k), (k,)), ((k,), (2, k)), ((2, k), (2, k))]))
    entries = {
        "moderate": st.floats(1e-3, 1e7),
        # the whole range where a and b are at most 2**50 apart: 10**(c ± 7)
        "wide": st.integers(-300, 140).flatmap(lambda c: st.builds(lambda m, e: m * 10.0**e, st.floats(1.0, 9.99),
                                                                   st.integers(max(c - 7, -320), c + 7))),
        "extreme": st.one_of(st.floats(1e-3, 1e7), st.sampled_from([5e-324, 1e-300, 1e150, MAX])),
        "k=1": st.floats(1e-3, 1e7),
    }[mode]
    return tuple(draw(hnp.arrays(np.float64, shape, elements=entries)) for shape in shapes)


@FAST
@given(pair=dirichlet_pairs())
def test_hellinger(pair):
    a, b = pair
    ok, h = attempt(lambda: pmdp.hellinger(a, b))
    if not ok:
        return
    arr = np.asarray(h)
    assert arr.shape == np.broadcast_shapes(np.shape(a), np.shape(b))[:-1]
    assert np.all(np.isfinite(arr)) and np.all((arr >= 0) & (arr <= 1)), h
    back = np.asarray(pmdp.hellinger(b, a))
    assert np.allclose(arr, back, rtol=1e-6, atol=1e-12)
    assert np.all(np.asarray(pmdp.hellinger(a, a)) == 0)


@st.composite
def posterior_calls(draw):
    hostile = draw(st.sampled_from([None, None, "mechanism", "counts", "prior", "gamma", "allow"]))
    mechanism = draw(st.sampled_from(["LSHIST", "bogus", 5, None]) if hostile == "mechanism"
                     else st.sampled_from(list(POSTERIOR_MECHANISMS)))
    cheap = mechanism in ("lsdim", "lshist", "LSHIST")
    k = draw(st.integers(2, 4))
    top = 10**6 if cheap else 12
    plausible_counts = hnp.arrays(np.int64, st.just(k), elements=st.integers(0, top)).map(
        lambda c: c + np.eye(k, dtype=np.int64)[0])
    counts = draw(plausible_counts if hostile != "counts" else st.one_of(
        st.one_of(
            st.sampled_from([np.array([2**62, 2**62, 2**62]), np.array([U64.max, 1], dtype=np.uint64),
                             np.array([2**53, 0]), np.array([3.0, 2.0]), np.array([3.5, 1.0]), np.array([-1, 2]),
                             np.array([0, 0]), np.array([5]), np.array([[1, 2]])]
                            + ([np.array([10**6, 10**6])] if cheap else [])),
            hostile_arrays(),
        ),
    ))
    prior = draw(st.one_of(odd_scalars, hostile_arrays()) if hostile == "prior" else st.one_of(
        st.just(1.0), moderate, wide_positive, hnp.arrays(np.float64, st.just(k), elements=st.one_of(moderate, wide_positive))))
    gamma = draw(st.one_of(st.floats(0, 2), odd_scalars) if hostile == "gamma"
                 else st.one_of(st.just(1.0), st.floats(1e-3, 1)))
    allow = draw(st.sampled_from([np.bool_(True), 1, "yes"]) if hostile == "allow"
                 else st.booleans() if mechanism == "ehdl" else st.just(False))
    return mechanism, counts, prior, gamma, allow


@FAST
@given(call=posterior_calls(), epsilon=hostile_epsilon,
       ledger_kind=st.sampled_from(["none", "plain", "budget", "tight_budget", "add_remove", "spent"]), rng=rngs)
def test_release_posterior(call, epsilon, ledger_kind, rng):
    mechanism, counts, prior, gamma, allow = call
    ledger = None if ledger_kind == "none" else make_ledger(ledger_kind)
    n_before = None if ledger is None else len(ledger)
    ok, release = attempt(
        lambda: pmdp.release_posterior(counts, prior, epsilon, mechanism, ledger=ledger, rng=make_rng(rng),
                                       gamma=gamma, allow_nonprivate=allow),
        ledger,
    )
    if not ok:
        return
    x = np.asarray(counts)
    k = x.size
    alpha = release.alpha
    prior_arr = np.broadcast_to(np.asarray(prior, dtype=float), (k,))
    assert alpha.shape == (k,) and np.all(np.isfinite(alpha)) and np.all(alpha >= prior_arr)
    c = alpha - prior_arr
    n = int(sum(int(v) for v in x))
    assert np.all(c <= n * (1 + 1e-12) + 1e-9)
    if str(mechanism).lower() == "ehdl":
        assert release.entry is None and isinstance(allow, (bool, np.bool_)) and bool(allow)
        if ledger is not None:
            assert len(ledger) == n_before
        return
    entry = release.entry
    assert entry is not None and entry.epsilon == as_float(epsilon) and entry.delta == 0.0
    if ledger is not None:
        assert new_entry(ledger, n_before) is entry
    for key in ("scale", "global_sensitivity", "l1_sensitivity"):
        if key in entry.details:
            assert math.isfinite(entry.details[key]) and entry.details[key] > 0, entry.details
    if "l1_sensitivity" in entry.details:
        scale_buys_epsilon(entry.details["l1_sensitivity"], entry.details["scale"], entry.epsilon)


# ============================================================================ the ledger and its accounting

mechanism_names = mostly(st.sampled_from(["laplace", "gaussian", "x" * 3]),
                         st.one_of(st.sampled_from(["", None, 5]), st.text(max_size=3)))
events = st.one_of(
    st.none(),
    st.none(),
    st.none(),
    st.builds(lambda m: {"type": "laplace", "noise_multiplier": m}, st.one_of(wide_positive, odd_scalars)),
    st.builds(lambda m: {"type": "gaussian", "noise_multiplier": m}, st.one_of(wide_positive, moderate)),
    st.builds(lambda a, s: {"type": "discrete_laplace", "noise_parameter": a, "sensitivity": s},
              st.one_of(wide_positive, moderate), hostile_counts),
    st.builds(lambda p, k: {"type": "randomized_response", "noise_parameter": p, "num_buckets": k},
              st.one_of(st.floats(0, 1), wide_positive), st.one_of(st.integers(2, 5), hostile_counts)),
    st.builds(lambda e, q: {"type": "random_scan", "epsilon": e, "probability": q}, hostile_epsilon, st.floats(0, 1)),
    st.builds(lambda q, m: {"type": "poisson_sampled", "sampling_probability": q,
                            "event": {"type": "laplace", "noise_multiplier": m}}, st.floats(0, 1), wide_positive),
    st.builds(lambda n, m, s: {"type": "sampled_without_replacement", "source_dataset_size": n, "sample_size": m,
                               "event": {"type": "gaussian", "noise_multiplier": s}},
              hostile_counts, hostile_counts, wide_positive),
    st.sampled_from([{"type": "nope"}, {"type": []}, {"noise_multiplier": 1.0}, [1], "laplace",
                     {"type": "laplace", "noise_multiplier": 1.0, "extra": 1}]),
)
details = mostly(st.sampled_from([None, {}, {"x": np.arange(3)}, {(1, 2): 1}, {"x": np.float32(1.0)}]),
                 st.sampled_from([{"x": math.nan}, {"x": 1j}, {"x": object()}, {"nested": {"a": [1, math.inf]}}]))


@st.composite
def spends(draw):
    """Keyword arguments of one ``PrivacyLedger.spend`` call, plausible or hostile in any part."""
    kw = {
        "mechanism": draw(mechanism_names),
        "epsilon": draw(st.one_of(hostile_epsilon, st.sampled_from([0.0, 0.1, 1.0]))),
        "delta": draw(st.one_of(hostile_delta, st.just(0.0))),
        "count": draw(mostly(st.one_of(st.just(1), st.integers(1, 10**4)), hostile_counts)),
        "touched": draw(mostly(st.one_of(st.just(""), st.text(max_size=3)), odd_scalars)),
        "noise_source": draw(mostly(st.sampled_from(["none", "secure", "seeded", "sampler"]),
                                    st.sampled_from(["bogus", None, ["x"]]))),
        "assumptions": draw(mostly(st.sampled_from([(), ("N public",), [1, 2]]), st.sampled_from(["abc", 5]))),
        "parallel_group": draw(st.sampled_from([None, None, "g", "h", 5, ["x"]])),
        "event": draw(events),
        "details": draw(details),
    }
    return kw


def check_entry_matches(entry: LedgerEntry, kw: dict) -> None:
    assert entry.epsilon == as_float(kw["epsilon"]) and entry.delta == as_float(kw["delta"])
    assert math.isfinite(entry.epsilon) and entry.epsilon >= 0 and 0 <= entry.delta < 1
    assert 1 <= entry.count <= I64.max
    json.dumps(entry.to_dict(), allow_nan=False)


@FAST
@given(history=st.lists(spends(), max_size=6), budget=st.one_of(st.none(), st.builds(
    lambda e, d: (e, d), st.one_of(moderate, hostile_epsilon), st.one_of(st.just(0.0), hostile_delta))))
def test_ledger_spend_repeat_record(history, budget):
    """Spends, repeats and records of hostile arguments, under a basic budget (or none)."""
    ok, ledger = attempt(lambda: PrivacyLedger(budget=None if budget is None else Budget(*budget)))
    if not ok:
        return
    for kw in history:
        n = len(ledger)
        ok, entry = attempt(lambda: ledger.spend(**kw), ledger)
        if ok:
            assert new_entry(ledger, n) is entry
            check_entry_matches(entry, kw)
            # repeat: hostile counts too; the count grows by exactly that much or nothing changes
            extra = kw["count"]
            before = entry.count
            ok, updated = attempt(lambda: ledger.repeat(entry.id, extra), ledger)
            if ok:
                assert updated.count == before + int(extra) and ledger[entry.id].count == updated.count
            # re-recording the same entry is refused; a copy with a new id is a new spend
            assert not attempt(lambda: ledger.record(entry), ledger)[0]
    with pytest.raises(KeyError):
        ledger.repeat("no-such-id", 1)
    check_total(ledger)


def ledger_with(history, neighbouring="replace", budget=None) -> PrivacyLedger:
    """A ledger holding whichever of ``history``'s spends are valid."""
    ledger = PrivacyLedger(budget=budget, neighbouring=neighbouring)
    for kw in history:
        attempt(lambda: ledger.spend(**kw), ledger)
    return ledger


small_spends = spends().map(lambda kw: {**kw, "count": kw["count"] if isinstance(kw["count"], int)
                                        and kw["count"] <= 50 else 3})
methods = st.sampled_from(["basic", "advanced", "rdp", "pld", "best", "bogus", None, ["basic"]])


@TIGHT
@given(history=st.lists(small_spends, max_size=4), method=methods, delta=st.one_of(st.none(), hostile_delta))
def test_ledger_total(history, method, delta):
    """Every composition method on hostile ledgers: a non-NaN cost with δ within what was asked."""
    ledger = ledger_with(history)
    ok, total = attempt(lambda: ledger.total(method, delta), ledger)
    if not ok:
        return
    assert isinstance(total, PrivacyCost)
    assert not math.isnan(total.epsilon) and total.epsilon >= 0, total
    assert not math.isnan(total.delta) and 0 <= total.delta <= 1, total
    basic = ledger.total()
    if method == "basic":
        assert total == basic
    elif method in ("advanced", "rdp", "pld", "best") and delta is not None:
        assert total.delta <= as_float(delta) * (1 + 1e-12) + 1e-300
    if method == "best" and delta is None:  # the tightest of the valid ones: never above basic
        assert total.epsilon <= basic.epsilon * (1 + 1e-12)


@FAST
@given(history=st.lists(spends(), max_size=4), method=st.sampled_from(["basic", "advanced", "rdp"]),
       delta=hostile_delta)
def test_ledger_total_huge_counts(history, method, delta):
    """Counts up to 2**63 - 1 (and repeats past it) under the accountants whose cost does not grow with counts."""
    ledger = ledger_with(history)
    for e in ledger.entries:
        attempt(lambda: ledger.repeat(e.id, 2**62), ledger)
    ok, total = attempt(lambda: ledger.total(method, delta if method != "basic" else None), ledger)
    if ok:
        assert not math.isnan(total.epsilon) and total.epsilon >= 0 and 0 <= total.delta <= 1, total


@TIGHT
@given(history=st.lists(small_spends, max_size=5), budget=st.tuples(
    st.one_of(moderate, hostile_epsilon), st.one_of(st.sampled_from([1e-6, 0.01]), hostile_delta),
    st.sampled_from(["basic", "advanced", "rdp", "pld", "best", "bogus"])))
def test_budget_refuses_before_recording(history, budget):
    """A budget under any method: each spend is recorded whole or refused whole, and the spent total fits."""
    ok, b = attempt(lambda: Budget(*budget))
    if not ok:
        return
    assert math.isfinite(b.epsilon) and b.epsilon > 0 and 0 <= b.delta < 1
    ledger = PrivacyLedger(budget=b)
    for kw in history:
        n = len(ledger)
        ok, entry = attempt(lambda: ledger.spend(**kw), ledger)
        if ok:
            assert new_entry(ledger, n) is entry
        spent = ledger.spent
        assert b.allows(spent), (spent, b)


@FAST
@given(history=st.lists(spends(), max_size=5), mangle=st.sampled_from(
    ["none", "truncate", "not json", "list", "null", "version", "entries dict", "entry junk", "nan", "budget junk",
     "duplicate", "relation"]))
def test_ledger_json_round_trip(history, mangle):
    ledger = ledger_with(history)
    text = ledger.to_json()
    back = PrivacyLedger.from_json(text)
    assert back == ledger and back.total() == ledger.total() and back.to_json() == text
    data = json.loads(text)
    bad = {
        "truncate": text[: len(text) // 2], "not json": "{", "list": "[]", "null": "null",
        "version": json.dumps({**data, "version": 99}),
        "entries dict": json.dumps({**data, "entries": {"a": 1}}),
        "entry junk": json.dumps({**data, "entries": [1, "x"]}),
        "nan": text.replace('"epsilon": ', '"epsilon": NaN, "x": ', 1),
        "budget junk": json.dumps({**data, "budget": {"epsilon": -1, "foo": 2}}),
        "duplicate": json.dumps({**data, "entries": data["entries"] * 2}),
        "relation": json.dumps({**data, "neighbouring": "nope"}),
    }.get(mangle)
    if bad is not None:
        ok, parsed = attempt(lambda: PrivacyLedger.from_json(bad))
        if ok:
            check_total(parsed)


@FAST
@given(first=st.lists(spends(), max_size=4), second=st.lists(spends(), max_size=4),
       shared=st.booleans(), extra=st.sampled_from(["none", "int", "other relation", "empty"]))
def test_ledger_combine(first, second, shared, extra):
    a, b = ledger_with(first), ledger_with(second)
    if shared and len(a):
        b.record(a.entries[0])
        a.repeat(a.entries[0].id, 2)  # one copy grew: combine keeps the larger count
    parts = [a, b] + {"none": [], "int": [5], "other relation": [PrivacyLedger(neighbouring="add_remove")],
                      "empty": []}[extra]
    if extra == "empty":
        parts = []
    ok, combined = attempt(lambda: PrivacyLedger.combine(parts))
    if not ok:
        return
    ids = {e.id for e in a} | {e.id for e in b}
    assert {e.id for e in combined} == ids and len(combined) == len(ids)
    for e in combined:
        assert e.count == max(lg[e.id].count for lg in (a, b) if e.id in {x.id for x in lg})
    total = combined.total()
    assert total.epsilon >= max(a.total().epsilon, b.total().epsilon) * (1 - 1e-12)
    check_total(combined)


@st.composite
def subsampling_calls(draw):
    """``(base entry, q, sample_size, population_size)``: the scheme of the entry's relation, mostly."""
    relation = draw(st.sampled_from(["replace", "add_remove"]))
    eps = draw(st.one_of(moderate, wide_positive, st.just(0.0)))
    delta = draw(st.one_of(st.just(0.0), st.floats(0, 0.5)))
    kind = draw(st.sampled_from(["laplace", "gaussian", "generic"]))
    event = None
    if kind == "laplace" and 1e-300 < eps and delta == 0:
        event = {"type": "laplace", "noise_multiplier": 1.0 / eps}
    elif kind == "gaussian" and 1e-300 < eps and delta > 1e-300:
        try:
            event = {"type": "gaussian", "noise_multiplier": analytic_gaussian_sigma(eps, delta, 1.0)}
        except ValueError:  # σ beyond the double range
            pass
    entry = LedgerEntry("m", eps, delta, count=draw(st.integers(1, 10**6)), neighbouring=relation, event=event)
    if draw(st.integers(0, 3)) == 0:  # anything at all
        q = draw(st.one_of(st.none(), st.floats(0, 1), odd_scalars, st.just(5e-324)))
        sizes = [draw(st.one_of(st.none(), hostile_counts, st.integers(1, 100))) for _ in range(2)]
        return entry, q, *sizes
    if relation == "add_remove":
        return entry, draw(st.one_of(st.floats(0, 1), st.just(5e-324), st.just(1.0))), None, None
    n = draw(st.one_of(st.integers(1, 10**6), st.just(2**63 - 1)))
    return entry, None, draw(st.integers(1, n)), n


@FAST
@given(call=subsampling_calls())
def test_amplify_by_subsampling(call):
    entry, q, m, n = call
    ok, sub = attempt(lambda: amplify_by_subsampling(entry, sampling_probability=q, sample_size=m, population_size=n))
    if not ok:
        return
    assert sub.id != entry.id and sub.neighbouring == entry.neighbouring
    assert 0 <= sub.epsilon <= entry.epsilon * (1 + 1e-12) and math.isfinite(sub.epsilon)
    assert 0 <= sub.delta <= entry.delta
    ledger = PrivacyLedger(neighbouring=entry.neighbouring)
    ok, recorded = attempt(lambda: ledger.record(sub), ledger)
    assert ok, recorded  # an amplified entry is always consistent with its own event
    check_total(ledger)


# ============================================================================ model transforms (PyMC)
# Not strict about RuntimeWarnings: PyTensor probes whether a Python float fits float32 by
# casting it (an overflow warning, then float64), which is harmless.


@pytest.fixture(scope="module")
def beta_bernoulli():
    pm = pytest.importorskip("pymc")
    with pm.Model() as model:
        p = pm.Beta("p", 2.0, 2.0)
        pm.Bernoulli("y", p, observed=np.array([0, 1, 1, 0, 1]))
    return model


bounds_pairs = st.one_of(
    st.tuples(st.floats(0, 1), st.floats(0, 1)).map(lambda t: (min(t), max(t))),
    st.tuples(st.floats(0, 1), st.floats(0, 1)).map(lambda t: (min(t), max(t))),
    st.tuples(st.floats(0, 1), st.floats(0, 1)),
    st.tuples(st.one_of(st.none(), any_floats, odd_scalars), st.one_of(st.none(), any_floats, odd_scalars)),
    st.sampled_from([(0.05, 0.95), (0.95, 0.05), (0.5, 0.5), (0.0, 1.0), (5e-324, 1 - 2**-53), (None, None), "ab",
                     (0.1,), 0.2, (0.1, 0.2, 0.3)]),
)


@MODEL
@given(spec=bounds_pairs, name=st.sampled_from(["p"] * 6 + ["y", "nope"]))
def test_truncate_then_loglik_sensitivity(beta_bernoulli, spec, name):
    ok, truncated = attempt(lambda: pmdp.truncate(beta_bernoulli, {name: spec}), strict=False)
    if not ok:
        return
    assert truncated is not beta_bernoulli and [v.name for v in truncated.free_RVs] == ["p"]
    ok, sens = attempt(lambda: pmdp.loglik_sensitivity(truncated), strict=False)
    if not ok:
        return
    lo, hi = spec
    # Bernoulli on p ∈ [lo, hi] ⊂ (0, 1): Δ = (logit hi − logit lo)/2, finite and > 0
    assert 0 < lo < hi < 1
    expected = (math.log(hi) - math.log1p(-hi) - math.log(lo) + math.log1p(-lo)) / 2
    assert math.isfinite(sens.total) and sens.total > 0
    assert math.isclose(sens.total, expected, rel_tol=1e-9)


@MODEL
@given(temperature=st.one_of(hostile_epsilon, st.floats(1, 100)), part=st.sampled_from(["likelihood", "joint", "x"]))
def test_temper(beta_bernoulli, temperature, part):
    ok, tempered = attempt(lambda: pmdp.temper(beta_bernoulli, temperature, part=part), strict=False)
    if not ok:
        return
    t = as_float(temperature)
    assert 1 <= t < math.inf
    names = set(tempered.named_vars)
    assert ("dp_tempering" in names) == (t != 1.0)
    point = tempered.initial_point()
    logp = tempered.compile_logp(mode="FAST_COMPILE")(point)
    assert np.isfinite(logp)


@MODEL
@given(bounds=st.one_of(bounds_pairs, st.tuples(st.floats(-50, 0), st.floats(-50, 5))))
def test_clip_loglik_then_loglik_sensitivity(beta_bernoulli, bounds):
    ok, clipped = attempt(lambda: pmdp.clip_loglik(beta_bernoulli, *bounds) if isinstance(bounds, tuple)
                          and len(bounds) == 2 else pmdp.clip_loglik(beta_bernoulli, bounds), strict=False)
    if not ok:
        return
    lower, upper = (float(v) for v in bounds)
    ok, sens = attempt(lambda: pmdp.loglik_sensitivity(clipped), strict=False)
    assert ok, sens
    assert sens.total == upper - lower and math.isfinite(sens.total) and sens.total > 0


@MODEL
@given(bounds=st.one_of(st.none(), st.sampled_from([{}, {"y": {}}, {"nope": {}}, [1], {"y": {"x": (0, 1)}}])),
       wrt=st.sampled_from([None, "p", "y", "nope", [], ["p"], 5]),
       neighbouring=st.sampled_from(["replace", "add_remove", "bogus"]))
def test_loglik_sensitivity_hostile_arguments(beta_bernoulli, bounds, wrt, neighbouring):
    """The untruncated Beta prior leaves Δ unbounded: every call is refused, clearly."""
    ok, sens = attempt(lambda: pmdp.loglik_sensitivity(beta_bernoulli, bounds=bounds, wrt=wrt,
                                                       neighbouring=neighbouring), strict=False)
    assert not ok or (wrt not in (None, "p", ["p"]) and sens.total == 0), sens
