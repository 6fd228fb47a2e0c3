"""What a record is, and proving that each record's inputs enter only its own log-likelihood terms.

**One meaning of a record** (used by every route): a record of an observed variable is
its row along the first axis *together with* the row of everything aligned with it —
the per-record arrays in the likelihood's parameters (covariates ``X``, a group index
``county_idx``, a per-record number of trials ``n`` or standard error ``sigma``). One
person contributes one such row. Replace-one neighbouring replaces the whole row.

A likelihood whose parameters vary by record (``mu = a + X @ beta``,
``alpha[county_idx]``) has a per-record log-likelihood sensitivity only if row ``i`` of
those arrays reaches record ``i``'s terms and no other: ``X @ beta`` is such a function,
``X - X.mean(0)`` is not (one record's covariates move every mean). :func:`check_record_local`
proves it by walking the graph of the parameters, tracking for every intermediate
which axis (if any) indexes the records:

* a per-record array (first axis of length N) indexes records on axis 0; model
  parameters and public constants index none;
* elementwise operations, broadcasting, ``DimShuffle`` and full slices keep the axis
  (where the broadcast puts it); a matrix product keeps a row axis of one operand
  when the other holds no records; indexing a parameter vector with a per-record
  index array (``alpha[idx]``) gives a per-record result, and so does taking each
  record's own entry (``p[arange(N), y]``, ``take_along_axis``); reductions, joins,
  softmax, cumulative sums and sorts along other axes keep it;
* what an operation does is read from PyTensor's and PyMC's own descriptions of it, not
  from a list: a random variable (the likelihood, a mixture's component, a censored or
  truncated distribution) is batched over its parameters as its signature says
  (``ndims_params``, ``ndim_supp``), a ``Blockwise`` as its gufunc signature says, and an
  op defined by an inner graph (PyMC's symbolic distributions, ``OpFromGraph``) is walked
  through that graph — and refused if the graph closes over data instead of taking it as
  an input;
* anything else that touches a per-record input — a reduction, join, sort, softmax or
  cumulative sum along the records, a slice of the records, records indexing records, a
  product of two per-record operands — is refused, naming the operation as it is written.

Under add/remove neighbouring the number of records is private: it may size a term (an
allocation as long as the records lies along them) but never value one.

Finally the likelihood itself is walked: its draws must carry the records on their first
axis, the observed values'. What is proven is exactly what a log-likelihood clip needs:
one record moves only its own terms.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from ._graph import _MIN_DERIVED

__all__ = [
    "check_record_local", "check_terms_record_local", "RecordLocalityError", "per_record_leaves", "parameter_label",
    "likelihood_label",
]

#: The walk's "no record axis" marker.
SHARED = None
#: The walk's marker of a value that is the number of records (under add/remove); a shape vector holding it is
#: marked ``(records' axis, ndim)``.
COUNT = "the number of records"


#: An array of at least this many entries closed over by an inner graph is taken for data (as a constant of that
#: size is wherever the number of records is private).
_CAPTURED = _MIN_DERIVED


def _is_op_from_graph(op: Any) -> bool:
    from pytensor.compile.builders import OpFromGraph

    return isinstance(op, OpFromGraph)


def _counts_records(axis: Any) -> bool:
    return axis == COUNT or isinstance(axis, tuple)


class RecordLocalityError(ValueError):
    """A per-record input reaches other records' terms (or cannot be proven not to)."""


def _leaf_length(var: Any) -> tuple[int, ...]:
    if hasattr(var, "get_value"):
        return tuple(np.shape(var.get_value(borrow=True)))
    return tuple(np.shape(getattr(var, "data", None)))


def per_record_leaves(leaves: Sequence[Any], records: int) -> tuple[list[Any], list[Any]]:
    """Split data leaves into (aligned with the records: first axis of length ``records``, the others)."""
    aligned, other = [], []
    for leaf in leaves:
        shape = _leaf_length(leaf)
        (aligned if shape and shape[0] == records else other).append(leaf)
    return aligned, other


def _name(var: Any) -> str:
    return repr(var.name) if getattr(var, "name", None) else f"an array of shape {_leaf_length(var)}"


