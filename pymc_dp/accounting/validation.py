"""Argument checks shared by every layer that takes privacy parameters.

Each check raises :class:`ValueError` naming the argument and saying what a valid
value looks like, so that a mistyped ε never silently becomes a privacy leak.
"""

from __future__ import annotations

import datetime
import decimal
import enum
import math
from collections.abc import Mapping
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
    "check_numeric_array",
    "numbers_entry_by_entry",
    "as_records",
    "check_mapping",
    "check_model_bounds",
    "check_interval",
    "check_sensitivity_finite",
    "check_noise_scale",
    "MAX_NOISE_SCALE",
    "MODEL_BOUNDS_SHAPE",
    "MODEL_BOUNDS_EXAMPLE",
    "NEIGHBOURING_RELATIONS",
    "Neighbouring",
    "check_neighbouring",
]

#: The neighbouring relations the project knows. ``"replace"``: data sets of the same
#: public size N differing in one record (bounded DP, the default of the theory);
#: ``"add_remove"``: one data set is the other plus one record (unbounded DP).
class Neighbouring(str, enum.Enum):
    """The neighbouring relations a ledger's guarantees are stated under.

    ``REPLACE`` (bounded DP, the default of the theory): neighbouring data sets differ in
    one record's value and have the same size, so N is public. ``ADD_REMOVE``
    (unbounded DP): one has one record more, so N is private. Every argument that takes
    a relation takes a member or its string value (``"replace"``, ``"add_remove"``);
    ledgers store the string.
    """

    REPLACE = "replace"
    ADD_REMOVE = "add_remove"

    def __str__(self) -> str:
        return self.value


#: The relations' string values, as ledgers store them.
NEIGHBOURING_RELATIONS = tuple(n.value for n in Neighbouring)


#: What every refusal of a non-number adds: nothing is converted behind the caller's back.
CONVERT_EXPLICITLY = (
    "pymc_dp does not convert text or other objects to numbers: pass numbers (convert explicitly, "
    "e.g. float(x) or np.asarray(x, dtype=float), once you have checked the values)."
)


def describe_non_number(value: object) -> str | None:
    """What ``value`` is when it is not a real number (``"the string '1'"``, ``"None"``, ...); None if it is one.

    Real numbers are Python and NumPy ints and floats, fractions and decimals, and
    0-d arrays of them. Booleans, strings, bytes, complex numbers, dates, times and
    None are not, whatever they would convert to.
    """
    if isinstance(value, np.ndarray) and value.shape == ():
        value = value[()]
    if value is None or type(value).__name__ in ("NAType", "NaTType"):  # None, pd.NA, pd.NaT
        return f"{value!r} (a missing value)"
    if isinstance(value, str):
        return f"the string {str(value)!r}"
    if isinstance(value, bytes):
        return f"the bytes {bytes(value)!r}"
    if isinstance(value, (bool, np.bool_)):
        return f"the boolean {value!r}"
    if isinstance(value, (complex, np.complexfloating)):
        return f"the complex number {value!r}"
    if isinstance(value, (np.datetime64, np.timedelta64, datetime.date, datetime.time, datetime.timedelta)):
        return f"the date/time {value!r}"
    if isinstance(value, (Real, np.integer, np.floating, decimal.Decimal)):
        return None
    return f"{type(value).__name__} {value!r}"


def _as_real(value: object, name: str) -> float:
    if isinstance(value, np.ndarray) and value.shape == ():
        value = value[()]  # a 0-d array is its element
    what = describe_non_number(value)
    if what is not None and not isinstance(value, (str, bytes, bool, np.bool_, complex, np.complexfloating)):
        try:  # other array-likes holding one real number (e.g. a 0-d xarray or JAX array)
            arr = np.asarray(value)
        except Exception:  # pragma: no cover - exotic objects
            arr = None
        if arr is not None and arr.shape == () and arr.dtype.kind in "fiu":
            what, value = None, arr.item()
    if what is not None:
        raise ValueError(f"{name} must be a real number, got {what}. {CONVERT_EXPLICITLY}")
    try:
        return float(value)  # type: ignore[arg-type]
    except OverflowError:  # an int beyond the double range: as good as infinite
        return math.inf if value > 0 else -math.inf  # type: ignore[operator]


def check_finite_number(value: object, name: str, *, hint: str = "") -> float:
    """Return ``value`` as a float after checking it is a finite real number (not a bool).

    An int beyond the double range counts as infinite. ``hint`` is appended to the error.
    """
    x = _as_real(value, name)  # refuses booleans, strings and other non-numbers
    if not math.isfinite(x):
        shown = repr(value) if len(repr(value)) <= 40 else f"{repr(value)[:12]}… (beyond the double range)"
        raise ValueError(f"{name} must be a finite number, got {shown}.{hint}")
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


