"""Poisson counts observed through Laplace noise: exact marginal likelihoods and imputation.

The Laplace route releases ``y = n + L`` with ``L ~ Laplace(b)`` for every count ``n``.
Reading ``y`` as if it were ``n`` (the plug-in) ignores the noise. The noise-aware
alternative models each count as ``n ~ Poisson(λ)`` and keeps the measurement model:

``p(y | λ) = Σ_{n ≥ 0} Poisson(n; λ) · Laplace(y − n; b)``.

Both factors are log-concave in n, so the summand ``s(n)`` is unimodal, and the ratio
``s(n + 1)/s(n) = λ g(n)/(n + 1)`` is non-increasing in n, with ``g(n) = e^{1/b}`` for
``n + 1 ≤ y``, ``e^{−1/b}`` for ``n ≥ y`` and ``e^{−(2n + 1 − 2y)/b}`` in between. The
mode is therefore the first n whose ratio is below 1, found in closed form (no search,
no log-gamma), and the sum is taken outwards from it, term by term through the ratios.

Truncation bound. Walking away from the mode, every later ratio is at most the
current one, r < 1, so the terms not yet added sum to at most ``s · r/(1 − r)`` (a
geometric series). Each side stops as soon as that bound is below ``_TOL`` times the
sum so far, so the truncated sum ``S'`` of the full sum ``S`` satisfies
``S(1 − 2·_TOL) ≤ S' ≤ S``: a relative error below 2·10⁻¹⁶, under the rounding error
of the sum itself (tested against the full sum in tests/test_laplace_counts.py).

The cost is the number of terms: about ``√λ`` when the Poisson is the sharper factor,
about ``36 b`` per side when the noise is (e.g. 35 terms on average for the war logs'
48-value feature, 140 to 200 for its 2-value features, at b = 2). The walks take four
terms per step, so their loop-carried chain is one multiplication per four terms.

* :func:`add_log_marginals` adds ``Σ_j log p(y_j | μ θ_{k,j})`` for every cell and state,
  the likelihood a forward filter needs with the counts summed out;
* :func:`impute_counts` draws each cell's true counts from
  ``p(n | y, λ) ∝ Poisson(n; λ) Laplace(y − n; b)`` exactly (inverse CDF over the window).

Both are compiled with numba (the ``warlogs`` extra) and run the cells in parallel.
Without numba they raise an ImportError that says what to install: there is no NumPy
fallback, since the series are walked term by term (some 12 million terms per Gibbs
iteration at K = 10 on the Iraq-like grid, seconds per iteration in pure Python). The constant
``log(1/(2b))`` of the Laplace density is left out: it is the same for every state and
every value of λ.
"""

from __future__ import annotations

import math

import numpy as np

from ._numba import jit, prange, require

__all__ = ["add_log_marginals", "impute_counts", "log_marginal"]

#: Each side of the sum stops once the terms left out are provably below this fraction of the sum.
_TOL = 1e-16
#: log λ below this is treated as λ = 0 (the count is 0 with certainty).
_LOG_ZERO = -700.0
#: ``log n!`` and ``1/n`` are read from tables below this n (computed beyond it).
_TABLE = 1 << 14
_LOG_FACTORIAL = np.array([math.lgamma(n + 1.0) for n in range(_TABLE)])
_RECIPROCAL = np.concatenate(([0.0], 1.0 / np.arange(1.0, _TABLE)))


@jit()
def _log_factorial(n: float) -> float:
    i = int(n)
    return _LOG_FACTORIAL[i] if i < _TABLE else math.lgamma(n + 1.0)


@jit()
def _mode(m: float, lam: float, up: float, down: float, cross: float) -> float:
    """The first n ≥ 0 whose ratio ``s(n + 1)/s(n)`` is below 1 (m = ⌊y⌋, up/down = e^{∓1/b})."""
    if lam * down < m:  # below y the ratio is λ e^{1/b}/(n + 1): < 1 from n = ⌊λ e^{1/b}⌋ on
        return math.floor(lam * down)
    if m >= 0.0 and lam * cross < m + 1.0:  # the step across y
        return m
    return max(math.floor(lam * up), m + 1.0, 0.0)  # above y the ratio is λ e^{−1/b}/(n + 1)


@jit()
def _walk_up(n: float, stop: float, a: float, s: float, acc: float, base: float) -> tuple[float, float, float, bool]:
    """Add ``s(n + 1) = s(n) a/(n + 1)`` while ``n < stop``; ``(n, s, acc, done)``, done once the bound is met."""
    while n + 4.0 <= stop and n + 4.0 < _TABLE:
        i = int(n)
        r1 = a * _RECIPROCAL[i + 1]
        r2 = a * _RECIPROCAL[i + 2]
        r3 = a * _RECIPROCAL[i + 3]
        r4 = a * _RECIPROCAL[i + 4]
        p2 = r1 * r2
        p3 = p2 * r3
        s1, s2, s3 = s * r1, s * p2, s * p3
        s = s * (p3 * r4)
        acc += (s1 + s2) + (s3 + s)
        n += 4.0
        if r4 < 1.0 and s * r4 <= _TOL * (1.0 - r4) * (base + acc):
            return n, s, acc, True
    while n < stop:
        r = a / (n + 1.0)
        s *= r
        acc += s
        n += 1.0
        if r < 1.0 and s * r <= _TOL * (1.0 - r) * (base + acc):
            return n, s, acc, True
    return n, s, acc, False


