"""Statistical tests: each mechanism's noise has the stated distribution and scale.

Every test runs with both noise sources. The seeded source uses a fixed seed, so its
tests are deterministic. The secure source (OpenDP) cannot be seeded, so each check on
it is chosen to fail with probability at most ALPHA = 1e-6 when the mechanism is
correct:

* exact tests where the statistic's null distribution is known in closed form
  (sum of |Laplace| is Gamma, sum of squared Gaussians is chi-square, a count of
  truthful answers is Binomial): the acceptance region is the central 1 - ALPHA;
* Kolmogorov-Smirnov and chi-square goodness-of-fit tests: accept when p > ALPHA
  (exact for KS on continuous data, asymptotic for chi-square with every expected
  count >= 5);
* CLT-based z-scores only where no exact law is at hand, with the margin stated.

Each test also has power: a mis-scaled mechanism (e.g. a Laplace scale off by 5%)
would fail it, as the comments quantify. The default run stays well under 30 s;
the larger-sample tests are marked ``slow``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from pymc_dp.accounting import PrivacyLedger
from pymc_dp.mechanisms import (
    exponential_mechanism,
    exponential_mechanism_probabilities,
    gaussian_mechanism,
    geometric_mechanism,
    laplace_mechanism,
    randomized_response,
    randomized_response_truth_probability,
)

ALPHA = 1e-6
N = 20_000

SOURCES = [pytest.param(None, id="secure"), pytest.param(98765, id="seeded")]


def _central(dist, alpha=ALPHA):
    """The central 1 - alpha acceptance interval of a frozen scipy distribution."""
    return dist.ppf(alpha / 2), dist.isf(alpha / 2)


# ----------------------------------------------------------------------------- Laplace


def _check_laplace(noise, b):
    n = noise.size
    # Σ|X_i|/b ~ Gamma(n, 1) exactly, so mean|X| = b·Gamma(n)/n. At n = 20,000 the
    # acceptance interval is about b(1 ± 0.035) (4.9 SE of 0.7%); a scale 5% off sits
    # 7 SE away and fails with probability > 0.97.
    lo, hi = _central(stats.gamma(n))
    s = np.abs(noise).sum() / b
    assert lo < s < hi, f"mean |noise| = {np.abs(noise).mean():.5g}, expected {b:.5g}"
    assert stats.kstest(noise, stats.laplace(scale=b).cdf).pvalue > ALPHA


@pytest.mark.parametrize("rng", SOURCES)
def test_laplace_noise_scale(rng):
    ledger = PrivacyLedger()
    eps, sens = 0.5, 1.5
    x = np.full(N, 10.0)
    noise = laplace_mechanism(x, epsilon=eps, sensitivity=sens, ledger=ledger, rng=rng) - 10.0
    b = ledger.entries[0].details["scale"]
    assert b == pytest.approx(sens / eps, rel=1e-15)
    _check_laplace(noise, b)


# ----------------------------------------------------------------------------- Gaussian


def _check_gaussian(noise, sigma):
    n = noise.size
    # Σ X_i²/σ² ~ χ²(n) exactly (the mean is known to be 0); at n = 20,000 the interval
    # is about σ²(1 ± 0.049) for mean(X²) (4.9 SE of 1%), i.e. σ(1 ± 0.025): a σ 5% off
    # moves mean(X²) by 10 SE and fails with near certainty.
    lo, hi = _central(stats.chi2(n))
    s = np.sum(noise**2) / sigma**2
    assert lo < s < hi, f"noise sd = {np.sqrt(np.mean(noise ** 2)):.5g}, expected {sigma:.5g}"
    assert stats.kstest(noise, stats.norm(scale=sigma).cdf).pvalue > ALPHA


@pytest.mark.parametrize("rng", SOURCES)
def test_gaussian_noise_scale(rng):
    ledger = PrivacyLedger()
    noise = gaussian_mechanism(np.zeros(N), epsilon=0.8, delta=1e-6, sensitivity=2.0, ledger=ledger, rng=rng)
    sigma = ledger.entries[0].details["scale"]
    assert 2.0 * 3.0 < sigma < 2.0 * 6.0  # analytic σ for (0.8, 1e-6), Δ₂ = 2: ≈ 2 × 4.9
    _check_gaussian(noise, sigma)


# ----------------------------------------------------------------------------- geometric


def _dl_pmf(k, scale):
    q = math.exp(-1.0 / scale)
    return (1 - q) / (1 + q) * q ** np.abs(k)


def _check_discrete_laplace(noise, scale):
    n = noise.size
    q = math.exp(-1.0 / scale)
    var = 2 * q / (1 - q) ** 2  # the stated variance
    # Cross-check the closed form against the pmf, and get the 4th moment for the SE.
    k = np.arange(-int(200 * scale) - 50, int(200 * scale) + 51)
    pmf = _dl_pmf(k, scale)
    assert np.sum(pmf * k**2) == pytest.approx(var, rel=1e-10)
    mu4 = np.sum(pmf * k.astype(float) ** 4)
    # mean(X²) estimates var (the mean is 0) with SE sqrt((μ4 - var²)/n). We allow
    # 6 SE: the normal tail beyond 6 is 2e-9, and the skewness of X² (≈ 4 here) changes
    # that tail by a factor of about 1 + skew·z³/(6√n) < 2 (Edgeworth) at n = 20,000,
    # so a false failure has probability well below 1e-6. The SE is about
    # sqrt(5)·var/sqrt(n) (kurtosis ≈ 6), 0.5% of var at n = 200,000: a scale 5% off
    # changes the variance by ~10%, ~20 SE, and fails.
    se = math.sqrt((mu4 - var**2) / n)
    z = (np.mean(noise.astype(float) ** 2) - var) / se
    assert abs(z) < 6, f"variance {np.var(noise):.5g} vs stated {var:.5g} (z = {z:.2f})"
    # Goodness of fit of the whole pmf: bins |k| <= 8 and two tails.
    edges = np.arange(-8, 9)
    observed = np.array([np.sum(noise < -8)] + [np.sum(noise == j) for j in edges] + [np.sum(noise > 8)])
    pk = _dl_pmf(edges, scale)
    tail = (1 - pk.sum()) / 2
    expected = n * np.concatenate([[tail], pk, [tail]])
    assert expected.min() >= 5
    assert stats.chisquare(observed, expected).pvalue > ALPHA


@pytest.mark.parametrize("rng", SOURCES)
def test_geometric_noise_scale(rng):
    ledger = PrivacyLedger()
    # 200,000 draws (the secure integer sampler takes ~10 µs each, ~2 s): at 20,000 the
    # variance test could not tell a 5% scale error from chance.
    counts = np.full(10 * N, 100, dtype=np.int64)
    out = geometric_mechanism(counts, epsilon=0.8, sensitivity=2, ledger=ledger, rng=rng)
    assert out.dtype == np.int64
    scale = ledger.entries[0].details["scale"]
    assert scale == pytest.approx(2.5, rel=1e-15)
    _check_discrete_laplace(out - counts, scale)


# ----------------------------------------------------------------------------- exponential mechanism


@pytest.mark.parametrize("rng", SOURCES)
def test_exponential_mechanism_choice_frequencies(rng):
    rng_obj = np.random.default_rng(rng) if rng is not None else None
    ledger = PrivacyLedger()
    cands = ["a", "b", "c", "d", "e", "f"]
    u = np.array([0.0, 1.0, 2.0, 3.0, 0.5, 10.0])
    mu = np.array([1.0, 2.0, 1.0, 0.5, 1.0, 0.0])  # "f" is excluded despite its utility
    kw = dict(epsilon=1.0, sensitivity=1.0, base_measure=mu)
    choices = [exponential_mechanism(cands, u, ledger=ledger, rng=rng_obj, **kw) for _ in range(N)]
    counts = np.array([choices.count(c) for c in cands])
    assert counts[-1] == 0
    p = exponential_mechanism_probabilities(u, **kw)
    assert (N * p[:-1]).min() >= 5
    assert stats.chisquare(counts[:-1], N * p[:-1]).pvalue > ALPHA
    # Power: the "monotonic" probabilities (twice as sharp) are clearly rejected.
    p_wrong = exponential_mechanism_probabilities(u, monotonic=True, **kw)
    assert stats.chisquare(counts[:-1], N * p_wrong[:-1]).pvalue < ALPHA
    assert len(ledger.entries) == N


@pytest.mark.parametrize("rng", SOURCES)
def test_exponential_mechanism_monotonic_frequencies(rng):
    ledger = PrivacyLedger()
    rng_obj = np.random.default_rng(rng) if rng is not None else None
    u = np.array([1e6, 1e6 - 1.0, 1e6 - 2.0, -1e6])  # huge utilities, log-space sampling
    kw = dict(epsilon=0.9, sensitivity=0.5, monotonic=True)
    n = N // 4
    choices = np.array([exponential_mechanism(np.arange(4), u, ledger=ledger, rng=rng_obj, **kw) for _ in range(n)])
    counts = np.bincount(choices, minlength=4)
    p = exponential_mechanism_probabilities(u, **kw)  # ∝ exp(1.8·u): (1, e^-1.8, e^-3.6, 0)
    assert counts[3] == 0
    assert stats.chisquare(counts[:3], n * p[:3] / p[:3].sum()).pvalue > ALPHA


# ----------------------------------------------------------------------------- randomised response


@pytest.mark.parametrize("rng", SOURCES)
@pytest.mark.parametrize("eps", [math.log(3), 1.0])
def test_randomized_response_truth_frequency(rng, eps):
    ledger = PrivacyLedger()
    truth = np.ones(N, dtype=bool)
    out = randomized_response(truth, epsilon=eps, ledger=ledger, rng=rng)
    p = randomized_response_truth_probability(eps)
    if eps == math.log(3):
        assert p == 0.75
    # The number of truthful answers is exactly Binomial(N, p).
    assert stats.binomtest(int(out.sum()), N, p).pvalue > ALPHA
    # Power: with N = 20,000 the SE of the frequency is about 0.003. A truth probability
    # 0.05 too low (16 SE away) is rejected at level ALPHA unless the observed frequency
    # falls about 11 SE below p, which has probability far below ALPHA. (A 0.02 shift is
    # only 6.5 SE away and would make this check itself fail about 7% of the time.)
    assert stats.binomtest(int(out.sum()), N, p - 0.05).pvalue < ALPHA


@pytest.mark.parametrize("rng", SOURCES)
def test_randomized_response_k_ary_frequencies(rng):
    ledger = PrivacyLedger()
    k, eps = 4, 1.0
    values = np.full(N, 2, dtype=np.int64)
    out = randomized_response(values, categories=k, epsilon=eps, ledger=ledger, rng=rng)
    p = randomized_response_truth_probability(eps, k)
    assert p == pytest.approx(math.e / (math.e + 3), rel=1e-12)
    expected = np.full(k, N * (1 - p) / (k - 1))
    expected[2] = N * p
    assert stats.chisquare(np.bincount(out, minlength=k), expected).pvalue > ALPHA


# ----------------------------------------------------------------------------- slow, larger samples


@pytest.mark.slow
@pytest.mark.parametrize("rng", SOURCES)
def test_laplace_and_gaussian_large_sample(rng):
    n = 200_000  # ~5 s (Laplace) + ~13 s (Gaussian) for the secure source
    ledger = PrivacyLedger()
    noise = laplace_mechanism(np.zeros(n), epsilon=2.0, sensitivity=1.0, ledger=ledger, rng=rng)
    _check_laplace(noise, ledger.entries[-1].details["scale"])
    noise = gaussian_mechanism(np.zeros(n), epsilon=0.3, delta=1e-8, sensitivity=1.0, ledger=ledger, rng=rng)
    _check_gaussian(noise, ledger.entries[-1].details["scale"])


@pytest.mark.slow
@pytest.mark.parametrize("rng", SOURCES)
def test_geometric_privacy_ratio_on_neighbouring_counts(rng):
    """The empirical output-probability ratio between neighbouring counts 0 and 1 is e^{±ε}.

    This is the DP inequality itself, measured: P(k | 0) / P(k | 1) = exp(ε(|k-1| - |k|)).
    """
    n, eps = 200_000, 1.0
    rng0, rng1 = (None, None) if rng is None else (rng, rng + 1)  # independent seeded streams
    out0 = geometric_mechanism(np.zeros(n, dtype=np.int64), epsilon=eps, ledger=PrivacyLedger(), rng=rng0)
    out1 = geometric_mechanism(np.ones(n, dtype=np.int64), epsilon=eps, ledger=PrivacyLedger(), rng=rng1)
    _check_discrete_laplace(out0, 1 / eps)
    _check_discrete_laplace(out1 - 1, 1 / eps)
    for k in range(-2, 4):
        f0, f1 = np.mean(out0 == k), np.mean(out1 == k)
        expected = eps * (abs(k - 1) - abs(k))
        assert abs(expected) <= eps
        # Delta method: SE of log f̂ is sqrt((1 - f)/(n f)). Six comparisons at 5.5 SE
        # (two-sided normal tail 3.8e-8 each) keep the total false-failure rate < 1e-6;
        # the smallest cell has n·f ≈ 9,000 counts, where the normal approximation is good.
        se = math.sqrt((1 - f0) / (n * f0) + (1 - f1) / (n * f1))
        assert abs(math.log(f0 / f1) - expected) < 5.5 * se, k


@pytest.mark.slow
@pytest.mark.parametrize("rng", SOURCES)
def test_exponential_mechanism_large_sample(rng):
    rng_obj = np.random.default_rng(rng) if rng is not None else None
    n = 50_000  # ~8 s for the secure source (about 0.15 ms per noisy-max call)
    u = np.linspace(-3, 3, 7)
    kw = dict(epsilon=2.0, sensitivity=1.0)
    choices = []
    for _ in range(n // 1000):
        ledger = PrivacyLedger()  # a fresh ledger per 1,000 releases keeps bookkeeping cheap
        choices += [exponential_mechanism(np.arange(7), u, ledger=ledger, rng=rng_obj, **kw) for _ in range(1000)]
        assert len(ledger.entries) == 1000
    choices = np.array(choices)
    p = exponential_mechanism_probabilities(u, **kw)
    counts = np.bincount(choices, minlength=7)
    assert (n * p).min() >= 5
    assert stats.chisquare(counts, n * p).pvalue > ALPHA
