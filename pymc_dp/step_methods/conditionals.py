"""Exact draws from the conjugate conditionals a private Gibbs update needs (NumPy/SciPy only).

Each function draws, elementwise, from a conjugate posterior restricted to the
interval ``[lower, upper]`` (the declared truncation; ``±inf`` for none) by the
inverse-CDF method: ``u ~ U(F(lower), F(upper))``, ``x = F⁻¹(u)``. When the interval
lies in the upper tail the survival function and its inverse are used instead, so
that a truncation far from the bulk of the mass does not round to an empty
interval. The draw is exact: it is what makes a Gibbs update the exponential
mechanism (theory notes §6) rather than an approximation of it.

A Dirichlet restricted to ``θ_k ≥ a₀`` has no inverse CDF; it is drawn by rejection
from the unrestricted Dirichlet (exact, in vectorised batches) and refused with a
clear error if the restriction holds almost no posterior mass.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["truncated_beta", "truncated_gamma", "truncated_normal", "floored_dirichlet", "EmptyTruncationError"]


class EmptyTruncationError(ValueError):
    """The conditional puts (numerically) no mass on the declared truncation interval."""


def _inverse_cdf(cdf, sf, ppf, isf, lower: np.ndarray, upper: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Draw a distribution given by its (vectorised) cdf, sf, ppf and isf, restricted to ``[lower, upper]``."""
    lower, upper = np.broadcast_arrays(np.asarray(lower, dtype=float), np.asarray(upper, dtype=float))
    u = rng.uniform(size=lower.shape)
    with np.errstate(all="ignore"):
        f_lo, f_hi = cdf(lower), cdf(upper)
        tail = f_lo > 0.5  # the interval is in the upper tail: work with survival functions
        if np.any(tail):
            s_lo, s_hi = sf(lower), sf(upper)
            out = np.where(tail, isf(s_hi + u * (s_lo - s_hi)), ppf(f_lo + u * (f_hi - f_lo)))
            mass = np.where(tail, s_lo - s_hi, f_hi - f_lo)
        else:
            out = ppf(f_lo + u * (f_hi - f_lo))
            mass = f_hi - f_lo
    out = np.asarray(out, dtype=float)
    if np.any(~(mass > 0)) or not np.all(np.isfinite(out)):
        raise EmptyTruncationError(
            "the conditional distribution has no numerically representable mass inside the truncation "
            f"[{np.min(lower):g}, {np.max(upper):g}]; widen the truncation."
        )
    return np.clip(out, lower, upper)


def truncated_beta(a, b, lower, upper, rng: np.random.Generator) -> np.ndarray:
    """Beta(a, b) restricted to ``[lower, upper]`` (elementwise)."""
    from scipy import special

    a, b, lower, upper = np.broadcast_arrays(
        np.asarray(a, dtype=float), np.asarray(b, dtype=float), np.maximum(lower, 0.0), np.minimum(upper, 1.0)
    )
    if np.all(lower <= 0.0) and np.all(upper >= 1.0):
        return rng.beta(a, b)
    return _inverse_cdf(
        lambda x: special.betainc(a, b, x),
        lambda x: special.betaincc(a, b, x),
        lambda q: special.betaincinv(a, b, q),
        lambda q: special.betainccinv(a, b, q),
        lower, upper, rng,
    )