def _constant(var: Any) -> int | None:
    """The integer value of a constant graph input, or None."""
    from pytensor.tensor.basic import get_underlying_scalar_constant_value
    from pytensor.tensor.exceptions import NotScalarConstantError

    try:
        return int(get_underlying_scalar_constant_value(var))
    except (NotScalarConstantError, TypeError, ValueError):
        return None


#: What the user wrote, for the PyTensor operations a refusal names.
_WRITTEN_AS = {
    "Add": "a sum or mean (.sum(), .mean(), +)", "Mul": "a product (.prod() or *)", "Maximum": "a maximum (.max())",
    "Minimum": "a minimum (.min())", "LogSumExp": "logsumexp", "Join": "pt.concatenate / pt.stack",
    "CumOp": "a cumulative sum or product (pt.cumsum)", "SortOp": "pt.sort", "ArgSortOp": "pt.argsort",
    "Softmax": "softmax", "LogSoftmax": "log_softmax", "Subtensor": "slicing (x[1:], x[0])",
    "AdvancedSubtensor": "indexing by an array (a[idx])", "AdvancedSubtensor1": "indexing by an array (a[idx])",
    "IncSubtensor": "pt.set_subtensor / inc_subtensor", "Dot": "a matrix product (@, pt.dot)",
    "Matmul": "a matrix product (@)", "Shape": "a shape (x.shape)", "Shape_i": "a shape (x.shape)",
    "Reshape": "a reshape", "Alloc": "a broadcast to a shape (pt.alloc, pt.zeros)",
}


def _op_label(node: Any) -> str:
    """The operation as the user wrote it where that is known, with PyTensor's name for it."""
    op = node.op
    scalar = getattr(op, "scalar_op", None)
    name = type(scalar).__name__ if scalar is not None else type(op).__name__
    print_name = getattr(op, "_print_name", None)
    if print_name:  # a PyMC distribution inside the likelihood
        return f"a {print_name[0].removeprefix('LoglikClipped')} distribution"
    if type(op).__name__ == "Blockwise":
        core = type(op.core_op).__name__
        return f"{_WRITTEN_AS.get(core, core)} batched over {op.signature}"
    written = _WRITTEN_AS.get(name)
    return f"{written} (PyTensor's {name})" if written else name


