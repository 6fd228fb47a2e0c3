"""Group-indexed likelihoods: ``a[county_idx]`` read as one likelihood per group.

A hierarchy written the gallery's way, ``pm.Normal("y", mu=a[county_idx] + b * x, sigma=s,
observed=y)``, gives every record the parameters of its group: ``county_idx`` is a per-record
integer array (NumPy or ``pm.Data``), ``a`` a vector of the parameters with one entry per
group (a dim's length, public). The records of group g are a likelihood of their own whose
parameters are shared by all of them — ``mu = a[g] + b * x`` — which the Laplace route
privatises like any other (:mod:`pymc_dp.model.privatize_model`); the groups' records are
disjoint, so their releases compose in parallel (:mod:`pymc_dp.families.grouped`).

:func:`group_index_of` finds the index (one per-record integer array indexing parameter
vectors of one length), :func:`group_view` rewrites a parameter graph for group g: each
``v[idx]`` becomes the scalar ``v[g]``, everything built on it is rebuilt by its own op
(elementwise arithmetic broadcasts the scalar against the records).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .regression import _strip, leaf_value, same_data
from .._evaluate import evaluate_int

__all__ = ["GroupIndex", "group_index_of", "group_view", "observed_group_view", "sum_of_group_terms",
           "stack_group_outputs", "natively_batched"]

_INDEXING = ("AdvancedSubtensor1", "AdvancedSubtensor")


@dataclass(frozen=True)
class GroupIndex:
    """A per-record group index: which leaf holds it, how many groups, and their public names."""

    leaf: Any
    size: int
    dim: str | None
    labels: tuple[str, ...]

    def label(self, g: int) -> str:
        """The public name of group ``g`` (its coordinate label, else its number)."""
        return self.labels[g] if g < len(self.labels) else str(g)


def _index_values(var: Any, records: int) -> np.ndarray | None:
    """The values of a per-record integer data leaf (NumPy constant or ``pm.Data``), else None."""
    value = leaf_value(var)
    if value is None or value.ndim != 1 or value.shape[0] != records or value.dtype.kind not in "iu":
        return None
    return value


def _indexing(node: Any, records: int) -> tuple[Any, Any] | None:
    """``(operand, index leaf)`` where ``node`` is ``v[idx]``: a vector indexed by a per-record integer array."""
    if type(node.op).__name__ not in _INDEXING or len(node.inputs) != 2:
        return None
    operand, index = node.inputs
    if operand.type.ndim != 1 or _index_values(index, records) is None:
        return None
    return operand, _strip(index)



def _indexings(outputs: Sequence[Any], records: int, blockers: Sequence[Any]) -> list[tuple[Any, Any]]:
    from pytensor.graph.traversal import applys_between

    return [found for node in applys_between(list(blockers), list(outputs))
            if (found := _indexing(node, records)) is not None]


def group_index_of(params: Sequence[Any], records: int, blockers: Sequence[Any], model: Any = None) -> GroupIndex | None:
    """The one group index of a likelihood's parameters, or None where they index nothing by record.

    Raises
    ------
    ValueError
        Where two different per-record arrays index parameters (crossed effects: the records
        are not split into disjoint groups by one index), or the indexed vectors differ in length.
    """
    found = _indexings(params, records, blockers)
    if not found:
        return None
    # one index written twice (a NumPy array becomes a new constant at each use) is one index: recognised by where
    # its values live (the same variable, or the same array in memory), never by the values, which are the records'
    leaves: list[Any] = []
    for _, leaf in found:
        if not any(same_data(leaf, other) for other in leaves):
            leaves.append(leaf)
    if len(leaves) > 1:
        raise ValueError(
            "its parameters are indexed by more than one per-record array (crossed effects such as a[i] + c[j]): the "
            "Laplace route splits the records into disjoint groups by one index. Two arrays are one index only when "
            "they are the same array (or the same pm.Data): pmdp does not compare the records' values to decide"
        )
    lengths = set()
    for operand, _ in found:
        length = operand.type.shape[0]
        if length is None:
            length = _dim_length(operand, model, blockers)
        if length is None:
            try:
                length = evaluate_int(operand.shape[0])
            except Exception:  # a length that depends on data or cannot be computed: not a group vector
                length = None
        lengths.add(length)
    if None in lengths or len(lengths) != 1:
        raise ValueError(
            "the vectors its group index selects from do not have one fixed length (give them dims=, the groups)"
        )
    leaf = leaves[0]
    size = lengths.pop()
    dim, labels = _dim_of(found[0][0], size, model, blockers)
    return GroupIndex(leaf=leaf, size=size, dim=dim, labels=labels)


def _named_dims(operand: Any, model: Any, blockers: Sequence[Any]) -> list[str]:
    """The one dim of the indexed vector, or of the model's vectors it is built from (a non-centred
    ``a = mu_a + sigma_a * z`` has z's), nearest first."""
    from ._graph import ancestors

    if model is None:
        return []
    named = getattr(model, "named_vars_to_dims", {})
    found = []
    for var in [_strip(operand), *ancestors([operand], blockers=list(blockers))]:
        dims = named.get(getattr(var, "name", None) or "", ())
        if len(dims) == 1 and dims[0] is not None and var.type.ndim == 1 and dims[0] not in found:
            found.append(dims[0])
    return found


