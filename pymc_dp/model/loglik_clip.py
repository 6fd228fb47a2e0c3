"""Clipping each record's log-likelihood, for any PyMC likelihood ([WM10] §2).

:func:`clip_loglik` returns a copy of a model in which every observed variable's
log-likelihood *terms* are clipped into ``[lower, upper]``. It works on the
distribution's own log-density (whatever PyMC can compute: ``pm.Normal``,
``pm.NormalMixture``, ``pm.Censored``, ``pm.CustomDist``, ``pm.AR``, ...): the
observed variable keeps its distribution, its name, its dims and its data; only the
log-density PyMC reads for it is clipped. (Technically, the variable's PyTensor op is
replaced by a subclass whose registered log-probability is the clipped one; drawing
from it, and every other PyMC dispatch, is inherited.)

**What a term is, and how many one record touches** (:func:`clip_terms`):

* a *record* is one row of the observed variable along its first axis (the docs'
  "one meaning of a record": that row together with the covariates, group index and
  per-record parameters aligned with it);
* for a univariate likelihood each element is a term, so a row of ``k`` elements is
  ``k`` terms; for a multivariate one (``pm.Multinomial``, ``pm.MvNormal``) each row is
  one term;
* a single time series (``pm.AR``, ``pm.GaussianRandomWalk`` observed as one vector)
  is clipped **step by step** — one term per time step's conditional density — and a
  record (one time step) enters ``p + 1`` of them for an AR(p) (its own step and, as a
  lag, the next ``p``), 2 for a random walk;
* any other likelihood whose one term holds every record (a single multivariate draw)
  is clipped as a whole: one term, touched by every record.

The sensitivity of a clipped variable is then ``terms × (upper − lower)`` under
replace-one neighbouring (:func:`pymc_dp.loglik_sensitivity`).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._compat import model_var, model_var_parts, fgraph_of_model, model_of_fgraph
from ..accounting.validation import check_finite_number
from .._evaluate import evaluate

__all__ = ["clip_loglik", "loglik_clip_of", "clip_terms", "ClipTerms", "loglik_terms_at_start"]

#: Attribute on the op of a clipped observed variable: its ``(lower, upper)``.
_CLIP_ATTR = "pymc_dp_loglik_clip"
_CLIPPED_CLASSES: dict[type, type] = {}


def loglik_clip_of(rv: Any) -> tuple[float, float] | None:
    """``(lower, upper)`` if ``rv``'s log-likelihood terms were clipped by :func:`clip_loglik`, else None."""
    owner = getattr(rv, "owner", None)
    return getattr(getattr(owner, "op", None), _CLIP_ATTR, None)


# --------------------------------------------------------------------------- per-step terms of time series


def _autoregressive_steps(op: Any, value: Any, inputs: Any) -> Any:
    """The per-step log-densities of an AR(p) series (PyMC's ``ar_logp`` without its sums)."""
    import pymc as pm
    import pytensor.tensor as pt

    rhos, sigma, init_dist = inputs[0], inputs[1], inputs[2]
    p = op.ar_order
    lags = [value[..., p - (i + 1): -(i + 1)] for i in range(p)]
    if op.constant_term:
        expectation = pt.add(rhos[..., 0, None], *(rhos[..., i + 1, None] * lags[i] for i in range(p)))
    else:
        expectation = pt.add(*(rhos[..., i, None] * lags[i] for i in range(p)))
    innovations = pm.logp(pm.Normal.dist(0, sigma[..., None]), value[..., p:] - expectation)
    initial = pm.logp(init_dist, value[..., :p])
    if init_dist.owner.op.ndim_supp != 0:
        initial = initial[..., None]
    return pt.concatenate([initial, innovations], axis=-1)


def _strip_last_sum(total: Any) -> Any | None:
    """``x`` if ``total`` is ``x.sum(axis=-1)``, else None."""
    owner = total.owner
    if owner is None or type(owner.op).__name__ != "Sum":
        return None
    inner = owner.inputs[0]
    axis = tuple(owner.op.axis) if owner.op.axis is not None else tuple(range(inner.type.ndim))
    return inner if axis == (inner.type.ndim - 1,) else None


def _time_series_kind(op: Any) -> str | None:
    from pymc.distributions.timeseries import AutoRegressiveRV, RandomWalkRV

    if isinstance(op, AutoRegressiveRV):
        return "ar"
    if isinstance(op, RandomWalkRV):
        return "random_walk"
    return None


