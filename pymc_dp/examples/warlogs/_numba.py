"""numba for the case study's kernels: an optional dependency (the ``warlogs`` extra).

With numba, :func:`jit` is ``numba.njit(cache=True, ...)`` and :data:`prange` is
``numba.prange``. Without it the modules still import: :func:`jit` leaves the function
as it is and :data:`prange` is ``range``, and each caller either falls back to NumPy
(:mod:`~pymc_dp.examples.warlogs.ffbs`) or calls :func:`require` first, which raises
an ImportError that says what to install (:mod:`~pymc_dp.examples.warlogs.laplace_counts`).
"""

from __future__ import annotations

from typing import Any, Callable

try:
    import numba
except ImportError:  # pragma: no cover - exercised in a subprocess by tests/test_optional_numba.py
    numba = None

__all__ = ["AVAILABLE", "INSTALL", "jit", "prange", "require"]

#: Whether numba could be imported.
AVAILABLE: bool = numba is not None
#: The command that installs it with the case study's version floor.
INSTALL = 'pip install "pymc-dp[warlogs]"'

prange: Any = numba.prange if numba is not None else range


def jit(**options: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``numba.njit(cache=True, **options)``, or the identity when numba is missing."""
    if numba is None:
        return lambda fn: fn
    return numba.njit(cache=True, **options)


def require(what: str) -> None:
    """Raise an ImportError naming ``what`` and :data:`INSTALL` when numba is missing.

    Raises
    ------
    ImportError
        If numba cannot be imported.
    """
    if numba is None:
        raise ImportError(
            f"{what} needs numba, an optional dependency of the war-logs case study; install it with {INSTALL}."
        )
