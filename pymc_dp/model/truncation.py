"""``truncate``: a copy of a model whose parameters are confined to declared ranges.

A tempered posterior (one posterior sample, OPS) is private only if one record can
move the log-likelihood by a bounded amount, and for most likelihoods that needs
the parameters kept away from where the log-likelihood blows up: a Bernoulli p away
from 0 and 1, a Poisson rate away from 0 ([FGWC16] eq. 15). :func:`truncate` returns
a new model in which

* a scalar (or elementwise) continuous variable is replaced by ``pm.Truncated`` of
  its own distribution on ``[lower, upper]`` (the prior renormalised to the interval,
  also when its parameters are themselves random);
* a Dirichlet variable given a floor a₀ gets every coordinate ≥ a₀: the same
  Dirichlet density, restricted to ``{θ : θ_k ≥ a₀}`` by the value transform
  :class:`SimplexFloor` (the simplex transform composed with the affine map
  ``θ = a₀ + (1 − K a₀) φ``), so every sampler stays inside the region. Its
  concentration must be constant: the restricted density's normalising constant
  would otherwise change the prior of the concentration.

The user's model is never modified.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from .._compat import model_var, model_var_parts, fgraph_of_model, model_of_fgraph
from ..accounting.validation import check_finite_number
from ._graph import only_constants

__all__ = ["truncate", "SimplexFloor"]


def _simplex_floor_class() -> type:
    from pymc.distributions.transforms import Transform, simplex
    import pytensor.tensor as pt

    class _SimplexFloor(Transform):
        name = "simplex_floor"

        def __init__(self, floor: float) -> None:
            self.floor = float(floor)

        def _scale(self, k: Any) -> Any:
            return 1.0 - k * self.floor

        def forward(self, value: Any, *inputs: Any) -> Any:
            # Exact inverse of backward inside the region. Outside it (only PyMC's initial
            # point, the Dirichlet's mean, can be there) the point is pulled into the
            # region's interior, so that sampling starts from a valid value.
            value = pt.as_tensor(value)
            k = pt.cast(value.shape[-1], "float64")
            phi = pt.maximum((value - self.floor) / self._scale(k), 1e-3 / k)
            return simplex.forward(phi / pt.sum(phi, axis=-1, keepdims=True), *inputs)

        def backward(self, value: Any, *inputs: Any) -> Any:
            k = pt.cast(pt.as_tensor(value).shape[-1], "float64") + 1.0
            return self.floor + self._scale(k) * simplex.backward(value, *inputs)

        def log_jac_det(self, value: Any, *inputs: Any) -> Any:
            k = pt.cast(pt.as_tensor(value).shape[-1], "float64") + 1.0
            return simplex.log_jac_det(value, *inputs) + (k - 1.0) * pt.log(self._scale(k))

        def __repr__(self) -> str:
            return f"SimplexFloor(floor={self.floor!r})"

    return _SimplexFloor


_CLASS: type | None = None


def SimplexFloor(floor: float) -> Any:  # noqa: N802 - a class factory (PyMC imported lazily)
    """The value transform of a simplex vector with every coordinate ≥ ``floor``.

    ``backward(y) = floor + (1 − K·floor) · simplex.backward(y)``: it maps ℝ^{K−1}
    onto ``{θ : Σθ = 1, θ_k ≥ floor}``, with the log-Jacobian of the simplex transform
    plus ``(K − 1) log(1 − K·floor)``. Instances are ``pymc`` transforms and carry
    ``floor`` (read by :func:`pymc_dp.loglik_sensitivity`).
    """
    global _CLASS
    if _CLASS is None:
        _CLASS = _simplex_floor_class()
    return _CLASS(floor)


def is_simplex_floor(transform: Any) -> bool:
    """Whether ``transform`` is a :func:`SimplexFloor` transform."""
    return _CLASS is not None and isinstance(transform, _CLASS)


def _number(value: Any, what: str) -> float:
    return check_finite_number(value, what)


def _interval(spec: Any, name: str) -> tuple[float | None, float | None]:
    try:
        lower, upper = spec
    except (TypeError, ValueError):
        raise ValueError(
            f"truncation of {name!r} must be a (lower, upper) pair (None for an open end), e.g. {{'{name}': (0.05, 0.95)}}; "
            f"got {spec!r}."
        ) from None
    lower = None if lower is None else _number(lower, f"the lower truncation of {name!r}")
    upper = None if upper is None else _number(upper, f"the upper truncation of {name!r}")
    if lower is None and upper is None:
        raise ValueError(f"truncation of {name!r}: give at least one of lower and upper.")
    if lower is not None and upper is not None and lower >= upper:
        raise ValueError(f"truncation of {name!r} needs lower < upper, got ({lower:g}, {upper:g}).")
    return lower, upper


def _floor(spec: Any, name: str, k: int) -> float:
    if isinstance(spec, tuple) and len(spec) == 2 and spec[1] is None:
        spec = spec[0]
    floor = _number(spec, f"the floor of the Dirichlet variable {name!r}")
    if not 0.0 < floor < 1.0 / k:
        raise ValueError(
            f"the floor of the Dirichlet variable {name!r} must lie in (0, 1/K) = (0, {1.0 / k:.6g}) for K = {k} "
            f"categories, got {floor:g}."
        )
    return floor


def truncate(model: Any = None, truncation: Mapping[str, Any] | None = None) -> Any:
    """A new model in which the named free variables are truncated.

    Parameters
    ----------
    model
        The ``pm.Model`` (default: the enclosing ``with`` block's). Not modified.
    truncation
        ``{name: (lower, upper)}`` for continuous scalar or elementwise variables (either
        end may be ``None``); ``{name: a0}`` for a Dirichlet variable: every
        coordinate ≥ a0, with 0 < a0 < 1/K. E.g. ``{"p": (0.05, 0.95)}``,
        ``{"theta": 0.01}``.

    Returns
    -------
    pymc.Model
        The truncated copy: same variable names, the truncated variables with
        ``pm.Truncated`` priors (renormalised) or the :func:`SimplexFloor` transform.

    Raises
    ------
    ValueError
        For an unknown or observed name, a discrete variable, a bad interval or
        floor, or a Dirichlet whose concentration is not constant.
    """
    import pymc as pm
    from pymc.model.fgraph import ModelFreeRV

    model = pm.modelcontext(model)
    if not isinstance(truncation, Mapping) or not truncation:
        raise ValueError("truncation must be a non-empty dict, e.g. {'p': (0.05, 0.95)} or {'theta': 0.01}.")
    free = {rv.name: rv for rv in model.free_RVs}
    observed = {rv.name for rv in model.observed_RVs}
    for name in truncation:
        if name in observed:
            raise ValueError(f"{name!r} is an observed variable; truncate the parameters, not the data.")
        if name not in free:
            raise ValueError(f"{name!r} is not a free variable of the model (free variables: {sorted(free)}).")
        if free[name].type.dtype.startswith(("int", "uint", "bool")):
            raise ValueError(f"{name!r} is discrete; truncate continuous parameters only.")
    try:
        fg, initvals = fgraph_of_model(model)
    except NotImplementedError as err:  # e.g. custom initial values
        raise ValueError(f"this model cannot be copied for truncation ({err}).") from None

    nodes = {n.outputs[0].name: n for n in fg.apply_nodes if isinstance(n.op, ModelFreeRV)}
    for name, spec in truncation.items():
        node = nodes[name]
        parts = model_var_parts(node)
        rv, value, dims = parts.var, parts.value, parts.dims
        if rv.owner.op.name == "dirichlet":
            k = rv.type.shape[-1]
            if k is None:
                raise ValueError(f"the Dirichlet variable {name!r} needs a static number of categories to be truncated.")
            floor = _floor(spec, name, int(k))
            concentration = rv.owner.op.dist_params(rv.owner)[0]
            if not only_constants(concentration):
                raise ValueError(
                    f"the Dirichlet variable {name!r} has a random concentration; truncating it would change that "
                    "concentration's prior (the restricted density's normalising constant depends on it). Give it "
                    "a constant concentration."
                )
            transform = SimplexFloor(floor)
            new_value = value.type(name=f"{name}_simplex_floor__")
            new = model_var("free", rv, name, value=new_value, transform=transform, dims=dims)
        else:
            if rv.type.ndim and rv.owner.op.ndim_supp:
                raise ValueError(
                    f"{name!r} is a multivariate {rv.owner.op.name!r} variable; only scalar/elementwise variables "
                    "and Dirichlet vectors can be truncated."
                )
            lower, upper = _interval(spec, name)
            try:
                static = rv.type.shape
                shape = tuple(int(n) for n in static) if None not in static else tuple(rv.shape)
                truncated = pm.Truncated.dist(rv, lower=lower, upper=upper, shape=shape or None)
            except (NotImplementedError, ValueError, TypeError) as err:
                raise ValueError(f"cannot truncate {name!r} ({rv.owner.op.name}): {err}") from None
            from pymc.distributions.transforms import _default_transform

            transform = _default_transform(truncated.owner.op, truncated)
            new_value = truncated.type(name=f"{name}_interval__")
            new = model_var("free", truncated, name, value=new_value, transform=transform, dims=dims)
        fg.replace(node.outputs[0], new, import_missing=True)
    return model_of_fgraph(fg, initvals)

