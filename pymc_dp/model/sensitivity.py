"""``loglik_sensitivity``: how far one record can move a model's log-likelihood, proven from declarations.

A tempered posterior ``p(θ) p(X | θ)^{1/T}`` is the exponential mechanism with
utility ``log p(X | θ)``; it is ε-DP with ``T = 2Δ/ε`` where Δ is half the range
over θ of ``log p(x′ | θ) − log p(x | θ)``, maximised over the records x, x′ one
person could contribute ([FGWC16] §2.2; see
:meth:`pymc_dp.families.Family.loglik_sensitivity`). Δ comes from what the analyst
declared, never from the data:

* the **range of each likelihood parameter**, read off the model: a constant, a
  free variable's support as its value transform confines it (``pm.Truncated``,
  ``pm.Uniform``, :func:`pymc_dp.truncate`; a Beta's (0, 1), a Gamma's (0, ∞)), and
  interval arithmetic through monotone elementwise functions (``exp``, ``sigmoid``,
  sums, products, ...);
* the **data bounds** of families with unbounded records (``bounds=``, as for the
  Laplace route; records outside them are clipped before sampling);
* or a **log-likelihood clip** (:func:`pymc_dp.clip_loglik`): Δ = upper − lower.

Where Δ would be infinite — an untruncated Beta prior on a Bernoulli p, an unknown
Normal σ, a likelihood with no known bound — :func:`loglik_sensitivity` refuses
with an error that names the variable and the truncation or clip that would make
it finite. It never returns a number it has not proven.

Δ of the whole model is the **sum** over its observed variables (one person's
record may appear in each of them); Δ for a Gibbs update of one variable
(``wrt=``) sums only the observed variables whose likelihood depends on it
directly ([FGWC16] eq. 20: Δ_l ≤ Δ).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from ..accounting.validation import check_epsilon, check_neighbouring
from ..families import family_of_dist
from ..families._params import per_record_parameters
from ._graph import ancestors, data_leaves, describe_leaf, dim_lengths, n_is_private, only_constants
from .loglik_clip import clip_terms, loglik_clip_of
from .records import RecordLocalityError, check_record_local, parameter_label, per_record_leaves
from .truncation import is_simplex_floor
from .._evaluate import evaluate

__all__ = ["loglik_sensitivity", "LoglikSensitivity", "parameter_range"]

_UNBOUNDED = (-math.inf, math.inf)


@dataclass(frozen=True)
class LoglikSensitivity:
    """The proven sensitivity of a model's log-likelihood to one record.

    Attributes
    ----------
    per_variable
        ``{observed variable: Δ}``.
    derivations
        ``{observed variable: how Δ was computed}`` (the formula with its numbers).
    neighbouring
        The neighbouring relation Δ is stated under.
    wrt
        The free variables whose conditional this is (empty: the whole model).
    bounds
        ``{observed variable: checked data bounds}`` (records are clipped to them
        before a tempered model is sampled).
    """

    per_variable: Mapping[str, float]
    derivations: Mapping[str, str]
    neighbouring: str = "replace"
    wrt: tuple[str, ...] = ()
    bounds: Mapping[str, Mapping[str, Any]] = field(default_factory=dict, repr=False)
    families: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def total(self) -> float:
        """Δ of the model (or of the conditional of ``wrt``): the sum over observed variables."""
        return float(sum(self.per_variable.values()))

    def temperature(self, epsilon: float) -> float:
        """T = max(1, 2Δ/ε): the temperature at which one exact posterior sample is ε-DP."""
        eps = check_epsilon(epsilon)
        temperature = max(1.0, 2.0 * self.total / eps)
        if not np.isfinite(temperature):
            raise ValueError(
                f"epsilon={eps:g} is too small for the sensitivity Δ = {self.total:g}: the temperature 2Δ/ε "
                "overflows float64. Use a larger epsilon (or tighter bounds, truncation or clip)."
            )
        return temperature

    def epsilon_per_sample(self, epsilon: float) -> float:
        """What one exact sample at :meth:`temperature` costs: ε, or 2Δ < ε when T is capped at 1."""
        return 2.0 * self.total / self.temperature(epsilon)

    def exact_samples(self, epsilon: float) -> float:
        """How many exact samples of the *untempered* posterior (T = 1) a budget ε buys: ⌊ε / 2Δ⌋ (∞ if Δ = 0)."""
        eps = check_epsilon(epsilon)
        if self.total == 0:
            return math.inf
        return float(math.floor(eps / (2.0 * self.total) * (1 + 1e-12)))

    def describe(self, epsilon: float | None = None) -> str:
        """A readable account of Δ (and, given ε, of T and what ε buys)."""
        what = f"the conditional of {', '.join(self.wrt)}" if self.wrt else "the model"
        lines = [f"Log-likelihood sensitivity of {what} (neighbouring = {self.neighbouring}):"]
        for name, delta in self.per_variable.items():
            lines.append(f"  {name}: Δ = {delta:.6g}   [{self.derivations[name]}]")
        lines.append(f"  total: Δ = {self.total:.6g}")
        if epsilon is not None:
            t = self.temperature(epsilon)
            lines.append(
                f"At ε = {epsilon:g} per sample: T = max(1, 2Δ/ε) = {t:.6g}; one exact sample costs ε = "
                f"{self.epsilon_per_sample(epsilon):.6g}."
            )
            if t == 1.0:
                lines.append(
                    f"ε ≥ 2Δ: the budget buys {self.exact_samples(epsilon):g} exact sample(s) of the untempered "
                    "posterior (T = 1)."
                )
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.describe()


# --------------------------------------------------------------------------- parameter ranges


def _constant_range(values: Any) -> tuple[float, float]:
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        return _UNBOUNDED
    if np.isnan(data).any():
        return _UNBOUNDED
    return float(data.min()), float(data.max())


def _finite_or_unbounded(lo: float, hi: float) -> tuple[float, float]:
    if math.isnan(lo) or math.isnan(hi):
        return _UNBOUNDED
    return lo, hi


def _monotone(impl: Any, ranges: Sequence[tuple[float, float]], signs: Sequence[int]) -> tuple[float, float]:
    """Range of a function monotone in each argument (sign +1 increasing, −1 decreasing)."""
    low_args = [r[0] if s > 0 else r[1] for r, s in zip(ranges, signs)]
    high_args = [r[1] if s > 0 else r[0] for r, s in zip(ranges, signs)]
    with np.errstate(all="ignore"):
        lo, hi = float(impl(*low_args)), float(impl(*high_args))
    return _finite_or_unbounded(lo, hi)


def _product(a: tuple[float, float], b: tuple[float, float]) -> tuple[float, float]:
    with np.errstate(all="ignore"):
        corners = [x * y for x in a for y in b]
    if any(math.isnan(c) for c in corners):  # 0 × ∞: give up soundly
        return _UNBOUNDED
    return min(corners), max(corners)


def _reciprocal(a: tuple[float, float]) -> tuple[float, float]:
    lo, hi = a
    if lo > 0 or hi < 0:
        return 1.0 / hi if hi != 0 else -math.inf, 1.0 / lo if lo != 0 else math.inf
    return _UNBOUNDED


_INCREASING = (
    "Exp", "Exp2", "Log", "Log2", "Log10", "Log1p", "Expm1", "Sigmoid", "Softplus", "Sqrt", "Tanh",
    "Identity", "Cast", "Erf", "Log1mexp",
)
_SHAPE_OPS = (
    "DimShuffle", "Reshape", "SpecifyShape", "Subtensor", "Flatten", "Squeeze", "ExpandDims", "Alloc", "ViewOp",
    "DeterministicWrapper", "OutputGuard", "AdvancedSubtensor", "AdvancedSubtensor1",
)


def _free_range(rv: Any, model: Any, recurse: Any) -> tuple[float, float]:
    from pymc.distributions.transforms import Interval
    from pymc.logprob.transforms import LogOddsTransform, LogTransform, SimplexTransform

    transform = model.rvs_to_transforms.get(rv)
    if is_simplex_floor(transform):
        k = rv.type.shape[-1]
        return transform.floor, 1.0 - (int(k) - 1) * transform.floor
    if isinstance(transform, Interval):
        lower, upper = transform.args_fn(*rv.owner.inputs)
        lo = -math.inf if lower is None else recurse(lower)[0]
        hi = math.inf if upper is None else recurse(upper)[1]
        return lo, hi
    if isinstance(transform, (LogOddsTransform, SimplexTransform)):
        return 0.0, 1.0
    if isinstance(transform, LogTransform):
        return 0.0, math.inf
    return _UNBOUNDED


def _reduction_range(owner: Any, name: str, arg: tuple[float, float]) -> tuple[float, float]:
    """Range of a reduction of an array whose entries lie in ``arg``: sound, or unbounded.

    A maximum or minimum stays in the entries' range; a sum of n entries lies in
    n × the range (n from the static shape; unknown n: unbounded); anything else
    (products, ...) is unbounded.
    """
    if name in ("Maximum", "Minimum", "ScalarMaximum", "ScalarMinimum"):
        return arg
    if name != "Add":
        return _UNBOUNDED
    shape = owner.inputs[0].type.shape
    axis = getattr(owner.op, "axis", None)
    axes = range(len(shape)) if axis is None else axis
    sizes = [shape[a] for a in axes]
    if any(n is None for n in sizes):
        return _UNBOUNDED
    n = float(np.prod(sizes)) if sizes else 1.0
    with np.errstate(all="ignore"):
        return _finite_or_unbounded(n * arg[0], n * arg[1])


def parameter_range(var: Any, model: Any) -> tuple[float, float]:
    """An interval ``(lo, hi)`` containing every value ``var`` (a model expression) can take.

    Sound, not always tight: a constant's values; a free variable's support as its
    value transform confines it; interval arithmetic through monotone elementwise
    functions, sums, differences, products, quotients and shape operations;
    reductions: a maximum or minimum keeps the range, a sum of n entries (n known from
    the static shape) scales it by n. Anything else (a product over entries, a sum of
    unknown length) is ``(-inf, inf)``. For a vector, the interval covers every coordinate.
    """
    from pytensor.graph.basic import Constant

    free = set(model.free_RVs)
    memo: dict[Any, tuple[float, float]] = {}

    def rng(v: Any) -> tuple[float, float]:
        if v not in memo:
            memo[v] = _range(v)
        return memo[v]

    def _range(v: Any) -> tuple[float, float]:
        if isinstance(v, Constant):
            return _constant_range(v.data)
        if v in free:
            return _free_range(v, model, rng)
        owner = v.owner
        if owner is None:  # group-level pm.Data (record data is refused before this is asked)
            return _constant_range(v.get_value(borrow=True)) if hasattr(v, "get_value") else _UNBOUNDED
        if only_constants(v):
            return _constant_range(evaluate(v))
        op = owner.op
        kind = type(op).__name__
        if kind in _SHAPE_OPS:
            return rng(owner.inputs[0])
        scalar_op = getattr(op, "scalar_op", None)
        if scalar_op is None:
            return _UNBOUNDED
        name = type(scalar_op).__name__
        if kind != "Elemwise":  # a reduction (Sum, Prod, Max, ...) carries a scalar_op too
            return _reduction_range(owner, name, rng(owner.inputs[0]))
        args = [rng(i) for i in owner.inputs]
        if name in _INCREASING and len(args) == 1:
            return _monotone(scalar_op.impl, args, [1])
        if name == "Neg":
            return -args[0][1], -args[0][0]
        if name == "Reciprocal":
            return _reciprocal(args[0])
        if name in ("Add", "Maximum", "Minimum", "Clip", "ScalarMaximum", "ScalarMinimum"):
            impl = {"Add": lambda *a: sum(a), "Clip": lambda x, a, b: min(max(x, a), b)}.get(
                name, max if "Maximum" in name else min
            )
            return _monotone(impl, args, [1] * len(args))
        if name == "Sub":
            return _monotone(lambda a, b: a - b, args, [1, -1])
        if name == "Mul":
            out = args[0]
            for a in args[1:]:
                out = _product(out, a)
            return out
        if name == "TrueDiv":
            return _product(args[0], _reciprocal(args[1]))
        return _UNBOUNDED

    return rng(var)


# --------------------------------------------------------------------------- the analysis


def _strip(var: Any) -> Any:
    """``var`` without shape operations and casts around it."""
    while var.owner is not None and (
        type(var.owner.op).__name__ in _SHAPE_OPS
        or type(getattr(var.owner.op, "scalar_op", None)).__name__ in ("Cast", "Identity")
    ):
        var = var.owner.inputs[0]
    return var


def _truncation_hint(param: Any, model: Any, family: Any, key: str) -> str:
    free = set(model.free_RVs)
    base = _strip(param)
    example = family.truncation_examples.get(key, "(lower, upper)").split(" (")[0]
    if base in free:
        return (f" Make it finite with truncate={{{base.name!r}: {example}}} in pmdp.sample (pmdp.truncate(model, "
                f"{{{base.name!r}: {example}}}) on a model), or clip the log-likelihood (loglik_clip=(lower, upper) in "
                "pmdp.sample; pmdp.clip_loglik on a model).")
    names = sorted({v.name for v in ancestors([param], blockers=list(free)) if v in free})
    if names:
        return (f" It is a function of {names}: truncate those (truncate= in pmdp.sample, pmdp.truncate on a model) "
                "or clip the log-likelihood (loglik_clip=(lower, upper) in pmdp.sample; pmdp.clip_loglik on a model).")
    return " Clip the log-likelihood: loglik_clip=(lower, upper) in pmdp.sample (pmdp.clip_loglik on a model)."


def _record_counts(model: Any) -> list[int]:
    from .privatize_model import _observed_records

    out = []
    for rv in model.observed_RVs:
        shape = np.shape(_observed_records(model, rv))
        out.append(int(shape[0]) if shape else 1)
    return out


def _check_data_confined(model: Any, observed: Sequence[Any]) -> None:
    """Refuse a model in which data enter anywhere but the observed variables' values."""
    free = list(model.free_RVs)
    observed_set = set(model.observed_RVs)
    counts = _record_counts(model)
    # Anywhere (a prior's parameters or size, a Potential, a likelihood parameter) a
    # constant array that looks like records (data_leaves: N or N − 1 entries and more)
    # is taken to be data, as on the Laplace route: NumPy records passed into a prior
    # (pt.mean(np.log(y)) as a location, sum(y[1:] > 0) as a size) would otherwise be
    # released uncharged. pm.Data containers are data everywhere.
    from .privatize_model import _observed_records

    records = [np.asarray(_observed_records(model, rv)) for rv in model.observed_RVs]
    places: list[tuple[str, list[Any], list[int]]] = []
    for rv in free:
        places.append((f"the prior of {rv.name!r}", list(rv.owner.inputs), counts))
    for pot in model.potentials:
        places.append((f"the Potential {pot.name!r}", [pot], counts))
    for rv, count in zip(model.observed_RVs, counts):
        if rv in observed:
            places.append((f"the parameters of the observed variable {rv.name!r}", list(rv.owner.inputs), [count]))
    for where, graphs, record_counts in places:
        hits = [v for v in ancestors(graphs, blockers=free) if v in observed_set]
        if hits:
            raise ValueError(
                f"{where} depend(s) on the observed variable {hits[0].name!r}: one record would then enter more "
                "than its own log-likelihood term, and no sensitivity can be proven. Such models are not "
                "supported by tempered posteriors."
            )
        leaves = data_leaves(
            graphs, blockers=free, record_counts=record_counts, public=dim_lengths(model),
            records=records if where.startswith("the prior") else None,
        )
        if leaves and where.startswith("the parameters"):
            rv = next(r for r in observed if where.endswith(f"{r.name!r}"))
            _check_per_record_parameters(rv, model, leaves, record_counts[0])
        elif leaves:
            raise ValueError(
                f"{where} depend(s) on data ({', '.join(describe_leaf(v) for v in leaves)}). Only the observed "
                "variables' likelihoods may read the records (with the per-record arrays aligned with them); make "
                "those inputs public constants (an array as long as the records is taken to be records). Nothing "
                "was spent."
            )


