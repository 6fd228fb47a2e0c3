"""Reading a PyMC model's structure for the private step methods (which terms an update touches).

* :func:`children` — the random variables whose distribution parameters depend
  *directly* on a free variable (the walk stops at other free variables): the
  terms of its Gibbs conditional ([FGWC16] eq. 18–20).
* :func:`selection_of` — whether a parameter is the variable itself up to pure
  selection (broadcasting, reshaping, indexing by other variables): then every
  element of the parameter *is* one element of the variable, and the element map
  is found by evaluating the parameter with the variable replaced by its indices.
* :func:`aligned_with` — whether a graph is elementwise along the records of a
  per-record variable z (element i depends on z only through z_i): the structure
  that makes one scan over all z_i a parallel composition.
* :func:`PointFunction` — a compiled function of a sampler point (the model's
  value variables) plus extra inputs.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..model._graph import ancestors

__all__ = ["children", "dist_params", "selection_of", "aligned_with", "PointFunction", "op_name", "depends_on"]

#: Ops that only select, broadcast or reshape the elements of their first input.
SELECTION_OPS = (
    "DimShuffle", "Reshape", "SpecifyShape", "Subtensor", "AdvancedSubtensor", "AdvancedSubtensor1", "Alloc",
    "ViewOp", "Flatten", "Squeeze", "ExpandDims", "OutputGuard",
)


def op_name(var: Any) -> str:
    """The class name of the op that produced ``var`` (``""`` for a leaf)."""
    owner = getattr(var, "owner", None)
    return "" if owner is None else type(owner.op).__name__


def dist_params(rv: Any) -> list[Any]:
    """The distribution parameters of a random variable (PyMC's ``dist_params``)."""
    return list(rv.owner.op.dist_params(rv.owner))


def depends_on(graphs: Sequence[Any], var: Any, model: Any) -> bool:
    """Whether ``graphs`` depend on ``var`` directly (the walk stops at the model's free variables)."""
    return var in set(ancestors(list(graphs), blockers=list(model.free_RVs)))


def children(model: Any, rv: Any) -> list[Any]:
    """Random variables (observed or free) whose parameters depend directly on ``rv``."""
    out = []
    for other in [*model.free_RVs, *model.observed_RVs]:
        if other is rv:
            continue
        if depends_on(list(other.owner.inputs), rv, model):
            out.append(other)
    return out


def selection_of(expr: Any, var: Any, model: Any) -> bool:
    """Whether ``expr`` is ``var`` up to selection ops, entering only as the selected value."""
    if expr is var:
        return True
    owner = getattr(expr, "owner", None)
    if owner is None or op_name(expr) not in SELECTION_OPS:
        return False
    first, *rest = owner.inputs
    if any(depends_on([r], var, model) or r is var for r in rest):
        return False
    return selection_of(first, var, model)


def aligned_with(expr: Any, z: Any, model: Any) -> bool:
    """Whether element i of ``expr`` depends on the per-record vector ``z`` through ``z[i]`` only.

    Allowed: ``z`` itself; elementwise operations; ``x[z]`` (advanced indexing of a
    tensor that does not depend on z, by an aligned index on the first axis); a
    DimShuffle that keeps the record axis first. Anything else is refused.
    """
    if expr is z:
        return True
    if not depends_on([expr], z, model):
        return True
    owner = getattr(expr, "owner", None)
    if owner is None:
        return False
    name = op_name(expr)
    if name == "Elemwise":
        return all(aligned_with(i, z, model) for i in owner.inputs)
    if name in ("AdvancedSubtensor1", "AdvancedSubtensor") and len(owner.inputs) == 2:
        table, index = owner.inputs
        return not depends_on([table], z, model) and table is not z and aligned_with(index, z, model)
    if name == "DimShuffle":
        order = list(owner.op.new_order)
        return bool(order) and order[0] == 0 and aligned_with(owner.inputs[0], z, model)
    return False


class PointFunction:
    """A compiled function of a sampler point (dict of value-variable arrays) and extra inputs.

    ``outputs`` may mention random variables; they are replaced by their value
    variables (through the inverse value transforms) before compiling.
    """

    def __init__(self, model: Any, outputs: Sequence[Any], extra_inputs: Sequence[Any] = ()) -> None:
        import pymc as pm

        self.names = [v.name for v in model.value_vars]
        outs = model.replace_rvs_by_values(list(outputs))
        self._fn = pm.compile([*model.value_vars, *extra_inputs], outs, on_unused_input="ignore")

    def __call__(self, point: dict[str, np.ndarray], *extra: Any) -> list[np.ndarray]:
        return [np.asarray(v) for v in self._fn(*(point[n] for n in self.names), *extra)]