def truncated_gamma(shape, rate, lower, upper, rng: np.random.Generator) -> np.ndarray:
    """Gamma(shape, rate) restricted to ``[lower, upper]`` (elementwise)."""
    from scipy import special

    shape, rate, lower, upper = np.broadcast_arrays(
        np.asarray(shape, dtype=float), np.asarray(rate, dtype=float), np.asarray(lower, dtype=float),
        np.asarray(upper, dtype=float),
    )
    if np.any(shape <= 0) or np.any(rate < 0):
        raise ValueError("a Gamma conditional needs shape > 0 and rate >= 0.")
    lower = np.maximum(lower, 0.0)
    if np.any(rate == 0):  # a flat prior and no data: density x^(shape-1) on [lower, upper]
        if not np.all(np.isfinite(upper)):
            raise EmptyTruncationError("a flat rate prior with no data needs a finite upper truncation.")
        lo, hi = lower, upper
        power = rng.uniform(size=shape.shape)
        flat = (lo**shape + power * (hi**shape - lo**shape)) ** (1.0 / shape)
        if np.all(rate == 0):
            return flat
        rest = truncated_gamma(np.where(rate > 0, shape, 1.0), np.where(rate > 0, rate, 1.0), lower, upper, rng)
        return np.where(rate > 0, rest, flat)
    if np.all(lower <= 0.0) and np.all(np.isinf(upper)):
        return rng.gamma(shape, 1.0 / rate)
    return _inverse_cdf(
        lambda x: special.gammainc(shape, rate * x),
        lambda x: special.gammaincc(shape, rate * x),
        lambda q: special.gammaincinv(shape, q) / rate,
        lambda q: special.gammainccinv(shape, q) / rate,
        lower, upper, rng,
    )


def truncated_normal(mean, sd, lower, upper, rng: np.random.Generator) -> np.ndarray:
    """Normal(mean, sd) restricted to ``[lower, upper]`` (elementwise)."""
    from scipy import special

    mean, sd, lower, upper = np.broadcast_arrays(
        np.asarray(mean, dtype=float), np.asarray(sd, dtype=float), np.asarray(lower, dtype=float),
        np.asarray(upper, dtype=float),
    )
    if np.all(np.isinf(lower)) and np.all(np.isinf(upper)):
        return rng.normal(mean, sd)
    z = _inverse_cdf(  # on the standard scale; the lower tail is handled by symmetry through sf/isf
        special.ndtr, lambda x: special.ndtr(-x), special.ndtri, lambda q: -special.ndtri(q),
        (lower - mean) / sd, (upper - mean) / sd, rng,
    )
    return np.clip(mean + sd * z, lower, upper)


#: Proposals tried per row before a floored Dirichlet draw is refused.
MAX_DIRICHLET_PROPOSALS = 200_000


def floored_dirichlet(alpha: np.ndarray, floor: float, rng: np.random.Generator) -> np.ndarray:
    """Dirichlet(alpha) (rows of ``alpha``) restricted to ``θ_k ≥ floor``, by exact rejection.

    Raises
    ------
    EmptyTruncationError
        If no proposal out of :data:`MAX_DIRICHLET_PROPOSALS` lands in the region
        for some row: the restriction then holds almost none of the posterior's mass.
    """
    alpha = np.atleast_2d(np.asarray(alpha, dtype=float))
    out = np.empty_like(alpha)
    if floor <= 0:
        g = rng.gamma(alpha)
        return (g / g.sum(axis=-1, keepdims=True)).reshape(out.shape)
    for r, row in enumerate(alpha):
        tried, batch = 0, 16
        while True:
            g = rng.gamma(np.broadcast_to(row, (batch, row.size)))
            theta = g / g.sum(axis=1, keepdims=True)
            ok = np.flatnonzero(np.all(theta >= floor, axis=1))
            if ok.size:
                out[r] = theta[ok[0]]
                break
            tried += batch
            if tried >= MAX_DIRICHLET_PROPOSALS:
                raise EmptyTruncationError(
                    f"the Dirichlet conditional (concentration {np.round(row, 3).tolist()}) puts less than about "
                    f"1/{MAX_DIRICHLET_PROPOSALS} of its mass on the floor θ_k ≥ {floor:g}; lower the floor "
                    "(pmdp.truncate) or update this variable with pmdp.PrivateMetropolis."
                )
            batch = min(4 * batch, 65_536)
    return out


def categorical_from_logits(logits: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One categorical draw per column of ``logits`` (shape K × N), by the Gumbel-max trick."""
    with np.errstate(invalid="ignore"):
        scores = logits + rng.gumbel(size=logits.shape)
    scores = np.where(np.isnan(scores), -math.inf, scores)
    return np.argmax(scores, axis=0)