class _Walk:
    def __init__(self, aligned: Sequence[Any], blockers: Sequence[Any], neighbouring: str = "replace") -> None:
        self.axis: dict[Any, int | None] = {leaf: 0 for leaf in aligned}
        self.blockers = set(blockers)
        self.neighbouring = neighbouring

    def __call__(self, var: Any) -> int | None:
        if var in self.axis:
            return self.axis[var]
        if var in self.blockers or var.owner is None:
            self.axis[var] = SHARED
            return SHARED
        node = var.owner
        inputs = [self(i) if hasattr(i, "type") else SHARED for i in node.inputs[:1]]
        positional = _positional_indices(node, inputs[0])  # arange(N): positions, not the number N itself
        inputs += [SHARED if i in positional or not hasattr(i, "type") else self(i) for i in node.inputs[1:]]
        if any(_counts_records(a) for a in inputs):
            inputs = self._count_rule(node, var, inputs)
        if not isinstance(inputs, list):  # the number of records, carried on
            out: Any = inputs
        elif all(a is SHARED for a in inputs) and not _is_op_from_graph(node.op):  # inner graphs: always read
            out = SHARED
        else:
            out = self._rule(node, var, inputs)
        self.axis[var] = out
        return out

    def _count_rule(self, node: Any, var: Any, axes: list[Any]) -> Any:
        """Inputs carrying the number of records (under add/remove, where it is private). As the length of an
        allocation or of a draw's size it makes that axis as long as the records — the records' axis, so a
        reduction over it is refused like any other; asserted in ``specify_shape`` it is harmless; carried through
        arithmetic on sizes; refused wherever else it would reach a term's value."""
        from pytensor.tensor.elemwise import Elemwise
        from pytensor.tensor.random.op import RandomVariable

        op, kind = node.op, type(node.op).__name__
        if kind == "SpecifyShape":
            return [axes[0], *(SHARED for _ in axes[1:])]
        if kind in ("Alloc", "AllocEmpty"):
            first = 1 if kind == "Alloc" else 0
            sized = [j for j, a in enumerate(axes[first:]) if a == COUNT]
            if len(sized) != 1 or any(_counts_records(a) for a in axes[first:] if a != COUNT) or _counts_records(
                    axes[0]) and first:
                self._fail(node, "the number of records, private under add/remove")
            value = axes[0] if first else SHARED
            if value is not SHARED and value + var.type.ndim - node.inputs[0].type.ndim != sized[0]:
                self._fail(node, "per-record operands whose record axes do not line up")
            return sized[0]
        if isinstance(op, RandomVariable):
            size = node.inputs.index(op.size_param(node))
            if not isinstance(axes[size], tuple) or any(_counts_records(a) for i, a in enumerate(axes) if i != size):
                self._fail(node, "the number of records, private under add/remove")
            rest = [SHARED if i == size else a for i, a in enumerate(axes)]
            drawn = SHARED if all(a is SHARED for a in rest) else self._rule(node, var, rest)
            if node.outputs.index(var) != 1:
                return SHARED
            if drawn is not SHARED and drawn != axes[size][0]:
                self._fail(node, "per-record operands whose record axes do not line up")
            return axes[size][0]
        if kind == "MakeVector" and all(a is SHARED or a == COUNT for a in axes):
            counted = [j for j, a in enumerate(axes) if a == COUNT]
            return (counted[0], len(axes)) if len(counted) == 1 else self._fail(node, "two lengths of the records")
        if kind == "Subtensor" and isinstance(axes[0], tuple) and all(a is SHARED for a in axes[1:]):
            entry = node.op.idx_list[0] if node.op.idx_list else None
            index = _constant(node.inputs[1]) if len(node.inputs) > 1 and not isinstance(entry, slice) else None
            if index is not None and var.type.ndim == 0:  # one entry of a shape: N only at the records' axis
                return COUNT if index % axes[0][1] == axes[0][0] else SHARED
        arithmetic = isinstance(op, Elemwise) or kind in ("ScalarFromTensor", "TensorFromScalar")
        if arithmetic and all(a is SHARED or a == COUNT for a in axes):
            return COUNT
        self._fail(node, "the number of records, private under add/remove")
        return None  # pragma: no cover

    def _fail(self, node: Any, why: str) -> None:
        raise RecordLocalityError(
            f"a per-record input reaches other records' terms through {_op_label(node)} ({why})"
        )

    def _rule(self, node: Any, var: Any, axes: list[int | None]) -> int | None:
        from pytensor.compile.builders import OpFromGraph
        from pytensor.tensor.blockwise import Blockwise
        from pytensor.tensor.elemwise import CAReduce, DimShuffle, Elemwise
        from pytensor.tensor.random.op import RandomVariable

        op = node.op
        kind = type(op).__name__
        if isinstance(op, Elemwise):
            out_ndim = var.type.ndim
            placed = {a + out_ndim - i.type.ndim for i, a in zip(node.inputs, axes) if a is not SHARED}
            if len(placed) != 1:
                self._fail(node, "two per-record operands whose record axes do not line up")
            return placed.pop()
        if isinstance(op, DimShuffle):
            a = axes[0]
            order = list(op.new_order)
            if a not in order:
                self._fail(node, "the record axis is dropped")
            return order.index(a)
        if kind in ("ViewOp", "DeterministicWrapper", "OutputGuard", "SpecifyShape", "Identity", "TypeCastingOp"):
            if any(a is not SHARED for a in axes[1:]):
                self._fail(node, "records in a shape")
            return axes[0]
        if isinstance(op, CAReduce) or kind == "LogSumExp":
            a = axes[0]
            if a is SHARED:  # reached through an inner graph's shared input: no records in it
                return SHARED
            ndim = node.inputs[0].type.ndim
            reduced = range(ndim) if op.axis is None else tuple(r % ndim for r in op.axis)
            if a in reduced:
                self._fail(node, "a reduction over the records")
            return a if getattr(op, "keepdims", False) else a - sum(1 for r in reduced if r < a)
        if kind in ("Softmax", "LogSoftmax", "CumOp", "SortOp", "ArgSortOp"):
            return self._along_axis(node, axes, kind)
        if kind in ("Shape", "Shape_i"):
            # Shapes are public structure; the record count only under replace-one (N public). Under add/remove it
            # is carried as a marker (the records' axis of the shape vector) that may size, never value, a term.
            if self.neighbouring == "replace" or (kind == "Shape_i" and op.i != axes[0]):
                return SHARED
            return COUNT if kind == "Shape_i" else (axes[0], node.inputs[0].type.ndim)
        if kind == "Alloc":
            if any(a is not SHARED for a in axes[1:]):
                self._fail(node, "records in a shape")
            return axes[0] + var.type.ndim - node.inputs[0].type.ndim
        if kind in ("Dot", "Matmul") or (kind == "Blockwise" and type(op.core_op).__name__ in ("Dot", "Matmul")):
            return self._product(node, var, axes)
        if kind == "Join":
            return self._join(node, axes)
        if kind == "Subtensor":
            return self._basic_index(node, axes)
        if kind == "IncSubtensor":
            return self._basic_set(node, axes)
        if kind in ("AdvancedSubtensor", "AdvancedSubtensor1"):
            return self._advanced_index(node, axes)
        if isinstance(op, RandomVariable) or hasattr(op, "base_rv_op"):
            return self._random_variable(node, var, axes)
        if isinstance(op, Blockwise):
            return self._blockwise(node, var, axes)
        if isinstance(op, OpFromGraph):  # SymbolicRandomVariable (Mixture, Censored, ...), OpFromGraph helpers
            return self._inner_graph(node, var, axes)
        self._fail(node, "an operation not known to keep records apart")
        return None  # pragma: no cover

    def _along_axis(self, node: Any, axes: list[int | None], kind: str) -> int | None:
        """An operation along one axis (softmax, cumulative sum, sort): row-local unless that axis is the records'."""
        if any(a is not SHARED for a in axes[1:]):
            self._fail(node, "records as an axis argument")
        ndim = node.inputs[0].type.ndim
        axis = getattr(node.op, "axis", None)
        if kind in ("SortOp", "ArgSortOp") and len(node.inputs) > 1:  # older PyTensor: the axis is an input
            axis = _constant(node.inputs[1])
            if axis is None:
                self._fail(node, "a sort along an axis that is not a constant")
        over = tuple(range(ndim)) if axis is None else tuple(
            int(a) % ndim for a in (axis if isinstance(axis, (tuple, list)) else (axis,))
        )
        if axes[0] in over:
            self._fail(node, "a normalisation over the records" if kind in ("Softmax", "LogSoftmax")
                       else "a cumulative or sorting operation along the records")
        return axes[0]

    def _join(self, node: Any, axes: list[int | None]) -> int:
        """``pt.concatenate``/``pt.stack``: row-local when every per-record operand has its records on one axis
        that is not the joined one (a joined constant is public)."""
        inputs, tensor_axes = list(node.inputs), list(axes)
        axis = getattr(node.op, "axis", None)
        if axis is None:  # older PyTensor: the axis is the first input
            if tensor_axes[0] is not SHARED:
                self._fail(node, "records as an axis argument")
            axis = _constant(inputs[0])
            inputs, tensor_axes = inputs[1:], tensor_axes[1:]
        if axis is None:
            self._fail(node, "a join along an axis that is not a constant")
        ndim = inputs[0].type.ndim
        placed = {a for a in tensor_axes if a is not SHARED}
        if len(placed) != 1:
            self._fail(node, "per-record operands whose record axes do not line up")
        a = placed.pop()
        if a == int(axis) % ndim:
            self._fail(node, "a join along the records")
        return a

    def _batched(self, node: Any, out_batch: int, operands: Sequence[tuple[Any, int | None, int]], core: str) -> int:
        """The output's record axis of an operation batched over its operands' leading axes: ``operands`` are
        (input, its record axis, its number of core axes); records must sit on a batch axis, where each batch
        element is computed from its own slices alone, and all land on one output axis."""
        placed = set()
        for inp, a, core_ndim in operands:
            if a is SHARED:
                continue
            in_batch = inp.type.ndim - core_ndim
            if a >= in_batch:
                self._fail(node, f"the records in a core dimension ({core})")
            placed.add(a + out_batch - in_batch)
        if len(placed) != 1:
            self._fail(node, "per-record operands whose record axes do not line up")
        return placed.pop()

    def _random_variable(self, node: Any, var: Any, axes: list[int | None]) -> int | None:
        """A random variable (the observed one, a mixture's component, a censored distribution): its draws are
        batched over its parameters' batch axes as its signature says, so a parameter's record axis becomes the
        draw's. A truncated distribution is batched as the distribution it truncates, its bounds elementwise."""
        from pytensor.tensor.type import TensorType

        if not isinstance(var.type, TensorType):
            return SHARED  # the updated random generator
        op = node.op
        base = getattr(op, "base_rv_op", op)  # TruncatedRV: the truncated distribution's signature
        tensors = [(i, a) for i, a in zip(node.inputs, axes) if isinstance(i.type, TensorType)]
        if base is op:
            by_input = dict(zip(node.inputs, axes))
            size, params = by_input.get(op.size_param(node)), [(p, by_input.get(p, SHARED)) for p in op.dist_params(node)]
        else:
            (_, size), params = tensors[0], tensors[1:]
        if size is not SHARED:
            self._fail(node, "records in a size")
        cores = list(base.ndims_params) + [0] * (len(params) - len(base.ndims_params))
        operands = [(p, a, int(c)) for (p, a), c in zip(params, cores)]
        signature = getattr(base, "signature", None) or "its signature"
        return self._batched(node, var.type.ndim - int(base.ndim_supp), operands, signature)

    def _blockwise(self, node: Any, var: Any, axes: list[int | None]) -> int:
        """A batched operation (``Blockwise``): its gufunc signature says which axes are core."""
        op = node.op
        out_batch = var.type.ndim - len(op.outputs_sig[node.outputs.index(var)])
        operands = [(i, a, len(core)) for i, a, core in zip(node.inputs, axes, op.inputs_sig)]
        return self._batched(node, out_batch, operands, op.signature)

    def _inner_graph(self, node: Any, var: Any, axes: list[int | None]) -> int | None:
        """An op defined by an inner graph (PyMC's symbolic random variables: ``Mixture``, ``Censored``,
        ``CustomDist(dist=...)``, zero-inflated, ...): the same walk through that graph, its inputs carrying the
        outer record axes."""
        from pytensor.compile.sharedvalue import SharedVariable
        from pytensor.graph.basic import Constant
        from pytensor.graph.traversal import ancestors
        from pytensor.tensor.random.type import RandomType

        op = node.op
        own = set(op.inner_inputs)
        for leaf in ancestors(op.inner_outputs):
            if leaf.owner is not None or leaf in own:
                continue
            if ((isinstance(leaf, SharedVariable) and not isinstance(leaf.type, RandomType))
                    or (isinstance(leaf, Constant) and np.size(getattr(leaf, "data", None)) >= _CAPTURED)):
                # data closed over by the inner graph escapes every check on the model's data; pass it as an input
                self._fail(node, "data captured inside it rather than passed as an input")
        inner = _Walk((), (), self.neighbouring)
        for inner_input, a in zip(op.inner_inputs, axes):
            inner.axis[inner_input] = a
        try:
            return inner(op.inner_outputs[node.outputs.index(var)])
        except RecordLocalityError as err:
            raise RecordLocalityError(f"{err}, inside {_op_label(node)}") from None

    def _product(self, node: Any, var: Any, axes: list[int | None]) -> int:
        (a_axis, b_axis), (a, b) = axes[:2], node.inputs[:2]
        if a_axis is not SHARED and b_axis is not SHARED:
            self._fail(node, "a product of two per-record operands")
        if a_axis is not SHARED:
            if a.type.ndim < 2 or a_axis == a.type.ndim - 1:
                self._fail(node, "the product sums over the records")
            return a_axis + var.type.ndim - a.type.ndim
        if b.type.ndim < 2 or b_axis == b.type.ndim - 2:
            self._fail(node, "the product sums over the records")
        return b_axis + var.type.ndim - b.type.ndim

    def _basic_index(self, node: Any, axes: list[int | None]) -> int:
        if any(a is not SHARED for a in axes[1:]):
            self._fail(node, "records used as an index")
        a = axes[0]
        entries = list(node.op.idx_list)
        if a < len(entries):
            entry = entries[a]
            if not (isinstance(entry, slice) and entry == slice(None, None, None)):
                self._fail(node, "a slice or an element of the records")
        dropped = sum(1 for e in entries[: a] if not isinstance(e, slice))
        return a - dropped

    def _basic_set(self, node: Any, axes: list[int | None]) -> int:
        """``x[idx] = y`` / ``x[idx] += y`` with a basic index: row-local when the index is public and keeps the
        records' axis whole, and ``y``'s records land on ``x``'s."""
        if any(a is not SHARED for a in axes[2:]):
            self._fail(node, "records used as an index")
        x, y = node.inputs[:2]
        entries = list(node.op.idx_list)
        kept = [d for d, e in enumerate(entries) if isinstance(e, slice)] + list(range(len(entries), x.type.ndim))
        placed = set()
        if axes[0] is not SHARED:
            placed.add(axes[0])
        if axes[1] is not SHARED:
            region_axis = axes[1] + (len(kept) - y.type.ndim)
            if region_axis < 0:
                self._fail(node, "records broadcast into the same entries")
            placed.add(kept[region_axis])
        if len(placed) != 1:
            self._fail(node, "per-record operands whose record axes do not line up")
        a = placed.pop()
        entry = entries[a] if a < len(entries) else slice(None)
        if not (isinstance(entry, slice) and entry == slice(None, None, None)):
            self._fail(node, "a slice or an element of the records")
        return a

    def _advanced_index(self, node: Any, axes: list[int | None]) -> int:
        """Indexing by arrays: a parameter vector by a per-record index (``alpha[idx]``), or per-record rows by the
        records' own positions with a per-record column index (``take_along_axis``, as PyMC's ``Categorical``
        reads ``p[arange(N), y]``)."""
        positions = _index_positions(node)
        arrays = [i for i, entry in enumerate(positions) if entry is not None]
        if not arrays or arrays != list(range(len(arrays))):
            self._fail(node, "a per-record index after a slice")
        by_input = dict(zip(node.inputs[1:], axes[1:]))
        indices = [(positions[i], by_input.get(positions[i], SHARED)) for i in arrays]
        if axes[0] is SHARED:
            for index, ax in indices:
                if ax is not SHARED and (ax != 0 or index.type.ndim != 1):
                    self._fail(node, "a per-record index of more than one dimension")
                if ax is SHARED and index.type.ndim > 0:
                    self._fail(node, "a per-record index broadcast against another index array (the record axis moves)")
            return 0
        a = axes[0]
        if a >= len(arrays):
            self._fail(node, "the records indexed by another array")
        width = max(index.type.ndim for index, _ in indices)
        own = _identity_axis(indices[a][0], node.inputs[0], a)
        if own is None:
            self._fail(node, "the records indexed by another array")
        r = own + width - indices[a][0].type.ndim
        for k, (index, ax) in enumerate(indices):
            if k == a:
                continue
            # An index into another axis picks within each record's own row: a public one (a mixture's component
            # draw) may vary along the records, a per-record one must vary along them only.
            if ax is not SHARED and ax + width - index.type.ndim != r:
                self._fail(node, "per-record indices whose record axes do not line up")
        return r