def _fill_value(value: Any, per_step: bool) -> float:
    """What a NaN or infinite observed value is evaluated at inside its (then constant) term.

    The term itself is replaced by ``lower`` (:func:`_clipped_logprob`), so the density and its
    gradient do not depend on this value at all: the gradient of the term is 0 × the gradient of
    the log-density there, exactly 0 as long as the latter is finite. Hence an observed value of
    the variable (the first finite one), where the log-density is finite; 0 for a time series,
    whose value at one step also enters the next steps' terms as a lag (there it must be a
    public constant).
    """
    if per_step:
        return 0.0
    data = getattr(value, "data", None)
    if data is None and hasattr(value, "get_value"):
        data = value.get_value(borrow=True)
    finite = np.asarray(data, dtype=float).ravel() if data is not None else np.zeros(0)
    finite = finite[np.isfinite(finite)]
    return float(finite[0]) if finite.size else 0.0


def _malformed_terms(bad: Any, terms: Any) -> Any:
    """The per-term mask of terms holding a malformed value (``bad`` reduced over a multivariate term's axes)."""
    while bad.type.ndim > terms.type.ndim:
        bad = bad.any(axis=-1)
    return bad


def _clipped_logprob(base: Any) -> Any:
    def logprob(op: Any, values: Any, *inputs: Any, **kwargs: Any) -> Any:
        import pymc as pm
        import pytensor.tensor as pt

        lower, upper = getattr(op, _CLIP_ATTR)
        (value,) = values
        per_step = getattr(op, "pymc_dp_per_step", False)
        # A NaN or infinite observed value (a missing or malformed record) is never refused: its term is the
        # constant ``lower``, inside the clip, so the record's contribution is data-independent and the
        # sensitivity holds; it is evaluated at a finite stand-in so that no NaN reaches the gradient.
        bad = pt.or_(pt.isnan(value), pt.isinf(value)) if value.type.dtype.startswith("float") else None
        if bad is not None:
            value = pt.switch(bad, np.asarray(_fill_value(values[0], per_step), dtype=value.type.dtype), value)
            values = (value,)

        def masked(terms: Any) -> Any:
            return _clip(terms, lower, upper, bad)

        if getattr(op, "pymc_dp_inlined", False):  # Censored, CustomDist(dist=...): logp of the generating graph
            return masked(pm.logp(_inner_rv(op, inputs), value))
        if per_step:
            if _time_series_kind(op) == "ar":
                steps = _autoregressive_steps(op, value, inputs)
            else:
                steps = _strip_last_sum(base(op, values, *inputs, **kwargs))
            return masked(steps).sum(axis=-1)
        return masked(base(op, values, *inputs, **kwargs))

    return logprob


def _without_parameter_checks(terms: Any) -> Any:
    """``terms`` without PyMC's parameter checks: each is one ``all()`` over every record's parameters, so one
    record with an invalid covariate or per-record parameter would turn every term to -inf. Without them an
    invalid row makes only its own term NaN or infinite (then clipped, NaN to ``lower``).

    Only the nodes above a check are rebuilt; everything below (the random variables PyMC
    later replaces by their values) stays the same object.
    """
    from pymc.logprob.utils import CheckParameterValue

    memo: dict[Any, Any] = {}

    def rebuild(var: Any) -> Any:
        if var in memo:
            return memo[var]
        owner = var.owner
        if owner is None:
            out = var
        elif isinstance(owner.op, CheckParameterValue):
            out = rebuild(owner.inputs[0])
        else:
            inputs = [rebuild(i) for i in owner.inputs]
            if all(a is b for a, b in zip(inputs, owner.inputs)):
                out = var
            else:
                out = owner.clone_with_new_inputs(inputs, strict=False).outputs[owner.outputs.index(var)]
        memo[var] = out
        return out

    return rebuild(terms)


def _clip(terms: Any, lower: float, upper: float, malformed: Any = None) -> Any:
    """``terms`` clipped into ``[lower, upper]``, NaN to ``lower``; with ``malformed`` (a mask over the observed
    values), the terms holding a malformed value are ``lower`` too. The clip stays the top of the graph (the
    sensitivity proof checks it)."""
    import pytensor.tensor as pt

    terms = _without_parameter_checks(terms)
    terms = pt.switch(pt.isnan(terms), lower, terms)
    if malformed is not None:
        terms = pt.switch(_malformed_terms(malformed, terms), lower, terms)
    return pt.clip(terms, lower, upper)


