"""Running the analyst's code on private records without letting anything of the run out.

A function the analyst wrote (a query, a per-record statistic) runs on the private records
inside a mechanism. Whatever it says on the way — an exception and its message, a warning
(NumPy's "invalid value encountered" says some record made it NaN), a line printed — depends
on the records and is charged for by no ε. :func:`quietly` silences all of it for the
duration of the call: floating-point warnings off, every warning recorded and dropped,
standard output and error swallowed. Exceptions are the caller's to handle (counted as a
failed record, never re-raised with their message).
"""

from __future__ import annotations

import contextlib
import io
import warnings
from typing import Iterator

import numpy as np

__all__ = ["quietly"]


@contextlib.contextmanager
def quietly() -> Iterator[None]:
    """Silence warnings, NumPy floating-point reports and printed output inside the block."""
    sink = io.StringIO()
    with warnings.catch_warnings(record=True), np.errstate(all="ignore"), \
            contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        warnings.simplefilter("always")
        yield