#: The next step a refusal of a likelihood that mixes records offers.
_WHAT_WORKS = (
    "What works: compute such inputs row by row before the model (centre or scale covariates with public "
    "constants, not with the records' mean or spread), keep reductions, cumulative sums, sorts and normalisations "
    "along a record's own row, or use method='saa' (ranges=), which needs no analysis of the likelihood."
)


def _check_per_record_parameters(rv: Any, model: Any, leaves: Sequence[Any], records: int) -> None:
    """Allow per-record arrays in ``rv``'s parameters only as part of its records, under a log-likelihood clip."""
    aligned, other = per_record_leaves(leaves, records)
    if not aligned and not other:
        return  # group-level data only: public, like a NumPy constant of its size
    names = ", ".join(describe_leaf(v, [rv]) for v in aligned or leaves)
    if other:
        raise ValueError(
            f"the parameters of the observed variable {rv.name!r} depend on data that is not one row per record "
            f"({', '.join(describe_leaf(v) for v in other)}"
            f"{'' if n_is_private() else f'; {rv.name!r} has {records} records'}): an aggregate over "
            "records, or records sliced or transposed, reaches every record's term and no per-record sensitivity "
            "holds. Pass per-record inputs with one row per record (first axis of length N)"
            + ("; values of the groups (one a group, read through a[idx]) are public only as pm.Data(name, values, "
               "dims=<the group dim>) here: with neighbouring='add_remove' no array's length is compared with N, so "
               "a NumPy array of 10 or more values is taken for records" if n_is_private() else "")
            + ". Nothing was spent."
        )
    if loglik_clip_of(rv) is None:
        raise ValueError(
            f"the parameters of the observed variable {rv.name!r} vary by record through {names} (part of each "
            "record, like a regression's covariates or a group index): a tempered posterior proves its sensitivity "
            "for such a likelihood only with a log-likelihood clip. Declare loglik_clip=(lower, upper) "
            "(method='ops' or 'gibbs'; pmdp.clip_loglik), or use method='saa', which needs no analysis of the model. "
            "Nothing was spent."
        )
    op = rv.owner.op
    try:
        params = list(op.dist_params(rv.owner))
    except (AttributeError, TypeError, ValueError):
        params = [i for i in rv.owner.inputs if hasattr(i.type, "ndim")]
    named = {parameter_label(p, i): p for i, p in enumerate(params)}
    try:
        check_record_local(rv, model, named, aligned)
    except RecordLocalityError as err:
        raise ValueError(
            f"{err}. The per-record inputs there: {names}. Each record's covariates, group index or per-record "
            f"parameters must enter only its own log-likelihood terms for the clip to bound one record's influence. "
            f"{_WHAT_WORKS} Nothing was spent."
        ) from None


