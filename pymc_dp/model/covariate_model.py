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

``<y>_x_mu`` and ``<y>_x_scale`` carry the model's own dim when the covariates are the
columns of one ``X @ beta`` whose ``beta`` has one (``dims="predictor"``: the same
coords); otherwise a dim ``<y>_covariate`` labelled by the coefficients' names
(``"b_age"``, ``"beta[1]"``). A constant column (the intercept's ones) has mean its value and no variance. These
parameters are inferred from the released statistics with the regression's (they appear
in the released trace, as post-processing of the release); the covariates' first two
moments are all the central-limit likelihood uses, so a covariate that is not Gaussian
changes only how the sampling spread of the sums is modelled, not their means.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from .latent_variables import NEW_COORDS_TAG, new_free_variable

__all__ = ["covariate_parameters", "covariate_dim", "new_free_variable", "COVARIATE_ASSUMPTION", "NEW_COORDS_TAG"]

#: What the ledger records of a noise-aware regression (a modelling assumption, not a privacy one).
COVARIATE_ASSUMPTION = (
    "noise-aware likelihood for {name!r}: its covariates are modelled as Gaussian (latent mean and covariance "
    "{name}_x_mu, {name}_x_scale{mixing}, priors from the declared bounds) so that the noise on XᵀX, Xᵀy and yᵀy "
    "can be integrated out"
)


def covariate_dim(name: str, columns: Sequence[tuple[str | None, str | None, int]]) -> tuple[tuple[str, ...], Any]:
    """``(dims, labels)`` of the covariate variables: the model's own dim, or a new labelled one.

    The model's dim when every column comes, in order, from one coefficient vector with one
    dim (its coords already in the model); else ``<name>_covariate`` labelled
    ``"coef"``/``"coef[j]"`` (``None`` labels: no columns known, so no dims).
    """
    if not columns:
        return (), None
    owners = {(c, d) for c, d, _ in columns}
    if len(owners) == 1:
        (coef, dim), = owners
        if dim is not None and [j for _, _, j in columns] == list(range(len(columns))):
            return (dim,), None
    widths = {c: sum(1 for c2, _, _ in columns if c2 == c) for c, _, _ in columns}
    labels = [
        f"x{i}" if c is None else (c if widths[c] == 1 else f"{c}[{j}]") for i, (c, _, j) in enumerate(columns)
    ]
    if len(set(labels)) < len(labels):  # e.g. two unnamed terms: positions only
        labels = [f"x{i}" for i in range(len(columns))]
    return (f"{name}_covariate",), tuple(labels)


def covariate_parameters(name: str, family: Any, bounds: Mapping[str, Any], new_outputs: list[Any],
                         columns: Sequence[tuple[str | None, str | None, int]] = ()) -> dict[str, Any]:
    """``{"x_mu": …, "x_cov": …}`` for the regression ``name``: new free variables, see the module docstring.

    ``family`` is the :class:`~pymc_dp.families.LinearRegression` of the release and
    ``bounds`` its checked bounds (the box of every feature, an intercept column (1, 1)).
    ``columns`` names each covariate column, ``(coefficient name, its dim, index)``
    (:attr:`~pymc_dp.model.regression.LinearPredictor.columns`), for the variables' dims.
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
    # the columns name the covariates; an intercept column (last, constant) is never among the moving ones
    dims, labels = covariate_dim(name, [columns[j] for j in moving] if moving.size and moving.max() < len(columns) else [])
    mean = new_free_variable(f"{name}_x_mu", pm.Normal.dist(mid, half, shape=k), new_outputs, dims=dims, labels=labels)
    scale = new_free_variable(f"{name}_x_scale", pm.HalfNormal.dist(half, shape=k), new_outputs, transform=log,
                              dims=dims, labels=labels)
    chol = pt.diag(scale)
    if k > 1:
        rows, cols = np.tril_indices(k, -1)
        mixing = new_free_variable(f"{name}_x_mixing", pm.Normal.dist(0.0, 1.0, shape=rows.size), new_outputs)
        chol = pt.set_subtensor(chol[rows, cols], mixing * scale[rows])
    x_mu = pt.set_subtensor(x_mu[moving], mean)
    x_cov = pt.set_subtensor(x_cov[np.ix_(moving, moving)], pt.dot(chol, chol.T))
    return {"x_mu": x_mu, "x_cov": x_cov}
