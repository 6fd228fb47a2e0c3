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

__all__ = ["as_array", "is_dask", "compute", "n_records"]


def is_dask(x: Any) -> bool:
    """Whether ``x`` is a Dask collection (checked without importing Dask)."""
    return type(x).__module__.split(".")[0] == "dask"


def as_array(data: Any, name: str = "data") -> Any:
    """Records as a 1-D or 2-D float array: NumPy for in-memory data, Dask for Dask data.

    pandas Series/DataFrames become NumPy arrays; Dask DataFrames/Series become Dask
    arrays with known chunk lengths. Anything else goes through ``np.asarray``.
    """
    if is_dask(data):
        if hasattr(data, "to_dask_array"):  # dask DataFrame / Series
            data = data.to_dask_array(lengths=True)
        return data.astype(float)
    if hasattr(data, "to_numpy") and callable(data.to_numpy):  # pandas
        data = data.to_numpy()
    try:
        if np.iscomplexobj(data):  # NumPy would silently drop the imaginary part
            raise ValueError("got complex values")
        arr = np.asarray(data, dtype=float)
    except (TypeError, ValueError, OverflowError) as err:
        raise ValueError(f"{name} must be numeric records (an array, pandas or Dask object): {err}") from None
    return arr


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
