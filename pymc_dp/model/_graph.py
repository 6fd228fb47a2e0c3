"""Walking PyTensor graphs: where private data enters them, and what must not be in a density."""

from __future__ import annotations

import contextlib
import contextvars
from typing import Any, Iterable, Iterator, Sequence

import numpy as np
from .._evaluate import evaluate_int

__all__ = ["DroppedDeterministicWarning", "ancestors", "data_leaves", "describe_leaf", "dim_lengths", "group_level_data", "only_constants",
           "random_variables_in"]


class DroppedDeterministicWarning(UserWarning):
    """A Deterministic computed from the records was left out of a private model or a released trace: releasing
    it would release the records. Filter on this class to silence it where that is expected."""


def ancestors(graphs: Sequence[Any], blockers: Iterable[Any] = ()) -> list[Any]:
    """Every variable ``graphs`` depend on, stopping at ``blockers``, and the leaves of the inner graphs of the
    ops among them (``OpFromGraph``, PyMC's symbolic distributions, ``Scan``): data an inner graph closes over is
    data the model reads, so every check on the model's data sees it."""
    try:  # pytensor >= 2.31
        from pytensor.graph.traversal import ancestors as walk
    except ImportError:  # pragma: no cover
        from pytensor.graph.basic import ancestors as walk
    out = list(walk(list(graphs), blockers=list(blockers)))
    seen = set(out)
    for var in list(out):
        op = getattr(var.owner, "op", None)
        inner = getattr(op, "inner_outputs", None)
        if not inner:
            continue
        own = set(getattr(op, "inner_inputs", ()))
        for leaf in ancestors(list(inner)):
            if leaf.owner is None and leaf not in own and leaf not in seen:
                seen.add(leaf)
                out.append(leaf)
    return out


def random_variables_in(graphs: Sequence[Any]) -> list[str]:
    """Names of the random variables left in ``graphs`` (a log density must have none).

    A random variable in a compiled log density is drawn afresh at every evaluation, so the
    density is random: no sampler targets it and no privacy proof about it holds. PyMC's
    model densities replace every random variable by its value; a potential built with
    ``pm.logp`` of a symbolic distribution (a random walk, say) can keep clones that it cannot.
    """
    try:
        from pymc.logprob.basic import _find_unallowed_rvs_in_graph as find  # the check pm.logp warns with
    except ImportError:  # pragma: no cover - a PyMC that moved it: every RandomVariable counts
        from pytensor.tensor.random.op import RandomVariable

        def find(graph: Any) -> set[Any]:
            return {v for v in ancestors(graph) if v.owner is not None and isinstance(v.owner.op, RandomVariable)}
    return sorted(str(var) for var in find(list(graphs)))


#: Below this many entries a constant is not taken for records by its size alone (a
#: hyperparameter vector of a small model); exact record lengths are data at any size.
_MIN_DERIVED = 10

#: Set while a request under add/remove neighbouring is checked (:func:`number_of_records_private`): N is
#: private, so no check may compare a size with it (a refusal would answer "is N = k?" for free).
_N_PRIVATE: contextvars.ContextVar[bool] = contextvars.ContextVar("pymc_dp_n_private", default=False)


@contextlib.contextmanager
def number_of_records_private(private: bool = True) -> Iterator[None]:
    """Within the block (when ``private``), the checks of this module compare no size with the number of records.

    Under add/remove neighbouring N is private: a check that refused a model because an array
    or a dim has N entries, give or take one, would tell N to whoever varies that length, at no
    cost. Within the block :func:`data_leaves` takes a constant for records by its size alone
    (:data:`_MIN_DERIVED` entries or more), :func:`record_dims` are the observed variables' own
    first dims (by name), and :func:`group_level_data` is a container whose dims are all other
    dims (by name), when every observed variable names its first dim.
    """
    token = _N_PRIVATE.set(_N_PRIVATE.get() or bool(private))
    try:
        yield
    finally:
        _N_PRIVATE.reset(token)


def n_is_private() -> bool:
    """Whether the checks run under :func:`number_of_records_private`."""
    return _N_PRIVATE.get()