def _check_support_is_fixed(rv: Any, model: Any) -> None:
    """Refuse a clipped likelihood whose support ends where its parameters put it (``pm.Uniform(lower=a, ...)``,
    ``pm.Triangular``, ``pm.Pareto(m=...)``), read from PyMC's own default transform of the variable (an interval
    whose bounds are computed from its parameters). Under a clip a record outside that support has the clip's lower
    term instead of −∞, so no clipped posterior keeps the edge the plain one has."""
    from pymc.distributions.transforms import _default_transform

    try:
        transform = _default_transform(rv.owner.op, rv)
    except (NotImplementedError, TypeError, ValueError):
        return
    bounds_of = getattr(transform, "args_fn", None)
    if bounds_of is None:
        return
    free = set(model.free_RVs)
    moving = [side for side, bound in zip(("lower", "upper"), bounds_of(*rv.owner.inputs))
              if bound is not None and hasattr(bound, "owner") and any(v in free for v in ancestors([bound]))]
    if moving:
        raise ValueError(
            f"observed variable {rv.name!r}: the {' and '.join(moving)} end of its likelihood's support is set by "
            "parameters, and a log-likelihood clip gives a record outside the support the clip's lower term "
            "instead of −∞ (under differential privacy one record may not rule a parameter value out), so the "
            "clipped posterior cannot keep that edge and would land far from PyMC's. Use method='saa' (ranges=), "
            "which fits each block of records with the exact likelihood, or make the support's ends constants. "
            "Nothing was spent."
        )