def _dim_length(operand: Any, model: Any, blockers: Sequence[Any]) -> int | None:
    """The length of the indexed vector's dim (public, read from the model without compiling anything)."""
    for dim in _named_dims(operand, model, blockers):
        length = getattr(model, "dim_lengths", {}).get(dim)
        if length is not None and hasattr(length, "get_value"):
            return int(length.get_value())
    return None


def _dim_of(operand: Any, size: int, model: Any, blockers: Sequence[Any] = ()) -> tuple[str | None, tuple[str, ...]]:
    """The dim (and its labels) of the indexed vector, where the model names one of that length."""
    for dim in _named_dims(operand, model, blockers):
        labels = tuple(str(v) for v in (model.coords.get(dim) or ()))
        if len(labels) == size:
            return dim, labels
    return None, ()


def group_view(outputs: Sequence[Any], records: int, g: int) -> list[Any]:
    """``outputs`` for the records of group ``g``: each ``v[idx]`` replaced by ``v[g]``, the rest rebuilt.

    A node whose inputs did not change is kept. A ``DimShuffle`` or shape check of a group-indexed
    vector is dropped (its scalar replacement broadcasts where the vector did).

    Raises
    ------
    ValueError
        Where an operation cannot take the scalar (the index is used other than to select a
        group's parameters).
    """
    from pymc.model.fgraph import ModelVar
    from pytensor.tensor.elemwise import DimShuffle

    memo: dict[Any, Any] = {}

    def view(var: Any) -> Any:
        if var in memo:
            return memo[var]
        node = var.owner
        if node is None:
            out = var
        elif (found := _indexing(node, records)) is not None:
            out = view(found[0])[g]
        else:
            inputs = [view(i) for i in node.inputs]
            if all(a is b for a, b in zip(inputs, node.inputs)):
                out = var
            elif isinstance(node.op, ModelVar):  # a named model variable (a Deterministic): its group's value,
                out = inputs[0]                   # unnamed, so that no name is added once per group
            elif (isinstance(node.op, DimShuffle) or type(node.op).__name__ == "SpecifyShape") \
                    and inputs[0].type.ndim < node.inputs[0].type.ndim:
                out = inputs[0]
            else:
                try:
                    out = node.op.make_node(*inputs).outputs[node.outputs.index(var)]
                except Exception as err:
                    raise ValueError(
                        f"its group index reaches {type(node.op).__name__}, which cannot take one group's "
                        f"parameters ({type(err).__name__})"
                    ) from None
        memo[var] = out
        return out

    return [view(o) for o in outputs]


def observed_group_view(rv: Any, records: int, g: int) -> Any:
    """The observed variable ``rv`` as a distribution of group ``g``'s records (its parameters' group view)."""
    node = rv.owner
    rng, size, *params = node.inputs
    viewed = group_view(params, records, g)
    return node.op.make_node(rng, size, *viewed).outputs[node.outputs.index(rv)]


def _roots(var: Any) -> list[Any]:
    """The leaves and model variables ``var`` is built from, in a fixed (depth-first) order."""
    from pymc.model.fgraph import ModelVar

    order, seen, stack = [], set(), [var]
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        node = v.owner
        if node is None or isinstance(node.op, ModelVar):
            order.append(v)
        else:
            stack.extend(reversed(node.inputs))
    return order