def _inner_rv(op: Any, inputs: Any) -> Any:
    """The generating graph of a symbolic random variable PyMC inlines to derive its log-density."""
    if hasattr(getattr(op, "fgraph", None), "bind"):  # PyMC >= 6
        outputs = op.fgraph.bind(list(inputs))
    else:  # pragma: no cover - PyMC 5
        from pytensor.graph.replace import graph_replace

        outputs = graph_replace(op.inner_outputs, dict(zip(op.inner_inputs, inputs)), strict=False)
    return outputs[op.default_output]


def _rebuild_clipped(base_op: Any, lower: float, upper: float, per_step: bool) -> Any:
    return _clipped_op(base_op, lower, upper, per_step)


def _clipped_class(cls: type) -> type:
    """A subclass of the op class ``cls`` whose log-probability is clipped (made once per class)."""
    if cls in _CLIPPED_CLASSES:
        return _CLIPPED_CLASSES[cls]
    from pymc.logprob.abstract import _logprob

    base = _logprob.dispatch(cls)

    def key(self: Any) -> tuple:
        return (getattr(self, _CLIP_ATTR), getattr(self, "pymc_dp_per_step", False))

    # (pickling rebuilds the op from the plain one, which sets pymc_dp_inlined again)

    def __eq__(self: Any, other: Any) -> bool:  # noqa: N807
        return cls.__eq__(self, other) and type(other) is type(self) and key(self) == key(other)

    def __hash__(self: Any) -> int:  # noqa: N807
        return hash((cls.__hash__(self), key(self)))

    def __reduce__(self: Any) -> tuple:  # noqa: N807 - picklable by reference, for multiprocess sampling
        plain = copy.copy(self)
        plain.__class__ = cls
        for attr in (_CLIP_ATTR, "pymc_dp_per_step", "pymc_dp_inlined"):
            plain.__dict__.pop(attr, None)
        if getattr(self, "pymc_dp_inlined", False):
            plain.inline_logprob = True
        return (_rebuild_clipped, (plain, *key(self)[0], key(self)[1]))

    sub = type(
        f"LoglikClipped{cls.__name__}", (cls,),
        {"__eq__": __eq__, "__hash__": __hash__, "__reduce__": __reduce__, "__module__": __name__},
    )
    _logprob.register(sub)(_clipped_logprob(base))
    _CLIPPED_CLASSES[cls] = sub
    return sub


def _clipped_op(op: Any, lower: float, upper: float, per_step: bool) -> Any:
    new = copy.copy(op)
    new.__class__ = _clipped_class(type(op))
    setattr(new, _CLIP_ATTR, (float(lower), float(upper)))
    new.pymc_dp_per_step = bool(per_step)
    if getattr(op, "inline_logprob", False):
        # PyMC would inline the generating graph and derive its log-density there, past the clip: the
        # clipped op derives it itself (from the same graph) and clips it.
        new.inline_logprob = False
        new.pymc_dp_inlined = True
    return new


# --------------------------------------------------------------------------- terms per record


@dataclass(frozen=True)
class ClipTerms:
    """How many clipped log-likelihood terms one record of an observed variable enters, and why."""

    per_record: int
    why: str
    #: Records enter several terms through the time structure (replace-one only).
    dependent: bool = False
    #: One term holds every record (a single multivariate draw): clipped as a whole.
    whole: bool = False


def _support_dims(op: Any) -> int:
    return int(getattr(op, "ndim_supp", 0) or 0)


def _value_shape(rv: Any, model: Any) -> tuple[int, ...]:
    value = model.rvs_to_values.get(rv) if model is not None else None
    for source in (value, rv):
        if source is None:
            continue
        static = source.type.shape
        if None not in static:
            return tuple(int(s) for s in static)
        try:
            return tuple(int(s) for s in evaluate(source.shape))
        except Exception:  # noqa: BLE001 - a shape that needs inputs: try the next source
            continue
    raise ValueError(f"the shape of observed variable {rv.name!r} cannot be determined.")


def _per_step(rv: Any, shape: tuple[int, ...]) -> bool:
    op = rv.owner.op
    return _time_series_kind(op) is not None and len(shape) == _support_dims(op)


