"""The one place that knows how PyMC 5 and PyMC 6 (and their ArviZ) differ.

pymc_dp supports two lines:

* **PyMC 6 / PyTensor 3 / ArviZ 1** on Python ≥ 3.12 (the primary target): ``pm.sample``
  returns an :class:`xarray.DataTree` (each group a child node); ArviZ 1 has no
  ``InferenceData``, no ``az.concat``, takes ``az.from_dict({"posterior": ...})`` and
  ``az.hdi(..., prob=)``; a model's FunctionGraph form keeps each variable's name and dims
  as properties of its ``ModelVar`` op.
* **PyMC 5.28 / PyTensor 2.38 / ArviZ 0.23** on Python 3.11: ``arviz.InferenceData``;
  ``az.concat``, ``az.from_dict(posterior=...)``, ``az.hdi(..., hdi_prob=)``; the
  ``ModelVar`` ops carry dims as extra string inputs and take the name from the variable.

Everything else in ``pymc_dp`` goes through the small functions below (traces as plain
:class:`xarray.Dataset` groups, model graphs through :func:`model_var_parts` and
:func:`model_var`), so a version difference is handled here once, never by ``if``
branches elsewhere. The module imports nothing from ``pymc_dp``: every layer may use it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from os import PathLike
from typing import Any, Mapping

import numpy as np
import xarray as xr

import arviz as _az

# ArviZ >= 1 has no InferenceData (asking for it returns xarray.DataTree with a warning).
_ARVIZ_MAJOR = int(str(_az.__version__).split(".")[0])
_InferenceData = _az.InferenceData if _ARVIZ_MAJOR < 1 else None

_DataTree = getattr(xr, "DataTree", None)

#: True where ``pm.sample`` returns an ``xarray.DataTree`` (ArviZ >= 1).
TRACE_IS_DATATREE = _InferenceData is None

__all__ = [
    "warn_at_caller",
    "TRACE_IS_DATATREE",
    "is_trace",
    "is_datatree",
    "group_names",
    "get_group",
    "with_group",
    "new_trace",
    "get_attrs",
    "with_attrs",
    "load",
    "save",
    "concat",
    "trace_from_dict",
    "hdi",
    "ModelVarParts",
    "model_var_parts",
    "model_var",
    "mark_released",
    "is_released",
]


# --------------------------------------------------------------------------- traces


def _is_idata(obj: object) -> bool:
    return _InferenceData is not None and isinstance(obj, _InferenceData)


def _is_datatree(obj: object) -> bool:
    return _DataTree is not None and isinstance(obj, _DataTree)


def is_trace(obj: object) -> bool:
    """Return True for an ``InferenceData`` or an ``xarray.DataTree``."""
    return _is_idata(obj) or _is_datatree(obj)


def is_datatree(obj: object) -> bool:
    """Return True for an ``xarray.DataTree`` (the trace type of ArviZ >= 1)."""
    return _is_datatree(obj)


def _check(obj: object) -> None:
    if not is_trace(obj):
        raise TypeError(
            "expected an arviz.InferenceData or xarray.DataTree (the output of pm.sample), "
            f"got {type(obj).__name__}."
        )


def group_names(obj: Any) -> list[str]:
    """Names of the groups of a trace (warmup groups included)."""
    _check(obj)
    if _is_idata(obj):
        return list(obj.groups())
    return list(obj.children)


def get_group(obj: Any, name: str) -> xr.Dataset | None:
    """Group ``name`` as an :class:`xarray.Dataset`, or None if the trace has no such group."""
    _check(obj)
    if name not in group_names(obj):
        return None
    if _is_idata(obj):
        return obj[name]
    return obj[name].to_dataset()


def new_trace(groups: Mapping[str, xr.Dataset], attrs: Mapping[str, Any] | None = None, *, like: Any = None) -> Any:
    """Build a fresh trace object from ``{group name: Dataset}`` and top-level attrs.

    The result has the type of ``like`` if given, else the type this ArviZ produces.
    """
    attrs = dict(attrs or {})
    use_idata = _is_idata(like) if like is not None else _InferenceData is not None
    if use_idata:
        return _InferenceData(attrs=attrs, **dict(groups))
    tree = _DataTree.from_dict({name: ds for name, ds in groups.items()})
    tree.attrs = attrs
    return tree


def with_group(obj: Any, name: str, ds: xr.Dataset) -> Any:
    """A new trace equal to ``obj`` with group ``name`` added or replaced (``obj`` untouched).

    Groups are shallow-copied: new Dataset objects sharing the (read-only in practice)
    arrays, so assigning variables on the result never changes ``obj``.
    """
    _check(obj)
    if _is_datatree(ds):  # a group node of another tree
        ds = ds.to_dataset()
    if _is_idata(obj):
        groups = {g: obj[g].copy() for g in group_names(obj) if g != name}
        groups[name] = ds
        return new_trace(groups, obj.attrs, like=obj)
    tree = obj.copy()
    tree[name] = _DataTree(ds)
    return tree


def isel_draws(obj: Any, indices: Sequence[int]) -> Any:
    """A new trace holding only the posterior, cut to the draws at ``indices`` (other groups are left out)."""
    posterior = get_group(obj, "posterior")
    if posterior is None:
        raise ValueError("the trace has no posterior group to select draws from.")
    return new_trace({"posterior": posterior.isel(draw=list(indices))}, get_attrs(obj), like=obj)


def get_attrs(obj: Any) -> dict[str, Any]:
    """Copy of the top-level attrs of a trace."""
    _check(obj)
    return dict(obj.attrs)


def with_attrs(obj: Any, attrs: Mapping[str, Any]) -> Any:
    """A new trace equal to ``obj`` whose top-level attrs are replaced by ``attrs``."""
    _check(obj)
    if _is_idata(obj):
        return new_trace({g: obj[g].copy() for g in group_names(obj)}, attrs, like=obj)
    tree = obj.copy()
    tree.attrs = dict(attrs)
    return tree


def load(path: str | PathLike[str]) -> Any:
    """Read a trace saved with ``to_netcdf`` or ``to_zarr`` (whichever trace type this ArviZ uses).

    A path ending in ``.zarr`` (a directory) is read as Zarr, anything else as netCDF.
    The trace is loaded into memory, so the file can be removed or overwritten afterwards.
    """
    import arviz as az

    text = str(path)
    if _is_zarr_path(text):
        tree = xr.open_datatree(text, engine="zarr").load()
        return _InferenceData.from_datatree(tree) if _InferenceData is not None else tree
    trace = az.from_netcdf(text)
    return trace.load() if _is_datatree(trace) else trace


def _is_zarr_path(text: str) -> bool:
    return text.rstrip("/").endswith(".zarr")


def save(trace: Any, path: str | PathLike[str]) -> None:
    """Write a trace to netCDF, or to a Zarr store when ``path`` ends in ``.zarr``.

    ArviZ 0.23's ``InferenceData.to_zarr`` refuses zarr >= 3; it goes through
    ``to_datatree()`` here, so both trace types write the same store layout.
    """
    _check(trace)
    text = str(path)
    if _is_zarr_path(text):
        tree = trace.to_datatree() if _is_idata(trace) else trace
        tree.to_zarr(text, mode="w")
    else:
        trace.to_netcdf(text)


def concat(traces: Sequence[Any], dim: str = "chain") -> Any:
    """Concatenate traces along ``dim`` (``"chain"`` or ``"draw"``), as ``az.concat`` did.

    Groups that have ``dim`` in every trace holding them are concatenated (the joined
    coordinate renumbered 0..n-1, as ``az.concat(reset_dim=True)``); any other group
    (``observed_data``, a group only one trace has) is taken from the first trace that
    has it. Top-level attrs are those of the first trace. The same code serves both
    trace types (``az.concat`` of ArviZ < 1 refuses traces whose groups differ).
    """
    traces = list(traces)
    if not traces:
        raise ValueError("concat needs at least one trace.")
    for t in traces:
        _check(t)
    if len(traces) == 1:
        return traces[0]
    names: list[str] = []
    for t in traces:
        names += [g for g in group_names(t) if g not in names]
    # As az.concat(reset_dim=True) the joined coordinate is renumbered 0..n-1: trace i's entries
    # start after those of the traces before it, also in a group that only some traces have.
    sizes = [max((ds.sizes[dim] for ds in (get_group(t, g) for g in group_names(t)) if ds is not None
                  and dim in ds.dims), default=0) for t in traces]
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(int)
    groups = {}
    for name in names:
        parts = [(i, ds) for i, ds in enumerate(get_group(t, name) for t in traces) if ds is not None]
        if all(dim in ds.dims for _, ds in parts):
            placed = [ds.assign_coords({dim: np.arange(ds.sizes[dim]) + starts[i]}) for i, ds in parts]
            groups[name] = xr.concat(placed, dim=dim, combine_attrs="override") if len(placed) > 1 else placed[0]
        else:
            groups[name] = parts[0][1]
    return new_trace(groups, get_attrs(traces[0]), like=traces[0])


def trace_from_dict(groups: Mapping[str, Mapping[str, Any]]) -> Any:
    """A trace from ``{group: {variable: array (chain, draw, ...)}}`` (``az.from_dict``)."""
    import arviz as az

    if TRACE_IS_DATATREE:
        return az.from_dict({g: dict(v) for g, v in groups.items()})
    return az.from_dict(**{g: dict(v) for g, v in groups.items()})


def hdi(trace: Any, prob: float, var_names: Sequence[str] | None = None) -> xr.Dataset:
    """Highest-density intervals of the posterior as a Dataset (``az.hdi``; ``prob=`` vs ``hdi_prob=``)."""
    import arviz as az

    if TRACE_IS_DATATREE:
        out = az.hdi(trace, prob=prob, var_names=var_names)
        return out.to_dataset() if _is_datatree(out) else out
    return az.hdi(trace, hdi_prob=prob, var_names=var_names)


# --------------------------------------------------------------------------- model graphs


@dataclass(frozen=True)
class ModelVarParts:
    """What a ``ModelVar`` node of ``pymc.model.fgraph`` says about one model variable.

    Attributes
    ----------
    var
        The wrapped variable (the random variable, deterministic expression, potential...).
    value
        Its value variable (free and observed variables), else None.
    name
        The model variable's name.
    dims
        Its dimension names (``None`` where a dimension has none); ``()`` without dims.
    transform
        The value transform of a free variable, else None.
    """

    var: Any
    value: Any
    name: str
    dims: tuple[str | None, ...]
    transform: Any


def model_var_parts(node: Any) -> ModelVarParts:
    """Read a ``ModelVar`` apply node of a model's FunctionGraph form (any PyMC version)."""
    from pymc.model.fgraph import ModelValuedVar

    op = node.op
    valued = isinstance(op, ModelValuedVar)
    var = node.inputs[0]
    value = node.inputs[1] if valued else None
    if hasattr(op, "dims"):  # PyMC >= 6: name and dims are op properties
        dims = tuple(op.dims)
        name = op.name
    else:  # PyMC 5: dims are constant string inputs after the variable (and value)
        dims = tuple(getattr(d, "data", None) for d in node.inputs[(2 if valued else 1):])
        name = node.outputs[0].name
    return ModelVarParts(var, value, name, dims, getattr(op, "transform", None) if valued else None)


