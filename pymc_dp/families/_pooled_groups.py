"""The noise-aware likelihood of a hierarchy whose groups share some coordinates' sums (pooled).

A varying-intercept regression ``mu = a[idx] + X @ beta`` with one ``beta`` and one ``sigma``
releases, per group g, its count and its sums of the centred x and y (the coordinates ``L_g``),
and once for all groups the centred products of x and y summed over the groups (``S``):
:mod:`pymc_dp.families.grouped`. Group g's full statistic ``T_g`` (every coordinate) is, by the
central limit theorem given its count N_g, ``Normal(μ_g, Σ_g)`` (:func:`~pymc_dp.families.
_latent_count.scaled_release_moments`, at unit noise), independently across groups, so

* ``L_g ~ Normal(μ_g,L, Σ_g,LL + D_L)``, D_L the noise's variance (2 for unit Laplace noise
  moment-matched, ``2·u`` given noise-mixing variables u: the exact scale mixture), and
* given every ``L_g``, ``S ~ Normal(Σ_g [μ_g,S + K_g (L_g − μ_g,L)], Σ_g [Σ_g,SS − K_g Σ_g,LS] + D_S)``,
  ``K_g = Σ_g,SL (Σ_g,LL + D_L)⁻¹``: the regression of each group's share of S on its own release.

Their product is the joint density of the release, exactly as Gaussian conditioning gives it;
it costs G small solves and one of S's size, where the joint would be one of size G·|L| + |S|.
Each group's term is the same graph on the group's own inputs, vectorised over the groups
(:func:`pymc_dp.model.group_index.stack_group_outputs`).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

__all__ = ["pooled_coordinates", "group_share_terms", "pooled_sums_logp"]


def pooled_coordinates(family: Any, bounds: Mapping[str, Any]) -> tuple[int, ...]:
    """The coordinates of a regression's add/remove release that can be pooled over groups: the products of two
    non-constant columns (Σ(x − c)(x − c)ᵀ, Σ(x − c)(y − c), Σ(y − c)²), where the design has a constant column.

    Empty when the family is not a linear regression with an intercept column (nothing to pool: without the
    constant column the first moments are not released apart from the second).
    """
    if getattr(family, "name", None) != "linear_regression":
        return ()
    lo, hi = family.box(bounds)
    constant = np.flatnonzero((lo[:-1] == hi[:-1]) & (lo[:-1] != 0.0))
    if constant.size == 0:
        return ()
    one = int(constant[0])
    return tuple(j for j, (a, b) in enumerate(family._pairs) if one not in (a, b))


def group_share_terms(stats: Any, params: Mapping[str, Any], count: Any, pooled: Sequence[int],
                      noise_mixing: Any = None) -> tuple[Any, Any, Any]:
    """Group g's term of the pooled likelihood (module docstring): ``(log p(L_g), its share of S's mean, of S's
    covariance)``.

    ``stats`` is the group's part of the release (its own coordinates read; the pooled ones are not), ``count``
    its latent N_g, ``noise_mixing`` the mixing variables of its own sums (None: moment-matched, variance 2).
    The count's coordinate has its own unit Laplace noise, as in the ungrouped likelihood; its term is left out
    where the count is sampled through that noise (:class:`~pymc_dp.families._latent_count.LatentCount`).
    """
    import pymc as pm
    import pytensor.tensor as pt

    from ._latent_count import count_through_its_noise, scaled_release_moments

    z, m, c, _ = scaled_release_moments(stats, params, count)
    size = int(np.size(stats.released if stats.released is not None else stats.noisy))
    sums = size - 1  # the count is last
    own = [j for j in range(sums) if j not in set(pooled)]
    shared = list(pooled)
    noise = 2.0 * (pt.ones(len(own), dtype="float64") if noise_mixing is None else noise_mixing)
    c_own = c[own][:, own] + pt.diag(noise)
    c_cross = c[own][:, shared]
    residual = z[own] - m[own]
    logp = pm.logp(pm.MvNormal.dist(mu=m[own], cov=c_own), z[own])
    if not count_through_its_noise(stats):  # else the count's term is its noise score's prior (LatentCount)
        logp = logp - pt.abs(z[sums] - m[sums]) - np.log(2.0)
    gain = pt.linalg.solve(c_own, c_cross, assume_a="pos").T  # K_g = Σ_SL (Σ_LL + D)⁻¹
    mean = m[shared] + pt.dot(gain, residual)
    cov = c[shared][:, shared] - pt.dot(gain, c_cross)
    return logp - (len(own) + 1) * np.log(_scale(stats)), mean, 0.5 * (cov + cov.T)


def pooled_sums_logp(pooled_released: np.ndarray, scale: float, means: Any, covs: Any, noise_mixing: Any = None) -> Any:
    """log p(S | every group's own release): S's mean and covariance the sums of the groups' shares (``means``
    G × |S|, ``covs`` G × |S| × |S|), plus the noise (2, or ``2·u`` given mixing variables u), at unit noise."""
    import pymc as pm
    import pytensor.tensor as pt

    from ._noise_aware import released_values

    z = released_values(np.asarray(pooled_released, dtype=float) / scale)
    k = int(np.size(pooled_released))
    noise = 2.0 * (pt.ones(k, dtype="float64") if noise_mixing is None else noise_mixing)
    cov = pt.sum(covs, axis=0) + pt.diag(noise)
    return pm.logp(pm.MvNormal.dist(mu=pt.sum(means, axis=0), cov=cov), z) - k * np.log(scale)


def _scale(stats: Any) -> float:
    from ._noise_aware import laplace_equivalent_scale

    return float(laplace_equivalent_scale(float(stats.scale), stats.mechanism))
