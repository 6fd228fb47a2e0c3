"""Missing observations: PyMC's imputation undone, so that no route refuses or branches on them.

Given observed data with NaN (or a masked array), PyMC splits the variable ``y`` into an
observed ``y_observed``, a free ``y_unobserved`` with one entry per missing value, and
a Deterministic ``y`` joining them. The model's structure then depends on the data: the
free variable's shape is the number of missing values, and whether it exists says that
some value is missing. Releasing it would release that count; refusing the model would
say, for free, that some value is missing.

:func:`restore_missing` rebuilds the variable PyMC split, as one observed variable named
``y`` over all the records, with NaN where a value is missing (and, for a float ``pm.Data``
container holding a masked array, NaN under the mask). Each route then treats a NaN
as it treats any malformed record — replaced by its family's default record, given a
constant clipped log-likelihood term, or left out of its block — and counts it for the
curator only. A missing count (PyMC casts a count
likelihood's data to integers) becomes the smallest integer of its dtype, outside the
support of every count likelihood. The rebuilt model has the structure the model has
without missing values,
so nothing a route does or releases depends on whether any is missing.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._compat import fgraph_of_model, model_of_fgraph, model_var, model_var_parts
from .._evaluate import evaluate, evaluate_int

__all__ = ["restore_missing", "has_missing_structure"]


def _imputed_names(model: Any) -> list[str]:
    from ..trace import imputed_variables

    return [free.removesuffix("_unobserved") for free in imputed_variables(model)]


def _masked_containers(model: Any) -> list[Any]:
    """Float data containers (``pm.Data``) whose value is a masked array with masked entries."""
    out = []
    for var in model.data_vars:
        if not hasattr(var, "get_value"):
            continue
        value = var.get_value(borrow=True)
        if np.ma.isMaskedArray(value) and np.ma.getmaskarray(value).any() and value.dtype.kind == "f":
            out.append(var)
    return out


def has_missing_structure(model: Any) -> bool:
    """Whether ``model`` holds PyMC's imputation of missing values or a masked data container."""
    return bool(_imputed_names(model) or _masked_containers(model))


def restore_missing(model: Any) -> Any:
    """``model`` with PyMC's imputation of missing values undone (see the module docstring); ``model`` itself if
    it has none. The user's model is not modified.

    Raises
    ------
    ValueError
        If PyMC split a variable in a way this function does not know how to rebuild (a stated limitation: the
        message names the variable, never how many values are missing).
    """
    names = _imputed_names(model)
    containers = _masked_containers(model)
    if not names and not containers:
        return model
    import pytensor

    fg, initvals = fgraph_of_model(model)
    masked = {c.name for c in containers}
    for var in [v for v in fg.variables if v.owner is None and hasattr(v, "get_value") and v.name in masked]:
        value = var.get_value(borrow=True)
        filled = np.ma.filled(np.ma.asarray(value, dtype=value.dtype), np.nan)
        fg.replace(var, pytensor.shared(filled, name=var.name), import_missing=True)
    for name in names:
        _merge(fg, name)
        initvals.pop(f"{name}_unobserved", None)
    return model_of_fgraph(fg, initvals)


def missing_value(dtype: np.dtype) -> Any:
    """What a missing value becomes in a rebuilt variable of ``dtype``: NaN for floats; for integers (PyMC casts a
    count likelihood's data to them) the dtype's smallest value, outside the support of every count likelihood."""
    dtype = np.dtype(dtype)
    return np.iinfo(dtype).min if dtype.kind in "iu" else np.nan


def _node_named(fg: Any, op_class: type, name: str) -> Any:
    for node in fg.apply_nodes:
        if isinstance(node.op, op_class) and model_var_parts(node).name == name:
            return node
    raise ValueError(f"cannot find {name!r} in the model")  # pragma: no cover - imputed_variables found it


def _merge(fg: Any, name: str) -> None:
    """Replace ``name``'s observed/unobserved split in ``fg`` by one observed variable holding NaN where missing."""
    import pytensor.tensor as pt
    from pymc.model.fgraph import ModelDeterministic, ModelFreeRV, ModelObservedRV

    observed = _node_named(fg, ModelObservedRV, f"{name}_observed")
    unobserved = _node_named(fg, ModelFreeRV, f"{name}_unobserved")
    joined = _node_named(fg, ModelDeterministic, name)
    obs_parts, joined_parts = model_var_parts(observed), model_var_parts(joined)
    full_rv, antimask, shape = _full_variable(name, obs_parts.var, joined_parts.var)
    data = np.asarray(obs_parts.value.data if hasattr(obs_parts.value, "data") else evaluate(obs_parts.value))
    dtype = np.dtype(full_rv.type.dtype)
    values = np.full(shape, missing_value(dtype), dtype=dtype)
    values[antimask] = data
    merged = model_var("observed", full_rv, name, value=pt.constant(values, name=name, dtype=dtype),
                       dims=joined_parts.dims)
    fg.replace(joined.outputs[0], merged, import_missing=True)
    for out in sorted((fg.outputs.index(o) for o in (observed.outputs[0], unobserved.outputs[0])), reverse=True):
        fg.remove_output(out)