def model_var(kind: str, var: Any, name: str, *, value: Any = None, transform: Any = None,
              dims: Sequence[str | None] = ()) -> Any:
    """A new ``ModelVar`` output of ``kind`` (``"free"``, ``"observed"``, ``"potential"``,
    ``"deterministic"`` or ``"named"``) wrapping ``var``, named ``name``, for a model graph.
    """
    from pymc.model import fgraph

    dims = tuple(dims or ())
    if any(d is None for d in dims):  # a partly named shape: keep no dims rather than invent names
        dims = ()
    if hasattr(fgraph.ModelVar, "__props__") and "name" in fgraph.ModelVar.__props__:  # PyMC >= 6
        if kind == "free":
            out = fgraph.model_free_rv(var, value, transform, name, *dims)
        elif kind == "observed":
            out = fgraph.model_observed_rv(var, value, name, *dims)
        else:
            out = getattr(fgraph, f"model_{kind}")(var, name, *dims)
    else:
        if kind == "free":
            out = fgraph.model_free_rv(var, value, transform, *dims)
        elif kind == "observed":
            out = fgraph.model_observed_rv(var, value, *dims)
        else:
            out = getattr(fgraph, f"model_{kind}")(var, *dims)
    out.name = name
    return out


def fgraph_of_model(model: Any) -> tuple[Any, dict[str, Any]]:
    """``(FunctionGraph, initial values by variable name)`` of ``model``, for a transform that rebuilds it.

    PyMC's ``fgraph_from_model`` refuses models with ``initval=``; their (numeric)
    initial values are set aside here and put back by :func:`model_of_fgraph`. The
    user's model is left as it was, also on failure.
    """
    from pymc.model.fgraph import fgraph_from_model
    from pytensor.graph.basic import Constant, Variable

    saved = dict(model.rvs_to_initial_values)
    initvals = {rv.name: value for rv, value in saved.items() if value is not None}
    symbolic = sorted(n for n, v in initvals.items() if isinstance(v, Variable) and not isinstance(v, Constant))
    if symbolic:
        raise ValueError(
            f"initval of {symbolic} is a symbolic expression; give numbers (or leave initval out) to use this "
            "model here. Nothing was spent."
        )
    try:
        for rv in saved:
            model.rvs_to_initial_values[rv] = None
        fg, _ = fgraph_from_model(model, inlined_views=True)
    finally:
        model.rvs_to_initial_values.update(saved)
    fg._pmdp_order = list(model.named_vars)  # the variables' order, restored by model_of_fgraph
    return fg, initvals