def _check_clipped_terms(rv: Any, model: Any, neighbouring: str, per_step: bool) -> None:
    """Prove that the clip reaches ``rv``'s log-likelihood as PyMC computes it, and that its terms are row-local.

    A clip that PyMC's log-density machinery bypassed (as it once did for the likelihoods
    it derives from their generating graph: :mod:`pymc_dp.model.loglik_clip` now derives
    and clips those itself) would leave Δ unbounded: the top of the term graph must be
    the clip. A custom ``logp``, a generating graph or an observed value computed from
    the data can mix records; the walk over the whole term graph refuses that.
    """
    from .records import check_terms_record_local

    (term,) = model.logp(vars=[rv], sum=False, jacobian=False)
    top = term
    while top.owner is not None and type(top.owner.op).__name__ in ("SpecifyShape", "Sum", "DimShuffle"):
        top = top.owner.inputs[0]
    if top.owner is None or type(getattr(top.owner.op, "scalar_op", None)).__name__ != "Clip":
        raise ValueError(
            f"observed variable {rv.name!r}: PyMC computes this likelihood's log-density "
            f"({type(rv.owner.op).__name__.removeprefix('LoglikClipped')}) in a way the log-likelihood clip does not "
            "reach, so no sensitivity can be proven. Write the likelihood with pm.CustomDist(logp=...), or try "
            "method='saa'. Nothing was spent."
        )
    if per_step:
        return
    records = _record_counts(model)[list(model.observed_RVs).index(rv)]
    leaves = data_leaves([term], blockers=(), record_counts=[records], public=dim_lengths(model))
    aligned, other = per_record_leaves(leaves, records)
    try:
        if other:
            raise RecordLocalityError(
                f"data without one row per record ({', '.join(describe_leaf(v) for v in other)}) reaches its terms"
            )
        check_terms_record_local(term, aligned, (), neighbouring)
    except RecordLocalityError as err:
        raise ValueError(
            f"observed variable {rv.name!r}: its log-likelihood terms, as PyMC computes them (distribution, custom "
            f"logp, observed values), are not one per record: {err}. One record must reach only its own terms for "
            f"the clip to bound its influence. {_WHAT_WORKS} Nothing was spent."
        ) from None


