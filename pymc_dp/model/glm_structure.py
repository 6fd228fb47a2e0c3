"""Reading a generalised linear model off a PyMC graph, and its per-record score and information.

A likelihood is read as a GLM when its observed variable is univariate and each of its
parameters is

* a **constant** (``n=10`` trials, a fixed ``nu``),
* a **nuisance**: a scalar function of the model's parameters only, shared by every record
  (``sigma``, a negative binomial's ``alpha``, a Gamma's shape), or
* an **elementwise function of linear predictors and nuisances**: ``mu=pm.math.exp(a + X @ b)``,
  ``logit_p=a + b * x``, ``beta=alpha / pm.math.exp(eta)``; each predictor a sum of ``X @ beta``,
  ``b * x`` and scalar terms as the regression recogniser reads it
  (:func:`pymc_dp.model.regression._linear_predictor`), ``X`` data with one row per record, and of
  **group-indexed terms** ``a[idx]`` (varying intercepts: ``a`` a vector of the parameters, one entry per
  group, a public length; ``idx`` a per-record integer array), read as ``onehot(idx) @ a``: a block of the
  design with exactly one 1 per record, whose columns need no declared bounds.

The link is whatever the model writes: the graph between the predictors and the likelihood's
parameters is kept as it is. The parameters φ of the score are the predictors' coefficients and
the nuisances, each nuisance on its unconstrained scale where it is a free variable with a
transform (``log sigma``), so a quadratic in φ fits the log-likelihood well.

Per-record derivatives are exact and vectorised: the predictors and nuisances are replaced by
per-record inputs (η_i, u_i), so the gradient of the summed log-density with respect to them is
each record's own partial derivative (the likelihood is elementwise in the records); the chain
rule through the design rows gives each record's score and information in φ.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

import numpy as np
from .._evaluate import evaluate_int

__all__ = ["GlmStructure", "Predictor", "read_glm", "RecordDerivatives"]


@dataclass
class Predictor:
    """A linear predictor in the graph: its node, its records' design (N × d, an intercept column last), its
    coefficients (a model expression) and column labels."""

    node: Any
    design: np.ndarray = field(repr=False)
    coefficients: Any
    has_intercept: bool
    columns: tuple = ()
    #: the design's one-hot blocks of group-indexed terms ``a[idx]``: ``(first column, number of groups)``
    blocks: tuple = ()
    #: per block: each record's group (−1: the index names none), and the covariate it scales (a varying slope
    #: ``b[idx] * x``: its per-record values) or None (a varying intercept ``a[idx]``)
    block_members: tuple = field(default=(), repr=False)
    block_scales: tuple = field(default=(), repr=False)
    #: per block: which index it reads (blocks with the same key put a record in the same group)
    block_keys: tuple = ()

    @property
    def size(self) -> int:
        return int(self.design.shape[1])

    def block_columns(self) -> np.ndarray:
        """Whether each column of the design belongs to a one-hot block (no declared bounds of their own)."""
        mask = np.zeros(self.size, dtype=bool)
        for start, groups in self.blocks:
            mask[start:start + groups] = True
        return mask

    def is_slope(self, block: int) -> bool:
        """Whether block ``block`` is a varying slope ``b[idx] * x`` (its columns are x, not 1, in a record's group)."""
        return len(self.block_scales) > block and self.block_scales[block] is not None

    def slots(self) -> list[tuple[str, int]]:
        """The covariates whose ranges are declared, in the design's order: ``("column", j)`` for a covariate column
        j, ``("slope", b)`` for the covariate of the varying slope in block b (one range for its G columns)."""
        out, starts = [], {start: b for b, (start, _) in enumerate(self.blocks)}
        in_block = self.block_columns()
        for j in range(self.size - self.has_intercept):
            if j in starts and self.is_slope(starts[j]):
                out.append(("slope", starts[j]))
            elif not in_block[j]:
                out.append(("column", j))
        return out


@dataclass
class GlmStructure:
    """The predictors and nuisances of a GLM likelihood (see the module docstring)."""

    rv: Any
    predictors: list[Predictor]
    nuisances: list[Any]

    @property
    def dimension(self) -> int:
        return sum(p.size for p in self.predictors) + len(self.nuisances)

    @property
    def covariates(self) -> int:
        """The covariates whose bounds are declared (not the intercepts, not the one-hot blocks of ``a[idx]``)."""
        return sum(len(p.slots()) for p in self.predictors)

    def labels(self, transform_of: Callable[[Any], Any]) -> list[str]:
        """A readable name per coordinate of φ: the coefficients' model names, ``intercept``, ``log sigma``."""
        out = []
        for j, p in enumerate(self.predictors):
            suffix = f"[{j}]" if len(self.predictors) > 1 else ""
            widths = {c: sum(1 for c2, _, _ in p.columns if c2 == c) for c, _, _ in p.columns}
            for name, dim, k in p.columns:
                if name and dim is None and widths[name] == 1:  # a scalar slope: b, not b[0]
                    out.append(name)
                else:
                    out.append(f"{name}[{k}]" if name else f"coefficient{suffix}[{k}]")
            if p.has_intercept:
                out.append("intercept" + suffix)
        for v in self.nuisances:
            name = getattr(v, "name", None) or "nuisance"
            transform = transform_of(v)
            out.append(f"{getattr(transform, 'name', 'transformed')} {name}" if transform is not None else name)
        return out

    def parameters(self, transform_of: Callable[[Any], Any]) -> Any:
        """φ as one vector expression of the model's variables: coefficients, then the nuisances (unconstrained)."""
        import pytensor.tensor as pt

        parts = [pt.cast(p.coefficients, "float64") for p in self.predictors]
        for v in self.nuisances:
            transform = transform_of(v)
            value = transform.forward(v, *_rv_of(v).owner.inputs) if transform is not None else v
            parts.append(pt.cast(value, "float64")[None])
        return pt.concatenate(parts)


def _rv_of(var: Any) -> Any:
    """The random variable behind a free variable (itself in a model, the wrapped one in a model's graph form)."""
    from pymc.model.fgraph import ModelValuedVar

    if var.owner is not None and isinstance(var.owner.op, ModelValuedVar):
        return var.owner.inputs[0]
    return var


def _named_parameters(rv: Any) -> list[tuple[str, Any]]:
    """``(name, parameter)`` of the likelihood's distribution parameters, named as the random variable's op names
    them (``n`` and ``p`` of a Binomial), else ``param<i>``."""
    import inspect

    from ..families.base import dist_params

    params = list(dist_params(rv))
    try:
        names = [n for n in inspect.signature(rv.owner.op.__call__).parameters if n not in ("self", "size", "kwargs")]
    except (TypeError, ValueError):
        names = []
    if len(names) != len(params):
        names = [f"param{i}" for i in range(len(params))]
    return list(zip(names, params))


def _elementwise(var: Any) -> bool:
    from pytensor.tensor.elemwise import DimShuffle, Elemwise

    return var.owner is not None and isinstance(var.owner.op, (Elemwise, DimShuffle))


def read_glm(rv: Any, records: int, blockers: Sequence[Any], public: Sequence[Any],
             why: list[str] | None = None) -> GlmStructure | None:
    """The :class:`GlmStructure` of the observed variable ``rv``, or None (with the reason appended to ``why``).

    ``blockers`` are the model's free variables and ``public`` its dims' lengths (as for the regression
    recogniser); ``records`` is the number of records.
    """
    from ..families.base import dist_params
    from ._graph import ancestors, data_leaves
    from .regression import _describe, _linear_predictor, _scalar_op, _strip, _undim

    why = why if why is not None else []
    if getattr(rv.owner.op, "ndim_supp", 0) != 0:
        why.append("its likelihood is multivariate (a row per record), not a GLM's")
        return None
    blockers, public = list(blockers), list(public)
    free = set(blockers)
    context = (blockers, public)
    predictors: list[Predictor] = []
    nuisances: list[Any] = []

    def has_parameters(var: Any) -> bool:
        return any(a in free for a in ancestors([var], blockers))

    def record_free(var: Any) -> bool:
        return not data_leaves([var], blockers=blockers, record_counts=[records], public=public)

    def deepest(var: Any) -> Any:
        var = _undim(_strip(var))
        while var not in free and _elementwise(var):
            moving = [i for i in var.owner.inputs if has_parameters(i)]
            if len(moving) != 1:
                break
            var = _undim(_strip(moving[0]))
        return var

    def read(var: Any) -> bool:
        base = _strip(var)
        if not has_parameters(base):
            if record_free(base):
                return True  # a constant
            why.append(_describe(base, records) + " enters the likelihood outside a linear predictor")
            return False
        if record_free(base):
            inner = deepest(base)
            if inner.type.ndim != 0:
                why.append(f"a parameter vector shared by the records ({getattr(inner, 'name', None) or 'unnamed'}) "
                           "enters the likelihood: only scalars (sigma, alpha, a shape) are read")
                return False
            if not any(inner is n for n in nuisances):
                nuisances.append(inner)
            return True
        blocks: list[tuple[int, int]] = []
        kinds: list[tuple] = []  # per block: (members, scale or None, key)
        unread: list[str] = []
        found = _linear_predictor(
            base, context, records, unread,
            other_term=lambda term, column: _group_term(term, column, records, context, blocks, kinds))
        if found is not None:
            if not any(base is p.node for p in predictors):
                X, beta, intercept, columns = found
                predictors.append(Predictor(base, X, beta, intercept, columns, tuple(blocks),
                                            tuple(k[0] for k in kinds), tuple(k[1] for k in kinds),
                                            tuple(k[2] for k in kinds)))
            return True
        if _elementwise(base):
            before = len(why)
            if all(read(i) for i in base.owner.inputs):
                return True
            if _scalar_op(base) in ("Add", "Sub") and unread:  # a sum of parameters and data: say which term of
                why[before:] = [f"a linear predictor's term, {unread[0]}"]  # the predictor was not read
            return False
        why.append(_describe(base, records) + " is neither a linear predictor ([a +] X @ beta, b * x), an elementwise "
                   "function of one, nor a parameter shared by the records")
        return False

    for label, param in _named_parameters(rv):
        base = _strip(param)
        if not has_parameters(base) and not record_free(base):  # per-record data as the parameter itself
            why.append(f"its parameter {label!r} is data of each record (a per-record {label}, as a Binomial's "
                       "trial counts would be): the route reads the records' data only through a linear "
                       "predictor, X @ beta or b * x; per-record parameters of the likelihood are not supported yet")
            return None
    if not all(read(p) for p in dist_params(rv)):
        return None
    if not predictors:
        why.append("no parameter of its likelihood is a function of a linear predictor (X @ beta or b * x with data "
                   "of one row per record)")
        return None
    return GlmStructure(rv, predictors, nuisances)


def _group_term(term: Any, column: int, records: int, context: tuple[list, list],
                blocks: list[tuple[int, int]], kinds: list[tuple] | None = None) -> tuple[np.ndarray, Any, tuple] | None:
    """``(onehot(idx), a, columns)`` for a term ``a[idx]``, ``(onehot(idx) * x, b, columns)`` for a varying slope
    ``b[idx] * x`` (x data with one row per record), else None; its block ``(column, groups)`` is recorded in
    ``blocks`` and ``(members, x or None, index key)`` in ``kinds``.

    The number of groups is the vector's length (public: its dim), never the index's values. A negative index counts
    from the end as PyMC reads it; a record whose index names no group gets member −1 (a row of zeros), which the
    plan replaces by the default record (a function of that record alone).
    """
    from .regression import _columns, _scalar_op, _strip

    base = _strip(term)
    if _scalar_op(base) == "Mul" and len(base.owner.inputs) == 2:
        for indexed, data in (base.owner.inputs, base.owner.inputs[::-1]):
            x = _columns(data, records)
            if x is None or x.shape[1] != 1:
                continue
            found = _indexed_vector(indexed, records, context)
            if found is not None:
                members, operand, groups, key = found
                return _record_block(members, operand, groups, key, column, blocks, kinds,
                                     np.asarray(x[:, 0], dtype=float))
        return None
    found = _indexed_vector(term, records, context)
    if found is None:
        return None
    members, operand, groups, key = found
    return _record_block(members, operand, groups, key, column, blocks, kinds, None)


def _indexed_vector(term: Any, records: int, context: tuple[list, list]) -> tuple | None:
    """``(members, vector, groups, key)`` for ``vector[idx]`` with ``vector`` the model's parameters of a public
    length and ``idx`` a per-record index, else None."""
    from ._graph import data_leaves
    from .group_index import _index_values, _indexing
    from .regression import _strip

    base = _strip(term)
    found = _indexing(base.owner, records) if base.owner is not None else None
    if found is None:
        return None
    operand, leaf = found
    if data_leaves([operand], blockers=context[0], record_counts=[records], public=context[1]):
        return None  # the indexed vector must be the model's parameters (or public data of the groups)
    groups = _static_length(operand, records, context[1])
    if groups is None:  # a length that cannot be computed from the model's public sizes alone
        return None
    index = np.asarray(_index_values(leaf, records), dtype=np.int64)
    index = np.where((index < 0) & (index >= -groups), index + groups, index)
    members = np.where((index >= 0) & (index < groups), index, -1)
    return members, operand, groups, id(leaf)


def _record_block(members: np.ndarray, operand: Any, groups: int, key: int, column: int,
                  blocks: list[tuple[int, int]], kinds: list[tuple] | None,
                  scale: np.ndarray | None) -> tuple[np.ndarray, Any, tuple]:
    from .regression import _coefficient_name

    valid = members >= 0
    design = np.zeros((len(members), groups))
    design[np.flatnonzero(valid), members[valid]] = 1.0 if scale is None else scale[valid]
    blocks.append((column, groups))
    if kinds is not None:
        kinds.append((members, scale, key))
    name, dim = _coefficient_name(operand)
    name = getattr(operand, "name", None) or name  # a Deterministic's name, before its wrapper is stripped
    return design, operand, tuple((name, dim, g) for g in range(groups))


def _static_length(vector: Any, records: int, public: Sequence[Any]) -> int | None:
    """The length of a vector of the model's parameters from the graph's shapes alone (no values drawn), or None
    where it cannot be computed so or reads data (``shape=idx.max() + 1`` with ``idx`` the records' index: the
    number of groups would then follow the records). ``public`` are the model's dim lengths."""
    from pytensor.graph.rewriting.utils import rewrite_graph

    from ._graph import ancestors, data_leaves

    from pytensor.graph.basic import clone_get_equiv
    from pytensor.tensor.random.op import RandomVariable

    sizes = [v.owner.inputs[1] for v in ancestors([vector]) if v.owner is not None
             and isinstance(v.owner.op, RandomVariable)]  # the sizes the vector's shape comes from, before folding
    try:
        # rewritten on a copy of the graph's nodes sharing its leaves (the dims' lengths stay the model's own, and the
        # model's graph is not rewritten in place: PyMC 5 cannot rebuild a model whose graph was)
        shape = vector.shape[0]
        leaves = [v for v in ancestors([shape]) if v.owner is None]
        copied = clone_get_equiv(leaves, [shape], copy_inputs=False, copy_orphans=False)[shape]
        length = rewrite_graph(copied, include=("canonicalize", "ShapeOpt"))
    except Exception:
        return None
    if data_leaves([length, *sizes], record_counts=[records], public=public):
        return None
    if vector.type.shape[0] is not None:  # known to the graph (a fixed shape=, or one PyTensor inferred)
        return int(vector.type.shape[0])
    if any(v.owner is None and not hasattr(v, "get_value") and not hasattr(v, "data") for v in ancestors([length])):
        return None  # still read through a variable's value
    try:
        return evaluate_int(length)
    except Exception:
        return None


def _without_fixed_shapes(var: Any) -> Any:
    """``var`` with the records' count dropped from its shape assertions, so any number of records (a chunk, the
    bounds' corners) can be passed."""
    from pytensor.graph.replace import clone_replace
    from pytensor.tensor.shape import SpecifyShape

    from ._graph import ancestors

    fixed = {v: v.owner.inputs[0] for v in ancestors([var]) if v.owner is not None and isinstance(v.owner.op, SpecifyShape)}
    return clone_replace([var], replace=fixed, rebuild_strict=False)[0] if fixed else var


#: Scalar ops Numba runs in Python's object mode, one record at a time (PyTensor 3 ships no Numba kernel for them):
#: the second derivatives of a negative binomial's or Gamma's log-likelihood in a shape parameter (the trigamma).
#: Their graphs compile with PyTensor's C backend instead: 10⁵ records' trigamma took 4.1 s under Numba, 6 ms in C.
_OBJECT_MODE_SCALARS = ("TriGamma", "PolyGamma")


def _mode_for(outputs: Sequence[Any]) -> str | None:
    """``"CVM"`` (PyTensor's C backend) when the graph holds a scalar op of :data:`_OBJECT_MODE_SCALARS`, else the
    default mode."""
    from pytensor.graph.traversal import ancestors

    for var in ancestors(outputs):
        scalar = getattr(getattr(var.owner, "op", None), "scalar_op", None)
        if scalar is not None and type(scalar).__name__ in _OBJECT_MODE_SCALARS:
            return "CVM"
    return None


class RecordDerivatives:
    """Each record's score and information in φ for a :class:`GlmStructure` of a model's observed variable.

    ``model`` supplies the nuisances' transforms. Call with a point φ and records (y, designs) to get the
    per-record scores (n, d) and upper triangles of the per-record information −∇²ℓ_i (n, d(d+1)/2).
    """

    def __init__(self, structure: GlmStructure, transform_of: Callable[[Any], Any]):
        import pymc as pm
        import pytensor
        import pytensor.tensor as pt
        try:  # PyTensor >= 3: Rop is called pushforward
            from pytensor.gradient import pushforward as _push

            def pushforward(f: Any, wrt: Any, v: Any) -> Any:
                return _push(f, wrt, v, disconnected_outputs="ignore", return_disconnected="zero")
        except ImportError:  # pragma: no cover - PyTensor 2.38
            from pytensor.gradient import Rop

            def pushforward(f: Any, wrt: Any, v: Any) -> Any:
                return Rop(f, wrt, v, disconnected_outputs="ignore", return_disconnected="zero")

        from ..families.base import dist_params
        from .loglik_clip import _without_parameter_checks
        from pytensor.graph.replace import clone_replace

        self.structure = structure
        m, q = len(structure.predictors), len(structure.nuisances)
        etas = [pt.dvector(f"eta_{j}") for j in range(m)]
        units = [pt.dscalar(f"u_{k}") for k in range(q)]
        replace = {p.node: e for p, e in zip(structure.predictors, etas)}
        for v, u in zip(structure.nuisances, units):
            transform = transform_of(v)
            value = transform.backward(u, *_rv_of(v).owner.inputs) if transform is not None else u
            replace[v] = pt.cast(value, v.dtype)
        rv = structure.rv
        observed = pt.dvector("y")
        params = clone_replace(dist_params(rv), replace=replace, rebuild_strict=False)
        # no fixed number of records; make_node: the same call on PyTensor 2 and 3 (3's __call__ warns unless
        # given return_next_rng=, which 2's does not take)
        new_rv = rv.owner.op.make_node(rv.owner.inputs[0], None, *params).default_output()
        terms = pm.logp(new_rv, pt.cast(observed, rv.dtype) if rv.dtype.startswith("int") else observed,
                        warn_rvs=False)
        terms = _without_parameter_checks(_without_fixed_shapes(terms))  # an invalid row is its own NaN, not all's
        # Forward-mode derivatives: along η (elementwise in the records) and along a shared u they are each
        # record's own partial derivative, a vector over the records.
        locals_ = etas + units
        units_of = [pt.ones_like(e) for e in etas] + [pt.constant(1.0) for _ in units]

        def along(expr: Any, a: int) -> Any:
            return pushforward(expr, locals_[a], units_of[a])

        from pytensor.graph.utils import MethodNotDefined

        try:
            first = [along(terms, a) for a in range(m + q)]
            second = [along(first[a], b) for a in range(m + q) for b in range(m + q)]
        except (MethodNotDefined, NotImplementedError) as err:  # a Bessel function's (Rice, VonMises), a custom op's
            raise ValueError(
                f"observed variable {rv.name!r}: its log-density has no derivative in PyTensor ({type(err).__name__}: "
                f"{err}), and the measurements route releases the records' scores and information. Use a route "
                "that needs no derivative of it: method='ops' with loglik_clip=(lower, upper), or method='saa'."
            ) from None
        outputs = [terms, *first, *second]
        self._fn = pytensor.function([observed, *locals_], outputs, on_unused_input="ignore",
                                     mode=_mode_for(outputs))
        self.local_size = m + q
        self.dimension = structure.dimension

    def terms(self, y: np.ndarray, *local: Any) -> np.ndarray:
        """The log-likelihood's terms at outcomes ``y`` and local parameters (one η per predictor, then each nuisance's
        unconstrained value), elementwise: for probing the likelihood's form at public values."""
        return np.asarray(self._fn(np.asarray(y, dtype=float), *local)[0])

    def _jacobian(self, designs: Sequence[np.ndarray]) -> np.ndarray:
        """(n, p, d): each record's local parameters (η per predictor, u per nuisance) as linear maps of φ."""
        n = designs[0].shape[0]
        dimension = sum(X.shape[1] for X in designs) + self.local_size - len(designs)  # a collapsed design too
        out = np.zeros((n, self.local_size, dimension))
        col = 0
        for j, X in enumerate(designs):
            out[:, j, col:col + X.shape[1]] = X
            col += X.shape[1]
        for k in range(self.local_size - len(designs)):
            out[:, len(designs) + k, col + k] = 1.0
        return out

    def __call__(self, point: np.ndarray, y: np.ndarray, designs: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        from ..mechanisms.private_newton import vech

        point = np.asarray(point, dtype=float)
        n, p = len(y), self.local_size
        args, col = [], 0
        for X in designs:
            args.append(X @ point[col:col + X.shape[1]])
            col += X.shape[1]
        for k in range(p - len(designs)):
            args.append(np.float64(point[col + k]))
        with np.errstate(all="ignore"):
            out = self._fn(np.asarray(y, dtype=float), *args)
        terms, first, second = out[0], np.stack(out[1:1 + p], axis=1), np.stack(out[1 + p:], axis=1).reshape(n, p, p)
        bad = ~np.isfinite(terms)
        A = self._jacobian(designs)
        with np.errstate(all="ignore"):
            scores = np.einsum("np,npd->nd", first, A)
            information = -np.einsum("npq,npd,nqe->nde", second, A, A)
        scores[bad] = np.nan  # a record outside the likelihood's support: its terms are set to 0 when clipped
        information = vech(information)
        information[bad] = np.nan
        return scores, information

    def chunks(self, point: np.ndarray, y: np.ndarray, designs: Sequence[np.ndarray],
               size: int | None = None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """The records' derivatives at ``point`` in chunks of ``size`` records (by default as many as keep a chunk's
        information, records × d², to about 4·10⁶ numbers)."""
        size = size or int(np.clip(4_000_000 // max(self.dimension, 1) ** 2, 256, 20_000))
        for start in range(0, len(y), size):
            stop = start + size
            yield self(point, y[start:stop], [X[start:stop] for X in designs])