def _const(var: Any) -> np.ndarray | None:
    data = getattr(var, "data", None)
    return None if data is None else np.asarray(data)


def _full_variable(name: str, observed_rv: Any, joined: Any) -> tuple[Any, np.ndarray, tuple[int, ...]]:
    """The random variable PyMC split, over every record; the mask of the observed entries; the full shape."""
    from pymc.distributions.distribution import PartialObservedRV
    from pytensor.tensor.random.op import RandomVariable
    from pytensor.tensor.subtensor import AdvancedIncSubtensor, AdvancedSubtensor

    refuse = ValueError(
        f"observed variable {name!r} has missing values, and PyMC split it in a way pymc_dp cannot rebuild; pass the "
        "records with missing values encoded as NaN in a form PyMC does not impute (e.g. observed=pt.constant(y)). "
        "Nothing was spent."
    )
    outer = joined.owner
    if outer is None or not isinstance(outer.op, AdvancedIncSubtensor):
        raise refuse
    antimask = _const(outer.inputs[2]) if len(outer.inputs) == 3 else None
    shape = _joined_shape(outer)
    if antimask is None or antimask.dtype != bool or shape is None or antimask.shape != shape[: antimask.ndim]:
        raise refuse
    owner = observed_rv.owner
    if isinstance(owner.op, PartialObservedRV):
        return owner.inputs[0], antimask, shape
    if not isinstance(owner.op, RandomVariable):
        raise refuse
    import pytensor.tensor as pt

    rng, _, *params = owner.inputs
    full = []
    for param, core in zip(params, owner.op.ndims_params):
        node = param.owner
        if node is not None and isinstance(node.op, AdvancedSubtensor):
            # PyMC indexed the parameter (broadcast to the variable's batch shape) by the observed entries
            if not _indexes_observed(node, antimask):
                raise refuse
            full.append(node.inputs[0])
        elif all(param.type.broadcastable[: param.type.ndim - core]):
            full.append(param)  # the same for every record (a scalar PyMC broadcast): it broadcasts to all of them
        else:
            raise refuse
    batch = shape[: len(shape) - owner.op.ndim_supp]
    # make_node: the same call on PyTensor 2 and 3 (3's __call__ wants return_next_rng=, 2's has none)
    rv = owner.op.make_node(rng, pt.constant(np.asarray(batch, dtype="int64")), *full).default_output()
    static = rv.type.shape
    if len(static) != len(shape) or any(s is not None and s != t for s, t in zip(static, shape)):
        raise refuse
    return rv, antimask, shape


def _indexes_observed(node: Any, antimask: np.ndarray) -> bool:
    """Whether ``node`` (an AdvancedSubtensor PyMC built) picks the observed entries of its input: ``x[antimask]``,
    or ``x[i_0, i_1, ...]`` with ``i_k`` the k-th part of ``antimask.nonzero()`` or 0 along a broadcast axis."""
    from pytensor.tensor.basic import Nonzero

    indices = node.inputs[1:]
    if len(indices) == 1:
        index = _const(indices[0])
        return index is not None and index.shape == antimask.shape and bool(np.array_equal(index, antimask))
    source = node.inputs[0]
    if len(indices) != antimask.ndim:
        return False
    for axis, index in enumerate(indices):
        owner = index.owner
        if owner is not None and isinstance(owner.op, Nonzero):
            mask = _const(owner.inputs[0])
            if mask is None or not np.array_equal(mask, antimask) or owner.outputs.index(index) != axis:
                return False
            continue
        while owner is not None and type(owner.op).__name__ == "TensorFromScalar":
            index = owner.inputs[0]
            owner = index.owner
        value = _const(index)
        if value is None or value.shape != () or int(value) != 0 or not source.type.broadcastable[axis]:
            return False
    return True


def _joined_shape(outer: Any) -> tuple[int, ...] | None:
    """The shape of PyMC's joined variable: the lengths it allocated (``pt.empty(shape)`` under two set_subtensors)."""
    from pytensor.tensor.basic import AllocEmpty

    inner = outer.inputs[0].owner
    alloc = inner.inputs[0].owner if inner is not None else None
    if alloc is None or not isinstance(alloc.op, AllocEmpty):
        return None
    try:
        return tuple(evaluate_int(length) for length in alloc.inputs)
    except Exception:  # noqa: BLE001 - lengths that need values: not PyMC's split
        return None