def _variable_sensitivity(
    rv: Any, model: Any, bounds: Mapping[str, Any] | None, neighbouring: str
) -> tuple[float, str, Any, dict[str, Any]]:
    """(Δ, derivation, family or None, checked bounds) of one observed variable."""
    clip = loglik_clip_of(rv)
    if clip is not None:
        span = clip[1] - clip[0]
        terms = clip_terms(rv, model)
        _check_support_is_fixed(rv, model)
        _check_clipped_terms(rv, model, neighbouring, terms.dependent)
        where = f"log-likelihood terms clipped to [{clip[0]:g}, {clip[1]:g}]; {terms.why}"
        if neighbouring == "replace":
            return terms.per_record * span, f"{where}: {terms.per_record} × (upper − lower)", None, {}
        if terms.dependent:
            raise ValueError(
                f"observed variable {rv.name!r}: its records are steps of one time series ({terms.why}); adding or "
                "removing a step shifts every later one, so only neighbouring='replace' is supported for it."
            )
        return terms.per_record * span / 2.0, f"{where}, add/remove: {terms.per_record} × (upper − lower) / 2", None, {}
    if bounds is not None and not isinstance(bounds, Mapping):
        raise ValueError(f"bounds[{rv.name!r}] must be a dict of the family's bounds, got {bounds!r}; e.g. "
                         f"bounds={{{rv.name!r}: {{'x': (lower, upper)}}}} for a Normal's records.")
    try:
        with per_record_parameters():  # Δ needs only the parameters' range, which covers every record's value
            family, params = family_of_dist(rv)
    except ValueError as err:
        raise ValueError(
            f"observed variable {rv.name!r}: no log-likelihood sensitivity can be derived for its likelihood ({err}). "
            "Clip its per-record log-likelihood instead: loglik_clip=(lower, upper) in pmdp.sample (pmdp.clip_loglik(model, lower, upper) on a model)."
        ) from None
    if neighbouring != "replace":
        raise ValueError(
            f"observed variable {rv.name!r}: the {family.name} sensitivity from parameter ranges is derived under "
            "replace-one neighbouring only; use neighbouring='replace', or clip the log-likelihood (pmdp.clip_loglik)."
        )
    try:
        checked = family.check_bounds(bounds)
    except ValueError as err:
        msg = str(err).replace("declare bounds=", f"declare bounds={{{rv.name!r}: ...}} with ")
        raise ValueError(f"observed variable {rv.name!r}: {msg}") from None
    ranges = {key: parameter_range(value, model) for key, value in params.items()}
    try:
        delta, how = family.loglik_sensitivity(ranges, checked)
    except ValueError as err:
        key = next((k for k in params if f"parameter {k!r}" in str(err)), None)
        hint = _truncation_hint(params[key], model, family, key) if key is not None else ""
        raise ValueError(f"observed variable {rv.name!r}: {err}{hint}") from None
    return float(delta), how, family, checked


