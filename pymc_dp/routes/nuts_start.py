"""PyMC's NUTS on a record-free model, its mass matrix started from the posterior's curvature.

``pm.sample``'s default start (``jitter+adapt_diag``) takes the identity as the first mass
matrix. A hierarchy released by group has parameters whose posterior scales differ by orders of
magnitude — a group's covariate mean known to 0.01, a scale to 1 — and NUTS spends most of its
tuning on deep trees until the adaptation has learned them: measured on the 20-group regression
at N = 10⁵, ε = 10, 39,000 of 46,000 gradients went to tuning (37 s of sampling), against 8,300
with the curvature start (15 s), for the same posterior.

:func:`curvature_scaled` finds the mode of the record-free model (L-BFGS on its compiled log
density), takes the diagonal of the Hessian there by central differences of the gradient, and
starts PyMC's own diagonal adaptation (``QuadPotentialDiagAdapt``, weight 10, as ``init_nuts``
does) from its inverse; each chain starts at the mode moved by a Normal draw of those variances
(a draw from the Laplace approximation: the chains still start apart). The model holds released
numbers only, so all of this is post-processing.
"""

from __future__ import annotations

import os
from typing import Any, Mapping

import numpy as np

#: Above this many unconstrained coordinates the Hessian's diagonal (two gradients a coordinate) is not taken.
MAX_COORDINATES = 2_000
#: pm.sample keywords that are NUTS settings: given to the step built here.
_NUTS_KEYWORDS = ("target_accept", "max_treedepth", "early_max_treedepth", "step_scale", "Emax", "adapt_step_size")


