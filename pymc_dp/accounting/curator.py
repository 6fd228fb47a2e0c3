"""Curator-only reports: facts about the records that no ledger entry pays for.

How many records lay outside their declared bounds, how many feature rows were
projected onto their ball — the curator may want to know, but each is a function of
the records that no noise protects, and a warning is a release like any other (it
lands in logs and in published notebook cells; a refused call would print it at ε = 0).
So these reports are silent unless the curator asks for them, inside
``with pmdp.curator_reports():``, on a machine whose output is not released.
"""

from __future__ import annotations

import contextvars
import warnings
from contextlib import contextmanager
from typing import Iterator

__all__ = ["curator_reports", "curator_report", "curator_reports_enabled"]

_ENABLED: contextvars.ContextVar[bool] = contextvars.ContextVar("pymc_dp_curator_reports", default=False)


def curator_reports_enabled() -> bool:
    """Whether curator-only reports are shown in this context."""
    return _ENABLED.get()


@contextmanager
def curator_reports(enabled: bool = True) -> Iterator[None]:
    """Show (or, with ``enabled=False``, hide) curator-only reports inside the block.

    Examples
    --------
    >>> import pymc_dp as pmdp
    >>> with pmdp.curator_reports():   # doctest: +SKIP
    ...     pmdp.privatize(values, "normal", 1.0, bounds={"x": (0, 10)})   # warns how many were clipped
    """
    token = _ENABLED.set(bool(enabled))
    try:
        yield
    finally:
        _ENABLED.reset(token)


def curator_report(message: str, category: type[Warning], stacklevel: int = 2) -> None:
    """Warn ``message`` only inside :func:`curator_reports` (a fact about the records: not released)."""
    if _ENABLED.get():
        warnings.warn(message, category, stacklevel=stacklevel + 1)
