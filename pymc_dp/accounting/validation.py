"""Argument checks shared by every layer that takes privacy parameters.

Each check raises :class:`ValueError` naming the argument and saying what a valid
value looks like, so that a mistyped ε never silently becomes a privacy leak.
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np

__all__ = [
    "check_epsilon",
    "check_delta",
    "check_sensitivity",
    "check_count",
    "check_probability",
    "check_finite_array",
    "check_finite_number",
    "NEIGHBOURING_RELATIONS",
    "check_neighbouring",
]

#: The neighbouring relations the project knows. ``"replace"``: data sets of the same
#: public size N differing in one record (bounded DP, the default of the theory);
#: ``"add_remove"``: one data set is the other plus one record (unbounded DP).
NEIGHBOURING_RELATIONS = ("replace", "add_remove")


def _as_real(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (Real, np.floating, np.integer)):
        try:
            arr = np.asarray(value)
        except Exception:  # pragma: no cover - exotic objects
            arr = None
        if arr is None or arr.shape != () or arr.dtype.kind not in "fiu":
            raise ValueError(f"{name} must be a real number, got {value!r}.")
        value = arr.item()
    try:
        return float(value)
    except OverflowError:  # an int beyond the double range: as good as infinite
        return math.inf if value > 0 else -math.inf


def check_finite_number(value: object, name: str, *, hint: str = "") -> float:
    """Return ``value`` as a float after checking it is a finite real number (not a bool).

    An int beyond the double range counts as infinite. ``hint`` is appended to the error.
    """
    if isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be a finite number, got {value!r}.{hint}")
    x = _as_real(value, name)
    if not math.isfinite(x):
        raise ValueError(f"{name} must be a finite number, got {value!r}.{hint}")
    return x


def check_epsilon(epsilon: object, name: str = "epsilon", *, allow_zero: bool = False) -> float:
    """Return ``epsilon`` as a float after checking it is a finite positive number."""
    eps = _as_real(epsilon, name)
    if math.isnan(eps) or math.isinf(eps):
        raise ValueError(f"{name} must be finite, got {eps}. Pass a positive privacy parameter such as {name}=1.0.")
    if eps < 0 or (eps == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(
            f"{name} must be {bound}, got {eps}. A privacy parameter of zero or less buys nothing: "
            f"pass e.g. {name}=1.0."
        )
    return eps


def check_delta(delta: object, name: str = "delta") -> float:
    """Return ``delta`` as a float after checking it lies in [0, 1)."""
    d = _as_real(delta, name)
    if math.isnan(d) or math.isinf(d):
        raise ValueError(f"{name} must be finite and in [0, 1), got {d}.")
    if not 0.0 <= d < 1.0:
        raise ValueError(f"{name} must lie in [0, 1), got {d}. Typical values are far below 1/N, e.g. {name}=1e-6.")
    return d


def check_sensitivity(sensitivity: object, name: str = "sensitivity") -> float:
    """Return ``sensitivity`` as a float after checking it is finite and non-negative."""
    s = _as_real(sensitivity, name)
    if math.isnan(s) or math.isinf(s):
        raise ValueError(
            f"{name} must be finite, got {s}. An unbounded sensitivity cannot be made private: "
            "declare data bounds (clipping) or a parameter truncation so that it becomes finite."
        )
    if s < 0:
        raise ValueError(f"{name} must be >= 0, got {s}.")
    return s


#: The largest count (and subsampling size) accepted: int64's maximum. Larger numbers
#: are not counts of anything that ran, and would overflow the float arithmetic of
#: composition.
MAX_COUNT = 2**63 - 1


def check_count(count: object, name: str = "count") -> int:
    """Return ``count`` as an int after checking it is a whole number in [1, 2**63 - 1]."""
    if isinstance(count, bool) or not isinstance(count, (Integral, np.integer)):
        if isinstance(count, (float, np.floating)) and float(count).is_integer():
            count = int(count)
        else:
            raise ValueError(f"{name} must be a whole number >= 1, got {count!r}.")
    c = int(count)
    if c < 1:
        raise ValueError(f"{name} must be >= 1, got {c}.")
    if c > MAX_COUNT:
        raise ValueError(f"{name} must be at most 2**63 - 1, got {c}.")
    return c


def check_probability(p: object, name: str, *, open_low: bool = True, open_high: bool = False) -> float:
    """Return ``p`` as a float after checking it is a probability in (0, 1] (by default)."""
    q = _as_real(p, name)
    low_ok = q > 0 if open_low else q >= 0
    high_ok = q < 1 if open_high else q <= 1
    if math.isnan(q) or not (low_ok and high_ok):
        lo = "(0" if open_low else "[0"
        hi = "1)" if open_high else "1]"
        raise ValueError(f"{name} must lie in {lo}, {hi}, got {q}.")
    return q


def check_finite_array(value: object, name: str = "value") -> np.ndarray:
    """Return ``value`` as a float array after checking it has no NaN or infinite entry."""
    try:
        raw = np.asarray(value)
        if raw.dtype.kind == "c":  # NumPy would silently drop the imaginary part
            raise ValueError(f"got complex values; pass {name}.real if the imaginary part is meant to be dropped")
        arr = raw.astype(float, copy=False)
    except (TypeError, ValueError, OverflowError) as err:
        raise ValueError(f"{name} must be numeric, got {type(value).__name__}: {err}") from None
    bad = ~np.isfinite(arr)
    if bad.any():
        raise ValueError(
            f"{name} has {int(bad.sum())} NaN or infinite entr{'y' if bad.sum() == 1 else 'ies'}; "
            "drop or impute them before privatising (noise cannot hide a NaN)."
        )
    return arr


def check_neighbouring(neighbouring: object, name: str = "neighbouring") -> str:
    """Return the neighbouring relation after checking it is one the project knows."""
    if neighbouring not in NEIGHBOURING_RELATIONS:
        raise ValueError(
            f"{name} must be one of {NEIGHBOURING_RELATIONS}, got {neighbouring!r}. "
            "'replace' (bounded DP, N public) is the default of the theory."
        )
    return str(neighbouring)