def loglik_sensitivity(
    model: Any = None,
    *,
    bounds: Mapping[str, Mapping[str, Any]] | None = None,
    wrt: str | Iterable[str] | None = None,
    neighbouring: str = "replace",
) -> LoglikSensitivity:
    """The sensitivity Δ of ``model``'s log-likelihood to one record, per observed variable and in total.

    Parameters
    ----------
    model
        The ``pm.Model`` (default: the enclosing ``with`` block's).
    bounds
        ``{observed variable: data bounds}`` for likelihoods with unbounded records,
        as for the Laplace route: ``{"y": {"x": (lo, hi)}}`` (Normal, Exponential,
        Gamma), ``{"counts": {"upper": U}}`` (Poisson).
    wrt
        A free variable name (or several): Δ of the Gibbs conditional of those
        variables, i.e. summed over the observed variables whose likelihood depends
        on them directly ([FGWC16] eq. 20). For the private step methods.
    neighbouring
        ``"replace"`` (default; N public). ``"add_remove"`` is supported for clipped
        log-likelihoods only.

    Returns
    -------
    LoglikSensitivity
        ``per_variable``, ``total``, and ``temperature(ε)`` = max(1, 2Δ/ε).

    Raises
    ------
    ValueError
        Where Δ is not finite or cannot be proven, with what to declare: e.g. for an
        untruncated ``pm.Beta`` prior on a Bernoulli p, "Make it finite with
        pmdp.truncate(model, {'p': (0.05, 0.95)})"; for missing data bounds, the
        ``bounds=`` to declare; for an unsupported likelihood, ``pmdp.clip_loglik``;
        for data anywhere but the observed variables, a refusal.

    Examples
    --------
    >>> with pm.Model() as model:  # doctest: +SKIP
    ...     p = pm.Uniform("p", 0.2, 0.8)
    ...     pm.Bernoulli("y", p, observed=records)
    >>> pmdp.loglik_sensitivity(model).temperature(1.0)  # doctest: +SKIP
    2.772588722239781
    """
    import pymc as pm

    from ._graph import number_of_records_private

    model = pm.modelcontext(model)
    relation = check_neighbouring(neighbouring)
    with number_of_records_private(relation == "add_remove"):  # N private: no check compares a size with it
        return _loglik_sensitivity(model, bounds, relation, wrt)


