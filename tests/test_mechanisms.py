"""Unit tests of pymc_dp.mechanisms: validation, ledger entries, budget refusal, shapes."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.stats import norm

from pymc_dp.accounting import Budget, BudgetExceededError, PrivacyLedger
from pymc_dp.mechanisms import (
    NoiseSource,
    SecureNoise,
    SeededNoise,
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
    resolve_noise_source,
)

LN3 = math.log(3)


# ----------------------------------------------------------------------------- helpers


class _Counting:
    """Mixin counting every call to a sampling method of a NoiseSource."""

    _METHODS = (
        "laplace",
        "gaussian",
        "discrete_laplace",
        "gumbel_argmax",
        "randomized_response",
        "add_laplace",
        "add_gaussian",
        "add_discrete_laplace",
    )

    def __getattribute__(self, name):
        attr = object.__getattribute__(self, name)
        if name in _Counting._METHODS:
            calls = object.__getattribute__(self, "calls")

            def counted(*args, **kwargs):
                calls.append(name)
                return attr(*args, **kwargs)

            return counted
        return attr


class SpySeeded(_Counting, SeededNoise):
    def __init__(self, seed=0):
        self.calls = []
        SeededNoise.__init__(self, seed)


class SpySecure(_Counting, SecureNoise):
    def __init__(self):
        self.calls = []


class Exploding(SeededNoise):
    """A source whose draw fails: the ledger must then record nothing."""

    def __init__(self):
        super().__init__(0)

    def add_laplace(self, value, scale):
        raise RuntimeError("sampler broke")


def run_mechanism(kind, ledger, *, rng=None, epsilon=0.5, value=None, touched="t"):
    """Call mechanism ``kind`` with valid arguments."""
    if kind == "laplace":
        v = np.array([1.0, 2.0, 3.0]) if value is None else value
        return laplace_mechanism(v, epsilon=epsilon, sensitivity=1.0, ledger=ledger, rng=rng, touched=touched)
    if kind == "gaussian":
        v = np.array([1.0, 2.0]) if value is None else value
        return gaussian_mechanism(v, epsilon=epsilon, delta=1e-6, sensitivity=1.0, ledger=ledger, rng=rng, touched=touched)
    if kind == "geometric":
        v = np.array([3, 4]) if value is None else value
        return geometric_mechanism(v, epsilon=epsilon, sensitivity=1, ledger=ledger, rng=rng, touched=touched)
    if kind == "exponential":
        return exponential_mechanism(
            ["a", "b", "c"], [0.0, 1.0, 2.0], epsilon=epsilon, sensitivity=1.0, ledger=ledger, rng=rng, touched=touched
        )
    if kind == "randomized_response":
        v = np.array([True, False, True]) if value is None else value
        return randomized_response(v, epsilon=epsilon, ledger=ledger, rng=rng, touched=touched)
    raise AssertionError(kind)


MECHANISMS = ["laplace", "gaussian", "geometric", "exponential", "randomized_response"]


# ----------------------------------------------------------------------------- validation

BAD_EPSILONS = [0.0, -1.0, float("nan"), float("inf"), -float("inf"), "1.0", None]


@pytest.mark.parametrize("bad", BAD_EPSILONS)
def test_bad_epsilon_is_refused_by_every_mechanism(bad):
    calls = {
        "laplace": lambda L: laplace_mechanism(1.0, epsilon=bad, sensitivity=1.0, ledger=L),
        "gaussian": lambda L: gaussian_mechanism(1.0, epsilon=bad, delta=1e-6, sensitivity=1.0, ledger=L),
        "geometric": lambda L: geometric_mechanism(1, epsilon=bad, ledger=L),
        "exponential": lambda L: exponential_mechanism([0, 1], [0.0, 1.0], epsilon=bad, sensitivity=1.0, ledger=L),
        "rr": lambda L: randomized_response(True, epsilon=bad, ledger=L),
        "probs": lambda L: exponential_mechanism_probabilities([0.0, 1.0], epsilon=bad, sensitivity=1.0),
        "sigma": lambda L: analytic_gaussian_sigma(bad, 1e-6, 1.0),
    }
    for name, call in calls.items():
        ledger = PrivacyLedger()
        with pytest.raises(ValueError, match="epsilon"):
            call(ledger)
        assert ledger.entries == (), name


@pytest.mark.parametrize("bad", [-0.1, 1.0, 1.5, float("nan"), float("inf"), 0.0])
def test_bad_delta_is_refused_by_gaussian(bad):
    ledger = PrivacyLedger()
    with pytest.raises(ValueError, match="delta"):
        gaussian_mechanism(1.0, epsilon=1.0, delta=bad, sensitivity=1.0, ledger=ledger)
    with pytest.raises(ValueError, match="delta"):
        analytic_gaussian_sigma(1.0, bad, 1.0)
    assert ledger.entries == ()


@pytest.mark.parametrize("bad", [-1.0, -1e-12, float("nan"), float("inf")])
def test_bad_sensitivity_is_refused(bad):
    calls = [
        lambda L: laplace_mechanism(1.0, epsilon=1.0, sensitivity=bad, ledger=L),
        lambda L: gaussian_mechanism(1.0, epsilon=1.0, delta=1e-6, sensitivity=bad, ledger=L),
        lambda L: geometric_mechanism(1, epsilon=1.0, sensitivity=bad, ledger=L),
        lambda L: exponential_mechanism([0, 1], [0.0, 1.0], epsilon=1.0, sensitivity=bad, ledger=L),
    ]
    for call in calls:
        ledger = PrivacyLedger()
        with pytest.raises(ValueError, match="sensitivity"):
            call(ledger)
        assert ledger.entries == ()


@pytest.mark.parametrize("bad_value", [float("nan"), [1.0, float("nan")], [[0.0, float("inf")]], -float("inf")])
def test_nan_or_inf_value_is_refused(bad_value):
    for call in (
        lambda L: laplace_mechanism(bad_value, epsilon=1.0, sensitivity=1.0, ledger=L),
        lambda L: gaussian_mechanism(bad_value, epsilon=1.0, delta=1e-6, sensitivity=1.0, ledger=L),
        lambda L: geometric_mechanism(bad_value, epsilon=1.0, ledger=L),
    ):
        ledger = PrivacyLedger()
        with pytest.raises(ValueError, match="value"):
            call(ledger)
        assert ledger.entries == ()


@pytest.mark.parametrize("bad_value", [2.5, [1, 2.5], np.array([0.1]), "seven", np.array([True, False])])
def test_geometric_needs_integer_values(bad_value):
    ledger = PrivacyLedger()
    with pytest.raises(ValueError, match="value"):
        geometric_mechanism(bad_value, epsilon=1.0, ledger=ledger)
    assert ledger.entries == ()


def test_geometric_needs_integer_sensitivity_and_accepts_integral_floats():
    ledger = PrivacyLedger()
    with pytest.raises(ValueError, match="sensitivity"):
        geometric_mechanism(3, epsilon=1.0, sensitivity=1.5, ledger=ledger)
    assert ledger.entries == ()
    out = geometric_mechanism(np.array([3.0, 4.0]), epsilon=1.0, sensitivity=2.0, ledger=ledger, rng=0)
    assert out.dtype == np.int64
    assert ledger.entries[0].event == {"type": "discrete_laplace", "noise_parameter": 0.5, "sensitivity": 2}


@pytest.mark.parametrize("kind", MECHANISMS)
def test_ledger_is_required(kind):
    with pytest.raises(ValueError, match=r"ledger=pmdp\.PrivacyLedger\(\)"):
        run_mechanism(kind, None)


@pytest.mark.parametrize("kind", MECHANISMS)
def test_ledger_must_be_a_ledger(kind):
    with pytest.raises(ValueError, match="ledger"):
        run_mechanism(kind, {"budget": 1.0})


@pytest.mark.parametrize("kind", MECHANISMS)
@pytest.mark.parametrize("bad_rng", ["secure", 1.5, True, np.random.RandomState(0)])
def test_bad_rng_is_refused_before_charging(kind, bad_rng):
    ledger = PrivacyLedger()
    with pytest.raises(ValueError, match="rng"):
        run_mechanism(kind, ledger, rng=bad_rng)
    assert ledger.entries == ()


@pytest.mark.parametrize("kind", MECHANISMS)
def test_touched_must_be_a_string(kind):
    ledger = PrivacyLedger()
    with pytest.raises(ValueError, match="touched"):
        run_mechanism(kind, ledger, rng=0, touched=3)
    assert ledger.entries == ()


def test_exponential_mechanism_argument_checks():
    L = PrivacyLedger()
    ok = dict(epsilon=1.0, sensitivity=1.0, ledger=L)
    with pytest.raises(ValueError, match="utilities"):
        exponential_mechanism([0, 1], [0.0, float("nan")], **ok)
    with pytest.raises(ValueError, match="utilities"):
        exponential_mechanism([0, 1, 2], [0.0, 1.0], **ok)
    with pytest.raises(ValueError, match="utilities"):
        exponential_mechanism([0, 1], [[0.0, 1.0]], **ok)
    with pytest.raises(ValueError, match="candidates"):
        exponential_mechanism([], [], **ok)
    with pytest.raises(ValueError, match="base_measure"):
        exponential_mechanism([0, 1], [0.0, 1.0], base_measure=[1.0, -0.5], **ok)
    with pytest.raises(ValueError, match="base_measure"):
        exponential_mechanism([0, 1], [0.0, 1.0], base_measure=[0.0, 0.0], **ok)
    with pytest.raises(ValueError, match="base_measure"):
        exponential_mechanism([0, 1], [0.0, 1.0], base_measure=[1.0], **ok)
    with pytest.raises(ValueError, match="base_measure"):
        exponential_mechanism([0, 1], [0.0, 1.0], base_measure=[1.0, float("nan")], **ok)
    with pytest.raises(ValueError, match="sensitivity"):
        exponential_mechanism([0, 1], [0.0, 1.0], epsilon=1.0, sensitivity=0.0, ledger=L)
    with pytest.raises(ValueError, match="monotonic"):
        exponential_mechanism([0, 1], [0.0, 1.0], monotonic="yes", **ok)
    assert L.entries == ()


def test_randomized_response_argument_checks():
    L = PrivacyLedger()
    with pytest.raises(ValueError, match="value"):
        randomized_response(np.array([0, 1]), ledger=L)  # ints need categories=
    with pytest.raises(ValueError, match="value"):
        randomized_response(np.array([0, 3]), categories=3, ledger=L)
    with pytest.raises(ValueError, match="value"):
        randomized_response(np.array([0.0, 1.0]), categories=3, ledger=L)
    with pytest.raises(ValueError, match="value"):
        randomized_response(["a", "z"], categories=["a", "b"], ledger=L)
    with pytest.raises(ValueError, match="categories"):
        randomized_response(0, categories=1, ledger=L)
    with pytest.raises(ValueError, match="categories"):
        randomized_response("a", categories=["a"], ledger=L)
    with pytest.raises(ValueError, match="categories"):
        randomized_response("a", categories=["a", "a"], ledger=L)
    # ε so large that the truth probability rounds to 1 would release the data unchanged.
    with pytest.raises(ValueError, match="epsilon"):
        randomized_response(True, epsilon=100.0, ledger=L)
    assert L.entries == ()
    with pytest.raises(ValueError, match="responses"):
        randomized_response_debias(np.array([1, 0]))


# ----------------------------------------------------------------------------- the ledger entry


@pytest.mark.parametrize("rng, label", [(None, "secure"), (7, "seeded"), (np.random.default_rng(7), "seeded")])
@pytest.mark.parametrize("kind", MECHANISMS)
def test_one_entry_with_the_right_fields(kind, rng, label):
    ledger = PrivacyLedger(neighbouring="replace")
    run_mechanism(kind, ledger, rng=rng, epsilon=0.7, touched="y:stat")
    assert len(ledger.entries) == 1
    e = ledger.entries[0]
    assert e.mechanism == {"laplace": "laplace", "gaussian": "gaussian", "geometric": "geometric",
                           "exponential": "exponential", "randomized_response": "randomized_response"}[kind]
    assert e.epsilon == 0.7
    assert e.delta == (1e-6 if kind == "gaussian" else 0.0)
    assert e.noise_source == label
    assert e.touched == "y:stat"
    assert e.neighbouring == "replace"
    assert e.count == 1
    assert "sensitivity" in e.details and "scale" in e.details
    if kind == "laplace":
        assert e.event == {"type": "laplace", "noise_multiplier": pytest.approx(1 / 0.7, rel=1e-12)}
        assert e.details["scale"] == pytest.approx(1 / 0.7, rel=1e-12)
    elif kind == "gaussian":
        sigma = analytic_gaussian_sigma(0.7, 1e-6, 1.0)
        assert e.event == {"type": "gaussian", "noise_multiplier": sigma}
        assert e.details["scale"] == sigma
    elif kind == "geometric":
        assert e.event == {"type": "discrete_laplace", "noise_parameter": pytest.approx(0.7, rel=1e-12), "sensitivity": 1}
    elif kind == "exponential":
        assert e.event is None
        assert e.details["scale"] == pytest.approx(2 / 0.7, rel=1e-12)
    else:
        p = math.exp(0.7) / (math.exp(0.7) + 1)
        assert e.event["type"] == "randomized_response"
        assert e.event["num_buckets"] == 2
        assert e.event["noise_parameter"] == pytest.approx(2 / (math.exp(0.7) + 1), rel=1e-12)
        assert e.details["truth_probability"] == pytest.approx(p, rel=1e-12)


def test_neighbouring_relation_comes_from_the_ledger():
    ledger = PrivacyLedger(neighbouring="add_remove")
    laplace_mechanism(1.0, epsilon=1.0, sensitivity=1.0, ledger=ledger, rng=0)
    randomized_response([True, False], ledger=ledger, rng=0)
    assert [e.neighbouring for e in ledger.entries] == ["add_remove", "add_remove"]
    assert ledger.entries[0].assumptions == ()
    # Under add/remove, randomised response releases N exactly: the entry must say so.
    assert any("N is public" in a for a in ledger.entries[1].assumptions)
    ledger2 = PrivacyLedger()
    randomized_response([True, False], ledger=ledger2, rng=0)
    assert ledger2.entries[0].assumptions == ()


def test_scale_is_rounded_up_never_down():
    """Δ/ε in doubles can round down by an ulp; the recorded scale must satisfy Δ/b <= ε exactly."""
    for eps in (0.3, 0.1, 0.7, 1 / 3, 2.9, 1e-3):
        for sens in (1.0, 3.0, 0.7):
            ledger = PrivacyLedger()
            laplace_mechanism(0.0, epsilon=eps, sensitivity=sens, ledger=ledger, rng=0)
            b = ledger.entries[0].details["scale"]
            assert Fraction(sens) <= Fraction(eps) * Fraction(b)
            assert b <= math.nextafter(sens / eps, math.inf)  # and no bigger than necessary


def test_failed_draw_records_nothing():
    ledger = PrivacyLedger()
    with pytest.raises(RuntimeError, match="sampler broke"):
        laplace_mechanism(1.0, epsilon=1.0, sensitivity=1.0, ledger=ledger, rng=Exploding())
    assert ledger.entries == ()


# ----------------------------------------------------------------------------- budget refusal


@pytest.mark.parametrize("spy_cls", [SpySeeded, SpySecure])
@pytest.mark.parametrize("kind", MECHANISMS)
def test_budget_refusal_draws_nothing_and_records_nothing(kind, spy_cls):
    ledger = PrivacyLedger(budget=Budget(epsilon=1.0, delta=1e-3))
    ledger.spend("laplace", epsilon=0.8, touched="earlier")
    before = ledger.entries
    spy = spy_cls()
    with pytest.raises(BudgetExceededError):
        run_mechanism(kind, ledger, rng=spy, epsilon=0.5)
    assert ledger.entries == before
    assert spy.calls == []
    # The same spy does draw when the spend fits, so the count above is meaningful.
    run_mechanism(kind, ledger, rng=spy, epsilon=0.1)
    assert len(spy.calls) >= 1
    assert len(ledger.entries) == 2


def test_sensitivity_zero_adds_no_noise_but_is_recorded():
    spy = SpySeeded()
    ledger = PrivacyLedger()
    x = np.array([1.5, -2.0])
    out = laplace_mechanism(x, epsilon=0.5, sensitivity=0.0, ledger=ledger, rng=spy)
    np.testing.assert_array_equal(out, x)
    out = gaussian_mechanism(x, epsilon=0.5, delta=1e-6, sensitivity=0.0, ledger=ledger, rng=spy)
    np.testing.assert_array_equal(out, x)
    out = geometric_mechanism([3, 4], epsilon=0.5, sensitivity=0, ledger=ledger, rng=spy)
    np.testing.assert_array_equal(out, [3, 4])
    assert spy.calls == []
    assert [e.epsilon for e in ledger.entries] == [0.5, 0.5, 0.5]
    assert all(e.event is None and e.noise_source == "none" for e in ledger.entries)
    assert all(e.details["sensitivity"] == 0 for e in ledger.entries)


# ----------------------------------------------------------------------------- shapes and types


@pytest.mark.parametrize("shape", [(), (1,), (5,), (2, 3), (2, 1, 4)])
@pytest.mark.parametrize("rng", [None, 3])
def test_shapes_are_preserved(shape, rng):
    ledger = PrivacyLedger()
    x = np.arange(int(np.prod(shape)), dtype=float).reshape(shape)
    assert np.shape(laplace_mechanism(x, epsilon=1.0, sensitivity=1.0, ledger=ledger, rng=rng)) == shape
    assert np.shape(gaussian_mechanism(x, epsilon=1.0, delta=1e-5, sensitivity=1.0, ledger=ledger, rng=rng)) == shape
    g = geometric_mechanism(x.astype(int), epsilon=1.0, ledger=ledger, rng=rng)
    assert np.shape(g) == shape and np.asarray(g).dtype == np.int64
    r = randomized_response(x.astype(int) % 2 == 0, ledger=ledger, rng=rng)
    assert np.shape(r) == shape and np.asarray(r).dtype == bool
    r = randomized_response(x.astype(int) % 3, categories=3, ledger=ledger, rng=rng)
    assert np.shape(r) == shape


def test_scalar_in_scalar_out():
    ledger = PrivacyLedger()
    out = laplace_mechanism(3.0, epsilon=1.0, sensitivity=1.0, ledger=ledger, rng=0)
    assert type(out) is float
    out = laplace_mechanism(np.float64(3.0), epsilon=1.0, sensitivity=1.0, ledger=ledger, rng=0)
    assert isinstance(out, np.floating) and np.ndim(out) == 0
    out = gaussian_mechanism(3, epsilon=1.0, delta=1e-5, sensitivity=1.0, ledger=ledger)
    assert type(out) is float
    out = geometric_mechanism(3, epsilon=1.0, ledger=ledger)
    assert type(out) is int
    out = randomized_response(True, ledger=ledger)
    assert type(out) is bool
    out = randomized_response("b", categories=["a", "b", "c"], ledger=ledger, rng=1)
    assert out in ("a", "b", "c") and type(out) is str
    out = randomized_response(["b", "c"], categories=["a", "b", "c"], ledger=ledger, rng=1)
    assert out.shape == (2,) and set(out.tolist()) <= {"a", "b", "c"}
    assert exponential_mechanism([(1, 2), (3, 4)], [0.0, 1.0], epsilon=1.0, sensitivity=1.0, ledger=ledger) in [(1, 2), (3, 4)]


def test_list_input_gives_array_and_does_not_modify_input():
    ledger = PrivacyLedger()
    x = np.array([1.0, 2.0])
    out = laplace_mechanism(x, epsilon=1.0, sensitivity=1.0, ledger=ledger, rng=0)
    np.testing.assert_array_equal(x, [1.0, 2.0])
    assert not np.array_equal(out, x)
    out = laplace_mechanism([1, 2], epsilon=1.0, sensitivity=1.0, ledger=ledger, rng=0)
    assert isinstance(out, np.ndarray) and out.dtype == float


# ----------------------------------------------------------------------------- reproducibility / sources


@pytest.mark.parametrize("kind", MECHANISMS)
def test_seeded_runs_are_reproducible(kind):
    outs = []
    for rng in (12345, 12345, np.random.default_rng(12345)):
        outs.append(run_mechanism(kind, PrivacyLedger(), rng=rng, value=None))
    for o in outs[1:]:
        np.testing.assert_array_equal(np.asarray(outs[0]), np.asarray(o))


def test_different_seeds_give_different_noise():
    a = laplace_mechanism(np.zeros(50), epsilon=1.0, sensitivity=1.0, ledger=PrivacyLedger(), rng=1)
    b = laplace_mechanism(np.zeros(50), epsilon=1.0, sensitivity=1.0, ledger=PrivacyLedger(), rng=2)
    assert not np.array_equal(a, b)


def test_secure_noise_is_not_repeatable():
    a = laplace_mechanism(np.zeros(50), epsilon=1.0, sensitivity=1.0, ledger=PrivacyLedger())
    b = laplace_mechanism(np.zeros(50), epsilon=1.0, sensitivity=1.0, ledger=PrivacyLedger())
    # Two independent secure draws of 50 continuous values coincide with probability 0.
    assert not np.array_equal(a, b)


def test_resolve_noise_source():
    assert isinstance(resolve_noise_source(None), SecureNoise)
    assert resolve_noise_source(None).name == "secure"
    s = resolve_noise_source(3)
    assert isinstance(s, SeededNoise) and s.name == "seeded"
    g = np.random.default_rng(0)
    assert resolve_noise_source(g).rng is g
    assert resolve_noise_source(np.int64(4)).name == "seeded"
    spy = SpySeeded()
    assert resolve_noise_source(spy) is spy
    for bad in ("secure", 1.5, True, np.random.RandomState(0), object()):
        with pytest.raises(ValueError, match="rng"):
            resolve_noise_source(bad)
    with pytest.raises(TypeError):
        NoiseSource()  # abstract


def test_discrete_laplace_alias():
    assert discrete_laplace_mechanism is geometric_mechanism


# ----------------------------------------------------------------------------- Gaussian calibration


def _bw_delta(sigma, eps, sens):
    """Balle & Wang (2018) Thm 8, written out independently of the package."""
    a = sens / (2 * sigma)
    b = eps * sigma / sens
    return norm.cdf(a - b) - math.exp(eps) * norm.cdf(-a - b)


@pytest.mark.parametrize("eps", [0.05, 0.3, 0.9, 1.0, 2.0, 8.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-6, 1e-9])
@pytest.mark.parametrize("sens", [1.0, 0.25, 7.0])
def test_analytic_gaussian_sigma(eps, delta, sens):
    sigma = analytic_gaussian_sigma(eps, delta, sens)
    # The Balle-Wang condition holds ...
    assert _bw_delta(sigma, eps, sens) <= delta * (1 + 1e-9)
    # ... and σ is (essentially) the smallest such: within 1% of the equality point,
    # found here by an independent root search.
    s_eq = brentq(lambda s: _bw_delta(s, eps, sens) - delta, 1e-6 * sens, 1e4 * sens, xtol=1e-14, rtol=1e-14)
    assert s_eq * (1 - 1e-9) <= sigma <= s_eq * 1.01
    # A σ 1% smaller violates the condition, so the calibration is not loose.
    assert _bw_delta(0.99 * sigma, eps, sens) > delta
    if eps < 1:
        classical = sens * math.sqrt(2 * math.log(1.25 / delta)) / eps
        assert classical >= sigma


def test_analytic_gaussian_sigma_sensitivity_zero_and_scaling():
    assert analytic_gaussian_sigma(1.0, 1e-5, 0.0) == 0.0
    assert analytic_gaussian_sigma(1.0, 1e-5, 3.0) == pytest.approx(3 * analytic_gaussian_sigma(1.0, 1e-5, 1.0), rel=1e-12)


# ----------------------------------------------------------------------------- exponential mechanism


def test_exponential_probabilities_match_the_closed_form():
    u = np.array([0.0, 1.0, 3.0, -2.0])
    eps, sens = 1.3, 0.7
    w = np.exp(eps * u / (2 * sens))
    np.testing.assert_allclose(exponential_mechanism_probabilities(u, epsilon=eps, sensitivity=sens), w / w.sum(), rtol=1e-12)
    w = np.exp(eps * u / sens)
    np.testing.assert_allclose(
        exponential_mechanism_probabilities(u, epsilon=eps, sensitivity=sens, monotonic=True), w / w.sum(), rtol=1e-12
    )
    mu = np.array([0.5, 0.0, 2.0, 1.0])
    w = mu * np.exp(eps * u / (2 * sens))
    p = exponential_mechanism_probabilities(u, epsilon=eps, sensitivity=sens, base_measure=mu)
    np.testing.assert_allclose(p, w / w.sum(), rtol=1e-12)
    assert p[1] == 0.0


def test_exponential_probabilities_are_stable_for_huge_utilities():
    eps, sens = 1.0, 1.0
    u = np.array([1e6, 1e6 - 2.0, -1e6, 1e6])
    p = exponential_mechanism_probabilities(u, epsilon=eps, sensitivity=sens)
    assert np.all(np.isfinite(p)) and p.sum() == pytest.approx(1.0, abs=1e-15)
    # Only differences matter: shift to [0, -2, -2e6, 0].
    w = np.array([1.0, math.exp(-1.0), 0.0, 1.0])
    np.testing.assert_allclose(p, w / w.sum(), rtol=1e-12, atol=1e-300)
    p_neg = exponential_mechanism_probabilities(-u, epsilon=eps, sensitivity=sens)
    assert np.all(np.isfinite(p_neg)) and p_neg[2] == pytest.approx(1.0)
    # The mechanism itself (both sources) copes too, and never picks the hopeless candidate.
    for rng in (None, 0):
        for _ in range(20):
            c = exponential_mechanism(list("abcd"), u, epsilon=eps, sensitivity=sens, ledger=PrivacyLedger(), rng=rng)
            assert c in ("a", "b", "d")


@pytest.mark.parametrize("rng", [None, 0])
def test_exponential_mechanism_never_returns_excluded_candidates(rng):
    ledger = PrivacyLedger()
    for _ in range(50):
        c = exponential_mechanism(
            ["x", "y", "z"], [100.0, 0.0, 0.0], epsilon=1.0, sensitivity=1.0, base_measure=[0.0, 1.0, 1.0], ledger=ledger, rng=rng
        )
        assert c in ("y", "z")


# ----------------------------------------------------------------------------- randomised response


def test_randomized_response_ln3_is_truth_with_probability_three_quarters():
    assert randomized_response_truth_probability(LN3) == 0.75
    assert randomized_response_truth_probability(LN3, 3) == pytest.approx(3 / 5, rel=1e-15)
    ledger = PrivacyLedger()
    randomized_response([True], ledger=ledger, rng=0)  # default ε is ln 3
    e = ledger.entries[0]
    assert e.epsilon == pytest.approx(LN3, rel=1e-15)
    assert e.details["truth_probability"] == 0.75
    # dp-accounting's convention: w.p. 1 - p the truth, w.p. p a uniform of 2 ("a fair coin").
    assert e.event == {"type": "randomized_response", "noise_parameter": 0.5, "num_buckets": 2}


@pytest.mark.parametrize("eps", [1e-6, 0.1, LN3, 1.0, 5.0, 30.0])
@pytest.mark.parametrize("k", [2, 3, 10])
def test_randomized_response_probability_never_exceeds_epsilon(eps, k):
    p = randomized_response_truth_probability(eps, k)
    assert 1 / k <= p < 1
    # Exact rational check of the privacy ratio against a float upper bound... and closeness.
    ratio = Fraction(p) * (k - 1) / (1 - Fraction(p))
    assert ratio <= Fraction(math.nextafter(math.exp(eps), math.inf))
    assert p == pytest.approx(math.exp(eps) / (math.exp(eps) + k - 1), rel=1e-12)


def test_randomized_response_categories_round_trip():
    ledger = PrivacyLedger()
    cats = ["red", "green", "blue"]
    out = randomized_response(["red"] * 30, categories=cats, epsilon=1.0, ledger=ledger, rng=4)
    assert set(out.tolist()) <= set(cats)
    assert ledger.entries[0].event["num_buckets"] == 3
    assert ledger.entries[0].event["noise_parameter"] == pytest.approx(3 / (math.e + 2), rel=1e-12)


def test_debias_inverts_the_expected_frequencies_exactly():
    """The debiased estimate is linear in the frequencies, so unbiasedness means it maps
    the *expected* response frequencies back to the true proportions exactly."""
    # Booleans, ε = ln 3: with π = 0.3 the expected frequency of True is 0.75·0.3 + 0.25·0.7 = 0.4.
    responses = np.array([True] * 400 + [False] * 600)
    assert randomized_response_debias(responses) == pytest.approx(0.3, abs=1e-12)
    # k = 3, ε = ln 3: p = 3/5, q = 1/5. Proportions π = (0.5, 0.3, 0.2) give expected
    # frequencies q + (p - q) π = (0.4, 0.32, 0.28).
    resp = np.repeat([0, 1, 2], [400, 320, 280])
    est = randomized_response_debias(resp, categories=3)
    np.testing.assert_allclose(est, [0.5, 0.3, 0.2], atol=1e-12)
    est = randomized_response_debias(np.array(["a", "b", "c"])[resp], categories=["a", "b", "c"])
    np.testing.assert_allclose(est, [0.5, 0.3, 0.2], atol=1e-12)
    assert est.sum() == pytest.approx(1.0)


def test_debias_is_unbiased_by_simulation():
    rng = np.random.default_rng(2024)
    truth = rng.random(400) < 0.2  # true proportion ≈ 0.2 (exactly truth.mean())
    estimates = [
        randomized_response_debias(randomized_response(truth, ledger=PrivacyLedger(), rng=rng)) for _ in range(2000)
    ]
    # SD of one estimate ≤ sqrt(0.25/400)/(2p-1) = 0.05; of the mean of 2000 ≈ 0.0011; 5 SE.
    assert np.mean(estimates) == pytest.approx(truth.mean(), abs=5 * 0.05 / math.sqrt(2000))


def test_analytic_gaussian_sigma_against_high_precision():
    """σ is never below the exact root of the Balle-Wang condition (50-digit arithmetic)."""
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 50

    def exact_delta(s, e):
        s, e = mp.mpf(s), mp.mpf(e)
        return mp.ncdf(1 / (2 * s) - e * s) - mp.exp(e) * mp.ncdf(-1 / (2 * s) - e * s)

    for eps, delta in [(1e-4, 1e-8), (0.05, 1e-9), (1.0, 1e-5), (50.0, 1e-12), (300.0, 1e-300)]:
        sigma = analytic_gaussian_sigma(eps, delta, 1.0)
        assert exact_delta(sigma, eps) <= delta
        root = mp.findroot(lambda x: exact_delta(x, eps) - delta, sigma)
        assert 0 <= (sigma - root) / root < 1e-9
