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

Statistics of several coordinates (Normal with unknown σ: Σx and Σx²; categorical
counts; the regression's ZᵀZ) are modelled by the multivariate CLT,
``S ≈ Normal(N·m(θ), N·C(θ))`` with m, C the mean and covariance of one record's
statistic. The convolution with independent Laplace noise on each coordinate has no
closed form in several dimensions. In two (the commonest case: a Normal's Σx and
Σx²) one noise coordinate is convolved in exactly and the other integrated by a fixed
quadrature over its scale mixture (:mod:`pymc_dp.families._bivariate`): no latent
variables, so NUTS samples only the model's parameters. Above two it is written as a scale mixture (Andrews &
Mallows 1974; the device of Bernstein & Sheldon 2019): ``Laplace(0, b)`` is
``Normal(0, w)`` with ``w = 2b²·u``, ``u ~ Exponential(1)``. With one latent ``u``
per coordinate (sampled by NUTS with the parameters),
``z | θ, u ~ Normal(N·m, N·C + 2b²·diag(u))`` and integrating ``u`` out gives the
exact CLT–Laplace marginal. The likelihood stays smooth in θ and u, and it costs
one d×d Cholesky factorisation per evaluation, independent of N.

For Gaussian records the moments of the products ``z_a z_b`` that make up such
statistics follow from Isserlis' theorem (:func:`gaussian_product_moments`).
"""

from __future__ import annotations

import contextvars

import math
from typing import Any, Sequence

import numpy as np

from ._params import relation

__all__ = [
    "normal_laplace_logpdf",
    "laplace_marginal_count_logp",
    "laplace_marginal_histogram_logp",
    "clt_noise_aware_logp",
    "gaussian_product_moments",
    "as_float64",
    "EXACT_SUM_MAX_TRIALS",
    "EXACT_HISTOGRAM_MAX_TRIALS",
    "noise_log_density",
    "laplace_equivalent_scale",
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
    return pt.logaddexp(t1, t2) - pt.log(as_float64(4.0 * b))


def noise_log_density(d: Any, scale: Any, mechanism: str = "laplace") -> Any:
    """``log p(d)`` of additive noise d with ``scale``: the Laplace density or the discrete Laplace pmf.

    ``mechanism`` is ``"laplace"`` (density ``exp(−|d|/b) / 2b``) or ``"geometric"``
    (the discrete Laplace on the integers, pmf ``tanh(1/2s) · exp(−|d|/s)``, the noise
    of integer statistics). ``d`` and ``scale`` may be numbers or PyTensor expressions.
    """
    import pytensor.tensor as pt

    if mechanism == "laplace":
        return -pt.abs(d) / scale - pt.log(as_float64(2.0) * scale)
    if mechanism == "geometric":
        return pt.log(pt.tanh(as_float64(0.5) / scale)) - pt.abs(d) / scale
    raise ValueError(f"mechanism must be 'laplace' or 'geometric', got {mechanism!r}.")


def laplace_equivalent_scale(scale: Any, mechanism: str = "laplace") -> Any:
    """The continuous Laplace scale with the variance of the release's noise.

    For discrete Laplace noise of scale s (variance ``2q/(1−q)²``, q = e^{−1/s}) it is
    ``1 / (2 sinh(1/2s))`` (slightly below s: 0.96 s at s = 1); the central-limit
    likelihoods, which already treat the sum as continuous, model the noise with it.
    ``scale`` may be a number (a float is returned) or a PyTensor expression. It is
    floored at s/2, which it reaches at s ≈ 0.23, where the noise is 0 with probability
    0.98: a histogram's central-limit covariance is singular but for the noise, and a
    vanishing noise term would leave it numerically so. The variance this overstates,
    below s²/2 ≤ 0.03, is nothing next to a sum's sampling variance.
    """
    if mechanism != "geometric":
        return scale
    if isinstance(scale, (int, float, np.floating, np.integer)):
        x = 0.5 / float(scale)
        return max(math.exp(-x) / -math.expm1(-2.0 * x), 0.5 * float(scale))
    import pytensor.tensor as pt

    x = 0.5 / scale
    return pt.maximum(pt.exp(-x) / -pt.expm1(-2.0 * x), 0.5 * scale)


def _length(mean: Any, values: Any) -> int | None:
    """The static number of coordinates of a statistic (from its mean or its released values)."""
    for v in (mean, values):
        if v.type.ndim >= 1 and v.type.shape[-1] is not None:
            return int(v.type.shape[-1])
    return None


def laplace_marginal_count_logp(
    z: float, trials: int, p: Any, b: float, *, method: str = "auto", mechanism: str = "laplace"
) -> Any:
    """log p(z | p) for a Laplace-noised Binomial(trials, p) count ``z`` with noise scale ``b``.

    ``method``: ``"exact"`` (sum over all counts), ``"clt"`` (normal approximation
    convolved with the noise) or ``"auto"`` (exact up to
    :data:`EXACT_SUM_MAX_TRIALS` trials, CLT above). ``p`` may be a scalar or a
    vector (e.g. a grid of values): the result has its shape. ``z`` and ``b`` may be symbolic.
    ``mechanism="geometric"``: the noise is discrete Laplace of scale ``b`` (its pmf in the
    exact sum; the continuous Laplace of the same variance in the CLT form, ``b`` then a number).
    """
    import pymc as pm
    import pytensor.tensor as pt

    p = as_float64(p)  # a Python float such as 0.5 would otherwise become a float32 constant
    if method == "auto":
        method = "exact" if trials <= EXACT_SUM_MAX_TRIALS else "clt"
    if method == "exact":
        k = pt.arange(int(trials) + 1)
        log_count = pm.logp(pm.Binomial.dist(n=int(trials), p=p[..., None]), k)
        return pt.logsumexp(log_count + noise_log_density(z - k, b, mechanism), axis=-1)
    if method == "clt":
        mean = trials * p
        sd = pt.sqrt(trials * p * (1 - p))
        return normal_laplace_logpdf(z, mean, sd, laplace_equivalent_scale(b, mechanism))
    raise ValueError(f"method must be 'auto', 'exact' or 'clt', got {method!r}.")


#: Up to this many trials in all, a noisy histogram's likelihood is the exact sum
#: (:func:`laplace_marginal_histogram_logp`, (T + 1)² terms per category); above, the CLT.
#: The cost grows as T²: at 150 trials and 3 categories a NUTS run of 2 × 2000 draws
#: takes about half a minute; at 400, several minutes.
EXACT_HISTOGRAM_MAX_TRIALS = 150


def laplace_marginal_histogram_logp(z: Any, trials: int, p: Any, b: float, mechanism: str = "laplace") -> Any:
    """Exact log p(z | p) for Laplace-noised multinomial counts: every histogram summed out.

    ``z`` are the k released counts (each the true count plus independent
    Laplace(0, b) noise; NumPy, or a PyTensor vector of static length k), ``b`` a number or a
    PyTensor scalar, ``trials`` = T the public total of the true counts and ``p``
    the k category probabilities. The multinomial factorises into a chain of
    binomials — c₁ ~ Binomial(T, q₁), c₂ | c₁ ~ Binomial(T − c₁, q₂), …, with
    ``q_j = p_j / (1 − p₁ − … − p_{j−1})`` and the last count what remains — so the
    sum over all histograms is a forward recursion over categories whose state is the
    number of trials not yet assigned (0..T):

    ``α_{j+1}(r′) = log Σ_{r ≥ r′} exp(α_j(r) + log Binomial(r − r′; r, q_j) + log Laplace(z_j − (r − r′); b))``

    and ``log p(z | p) = log Σ_r exp(α_k(r) + log Laplace(z_k − r; b))``. Cost:
    (k − 1)·(T + 1)² terms per evaluation (vectorised log-sum-exp, differentiable in p),
    against O(T^(k−1)) for enumerating the histograms. ``mechanism="geometric"``: the
    noise is discrete Laplace of scale ``b`` (:func:`noise_log_density`).
    """
    import pytensor.tensor as pt
    from scipy.special import gammaln

    if isinstance(z, pt.Variable):  # a shared input (the compiled density then serves every release)
        k = int(z.type.shape[-1])
        z = z.ravel()
    else:
        z = np.asarray(z, dtype=float).ravel()
        k = z.size
    total = int(trials)
    p = as_float64(p)
    r = np.arange(total + 1, dtype=float)
    taken = r[:, None] - r[None, :]  # from r trials left to r′ left: taken = r − r′ ≥ 0
    valid = taken >= 0
    taken = np.where(valid, taken, 0.0)
    log_choose = gammaln(r[:, None] + 1) - gammaln(taken + 1) - gammaln(r[:, None] - taken + 1)
    unreachable = -1e10  # finite, so that log-sum-exp over an all-unreachable column stays finite
    alpha = pt.as_tensor_variable(np.where(r == total, 0.0, unreachable))
    used = pt.zeros((), dtype="float64")
    for j in range(k - 1):
        q = p[j] / (1.0 - used)
        log_step = (
            log_choose + taken * pt.log(q) + (r[:, None] - taken) * pt.log1p(-q)
            + noise_log_density(z[j] - taken, b, mechanism)
        )
        alpha = pt.logsumexp(alpha[:, None] + pt.where(valid, log_step, unreachable), axis=0)
        used = used + p[j]
    return pt.logsumexp(alpha + noise_log_density(z[k - 1] - r, b, mechanism))


def released_values(noisy: Any) -> Any:
    """Released numbers as a shared (not constant) float64 array of a likelihood graph.

    Every release has new numbers; as constants they would make every privatised model
    a new graph, which PyTensor compiles afresh (seconds per call under the numba
    backend). As a shared input the graph is the same from one release to the next, so
    its compiled logp and gradient are reused. The values are the released statistics
    themselves — already private — and are not registered as model data, so they are
    not copied into a trace's ``constant_data``.
    """
    import pytensor

    import pytensor.tensor as pt

    from .._compat import mark_released

    values = np.asarray(noisy, dtype="float64")
    # the shape is public (the family's), so it may be static: families read statistics by position
    return pt.specify_shape(mark_released(pytensor.shared(values, name=RELEASE_NAME.get())), values.shape)


#: The name :func:`released_values` gives its shared variable: ``released_statistics_<variable>``
#: while a model's likelihood term is built (:func:`pymc_dp.model.observe.statistics_loglik`), so
#: that every observed variable's numbers have their own name (nutpie updates them by name).
RELEASE_NAME: contextvars.ContextVar[str] = contextvars.ContextVar("release_name", default="released_statistics")


def released_scalar(value: float, suffix: str) -> Any:
    """A public number of a release (its noise scale, say) as a named shared float64 scalar.

    As a constant it would make every release a new graph, compiled afresh; as a shared
    input (named ``<release name>_<suffix>``, unique per observed variable) the compiled
    log density of one release serves the next.
    """
    import pytensor

    from .._compat import mark_released

    return mark_released(pytensor.shared(np.float64(value), name=f"{RELEASE_NAME.get()}_{suffix}"))


def as_float64(x: Any) -> Any:
    """``x`` as a float64 PyTensor variable (a Python float would otherwise become a float32 constant)."""
    import pytensor.tensor as pt

    return pt.cast(pt.as_tensor_variable(x), "float64")


def gaussian_product_moments(mean: Any, cov: Any, pairs: Sequence[tuple[int, int]]) -> tuple[Any, Any]:
    """Mean and covariance of the products ``z_a z_b`` (one per pair) of ``z ~ Normal(mean, cov)``.

    Isserlis' theorem for a Gaussian with mean m and covariance C:

    * ``E[z_a z_b] = C_ab + m_a m_b``;
    * ``Cov(z_a z_b, z_c z_d) = C_ac C_bd + C_ad C_bc + m_a m_c C_bd + m_a m_d C_bc
      + m_b m_c C_ad + m_b m_d C_ac``.

    A component with zero variance is a constant (e.g. ``z_0 = 1`` makes
    ``z_0 z_b = z_b`` a first moment). ``mean`` and ``cov`` may be NumPy arrays (the
    result is NumPy) or PyTensor variables.
    """
    a = np.array([p[0] for p in pairs], dtype=int)
    b = np.array([p[1] for p in pairs], dtype=int)
    m, c = mean, cov
    first = c[a, b] + m[a] * m[b]
    ma, mb = m[a], m[b]
    cac, cbd = c[a[:, None], a[None, :]], c[b[:, None], b[None, :]]
    cad, cbc = c[a[:, None], b[None, :]], c[b[:, None], a[None, :]]
    second = (
        cac * cbd
        + cad * cbc
        + ma[:, None] * ma[None, :] * cbd
        + ma[:, None] * mb[None, :] * cbc
        + mb[:, None] * ma[None, :] * cad
        + mb[:, None] * mb[None, :] * cac
    )
    return first, second


def clt_noise_aware_logp(
    family: str,
    noisy: Any,
    n: float,
    scale: float,
    neighbouring: str,
    mean: Any,
    var: Any,
    noise_mixing: Any = None,
) -> Any:
    """log p(z | θ) for a released sum ``z = S + Laplace(0, scale)``, S by the central limit theorem.

    ``S = Σᵢ s(xᵢ)`` over N (public) records is modelled as
    ``Normal(N·mean, N·var)``, ``mean`` and ``var`` being the mean and variance (a
    covariance matrix for several coordinates) of one (clipped) record's statistic,
    as PyTensor expressions of the parameters.

    * One coordinate (scalar ``mean``): the Laplace noise is convolved in exactly
      (:func:`~pymc_dp.families._noise_aware.normal_laplace_logpdf`).
    * Two coordinates (e.g. Σx and Σx² of a Normal with unknown σ), without
      ``noise_mixing``: the bivariate convolution by a fixed quadrature
      (:func:`~pymc_dp.families._bivariate.bivariate_normal_laplace`).
    * d > 2 coordinates (vector ``mean``, d×d ``var``): given the latent
      ``noise_mixing`` u (d values, each Exponential(1) a priori), the released vector
      is ``Normal(N·mean, N·var + 2·scale²·diag(u))``; integrating u out is the exact
      Laplace convolution (module docstring).

    Parameters
    ----------
    family
        The family's name (for error messages).
    noisy
        The released, unprojected statistic (NumPy; or a PyTensor variable, e.g. a
        ``pm.Data`` container, so that one compiled model serves many releases).
    n
        The public number of records N.
    scale
        The Laplace scale b of the release.
    neighbouring
        Must be ``"replace"``: under add/remove N is private, and the likelihood with N as a
        latent variable is :func:`~pymc_dp.families._latent_count.latent_count_noise_aware_logp`.
    mean, var
        Mean and variance (or covariance) of one record's statistic.
    noise_mixing
        The latent mixing variables u (a PyTensor vector of length d), required when d > 2
        (and used, if given, when d = 2).

    Raises
    ------
    ValueError
        Under ``"add_remove"`` neighbouring, or without ``noise_mixing`` when d > 2.
    """
    import pytensor.tensor as pt

    if relation(neighbouring) != "replace":
        raise ValueError(
            f"the noise-aware {family} likelihood with N as a number needs N public (replace-one neighbouring); "
            "under add/remove (N private) use pmdp.observe_stats, which makes N a latent variable."
        )
    b = float(scale)
    mean = pt.as_tensor_variable(mean)
    values = (noisy if isinstance(noisy, pt.Variable) else released_values(noisy)).ravel()
    if _length(mean, values) == 2 and noise_mixing is None:
        from ._bivariate import bivariate_normal_laplace

        count = float(n)
        return bivariate_normal_laplace(values, count * mean, count * pt.as_tensor_variable(var), b)
    # N and the noise scale as shared inputs (when the release's numbers are): a release at another N or ε
    # then has the same graph, and its compiled density is reused
    shared = not isinstance(noisy, pt.Variable)
    count = released_scalar(float(n), "n") if shared and float(n) != 1.0 else float(n)
    b_in = released_scalar(b, "scale") if shared and b != 1.0 else b
    if mean.type.ndim == 0:
        z = values[0]
        # A variance floor of (1e-10·b)² keeps the density finite when Var S → 0 (e.g. a
        # Poisson with μ far above U) and changes it by a relative O(1e-20): the noise dominates.
        sd = pt.sqrt(count * var + (1e-10 * b_in) ** 2)
        return normal_laplace_logpdf(z, count * mean, sd, b_in)
    if noise_mixing is None:
        raise ValueError(
            f"the noise-aware {family} likelihood of several released numbers needs latent noise-mixing "
            "variables; use pmdp.observe_stats (which adds them) rather than calling the family directly."
        )
    import pymc as pm

    cov = count * pt.as_tensor_variable(var) + 2.0 * b_in * b_in * pt.diag(noise_mixing)
    return pm.logp(pm.MvNormal.dist(mu=count * mean, cov=cov), values)
