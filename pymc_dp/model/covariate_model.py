"""A model of a regression's covariates, so that its noise-aware likelihood exists.

The released statistics of a linear regression are sums of products of the covariates
*and* the outcome (XᵀX, Xᵀy, yᵀy). How those sums vary depends on how the covariates
are distributed, which a regression does not model; the noise-aware likelihood
(:meth:`~pymc_dp.families.LinearRegression.record_moments`) therefore needs one
(Bernstein & Sheldon 2019). When the privacy flag privatises a recognised regression it
adds a Gaussian model of the covariates to the record-free model, with weakly informative
priors read off the declared bounds alone:

* ``<y>_x_mu`` — the mean of each non-constant covariate, ``Normal(midpoint, half-width)``;
* ``<y>_x_scale`` — ``HalfNormal(half-width)`` per covariate, and for two or more
  covariates ``<y>_x_mixing``, ``Normal(0, 1)`` entries below the diagonal: the covariance
  is ``L Lᵀ`` with ``L[i, i] = x_scale[i]`` and ``L[i, j] = x_mixing · x_scale[i]``
  (j < i), so correlated covariates are modelled as such.

A constant column (the intercept's ones) has mean its value and no variance. These
parameters are inferred from the released statistics with the regression's (they appear
in the released trace, as post-processing of the release); the covariates' first two
moments are all the central-limit likelihood uses, so a covariate that is not Gaussian
changes only how the sampling spread of the sums is modelled, not their means.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from .._compat import model_var

__all__ = ["covariate_parameters", "COVARIATE_ASSUMPTION"]

#: What the ledger records of a noise-aware regression (a modelling assumption, not a privacy one).
COVARIATE_ASSUMPTION = (
    "noise-aware likelihood for {name!r}: its covariates are modelled as Gaussian (latent mean and covariance "
    "{name}_x_mu, {name}_x_scale{mixing}, priors from the declared bounds) so that the noise on XᵀX, Xᵀy and yᵀy "
    "can be integrated out"
)


def _free(name: str, dist: Any, new_outputs: list[Any], transform: Any = None) -> Any:
    """``dist`` as a free variable ``name`` of a model graph (FunctionGraph form), queued in ``new_outputs``."""
    dist.name = name
    value = dist.type(name=f"{name}_log__" if transform is not None else name)
    var = model_var("free", dist, name, value=value, transform=transform)
    new_outputs.append(var)
    return var


def covariate_parameters(name: str, family: Any, bounds: Mapping[str, Any], new_outputs: list[Any]) -> dict[str, Any]:
    """``{"x_mu": …, "x_cov": …}`` for the regression ``name``: new free variables, see the module docstring.

    ``family`` is the :class:`~pymc_dp.families.LinearRegression` of the release and
    ``bounds`` its checked bounds (the box of every feature, an intercept column (1, 1)).
    """
    import pymc as pm
    import pytensor.tensor as pt
    from pymc.distributions.transforms import log

    lo, hi = family.box(bounds)
    lo, hi = lo[:-1], hi[:-1]  # the features; the last coordinate of the box is y
    moving = np.flatnonzero(lo != hi)
    k = moving.size
    mid, half = (lo / 2 + hi / 2)[moving], (hi / 2 - lo / 2)[moving]
    x_mu = pt.as_tensor_variable(np.asarray(lo, dtype="float64"))
    x_cov = pt.zeros((lo.size, lo.size), dtype="float64")
    if k == 0:
        return {"x_mu": x_mu, "x_cov": x_cov}
    mean = _free(f"{name}_x_mu", pm.Normal.dist(mid, half, shape=k), new_outputs)
    scale = _free(f"{name}_x_scale", pm.HalfNormal.dist(half, shape=k), new_outputs, transform=log)
    chol = pt.diag(scale)
    if k > 1:
        rows, cols = np.tril_indices(k, -1)
        mixing = _free(f"{name}_x_mixing", pm.Normal.dist(0.0, 1.0, shape=rows.size), new_outputs)
        chol = pt.set_subtensor(chol[rows, cols], mixing * scale[rows])
    x_mu = pt.set_subtensor(x_mu[moving], mean)
    x_cov = pt.set_subtensor(x_cov[np.ix_(moving, moving)], pt.dot(chol, chol.T))
    return {"x_mu": x_mu, "x_cov": x_cov}
