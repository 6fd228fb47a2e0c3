"""The noise sources' samplers have the stated shapes, types and distributions.

Both sources are tested. The seeded source is deterministic at a fixed seed. The
secure source (OpenDP) cannot be seeded, so every statistical check on it is a test
whose false-failure probability under a correct sampler is at most 1e-6: a
goodness-of-fit p-value compared with 1e-6 fails with probability exactly 1e-6
when the null holds (and asymptotically so for chi-square tests with all expected
counts >= 5).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from pymc_dp.mechanisms import SecureNoise, SeededNoise

ALPHA = 1e-6  # per-test false-failure probability for the unseeded (secure) source
N = 5000


def sources():
    return [pytest.param(lambda: SecureNoise(), id="secure"), pytest.param(lambda: SeededNoise(20240601), id="seeded")]


@pytest.fixture(params=sources())
def source(request):
    return request.param()


def test_names():
    assert SecureNoise().name == "secure"
    assert SeededNoise(0).name == "seeded"
    assert SeededNoise(np.random.default_rng(1)).name == "seeded"
    with pytest.raises(ValueError, match="rng"):
        SeededNoise("zero")


@pytest.mark.parametrize("size, shape", [(0, (0,)), (3, (3,)), ((2, 3), (2, 3)), ((), ())])
def test_sampler_shapes_and_dtypes(source, size, shape):
    lap = source.laplace(1.0, size)
    gau = source.gaussian(1.0, size)
    dl = source.discrete_laplace(2.0, size)
    assert lap.shape == shape and lap.dtype == float
    assert gau.shape == shape and gau.dtype == float
    assert dl.shape == shape and dl.dtype == np.int64
    idx = np.zeros(shape, dtype=np.int64)
    rr = source.randomized_response(idx, 3, 0.5)
    assert rr.shape == shape and rr.dtype == np.int64


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_scales_are_refused(source, bad):
    with pytest.raises(ValueError):
        source.laplace(bad, 3)
    with pytest.raises(ValueError):
        source.gaussian(bad, 3)
    with pytest.raises(ValueError):
        source.discrete_laplace(bad, 3)
    with pytest.raises(ValueError):
        source.gumbel_argmax([0.0, 1.0], bad)


def test_laplace_distribution(source):
    b = 2.5
    x = source.laplace(b, N)
    assert stats.kstest(x, stats.laplace(scale=b).cdf).pvalue > ALPHA
    # Power check: a 50% wrong scale is rejected at this sample size (the KS distance is
    # ~0.07 against a 1e-6 critical value of ~0.038; its SD is ~0.007, so this holds with
    # probability far above 1 - 1e-6).
    assert stats.kstest(x, stats.laplace(scale=1.5 * b).cdf).pvalue < ALPHA


def test_gaussian_distribution(source):
    sigma = 0.7
    x = source.gaussian(sigma, N)
    assert stats.kstest(x, stats.norm(scale=sigma).cdf).pvalue > ALPHA
    assert stats.kstest(x, stats.norm(scale=1.5 * sigma).cdf).pvalue < ALPHA


def _discrete_laplace_pmf(k, scale):
    q = math.exp(-1.0 / scale)
    return (1 - q) / (1 + q) * q ** np.abs(k)


def test_discrete_laplace_distribution(source):
    scale = 1.5
    x = source.discrete_laplace(scale, N)
    # Chi-square over the bins -4..4 and the two tails (every expected count >= 5).
    edges = np.arange(-4, 5)
    observed = [np.sum(x < -4)] + [np.sum(x == k) for k in edges] + [np.sum(x > 4)]
    pk = _discrete_laplace_pmf(edges, scale)
    tail = (1 - pk.sum()) / 2
    expected = N * np.concatenate([[tail], pk, [tail]])
    assert expected.min() >= 5
    assert stats.chisquare(observed, expected).pvalue > ALPHA


def test_gumbel_argmax_is_the_softmax(source):
    scores = np.array([0.0, 1.0, 2.0, 2.0])
    scale = 1.3
    counts = np.bincount([source.gumbel_argmax(scores, scale) for _ in range(N)], minlength=4)
    p = np.exp(scores / scale)
    p /= p.sum()
    assert stats.chisquare(counts, N * p).pvalue > ALPHA


def test_gumbel_argmax_with_huge_scores(source):
    # Differences of 1e6 at scale 1: the best candidate always wins, nothing overflows.
    for _ in range(20):
        assert source.gumbel_argmax([-1e6, 1e6, 0.0], 1.0) == 1


@pytest.mark.parametrize("k", [2, 4])
def test_randomized_response_sampler(source, k):
    p = 0.6
    idx = np.full(N, 1, dtype=np.int64)
    out = source.randomized_response(idx, k, p)
    assert set(np.unique(out).tolist()) <= set(range(k))
    # Truth w.p. p, each of the other k - 1 categories w.p. (1 - p)/(k - 1).
    expected = np.full(k, N * (1 - p) / (k - 1))
    expected[1] = N * p
    assert stats.chisquare(np.bincount(out, minlength=k), expected).pvalue > ALPHA


def test_seeded_is_reproducible():
    a, b = SeededNoise(5), SeededNoise(5)
    np.testing.assert_array_equal(a.laplace(1.0, 10), b.laplace(1.0, 10))
    np.testing.assert_array_equal(a.discrete_laplace(1.0, 10), b.discrete_laplace(1.0, 10))
    assert a.gumbel_argmax(np.zeros(10), 1.0) == b.gumbel_argmax(np.zeros(10), 1.0)


def test_secure_add_passes_the_value_through_opendp():
    # Adding to a huge value stays finite and near it; adding to an integer array keeps integers.
    s = SecureNoise()
    out = s.add_laplace(np.array([1e300, -3.0]), 1.0)
    assert out[0] == 1e300 and abs(out[1] + 3.0) < 60  # P(|Laplace(1)| > 60) = e^-60
    out = s.add_discrete_laplace(np.array([10, 20]), 1.0)
    assert out.dtype == np.int64