@jit()
def _walk_down(n: float, stop: float, c: float, s: float, acc: float, base: float) -> tuple[float, float, float, bool]:
    """Add ``s(n − 1) = s(n) n c`` while ``n > stop ≥ 0``; ``(n, s, acc, done)`` as :func:`_walk_up`."""
    while n - 4.0 >= stop:
        r1 = n * c
        r2 = (n - 1.0) * c
        r3 = (n - 2.0) * c
        r4 = (n - 3.0) * c
        p2 = r1 * r2
        p3 = p2 * r3
        s1, s2, s3 = s * r1, s * p2, s * p3
        s = s * (p3 * r4)
        acc += (s1 + s2) + (s3 + s)
        n -= 4.0
        if r4 < 1.0 and s * r4 <= _TOL * (1.0 - r4) * (base + acc):
            return n, s, acc, True
    while n > stop:
        r = n * c
        s *= r
        acc += s
        n -= 1.0
        if r < 1.0 and s * r <= _TOL * (1.0 - r) * (base + acc):
            return n, s, acc, True
    return n, s, acc, False


@jit()
def _window(m: float, lam: float, up: float, down: float, cross: float) -> tuple[float, float, float, float, float]:
    """``(mode, lo, hi, above, below)``: the summed range and the sums above and below the mode, relative to s(mode)."""
    mode = _mode(m, lam, up, down, cross)
    # upwards: ratio λ e^{1/b}/(n + 1) up to n = m, the step across y, then λ e^{−1/b}/(n + 1)
    n, s, above, done = _walk_up(mode, m, lam * down, 1.0, 0.0, 1.0)
    if not done and n == m:
        n, s, above, done = _walk_up(n, n + 1.0, lam * cross, s, above, 1.0)
    if not done:
        n, s, above, done = _walk_up(n, np.inf, lam * up, s, above, 1.0)
    hi = n
    # downwards: the inverse ratios n/(λ g(n − 1)), in the same three pieces
    base = 1.0 + above
    n, s, below, done = _walk_down(mode, max(m + 1.0, 0.0), 1.0 / (lam * up), 1.0, 0.0, base)
    if not done and n == m + 1.0 and n > 0.0:
        n, s, below, done = _walk_down(n, n - 1.0, 1.0 / (lam * cross), s, below, base)
    if not done:
        n, s, below, done = _walk_down(n, 0.0, 1.0 / (lam * down), s, below, base)
    return mode, n, hi, above, below


@jit()
def _crossing(y: float, inv_b: float) -> tuple[float, float, float, float]:
    """``(m, up, down, cross)`` for one count: ⌊y⌋, e^{−1/b}, e^{1/b} and the ratio factor across y."""
    m = math.floor(y)
    return m, math.exp(-inv_b), math.exp(inv_b), math.exp(-(2.0 * m + 1.0 - 2.0 * y) * inv_b)


@jit()
def _log_marginal(y: float, log_lam: float, inv_b: float) -> float:
    if log_lam < _LOG_ZERO:
        return -abs(y) * inv_b
    m, up, down, cross = _crossing(y, inv_b)
    lam = math.exp(log_lam)
    mode, lo, hi, above, below = _window(m, lam, up, down, cross)
    return mode * log_lam - _log_factorial(mode) - abs(y - mode) * inv_b - lam + math.log(1.0 + above + below)


@jit(parallel=True)
def _add_log_marginals(out, y, log_mu, log_theta, inv_b, observed):  # pragma: no cover - compiled
    regions, months, values = y.shape
    states = log_theta.shape[0]
    theta = np.exp(log_theta)
    for cell in prange(regions * months):
        r = cell // months
        t = cell % months
        if not observed[r, t]:
            continue
        log_mu_rt = log_mu[r, t]
        mu = math.exp(log_mu_rt)
        acc = np.zeros(states)
        prod = np.ones(states)  # Π_j of the relative sums: one log per state instead of one per count
        for j in range(values):
            yy = y[r, t, j]
            m, up, down, cross = _crossing(yy, inv_b[j])
            for k in range(states):
                log_lam = log_mu_rt + log_theta[k, j]
                if log_lam < _LOG_ZERO:
                    acc[k] -= abs(yy) * inv_b[j]
                    continue
                lam = mu * theta[k, j]
                if lam < 1e-290:  # the product underflowed (θ below e^{-745}); the exponential does not
                    lam = math.exp(log_lam)
                mode, lo, hi, above, below = _window(m, lam, up, down, cross)
                acc[k] += mode * log_lam - _log_factorial(mode) - abs(yy - mode) * inv_b[j] - lam
                prod[k] *= 1.0 + above + below
                if prod[k] > 1e250:
                    acc[k] += math.log(prod[k])
                    prod[k] = 1.0
        for k in range(states):
            out[r, t, k] += acc[k] + math.log(prod[k])


