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
from typing import Any, Callable

import numpy as np
from .._evaluate import evaluate

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
    #: Per covariate column (the intercept's excluded): ``(coefficient name, its dim, index)``, from the
    #: model's own names; ``(None, None, j)`` where the coefficient has no name.
    columns: tuple[tuple[str | None, str | None, int], ...] = ()
    #: the covariates' coefficients alone (``coefficients`` without the intercept's)
    slopes: Any = None


def _strip(var: Any) -> Any:
    while var.owner is not None and type(var.owner.op).__name__ in _PASS:
        var = var.owner.inputs[0]
    return var


def leaf_value(var: Any) -> np.ndarray | None:
    """The values of a data leaf (a NumPy constant or ``pm.Data``, through pass-through wrappers), else None."""
    from pytensor.compile.sharedvalue import SharedVariable
    from pytensor.graph.basic import Constant

    var = _strip(var)
    if isinstance(var, Constant):
        return np.asarray(var.data)
    if isinstance(var, SharedVariable) and var.owner is None and hasattr(var, "get_value"):
        return np.asarray(var.get_value(borrow=True))
    return None


def same_data(a: Any, b: Any) -> bool:
    """Whether two data leaves hold one array: the same variable, or arrays at the same place in memory.

    Decided by where the values live, never by the values themselves: two arrays of records that happen to be
    equal on one data set and not on its neighbour would otherwise change a decision with one record. A NumPy
    array used twice in a model becomes two constants that share its memory, and so is one array here; a copy
    is another array.
    """
    a, b = _strip(a), _strip(b)
    if a is b:
        return True
    x, y = leaf_value(a), leaf_value(b)
    if x is None or y is None:
        return False
    return (x.shape == y.shape and x.strides == y.strides and x.dtype == y.dtype
            and x.__array_interface__["data"][0] == y.__array_interface__["data"][0])


def _data(var: Any, records: int) -> np.ndarray | None:
    """The values of a data leaf with one row per record (NumPy constant or pm.Data), else None."""
    value = leaf_value(var)
    if value is None or value.ndim not in (1, 2) or value.shape[0] != records or value.dtype.kind not in "biuf":
        return None
    return value.astype(float).reshape(records, value.shape[1] if value.ndim == 2 else 1)


def _undim(var: Any) -> Any:
    """``var`` without a DimShuffle that only adds or drops broadcastable axes."""
    from pytensor.tensor.elemwise import DimShuffle

    while var.owner is not None and isinstance(var.owner.op, DimShuffle):
        var = var.owner.inputs[0]
    return var


def _model_scalar(var: Any, context: tuple[list, list], records: int) -> Any | None:
    """``var`` if it is a scalar function of the model's parameters only (no data), else None.

    ``context`` is ``(blockers, public)``: the model's free variables and its dims' lengths.
    Data are judged as everywhere (:func:`~pymc_dp.model._graph.data_leaves` with the
    ``records``): a group-level array (``g0 + g1 * u + sigma_a * z`` with ``u`` one value a
    group, fewer than the records) is public like the groups, read by a group's view.
    """
    from ._graph import data_leaves

    base = _undim(_strip(var))
    if base.type.ndim != 0:
        return None
    if data_leaves([base], blockers=context[0], record_counts=[records], public=context[1]):
        return None
    return base


def _scalar_op(var: Any) -> str | None:
    owner = var.owner
    return type(getattr(owner.op, "scalar_op", None)).__name__ if owner is not None else None


def _columns(var: Any, records: int) -> np.ndarray | None:
    """A data leaf, or some of its columns (``X[:, j]``, ``X[:, a:b]``): row i stays record i's."""
    from pytensor.graph.basic import Constant
    from pytensor.tensor.subtensor import Subtensor

    var = _strip(var)
    owner = var.owner
    if owner is not None and isinstance(owner.op, Subtensor) and owner.op.idx_list[:1] == (slice(None),):
        if _data(owner.inputs[0], records) is not None and all(isinstance(i, Constant) for i in owner.inputs[1:]):
            if not var.type.ndim:
                return None
            import pytensor.tensor as pt
            from pytensor.graph.replace import clone_replace

            leaf = pt.constant(leaf_value(owner.inputs[0]))  # the container's values, whatever wraps it
            value = evaluate(clone_replace([var], replace={owner.inputs[0]: leaf}, rebuild_strict=False)[0])
            return value.astype(float).reshape(records, -1) if value.shape[:1] == (records,) else None
    return _data(var, records)


