"""Recognising a linear regression in a PyMC model, for the Laplace route.

``pm.Normal("y", mu=intercept + X @ beta, sigma=sigma, observed=y)`` — with ``X`` a
NumPy array or ``pm.Data`` of one row per record, ``beta`` a coefficient vector (or
``mu = a + b * x`` with one covariate), an optional scalar intercept and a ``sigma``
shared by all records — is the ``linear_regression`` family
(:class:`pymc_dp.families.linear_regression.LinearRegression`): its records enter only
through the upper triangles of XᵀX, Xᵀy and yᵀy. :func:`linear_regression_of` reads
the design and the coefficients off the graph, so the Laplace route privatises those
statistics without a rewrite (an intercept is a column of ones, bounds (1, 1), which
adds no sensitivity).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["LinearPredictor", "linear_regression_of", "logistic_regression_of"]

_PASS = ("ViewOp", "DeterministicWrapper", "OutputGuard", "SpecifyShape", "ModelNamed", "ModelDeterministic")


@dataclass
class LinearPredictor:
    """``mu = design @ coefficients``: the records' design (N × d, an intercept column last) and the coefficients."""

    design: np.ndarray
    coefficients: Any
    sigma: Any
    has_intercept: bool
    covariates: int


def _strip(var: Any) -> Any:
    while var.owner is not None and type(var.owner.op).__name__ in _PASS:
        var = var.owner.inputs[0]
    return var


def _data(var: Any, records: int) -> np.ndarray | None:
    """The values of a data leaf with one row per record (NumPy constant or pm.Data), else None."""
    from pytensor.compile.sharedvalue import SharedVariable
    from pytensor.graph.basic import Constant

    var = _strip(var)
    if isinstance(var, Constant):
        value = np.asarray(var.data)
    elif isinstance(var, SharedVariable) and var.owner is None and hasattr(var, "get_value"):
        value = np.asarray(var.get_value(borrow=True))
    else:
        return None
    if value.ndim not in (1, 2) or value.shape[0] != records or value.dtype.kind not in "biuf":
        return None
    return value.astype(float).reshape(records, -1)


def _undim(var: Any) -> Any:
    """``var`` without a DimShuffle that only adds or drops broadcastable axes."""
    from pytensor.tensor.elemwise import DimShuffle

    while var.owner is not None and isinstance(var.owner.op, DimShuffle):
        var = var.owner.inputs[0]
    return var


def _model_scalar(var: Any, context: tuple[list, list]) -> Any | None:
    """``var`` if it is a scalar function of the model's parameters only (no data), else None.

    ``context`` is ``(blockers, public)``: the model's free variables and its dims' lengths.
    """
    from ._graph import data_leaves

    base = _undim(_strip(var))
    if base.type.ndim != 0:
        return None
    if data_leaves([base], blockers=context[0], record_counts=[2], public=context[1]):
        return None
    return base


def _product(var: Any, context: tuple[list, list], records: int) -> tuple[np.ndarray, Any] | None:
    """``(X, beta)`` for ``X @ beta`` (Dot/Matmul, possibly wrapped) or ``b * x`` (one covariate)."""
    import pytensor.tensor as pt

    var = _strip(var)
    owner = var.owner
    if owner is None:
        return None
    kind = type(owner.op).__name__
    if kind in ("Squeeze", "DimShuffle"):
        return _product(owner.inputs[0], context, records)
    if kind in ("Dot", "Matmul") or (kind == "Blockwise" and type(owner.op.core_op).__name__ in ("Dot", "Matmul")):
        X = _data(owner.inputs[0], records)
        beta = _undim(_strip(owner.inputs[1]))
        if X is None or beta.type.ndim != 1 or beta.type.shape[0] not in (None, X.shape[1]):
            return None
        if _model_scalar(beta[0], context) is None:
            return None
        return X, beta
    scalar = getattr(owner.op, "scalar_op", None)
    if type(scalar).__name__ == "Mul" and len(owner.inputs) == 2:
        for a, b in (owner.inputs, owner.inputs[::-1]):
            x = _data(a, records)
            coef = _model_scalar(b, context)
            if x is not None and x.shape[1] == 1 and coef is not None:
                return x, pt.stack([coef])
    return None


def _linear_predictor(mu: Any, context: tuple[list, list], records: int) -> tuple[np.ndarray, Any, bool] | None:
    """``(design, coefficients, has_intercept)`` of ``mu = [intercept +] X @ beta`` (or ``a + b * x``), else None."""
    import pytensor.tensor as pt

    mu = _strip(mu)
    found = _product(mu, context, records)
    intercept = None
    if found is None and mu.owner is not None and type(getattr(mu.owner.op, "scalar_op", None)).__name__ == "Add":
        if len(mu.owner.inputs) != 2:
            return None
        for a, b in (mu.owner.inputs, mu.owner.inputs[::-1]):
            found, intercept = _product(b, context, records), _model_scalar(a, context)
            if found is not None and intercept is not None:
                break
        else:
            return None
    if found is None:
        return None
    X, beta = found
    coefficients = pt.cast(beta, "float64")
    if intercept is not None:
        X = np.column_stack([X, np.ones(records)])
        coefficients = pt.concatenate([coefficients, pt.cast(intercept, "float64")[None]])
    return X, coefficients, intercept is not None


def linear_regression_of(rv: Any, records: int, blockers: list, public: list) -> LinearPredictor | None:
    """The linear predictor of a Normal observed variable ``rv``, or None if its mean is not one.

    Recognised: ``mu = X @ beta``, ``mu = intercept + X @ beta`` (either order), and
    ``mu = a + b * x``, with ``sigma`` a scalar function of the parameters. ``blockers``
    are the model's free variables (where the walk for data stops) and ``public`` its
    dims' lengths.
    """
    context = (list(blockers), list(public))
    if getattr(rv.owner.op, "name", None) != "normal" or getattr(rv.owner.op, "pymc_dp_loglik_clip", None):
        return None
    _, _, mu, sigma = rv.owner.inputs[:4]
    if _model_scalar(sigma, context) is None:
        return None
    found = _linear_predictor(mu, context, records)
    if found is None:
        return None
    X, coefficients, intercept = found
    return LinearPredictor(X, coefficients, _model_scalar(sigma, context), intercept, X.shape[1] - intercept)


def logistic_regression_of(rv: Any, records: int, blockers: list, public: list) -> LinearPredictor | None:
    """The linear predictor of a Bernoulli observed variable with ``logit_p = [intercept +] X @ beta``, or None.

    ``pm.Bernoulli("y", logit_p=eta, ...)`` and ``pm.Bernoulli("y", p=pm.math.invlogit(eta), ...)``
    are the same graph (``p = sigmoid(eta)``); ``eta`` is recognised as for
    :func:`linear_regression_of`. ``sigma`` of the result is None.
    """
    context = (list(blockers), list(public))
    if getattr(rv.owner.op, "name", None) != "bernoulli" or getattr(rv.owner.op, "pymc_dp_loglik_clip", None):
        return None
    p = _strip(rv.owner.inputs[-1])
    if p.owner is None or type(getattr(p.owner.op, "scalar_op", None)).__name__ != "Sigmoid":
        return None
    found = _linear_predictor(p.owner.inputs[0], context, records)
    if found is None:
        return None
    X, coefficients, intercept = found
    return LinearPredictor(X, coefficients, None, intercept, X.shape[1] - intercept)
