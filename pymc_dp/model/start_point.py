"""Where a record-free model's chains start: near the estimate its releases point to (post-processing only).

A record-free model whose likelihood is an errors-in-variables term (the measurements route's
one-step likelihood, the information's noise acting on the distance from the measured point)
decays only slowly far from its estimate: there the released information might have been
mostly noise, so a far parameter explains the released score almost as well as a near one.
The posterior mass out there is tiny, but a chain started there (PyMC's default start is the
prior's centre) can stay for the whole run on the nearly flat slope: measured on a Bernoulli
hierarchy with twenty groups at ε = 1, nutpie's two chains disagreed on a group far from the
prior's centre (R-hat 1.6–1.8) in three releases of four, and agreed (R-hat 1.01–1.07) once both
started, unjittered, near the estimate.

:func:`start_near` finds that start from released numbers alone: the point of the model's
unconstrained space that brings a named vector of parameters closest to an estimate (in the
estimate's own precision), a unit-normal ridge around the model's default start choosing among
parametrisations that reach it equally well (a non-centred hierarchy's ``mu + sigma * z``: mostly
through ``z``, ``sigma`` staying near its default) and keeping the search away from a funnel's
neck. The caller turns the sampler's start jitter off (:func:`pymc_dp.routes.laplace.started_at`):
on a non-centred hierarchy it would move a group by ±``sigma``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["start_near"]

#: The weight of the unit-normal ridge on the unconstrained values around the default start. No prior term: with the
#: start jitter off, a start at the prior's mode of a centred hierarchy sits in its funnel's neck (a small ``sigma``),
#: where PyMC's NUTS stalled (R-hat 2.8, 908 divergences in 600 draws, measured); the ridge keeps a hyperparameter
#: at the default start unless the estimate needs it moved.
RIDGE = 1.0


def _named(model: Any, name: str) -> Any | None:
    """The variable called ``name`` among the ancestors of the model's potentials (None if absent)."""
    from pytensor.graph.traversal import ancestors

    for var in ancestors(list(model.potentials)):
        if var.name == name:
            return var
    return None


def start_near(model: Any, name: str, estimate: np.ndarray, precision: np.ndarray,
               max_iterations: int = 500) -> dict[str, np.ndarray] | None:
    """Initial values (constrained, by free variable) placing the vector ``name`` near ``estimate``.

    Minimises ½ (φ(u) − φ̂)ᵀ P (φ(u) − φ̂) + ½ :data:`RIDGE` ‖u − u₀‖² over the model's
    unconstrained values u (u₀ the model's default initial point), φ the variable of the model's
    graph called ``name``, φ̂ ``estimate`` and P ``precision``. Returns None (the sampler's default start) when the model
    has a discrete free variable, no variable of that name, or the search does not give a finite
    point: a start is a convenience, never a condition of sampling.
    """
    import pytensor
    import pytensor.tensor as pt
    from pymc.blocking import DictToArrayBijection
    from pytensor.graph.replace import graph_replace
    from scipy.optimize import minimize

    phi = _named(model, name)
    if phi is None or any(v.dtype.startswith(("int", "uint", "bool")) for v in model.value_vars):
        return None
    estimate = np.asarray(estimate, dtype=float)
    precision = (np.asarray(precision, dtype=float) + np.asarray(precision, dtype=float).T) / 2
    start = model.initial_point()
    start = {v.name: start[v.name] for v in model.value_vars}
    raveled = DictToArrayBijection.map(start)
    flat = pt.vector("flat", dtype="float64")
    values, at = {}, 0
    for v in model.value_vars:
        size = int(np.prod(start[v.name].shape, dtype=int))
        values[v] = pt.cast(flat[at:at + size].reshape(start[v.name].shape), v.dtype)
        at += size
    (phi_of_u,) = graph_replace(model.replace_rvs_by_values([phi]), values, strict=False)
    target, weight = pt.vector("estimate", dtype="float64"), pt.matrix("precision", dtype="float64")
    gap = phi_of_u - target
    ridge = flat - pt.constant(raveled.data.astype(float))
    objective = 0.5 * pt.dot(gap, pt.dot(weight, gap)) + 0.5 * RIDGE * pt.sum(ridge**2)
    free = model.replace_rvs_by_values(list(model.free_RVs))
    constrained = graph_replace(free, values, strict=False)
    with np.errstate(all="ignore"):
        try:
            # FAST_COMPILE: a small graph evaluated a few hundred times; compiling it to C would take seconds per
            # release (its constants differ every time), longer than the search itself
            fn = pytensor.function([flat, target, weight], [objective, pt.grad(objective, flat)],
                                   on_unused_input="ignore", mode="FAST_COMPILE")
            result = minimize(lambda x: tuple(np.asarray(o, dtype=float) for o in fn(x, estimate, precision)),
                              raveled.data.astype(float), jac=True, method="L-BFGS-B",
                              options={"maxiter": max_iterations})
            point = np.asarray(result.x, dtype=float)
            if not np.isfinite(result.fun) or not np.all(np.isfinite(point)):
                return None
            out = pytensor.function([flat], constrained, on_unused_input="ignore", mode="FAST_COMPILE")(point)
        except Exception:  # a graph this cannot differentiate or evaluate: the sampler's default start
            return None
    starts = {rv.name: np.asarray(value) for rv, value in zip(model.free_RVs, out)}
    return starts if all(np.all(np.isfinite(v)) for v in starts.values()) else None