def _product(var: Any, context: tuple[list, list], records: int) -> tuple[np.ndarray, Any] | None:
    """``(X, beta)`` for ``X @ beta`` (Dot/Matmul, possibly wrapped), ``b * x`` (one covariate) or ``s * (X @ beta)``."""
    import pytensor.tensor as pt

    var = _strip(var)
    owner = var.owner
    if owner is None:
        return None
    kind = type(owner.op).__name__
    if kind in ("Squeeze", "DimShuffle"):
        return _product(owner.inputs[0], context, records)
    if kind in ("Dot", "Matmul") or (kind == "Blockwise" and type(owner.op.core_op).__name__ in ("Dot", "Matmul")):
        X = _columns(owner.inputs[0], records)
        beta = _undim(_strip(owner.inputs[1]))
        if X is None or beta.type.ndim != 1 or beta.type.shape[0] not in (None, X.shape[1]):
            return None
        if _model_scalar(beta[0], context, records) is None:
            return None
        return X, beta
    if _scalar_op(var) == "Mul" and len(owner.inputs) == 2:
        for a, b in (owner.inputs, owner.inputs[::-1]):
            x = _columns(a, records)
            coef = _model_scalar(b, context, records)
            if x is not None and x.shape[1] == 1 and coef is not None:
                return x, pt.stack([coef])
            inner = _product(a, context, records) if coef is not None else None
            if inner is not None:  # s * (X @ beta) = X @ (s * beta)
                return inner[0], coef * inner[1]
    return None


def _terms(var: Any, sign: float = 1.0) -> list[tuple[float, Any]]:
    """The signed terms of a sum: ``a + b - c`` is ``[(1, a), (1, b), (-1, c)]``."""
    var = _strip(var)
    op = _scalar_op(var)
    if op == "Add":
        return [t for i in var.owner.inputs for t in _terms(i, sign)]
    if op == "Sub":
        first, second = var.owner.inputs
        return _terms(first, sign) + _terms(second, -sign)
    if op == "Neg":
        return _terms(var.owner.inputs[0], -sign)
    return [(sign, var)]


def _describe(term: Any, records: int) -> str:
    """What a term the recogniser cannot read looks like, in the model's own words (no data values)."""
    from ._graph import ancestors

    from ._graph import n_is_private

    offset = leaf_value(_strip(term)) is not None and _strip(term).type.ndim >= 1 if n_is_private() \
        else _columns(term, records) is not None  # N private: never ask whether an array is N long
    if offset:
        return ("a per-record offset (data added without a coefficient: with an identity link subtract it from the "
                "outcome before the model; otherwise, such as log(exposure) inside exp(...), give it a coefficient, "
                "b * x, whose prior may hold it near 1)")

    from pytensor.compile.sharedvalue import SharedVariable
    from pytensor.graph.basic import Constant

    from ._graph import _MIN_DERIVED

    scalar = _undim(_strip(term)).type.ndim == 0  # a group's view reads a[g]: a scalar, where a record's term is not
    if n_is_private() and scalar and any(isinstance(v, Constant) and np.size(v.data) >= _MIN_DERIVED
                                         for v in ancestors([term])):
        return ("a term reading a NumPy array of 10 or more values (such as g0 + g1 * u in a group's intercept: with "
                "neighbouring='add_remove' the number of records is private, so no array's length is compared with it "
                "and an array that long is taken for records; declare group-level values as pm.Data(name, values, "
                "dims=<the group dim>), read as public and named in the ledger's assumptions)")
    looked_up = [v for v in ancestors([term]) if v.owner is not None and type(v.owner.op).__name__ == "Subtensor"
                 and v.type.ndim == 0 and isinstance(_strip(v.owner.inputs[0]), SharedVariable)
                 and leaf_value(v.owner.inputs[0]) is not None and v.owner.inputs[0].type.ndim == 1]
    if looked_up:  # a group's view of c * u[idx], u group-level pm.Data
        name = getattr(_strip(looked_up[0].owner.inputs[0]), "name", None) or "u"
        return (f"a group-level data term such as c * {name}[idx] (not read yet from pm.Data: write it with the "
                f"NumPy array, c * {name}_values[idx], which makes it a per-record covariate; its range then goes "
                f"with the other covariates', one pair per covariate: bounds={{'y': {{'x': (lows, highs)}}}})")
    indexed = [v for v in ancestors([term]) if v.owner is not None
               and type(v.owner.op).__name__.startswith("AdvancedSubtensor")]
    if indexed:
        return ("a group-indexed term (a varying intercept a[idx] and a varying slope b[idx] * x, x data with one "
                "row per record, are read by the measurements route's newton engine; other products with an indexed "
                "vector, such as a[idx] * b * x or b[idx] * u[idx], are not)")
    name = getattr(term, "name", None)
    if name:
        return f"the term {name!r}"
    from pytensor.tensor.random.op import RandomVariable

    if term.owner is not None and isinstance(term.owner.op, RandomVariable):  # pm.Censored, pm.Truncated, mixtures
        kind = type(term.owner.op).__name__.removesuffix("RV")
        return (f"a {kind} distribution inside the likelihood (pm.Censored, pm.Truncated and mixtures wrap one: they "
                "are not GLMs this route reads)")
    data = sorted({v.name for v in ancestors([term]) if isinstance(v, SharedVariable) and v.name})
    if data and term.owner is not None:  # e.g. covariates standardised with the records' own mean inside the model
        return (f"a term computed from the data {', '.join(map(repr, data))} ({type(term.owner.op).__name__}: an "
                "operation on the data other than X @ beta or b * x; compute it in NumPy before the model, with "
                "public constants where it would read the records, such as a declared centre and scale)")
    return f"a term built by {type(term.owner.op).__name__ if term.owner else 'a leaf'}"


