"""Reading and checking distribution parameters and family arguments (shared by the families)."""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Iterator

import numpy as np

from ..accounting.validation import check_count as _check_count
from ..accounting.validation import check_finite_number, check_neighbouring
from .base import Family, rv_op_name
from .._evaluate import evaluate

__all__ = [
    "check_count",
    "constant_count",
    "positive_float",
    "scalar_param",
    "constant_value",
    "rate_from_scale",
    "require_op",
    "clip_interval",
    "relation",
    "per_record_parameters",
    "per_record_allowed",
]

_PER_RECORD: ContextVar[bool] = ContextVar("pymc_dp_per_record_parameters", default=False)


@contextmanager
def per_record_parameters() -> Iterator[None]:
    """Within this block, families accept parameters that vary by record when they are functions of
    model variables (e.g. a mixture mean ``mu[z]``), as the log-likelihood sensitivity needs only
    their range. Constant per-record arrays (data) are still refused.
    """
    token = _PER_RECORD.set(True)
    try:
        yield
    finally:
        _PER_RECORD.reset(token)


def per_record_allowed(param: Any) -> bool:
    """Whether ``param`` may vary by record here: inside :func:`per_record_parameters`, and not a constant."""
    return _PER_RECORD.get() and not constant_value_graph(param)


def constant_value_graph(param: Any) -> bool:
    """Whether the graph of ``param`` has constants as its only inputs."""
    try:
        from pytensor.graph.traversal import graph_inputs
    except ImportError:  # pragma: no cover - older PyTensor
        from pytensor.graph.basic import graph_inputs
    from pytensor.graph.basic import Constant

    return all(isinstance(v, Constant) for v in graph_inputs([param]))


def check_count(value: Any, what: str, *, minimum: int = 1) -> int:
    """``value`` as a Python int ≥ ``minimum`` (integral floats accepted), else a ValueError naming ``what``.

    The shared :func:`pymc_dp.accounting.validation.check_count`: booleans and strings are refused.
    """
    return _check_count(value, what, minimum=minimum)


def constant_count(param: Any, what: str, family: str) -> int:
    """The value of a constant, scalar integer distribution parameter (e.g. a number of trials)."""
    import pytensor.tensor as pt
    from pytensor.tensor.exceptions import NotScalarConstantError

    param = pt.as_tensor_variable(param)
    if any(dim != 1 for dim in param.type.shape):
        raise ValueError(
            f"the {family} parameter {what!r} has static shape {tuple(param.type.shape)}: it must be one constant "
            "shared by all records (per-record trial counts are not supported yet)."
        )
    try:
        value = pt.get_underlying_scalar_constant_value(param)
    except NotScalarConstantError:
        if constant_value_graph(param):  # e.g. a slice of an added axis, as PyMC writes n after imputing missing values
            return check_count(evaluate(param).item(), f"the {family} parameter {what!r}")
        raise ValueError(
            f"the {family} parameter {what!r} must be a constant (the sensitivity depends on it), got the "
            f"variable {param!r}."
        ) from None
    return check_count(np.asarray(value).item(), f"the {family} parameter {what!r}")


def positive_float(value: Any, what: str, family: str) -> float:
    """``value`` as a finite float > 0, or a ValueError naming it (strings and booleans are refused)."""
    out = check_finite_number(value, f"family {family!r}: {what}")
    if not out > 0:
        raise ValueError(f"family {family!r}: {what} must be finite and > 0, got {out:g}.")
    return out


def scalar_param(param: Any, what: str, family: str, hint: str = "") -> Any:
    """A distribution parameter as a PyTensor scalar, or a ValueError if it varies by record.

    A static shape of ``()`` or all ones (e.g. ``(1,)``) is one value shared by all
    records; anything else (a vector of per-record values, or an unknown static
    shape) is refused.
    """
    import pytensor.tensor as pt
    from pytensor.tensor.type import discrete_dtypes

    param = pt.as_tensor_variable(param)
    shape = tuple(param.type.shape)
    if any(dim != 1 for dim in shape) and per_record_allowed(param):
        return pt.cast(param, "float64") if param.dtype in discrete_dtypes else param
    if any(dim != 1 for dim in shape):
        raise ValueError(
            f"the {family} parameter {what!r} has static shape {shape}: it must be one value shared by all records "
            "(per-record parameters are not one exponential-family statistic: the Laplace route needs one summed "
            "statistic for the whole data set)." + hint
        )
    if shape:
        param = param.reshape(())
    if param.dtype in discrete_dtypes:
        param = pt.cast(param, "float64")
    return param


def constant_value(param: Any) -> float | None:
    """The value of a parameter whose graph depends on constants only, else None."""
    if constant_value_graph(param):
        value = evaluate(param)
        if value.size != 1:
            raise ValueError(f"expected one value shared by all records, got a constant of shape {value.shape}.")
        return float(value.reshape(()))
    return None


def rate_from_scale(scale: Any) -> Any:
    """``1 / scale`` — PyMC stores Exponential and Gamma by scale; unwrap ``reciprocal(rate)`` if present."""
    import pytensor.scalar as ps
    import pytensor.tensor as pt
    from pytensor.tensor.elemwise import Elemwise

    owner = getattr(scale, "owner", None)
    if owner is not None and isinstance(owner.op, Elemwise) and isinstance(owner.op.scalar_op, ps.Reciprocal):
        return owner.inputs[0]
    return pt.reciprocal(scale)


def require_op(cls: type[Family], dist: Any, label: str) -> None:
    """ValueError unless ``dist`` was made by one of ``cls.pymc_ops``."""
    op = rv_op_name(dist)
    if op not in cls.pymc_ops:
        raise ValueError(f"expected a {label} distribution for the {cls.name} family, got {op!r}.")


def clip_interval(x: Any, lo: float, hi: float) -> tuple[Any, Any]:
    """Records clipped into [lo, hi] and the mask of those that were outside (NumPy or Dask)."""
    return np.clip(x, lo, hi), (x < lo) | (x > hi)


def relation(neighbouring: str) -> str:
    """The neighbouring relation, checked."""
    return check_neighbouring(neighbouring)