def clip_terms(rv: Any, model: Any = None) -> ClipTerms:
    """The number of clipped log-likelihood terms one record of ``rv`` enters (see the module docstring)."""
    op = rv.owner.op
    shape = _value_shape(rv, model)
    support = _support_dims(op)
    batch = len(shape) - support
    if getattr(op, "pymc_dp_per_step", False) or (loglik_clip_of(rv) is None and _per_step(rv, shape)):
        kind = _time_series_kind(op)
        if kind == "ar":
            p = int(op.ar_order)
            return ClipTerms(p + 1, f"one time step enters its own term and, as a lag, the next {p}: {p} + 1 terms", True)
        return ClipTerms(2, "one step of a random walk enters its own increment and the next one: 2 terms", True)
    if batch >= 1:
        terms = int(math.prod(shape[1:batch])) if batch > 1 else 1
        if terms == 1:
            return ClipTerms(1, "one record is one term")
        return ClipTerms(terms, f"one record (a row along the first axis) holds {terms} terms")
    return ClipTerms(1, "one term holds every record (the whole variable's log-likelihood is clipped at once)",
                     whole=True)


# --------------------------------------------------------------------------- the transform


def _clip_bounds(lower: Any, upper: Any) -> tuple[float, float]:
    out = [
        check_finite_number(v, f"clip_loglik: {what}", hint=" An infinite end leaves Δ unbounded.")
        for what, v in (("lower", lower), ("upper", upper))
    ]
    if out[0] >= out[1]:
        raise ValueError(f"clip_loglik needs lower < upper, got ({out[0]:g}, {out[1]:g}).")
    return out[0], out[1]


def clip_loglik(model: Any = None, lower: float = -10.0, upper: float = 0.0) -> Any:
    """A copy of ``model`` in which every record's log-likelihood terms are clipped into ``[lower, upper]``.

    After clipping, one record can change the log-likelihood by at most
    ``terms × (upper − lower)`` whatever the model (:func:`clip_terms`: one term per
    record for most likelihoods; ``p + 1`` for a time step of an AR(p) series), so
    :func:`pymc_dp.loglik_sensitivity` is proven for any likelihood PyMC can write —
    including per-record parameters such as a regression mean ``X @ beta`` or a group
    intercept ``a[idx]``, as long as row ``i`` of those inputs enters only record ``i``'s
    terms ([WM10] §2 clamps each factor into [e^{−1}, e]: ``lower=-1, upper=1``).
    Terms outside the interval no longer inform the posterior: choose ``lower`` below
    the log-likelihood of typical records (a few units below its typical value), and
    ``upper`` at or above its maximum (0 for discrete likelihoods, whose terms are ≤ 0).

    Every observed variable is clipped: an unclipped one would leave the sensitivity
    unbounded. A NaN or infinite observed value (a missing or malformed record) is not
    refused: the term it would enter is the constant ``lower``, so that record's
    contribution does not depend on the data; a value outside the likelihood's support
    has a term of −∞, clipped to ``lower`` as well.

    Parameters
    ----------
    model
        The ``pm.Model`` (default: the enclosing ``with`` block's). Not modified.
    lower, upper
        The clipping interval of one log-likelihood term (finite, lower < upper).

    Returns
    -------
    pymc.Model
        The clipped copy; the observed variables keep their names, dims and data.
    """
    import pymc as pm
    from pymc.model.fgraph import ModelObservedRV
    from pytensor.graph.basic import Apply

    model = pm.modelcontext(model)
    lo, hi = _clip_bounds(lower, upper)
    if not model.observed_RVs:
        raise ValueError("the model has no observed variables: there is no log-likelihood to clip.")
    already = [rv.name for rv in model.observed_RVs if loglik_clip_of(rv) is not None]
    if already:
        raise ValueError(f"observed variable(s) {already} are already clipped; clip the original model once.")
    per_step = {rv.name: _per_step(rv, _value_shape(rv, model)) for rv in model.observed_RVs}
    try:
        fg, initvals = fgraph_of_model(model)
    except NotImplementedError as err:
        raise ValueError(f"this model cannot be copied for clipping ({err}).") from None
    for node in [n for n in fg.apply_nodes if isinstance(n.op, ModelObservedRV)]:
        parts = model_var_parts(node)
        owner = parts.var.owner
        op = _clipped_op(owner.op, lo, hi, per_step.get(parts.name, False))
        clipped = Apply(op, list(owner.inputs), [out.type() for out in owner.outputs])
        new_rv = clipped.outputs[owner.outputs.index(parts.var)]
        new_rv.name = parts.var.name
        observed = model_var("observed", new_rv, parts.name, value=parts.value, dims=parts.dims)
        fg.replace(node.outputs[0], observed, import_missing=True)
    return model_of_fgraph(fg, initvals)


# --------------------------------------------------------------------------- the terms themselves


#: The "clip" of :func:`loglik_terms_at_start`: wide enough to change no usable term, finite (and a float32's) so that
#: a malformed record reads as a number (beyond the far end of any grid) rather than NaN.
MALFORMED_TERM = -1e30