def data_leaves(
    graphs: Sequence[Any],
    blockers: Iterable[Any] = (),
    record_counts: Iterable[int] = (),
    public: Iterable[Any] = (),
    records: Sequence[Any] | None = None,
) -> list[Any]:
    """Leaves of ``graphs`` that carry record data.

    Those are shared variables other than random generators (``pm.Data``
    containers and the like) and constant arrays that look like records: whose first
    dimension is one of ``record_counts`` (NumPy record data passed straight into a
    model, such as a covariate column), or with at least N − 1 entries (and at least
    10) for the smallest record count N (records sliced, sorted, transformed or transposed, such
    as ``np.log(y)``, ``y[1:]`` or a features × records matrix). Other constants (prior
    hyperparameters such as a Dirichlet's concentration vector) are taken to be public. The walk stops at ``blockers``
    (e.g. the model's free random variables). Leaves in ``public`` are not data: the
    lengths of a model's dims (:func:`dim_lengths`, shared scalars on PyMC 6) are sizes
    the model declares, not records. With ``records`` (the observed arrays), a constant
    of exactly a record length counts only if it equals one of them (for priors, whose
    hyperparameter vectors may have N entries in a small model); the size rule stays.
    """
    from pytensor.compile.sharedvalue import SharedVariable
    from pytensor.graph.basic import Constant
    from pytensor.tensor.random.type import RandomType

    private = n_is_private()  # N private: sizes are not compared with it, a large constant is records
    counts = set() if private else {int(c) for c in record_counts if int(c) > 1}
    skip = set(public)
    out = []
    for var in ancestors(graphs, blockers):
        if var.owner is not None or var in skip:
            continue
        if isinstance(var, SharedVariable) and not isinstance(var.type, RandomType):
            out.append(var)
        elif isinstance(var, Constant) and private:
            if int(np.size(getattr(var, "data", None))) >= _MIN_DERIVED:
                out.append(var)
        elif isinstance(var, Constant) and counts:
            shape = np.shape(getattr(var, "data", None))
            if not shape:
                continue
            if int(np.prod(shape)) >= max(min(counts) - 1, _MIN_DERIVED):
                out.append(var)
            elif shape[0] in counts and (
                records is None or any(np.shape(r) == shape and np.array_equal(var.data, r) for r in records)
            ):
                out.append(var)
    return out


def dim_lengths(model: Any) -> list[Any]:
    """The variables holding the lengths of ``model``'s dims (declared sizes, not data), and group-level data.

    Group-level data is a ``pm.Data`` container declared with dims none of which is as
    long as an observed variable's records (``pm.Data("uranium", u, dims="county")``):
    a covariate of the groups, public like the dims themselves. Any other container is data.
    """
    return list(getattr(model, "dim_lengths", {}).values()) + group_level_data(model)


#: The attribute of a privatised model copy naming the ``pm.Data`` containers the analyst declared public.
PUBLIC_DATA = "_pymc_dp_public_data"
#: The attribute of a privatised model copy naming the dims that ran along the original model's records.
RECORD_DIMS = "_pymc_dp_record_dims"


def record_dims(model: Any) -> frozenset[str]:
    """The dims along the records, whose labels are data (identifiers of the records).

    Each observed variable's first dim, every dim as long as an observed variable's
    records give or take one (a per-record latent's dim beside an observed variable
    declared without dims; a random walk's innovations or a sum-to-zero vector, N − 1
    long), and those a model copy inherited. A group dim that happens to have such a
    length is counted too: renumbering its labels loses nothing private.
    """
    dims_of = getattr(model, "named_vars_to_dims", {})
    first = {(dims_of.get(rv.name) or (None,))[0] for rv in getattr(model, "observed_RVs", [])}
    if n_is_private():  # N private: by name only
        return frozenset(d for d in first if d) | frozenset(getattr(model, RECORD_DIMS, ()))
    records = {n + k for n in _record_lengths(model) for k in (-1, 0, 1)}  # innovations, sum-to-zero: N - 1
    as_long = {d for d, length in getattr(model, "dim_lengths", {}).items() if _length(length) in records}
    return frozenset(d for d in first | as_long if d) | frozenset(getattr(model, RECORD_DIMS, ()))


def _length(var: Any) -> int | None:
    """The value of a dim length (a shared or constant scalar), or None if it is neither."""
    value = var.get_value(borrow=True) if hasattr(var, "get_value") else getattr(var, "data", None)
    return int(np.asarray(value)) if value is not None and np.ndim(value) == 0 else None


def _record_lengths(model: Any) -> set[int]:
    """The numbers of records of the model's observed variables (their first axes).

    Read from the observed values whatever they are: data, a constant, or an expression
    of ``pm.Data`` containers (``observed=d[:, 0]``), whose length is evaluated.
    """
    records = set()
    for rv in getattr(model, "observed_RVs", []):
        value = model.rvs_to_values.get(rv)
        data = value.get_value(borrow=True) if hasattr(value, "get_value") else getattr(value, "data", None)
        if data is not None:
            if np.ndim(data):
                records.add(int(np.shape(data)[0]))
            continue
        if value is not None and getattr(value.type, "ndim", 0):
            static = value.type.shape[0]
            records.add(int(static) if static is not None else evaluate_int(value.shape[0]))
    return records


def _observed_containers(model: Any) -> set[Any]:
    """The ``pm.Data`` containers an observed value is computed from (the records' own containers)."""
    values = [model.rvs_to_values[rv] for rv in getattr(model, "observed_RVs", []) if rv in model.rvs_to_values]
    data = set(getattr(model, "data_vars", []))
    return {v for v in ancestors(values) if v in data}


