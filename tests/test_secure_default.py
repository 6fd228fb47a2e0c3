"""Floating-point safety: with no ``rng``, every public entry point that draws noise uses SecureNoise.

Textbook floating-point samplers leak (Mironov 2012); OpenDP's exact samplers
(:class:`pymc_dp.mechanisms.SecureNoise`) do not. Each entry point is called with no
``rng`` under a *spy*:

* every SecureNoise sampler is wrapped (it still draws real OpenDP noise) and records
  what it returned, so a test can check that the released value *is* that output;
* every SeededNoise sampler (and its constructor) raises if touched, and so do
  ``numpy.random.default_rng`` and NumPy's legacy module-level samplers when called
  from pymc_dp code — so an entry point that fell back to NumPy when ``rng`` is None
  would fail here (PyMC and PyTensor still make the generators their graphs need);

and the ledger entry it records must say ``noise_source="secure"``.
"""

from __future__ import annotations

import contextlib
import copy
import sys
import warnings

import numpy as np
import pymc as pm
import pytest

import pymc_dp as pmdp
from pymc_dp.accounting import PrivacyLedger
from pymc_dp.mechanisms import (
    SecureNoise,
    SeededNoise,
    discrete_laplace_mechanism,
    exponential_mechanism,
    gaussian_mechanism,
    geometric_mechanism,
    laplace_mechanism,
    randomized_response,
    resolve_noise_source,
)

SAMPLERS = (
    "laplace", "gaussian", "discrete_laplace", "gumbel_argmax", "randomized_response",
    "add_laplace", "add_gaussian", "add_discrete_laplace",
)
NUMPY_SAMPLERS = (
    "default_rng", "laplace", "normal", "gumbel", "geometric", "random", "random_sample", "uniform", "exponential",
    "standard_normal", "rand", "randn", "randint", "choice", "binomial",
)
RECORDS = np.r_[np.ones(12), np.zeros(28)].astype(np.int64)


class NumPyNoiseUsed(AssertionError):
    pass