def _positional_indices(node: Any, axis: int | None) -> set[Any]:
    """The index arrays of an advanced index on per-record rows that are the records' own positions."""
    if not isinstance(axis, int) or type(node.op).__name__ not in ("AdvancedSubtensor", "AdvancedSubtensor1"):
        return set()
    entries = _index_positions(node)
    if axis >= len(entries) or entries[axis] is None:
        return set()
    return {entries[axis]} if _identity_axis(entries[axis], node.inputs[0], axis) is not None else set()


def _index_positions(node: Any) -> list[Any]:
    """An advanced index's entries, one per indexed axis: the index array (a tensor) or None for a slice."""
    inputs = list(node.inputs[1:])
    idx_list = getattr(node.op, "idx_list", None)
    if idx_list is None:  # older PyTensor: the entries are the inputs themselves
        return [i if hasattr(i.type, "ndim") else None for i in inputs]
    return [inputs[e] if isinstance(e, int) and hasattr(inputs[e].type, "ndim") else None for e in idx_list]


def _identity_axis(index: Any, indexed: Any, axis: int) -> int | None:
    """The axis along which ``index`` is ``0, 1, ..., n - 1`` over all of ``indexed``'s axis ``axis`` (every
    other axis of length 1), or None: ``arange(x.shape[axis])`` reshaped or expanded, as ``take_along_axis``
    builds it."""
    from pytensor.tensor.elemwise import DimShuffle

    def length_of_indexed(stop: Any) -> bool:
        owner = stop.owner
        if owner is not None and type(owner.op).__name__ == "Shape_i":
            return owner.inputs[0] is indexed and owner.op.i == axis
        if owner is not None and type(owner.op).__name__ == "Subtensor":
            shape = owner.inputs[0].owner
            return (shape is not None and type(shape.op).__name__ == "Shape" and shape.inputs[0] is indexed
                    and len(owner.inputs) == 2 and _constant(owner.inputs[1]) == axis)
        static = indexed.type.shape[axis]
        return static is not None and _constant(stop) == static

    chain, var = [], index
    while var.owner is not None and type(var.owner.op).__name__ != "ARange":
        if not isinstance(var.owner.op, DimShuffle) and type(var.owner.op).__name__ != "Reshape":
            return None
        chain.append(var.owner)
        var = var.owner.inputs[0]
    if var.owner is None:
        return None
    start, stop, step = var.owner.inputs
    if _constant(start) != 0 or _constant(step) != 1 or not length_of_indexed(stop):
        return None
    position: int | None = 0
    for node in reversed(chain):  # from the arange up to the index
        if isinstance(node.op, DimShuffle):
            order = list(node.op.new_order)
            position = order.index(position) if position in order else None
        else:
            shape = node.inputs[1]
            target = [int(v) for v in shape.data] if hasattr(shape, "data") else []
            runs = [i for i, t in enumerate(target) if t != 1]
            position = runs[0] if len(runs) == 1 else None
        if position is None:
            return None
    return position


