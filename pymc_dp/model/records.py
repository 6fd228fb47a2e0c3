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
  index array (``alpha[idx]``) gives a per-record result; reductions over other axes
  keep it;
* anything else that touches a per-record input — a reduction over the records, a
  sort, a slice of the records, a product of two per-record operands — is refused,
  naming the operation.

Finally the parameter's record axis must line up with the observed variable's first
axis. What is proven is exactly what a log-likelihood clip needs: one record moves
only its own terms.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

__all__ = ["check_record_local", "check_terms_record_local", "RecordLocalityError", "per_record_leaves"]

#: The walk's "no record axis" marker.
SHARED = None


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


def _op_label(node: Any) -> str:
    op = node.op
    scalar = getattr(op, "scalar_op", None)
    return type(scalar).__name__ if scalar is not None else type(op).__name__


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
        inputs = [self(i) if hasattr(i, "type") else SHARED for i in node.inputs]
        if all(a is SHARED for a in inputs):
            out: int | None = SHARED
        else:
            out = self._rule(node, var, inputs)
        self.axis[var] = out
        return out

    def _fail(self, node: Any, why: str) -> None:
        raise RecordLocalityError(
            f"a per-record input reaches other records' terms through {_op_label(node)} ({why})"
        )

    def _rule(self, node: Any, var: Any, axes: list[int | None]) -> int | None:
        from pytensor.tensor.elemwise import CAReduce, DimShuffle, Elemwise

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
        if kind in ("ViewOp", "DeterministicWrapper", "OutputGuard", "SpecifyShape", "Identity"):
            if any(a is not SHARED for a in axes[1:]):
                self._fail(node, "records in a shape")
            return axes[0]
        if isinstance(op, CAReduce) or kind == "LogSumExp":
            a = axes[0]
            ndim = node.inputs[0].type.ndim
            reduced = range(ndim) if op.axis is None else tuple(r % ndim for r in op.axis)
            if a in reduced:
                self._fail(node, "a reduction over the records")
            return a if getattr(op, "keepdims", False) else a - sum(1 for r in reduced if r < a)
        if kind in ("Softmax", "LogSoftmax"):
            ndim = node.inputs[0].type.ndim
            over = tuple(range(ndim)) if op.axis is None else tuple(
                a % ndim for a in (op.axis if isinstance(op.axis, (tuple, list)) else (op.axis,))
            )
            if axes[0] in over:
                self._fail(node, "a normalisation over the records")
            return axes[0]
        if kind in ("Shape", "Shape_i"):
            # Shapes are public structure; the record count only under replace-one (N public).
            on_records = kind == "Shape" or op.i == axes[0]
            if on_records and self.neighbouring != "replace":
                self._fail(node, "the number of records, private under add/remove")
            return SHARED
        if kind == "Alloc":
            if any(a is not SHARED for a in axes[1:]):
                self._fail(node, "records in a shape")
            return axes[0] + var.type.ndim - node.inputs[0].type.ndim
        if kind in ("Dot", "Matmul") or (kind == "Blockwise" and type(op.core_op).__name__ in ("Dot", "Matmul")):
            return self._product(node, var, axes)
        if kind == "Subtensor":
            return self._basic_index(node, axes)
        if kind in ("AdvancedSubtensor", "AdvancedSubtensor1"):
            return self._advanced_index(node, axes)
        self._fail(node, "an operation not known to keep records apart")
        return None  # pragma: no cover

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

    def _advanced_index(self, node: Any, axes: list[int | None]) -> int:
        if axes[0] is not SHARED:
            self._fail(node, "the records indexed by another array")
        indices = [(i, ax) for i, ax in zip(node.inputs[1:], axes[1:]) if hasattr(i.type, "ndim")]
        for index, ax in indices:
            if ax is not SHARED and (ax != 0 or index.type.ndim != 1):
                self._fail(node, "a per-record index of more than one dimension")
            if ax is SHARED and index.type.ndim > 0:
                self._fail(node, "a per-record index broadcast against another index array (the record axis moves)")
        entries = list(getattr(node.op, "idx_list", ()))
        if entries and isinstance(entries[0], slice):
            self._fail(node, "a per-record index after a slice")
        if not entries and not (len(node.inputs) > 1 and hasattr(node.inputs[1].type, "ndim")):
            self._fail(node, "a per-record index after a slice")
        return 0


def check_record_local(
    rv: Any,
    model: Any,
    params: Mapping[str, Any],
    aligned: Sequence[Any],
) -> None:
    """Prove that row ``i`` of the ``aligned`` per-record arrays enters only record ``i``'s terms of ``rv``.

    ``params`` are ``rv``'s distribution parameters by name; ``aligned`` the data
    leaves whose first axis has one entry per record. Raises
    :class:`RecordLocalityError` naming the parameter and the operation otherwise.
    """
    op = rv.owner.op
    walk = _Walk(aligned, list(model.free_RVs))
    ndims_params = getattr(op, "ndims_params", None)
    support = int(getattr(op, "ndim_supp", 0) or 0)
    batch = rv.type.ndim - support
    for index, (key, param) in enumerate(params.items()):
        try:
            axis = walk(param)
        except RecordLocalityError as err:
            raise RecordLocalityError(f"parameter {key!r} of {rv.name!r}: {err}") from None
        if axis is SHARED:
            continue
        if ndims_params is None or index >= len(ndims_params):
            raise RecordLocalityError(
                f"parameter {key!r} of {rv.name!r} varies by record, and the records of a {type(op).__name__} "
                "likelihood cannot be lined up with its parameters"
            )
        param_batch = param.type.ndim - int(ndims_params[index])
        if batch < 1 or axis >= param_batch or axis + batch - param_batch != 0:
            raise RecordLocalityError(
                f"parameter {key!r} of {rv.name!r} varies by record along an axis that is not the records' "
                "(the first axis of the observed values)"
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
