"""Likelihoods of a *released* statistic that model the noise the mechanism added.

A Laplace release is ``z = S + Y``, ``Y ~ Laplace(0, b)``, with S the true
statistic. A plug-in likelihood treats z as if it were S and is over-confident
when b is not small next to the spread of S. The noise-aware likelihood is the
marginal ``p(z | θ) = Σ_s p(S = s | θ) · Laplace(z − s; b)`` ([WM10]; Bernstein &
Sheldon 2018): the posterior then knows the noise was added.

Two ways to compute it for a count S with M possible trials:

* exact: a log-sum-exp over s = 0..M — O(M) per evaluation, vectorised;
* CLT: S ≈ Normal(mean, var) convolved with the Laplace noise, which has the
  closed form of the normal-Laplace density (Reed 2006):

  ``f(z) = e^{σ²/(2b²)} / (4b) · [e^{−d/b} erfc((σ/b − d/σ)/√2) + e^{d/b} erfc((σ/b + d/σ)/√2)]``

  with d = z − mean, evaluated in log space with ``erfcx`` so that it stays finite
  for tiny b (large ε) and far tails.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._params import relation

__all__ = [
    "normal_laplace_logpdf",
    "laplace_marginal_count_logp",
    "clt_noise_aware_logp",
    "as_float64",
    "EXACT_SUM_MAX_TRIALS",
]

#: Above this many possible values of the true count, the exact sum gives way to the
#: CLT approximation (both agree to well under 1% of a posterior sd there: see tests).
EXACT_SUM_MAX_TRIALS = 5_000


def _log_term(r: Any, e: Any, x: Any, quad: Any) -> Any:
    """``r²/2 + e + log erfc(x)``, where ``r²/2 + e − x² = quad`` exactly.

    For x > 0 it is computed as ``quad + log erfcx(x)``: the large terms r²/2 and x²
    (≈ 1/(2b²) at large ε) cancel algebraically instead of in floating point.
    """
    import pytensor.tensor as pt

    pos = pt.maximum(x, 0.0)
    neg = pt.minimum(x, 0.0)
    return pt.switch(x > 0, quad + pt.log(pt.erfcx(pos)), r**2 / 2 + e + pt.log(pt.erfc(neg)))


def normal_laplace_logpdf(z: Any, mean: Any, sd: Any, b: float) -> Any:
    """log density of ``Normal(mean, sd²) + Laplace(0, b)`` at ``z`` (PyTensor, stable)."""
    import pytensor.tensor as pt

    d = z - mean
    r = sd / b
    quad = -(d**2) / (2 * sd**2)
    t1 = _log_term(r, -d / b, (r - d / sd) / math.sqrt(2.0), quad)
    t2 = _log_term(r, d / b, (r + d / sd) / math.sqrt(2.0), quad)
    return pt.logaddexp(t1, t2) - math.log(4.0 * b)


def laplace_marginal_count_logp(z: float, trials: int, p: Any, b: float, *, method: str = "auto") -> Any:
    """log p(z | p) for a Laplace-noised Binomial(trials, p) count ``z`` with noise scale ``b``.

    ``method``: ``"exact"`` (sum over all counts), ``"clt"`` (normal approximation
    convolved with the noise) or ``"auto"`` (exact up to
    :data:`EXACT_SUM_MAX_TRIALS` trials, CLT above). ``p`` may be a scalar or a
    vector (e.g. a grid of values): the result has its shape. ``z`` may be symbolic.
    """
    import pymc as pm
    import pytensor.tensor as pt

    if method == "auto":
        method = "exact" if trials <= EXACT_SUM_MAX_TRIALS else "clt"
    if method == "exact":
        k = pt.arange(int(trials) + 1)
        log_count = pm.logp(pm.Binomial.dist(n=int(trials), p=pt.as_tensor(p)[..., None]), k)
        log_noise = -pt.abs(z - k) / b - math.log(2.0 * b)
        return pt.logsumexp(log_count + log_noise, axis=-1)
    if method == "clt":
        mean = trials * p
        sd = pt.sqrt(trials * p * (1 - p))
        return normal_laplace_logpdf(z, mean, sd, b)
    raise ValueError(f"method must be 'auto', 'exact' or 'clt', got {method!r}.")


def as_float64(x: Any) -> Any:
    """``x`` as a float64 PyTensor variable (a Python float would otherwise become a float32 constant)."""
    import pytensor.tensor as pt

    return pt.cast(pt.as_tensor_variable(x), "float64")


def clt_noise_aware_logp(
    family: str, noisy: Any, n: float, scale: float, neighbouring: str, mean: Any, var: Any
) -> Any:
    """log p(z | θ) for a released sum ``z = S + Laplace(0, scale)``, S by the central limit theorem.

    ``S = Σᵢ s(xᵢ)`` over N (public) records is modelled as
    ``Normal(N·mean, N·var)``, ``mean`` and ``var`` being the mean and variance of
    one (clipped) record as PyTensor expressions of the parameters; the Laplace noise
    is convolved in exactly (:func:`~pymc_dp.families._noise_aware.normal_laplace_logpdf`).

    Parameters
    ----------
    family
        The family's name (for error messages).
    noisy
        The released, unprojected statistic (its first coordinate is used).
    n
        The public number of records N.
    scale
        The Laplace scale b of the release.
    neighbouring
        Must be ``"replace"``: under add/remove N is private (not supported yet).
    mean, var
        Mean and variance of one record's statistic.

    Raises
    ------
    ValueError
        Under ``"add_remove"`` neighbouring.
    """
    import pytensor.tensor as pt

    if relation(neighbouring) != "replace":
        raise ValueError(
            f"the noise-aware {family} likelihood needs N public (replace-one neighbouring); under add/remove "
            "(N private) it is not supported yet: use noise_aware=False."
        )
    b = float(scale)
    count = float(n)
    z = pt.as_tensor_variable(float(np.ravel(noisy)[0]))
    # A variance floor of (1e-10·b)² keeps the density finite when Var S → 0 (e.g. a
    # Poisson with μ far above U) and changes it by a relative O(1e-20): the noise dominates.
    sd = pt.sqrt(count * var + (1e-10 * b) ** 2)
    return normal_laplace_logpdf(z, count * mean, sd, b)