def loglik_terms_at_start(model: Any, name: str) -> np.ndarray:
    """The log-likelihood terms of observed variable ``name`` at the model's start point, shaped as its terms.

    The terms are the ones :func:`clip_loglik` clips (a time series' steps, each element of a univariate row, each
    row of a multivariate likelihood), unclipped; a term holding a malformed record (NaN, infinite) reads
    :data:`MALFORMED_TERM`. The start point is each free variable's support point (PyMC's ``support_point``: the
    prior's centre, from its parameters), without jitter, and never an ``initval``: initial values are often computed
    from the records (``initval=y.mean()``), and here the point would set every record's term. A group index out of
    range reads group 0 (:func:`_indices_in_range`: that record's term alone moves). If the terms still cannot be
    evaluated on the records, every term reads :data:`MALFORMED_TERM`. The terms hold the records: they are for a private choice
    (:mod:`pymc_dp.routes.clip_selection`), never released.

    Raises
    ------
    ValueError
        If the terms' graph cannot be built or compiled (from the model's structure alone).
    """
    from pymc.initial_point import make_initial_point_fn

    try:
        wide = clip_loglik(model, MALFORMED_TERM, -MALFORMED_TERM)
        rv = wide[name]
        logp = wide.logp(vars=[rv], sum=False)[0]
        if getattr(rv.owner.op, "pymc_dp_per_step", False):
            logp = _strip_last_sum(logp)  # the steps, before the clipped op sums them
        point = make_initial_point_fn(model=wide, overrides={v: "support_point" for v in wide.free_RVs},
                                      jitter_rvs=set())(0)
        logp = _indices_in_range(logp, wide, point)
        fn = wide.compile_fn(logp, inputs=wide.value_vars, on_unused_input="ignore",
                             mode="FAST_COMPILE")  # evaluated once: compiling would cost seconds on a cold cache
        shape = _value_shape(rv, wide)
    except Exception as err:  # noqa: BLE001 - structure only: no record's value is read here
        raise ValueError(f"the log-likelihood terms of {name!r} cannot be built at the start point ({err}).") from None
    try:
        with np.errstate(all="ignore"):
            terms = np.asarray(fn(point), dtype=float)
    except Exception:  # noqa: BLE001 - a record's value failed it: every term reads as malformed, whichever failed
        return np.full(_terms_shape(rv, shape), MALFORMED_TERM)
    return np.where(np.isfinite(terms), terms, MALFORMED_TERM)


def _indices_in_range(logp: Any, model: Any, point: dict) -> Any:
    """``logp`` with every data index of a lookup ``a[idx]`` that names no element of ``a`` moved to element 0.

    One record whose group index is out of range would make the whole evaluation fail, and every term read as
    malformed: the private median downstream would then see N changed values, not one. With the index moved, that
    record's term reads group 0's parameters — a function of the record alone, as every other term is — and the
    rest are untouched. The lengths looked up come from the model's structure (its coords and shapes at the start
    point), never from the records; every index is rewritten the same way whether or not any is out of range."""
    import pytensor.tensor as pt
    from pytensor.graph.replace import graph_replace

    from ._graph import ancestors
    from .regression import _strip, leaf_value

    lookups = []
    for var in ancestors([logp]):
        node = var.owner
        if node is None or not type(node.op).__name__.startswith("AdvancedSubtensor") or len(node.inputs) != 2:
            continue
        index = _strip(node.inputs[1])
        values = leaf_value(index)
        if values is not None and values.dtype.kind in "iu" and values.ndim >= 1 and node.inputs[0].type.ndim >= 1:
            lookups.append((node.inputs[0], index, values))
    if not lookups:
        return logp
    lengths = model.compile_fn([looked.shape[0] for looked, _, _ in lookups], inputs=model.value_vars,
                               on_unused_input="ignore", mode="FAST_COMPILE")(point)
    replacements = {}
    for (_, index, values), length in zip(lookups, lengths):
        inside = (values >= -int(length)) & (values < int(length))
        replacements[index] = pt.constant(np.where(inside, values, 0).astype(values.dtype))
    return graph_replace(logp, replacements, strict=False)


def _terms_shape(rv: Any, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The shape of ``rv``'s terms from its value's shape (structure only): a time series' steps, or the value's
    batch dimensions."""
    op = rv.owner.op
    if getattr(op, "pymc_dp_per_step", False):
        return shape[:-1] + (shape[-1],)
    return shape[:len(shape) - _support_dims(op)]
