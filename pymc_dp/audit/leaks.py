"""Scan a released trace (or any released object) for traces of the private records.

:func:`pymc_dp.release` builds what leaves the curator from a whitelist; this module
checks the result from the other side: given the released object and the private
records, it looks everywhere in the object for

1. **raw-data groups** (``observed_data``, ``constant_data``, ``log_likelihood``,
   ``predictions_constant_data``): their presence is a leak whatever they hold;
2. **record values**: a record value with many digits (a non-integer float with
   at least three significant digits) found exactly anywhere — in a variable, a
   coordinate, an attribute, or a number inside a JSON string such as the ledger;
3. **record sequences**: a run of consecutive records, in order, along any axis of
   any array or coordinate (this catches integer and boolean records, whose single
   values mean nothing), long enough not to occur by chance;
4. **exact statistics**: sums, sums of squares, means, variances, extremes,
   medians and counts of the records (and per-group counts and medians) that appear
   exactly although they should only have been released through a mechanism (see
   :func:`scan_for_leaks` for where they are looked for, and why);
5. **shapes**: a variable of imputed missing values, or a dimension whose length is
   private (the number of missing records; N under add/remove neighbouring).

:func:`scan_folder` runs the same checks on every file of a folder of artefacts
(report text, JSON, saved traces).

The scan is a test, not a proof: it finds data that was copied out, not data that was
transformed (a sum plus one, a record times two). A clean report means none of the
above was found. Numbers with few digits and runs of few-valued records are not
evidence (they occur by chance in any release), so the checks leave them out; see
:func:`scan_for_leaks` for the rules. The report says where each match is, never the
matched value, so that it can be shared without repeating the data.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import types
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import xarray as xr
from numpy.lib.stride_tricks import sliding_window_view

from .. import _compat

__all__ = [
    "scan_for_leaks",
    "scan_folder",
    "LeakReport",
    "Leak",
    "PrivacyLeakError",
    "RAW_DATA_GROUPS",
    "LEAK_KINDS",
    "STATISTIC_KINDS",
]

#: Trace groups that hold the records (or per-record functions of them) by construction.
RAW_DATA_GROUPS = ("observed_data", "constant_data", "log_likelihood", "predictions_constant_data")
#: The kinds of :class:`Leak`.
LEAK_KINDS = ("group", "value", "sequence", "statistic", "shape")
#: The statistic kinds :func:`scan_for_leaks` computes (names usable in ``allow=``): per record
#: array (and column), then ``n`` (the number of records), ``missing``/``observed`` (entries
#: that are NaN or not, when some are), and per group of records (``groups=``) ``group_count``
#: and ``group_median``.
STATISTIC_KINDS = (
    "sum", "sumsq", "mean", "var", "var_ddof1", "std", "std_ddof1", "min", "max", "median", "q25", "q75",
    "count", "XtX", "Xty", "n", "missing", "observed", "group_count", "group_median",
)

_SAMPLE_DIMS = ("chain", "draw")
_MAX_DISTINCT_FOR_COUNTS = 20
_MAX_GRAM_COLUMNS = 20
_MAX_DEPTH = 40
#: Integer statistics up to this magnitude are not looked for (see _distinctive).
_SMALL_INTEGER = 10
#: Expected number of chance matches tolerated by the sequence check (see _record_lanes_by_run).
_CHANCE = 1e-3
_HASH_BASE = 0xD6E8FEB86659FD93  # odd
_HASH_BASE_INV = pow(_HASH_BASE, -1, 2**64)
_BITMAP_MASK = np.uint64(2**22 - 1)
_FLOAT_TOKEN = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?\d+[eE][-+]?\d+")
#: Random hex identifiers — the ledger's SHA-256 content digests (64 digits) and its entries'
#: UUIDs (32, or dashed): uniformly random text, whose "4e5"-like runs are not numbers; reading
#: them as such flags an identifier that happens to spell a statistic.
_HEX_DIGEST = re.compile(r"[0-9a-f]{64}|[0-9a-f]{32}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


# --------------------------------------------------------------------------- report


@dataclasses.dataclass(frozen=True)
class Leak:
    """One finding of :func:`scan_for_leaks`.

    Attributes
    ----------
    kind
        ``"group"`` (a raw-data group or container), ``"value"`` (a record value),
        ``"sequence"`` (a run of consecutive records), ``"statistic"`` (an exact
        statistic of the records) or ``"shape"`` (a variable whose size depends on the
        data: PyMC's imputation of missing values, a dimension as long as a private count).
    where
        Where it was found, as a path: ``posterior/mu_sum``, ``posterior/coords/obs_id``,
        ``attrs/pymc_dp_ledger:entries[0].details.n``, ``entry.details.scale``; in a
        folder scan, the file first (``summary.txt:2`` is line 2 of ``summary.txt``,
        ``trace.nc/posterior/y_unobserved`` a variable of a saved trace).
    detail
        What was found there (which records or statistic, how many matches). Never
        the matched value itself.
    """

    kind: str
    where: str
    detail: str


class PrivacyLeakError(ValueError):
    """A released object contains traces of the private records (see :attr:`leaks`)."""

    def __init__(self, leaks: Sequence[Leak]) -> None:
        self.leaks = tuple(leaks)
        lines = [f"{len(self.leaks)} privacy leak(s) found in the released object:"]
        lines += [f"  [{leak.kind}] {leak.where}: {leak.detail}" for leak in self.leaks]
        super().__init__("\n".join(lines))


@dataclasses.dataclass(frozen=True)
class LeakReport:
    """What :func:`scan_for_leaks` found.

    The report has no truth value of its own (``if report:`` would be ambiguous: clean
    or leaky?), so ``bool(report)`` raises :class:`TypeError`; use :attr:`clean` or
    :meth:`raise_if_leaky`.

    Attributes
    ----------
    leaks
        Every finding, in the order the checks ran (groups, values, sequences,
        statistics).
    scanned
        How many arrays, coordinates and attribute values were examined (a scan that
        examined nothing proves nothing).
    statistics
        Names of the statistics that were looked for (after ``allow`` and the trivial
        values were removed); empty when the statistic check was off.
    files
        Folder scans (:func:`~pymc_dp.audit.scan_folder`): the files read, relative to
        the folder; empty for a scan of one object.
    skipped
        Folder scans: the files that were not read because their type is not one the
        scanner understands (they were not checked: look at them yourself).
    """

    leaks: tuple[Leak, ...] = ()
    scanned: int = 0
    statistics: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()

    @property
    def clean(self) -> bool:
        """True when nothing was found."""
        return not self.leaks

    def by_kind(self, kind: str) -> tuple[Leak, ...]:
        """The findings of one kind (one of :data:`LEAK_KINDS`)."""
        if kind not in LEAK_KINDS:
            raise ValueError(f"kind must be one of {LEAK_KINDS}, got {kind!r}.")
        return tuple(leak for leak in self.leaks if leak.kind == kind)

    def __bool__(self) -> bool:
        raise TypeError("a LeakReport has no truth value (clean or leaky?); use report.clean or report.raise_if_leaky().")

    def raise_if_leaky(self) -> None:
        """Raise :class:`PrivacyLeakError` listing the findings, if there are any.

        Raises
        ------
        PrivacyLeakError
            If the report is not clean.
        """
        if self.leaks:
            raise PrivacyLeakError(self.leaks)

    def summary_line(self) -> str:
        """One line: clean or how many leaks, and what was (not) scanned."""
        what = f"{len(self.files)} file(s), {self.scanned} items" if self.files else f"{self.scanned} items"
        verdict = "clean" if self.clean else f"{len(self.leaks)} LEAK(S)"
        tail = f"; not scanned: {', '.join(self.skipped)}" if self.skipped else ""
        return f"{verdict} ({what}, {len(self.statistics)} statistics looked for){tail}"

    def __str__(self) -> str:
        head = f"Leak scan: {self.scanned} items examined, {len(self.statistics)} statistics looked for"
        if self.files or self.skipped:
            head = f"Leak scan of {len(self.files)} file(s): {self.scanned} items examined, " \
                f"{len(self.statistics)} statistics looked for"
        tail = ""
        if self.skipped:
            tail = f"\n  not scanned (unknown file type): {', '.join(self.skipped)}"
        if not self.leaks:
            return head + " - clean (no leak found)." + tail
        rows = [("kind", "where", "detail")] + [(lk.kind, lk.where, lk.detail) for lk in self.leaks]
        w0 = max(len(r[0]) for r in rows)
        w1 = min(max(len(r[1]) for r in rows), 60)
        lines = [head + f" - {len(self.leaks)} LEAK(S):"]
        for i, (a, b, c) in enumerate(rows):
            lines.append(f"  {a:<{w0}}  {b:<{w1}}  {c}")
            if i == 0:
                lines.append(f"  {'-' * w0}  {'-' * w1}  {'-' * 6}")
        return "\n".join(lines) + tail


# --------------------------------------------------------------------------- records


@dataclasses.dataclass
class _Record:
    name: str
    values: np.ndarray  # float64, finite, ndim >= 1 (records with a missing entry left out)
    size: int = 0  # N: the records along the first axis, incomplete ones included
    missing: int = 0  # entries that were NaN (or masked): missing values
    derived: str = ""  # "counts" / "medians": per-group values computed from the records (groups=)
    raw: np.ndarray | None = dataclasses.field(default=None, repr=False)  # float64, NaN where missing


def _as_float_array(value: Any, label: str) -> np.ndarray:
    """A numeric array as float64, NaN where an entry is missing (NaN or masked)."""
    if isinstance(value, (str, bytes)) or value is None:
        raise TypeError(f"{label} must be an array of numbers, got {type(value).__name__}.")
    mask = np.ma.getmaskarray(value) if np.ma.isMaskedArray(value) else None
    try:
        arr = np.asarray(np.ma.getdata(value) if mask is not None else value)
    except Exception as err:  # pragma: no cover - exotic inputs
        raise TypeError(f"{label} cannot be read as an array: {err}") from None
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_):
        raise TypeError(f"{label} must hold numbers (int, float or bool), got dtype {arr.dtype}.")
    if np.iscomplexobj(arr):
        raise TypeError(f"{label} must hold real numbers, got dtype {arr.dtype}.")
    if arr.ndim == 0:
        raise ValueError(f"{label} must be an array of records (at least 1-D), got a scalar.")
    if arr.size == 0:
        raise ValueError(f"{label} is empty: there are no records to look for.")
    arr = arr.astype(np.float64) + 0.0  # + 0.0 turns -0.0 into 0.0
    if mask is not None and mask.any():
        arr[np.broadcast_to(mask, arr.shape)] = np.nan
    if np.isinf(arr).any():
        raise ValueError(f"{label} contains infinite values.")
    return arr


def _check_records(records: Any) -> list[_Record]:
    if isinstance(records, (str, bytes)) or records is None:
        raise TypeError(
            "records must be an array of the private records or a mapping name -> array, "
            f"got {type(records).__name__}."
        )
    if isinstance(records, Mapping):
        if not records:
            raise ValueError("records is an empty mapping: pass at least one array of private records.")
        items = [(str(k), v) for k, v in records.items()]
    else:
        items = [("records", records)]
    out = []
    for name, value in items:
        label = "records" if len(items) == 1 and name == "records" else f"records[{name!r}]"
        arr = _as_float_array(value, label)
        nan = np.isnan(arr)
        missing = int(nan.sum())
        values = arr
        if missing:
            # Missing values (NaN or masked entries): the other checks use the complete
            # records, in order; the number missing is itself a statistic (and a shape).
            complete = ~nan.reshape(arr.shape[0], -1).any(axis=1)
            if not complete.any():
                raise ValueError(f"{label} has no complete record: every record has a missing (NaN) entry.")
            values = arr[complete]
        out.append(_Record(name, values, size=int(arr.shape[0]), missing=missing, raw=arr))
    return out


def _group_keys(labels: Any, label: str) -> tuple[np.ndarray, list[str]]:
    """``(group index of each record, label of each group)`` for one label array or a tuple of them."""
    parts = list(labels) if isinstance(labels, tuple) else [labels]
    if not parts:
        raise ValueError(f"{label} is an empty tuple: give one label array, or a tuple of label arrays.")
    codes, uniques = [], []
    for part in parts:
        arr = np.asarray(part)
        if arr.ndim != 1:
            raise ValueError(f"{label} must hold one label per record (a 1-D array), got shape {arr.shape}.")
        if arr.dtype.kind not in "biufUSO":
            raise TypeError(f"{label} must hold labels (numbers or strings), got dtype {arr.dtype}.")
        u, inv = np.unique(arr.astype(str) if arr.dtype == object else arr, return_inverse=True)
        codes.append(inv.ravel())
        uniques.append(u)
    if len({c.size for c in codes}) != 1:
        raise ValueError(f"{label}: the label arrays of a combined group must have the same length.")
    if len(codes) == 1:
        index, used = codes[0], np.arange(uniques[0].size)
    else:
        flat = np.ravel_multi_index(codes, tuple(u.size for u in uniques))
        used, index = np.unique(flat, return_inverse=True)
    if len(codes) == 1:
        names = [str(x) for x in uniques[0]]
    else:
        cells = np.unravel_index(used, tuple(u.size for u in uniques))
        names = ["|".join(str(uniques[k][cells[k][g]]) for k in range(len(codes))) for g in range(used.size)]
    return index.ravel(), names


def _group_medians(values: np.ndarray, index: np.ndarray, groups: int) -> np.ndarray:
    """The median of ``values`` (1-D, NaN = missing) within each group; NaN for a group with none."""
    keep = ~np.isnan(values)
    v, g = values[keep], index[keep]
    order = np.lexsort((v, g))
    v, g = v[order], g[order]
    counts = np.bincount(g, minlength=groups)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    out = np.full(groups, np.nan)
    has = counts > 0
    lo = starts[has] + (counts[has] - 1) // 2
    hi = starts[has] + counts[has] // 2
    out[has] = (v[lo] + v[hi]) / 2.0
    return out


def _group_records(groups: Any, recs: list[_Record]) -> tuple[list[_Record], list[tuple[str, str, float]]]:
    """Per-group counts and medians as derived record arrays, and as single statistics when few groups.

    ``groups`` maps a name to the group label of each record (an array of length N),
    or to a tuple of such arrays (groups by their combination: region and month).
    """
    if groups is None:
        return [], []
    if not isinstance(groups, Mapping):
        raise TypeError(f"groups must be a mapping name -> labels of each record, got {type(groups).__name__}.")
    derived: list[_Record] = []
    singles: list[tuple[str, str, float]] = []
    for gname, labels in groups.items():
        gname = str(gname)
        index, names = _group_keys(labels, f"groups[{gname!r}]")
        n = index.size
        members = [r for r in recs if not r.derived and r.raw is not None and r.raw.ndim <= 2 and r.size == n]
        if not members:
            raise ValueError(
                f"groups[{gname!r}] labels {n} records, but no records array has {n} records along its first axis."
            )
        k = len(names)
        counts = np.bincount(index, minlength=k).astype(np.float64)
        derived.append(_Record(f"{gname}.count", counts, size=k, derived="counts"))
        few = k <= _MAX_DISTINCT_FOR_COUNTS
        if few:
            singles += [(f"{gname}.count[{names[g]}]", "group_count", float(counts[g])) for g in range(k)]
        for rec in members:
            columns = [(rec.name, rec.raw)] if rec.raw.ndim == 1 else [
                (f"{rec.name}[:,{j}]", rec.raw[:, j]) for j in range(rec.raw.shape[1])
            ]
            for cname, col in columns:
                med = _group_medians(col, index, k)
                name = f"{gname}.median({cname})"
                if np.isfinite(med).all():
                    derived.append(_Record(name, med, size=k, derived="medians"))
                if few:
                    singles += [(f"{name}[{names[g]}]", "group_median", float(med[g])) for g in range(k)
                                if np.isfinite(med[g])]
    return derived, singles


def _stat_entries(rec: _Record) -> list[tuple[str, str, float]]:
    """``(full name, kind, value)`` of the statistics of one record array."""
    out: list[tuple[str, str, float]] = []
    if rec.derived == "medians":  # looked for one by one (few groups) and as runs only
        return out

    def one(prefix: str, x: np.ndarray) -> None:
        n = x.size
        out.append((f"{prefix}.sum", "sum", float(x.sum())))
        out.append((f"{prefix}.sumsq", "sumsq", float((x * x).sum())))
        out.append((f"{prefix}.mean", "mean", float(x.mean())))
        out.append((f"{prefix}.var", "var", float(x.var())))
        out.append((f"{prefix}.std", "std", float(x.std())))
        if n > 1:
            out.append((f"{prefix}.var_ddof1", "var_ddof1", float(x.var(ddof=1))))
            out.append((f"{prefix}.std_ddof1", "std_ddof1", float(x.std(ddof=1))))
        out.append((f"{prefix}.min", "min", float(x.min())))
        out.append((f"{prefix}.max", "max", float(x.max())))
        q25, q50, q75 = np.quantile(x, [0.25, 0.5, 0.75])
        out.append((f"{prefix}.median", "median", float(q50)))
        out.append((f"{prefix}.q25", "q25", float(q25)))
        out.append((f"{prefix}.q75", "q75", float(q75)))
        if rec.derived:
            return
        distinct, counts = np.unique(x, return_counts=True)
        if distinct.size <= _MAX_DISTINCT_FOR_COUNTS:
            for v, c in zip(distinct, counts):
                out.append((f"{prefix}.count[{v:g}]", "count", float(c)))

    v = rec.values
    if not rec.derived and v.ndim <= 2:
        out.append((f"{rec.name}.n", "n", float(rec.size)))
    if rec.missing:
        out.append((f"{rec.name}.missing", "missing", float(rec.missing)))
        out.append((f"{rec.name}.observed", "observed", float(rec.raw.size - rec.missing)))
    if v.ndim == 2 and v.shape[1] > 1:
        one(rec.name, v.ravel())
        for j in range(v.shape[1]):
            one(f"{rec.name}[:,{j}]", v[:, j])
        if v.shape[1] <= _MAX_GRAM_COLUMNS:
            gram = v.T @ v
            for i in range(v.shape[1]):
                for j in range(i, v.shape[1]):
                    out.append((f"{rec.name}.XtX[{i},{j}]", "XtX", float(gram[i, j])))
    else:
        one(rec.name, v.ravel())
    return out


def _cross_products(recs: list[_Record]) -> list[tuple[str, str, float]]:
    out = []
    for X in recs:
        if X.derived or X.values.ndim != 2 or X.values.shape[1] > _MAX_GRAM_COLUMNS:
            continue
        for y in recs:
            if y is X or y.derived or y.values.ndim != 1 or y.values.shape[0] != X.values.shape[0]:
                continue
            xty = X.values.T @ y.values
            out += [(f"{X.name}^T{y.name}[{j}]", "Xty", float(xty[j])) for j in range(xty.size)]
    return out


def _is_trivial(value: float, public: set[float], rtol: float) -> bool:
    return any(abs(value - p) <= rtol * max(abs(p), 1e-300) or value == p for p in public)


def _record_sizes(recs: list[_Record]) -> set[float]:
    """N of each record array (its first axis): public under replace-one neighbouring."""
    return {float(r.size or r.values.shape[0]) for r in recs if not r.derived}


def _statistics(
    recs: list[_Record],
    allow: tuple[str, ...],
    rtol: float,
    sizes: Iterable[float] = (),
    *,
    singles: Sequence[tuple[str, str, float]] = (),
    public: Iterable[float] = (),
    n_public: bool = True,
) -> list[tuple[str, float]]:
    """Statistics to look for: ``(names joined by ' = ', value)`` sorted by value.

    Trivial values are never looked for: 0, 1, the ``sizes`` of the release, the
    declared ``public`` numbers and, when ``n_public``, N (each record array's length).
    """
    entries = [e for rec in recs for e in _stat_entries(rec)] + _cross_products(recs) + list(singles)
    known = {name for name, _, _ in entries} | {kind for _, kind, _ in entries} | set(STATISTIC_KINDS)
    unknown = [a for a in allow if a not in known and not any(_family(n) == a for n, _, _ in entries)]
    if unknown:
        raise ValueError(
            f"allow names statistics that are not computed for these records: {unknown}. Use a full name such as "
            f"{entries[0][0]!r}, or a kind from {STATISTIC_KINDS}."
        )
    trivial = {0.0, 1.0} | {float(n) for n in sizes} | {float(p) for p in public}
    if n_public:
        trivial |= _record_sizes(recs)
    by_value: dict[float, list[str]] = {}
    for name, kind, value in entries:
        if name in allow or kind in allow or _family(name) in allow:
            continue
        if not math.isfinite(value) or _is_trivial(value, trivial, rtol) or not _distinctive(value):
            continue
        by_value.setdefault(value, []).append(name)
    return sorted(((" = ".join(names), value) for value, names in by_value.items()), key=lambda t: t[1])


def _short_decimal(values: np.ndarray) -> np.ndarray:
    """True where a non-zero value has at most two significant digits (0.5, 2.5, 1e-06, 300)."""
    v = np.asarray(values, dtype=np.float64)
    out = np.zeros(v.shape, dtype=bool)
    nz = (v != 0) & np.isfinite(v)
    scale = 10.0 ** (np.floor(np.log10(np.abs(v[nz]))) - 1)
    out[nz] = np.abs(np.round(v[nz] / scale) * scale - v[nz]) <= 1e-12 * np.abs(v[nz])
    return out


def _distinctive(value: float) -> bool:
    """False for the numbers that releases carry as settings: integers of magnitude <= 10
    (chains, states, a count of entries), round integers of one significant digit
    (20, 500, 1000 draws) and non-integers of at most two significant digits
    (epsilon = 0.5, a scale of 2.5, delta = 1e-06)."""
    if value == round(value):
        if abs(value) <= _SMALL_INTEGER:
            return False
        digits = str(int(abs(value))).rstrip("0")
        return len(digits) > 1
    return not bool(_short_decimal(np.array([value]))[0])


def _family(name: str) -> str:
    """``y[:,0].count[1]`` -> ``y[:,0].count``: a statistic without its index."""
    return name[: name.rindex("[")] if name.endswith("]") else name


# --------------------------------------------------------------------------- walking the released object


@dataclasses.dataclass
class _Item:
    path: str
    values: np.ndarray  # float64 canonical (-0.0 -> 0.0), NaN allowed
    role: str  # "data", "coord", "attr"
    dims: tuple[str, ...] | None = None
    #: report text only: half a unit of each number's last printed digit (a rounded
    #: statistic matches within it); None: exact matching
    tolerance: np.ndarray | None = None


@dataclasses.dataclass
class _Walk:
    items: list[_Item] = dataclasses.field(default_factory=list)
    groups: list[Leak] = dataclasses.field(default_factory=list)
    seen: set[int] = dataclasses.field(default_factory=set)
    sizes: set[int] = dataclasses.field(default_factory=set)
    strings: dict[str, list[tuple[str, np.ndarray]]] = dataclasses.field(default_factory=dict)
    #: every data variable of a Dataset met: (path, name, dims, shape)
    variables: list[tuple[str, str, tuple[str, ...], tuple[int, ...]]] = dataclasses.field(default_factory=list)
    #: the dimension lengths of the Datasets met (the shape of a released trace)
    dim_sizes: set[int] = dataclasses.field(default_factory=set)


def _numeric(arr: np.ndarray) -> np.ndarray | None:
    if arr.dtype == np.bool_ or np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating):
        return arr.astype(np.float64) + 0.0
    return None


def _is_index(values: np.ndarray) -> bool:
    """A default index coordinate (0, 1, ..., n-1): determined by the length alone."""
    return values.ndim == 1 and values.size > 0 and np.array_equal(values, np.arange(values.size))


def _join(path: str, key: str) -> str:
    return f"{path}/{key}" if path else key


def _add_array(walk: _Walk, path: str, value: Any, role: str, dims: tuple[str, ...] | None = None) -> None:
    arr = np.asarray(value)
    walk.sizes.update(arr.shape)
    num = _numeric(arr)
    if num is not None:
        if role == "coord" and _is_index(num):
            return
        walk.items.append(_Item(path, num, role, dims))
        return
    if arr.dtype.kind in "US":
        for idx, s in np.ndenumerate(arr):
            _add_string(walk, f"{path}[{','.join(map(str, idx))}]" if arr.ndim else path, str(s))
        return
    if arr.dtype == object:
        for idx, elem in np.ndenumerate(arr):
            _walk(walk, elem, f"{path}[{','.join(map(str, idx))}]" if arr.ndim else path, role, depth=1)
    # datetimes, complex numbers and the like carry no record values: skipped


def _add_string(walk: _Walk, path: str, text: str) -> None:
    """Numbers in a string: a JSON document's numbers (walked), the whole string as a number,
    or float-looking tokens in free text. They count as attributes (metadata, not draws)."""
    text = text.strip()
    if not text:
        return
    if text in walk.strings:
        found = walk.strings[text]
    else:
        found = []
        parsed: Any = None
        if text[0] in "[{":
            try:
                parsed = json.loads(text)
            except ValueError:
                parsed = None
        if parsed is not None:
            sub = _Walk(seen=set(), strings=walk.strings)
            _walk(sub, parsed, "", "attr", depth=1)
            found = [(it.path, it.values) for it in sub.items]
            walk.groups.extend(dataclasses.replace(g, where=f"{path}:{g.where}") for g in sub.groups)
        else:
            try:
                number = float(text)
            except ValueError:
                tokens = [] if _HEX_DIGEST.fullmatch(text) else [float(t) for t in _FLOAT_TOKEN.findall(text)]
                if tokens:
                    found = [("(text)", np.asarray(tokens, dtype=np.float64))]
            else:
                found = [("", np.asarray(number, dtype=np.float64) + 0.0)]
        walk.strings[text] = found
    for sub_path, values in found:
        where = f"{path}:{sub_path.replace('/', '.')}" if sub_path else path
        walk.items.append(_Item(where, values, "attr"))


def _walk_attrs(walk: _Walk, attrs: Mapping[str, Any], path: str, depth: int) -> None:
    for key, value in attrs.items():
        _walk(walk, value, _join(path, f"attrs/{key}"), "attr", depth + 1)


def _walk_dataset(walk: _Walk, ds: xr.Dataset, path: str, depth: int) -> None:
    walk.sizes.update(int(n) for n in ds.sizes.values())
    walk.dim_sizes.update(int(n) for n in ds.sizes.values())
    for name in ds.data_vars:
        da = ds[name]
        walk.variables.append((_join(path, str(name)), str(name), tuple(map(str, da.dims)), tuple(map(int, da.shape))))
    for name in ds.coords:
        coord = ds.coords[name]
        _add_array(walk, _join(path, f"coords/{name}"), coord.values, "coord", tuple(map(str, coord.dims)))
        _walk_attrs(walk, coord.attrs, _join(path, f"coords/{name}"), depth)
    for name in ds.data_vars:
        da = ds[name]
        _add_array(walk, _join(path, str(name)), da.values, "data", tuple(map(str, da.dims)))
        _walk_attrs(walk, da.attrs, _join(path, str(name)), depth)
    _walk_attrs(walk, ds.attrs, path, depth)


def _flag_group(walk: _Walk, name: str, path: str) -> None:
    if name in RAW_DATA_GROUPS:
        detail = f"the {name!r} group holds the records (or per-record values) by construction"
        walk.groups.append(Leak("group", path, detail))


def _walk_trace(walk: _Walk, obj: Any, path: str, depth: int) -> None:
    for name in _compat.group_names(obj):
        gpath = _join(path, name)
        _flag_group(walk, name, gpath)
        ds = _compat.get_group(obj, name)
        if ds is not None:
            _walk_dataset(walk, ds, gpath, depth + 1)
        node = obj[name] if _compat.is_datatree(obj) else None
        if node is not None and getattr(node, "children", None):  # deeper DataTree levels
            for child in node.children:
                _walk_trace_node(walk, node[child], _join(gpath, str(child)), depth + 1)
    if _compat.is_datatree(obj):  # variables stored on the root node itself
        try:
            root = obj.to_dataset(inherit=False)
        except TypeError:  # pragma: no cover - older xarray
            root = obj.to_dataset()
        root = root.copy()
        root.attrs = {}  # the top-level attrs are walked below
        _walk_dataset(walk, root, path, depth + 1)
    _walk_attrs(walk, _compat.get_attrs(obj), path, depth)


def _walk_trace_node(walk: _Walk, node: Any, path: str, depth: int) -> None:
    _flag_group(walk, str(node.name), path)
    _walk_dataset(walk, node.to_dataset(), path, depth + 1)
    for child in node.children:
        _walk_trace_node(walk, node[child], _join(path, str(child)), depth + 1)


def _is_pymc_model(obj: Any) -> bool:
    cls = type(obj)
    return any(c.__name__ == "Model" and c.__module__.startswith("pymc") for c in cls.__mro__)


def _walk(walk: _Walk, obj: Any, path: str, role: str, depth: int) -> None:
    if depth > _MAX_DEPTH or obj is None:
        return
    if isinstance(obj, (bool, int, float, np.number, np.bool_)):
        if isinstance(obj, int) and not isinstance(obj, bool):
            try:
                obj = float(obj)
            except OverflowError:  # an integer beyond float range equals no record
                return
        _add_array(walk, path, obj, role)
        return
    if isinstance(obj, bytes):
        try:
            obj = obj.decode("utf-8")
        except UnicodeDecodeError:
            return
    if isinstance(obj, str):
        _add_string(walk, path, obj)
        return
    if isinstance(obj, np.ndarray):
        _add_array(walk, path, obj, role)
        return
    oid = id(obj)
    if oid in walk.seen:
        return
    walk.seen.add(oid)
    if _compat.is_trace(obj):
        _walk_trace(walk, obj, path, depth)
    elif isinstance(obj, xr.Dataset):
        _walk_dataset(walk, obj, path, depth)
    elif isinstance(obj, xr.DataArray):
        _add_array(walk, path or str(obj.name), obj.values, "data", tuple(map(str, obj.dims)))
        for name in obj.coords:
            _add_array(walk, _join(path, f"coords/{name}"), obj.coords[name].values, "coord")
        _walk_attrs(walk, obj.attrs, path, depth)
    elif _is_pymc_model(obj):
        detail = "a pymc.Model object: it holds the observed and constant data"
        walk.groups.append(Leak("group", path or "(object)", detail))
    elif isinstance(obj, Mapping):
        for key, value in obj.items():
            key_s = str(key)
            _flag_group(walk, key_s, _join(path, key_s))
            if isinstance(key, (int, float, np.number)) and not isinstance(key, bool):
                _add_array(walk, _join(path, f"<key {key_s}>"), key, role)
            _walk(walk, value, _join(path, key_s), role, depth + 1)
    elif isinstance(obj, tuple) and hasattr(obj, "_fields"):  # namedtuple
        for field in obj._fields:
            _walk(walk, getattr(obj, field), _join(path, field), role, depth + 1)
    elif isinstance(obj, (list, tuple, set, frozenset)):
        seq = list(obj) if not isinstance(obj, (set, frozenset)) else sorted(obj, key=repr)
        if seq and all(isinstance(v, (int, float, np.number)) for v in seq):
            _add_array(walk, path, np.asarray(seq), role)
        else:
            for i, value in enumerate(seq):
                _walk(walk, value, f"{path}[{i}]", role, depth + 1)
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            _walk(walk, getattr(obj, f.name), _join(path, f.name), role, depth + 1)
    elif hasattr(obj, "columns") and hasattr(obj, "to_numpy") and hasattr(obj, "index"):  # pandas DataFrame
        for col in obj.columns:
            _add_array(walk, _join(path, str(col)), obj[col].to_numpy(), "data")
        _add_array(walk, _join(path, "index"), np.asarray(obj.index), "coord")
    elif hasattr(obj, "to_numpy") and hasattr(obj, "index"):  # pandas Series
        _add_array(walk, path, obj.to_numpy(), "data")
        _add_array(walk, _join(path, "index"), np.asarray(obj.index), "coord")
    elif callable(getattr(obj, "to_dict", None)) and not isinstance(obj, type):
        try:
            content = obj.to_dict()
        except Exception:
            content = None
        if content is not None:
            _walk(walk, content, path, role, depth + 1)
        elif hasattr(obj, "__dict__"):
            _walk(walk, vars(obj), path, role, depth + 1)
    elif hasattr(obj, "__dict__") and not callable(obj) and not isinstance(obj, types.ModuleType):
        _walk(walk, vars(obj), path, role, depth + 1)


def _check_released(released: Any) -> None:
    containers = (Mapping, Sequence, np.ndarray, xr.Dataset, xr.DataArray)
    ok = _compat.is_trace(released) or isinstance(released, containers)
    if not ok and not isinstance(released, (str, bytes, bool, int, float, complex, np.generic, type)):
        ok = released is not None and not callable(released)
        ok = ok and (dataclasses.is_dataclass(released) or hasattr(released, "__dict__"))
    if not ok or isinstance(released, (str, bytes)):
        raise TypeError(
            "released must be the released object: an arviz.InferenceData / xarray.DataTree, an xarray Dataset, "
            "a mapping, a namedtuple (e.g. PosteriorRelease) or another object with fields; "
            f"got {type(released).__name__}."
        )


# --------------------------------------------------------------------------- the checks


def _mix(bits: np.ndarray) -> np.ndarray:
    x = bits ^ (bits >> np.uint64(31))
    x = x * np.uint64(0x9E3779B97F4A7C15)
    return x ^ (x >> np.uint64(29))


def _powers(base: int, n: int) -> np.ndarray:
    p = np.full(n, base, dtype=np.uint64)
    p[0] = 1
    return np.cumprod(p, dtype=np.uint64)  # wraps modulo 2**64


def _window_hashes(lanes: np.ndarray, m: int) -> np.ndarray:
    """Rolling hash of every length-``m`` window of every row of ``lanes`` (float64).

    ``sum_j mix(x[s+j]) B**j`` modulo 2**64, computed for all ``s`` at once from prefix
    sums of ``mix(x[k]) B**k`` multiplied by ``B**-s`` (B odd, so invertible): the cost
    does not grow with ``m``.
    """
    n, length = lanes.shape
    width = length - m + 1
    terms = _mix(np.ascontiguousarray(lanes).view(np.uint64)) * _powers(_HASH_BASE, length)
    prefix = np.zeros((n, length + 1), dtype=np.uint64)
    np.cumsum(terms, axis=1, dtype=np.uint64, out=prefix[:, 1:])
    return (prefix[:, m:] - prefix[:, :width]) * _powers(_HASH_BASE_INV, width)


def _lanes(values: np.ndarray, m: int) -> Iterator[tuple[int, np.ndarray]]:
    for axis in range(values.ndim):
        length = values.shape[axis]
        if length >= m:
            yield axis, np.ascontiguousarray(np.moveaxis(values, axis, -1)).reshape(-1, length)


@dataclasses.dataclass
class _RecordWindows:
    hashes: np.ndarray  # sorted
    bitmap: np.ndarray  # bool, indexed by the low bits of a hash
    origin: np.ndarray  # (n, 4): record index, axis, lane, start
    lanes: dict[tuple[int, int], np.ndarray]


def _lane_collision(lanes: np.ndarray) -> np.ndarray:
    """Per row of ``lanes``, the probability that two of its values drawn at random are equal."""
    n, length = lanes.shape
    srt = np.sort(lanes, axis=1)
    new = np.ones((n, length), dtype=bool)
    new[:, 1:] = srt[:, 1:] != srt[:, :-1]
    starts = np.flatnonzero(new.ravel())  # every row starts a run, so runs never cross rows
    runs = np.diff(np.append(starts, n * length)).astype(np.float64)
    return np.bincount(starts // length, weights=runs * runs, minlength=n) / float(length) ** 2


def _run_grid(needed: np.ndarray, min_run: int) -> np.ndarray:
    """Round run lengths up to a grid (min_run × 1.1^k), so that few lengths are searched."""
    k = np.ceil(np.log(np.maximum(needed, min_run) / min_run) / math.log(1.1) - 1e-9)
    return np.ceil(min_run * 1.1 ** np.maximum(k, 0) - 1e-9).astype(np.int64)


def _record_lanes_by_run(
    recs: list[_Record], min_run: int, released_windows: int
) -> dict[int, list[tuple[int, int, np.ndarray]]]:
    """``{run length: [(record index, axis, lane indices)]}``.

    Each lane (1-D slice along one axis) of each record array gets its own run length:
    ``min_run``, lengthened until chance matches are rare. If two values of the lane
    coincide with probability ``q`` (sum of its squared value frequencies), a given
    alignment of a run of length ``m`` matches an unrelated array with probability
    about ``q**m``; ``released_windows × record_windows`` alignments are tried, so
    ``m`` is made large enough for the expected number of chance matches to be at most
    :data:`_CHANCE`. A lane shorter than that is not searched: even a complete copy of
    it could be a coincidence (a few 0/1 records, a row of 5 small counts).
    """
    record_windows = sum(rec.values.size * rec.values.ndim for rec in recs)
    log_trials = math.log(max(released_windows, 1) * record_windows / _CHANCE)
    out: dict[int, list[tuple[int, int, np.ndarray]]] = {}
    for r, rec in enumerate(recs):
        for axis in range(rec.values.ndim):
            length = rec.values.shape[axis]
            if length < 2:
                continue
            lanes = np.moveaxis(rec.values, axis, -1).reshape(-1, length)
            q = _lane_collision(lanes)
            with np.errstate(divide="ignore"):
                needed = np.where(q < 1.0, log_trials / -np.log(np.minimum(q, 1.0 - 1e-16)), np.inf)
            runs = _run_grid(np.minimum(needed, 10.0 * length), min_run)
            runs[runs > length] = 0
            for m in np.unique(runs[runs > 0]):
                out.setdefault(int(m), []).append((r, axis, np.flatnonzero(runs == m)))
    return out


def _record_windows(recs: list[_Record], lanes_of: list[tuple[int, int, np.ndarray]], m: int) -> _RecordWindows | None:
    hashes, origins, lanes_by = [], [], {}
    for r, axis, lane_ids in lanes_of:
        length = recs[r].values.shape[axis]
        all_lanes = np.ascontiguousarray(np.moveaxis(recs[r].values, axis, -1)).reshape(-1, length)
        lanes = all_lanes[lane_ids]
        windows = sliding_window_view(lanes, m, axis=1)  # (lanes, width, m)
        # A window must change value at least twice: constant stretches and single
        # steps (0,0,...,0,1) appear in any flag array, sorted column or sticky
        # latent path, so they are no evidence of a copy.
        changes = (windows[..., 1:] != windows[..., :-1]).sum(axis=-1)
        keep = changes >= 2
        if not keep.any():
            continue
        h = _window_hashes(lanes, m)
        row, start = np.nonzero(keep)
        hashes.append(h[row, start])
        origins.append(np.column_stack([np.full(row.size, r), np.full(row.size, axis), lane_ids[row], start]))
        lanes_by[(r, axis)] = all_lanes
    if not hashes:
        return None
    all_h = np.concatenate(hashes)
    order = np.argsort(all_h, kind="stable")
    bitmap = np.zeros(int(_BITMAP_MASK) + 1, dtype=bool)
    bitmap[(all_h & _BITMAP_MASK).astype(np.intp)] = True
    return _RecordWindows(all_h[order], bitmap, np.concatenate(origins)[order], lanes_by)


def _fmt_index(shape: tuple[int, ...], flat: int) -> str:
    return str(tuple(int(i) for i in np.unravel_index(flat, shape))) if len(shape) > 1 else str(int(flat))


def _check_values(items: list[_Item], recs: list[_Record]) -> list[Leak]:
    per_record = []
    for rec in recs:
        if rec.derived:  # per-group medians are statistics, looked for as such
            continue
        v = np.unique(rec.values.ravel())
        v = v[(v != np.round(v)) & ~_short_decimal(v)]
        if v.size:
            per_record.append((rec.name, v))
    if not per_record:
        return []
    union = np.unique(np.concatenate([v for _, v in per_record]))
    leaks = []
    for it in items:
        flat = it.values.ravel()
        if flat.size == 0:
            continue
        pos = np.searchsorted(union, flat).clip(0, union.size - 1)
        hit = union[pos] == flat
        if not hit.any():
            continue
        where_hit = np.flatnonzero(hit)
        names = [name for name, v in per_record if np.isin(flat[where_hit], v).any()]
        leaks.append(
            Leak(
                "value",
                it.path,
                f"{where_hit.size} value(s) equal to a record of {', '.join(map(repr, names))} "
                f"(first at index {_fmt_index(it.values.shape, int(where_hit[0]))})",
            )
        )
    return leaks


def _check_sequences(items: list[_Item], recs: list[_Record], min_run: int) -> list[Leak]:
    released_windows = sum(
        it.values.size * sum(1 for n in it.values.shape if n >= min_run) for it in items if it.values.ndim
    )
    by_run = _record_lanes_by_run(recs, min_run, released_windows)
    if not by_run:
        return []
    leaks: list[Leak] = []
    for m, lanes_of in sorted(by_run.items()):
        # Which released values are values of these records at all: a window can match
        # only where all its values are (continuous draws are skipped without hashing).
        values = np.unique(np.concatenate([recs[r].values.ravel() for r in {r for r, _, _ in lanes_of}]))
        masked = []
        for it in items:
            if it.values.ndim and it.values.size:
                pos = np.searchsorted(values, it.values).clip(0, values.size - 1)
                mask = values[pos] == it.values
                if mask.any():
                    masked.append((it, mask))
        done = {lk.where for lk in leaks}
        leaks += [lk for lk in _check_sequences_of_length(masked, recs, lanes_of, m) if lk.where not in done]
    return leaks


def _check_sequences_of_length(
    items: list[tuple[_Item, np.ndarray]], recs: list[_Record], lanes_of: list[tuple[int, int, np.ndarray]], m: int
) -> list[Leak]:
    table = _record_windows(recs, lanes_of, m)
    if table is None:
        return []
    leaks = []
    for it, mask in items:
        for axis, lanes in _lanes(it.values, m):
            length = lanes.shape[1]
            inside = np.moveaxis(mask, axis, -1).reshape(-1, length)
            counts = np.zeros((inside.shape[0], length + 1), dtype=np.int64)
            np.cumsum(inside, axis=1, out=counts[:, 1:])
            full = (counts[:, m:] - counts[:, : length - m + 1]) == m  # windows made of record values only
            rows = np.flatnonzero(full.any(axis=1))
            if rows.size == 0:
                continue
            h = _window_hashes(lanes[rows], m).ravel()
            # A bitmap of the table's low hash bits rules out almost every window at once.
            hit = table.bitmap[(h & _BITMAP_MASK).astype(np.intp)] & full[rows].ravel()
            cand = np.flatnonzero(hit)
            if cand.size == 0:
                continue
            pos = np.searchsorted(table.hashes, h[cand]).clip(0, table.hashes.size - 1)
            keep = table.hashes[pos] == h[cand]
            cand, pos = cand[keep], pos[keep]
            if cand.size == 0:
                continue
            width = length - m + 1
            first = None
            for c, j in zip(cand[:64], pos[:64]):  # verify (a 64-bit hash collision is all but impossible)
                sub, start = divmod(int(c), width)
                lane = int(rows[sub])
                window = lanes[lane, start : start + m]
                j = int(j)
                while first is None and j < table.hashes.size and table.hashes[j] == h[c]:
                    r, raxis, rlane, rstart = (int(x) for x in table.origin[j])
                    if np.array_equal(window, table.lanes[(r, raxis)][rlane, rstart : rstart + m]):
                        first = (start, r, raxis, rstart)
                    j += 1
                if first is not None:
                    break
            if first is None:
                continue
            start, r, raxis, rstart = first
            dim = it.dims[axis] if it.dims and axis < len(it.dims) else f"axis {axis}"
            of = "" if len(recs) == 1 and recs[r].name == "records" else f" of {recs[r].name!r}"
            of += f" (along its axis {raxis})" if recs[r].values.ndim > 1 else ""
            leaks.append(
                Leak(
                    "sequence",
                    it.path,
                    f"{cand.size} run(s) of {m} consecutive records{of} along {dim!r} "
                    f"(e.g. records {rstart}..{rstart + m - 1} at position {start})",
                )
            )
            break  # one finding per array is enough
    return leaks


def _candidates(it: _Item) -> np.ndarray:
    """The values of an item that may hold an exact statistic (see scan_for_leaks)."""
    v = it.values
    if it.role == "coord":
        if it.dims and len(it.dims) == 1 and it.dims[0] in _SAMPLE_DIMS:
            return np.empty(0)
        return v.ravel()
    if it.role == "data" and it.dims and v.ndim == len(it.dims):
        axes = tuple(i for i, d in enumerate(it.dims) if d in _SAMPLE_DIMS)
        if axes and v.size:
            first = v[tuple(slice(0, 1) if i in axes else slice(None) for i in range(v.ndim))]
            const = np.all(v == first, axis=axes)  # NaN never counts as constant
            return np.squeeze(first, axis=axes)[const].ravel()
    return v.ravel()


def _check_statistics(items: list[_Item], stats: list[tuple[str, float]], rtol: float) -> list[Leak]:
    if not stats:
        return []
    values = np.array([v for _, v in stats])
    leaks = []
    for it in items:
        if it.tolerance is not None:  # report text: rounded matches
            hits = [
                name for v, h in zip(it.values, it.tolerance) for name, s in stats if abs(s - v) <= h * (1 + 1e-9)
            ]
            if hits:
                leaks.append(Leak("statistic", it.path, "equals, as printed (rounded), the exact statistic "
                                  + "; ".join(dict.fromkeys(hits))))
            continue
        cand = _candidates(it)
        cand = cand[np.isfinite(cand)]
        if cand.size == 0:
            continue
        cand = np.unique(cand)
        tol = 2.0 * rtol * np.abs(cand) + 1e-300
        lo = np.searchsorted(values, cand - tol, side="left")
        hi = np.searchsorted(values, cand + tol, side="right")
        matched: list[str] = []
        for c, a, b in zip(cand[hi > lo], lo[hi > lo], hi[hi > lo]):
            for k in range(a, b):
                s = values[k]
                if abs(c - s) <= rtol * abs(s) or c == s:
                    matched.append(stats[k][0])
        if matched:
            matched = list(dict.fromkeys(matched))
            leaks.append(Leak("statistic", it.path, "equals the exact statistic " + "; ".join(matched)))
    return leaks


# --------------------------------------------------------------------------- entry point


def scan_for_leaks(
    released: Any,
    records: Any,
    *,
    statistics: bool | str = "auto",
    allow: str | Iterable[str] = (),
    min_run: int = 8,
    rtol: float = 1e-12,
    groups: Mapping[str, Any] | None = None,
    public: Iterable[float] = (),
    neighbouring: str = "replace",
) -> LeakReport:
    """Look for the private records, or exact statistics of them, anywhere in a released object.

    Every group, data variable, coordinate and attribute (trace-level, group-level and
    variable-level) is searched, and numbers inside strings too: a JSON document (the
    ``pymc_dp_ledger`` attribute, the ``privacy/ledger`` variable) is parsed and its
    numbers checked one by one; a string that is a number is read as one; free text
    contributes its decimal-point numbers (``12.5``, ``1e-3``; not plain integers such
    as years in a timestamp). Four checks run:

    1. **group** — a raw-data group (:data:`RAW_DATA_GROUPS`: ``observed_data``,
       ``constant_data``, ``log_likelihood``, ``predictions_constant_data``), at any
       level or as a mapping key, or a ``pymc.Model`` object, is a leak by its mere
       presence.
    2. **value** — for records with many-digit values (non-integer floats with at
       least three significant digits), any single record value found exactly (float
       equality; numbers in strings compared as parsed floats). Integer-valued records
       and short decimals (``2.5``) are left to the next check: a single 3 or 2.5
       means nothing.
    3. **sequence** — a run of consecutive records (along any axis of a record
       array), in order, found along any axis of any array, coordinate or number list.
       The run has ``min_run`` records, or more when the records have few distinct
       values: if two values of a record lane coincide with probability ``q`` (the
       sum of its squared value frequencies), an unrelated run of length ``m`` matches
       with probability about ``q**m``, and the run is lengthened until the expected
       number of chance matches over all positions compared is below 1/1000 (0/1
       records need ~30-60, many-digit floats stay at ``min_run``). A record lane
       shorter than that is not searched: even a whole copy of it could be chance.
       A run must also change value at least twice: constant runs and single steps
       (``0, 0, ..., 0, 1``) appear in every flag array, sorted column and sticky
       latent path.
    4. **statistic** — exact statistics of each record array (``sum``, ``sumsq``,
       ``mean``, ``var``/``std`` with ddof 0 and 1 (``var_ddof1``...), ``min``,
       ``max``, ``median``, the quartiles ``q25``/``q75``, N (``n``, under
       ``add_remove`` only), the numbers of ``missing`` and ``observed`` entries when
       some are NaN, ``count[v]`` of each distinct value when there are at most 20,
       per group (``groups=``) ``group_count`` and ``group_median``;
       for a 2-D array ``X`` the same over all entries and per column
       (``X[:,j].sum``...) and the Gram matrix ``X.XtX[i,j]``; for a 2-D ``X`` and a
       1-D ``y`` of the same length in ``records``, ``X^Ty[j]``) matched with
       relative tolerance ``rtol``.
    5. **shape** — the shape of the release told something private: a variable of
       imputed missing values (PyMC's ``<name>_unobserved``, or a dimension as long
       as the number of missing or of observed entries of records with missing
       values), or, under ``neighbouring="add_remove"``, a dimension as long as a
       record array (N is private then).

    **Where statistics are looked for, and why.** Posterior draws are real numbers
    that wander over a continuum and index coordinates run through every small
    integer, so matching every number of a trace against a list of statistics would
    raise false alarms. A statistic is therefore looked for only

    (a) in attributes (including numbers parsed out of strings anywhere: they are
        metadata, not draws);
    (b) in coordinates other than ``chain`` and ``draw``, except default index
        coordinates ``0, 1, ..., n-1`` (those are set by a dimension's length alone);
    (c) in data values that are constant across the ``chain`` and ``draw``
        dimensions of their variable — a leaked statistic or a Deterministic of the
        data is the same in every draw, genuine draws vary — and in every value of an
        array that has neither dimension (it is not a set of draws). A variable with a
        single chain and draw (one OPS sample) is thus checked as a whole.

    Only distinctive values are looked for: not 0, 1 or N (the length of each record
    array: public under replace-one neighbouring); not the length of any dimension of
    the release (the numbers of draws, chains, tuning steps, states: the shape of a
    release is public); not an integer of magnitude at most 10 or a round integer of
    one significant digit (20, 500, 1000); not a non-integer of at most two significant
    digits (0.5, 0.25, 2.5). Those are the settings every release carries (2 chains,
    ``"tune": 20``, 1000 draws, ε = 0.5, a noise scale of 2.5): a count of 20 or a mean
    of 0.5 equal to one of them is no evidence. Statistics equal to one another (the
    sum and the sum of squares of 0/1 records) are reported together.

    Parameters
    ----------
    released
        What leaves the curator: an ``arviz.InferenceData`` or ``xarray.DataTree``
        (the groups are read through :mod:`pymc_dp._compat`), an
        ``xarray.Dataset``/``DataArray``, or any object built of mappings, sequences,
        namedtuples (e.g. :class:`~pymc_dp.PosteriorRelease`), dataclasses (ledger
        entries), NumPy arrays, pandas frames, numbers and strings. Objects with a
        ``to_dict()`` method are read through it, other objects through their
        ``__dict__``.
    records
        The private records: an array (``(N,)``, or ``(N, p)`` for several columns
        such as a design matrix), or a mapping ``{name: array}`` (several observed
        variables; ``{"X": X, "y": y}`` for a regression). Numbers only; NaN (or a
        masked entry) marks a missing value.
    statistics
        ``"auto"`` or ``True``: run check 4; ``False``: skip it (checks 1-3 only).
    allow
        Statistics released on purpose, not to be reported: a full name
        (``"y.sum"``, ``"y.count[1]"``, ``"X[:,0].mean"``), a name without its index
        (``"y.count"``), or a kind for every record array (``"sum"``, ``"count"``,
        ... see :data:`STATISTIC_KINDS`).
    min_run
        The shortest record run searched for (at least 2); lengthened for records with
        few distinct values (check 3).
    rtol
        Relative tolerance of the statistic match (0 <= rtol < 1e-3).
    groups
        Groupings of the records whose per-group counts and medians must not be
        released either: ``{name: labels}``, one label per record (an array of length
        N), or a tuple of label arrays for groups by their combination
        (``{"region-month": (region, month)}``). Per-group counts and medians are
        looked for one by one (at most 20 groups) and as runs (any number).
    public
        Numbers declared public, never reported (e.g. the number of regions or a
        grid size published with the release).
    neighbouring
        ``"replace"`` (default: N, the number of records, is public and never
        reported) or ``"add_remove"`` (N is private: its exact value, and a dimension
        of that length, are leaks).

    Returns
    -------
    LeakReport
        ``report.clean`` is True when nothing was found; ``str(report)`` is a table;
        ``report.raise_if_leaky()`` raises :class:`PrivacyLeakError`. The report never
        contains the matched record values or statistics, only where they were found.

    Raises
    ------
    TypeError
        If ``released`` is not an object that can hold a release (None, a number, a
        string, a function), or ``records`` is not numeric.
    ValueError
        If ``records`` is empty or contains NaN or infinities, or an argument is out
        of range (the message names it), or ``allow`` names an unknown statistic.

    Notes
    -----
    Exact matching finds copies, not transformations: a sum shifted by one or a record
    rescaled is not found, and a clean report is not a privacy proof. The rules above
    trade some sensitivity for few false alarms: a small or round count (at most 10,
    20, 300), a mean of exactly 0.5, or a few 0/1 records copied into a short array are
    not reported. Coincidences remain possible for other integer statistics (a count
    of 25 next to a setting of 25); the report names the statistic and the place so
    that one can be judged, and ``allow`` silences it. The output of a mechanism that
    releases a noisy version of a statistic can equal it exactly (integer noise is 0
    with sizeable probability; ``release_posterior`` adds it to the prior): name such
    statistics in ``allow``.

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_dp.audit.leaks import scan_for_leaks
    >>> y = np.array([0.8414709848, 0.9092974268, 0.1411200081, -0.7568024953])
    >>> scan_for_leaks({"summary": {"mean": float(y.mean())}}, y).clean
    False
    >>> scan_for_leaks({"summary": {"mean": float(y.mean())}}, y, allow="mean").clean
    True
    """
    _check_released(released)
    setup = _ScanSetup.check(records, statistics, allow, min_run, rtol, groups, public, neighbouring)
    walk = _Walk()
    _walk(walk, released, "", "data", depth=0)
    return setup.scan(walk)


@dataclasses.dataclass(frozen=True)
class _ScanSetup:
    """The checked arguments of a scan, and what they compute from the records."""

    recs: list[_Record]
    derived: list[_Record]
    singles: list[tuple[str, str, float]]
    statistics: Any
    allow: tuple[str, ...]
    min_run: int
    rtol: float
    public: tuple[float, ...]
    n_public: bool

    @classmethod
    def check(
        cls, records: Any, statistics: Any, allow: Any, min_run: Any, rtol: Any, groups: Any, public: Any,
        neighbouring: Any,
    ) -> "_ScanSetup":
        recs = _check_records(records)
        if not (isinstance(statistics, (bool, np.bool_)) or (isinstance(statistics, str) and statistics == "auto")):
            raise ValueError(f"statistics must be 'auto', True or False, got {statistics!r}.")
        if isinstance(allow, str):
            allow = (allow,)
        try:
            allow_t = tuple(allow)
        except TypeError:
            raise TypeError(
                f"allow must be a statistic name or an iterable of names, got {type(allow).__name__}."
            ) from None
        if not all(isinstance(a, str) for a in allow_t):
            raise TypeError(f"allow must hold statistic names (strings), got {allow_t!r}.")
        if isinstance(min_run, bool) or not isinstance(min_run, (int, np.integer)) or min_run < 2:
            raise ValueError(f"min_run must be a whole number >= 2, got {min_run!r}.")
        if isinstance(rtol, bool) or not isinstance(rtol, (int, float, np.floating, np.integer)) or not 0 <= rtol < 1e-3:
            raise ValueError(f"rtol must be a number in [0, 1e-3), got {rtol!r}.")
        if neighbouring not in ("replace", "add_remove"):
            raise ValueError(f"neighbouring must be 'replace' or 'add_remove', got {neighbouring!r}.")
        derived, singles = _group_records(groups, recs)
        return cls(recs, derived, singles, statistics, allow_t, int(min_run), float(rtol), _check_public(public),
                   neighbouring == "replace")

    def scan(self, walk: _Walk, files: tuple[str, ...] = (), skipped: tuple[str, ...] = ()) -> LeakReport:
        return _scan_walk(
            walk, self.recs, self.derived, self.singles, statistics=self.statistics, allow=self.allow,
            min_run=self.min_run, rtol=self.rtol, public=self.public, n_public=self.n_public, files=files,
            skipped=skipped,
        )


def _check_public(public: Any) -> tuple[float, ...]:
    if isinstance(public, (str, bytes)) or not isinstance(public, Iterable):
        raise TypeError(f"public must be an iterable of numbers declared public, got {type(public).__name__}.")
    out = []
    for p in public:
        if isinstance(p, (bool, np.bool_)) or not isinstance(p, (int, float, np.integer, np.floating)):
            raise TypeError(f"public must hold numbers, got {p!r}.")
        out.append(float(p))
    return tuple(out)


def _scan_walk(
    walk: _Walk,
    recs: list[_Record],
    derived: list[_Record],
    singles: list[tuple[str, str, float]],
    *,
    statistics: Any,
    allow: tuple[str, ...],
    min_run: int,
    rtol: float,
    public: tuple[float, ...],
    n_public: bool,
    files: tuple[str, ...] = (),
    skipped: tuple[str, ...] = (),
) -> LeakReport:
    """The checks on everything a walk collected."""
    items = walk.items
    leaks = list(dict.fromkeys(walk.groups))
    leaks += _check_shapes(walk, recs, n_public)
    leaks += _check_values(items, recs)
    # Per-group counts are also looked for as runs (a column of exact per-cell counts);
    # per-group medians are not: of a categorical code they are labels, which a model's
    # latent states (fitted to the release) can follow as a matter of course.
    runs = [d for d in derived if d.derived == "counts" and d.values.size >= min_run]
    leaks += _check_sequences(items, recs + runs, min_run)
    stats: list[tuple[str, float]] = []
    everything = recs + derived
    if isinstance(statistics, str) or bool(statistics):
        stats = _statistics(everything, allow, rtol, walk.sizes, singles=singles, public=public, n_public=n_public)
        leaks += _check_statistics(items, stats, rtol)
    elif allow:
        _statistics(everything, allow, rtol, singles=singles)  # still refuse unknown names
    return LeakReport(tuple(dict.fromkeys(leaks)), len(items), tuple(name for name, _ in stats), files, skipped)


#: Name suffixes PyMC gives the free variable of imputed missing values.
_IMPUTED_SUFFIXES = ("_unobserved", "_missing")


def _check_shapes(walk: _Walk, recs: list[_Record], n_public: bool) -> list[Leak]:
    """Variables whose name or shape tells something private (see check 5 of :func:`scan_for_leaks`)."""
    private_lengths: dict[int, str] = {}
    for r in recs:
        if r.derived:
            continue
        if r.missing:
            private_lengths.setdefault(r.missing, f"the number of missing entries of {r.name}")
            private_lengths.setdefault(r.raw.size - r.missing, f"the number of observed entries of {r.name}")
        if not n_public:
            private_lengths.setdefault(r.size, f"the number of records of {r.name} (private under add_remove)")
    private_lengths = {k: v for k, v in private_lengths.items() if k > 1}
    leaks = []
    for path, name, dims, shape in walk.variables:
        if name.endswith(_IMPUTED_SUFFIXES):
            leaks.append(Leak("shape", path, "imputed missing values (PyMC's missing-data variable): its length is "
                                             "the number of missing records"))
            continue
        for dim, length in zip(dims, shape):
            if dim in _SAMPLE_DIMS:
                continue
            if length in private_lengths:
                leaks.append(Leak("shape", f"{path}:{dim}", f"a dimension as long as {private_lengths[length]}"))
    return leaks


# --------------------------------------------------------------------------- folders of artefacts

#: File types :func:`scan_folder` reads, by suffix.
TEXT_SUFFIXES = (".txt", ".md", ".csv", ".tsv", ".log", ".html", ".htm", ".svg", ".tex", ".rst", ".yaml", ".yml")
TRACE_SUFFIXES = (".nc", ".zarr", ".h5", ".hdf5")
#: Every number in report text, integers and digit-grouped integers (12,345) included;
#: percentages (``13.0 %``) are shares, not statistics of the records, and are left out.
_REPORT_NUMBER = re.compile(
    r"(?<![\w.])([-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d*)?(?:[eE][-+]?\d+)?|[-+]?\.\d+)(?!\s?%)(?!\d|[.,]\d)"
)


#: A number in report text is looked up only with at least this many significant digits
#: (one more for a decimal): a report's small numbers (an ESS of 26, 213 draws, an R-hat of
#: 1.815) coincide with small statistics (a median of 26 per cell) too often to be evidence.
REPORT_DIGITS = 4


def _significant_digits(token: str) -> int:
    mantissa = re.split(r"[eE]", token.replace(",", "").lstrip("+-"))[0]
    digits = mantissa.replace(".", "").lstrip("0")
    return len(digits if "." in mantissa else digits.rstrip("0"))


def _walk_text_file(walk: _Walk, rel: str, text: str) -> None:
    """The numbers of every line of a report with at least :data:`REPORT_DIGITS` significant digits.

    Integers count (a record count is one, ``12,345`` too); each number matches a
    statistic within half a unit of its last printed digit, so a rounded statistic
    (``6843.4`` printed as ``6,843``) is found.
    """
    for lineno, line in enumerate(text.splitlines(), 1):
        tokens, halves = [], []
        for t in _REPORT_NUMBER.findall(line):
            # a decimal matches within half its last digit, so it needs one digit more than
            # an integer to be as unlikely a coincidence (an R-hat of 1.815 is not a std)
            decimal_number = bool(re.search(r"[.eE]", t))
            if _significant_digits(t) < REPORT_DIGITS + decimal_number:
                continue
            plain = t.replace(",", "")
            mantissa = re.split(r"[eE]", plain)[0]
            decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
            exponent = int(re.split(r"[eE]", plain)[1]) if re.search(r"[eE]", plain) else 0
            tokens.append(float(plain))
            halves.append(0.5 * 10.0 ** (exponent - decimals))
        if tokens:
            walk.items.append(_Item(
                f"{rel}:{lineno}", np.asarray(tokens, dtype=np.float64) + 0.0, "attr",
                tolerance=np.asarray(halves, dtype=np.float64),
            ))


def _is_text(path: Any) -> bool:
    """Whether a file of unknown type reads as UTF-8 text (its first 64 kB)."""
    try:
        head = path.read_bytes()[:65536]
        head.decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    return b"\x00" not in head


_NUMBER_TOKEN = re.compile(r"^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$")


def _walk_numeric_lines(walk: _Walk, rel: str, text: str) -> None:
    """Numbers laid out as data in any text: rows of numbers, and the columns of consecutive such rows.

    A line of numbers (``0 1 0 1 ...``, ``np.savetxt`` output) is an array, and so is each
    column of a block of lines that hold numbers only: their values and runs are
    checked as a trace's are, whatever the file is called.
    """
    rows: list[tuple[int, list[float]]] = []

    def flush() -> None:
        if len(rows) >= 2:
            width = min(len(r) for _, r in rows)
            block = np.array([r[:width] for _, r in rows], dtype=np.float64)
            for j in range(width):
                _add_array(walk, f"{rel}:{rows[0][0]}-{rows[-1][0]}[:,{j}]", block[:, j], "data", ("row",))
        rows.clear()

    for lineno, line in enumerate(text.splitlines(), 1):
        tokens = [t for t in re.split(r"[\s,;]+", line.strip()) if t]
        if tokens and all(_NUMBER_TOKEN.match(t) for t in tokens):
            values = [float(t) for t in tokens]
            if len(values) >= 2:
                _add_array(walk, f"{rel}:{lineno}", np.asarray(values), "data", ("col",))
            rows.append((lineno, values))
        else:
            flush()
    flush()


def _walk_table(walk: _Walk, rel: str, text: str, sep: str) -> None:
    """Every numeric column of a CSV/TSV as an array: its values and runs are checked like a trace's."""
    import io

    import pandas as pd

    try:
        frame = pd.read_csv(io.StringIO(text), sep=sep)
    except (ValueError, pd.errors.ParserError):
        return
    for col in frame.columns:
        if pd.api.types.is_numeric_dtype(frame[col]):
            _add_array(walk, f"{rel}/{col}", frame[col].to_numpy(dtype=np.float64), "data", ("row",))


def scan_folder(
    folder: Any,
    records: Any,
    *,
    statistics: bool | str = "auto",
    allow: str | Iterable[str] = (),
    min_run: int = 8,
    rtol: float = 1e-12,
    groups: Mapping[str, Any] | None = None,
    public: Iterable[float] = (),
    neighbouring: str = "replace",
) -> LeakReport:
    """Scan every artefact in a folder (a report, a release) for the private records.

    What leaves the curator is often a folder: report text, JSON, saved traces,
    figures. Every file under ``folder`` (recursively, hidden files included) is read
    by its type and all of them are scanned together, as one release, with the checks
    of :func:`scan_for_leaks`:

    * saved traces (``.nc``, ``.zarr`` stores, ``.h5``) are loaded and walked like a
      trace (groups, variables, coordinates, attributes, the ledger);
    * ``.json`` files are parsed and walked;
    * text (``.txt``, ``.md``, ``.csv``, ``.html``, ``.svg``, ... see
      :data:`TEXT_SUFFIXES`) contributes every number of every line with at least
      :data:`REPORT_DIGITS` (4) significant digits (5 for a decimal), integers and digit-grouped
      integers (``12,345``) included: in a report, a record count is a plain
      integer. Each matches a statistic as printed, within half a unit of its last
      digit (``6,843`` matches 6843.4). Numbers with fewer digits (an ESS of 26, a
      median of 26) and percentages are not evidence and are not looked up. A leak is
      located as ``file:line``;
    * CSV and TSV files also contribute every numeric column as an array, and in any
      text a line of numbers and each column of a block of number-only lines are
      arrays too: their values and runs are checked as a trace's are (a column of
      exact per-cell counts, a line ``0 1 0 1 ...`` of records); ``.npy``/``.npz`` are
      loaded (without pickles); ``.ipynb`` notebooks are parsed as JSON; a file of
      another type that reads as UTF-8 text is scanned as text;
    * anything else (images among them: a figure's pixels are not read) is listed in
      :attr:`LeakReport.skipped`, not scanned: check it yourself, or write figures
      only from released values.

    Parameters
    ----------
    folder
        The folder (a path).
    records, statistics, allow, min_run, rtol, groups, public, neighbouring
        As for :func:`scan_for_leaks`.

    Returns
    -------
    LeakReport
        With :attr:`~LeakReport.files` (what was read) and
        :attr:`~LeakReport.skipped` (what was not).

    Raises
    ------
    FileNotFoundError
        If ``folder`` is not a folder.
    ValueError
        If a file of a readable type cannot be read (the message names it), or an
        argument is invalid (as for :func:`scan_for_leaks`).
    """
    from pathlib import Path

    root = Path(folder)
    if not root.is_dir():
        raise FileNotFoundError(f"folder {str(root)!r} is not a folder.")
    setup = _ScanSetup.check(records, statistics, allow, min_run, rtol, groups, public, neighbouring)
    walk = _Walk()
    files, skipped = [], []
    paths = sorted(p for p in root.rglob("*") if p.is_file() and not any(part.endswith(".zarr") for part in p.relative_to(root).parts[:-1]))
    paths += sorted(p for p in root.rglob("*.zarr") if p.is_dir())
    for path in sorted(paths):
        rel = str(path.relative_to(root))
        suffix = path.suffix.lower()
        try:
            if suffix in TRACE_SUFFIXES:
                _walk(walk, _compat.load(path), rel, "data", depth=0)
            elif suffix in (".json", ".ipynb"):
                _walk(walk, json.loads(path.read_text(encoding="utf-8")), rel, "attr", depth=0)
            elif suffix in (".npy", ".npz"):
                loaded = np.load(path, allow_pickle=False)
                if suffix == ".npz":
                    with loaded:
                        arrays = {k: loaded[k] for k in loaded.files}
                else:
                    arrays = {"": loaded}
                for name, arr in arrays.items():
                    _add_array(walk, _join(rel, name) if name else rel, np.asarray(arr), "data")
            elif suffix in TEXT_SUFFIXES or _is_text(path):
                text = path.read_text(encoding="utf-8", errors="replace")
                _walk_text_file(walk, rel, text)
                if suffix in (".csv", ".tsv"):
                    _walk_table(walk, rel, text, "\t" if suffix == ".tsv" else ",")
                _walk_numeric_lines(walk, rel, text)
            else:
                skipped.append(rel)
                continue
        except (OSError, ValueError, TypeError) as err:
            raise ValueError(f"cannot read {rel} in {root} as a {suffix or 'text'} file: {err}") from None
        files.append(rel)
    return setup.scan(walk, files=tuple(files), skipped=tuple(skipped))
