"""Inference from the noisy gradients of a private logistic regression ([WM10] §4.1).

:func:`pymc_dp.noisy_gradient_logistic` releases ``z_t = g_t(X) + e_t`` for t = 1..T, where
``g_t(X) = Σ_i x_i (y_i − σ(w_t · x_i))`` is the gradient sum at the public point ``w_t`` and
``e_t`` is Laplace noise of a known scale b on every coordinate. The records are latent; the
model's parameter is the weight vector θ of ``y | x ~ Bernoulli(σ(θ · x))``. Then

    p(θ | z) ∝ p(θ) ∫ p(G | θ) Π_t Π_j Laplace(z_tj | G_tj, b) dG,

with ``G = (g_1, …, g_T)``: a sum of N independent per-record vectors
``f(x, y) = (x (y − σ(w_t · x)))_t``. **The central limit theorem** makes G Normal given θ,
with mean ``N E[f]`` and covariance ``N Cov[f]`` over the record distribution — *jointly*
over the T iterations, which reuse the same records (treating them as independent would
count the data's sampling variation T times). Given x, ``y − σ(w_t·x)`` has mean
``p − s_t`` and ``E[(y − s_t)(y − s_u)] = p(1 − p) + (p − s_t)(p − s_u)`` with ``p = σ(θ·x)``,
``s_t = σ(w_t·x)``; the expectation over x is taken over ``features``, a sample of M rows
from the feature distribution (the declared design, public rows, or synthetic ones), so

    E[f] ≈ mean_m a_m,   E[f fᵀ] ≈ mean_m (a_m a_mᵀ + p_m(1 − p_m) (1 1ᵀ ⊗ x_m x_mᵀ)),

``a_m = ((p_m − s_mt) x_m)_t``. Where the noise is large against the sums' sampling
variation, the latent sums are sampled non-centred (``G = N E[f] + chol(N Cov f) η``, η
standard normal) and the Laplace noise enters exactly; where it is small, the noise is
moment-matched by a Normal and G integrated out (``noise=`` of
:func:`observe_noisy_gradients`). Public auxiliary records join as ordinary observed data
on the same θ.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..mechanisms.logistic_regression import NoisyGradientRun, check_logistic_records

__all__ = [
    "observe_noisy_gradients", "logistic_from_gradients", "gradient_noise_model", "gradient_loglik", "DEFAULT_JITTER",
]

#: Relative jitter added to the diagonal of the latent sums' covariance (its trace / Td times this).
DEFAULT_JITTER = 1e-6


def _features(features: Any, run: NoisyGradientRun) -> np.ndarray:
    F = np.asarray(features, dtype=float)
    d = run.measurements.shape[1]
    if F.ndim != 2 or F.shape[1] != d:
        raise ValueError(f"features must be an (M, {d}) array of feature rows (the records' distribution), got {F.shape}.")
    T = run.iterations
    if F.shape[0] < 2 * T * d:
        raise ValueError(
            f"features has {F.shape[0]} rows; the covariance of the {T}×{d} gradient sums needs at least "
            f"{2 * T * d} (thousands are better): draw more rows from the feature distribution."
        )
    # The same projection the mechanism applied to the records.
    F, _ = check_logistic_records(F, np.zeros(F.shape[0]), run.feature_l1_bound, "l1", private=False)
    return F


def _moments(F: Any, S: Any, theta: Any, xp: Any) -> tuple[Any, Any]:
    """E[f] (Td,) and Cov[f] (Td, Td) of one record's gradient terms, over the rows of ``F``.

    ``xp`` is ``numpy`` or ``pytensor.tensor``: the same formula serves a fixed θ (NumPy)
    and a θ of the model (PyTensor).
    """
    M, d = F.shape
    T = S.shape[1]
    p = 1.0 / (1.0 + xp.exp(-xp.dot(F, theta)))
    residual = p[:, None] - S  # (M, T)
    A = (residual[:, :, None] * F[:, None, :]).reshape((M, T * d))
    mean = A.mean(axis=0)
    within = xp.dot(F.T * (p * (1 - p)), F) / M  # E[p(1-p) x xᵀ], the same for every pair of iterations
    second = xp.dot(A.T, A) / M + xp.tile(within, (T, T))
    return mean, second - xp.outer(mean, mean)


def observe_noisy_gradients(
    name: str, run: NoisyGradientRun, weights: Any, features: Any, *, covariance: str = "auto",
    noise: str = "auto", model: Any = None,
) -> Any:
    """Condition a PyMC model's weight vector on the released noisy gradients of ``run``.

    Parameters
    ----------
    name
        Name of the observed variable (the latent sums' standardised noise is ``f"{name}_latent"``).
    run
        What :func:`pymc_dp.noisy_gradient_logistic` released.
    weights
        The model's weight vector θ (length d, the columns of the released records'
        features, e.g. ``pm.Normal("w", 0, 2, shape=d)``).
    features
        (M, d) rows drawn from the distribution of the records' features — the declared
        design, public rows or synthetic ones (rows are projected onto the declared L1 ball
        as the records were). Public, so free. M ≥ 2·T·d; the Monte Carlo error of the
        gradient means, N·sd/√M, should stay well below the noise scale.
    covariance
        ``"fixed"``: the sums' covariance N·Cov[f] evaluated once, at the heuristic's
        released answer (public) — fast, and enough where the noise swamps the sums'
        sampling variation. ``"exact"``: a function of θ in the model (a Cholesky factor
        per evaluation; slower), needed where it does not: a fixed covariance then biases
        the posterior and narrows it. ``"auto"`` (default): ``"exact"`` with Gaussian
        noise (see ``noise``), ``"fixed"`` with exact noise.
    noise
        How the Laplace noise enters. ``"exact"``: around latent sums sampled non-centred
        (G = N E[f] + L η, η standard normal; NUTS samples η with θ). ``"gaussian"``: the
        noise replaced by a Normal of the same variance 2b², so the measurements are
        marginally Normal, N(N E[f], N Cov[f] + 2b² I), with no latent variable. ``"auto"``
        (default): ``"gaussian"`` when the noise s.d. √2·b is below the median sampling s.d.
        of the sums (both public numbers) — the noise's shape then hardly matters, and the
        latent sums, pinned by small noise to a nearly singular CLT covariance, would make
        NUTS crawl — else ``"exact"``.
    model
        The model (default: the ``with`` block's).

    Returns
    -------
    TensorVariable
        The observed Laplace variable of the flattened measurements.
    """
    import pymc as pm

    model = pm.modelcontext(model)
    z = np.asarray(run.measurements, dtype=float).ravel()
    with model:
        mode, mean_sums, chol = gradient_noise_model(run, weights, features, covariance=covariance, noise=noise)
        if mode == "exact":
            eta = pm.Normal(f"{name}_latent", 0.0, 1.0, shape=z.size)
            return pm.Laplace(name, mu=mean_sums + pm.math.dot(chol, eta), b=run.scale, observed=z)
        return pm.MvNormal(name, mu=mean_sums, cov=_marginal_cov(chol, run.scale), observed=z)


def _marginal_cov(chol: Any, scale: float) -> Any:
    import pytensor.tensor as pt

    return pt.dot(chol, chol.T) + 2.0 * scale**2 * pt.eye(chol.shape[0])


def gradient_noise_model(
    run: NoisyGradientRun, weights: Any, features: Any, *, covariance: str = "auto", noise: str = "auto",
) -> tuple[str, Any, Any]:
    """The pieces of the measurements' likelihood: ``(noise mode, N·E[f](θ), Cholesky factor of N·Cov[f])``.

    ``noise`` ``"auto"`` is resolved here (see :func:`observe_noisy_gradients`); the mean is a
    PyTensor function of ``weights``; the factor is a constant (``covariance="fixed"``) or a
    function of ``weights`` (``"exact"``).
    """
    import pytensor.tensor as pt

    if covariance not in ("auto", "fixed", "exact"):
        raise ValueError(f"covariance must be 'auto', 'fixed' or 'exact', got {covariance!r}.")
    if noise not in ("auto", "exact", "gaussian"):
        raise ValueError(f"noise must be 'auto', 'exact' or 'gaussian', got {noise!r}.")
    F = _features(features, run)
    T, d = run.measurements.shape
    N = run.n_records
    S = 1.0 / (1.0 + np.exp(-(F @ run.weights[:-1].T)))  # (M, T): σ(w_t · x_m), public
    theta = pt.as_tensor_variable(weights)
    mean, cov = _moments(F, S, theta, pt)
    _, cov_fixed = _moments(F, S, np.asarray(run.final_weights, dtype=float), np)
    cov_fixed = N * cov_fixed
    if noise == "auto":
        typical = float(np.median(np.sqrt(np.clip(np.diag(cov_fixed), 0.0, None))))
        noise = "gaussian" if np.sqrt(2.0) * run.scale < typical else "exact"
    if covariance == "auto":
        # Where the noise no longer swamps the sums' sampling variation, their covariance's
        # dependence on θ shows in the posterior (a fixed one biases it): evaluate it at θ.
        covariance = "exact" if noise == "gaussian" else "fixed"
    if covariance == "fixed":
        jitter = DEFAULT_JITTER * max(np.trace(cov_fixed) / (T * d), 1e-12)
        chol = pt.as_tensor_variable(np.linalg.cholesky(cov_fixed + jitter * np.eye(T * d)))
    else:
        cov = N * cov
        jitter = DEFAULT_JITTER * pt.maximum(pt.trace(cov) / (T * d), 1e-12)
        chol = pt.linalg.cholesky(cov + jitter * pt.eye(T * d))
    return noise, N * mean, chol


def gradient_loglik(
    run: NoisyGradientRun, weights: Any, features: Any, make_latent: Any, *, covariance: str = "auto",
    noise: str = "auto",
) -> Any:
    """The log-likelihood of ``run``'s measurements as one scalar tensor (for a model built outside ``pm.Model``).

    ``make_latent(size)`` creates the standard-normal latent vector the exact noise model
    needs and returns it (its prior is the caller's); unused with Gaussian noise.
    """
    import pymc as pm

    z = np.asarray(run.measurements, dtype=float).ravel()
    mode, mean_sums, chol = gradient_noise_model(run, weights, features, covariance=covariance, noise=noise)
    if mode == "exact":
        sums = mean_sums + pm.math.dot(chol, make_latent(z.size))
        return pm.logp(pm.Laplace.dist(mu=sums, b=run.scale), z).sum()
    return pm.logp(pm.MvNormal.dist(mu=mean_sums, cov=_marginal_cov(chol, run.scale)), z)


def logistic_from_gradients(
    run: NoisyGradientRun, features: Any, *, prior_sigma: float = 5.0, public: tuple[Any, Any] | None = None,
    name: str = "w", covariance: str = "auto", noise: str = "auto",
) -> Any:
    """A PyMC model of the weights given the released noisy gradients (and optional public records).

    ``w ~ Normal(0, prior_sigma)`` on each of the d coordinates; the measurements enter through
    :func:`observe_noisy_gradients`; ``public=(X_pub, y_pub)`` adds public records as ordinary
    observed data ``Bernoulli(logit_p = X_pub @ w)`` (they cost nothing: they are not private).
    """
    import pymc as pm

    d = run.measurements.shape[1]
    with pm.Model() as model:
        w = pm.Normal(name, 0.0, prior_sigma, shape=d)
        observe_noisy_gradients("gradients", run, w, features, covariance=covariance, noise=noise)
        if public is not None:
            X_pub, y_pub = public
            X_pub, y_pub = check_logistic_records(X_pub, y_pub, run.feature_l1_bound, "l1", private=False)
            if X_pub.shape[1] != d:
                raise ValueError(f"public=(X_pub, y_pub): X_pub must have the run's {d} feature columns, got "
                                 f"{X_pub.shape[1]}.")
            pm.Bernoulli("public", logit_p=pm.math.dot(X_pub, w), observed=y_pub)
    return model

