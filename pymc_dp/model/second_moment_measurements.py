"""Inference from a noisy second-moment matrix: the first principal direction ([WM10] §4.2)."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["pca_from_second_moment"]


def pca_from_second_moment(release: Any, *, prior_scale: float = 1.0, name: str = "theta") -> Any:
    """A PyMC model of the first principal direction given a noisy second-moment matrix ([WM10] §4.2).

    Records are modelled as ``x ~ N(0, θθᵀ + σ²I)``: θ (length d) is the first principal
    direction scaled by its standard deviation, σ the isotropic rest. Given θ and σ, the
    upper triangle of S = Σ x xᵀ is, by the central limit theorem, Normal with mean
    N·C and covariance N·(C_ik C_jl + C_il C_jk) between entries (i, j) and (k, l); the
    release adds independent noise of s.d. ``release.noise_sd`` to each entry — exactly
    Normal for the Gaussian mechanism, moment-matched for the Laplace one. The direction
    is identified up to sign: read it from the posterior of θθᵀ (e.g. its leading
    eigenvector), not from the mean of θ.

    Parameters
    ----------
    release
        What :func:`pymc_dp.mechanisms.noisy_second_moment` released.
    prior_scale
        Scale of the priors ``θ ~ Normal(0, prior_scale)``, ``σ ~ HalfNormal(prior_scale)``
        (the records' norms are at most ``release.norm_bound``; match it).
    name
        Name of θ.
    """
    import pymc as pm
    import pytensor.tensor as pt

    from ..mechanisms.second_moment import upper_triangle

    d, N = release.dimension, release.n_records
    rows, cols = upper_triangle(d)
    with pm.Model() as model:
        theta = pm.Normal(name, 0.0, prior_scale, shape=d)
        sigma = pm.HalfNormal("sigma", prior_scale)
        C = pt.outer(theta, theta) + sigma**2 * pt.eye(d)
        ik = C[rows[:, None], rows[None, :]]
        jl = C[cols[:, None], cols[None, :]]
        il = C[rows[:, None], cols[None, :]]
        jk = C[cols[:, None], rows[None, :]]
        cov = N * (ik * jl + il * jk) + release.noise_sd**2 * pt.eye(rows.size)
        pm.MvNormal("second_moment", mu=N * C[rows, cols], cov=cov, observed=np.asarray(release.values))
    return model