def model_of_fgraph(fg: Any, initvals: Mapping[str, Any] | None = None, order: Sequence[str] = ()) -> Any:
    """The model of a graph from :func:`fgraph_of_model`, with its initial values back on its free variables.

    PyMC registers the variables in a topological order of the graph, which leaves
    independent variables in an order that can change from one call to the next (it
    follows object identities). The free variables set the layout of the sampler's
    vector, so with a fixed ``random_seed`` two rebuilds of one model could sample
    differently; the variables are therefore put back in ``order`` (default: the
    original model's, recorded by :func:`fgraph_of_model`), new ones after them by name.
    """
    from pymc.model.fgraph import model_from_fgraph

    order = order or getattr(fg, "_pmdp_order", ())
    model = model_from_fgraph(fg, mutate_fgraph=True)
    rank = {name: i for i, name in enumerate(order)}

    def key(name: str) -> tuple[int, str]:
        return rank.get(name, len(rank)), name

    for group in (model.free_RVs, model.observed_RVs, model.potentials, model.deterministics, model.data_vars):
        group.sort(key=lambda v: key(v.name))
    named = sorted(model.named_vars.items(), key=lambda item: key(item[0]))
    model.named_vars.clear()
    model.named_vars.update(named)
    free = {rv.name: rv for rv in model.free_RVs}
    for name, value in (initvals or {}).items():
        if name in free:
            model.rvs_to_initial_values[free[name]] = value
    return model


def warn_at_caller(message: str, category: type[Warning]) -> None:
    """``warnings.warn`` reported at the first frame outside pymc_dp: the user's own line that led here."""
    import os
    import sys
    import warnings

    package = os.path.dirname(os.path.abspath(__file__)) + os.sep
    frame, level = sys._getframe(1), 2  # stacklevel 2 is the frame that called this function
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


# --------------------------------------------------------------------------- released inputs

#: The tag on a shared variable that holds numbers already released (privatised statistics, their
#: noise scale, a release design's constants): post-processing of them is not data-dependent.
_RELEASED_TAG = "pymc_dp_released"


def mark_released(var: Any) -> Any:
    """Tag the shared variable ``var`` as holding released (already private) or public numbers; returns it."""
    setattr(var.tag, _RELEASED_TAG, True)
    return var


def is_released(var: Any) -> bool:
    """Whether ``var`` was tagged by :func:`mark_released`."""
    tag = getattr(var, "tag", None)
    return bool(getattr(tag, _RELEASED_TAG, False))