def sum_of_group_terms(terms: Sequence[Any]) -> Any:
    """Σ_g ``terms[g]``, computed as one term vectorised over the groups where they are copies of one graph.

    Each group's log-likelihood is the same graph built on the group's own inputs (its parameters ``v[g]``,
    its released numbers, its latent variables). Compiled as G separate graphs, the gradient's compilation
    grows with G (about 100 s for 20 regression groups); vectorised, it is that of one group
    (:func:`stack_group_outputs`). Where the graphs do not match, or PyTensor cannot vectorise one of their
    operations, the plain sum is returned: the same value, compiled group by group.
    """
    import pytensor.tensor as pt

    terms = [pt.as_tensor_variable(t) for t in terms]
    if len(terms) == 1:
        return terms[0]
    (stacked,) = stack_group_outputs([[t] for t in terms])
    return stacked.sum()


def stack_group_outputs(outputs: Sequence[Sequence[Any]]) -> list[Any]:
    """Each of the groups' outputs stacked over the groups (a new first axis), vectorised where they match.

    ``outputs[g]`` are group g's outputs (the same graphs built on each group's own inputs). Their inputs
    are matched position by position (:func:`_roots`); those that differ between groups are stacked along a
    new first axis and group 0's outputs are vectorised over it (``pytensor.graph.replace.vectorize_graph``).
    Where the graphs do not match, or PyTensor cannot vectorise one of their operations, each output is
    ``pt.stack`` of the groups' own: the same values, compiled group by group.
    """
    import pytensor.tensor as pt
    from pytensor.graph.basic import Constant
    from pytensor.graph.replace import vectorize_graph

    outputs = [[pt.as_tensor_variable(o) for o in group] for group in outputs]
    plain = [pt.stack([group[k] for group in outputs]) for k in range(len(outputs[0]))]
    if len(outputs) == 1:
        return plain
    roots = [_roots(_joined(group)) for group in outputs]
    if any(len(r) != len(roots[0]) for r in roots):
        return plain
    replace = {}
    for k, first in enumerate(roots[0]):
        column = [r[k] for r in roots]
        if all(c is first for c in column):
            continue
        if all(isinstance(c, Constant) for c in column) and all(
                c.data.shape == first.data.shape and np.array_equal(c.data, first.data) for c in column):
            continue
        if any(c.type.ndim != first.type.ndim or c.type.dtype != first.type.dtype for c in column):
            return plain
        replace[first] = pt.stack(column)
    try:
        batched = vectorize_graph(list(outputs[0]), replace=replace)
    except Exception:  # an operation PyTensor cannot vectorise: each group compiled on its own
        return plain
    if any(b.type.ndim != o.type.ndim + 1 for b, o in zip(batched, outputs[0])):
        return plain
    return natively_batched(list(batched))


def natively_batched(outputs: Sequence[Any]) -> list[Any]:
    """``outputs`` with the Blockwise joins, diagonals, vectors and per-group entries that vectorisation left
    written as batched ops.

    PyTensor vectorises a ``Join`` of batched and unbatched inputs (a group's sums beside the constant count
    coordinate), an ``AllocDiag``, a ``MakeVector`` of scalars and a ``Subtensor`` at a per-group position
    (``a[g]``) as a ``Blockwise``, which runs as a loop over the groups, its gradient too (a 20-group
    regression's log density and gradient: 10.5 ms, 0.67 ms after). Here the unbatched inputs are broadcast
    over the groups and the op is applied past the batch axes (the entry as a one-hot sum), which compiles.
    Every other node is kept, variables the outputs do not change are not copied, and a node whose batched
    form cannot be built (another PyTensor's op) stays as it was.
    """
    try:
        from pytensor.graph.traversal import graph_inputs, io_toposort
    except ImportError:  # PyTensor 2 (PyMC 5)
        from pytensor.graph.basic import graph_inputs, io_toposort
    from pytensor.tensor.blockwise import Blockwise

    memo: dict[Any, Any] = {}
    for node in io_toposort(list(graph_inputs(outputs)), list(outputs)):
        inputs = [memo.get(i, i) for i in node.inputs]
        new = None
        if isinstance(node.op, Blockwise) and _batchable(node.op.core_op, node):
            try:
                new = [_batched(node, inputs)]
            except Exception:  # a form this PyTensor builds differently: the Blockwise is kept
                new = None
        if new is None:
            if all(a is b for a, b in zip(inputs, node.inputs)):
                continue
            new = node.clone_with_new_inputs(inputs).outputs
        memo.update(zip(node.outputs, new))
    return [memo.get(o, o) for o in outputs]