def group_level_data(model: Any) -> list[Any]:
    """``pm.Data`` containers declared with dims, none as long as the records (see :func:`dim_lengths`).

    A container an observed value is computed from holds records, whatever its dims.
    """
    observed = _observed_containers(model)
    out = []
    dims_of = getattr(model, "named_vars_to_dims", {})
    if n_is_private():  # N private: by name only, and only where every observed variable names its record dim
        along = record_dims(model)
        if any(not (dims_of.get(rv.name) or (None,))[0] for rv in getattr(model, "observed_RVs", [])):
            return []
        return [v for v in getattr(model, "data_vars", []) if (dims_of.get(v.name) or ()) and v not in observed
                and None not in dims_of[v.name] and not set(dims_of[v.name]) & along
                and _shaped_as_declared(model, v, dims_of[v.name])]
    records = _record_lengths(model)
    for var in getattr(model, "data_vars", []):
        dims = dims_of.get(var.name) or ()
        if not dims or any(d is None for d in dims) or var in observed or not _shaped_as_declared(model, var, dims):
            continue
        lengths = {evaluate_int(model.dim_lengths[d]) for d in dims if d in model.dim_lengths}
        if len(lengths) == len(set(dims)) and not lengths & records:
            out.append(var)
    return out


def _shaped_as_declared(model: Any, var: Any, dims: Sequence[str]) -> bool:
    """Whether a container's values have the lengths its dims declare (PyMC does not insist): a container declared
    with a group dim but holding one value per record is not group-level data."""
    shape = np.shape(var.get_value(borrow=True)) if hasattr(var, "get_value") else ()
    lengths = getattr(model, "dim_lengths", {})
    return len(shape) == len(dims) and all(
        d in lengths and evaluate_int(lengths[d]) == n for d, n in zip(dims, shape))


def describe_leaf(var: Any, graph: Sequence[Any] = ()) -> str:
    """A short human description of a data leaf; an unnamed one by its use in ``graph`` (the variables it feeds,
    e.g. an observed variable) where that says more: ``the index of a[...]``, ``with b``."""
    name = getattr(var, "name", None)
    use = "" if name else _use_in(var, graph)
    if n_is_private():  # a shape could be the number of records
        return repr(name) if name else f"an unnamed array{use}"
    shape = np.shape(getattr(var, "data", None)) if hasattr(var, "data") else np.shape(var.get_value(borrow=True))
    return f"{name!r} (shape {shape})" if name else f"an unnamed array of shape {shape}{use}"


#: Elementwise operations an unnamed per-record array may enter, in words for a refusal.
_OPERATIONS = {"Add": "a term added to others", "Sub": "a term subtracted", "Mul": "a factor of a product",
               "TrueDiv": "in a ratio", "Dot": "in a matrix product", "Exp": "inside exp"}


def _use_in(leaf: Any, graph: Sequence[Any]) -> str:
    """`` (the index of a[...])`` or `` (with b)``: the first node of ``graph`` that reads ``leaf``, in words; empty
    when none says more than the array's shape."""
    seen, stack = set(), list(graph)
    while stack:
        var = stack.pop()
        if id(var) in seen or var.owner is None:
            continue
        seen.add(id(var))
        node = var.owner
        if any(i is leaf for i in node.inputs):
            if type(node.op).__name__.startswith("AdvancedSubtensor") and node.inputs[0] is not leaf:
                indexed = _name_through(node.inputs[0])
                return f" (the index of {indexed}[...])" if indexed else " (an index)"
            others = [n for n in (_name_through(i) for i in node.inputs if i is not leaf) if n]
            if others:
                return f" (with {', '.join(others)})"
            words = _OPERATIONS.get(type(getattr(node.op, "scalar_op", node.op)).__name__)
            return f" ({words})" if words else ""
        stack.extend(node.inputs)
    return ""


def _name_through(var: Any, depth: int = 4) -> str | None:
    """The name of ``var``, or of the one input it was computed from (a cast, a dimshuffle), up to ``depth`` steps."""
    for _ in range(depth):
        if getattr(var, "name", None):
            return var.name
        if var.owner is None or len([i for i in var.owner.inputs if i.owner is not None or i.name]) != 1:
            return None
        var = next(i for i in var.owner.inputs if i.owner is not None or i.name)
    return None


def only_constants(var: Any) -> bool:
    """Whether the graph of ``var`` has constants as its only inputs (no variables, no shared data)."""
    try:
        from pytensor.graph.traversal import graph_inputs
    except ImportError:  # pragma: no cover - older PyTensor
        from pytensor.graph.basic import graph_inputs
    from pytensor.graph.basic import Constant

    return all(isinstance(v, Constant) for v in graph_inputs([var]))
