"""Array back-ends for record data: NumPy, pandas and Dask, behind one small interface.

A family writes its per-record statistics with ordinary array operations; these
helpers make them work whether the records are a NumPy array, a pandas object or
a Dask array/DataFrame. With Dask every reduction runs chunk by chunk on the
cluster and only the summed statistics (a handful of numbers) come back, so the
records never gather on one machine.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..accounting.validation import CONVERT_EXPLICITLY, check_numeric_array

__all__ = ["as_array", "is_dask", "compute", "n_records"]


def is_dask(x: Any) -> bool:
    """Whether ``x`` is a Dask collection (checked without importing Dask)."""
    return type(x).__module__.split(".")[0] == "dask"


def as_array(data: Any, name: str = "data") -> Any:
    """Records as a 1-D or 2-D float array: NumPy for in-memory data, Dask for Dask data.

    pandas Series/DataFrames become NumPy arrays; Dask DataFrames/Series become Dask
    arrays with known chunk lengths. Anything else goes through ``np.asarray``.
    Records must be numbers (booleans count as 0/1): strings, None, dates, complex
    values and other objects are a ValueError naming ``name``
    (:func:`~pymc_dp.accounting.validation.check_numeric_array`), never converted.
    """
    if is_dask(data):
        if hasattr(data, "to_dask_array"):  # dask DataFrame / Series
            data = data.to_dask_array(lengths=True)
        if isinstance(getattr(data, "_meta", None), np.ma.MaskedArray):
            raise ValueError(
                f"{name} is a masked Dask array: missing values cannot be privatised (how many are missing is itself "
                "private). Drop the incomplete records and pass complete data."
            )
        if np.dtype(data.dtype).kind not in "biuf":  # checked by dtype: the chunks stay where they are
            raise ValueError(
                f"{name} must be numeric records, got a Dask array of dtype {data.dtype} (strings, objects, dates "
                f"or complex values). {CONVERT_EXPLICITLY}"
            )
        return data.astype(float)
    if hasattr(data, "to_numpy") and callable(data.to_numpy):  # pandas
        data = data.to_numpy()
    if np.ma.isMaskedArray(data):
        if np.ma.getmaskarray(data).any():
            raise ValueError(
                f"{name} is a masked array with masked entries: missing values "
                "cannot be privatised (how many are missing is itself private, and the values under the mask are "
                "not records). Drop the incomplete records and pass complete data."
            )
        data = np.ma.getdata(data)
    # strings, None, dates, complex values and other objects are refused, not coerced
    return check_numeric_array(data, name).astype(float, copy=False)


def compute(*exprs: Any) -> tuple[np.ndarray, ...]:
    """Evaluate lazy expressions in one pass (Dask) or return them as arrays (NumPy)."""
    if any(is_dask(e) for e in exprs):
        import dask

        exprs = dask.compute(*exprs)
    return tuple(np.asarray(e) for e in exprs)


def n_records(x: Any) -> int:
    """The number of records (rows)."""
    n = x.shape[0]
    if n is None or (isinstance(n, float) and np.isnan(n)):  # pragma: no cover - unknown dask lengths
        raise ValueError("the number of records is unknown; compute Dask chunk lengths first (lengths=True).")
    return int(n)


def shape_tail(x: Any) -> Sequence[int]:
    return tuple(x.shape[1:])