class Spy:
    """What SecureNoise returned, in call order; ``overrides`` replace a sampler's answer."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []
        self.overrides: dict[str, object] = {}
        self._lift: list = []

    def results(self, name: str) -> list:
        return [out for n, out in self.calls if n == name]

    @contextlib.contextmanager
    def numpy_allowed(self):
        """Lift the NumPy guard (for ``pm.sample``, whose MCMC uses NumPy generators by design)."""
        saved = [(obj, name, getattr(obj, name)) for obj, name, _ in self._lift]
        for obj, name, original in self._lift:
            setattr(obj, name, original)
        try:
            yield
        finally:
            for obj, name, guarded in saved:
                setattr(obj, name, guarded)


def _forbidden(what: str, original=None):
    """Raise if called from pymc_dp (or this test module); other callers (PyMC, PyTensor) get ``original``.

    PyMC and PyTensor create NumPy generators for their own graph machinery (e.g. the
    shared RNG of every random variable a model builds); that is not noise of a release.
    """

    def raise_(*args, **kwargs):
        caller = sys._getframe(1).f_globals.get("__name__", "")
        if original is None or caller.split(".")[0] == "pymc_dp" or caller == __name__:
            raise NumPyNoiseUsed(f"{what} was called from {caller} although no rng was given: the default must be "
                                 "SecureNoise.")
        return original(*args, **kwargs)

    return raise_


@pytest.fixture
def spy(monkeypatch):
    s = Spy()
    for name in SAMPLERS:
        original = getattr(SecureNoise, name)

        def wrapper(self, *args, _original=original, _name=name, **kwargs):
            override = s.overrides.get(_name)
            out = override(*args, **kwargs) if override is not None else _original(self, *args, **kwargs)
            s.calls.append((_name, copy.deepcopy(out)))
            return out

        monkeypatch.setattr(SecureNoise, name, wrapper)
        monkeypatch.setattr(SeededNoise, name, _forbidden(f"SeededNoise.{name}"))
    monkeypatch.setattr(SeededNoise, "__init__", _forbidden("SeededNoise()"))
    for name in NUMPY_SAMPLERS:
        s._lift.append((np.random, name, getattr(np.random, name)))
        monkeypatch.setattr(np.random, name, _forbidden(f"numpy.random.{name}", getattr(np.random, name)))
    return s


def only_secure(ledger: PrivacyLedger) -> None:
    assert len(ledger) > 0
    assert {e.noise_source for e in ledger.entries} == {"secure"}


# --------------------------------------------------------------------------- the guard itself


def test_the_guard_catches_a_silent_fallback_to_numpy(spy):
    def leaky_mechanism(value, rng=None):  # what the guard is for: rng=None quietly becoming NumPy
        return value + np.random.default_rng(rng).laplace(0.0, 1.0)

    with pytest.raises(NumPyNoiseUsed):
        leaky_mechanism(1.0)
    with pytest.raises(NumPyNoiseUsed):
        np.random.laplace(0.0, 1.0)
    with pytest.raises(NumPyNoiseUsed):
        resolve_noise_source(0)  # a seed makes SeededNoise: caught
    with pytest.raises(NumPyNoiseUsed):
        laplace_mechanism(1.0, epsilon=1.0, sensitivity=1.0, ledger=PrivacyLedger(), rng=0)
    assert isinstance(resolve_noise_source(None), SecureNoise)


def test_the_spy_draws_real_opendp_noise(spy):
    a, b = SecureNoise().laplace(1.0, 50), SecureNoise().laplace(1.0, 50)
    assert not np.array_equal(a, b) and np.all(np.isfinite(a))  # unseeded, so fresh each time
    assert [n for n, _ in spy.calls].count("laplace") == 2


# --------------------------------------------------------------------------- the mechanisms


def test_laplace_mechanism(spy):
    ledger = PrivacyLedger()
    out = laplace_mechanism(np.array([3.0, 7.0]), epsilon=1.0, sensitivity=1.0, ledger=ledger)
    (noisy,) = spy.results("add_laplace")
    np.testing.assert_array_equal(out, noisy)
    only_secure(ledger)


def test_gaussian_mechanism(spy):
    ledger = PrivacyLedger()
    out = gaussian_mechanism(np.array([3.0, 7.0]), epsilon=1.0, delta=1e-6, sensitivity=1.0, ledger=ledger)
    (noisy,) = spy.results("add_gaussian")
    np.testing.assert_array_equal(out, noisy)
    only_secure(ledger)


@pytest.mark.parametrize("mechanism", [geometric_mechanism, discrete_laplace_mechanism])
def test_geometric_and_discrete_laplace_mechanisms(spy, mechanism):
    ledger = PrivacyLedger()
    out = mechanism(np.array([3, 7, 0]), epsilon=1.0, sensitivity=1, ledger=ledger)
    (noisy,) = spy.results("add_discrete_laplace")
    np.testing.assert_array_equal(out, noisy)
    assert out.dtype == np.int64
    only_secure(ledger)


def test_exponential_mechanism(spy):
    ledger = PrivacyLedger()
    candidates = ["a", "b", "c", "d"]
    out = exponential_mechanism(candidates, [0.0, 1.0, 2.0, 0.5], epsilon=1.0, sensitivity=1.0, ledger=ledger)
    (index,) = spy.results("gumbel_argmax")
    assert out == candidates[index]
    only_secure(ledger)
    # The answer is the secure sampler's: forcing its index forces the output.
    spy.overrides["gumbel_argmax"] = lambda scores, scale: 0
    assert exponential_mechanism(candidates, [0.0, 1e6, 0.0, 0.0], epsilon=1.0, sensitivity=1.0,
                                 ledger=ledger) == "a"


@pytest.mark.parametrize("value, categories", [(np.array([True, False, True, True]), None),
                                               (np.array([0, 2, 1, 2, 0]), 3)])
def test_randomized_response(spy, value, categories):
    ledger = PrivacyLedger()
    out = randomized_response(value, epsilon=1.0, ledger=ledger, categories=categories)
    (answers,) = spy.results("randomized_response")
    np.testing.assert_array_equal(np.asarray(out, dtype=np.int64), answers)
    only_secure(ledger)


# --------------------------------------------------------------------------- privatize and release_posterior


FAMILIES = [
    ("bernoulli", RECORDS, None, {}),
    ("binomial", np.array([0, 1, 4, 4, 3]), None, {"n_trials": 4}),
    ("categorical", np.array([0, 2, 2, 3, 1]), None, {"k": 4}),
    ("poisson", np.array([0, 2, 5, 1, 4]), {"upper": 5}, {}),
    ("normal", np.array([0.5, 1.5, -2.0, 3.0]), {"x": (-6.0, 8.0)}, {}),
    ("gamma", np.array([0.5, 1.5, 2.0, 3.0]), {"x": (0.2, 6.0)}, {"shape": 2.0}),
    ("linear_regression", np.array([[0.1, 0.2], [0.5, 0.4], [0.9, 1.0]]), {"x": (0, 1), "y": (0, 1)},
     {"n_features": 1}),
]


@pytest.mark.parametrize("family, data, bounds, args", FAMILIES, ids=[f[0] for f in FAMILIES])
def test_privatize(spy, family, data, bounds, args):
    ledger = PrivacyLedger()
    stats = pmdp.privatize(data, family, 1.0, bounds=bounds, ledger=ledger, **args)
    # whole-number statistics (counts, histograms, Poisson sums) get the secure discrete Laplace
    (noisy,) = spy.results("add_discrete_laplace" if stats.mechanism == "geometric" else "add_laplace")
    assert (stats.mechanism == "geometric") == (family in {"bernoulli", "binomial", "categorical", "poisson"})
    # the secure draw is what was released (for a centred design, the statistics follow from it)
    np.testing.assert_array_equal(np.atleast_1d(stats.released), np.atleast_1d(noisy))
    assert stats.noise_source == "secure"
    only_secure(ledger)


@pytest.mark.parametrize("mechanism", ["lshist", "lsdim"])
def test_release_posterior_laplace_mechanisms(spy, mechanism):
    counts, prior = np.array([30, 50, 20]), np.array([1.0, 1.0, 1.0])
    ledger = PrivacyLedger()
    release = pmdp.release_posterior(counts, prior, 1.0, mechanism, ledger=ledger)
    (noisy,) = spy.results("add_laplace")
    n = counts.sum()
    first = np.clip(np.floor(noisy), 0, n)
    expected = np.append(first, np.clip(n - first.sum(), 0, n))
    np.testing.assert_array_equal(release.alpha, prior + expected)
    only_secure(ledger)
    assert release.entry.noise_source == "secure"


@pytest.mark.parametrize("mechanism", ["ehd", "ehds"])
def test_release_posterior_exponential_mechanisms(spy, mechanism):
    counts, prior = np.array([3, 2]), np.array([1.0, 1.0])
    ledger = PrivacyLedger()
    release = pmdp.release_posterior(counts, prior, 1.0, mechanism, ledger=ledger)
    assert spy.results("gumbel_argmax")
    assert (release.alpha - prior).sum() == counts.sum()  # a candidate count vector with the public n
    assert release.entry.noise_source == "secure"
    only_secure(ledger)
    # The released candidate is the secure sampler's choice: the best-scored candidate
    # is the data's own posterior, the worst one a far end of the simplex.
    spy.overrides["gumbel_argmax"] = lambda scores, scale: int(np.argmax(scores))
    best = pmdp.release_posterior(counts, prior, 1.0, mechanism, ledger=ledger)
    np.testing.assert_array_equal(best.alpha, prior + counts)
    spy.overrides["gumbel_argmax"] = lambda scores, scale: int(np.argmin(scores))
    worst = pmdp.release_posterior(counts, prior, 1.0, mechanism, ledger=ledger)
    assert sorted((worst.alpha - prior).tolist()) == [0, 5]
    only_secure(ledger)


# --------------------------------------------------------------------------- models and pmdp.sample


def two_variable_model() -> pm.Model:
    with pm.Model() as model:
        p = pm.Beta("p", 1, 1)
        mu = pm.Gamma("mu", 2, 1)
        pm.Bernoulli("y", p, observed=RECORDS)
        pm.Poisson("z", mu, observed=np.array([0, 2, 5, 1, 4]))
    return model


def test_privatize_model(spy):
    ledger = PrivacyLedger()
    private = pmdp.privatize_model(two_variable_model(), 2.0, bounds={"z": {"upper": 5}}, ledger=ledger)
    drawn = spy.results("add_discrete_laplace")  # both statistics are counts
    assert len(drawn) == 2 and not spy.results("add_laplace")
    for stats, noisy in zip(private.statistics.values(), drawn):
        np.testing.assert_array_equal(np.atleast_1d(stats.noisy), np.atleast_1d(noisy))
        assert stats.noise_source == "secure"
    only_secure(ledger)


def test_sample_privacy_flag(spy, monkeypatch):
    from pymc_dp.model.privatize_model import PrivatizationPlan

    real_sample, real_release = pm.sample, PrivatizationPlan.release
    privatised = []

    def sample(*args, **kwargs):
        with spy.numpy_allowed():  # the MCMC's own randomness is NumPy's, and post-processing
            return real_sample(*args, **kwargs)

    def release(self, *args, **kwargs):  # the route's one draw of noise
        privatised.append(real_release(self, *args, **kwargs))
        return privatised[-1]

    monkeypatch.setattr(pm, "sample", sample)
    monkeypatch.setattr(PrivatizationPlan, "release", release)
    ledger = PrivacyLedger()
    with spy.numpy_allowed():  # building the model (PyTensor's RV generators) is not part of the release
        model = pm.Model()
        with model:
            pm.Bernoulli("y", pm.Beta("p", 1, 1), observed=RECORDS)
    with model:
        idata = pmdp.sample(20, method="laplace", epsilon=1.0, ledger=ledger, tune=20, chains=1, cores=1,
                            progressbar=False, compute_convergence_checks=False)
    (private,) = privatised
    (noisy,) = spy.results("add_discrete_laplace")  # the number of successes, a count
    np.testing.assert_array_equal(np.atleast_1d(private.statistics["y"].noisy), np.atleast_1d(noisy))
    only_secure(ledger)
    only_secure(pmdp.ledger(idata))


# --------------------------------------------------------------------------- the war-logs example


def test_warlogs_privatize_counts(spy):
    from pymc_dp.examples.warlogs import data, privacy

    with spy.numpy_allowed():  # the synthetic data set is generated with a seeded generator
        counts = data.feature_counts(data.generate("small", seed=0))
    ledger = PrivacyLedger()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        noisy = privacy.privatize_counts(counts, 1.0, ledger=ledger)
    drawn = spy.results("add_laplace")
    assert len(drawn) == len(counts) == 5
    for out, d in zip(noisy, drawn):
        np.testing.assert_array_equal(out, d)
    only_secure(ledger)