def check_count(count: object, name: str = "count", *, minimum: int = 1) -> int:
    """Return ``count`` as an int after checking it is a whole number in [``minimum``, 2**63 - 1].

    Integral floats (``3.0``) and 0-d arrays are accepted; booleans, strings and
    fractional values are not.
    """
    if isinstance(count, np.ndarray) and count.shape == ():
        count = count[()]
    if isinstance(count, (bool, np.bool_)) or not isinstance(count, (Integral, np.integer)):
        if isinstance(count, (float, np.floating)) and float(count).is_integer():
            count = int(count)
        else:
            what = describe_non_number(count) or repr(count)
            tail = f" {CONVERT_EXPLICITLY}" if describe_non_number(count) else ""
            raise ValueError(f"{name} must be a whole number >= {minimum}, got {what}.{tail}")
    c = int(count)
    if c < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {c}.")
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


def _first_non_number(arr: np.ndarray, allow_bool: bool) -> tuple[tuple[int, ...], str] | None:
    """Index and description of the first element of an object array that is not a real number."""
    bad_types = {t for t in set(map(type, arr.flat)) if not _is_number_type(t, allow_bool)}
    if not bad_types:
        return None
    for i, v in enumerate(arr.flat):
        if type(v) in bad_types:
            return tuple(int(j) for j in np.unravel_index(i, arr.shape)), describe_non_number(v) or repr(v)
    return None  # pragma: no cover - unreachable


def _is_number_type(t: type, allow_bool: bool) -> bool:
    if issubclass(t, (np.timedelta64, np.complexfloating, complex)):  # np.timedelta64 is a NumPy integer
        return False
    if issubclass(t, (bool, np.bool_)):
        return allow_bool
    return issubclass(t, (Real, np.integer, np.floating, decimal.Decimal))


def check_numeric_array(value: object, name: str = "value", *, allow_bool: bool = True) -> np.ndarray:
    """Return ``value`` as a NumPy array of booleans, integers or floats, or raise a ValueError naming it.

    Refused, wherever they sit in the array: strings and bytes (``["1", "2"]`` is not
    silently parsed), None and other missing values, complex numbers, dates and
    times, objects that are not numbers, and booleans unless ``allow_bool`` (records
    may be 0/1 flags; bounds and parameters may not). Object arrays whose every
    element is a real number become float arrays. NaN and infinities are left to the
    caller.
    """
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError) as err:  # e.g. ragged nesting
        raise ValueError(f"{name} must be numeric (an array of numbers), got {type(value).__name__}: {err}") from None
    kind = arr.dtype.kind
    if kind in "iuf" or (kind == "b" and allow_bool):
        return arr
    if kind == "b":
        raise ValueError(f"{name} must be numeric, got booleans. {CONVERT_EXPLICITLY}")
    if kind == "O":
        bad = _first_non_number(arr, allow_bool)
        if bad is None:
            try:
                return arr.astype(float)
            except OverflowError:
                raise ValueError(
                    f"{name} must be numeric within the double range, got an integer beyond it (about ±1.8e308)."
                ) from None
        index, what = bad
        at = f"{name}[{', '.join(map(str, index))}]" if index else name
        if "missing value" in what:
            raise ValueError(
                f"{name} must be numeric, got a missing value at {at} ({what.split(' (')[0]}); drop or impute "
                "missing values before privatising (noise cannot hide a missing value)."
            )
        raise ValueError(f"{name} must be numeric, got {what} at {at}. {CONVERT_EXPLICITLY}")
    if kind == "c":  # NumPy would silently drop the imaginary part
        raise ValueError(
            f"{name} must be numeric (real), got complex values; pass {name}.real if the imaginary part is meant "
            "to be dropped."
        )
    if kind in "US":
        sample = arr.flat[0].item() if arr.size else ""
        raise ValueError(f"{name} must be numeric, got strings (dtype {arr.dtype}, e.g. {sample!r}). {CONVERT_EXPLICITLY}")
    if kind in "mM":
        raise ValueError(
            f"{name} must be numeric, got dates or times (dtype {arr.dtype}); convert them to numbers in the unit "
            "you mean, e.g. (t - t0) / np.timedelta64(1, 'D') for days."
        )
    raise ValueError(f"{name} must be numeric, got dtype {arr.dtype}. {CONVERT_EXPLICITLY}")