def curvature_scaled(model: Any, pm_kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """``pm.sample``'s keywords with a NUTS step whose mass matrix starts at the inverse Hessian diagonal at the mode.

    Returned unchanged where the user chose the start, the step or a sampler other than PyMC's, where a free
    variable is discrete (NUTS does not sample it alone), where the model is too large (:data:`MAX_COORDINATES`),
    where the mode or its curvature is not finite, or where L-BFGS did not converge or a variance lies outside
    [1e-12, 1e6] (a degenerate mode, such as a centred hierarchy's funnel neck): PyMC's own start there.
    """
    kwargs = dict(pm_kwargs)
    if any(kwargs.get(k) is not None for k in ("step", "initvals")) or kwargs.get("init") not in (None, "auto"):
        return kwargs
    discrete = any(str(v.dtype).startswith(("int", "uint", "bool")) for v in model.value_vars)
    if kwargs.get("nuts_sampler") not in (None, "pymc") or not model.free_RVs or discrete:
        return kwargs
    try:
        return _scaled(model, dict(kwargs))
    except Exception:  # noqa: BLE001 - a start the sampler does not need: PyMC's own start instead
        return kwargs


def _scaled(model: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """:func:`curvature_scaled`'s work, on keywords it may use."""
    import pymc as pm
    from pymc.step_methods.hmc.quadpotential import QuadPotentialDiagAdapt

    logp_dlogp = model.logp_dlogp_function(ravel_inputs=True, **(kwargs.get("compile_kwargs") or {}))
    logp_dlogp.set_extra_values({})
    point = model.initial_point()
    start = np.concatenate([np.ravel(point[v.name]) for v in model.value_vars]).astype(float)
    if start.size > MAX_COORDINATES:
        return kwargs
    mode, variances = _mode_and_variances(logp_dlogp, start)
    if mode is None:
        return kwargs
    chains = kwargs.get("chains") or max(2, kwargs.get("cores") or min(4, os.cpu_count() or 1))
    seeds = [int(s) for s in np.random.default_rng(kwargs.get("random_seed")).integers(2**30, size=chains)]
    starts = _chain_starts(logp_dlogp, mode, variances, seeds)
    nuts = {**(kwargs.pop("nuts", None) or {}), **{k: kwargs.pop(k) for k in _NUTS_KEYWORDS if k in kwargs}}
    potential = QuadPotentialDiagAdapt(start.size, np.mean(starts, axis=0), variances, 10, rng=seeds[0])
    step = pm.NUTS(potential=potential, model=model, rng=seeds[0], logp_dlogp_func=logp_dlogp, **nuts)
    kwargs.pop("init", None)
    return {**kwargs, "nuts_sampler": "pymc", "step": step, "random_seed": seeds,
            "initvals": _constrained(model, starts, point)}


def _mode_and_variances(logp_dlogp: Any, start: np.ndarray) -> tuple[np.ndarray | None, np.ndarray]:
    """The mode (L-BFGS from ``start``) and the inverse of the Hessian's diagonal there (1 where not positive); None
    where the optimiser did not converge or a variance lies outside [1e-12, 1e6] (a degenerate mode)."""
    from scipy.optimize import minimize

    def negative(x: np.ndarray) -> tuple[float, np.ndarray]:
        logp, grad = logp_dlogp(x)
        return (-float(logp), -np.asarray(grad, dtype=float)) if np.isfinite(logp) else (np.inf, np.zeros_like(x))

    with np.errstate(all="ignore"):
        found = minimize(negative, start, jac=True, method="L-BFGS-B", options={"maxiter": 500})
        mode = found.x if np.all(np.isfinite(found.x)) and np.isfinite(found.fun) else None
        if mode is None:
            return None, np.ones_like(start)
        curvature = np.empty_like(mode)
        for i in range(mode.size):
            step = 1e-4 * max(1.0, abs(mode[i]))
            shift = np.zeros_like(mode)
            shift[i] = step
            curvature[i] = (negative(mode + shift)[1][i] - negative(mode - shift)[1][i]) / (2 * step)
    usable = np.isfinite(curvature) & (curvature > 0)
    variances = np.where(usable, 1.0 / np.where(usable, curvature, 1.0), 1.0)
    if not found.success or np.any(variances < 1e-12) or np.any(variances > 1e6):
        # a mode at a funnel's neck: a centred hierarchy's density is unbounded as its scale goes to 0, and where the
        # groups say little L-BFGS runs there (the radon model at 125 records a county, eps = 1: eight variances
        # below 1e-12, one above 1e6, and chains started from it ran its scale to 1e124); PyMC's own start instead
        return None, np.ones_like(start)
    return mode, variances


def _chain_starts(logp_dlogp: Any, mode: np.ndarray, variances: np.ndarray, seeds: list[int]) -> list[np.ndarray]:
    """Each chain's start: the mode moved by a Normal draw of ``variances`` (the mode where that is not finite)."""
    starts = []
    for seed in seeds:
        moved = mode + np.sqrt(variances) * np.random.default_rng(seed).standard_normal(mode.size)
        starts.append(moved if np.isfinite(logp_dlogp(moved)[0]) else mode)
    return starts


def _constrained(model: Any, starts: list[np.ndarray], point: Mapping[str, Any]) -> list[dict[str, np.ndarray]]:
    """The chains' starts as ``initvals``: each free variable's value on its own (constrained) scale; ``point`` gives
    the unconstrained values' shapes, in the order of ``model.value_vars`` (that of the raveled vector)."""
    import pytensor

    values = model.value_vars
    to_constrained = pytensor.function(values, model.replace_rvs_by_values(model.free_RVs), mode="FAST_COMPILE",
                                       on_unused_input="ignore")
    shapes = [np.shape(point[v.name]) for v in values]
    bounds = np.cumsum([0] + [int(np.prod(shape)) for shape in shapes])
    return [{rv.name: np.asarray(c) for rv, c in zip(model.free_RVs, to_constrained(*[
        x[a:b].reshape(shape).astype(v.dtype) for a, b, shape, v in zip(bounds[:-1], bounds[1:], shapes, values)]))}
        for x in starts]