def _loglik_sensitivity(model: Any, bounds: Any, relation: str, wrt: Any) -> LoglikSensitivity:
    if not model.observed_RVs:
        raise ValueError("the model has no observed variables: there is no log-likelihood whose sensitivity to bound.")
    if bounds is not None and not isinstance(bounds, Mapping):
        raise ValueError("bounds must map observed variable names to their bounds, e.g. {'y': {'x': (0, 1)}}.")
    bounds = dict(bounds or {})
    observed_names = {rv.name for rv in model.observed_RVs}
    unknown = sorted(set(bounds) - observed_names)
    if unknown:
        raise ValueError(f"bounds names {unknown}, which are not observed variables of the model ({sorted(observed_names)}).")
    observed = list(model.observed_RVs)
    wrt_names: tuple[str, ...] = ()
    if wrt is not None:
        wrt_names = (wrt,) if isinstance(wrt, str) else tuple(wrt)
        free = {rv.name: rv for rv in model.free_RVs}
        missing = [n for n in wrt_names if n not in free]
        if missing or not wrt_names:
            raise ValueError(f"wrt names {missing or wrt_names!r}: give free variables of the model ({sorted(free)}).")
        targets = {free[n] for n in wrt_names}
        observed = [
            rv for rv in observed if targets & set(ancestors(list(rv.owner.inputs), blockers=list(model.free_RVs)))
        ]
    _check_data_confined(model, list(model.observed_RVs))
    per_variable, derivations, checked_bounds, families = {}, {}, {}, {}
    for rv in observed:
        delta, how, family, checked = _variable_sensitivity(rv, model, bounds.get(rv.name), relation)
        per_variable[rv.name], derivations[rv.name] = delta, how
        if family is not None:
            families[rv.name] = family
            checked_bounds[rv.name] = checked
    return LoglikSensitivity(
        per_variable=per_variable,
        derivations=derivations,
        neighbouring=relation,
        wrt=wrt_names,
        bounds=checked_bounds,
        families=families,
    )