def _linear_predictor(mu: Any, context: tuple[list, list], records: int,
                      why: list[str] | None = None, slopes: list | None = None,
                      other_term: Callable[[Any, int], tuple[np.ndarray, Any, tuple]] | None = None
                      ) -> tuple[np.ndarray, Any, bool] | None:
    """``(design, coefficients, has_intercept)`` of a sum of ``X @ beta``, ``b * x`` and scalar terms, else None.

    ``mu = a + X @ beta``, ``X1 @ b1 + X2 @ b2 - a``, ``a + b1 * x1 + b2 * x2``: the design is the
    terms' columns side by side (in the order of the sum), an intercept column of ones last when
    scalar terms (functions of the parameters only) are present; their sum is its coefficient.
    Where a term is none of these, its description is appended to ``why``; the covariates' coefficients
    (without the intercept's) to ``slopes``. ``other_term(term, column)``, where given, reads a term none of these
    is: ``(design, coefficients, columns)`` or None (the GLM reader's ``a[idx]``, its design starting at ``column``).
    """
    import pytensor.tensor as pt

    designs, coefficients, intercepts, columns = [], [], [], []
    for sign, term in _terms(mu):
        found = _product(term, context, records)
        if found is not None:
            designs.append(found[0])
            coefficients.append(sign * pt.cast(found[1], "float64"))
            name, dim = _coefficient_name(found[1])
            columns += [(name, dim, j) for j in range(found[0].shape[1])]
            continue
        other = other_term(term, len(columns)) if other_term is not None else None
        if other is not None:
            designs.append(other[0])
            coefficients.append(sign * pt.cast(other[1], "float64"))
            columns += list(other[2])
            continue
        scalar = _model_scalar(term, context, records)
        if scalar is None:
            if why is not None:
                why.append(_describe(term, records) + " is neither X @ beta, b * x nor a scalar of the parameters")
            return None
        intercepts.append(sign * pt.cast(scalar, "float64"))
    if not designs:
        if why is not None:
            why.append("no term multiplies data with one row per record by coefficients (X @ beta or b * x)")
        return None
    X, beta = np.column_stack(designs), pt.concatenate(coefficients)
    if slopes is not None:
        slopes.append(beta)
    if intercepts:
        X = np.column_stack([X, np.ones(records)])
        beta = pt.concatenate([beta, pt.add(*intercepts)[None] if len(intercepts) > 1 else intercepts[0][None]])
    return X, beta, bool(intercepts), tuple(columns)


def _coefficient_name(coefficients: Any) -> tuple[str | None, str | None]:
    """The model's name of a term's coefficient vector and its one dim (``b`` of ``b * x``: its name, no dim)."""
    from pymc.model.fgraph import ModelVar

    from .._compat import model_var_parts

    var = _undim(_strip(coefficients))
    if var.owner is not None and type(var.owner.op).__name__ == "MakeVector" and len(var.owner.inputs) == 1:
        var = _undim(_strip(var.owner.inputs[0]))
    if var.owner is not None and isinstance(var.owner.op, ModelVar):
        parts = model_var_parts(var.owner)
        return parts.name, (parts.dims[0] if len(parts.dims) == 1 and var.type.ndim == 1 else None)
    return getattr(var, "name", None), None