def _batched(node: Any, inputs: list[Any]) -> Any:
    """The output of the Blockwise ``node`` (on ``inputs``) computed by the batched form of its core op."""
    import pytensor.tensor as pt
    from pytensor.tensor.basic import AllocDiag, Join, MakeVector, alloc_diag, get_underlying_scalar_constant_value

    op, out = node.op, node.outputs[0]
    batch = out.type.ndim - len(op.outputs_sig[0])
    signatures = list(op.inputs_sig)
    core = op.core_op
    if isinstance(core, Join) and not hasattr(core, "axis"):  # PyTensor 2: the axis is the first input
        axis = int(get_underlying_scalar_constant_value(inputs[0]))  # raises where it is computed
        inputs, signatures = inputs[1:], signatures[1:]
    else:
        axis = getattr(core, "axis", None)
    shape = _batch_shape(inputs, signatures, batch)
    padded = [pt.shape_padleft(x, batch - (x.type.ndim - len(sig))) for x, sig in zip(inputs, signatures)]
    if isinstance(core, MakeVector):
        result = pt.stack([pt.broadcast_to(x, shape) for x in padded], axis=-1)
    elif isinstance(core, Join):
        result = pt.concatenate([pt.broadcast_to(x, shape + tuple(x.shape[batch:])) for x in padded],
                                axis=axis + batch)
    elif isinstance(core, AllocDiag):
        result = alloc_diag(pt.broadcast_to(padded[0], shape + (padded[0].shape[-1],)), offset=core.offset,
                               axis1=core.axis1 + batch, axis2=core.axis2 + batch)
    else:  # x[g], g one per group: a one-hot sum over the indexed axis, elementwise
        x, g = padded
        g = pt.switch(pt.lt(g, 0), g + x.shape[batch], g)  # a negative position counts from the end
        onehot = pt.eq(pt.arange(x.shape[batch]), pt.shape_padright(g))
        onehot = pt.shape_padright(onehot, x.type.ndim - batch - 1)
        result = pt.sum(pt.where(onehot, x, pt.zeros((), dtype=x.dtype)), axis=batch)
    result = pt.cast(result, out.type.dtype)
    if result.type.ndim != out.type.ndim:
        raise ValueError("the batched form has another shape")
    return result


def _batch_shape(inputs: Sequence[Any], signatures: Sequence[Any], batch: int) -> tuple[Any, ...]:
    """The batch shape of a Blockwise's inputs (each axis the largest of theirs: 1 broadcasts), read from the
    inputs alone so that the Blockwise being replaced is not kept in the graph by a reference to its shape."""
    import pytensor.tensor as pt

    shape = []
    for axis in range(batch):
        sizes = [x.shape[x.type.ndim - len(sig) - batch + axis] for x, sig in zip(inputs, signatures)
                 if x.type.ndim - len(sig) - batch + axis >= 0]
        size = sizes[0]
        for other in sizes[1:]:
            size = pt.maximum(size, other)
        shape.append(size)
    return tuple(shape)


def _batchable(core: Any, node: Any) -> bool:
    """Whether :func:`natively_batched` rewrites this Blockwise's core op: a join, a diagonal of a vector, a
    vector of scalars, or one entry (or row) read at a per-group position."""
    from pytensor.tensor.basic import AllocDiag, Join, MakeVector
    from pytensor.tensor.subtensor import Subtensor

    if isinstance(core, Subtensor):
        return (len(core.idx_list) == 1 and not isinstance(core.idx_list[0], slice) and len(node.inputs) == 2
                and len(node.op.inputs_sig[0]) >= 1)
    if isinstance(core, AllocDiag):
        return len(node.op.inputs_sig[0]) == 1
    return isinstance(core, (Join, MakeVector))


def _joined(group: Sequence[Any]) -> Any:
    """One variable built from all of ``group``'s outputs, for :func:`_roots` to walk them in one fixed order."""
    import pytensor.tensor as pt

    return pt.concatenate([pt.cast(o, "float64").ravel() for o in group]) if len(group) > 1 else group[0]