def check_finite_array(value: object, name: str = "value", *, allow_bool: bool = True, fix: str | None = None) -> np.ndarray:
    """Return ``value`` as a float array after checking it is numeric with no NaN or infinite entry.

    Non-numbers are refused as by :func:`check_numeric_array`; booleans count as 0/1
    unless ``allow_bool`` is False. ``fix`` replaces the refusal's advice (by default,
    for records about to be privatised).
    """
    arr = check_numeric_array(value, name, allow_bool=allow_bool).astype(float, copy=False)
    bad = ~np.isfinite(arr)
    if bad.any():
        raise ValueError(
            f"{name} has NaN or infinite entries; "
            + (fix or "drop or impute them before privatising (noise cannot hide a NaN). How many is not said: a "
               "refusal is read by whoever runs the call.")
        )
    return arr


def as_records(records: object) -> np.ndarray:
    """Private records as a NumPy array whose type never follows one record's value.

    ``np.asarray`` types a whole list by its entries: one text entry makes every record text,
    one complex entry makes every record complex, so that a single record would decide how
    all the others are read. Here such data (a list, or a pandas column typed by its values)
    becomes an object array instead, each record keeping its own value for the caller to
    read entry by entry (:func:`numbers_entry_by_entry`) or to hand to an analyst's function
    one record at a time. An array the caller built with a type (NumPy, a pandas column of a
    declared dtype) keeps it; a masked entry becomes NaN (missing). A ragged list (rows of
    unequal length) has no table shape and is refused by NumPy: pass records as an array or
    a DataFrame.
    """
    if np.ma.isMaskedArray(records):  # a masked entry is a missing value, never the value under the mask
        data = np.ma.getdata(records)
        holder = np.asarray(data, dtype=float if data.dtype.kind in "biuf" else object).copy()
        holder[np.ma.getmaskarray(records)] = np.nan
        arr = holder
    elif isinstance(records, np.ndarray):
        arr = records
    elif hasattr(records, "to_numpy") and callable(getattr(records, "to_numpy")):
        arr = np.asarray(records.to_numpy())  # type: ignore[union-attr]
    else:
        arr = np.asarray(records)
        if arr.dtype.kind in "USc":
            typed_by_entries = np.asarray(records, dtype=object)
            if typed_by_entries.shape == arr.shape:
                arr = typed_by_entries
    if arr.dtype.kind == "c":  # complex only because some record is: read entry by entry
        arr = arr.astype(object)
    return arr


def numbers_entry_by_entry(arr: np.ndarray) -> np.ndarray:
    """Floats from an object array: numbers as themselves (±∞ beyond the double range), anything else NaN.

    For records whose array type follows one record (a list mixing numbers with None or
    text): such an entry becomes a malformed record for the caller to replace and count,
    where refusing would say, for free, that some record is malformed.
    """

    def value(v: object) -> float:
        if not _is_number_type(type(v), True):
            return np.nan
        try:
            return float(v)  # type: ignore[arg-type]
        except OverflowError:  # an integer beyond the double range
            return np.inf if v > 0 else -np.inf  # type: ignore[operator]

    return np.asarray([value(v) for v in np.asarray(arr, dtype=object).reshape(-1)], dtype=float).reshape(
        np.shape(arr))


# --------------------------------------------------------------------------- mappings and bounds

#: The shape of a model's ``bounds=`` argument, and an example, for error messages.
MODEL_BOUNDS_SHAPE = "{observed variable: {parameter: (lower, upper)}}"
MODEL_BOUNDS_EXAMPLE = "bounds={'y': {'x': (0.0, 10.0)}} (Normal, Exponential, Gamma) or bounds={'y': {'upper': 50}} (Poisson)"


def check_mapping(value: object, name: str, *, shape: str, example: str) -> dict:
    """``value`` as a dict with string keys (None: empty), or a ValueError naming ``name``.

    ``shape`` describes what the mapping maps (e.g. ``"{parameter: (lower, upper)}"``)
    and ``example`` shows a valid call; both go into the error.
    """
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        pair = isinstance(value, (tuple, list)) and len(value) == 2
        raise ValueError(
            f"{name} must be a mapping {shape}, e.g. {example}; got {type(value).__name__} {value!r}"
            + (" (a bare pair does not say what it bounds)." if pair else ".")
        )
    out = dict(value)
    for key in out:
        if not isinstance(key, str):
            raise ValueError(f"{name} must be a mapping {shape} keyed by names (strings), e.g. {example}; got the key {key!r}.")
    return out