def linear_regression_of(rv: Any, records: int, blockers: list, public: list,
                         why: list[str] | None = None) -> LinearPredictor | None:
    """The linear predictor of a Normal observed variable ``rv``, or None if its mean is not one.

    Recognised: ``mu = X @ beta``, ``mu = intercept + X @ beta`` (either order), and
    ``mu = a + b * x``, with ``sigma`` a scalar function of the parameters. ``blockers``
    are the model's free variables (where the walk for data stops) and ``public`` its
    dims' lengths. Where a Normal's mean is not one, why is appended to ``why``.
    """
    context = (list(blockers), list(public))
    if getattr(rv.owner.op, "name", None) != "normal" or getattr(rv.owner.op, "pymc_dp_loglik_clip", None):
        return None
    _, _, mu, sigma = rv.owner.inputs[:4]
    if _model_scalar(sigma, context, records) is None:
        return None
    slopes: list[Any] = []
    found = _linear_predictor(mu, context, records, why, slopes=slopes)
    if found is None:
        return None
    X, coefficients, intercept, columns = found
    return LinearPredictor(X, coefficients, _model_scalar(sigma, context, records), intercept,
                           X.shape[1] - intercept, columns, slopes=slopes[0])


def _is_one(var: Any) -> bool:
    from pytensor.graph.basic import Constant

    var = _undim(_strip(var))
    return isinstance(var, Constant) and np.all(np.asarray(var.data) == 1)


def _logit_of(p: Any) -> Any | None:
    """``eta`` where ``p`` is σ(eta): ``sigmoid``/``invlogit``, ``1 / (1 + exp(-eta))`` or ``exp(eta) / (1 + exp(eta))``."""
    import pytensor.tensor as pt

    p = _strip(p)
    op = _scalar_op(p)
    if op == "Sigmoid":
        return p.owner.inputs[0]
    if op != "TrueDiv":
        return None
    numerator, denominator = (_strip(v) for v in p.owner.inputs)
    if _scalar_op(denominator) != "Add" or len(denominator.owner.inputs) != 2:
        return None
    for one, e in (denominator.owner.inputs, denominator.owner.inputs[::-1]):
        e = _strip(e)
        if _is_one(one) and _scalar_op(e) == "Exp":
            if _is_one(numerator):  # 1 / (1 + exp(u)) = σ(-u)
                return pt.neg(e.owner.inputs[0])
            if _strip(numerator) is e or (_scalar_op(numerator) == "Exp" and numerator.owner.inputs[0] is e.owner.inputs[0]):
                return e.owner.inputs[0]  # exp(u) / (1 + exp(u)) = σ(u)
    return None


def logistic_regression_of(rv: Any, records: int, blockers: list, public: list,
                           why: list[str] | None = None) -> LinearPredictor | None:
    """The linear predictor of a Bernoulli observed variable with ``logit_p = [intercept +] X @ beta``, or None.

    ``pm.Bernoulli("y", logit_p=eta, ...)`` and ``pm.Bernoulli("y", p=pm.math.invlogit(eta), ...)``
    are the same graph (``p = sigmoid(eta)``), as are ``p = 1 / (1 + exp(-eta))`` and
    ``p = exp(eta) / (1 + exp(eta))``; ``eta`` is a sum of terms as :func:`_linear_predictor`
    reads them. ``sigma`` of the result is None. Where it is not recognised, the reason is
    appended to ``why``.
    """
    context = (list(blockers), list(public))
    if getattr(rv.owner.op, "name", None) != "bernoulli" or getattr(rv.owner.op, "pymc_dp_loglik_clip", None):
        if why is not None:
            why.append("it is not a pm.Bernoulli (without a log-likelihood clip)")
        return None
    eta = _logit_of(rv.owner.inputs[-1])
    if eta is None:
        if why is not None:
            why.append("its probability is not the logistic function of a linear predictor (write logit_p=eta or "
                       "p=pm.math.invlogit(eta))")
        return None
    found = _linear_predictor(eta, context, records, why)
    if found is None:
        return None
    X, coefficients, intercept, columns = found
    return LinearPredictor(X, coefficients, None, intercept, X.shape[1] - intercept, columns)