def parameter_label(param: Any, position: int) -> str:
    """How a refusal names a likelihood's parameter: its name, its distribution (a mixture's or a censored
    likelihood's component), or its position and the operation computing it."""
    if getattr(param, "name", None):
        return repr(param.name)
    owner = getattr(param, "owner", None)
    print_name = getattr(getattr(owner, "op", None), "_print_name", None)
    if print_name:
        return f"the {print_name[0]} component"
    return f"the parameter {position + 1}" + (f" (computed by {_op_label(owner)})" if owner is not None else "")


def likelihood_label(rv: Any) -> str:
    """``'y' (a ZeroInflatedPoisson)``-style: the observed variable and the PyMC construct behind it."""
    print_name = getattr(rv.owner.op, "_print_name", None)
    kind = print_name[0] if print_name else type(rv.owner.op).__name__
    return f"{rv.name!r} (a {kind.removeprefix('LoglikClipped')} likelihood)"


def check_record_local(
    rv: Any,
    model: Any,
    params: Mapping[str, Any],
    aligned: Sequence[Any],
) -> None:
    """Prove that row ``i`` of the ``aligned`` per-record arrays enters only record ``i``'s terms of ``rv``.

    ``params`` are ``rv``'s distribution parameters by label (:func:`parameter_label`);
    ``aligned`` the data leaves whose first axis has one entry per record. Each parameter
    is walked (a refusal names it), then the likelihood itself through its signature or,
    for PyMC's symbolic distributions, its inner graph: its draws must carry the records on
    their first axis. Raises :class:`RecordLocalityError` naming what mixes records otherwise.
    """
    walk = _Walk(aligned, list(model.free_RVs))
    for label, param in params.items():
        try:
            walk(param)
        except RecordLocalityError as err:
            raise RecordLocalityError(f"{label} of {likelihood_label(rv)}: {err}") from None
    try:
        axis = walk(rv)
    except RecordLocalityError as err:
        raise RecordLocalityError(f"{likelihood_label(rv)}: {err}") from None
    if axis is not SHARED and axis != 0:
        raise RecordLocalityError(
            f"{likelihood_label(rv)} varies by record along an axis that is not the records' (the first axis of the "
            "observed values)"
        )


def check_terms_record_local(term: Any, aligned: Sequence[Any], blockers: Sequence[Any], neighbouring: str) -> None:
    """Prove that a clipped log-likelihood's terms (``term``, one per record along axis 0) are row-local.

    ``term`` is the observed variable's elementwise log-likelihood graph as PyMC builds it
    (distribution, custom ``logp`` and observed value expression included). Raises
    :class:`RecordLocalityError` naming the operation that mixes records.
    """
    if term.type.ndim == 0:
        return
    walk = _Walk(aligned, blockers, neighbouring)
    axis = walk(term)
    if axis is not SHARED and axis != 0:
        raise RecordLocalityError("the log-likelihood terms are not indexed by the records along their first axis")