def log_marginal(y: float, log_lam: float, inv_b: float) -> float:
    """``log Σ_n Poisson(n; λ) exp(−|y − n|/b)`` for ``λ = exp(log_lam)`` and ``inv_b = 1/b``."""
    require("log_marginal")
    return _log_marginal(float(y), float(log_lam), float(inv_b))


def _per_value(inv_b: float | np.ndarray, values: int) -> np.ndarray:
    arr = np.asarray(inv_b, dtype=np.float64)
    if arr.ndim > 1 or (arr.ndim == 1 and arr.shape[0] != values):
        raise ValueError(f"inv_b must be one number or one per value ({values}), got shape {arr.shape}.")
    return np.ascontiguousarray(np.broadcast_to(arr, (values,)))


def add_log_marginals(
    out: np.ndarray,
    y: np.ndarray,
    log_mu: np.ndarray,
    log_theta: np.ndarray,
    inv_b: float | np.ndarray,
    observed: np.ndarray,
) -> None:
    """Add ``Σ_j log p(y[r, t, j] | μ[r, t] θ[k, j])`` to ``out[r, t, k]`` for every observed cell.

    ``y`` is ``(R, T, J)``, ``log_mu`` ``(R, T)``, ``log_theta`` ``(K, J)``, ``inv_b`` the
    inverse Laplace scale ``1/b`` (one number, or one per value j, so that several
    releases concatenated along j go in one call), ``observed`` an ``(R, T)`` boolean
    mask (unobserved cells add nothing). ``out`` is ``(R, T, K)`` float64, updated in
    place. Cells run in parallel.

    Raises
    ------
    ImportError
        If numba is missing (``pip install "pymc-dp[warlogs]"``).
    """
    require("add_log_marginals (the noise-aware war-logs sampler)")
    _add_log_marginals(out, y, log_mu, log_theta, _per_value(inv_b, y.shape[2]), observed)


@jit()
def _draw(y: float, log_lam: float, inv_b: float, u: float) -> int:
    """One draw from ``p(n | y, λ)`` by inverse CDF with the uniform ``u``.

    The window's terms are laid out in the order mode, mode + 1, …, hi, mode − 1, …, lo
    (any fixed order gives an exact draw), so the second walk starts at the mode and
    is about one standard deviation long on average.
    """
    if log_lam < _LOG_ZERO:
        return 0
    m, up, down, cross = _crossing(y, inv_b)
    lam = math.exp(log_lam)
    mode, lo, hi, above, below = _window(m, lam, up, down, cross)
    target = u * (1.0 + above + below)
    if target < 1.0:
        return int(mode)
    n, s = mode, 1.0
    if target < 1.0 + above:
        acc = 1.0
        while n < hi:
            s *= lam * (down if n < m else (cross if n == m else up)) / (n + 1.0)
            n += 1.0
            acc += s
            if acc > target:
                break
        return int(n)
    target -= 1.0 + above
    acc = 0.0
    while n > lo:
        s *= n / (lam * (down if n - 1.0 < m else (cross if n - 1.0 == m else up)))
        n -= 1.0
        acc += s
        if acc > target:
            break
    return int(n)


@jit(parallel=True)
def _impute_counts(y, log_mu, log_theta, states, inv_b, observed, u):  # pragma: no cover - compiled
    regions, months, values = y.shape
    out = np.zeros((regions, months, values), dtype=np.int64)
    for cell in prange(regions * months):
        r = cell // months
        t = cell % months
        if not observed[r, t]:
            continue
        k = states[r, t]
        for j in range(values):
            out[r, t, j] = _draw(y[r, t, j], log_mu[r, t] + log_theta[k, j], inv_b[j], u[r, t, j])
    return out


def impute_counts(
    y: np.ndarray,
    log_mu: np.ndarray,
    log_theta: np.ndarray,
    states: np.ndarray,
    inv_b: float | np.ndarray,
    observed: np.ndarray,
    u: np.ndarray,
) -> np.ndarray:
    """Draw the true counts ``n[r, t, j] ~ p(n | y, μ[r, t] θ[s[r, t], j])`` (0 in unobserved cells).

    Arguments as for :func:`add_log_marginals`, plus the ``(R, T)`` integer ``states``
    and ``u``, one uniform per count (``(R, T, J)``), so the caller's generator fixes the
    draw, whatever the number of threads. Returns the ``(R, T, J)`` int64 counts.

    Raises
    ------
    ImportError
        If numba is missing (``pip install "pymc-dp[warlogs]"``).
    """
    require("impute_counts (the noise-aware war-logs sampler)")
    return _impute_counts(y, log_mu, log_theta, states, _per_value(inv_b, y.shape[2]), observed, u)
