"""The one place that knows how a trace object is laid out.

PyMC 5 / ArviZ < 1 return :class:`arviz.InferenceData`; PyMC 6 / ArviZ >= 1 return
:class:`xarray.DataTree` (each group a child node). Everything else in ``pymc_dp``
goes through the small functions below and works on plain :class:`xarray.Dataset`
groups, so that moving to PyMC 6 means changing this module only.

Only the InferenceData branch is exercised with a real PyMC here (PyMC 6 needs
Python >= 3.12); the DataTree branch is deliberately tiny and is tested on
hand-built ``xarray.DataTree`` objects.
"""

from __future__ import annotations

from collections.abc import Mapping
from os import PathLike
from typing import Any

import xarray as xr

try:  # ArviZ < 1
    from arviz import InferenceData as _InferenceData
except ImportError:  # pragma: no cover - ArviZ >= 1 has no InferenceData
    _InferenceData = None

_DataTree = getattr(xr, "DataTree", None)

__all__ = [
    "is_trace",
    "group_names",
    "get_group",
    "with_group",
    "new_trace",
    "get_attrs",
    "with_attrs",
    "load",
]


def _is_idata(obj: object) -> bool:
    return _InferenceData is not None and isinstance(obj, _InferenceData)


def _is_datatree(obj: object) -> bool:
    return _DataTree is not None and isinstance(obj, _DataTree)


def is_trace(obj: object) -> bool:
    """Return True for an ``InferenceData`` or an ``xarray.DataTree``."""
    return _is_idata(obj) or _is_datatree(obj)


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
    if _is_idata(obj):
        groups = {g: obj[g].copy() for g in group_names(obj) if g != name}
        groups[name] = ds
        return new_trace(groups, obj.attrs, like=obj)
    tree = obj.copy()
    tree[name] = _DataTree(ds)
    return tree


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
    """Read a trace saved with ``to_netcdf`` (whichever trace type this ArviZ uses)."""
    import arviz as az

    return az.from_netcdf(str(path))
