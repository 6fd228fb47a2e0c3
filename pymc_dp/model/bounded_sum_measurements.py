"""Inference from a released sum of a bounded function of the records (:func:`pymc_dp.noisy_bounded_sum`).

The release is ``z = S + e``, ``S = Σ_i f(r_i)`` over N unseen records, ``e`` Laplace of a
known scale b. The model says how one record is distributed given its parameters θ,
``r ~ p(r | θ)`` (a PyMC distribution). By the central limit theorem S is Normal given θ,
with mean ``N E_θ[f]`` and covariance ``N Cov_θ[f]``. Those moments are computed on a
**support**: public points ``s_1 … s_M`` spread uniformly over where the records lie (a
grid over the declared box, or every value of a finite domain), weighted by the record
density,

    E_θ[f] ≈ Σ_m w_m(θ) f(s_m),   w_m(θ) = p(s_m | θ) / Σ_m' p(s_m' | θ),

so ``f`` is evaluated once, on public points (any NumPy function will do), and only the
weights depend on θ — differentiably, so NUTS samples θ. Over a finite domain enumerated
in full this is exact; on a grid it is a quadrature of p restricted to the grid's range
(records outside it are outside the model). The noise then enters as for the logistic
gradients: moment-matched (S integrated out, ``z ~ N(N E[f], N Cov[f] + 2b² I)``) where it
is small against the sums' sampling spread, exactly around latent sums where it is not.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..mechanisms.bounded_sum import BoundedSumRelease, bounded_rows
from .gradient_measurements import DEFAULT_JITTER, _marginal_cov

__all__ = ["observe_bounded_sum"]


def _support_moments(rows: np.ndarray, logp: Any) -> tuple[Any, Any]:
    """E[f] and Cov[f] under weights ∝ exp(logp) over the support's rows of f (PyTensor)."""
    import pytensor.tensor as pt

    w = pt.special.softmax(logp)
    mean = pt.dot(w, rows)
    second = pt.dot(rows.T * w, rows)
    return mean, second - pt.outer(mean, mean)


def observe_bounded_sum(
    name: str, release: BoundedSumRelease, f: Callable[[np.ndarray], Any], record: Any, support: Any, *,
    noise: str = "auto", model: Any = None, finite_domain: bool = False,
) -> Any:
    """Condition a PyMC model on a released bounded sum, the records and the noise integrated out.

    Parameters
    ----------
    name
        Name of the observed variable (the exact noise model's latent sums are ``f"{name}_latent"``).
    release
        What :func:`pymc_dp.noisy_bounded_sum` released.
    f
        The same per-record function the release summed (evaluated here on ``support``
        only, and projected onto the same L1 ball).
    record
        The distribution of one record given the model's parameters, e.g.
        ``pm.Normal.dist(mu, sigma)`` or ``pm.Poisson.dist(rate)``; ``pm.logp(record, s)``
        must give one log-density per support row.
    support
        (M, …) public record values spread uniformly over where the records lie (e.g.
        ``np.linspace(lo, hi, 2001)``), or every value of a finite domain. Dense enough
        to resolve ``p(r | θ)`` wherever the posterior goes (thousands of points in one
        dimension); M ≥ 2k. Records outside its range are outside the model.
    noise
        ``"exact"``: Laplace noise around latent sums (non-centred); ``"gaussian"``: noise
        moment-matched, sums integrated out; ``"auto"`` (default): ``"gaussian"`` where the
        noise s.d. √2·b is below the median sampling s.d. of the sums under uniform
        weights on the support (public numbers), else ``"exact"``.
    model
        The model (default: the ``with`` block's).
    finite_domain
        ``True`` when ``support`` is every value a record can take: the moments are then
        exact and any number of support points will do (otherwise at least 2k are needed
        for a quadrature).

    Returns
    -------
    TensorVariable
        The observed variable of the release.
    """
    import pymc as pm
    import pytensor.tensor as pt

    if not isinstance(release, BoundedSumRelease):
        raise ValueError(f"release must be what pmdp.noisy_bounded_sum returned, got {type(release).__name__}.")
    if noise not in ("auto", "exact", "gaussian"):
        raise ValueError(f"noise must be 'auto', 'exact' or 'gaussian', got {noise!r}.")
    points = np.asarray(support, dtype=float)
    rows = bounded_rows(f, points, release.bound, private=False, what="support")
    M, k = rows.shape
    z = np.asarray(release.values, dtype=float)
    if k != z.size:
        raise ValueError(f"f gives {k} coordinate(s) on the support but the release has {z.size}: pass the same f.")
    if M < 2 * k and not finite_domain:
        raise ValueError(f"support has {M} point(s); the moments of {k} coordinate(s) need at least {2 * k} "
                         "(thousands are better).")
    n = release.n_records
    model = pm.modelcontext(model)
    with model:
        logp = pm.logp(record, pt.as_tensor_variable(points))
        if logp.type.ndim != 1:
            raise ValueError(f"pm.logp(record, support) must give one value per support row (shape ({M},)); it has "
                             f"{logp.type.ndim} dimension(s): give record the shape of one record.")
        mean, cov = _support_moments(rows, logp)
        if noise == "auto":
            spread = np.sqrt(np.clip(np.diag(n * np.cov(rows, rowvar=False, bias=True).reshape(k, k)), 0.0, None))
            noise = "gaussian" if np.sqrt(2.0) * release.scale < float(np.median(spread)) else "exact"
        cov = n * cov
        jitter = DEFAULT_JITTER * pt.maximum(pt.trace(cov) / k, 1e-12)
        chol = pt.linalg.cholesky(cov + jitter * pt.eye(k))
        if noise == "exact":
            eta = pm.Normal(f"{name}_latent", 0.0, 1.0, shape=k)
            return pm.Laplace(name, mu=n * mean + pt.dot(chol, eta), b=release.scale, observed=z)
        return pm.MvNormal(name, mu=n * mean, cov=_marginal_cov(chol, release.scale), observed=z)
