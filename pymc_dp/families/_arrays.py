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

from ..accounting.validation import CONVERT_EXPLICITLY, as_records, check_numeric_array, numbers_entry_by_entry

__all__ = ["as_array", "is_dask", "compute", "n_records"]


def is_dask(x: Any) -> bool:
    """Whether ``x`` is a Dask collection (checked without importing Dask)."""
    return type(x).__module__.split(".")[0] == "dask"


def as_array(data: Any, name: str = "data") -> Any:
    """Records as a 1-D or 2-D float array: NumPy for in-memory data, Dask for Dask data.

    pandas Series/DataFrames become NumPy arrays; Dask DataFrames/Series become Dask
    arrays with known chunk lengths. Anything else goes through ``np.asarray``.
    Records are numbers (booleans count as 0/1); nothing is converted from text.

    What is refused depends on the data's declared type as a whole, never on one
    record's value: an array typed as text, dates or complex numbers (a ValueError naming
    ``name``, :func:`~pymc_dp.accounting.validation.check_numeric_array`), a pandas text
    or categorical column, a Dask array of such a dtype. Where the type follows the records
    — a list or pandas column mixing numbers with None, ``pd.NA`` or text (an object
    array), an integer beyond the double range, a masked entry — the records are read
    entry by entry: an entry that is not a number, or masked, becomes NaN, a malformed
    record that :func:`~pymc_dp.families.privatize` replaces by the family's default
    record (counted for the curator only), and one beyond the double range ±∞. A
    refusal there would say, for free, that some record is malformed.
    """
    if is_dask(data):
        if hasattr(data, "to_dask_array"):  # dask DataFrame / Series
            data = data.to_dask_array(lengths=True)
        if isinstance(getattr(data, "_meta", None), np.ma.MaskedArray):  # masked entries: NaN, chunk by chunk
            import dask.array as da

            data = da.ma.filled(data.astype(float), np.nan)
        if np.dtype(data.dtype).kind not in "biuf":  # checked by dtype: the chunks stay where they are
            raise ValueError(
                f"{name} must be numeric records, got a Dask array of dtype {data.dtype} (strings, objects, dates "
                f"or complex values). {CONVERT_EXPLICITLY}"
            )
        return data.astype(float)
    if hasattr(data, "to_numpy") and callable(data.to_numpy):  # pandas
        dtypes = data.dtypes if hasattr(data, "dtypes") and not hasattr(data, "dtype") else [data.dtype]
        declared = [str(t) for t in dtypes if str(t).startswith("string") or str(t) == "category"]
        if declared:
            raise ValueError(f"{name} must be numeric records, got a pandas column of dtype {declared[0]}. "
                             f"{CONVERT_EXPLICITLY}")
        data = data.to_numpy()
        if data.dtype.kind == "c":  # a pandas column is complex only because some record is
            data = data.astype(object)
    mask = None
    if np.ma.isMaskedArray(data):
        mask = np.ma.getmaskarray(data)
        data = np.ma.getdata(data)
    if not isinstance(data, np.ndarray):
        data = as_records(data)  # a list's type never follows one entry
    if data.dtype.kind == "O":  # the type follows the records: entry by entry
        data = numbers_entry_by_entry(data)
    if data.dtype.kind in "US":  # an array typed as text: refused by its type, quoting no record
        raise ValueError(f"{name} must be numeric records, got an array of strings (dtype {data.dtype}). {CONVERT_EXPLICITLY}")
    # arrays typed as dates or complex numbers are refused, whatever their values
    out = check_numeric_array(data, name).astype(float, copy=False)
    if mask is not None and mask.any():
        out = np.where(mask, np.nan, out)
    return out


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
