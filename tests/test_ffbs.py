"""FFBS draws state sequences from their exact posterior (checked against enumeration)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from pymc_dp.examples.warlogs import ffbs as ffbs_module
from pymc_dp.examples.warlogs.ffbs import ffbs, forward_log_normalisers


def _enumerate(log_lik, log_trans, log_init):
    steps, k = log_lik.shape
    seqs = list(itertools.product(range(k), repeat=steps))
    logp = np.array(
        [log_init[s[0]] + log_lik[0, s[0]] + sum(log_trans[s[t - 1], s[t]] + log_lik[t, s[t]] for t in range(1, steps)) for s in seqs]
    )
    return seqs, logp


@pytest.fixture(params=["numba", "numpy"])
def engine(request, monkeypatch):
    """Run :func:`ffbs` on the compiled kernel, or on the NumPy fallback used when numba is missing."""
    monkeypatch.setattr(ffbs_module, "AVAILABLE", request.param == "numba")
    return request.param


@pytest.mark.parametrize(("steps", "k"), [(1, 3), (4, 2), (3, 3), (5, 2)])
def test_ffbs_matches_the_enumerated_posterior(steps, k, engine):
    rng = np.random.default_rng(steps * 10 + k)
    log_lik = rng.normal(0, 1.5, size=(steps, k))
    trans = rng.dirichlet(np.ones(k), size=k)
    init = rng.dirichlet(np.ones(k))
    seqs, logp = _enumerate(log_lik, np.log(trans), np.log(init))
    evidence = np.logaddexp.reduce(logp)
    p = np.exp(logp - evidence)
    # 40 000 copies of the chain in one call; each sequence's frequency within 4.5 s.d.
    draws = 40_000
    states, log_norm = ffbs(np.broadcast_to(log_lik, (draws, steps, k)), np.log(trans), np.log(init), rng)
    assert log_norm[0] == pytest.approx(evidence, rel=1e-12)
    index = {s: i for i, s in enumerate(seqs)}
    freq = np.bincount([index[tuple(s)] for s in states.tolist()], minlength=len(seqs)) / draws
    assert np.all(np.abs(freq - p) <= 4.5 * np.sqrt(p * (1 - p) / draws) + 1e-12)


def test_impossible_transitions_are_never_drawn_and_evidence_matches(engine):
    log_lik = np.zeros((3, 6, 2))
    log_trans = np.array([[0.0, -np.inf], [np.log(0.5), np.log(0.5)]])  # state 0 is absorbing
    states, _ = ffbs(log_lik, log_trans, np.log([0.5, 0.5]), np.random.default_rng(1))
    for row in states:
        first_zero = np.flatnonzero(row == 0)
        if first_zero.size:
            assert np.all(row[first_zero[0]:] == 0)
    # With flat likelihoods the evidence is 1.
    np.testing.assert_allclose(forward_log_normalisers(log_lik, log_trans, np.log([0.5, 0.5])), 0.0, atol=1e-12)


def test_bad_shapes_and_nan_are_refused():
    with pytest.raises(ValueError, match="log_lik must have shape"):
        ffbs(np.zeros((4, 2)), np.zeros((2, 2)), np.zeros(2), np.random.default_rng(0))
    with pytest.raises(ValueError, match="log_trans must be"):
        ffbs(np.zeros((1, 4, 2)), np.zeros((3, 3)), np.zeros(2), np.random.default_rng(0))
    with pytest.raises(ValueError, match="NaN"):
        ffbs(np.full((1, 4, 2), np.nan), np.zeros((2, 2)), np.zeros(2), np.random.default_rng(0))


def test_the_numpy_fallback_draws_what_the_kernel_draws():
    rng = np.random.default_rng(7)
    chains, steps, k = 6, 40, 5
    log_lik = rng.normal(0, 3, size=(chains, steps, k))
    log_trans = np.log(rng.dirichlet(np.ones(k), size=k))
    log_trans[1, 3] = -np.inf
    log_init = np.log(rng.dirichlet(np.ones(k)))
    uniforms = rng.random((chains, steps))
    results = []
    for kernel in (ffbs_module._ffbs_kernel, ffbs_module._ffbs_numpy):
        states, log_norm = np.zeros((chains, steps), dtype=np.int64), np.zeros(chains)
        kernel(log_lik, log_trans, log_init, uniforms, states, log_norm)
        results.append((states, log_norm))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-13)