def check_model_bounds(bounds: object, name: str = "bounds") -> dict[str, dict]:
    """A model's data bounds ``{observed variable: {parameter: (lower, upper)}}`` as a dict of dicts.

    Checks the two levels are mappings keyed by names (None is no bounds, at either
    level); the pairs themselves are checked by each variable's family. Used by every
    entry point that takes a model's ``bounds=``.
    """
    outer = check_mapping(bounds, name, shape=MODEL_BOUNDS_SHAPE, example=MODEL_BOUNDS_EXAMPLE)
    return {
        var: check_mapping(
            inner, f"{name}[{var!r}]", shape="{parameter: (lower, upper)} for that variable's family",
            example=f"{name}={{{var!r}: {{'x': (0.0, 10.0)}}}}",
        )
        for var, inner in outer.items()
    }


def check_interval(pair: object, name: str, *, allow_equal: bool = False) -> tuple[float, float]:
    """A ``(lower, upper)`` pair of finite real numbers with lower < upper (≤ with ``allow_equal``).

    Strings, booleans, NaN, infinities and ints beyond the double range are refused
    with a ValueError naming ``name``.
    """
    items: list = []
    if not isinstance(pair, (str, bytes, Mapping, set, frozenset)):
        try:
            items = list(pair)  # type: ignore[call-overload]
        except TypeError:
            pass
    if len(items) != 2:
        raise ValueError(f"{name} must be a (lower, upper) pair of numbers, e.g. (0.0, 10.0); got {pair!r}.")
    lo, hi = (
        check_finite_number(v, f"{name} {end}", hint=" A NaN or infinite bound leaves the sensitivity unbounded.")
        for end, v in zip(("lower", "upper"), items)
    )
    if lo > hi or (lo == hi and not allow_equal):
        why = " (a single point: every record would be clipped to it)" if lo == hi else ""
        raise ValueError(f"{name} must have lower {'≤' if allow_equal else '<'} upper, got ({lo:g}, {hi:g}){why}.")
    return lo, hi


def check_sensitivity_finite(value: float, *, what: str, formula: str, declared: str, fix: str = "") -> float:
    """``value`` (a sensitivity computed from declared bounds or ranges) if finite, else a ValueError.

    The error says that ``declared`` (e.g. ``"bounds['x'] = (-1e+200, 1e+200)"``) are too
    wide for ``what`` to be finite in float64, shows ``formula`` (the computation that
    overflowed, with its numbers), and how to fix it (``fix``, by default: narrower
    bounds or rescaled data).
    """
    v = float(value)
    if math.isfinite(v):
        return v
    fix = fix or "Declare narrower bounds, or rescale the data (e.g. to other units) and the bounds with it."
    raise ValueError(
        f"{declared} are too wide for {what} to be finite in float64: {formula} overflows "
        f"(beyond {np.finfo(float).max:.3g}). {fix}"
    )


#: The largest noise scale pymc_dp draws with: the noise-aware likelihoods square it
#: (the Laplace variance is 2b²), which must stay finite in float64.
MAX_NOISE_SCALE = 1e150


def check_noise_scale(sensitivity: float, epsilon: float, *, declared: str) -> float:
    """The Laplace scale ``sensitivity / epsilon``, or a ValueError when it is too large to compute with.

    ``declared`` names what set the sensitivity (e.g. ``"bounds for 'y'"``). A scale
    beyond :data:`MAX_NOISE_SCALE` buries any statistic in noise and overflows the
    noise-aware likelihood (its square is the noise variance): the bounds, not the
    data, are the problem.
    """
    scale = float(sensitivity) / float(epsilon)
    if not scale <= MAX_NOISE_SCALE:
        raise ValueError(
            f"the noise scale Δ/ε = {float(sensitivity):.3g} / {float(epsilon):.3g} = {scale:.3g} set by the {declared} "
            f"is beyond {MAX_NOISE_SCALE:g}: the noise would bury any statistic and its variance (2b²) overflows "
            "float64. Declare bounds as tight as the data allow, or rescale the data (e.g. to other units) and the "
            "bounds with it."
        )
    return scale


def check_neighbouring(neighbouring: object, name: str = "neighbouring") -> str:
    """Return the neighbouring relation after checking it is one the project knows."""
    if neighbouring not in NEIGHBOURING_RELATIONS:
        raise ValueError(
            f"{name} must be one of {NEIGHBOURING_RELATIONS}, got {neighbouring!r}. "
            "'replace' (bounded DP, N public) is the default of the theory."
        )
    return neighbouring.value if isinstance(neighbouring, Neighbouring) else str(neighbouring)

