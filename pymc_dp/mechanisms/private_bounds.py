"""Data bounds chosen privately: each column's range from private quartiles (fences) or private tail ends.

Every route but the Bernoulli's needs a column's range, and a range read off the records is a release
no ledger sees (the records' minimum and maximum are two of them). :func:`suggest_bounds` spends a
stated ε on choosing them instead, in one of two ways.

**Fences** (``method="fences"``, the default, what ``pmdp.sample`` uses when a range is not declared). Each
column's quartiles q₁, q₃ are found privately (:mod:`pymc_dp.mechanisms.private_quantiles`) in two passes: first
the cell of the grid below that holds each (so records between two candidates, 1100 ± 10 between 1000 and 1333,
are still located), then a candidate among 201 evenly spaced over those cells. The range is
``(q₁ − f·IQR, q₃ + f·IQR)`` with f = 3 (±4.7 standard deviations of a Normal), inside the grid's span. A central
quantile is what the exponential mechanism finds well: a candidate far from the records scores −N/4 against the
quartile's 0, so at N ε′ ≳ 8 ln(G/β) the four releases of a column all land near their quartiles. Over half the
records on one value (quartiles within 10⁻⁶: an indicator mostly 0) gives that value ± max(1, abs(v)). Four
releases of ε/(4k) per column.

**Tails** (``method="tails"``), each end aimed at the records' extreme:

1. a public grid of candidates: ``within=(lo, hi)`` (a range known without the data) gives ``grid``
   evenly spaced points over it; without one, a symmetric geometric grid 0, ±10ᵏ for k from −6 to 9
   in steps of an eighth of a decade (243 candidates), wide enough for a measurement in any common
   unit. Records beyond the grid (±∞ too) count at its edge: data beyond ±10⁹ (bytes, a currency in
   units of 10⁻²) need rescaling or ``within``;
2. for the upper end the exponential mechanism over the grid with utility
   ``u(c_i) = min(#{x > c_{i−s}}, K) − #{x > c_i}``: the records above the candidate cost one each,
   and a candidate earns at most K for the records in the s steps below it (past the grid's first
   candidate, every record). The sensitivity is 1 under either neighbouring relation: one record
   added, or moved up, can only raise both counts (each by at most one), and one removed, or moved
   down, only lower them, so their difference moves by at most one. The lower end is the mirror
   image (``#{x < c}``, the s steps above);
3. ``K = 2 ln(G / β) / ε′`` (G candidates, ε′ = ε/(2k) the end's ε, β = ``confidence``, 0.01 by
   default, per end: k columns' 2k ends miss with probability up to 2kβ). With probability at least
   ``1 − β`` an end's utility is within K of the best candidate's, so it has fewer than 2K records
   beyond it (fewer than K when some candidate earns K: K records within s steps inside it and none
   beyond). An empty candidate far beyond the records earns 0, so where some candidate earns K all
   of them together are chosen with probability at most β. A plain rank utility,
   ``−|#{x > c} − m|``, gives every empty candidate above the records the same utility as one near
   its target: on the wide default grid the hundreds of them outweighed it, and the chosen end
   landed decades above the data.

The tails suit records far from 0 relative to their spread and records with a point mass (their extreme is
where many records are); on records around 0 with thin tails, at small N ε′, the few records just inside the
extreme earn less than the cap and an end can land decades out, which the fences avoid. The guarantee needs
records: below about 3K of them (:func:`rank_error` gives K from public numbers
before anything is spent) no candidate earns much and the ends are close to uniform over the grid;
under replace-one, where N is public, a warning says so. A route clips the records beyond an end (its
likelihood does not model that clipping). The shift s is two steps on the default grid (a factor
1.33) and a twentieth of the grid over ``within``, so a ``within`` close to the data's own range cuts
more records than a loose one.

ε is divided evenly over the 2k choices (basic composition), each a ledger entry of its own, all
reserved before the first is drawn. Ends are rounded outward to whole numbers where the container
declares them (a NumPy integer or boolean dtype, pandas integer columns, or ``integer=True``), never
from the values; a pair that came out as one point is widened to the next candidate. A value that is
not a number (NaN, None, text in a list) counts in no utility; how many there were goes to the curator
only. Only the container's kind and shape can make the call refuse.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ..accounting.curator import curator_report
from ..accounting.validation import check_epsilon
from .exponential import _gumbel_scale
from .noise import _check_touched, _require_ledger, resolve_noise_source

if TYPE_CHECKING:  # pragma: no cover
    from ..accounting import PrivacyLedger
    from .noise import NoiseSource

__all__ = ["PrivateBounds", "bounds_grid", "end_utilities", "PrivateMedian", "private_median", "rank_error", "suggest_bounds"]

#: The default grid's decades: ±10ᵏ for k from the first to the second, in steps of 1/``_PER_DECADE``.
_DECADES = (-6, 9)
_PER_DECADE = 8


def bounds_grid(within: tuple[float, float] | None = None, grid: int = 200,
                decades: tuple[int, int] = _DECADES) -> np.ndarray:
    """The public candidates, ascending: ``grid`` evenly spaced points over ``within``, or (None) the symmetric
    geometric grid 0, ±10ᵏ (k over ``decades``, −6 to 9 by default, in eighths of a decade)."""
    if within is None:
        k = np.linspace(decades[0], decades[1], (decades[1] - decades[0]) * _PER_DECADE + 1)
        positive = 10.0**k
        return np.concatenate([-positive[::-1], [0.0], positive])
    lo, hi = (float(v) for v in within)
    return np.linspace(lo, hi, int(grid))


@dataclass(frozen=True)
class PrivateBounds:
    """What :func:`suggest_bounds` released: one ``(lower, upper)`` per column, and the ledger entries it recorded.

    ``pair`` is the only column's range (for one column of records); ``pairs`` every column's, in order. Both are
    released numbers: pass them on as a route's ``bounds=``.
    """

    lower: np.ndarray
    upper: np.ndarray
    target: float
    entries: tuple[Any, ...] = ()

    @property
    def pairs(self) -> list[tuple[float, float]]:
        return [(float(a), float(b)) for a, b in zip(self.lower, self.upper)]

    @property
    def pair(self) -> tuple[float, float]:
        if len(self.lower) != 1:
            raise ValueError(f"these bounds have {len(self.lower)} columns; read .pairs (one (lower, upper) each).")
        return self.pairs[0]


def _declared_integer(records: Any) -> bool | None:
    """Whether the container *declares* whole numbers: a NumPy integer or boolean dtype, or pandas integer or boolean
    columns (nullable ones too). None for anything else (a list, object arrays): never read from the values, whose
    dtype after conversion would depend on a single record (a NaN, a huge integer)."""
    if hasattr(records, "columns") and hasattr(records, "dtypes"):  # a pandas DataFrame
        kinds = [getattr(d, "kind", "O") for d in records.dtypes]
    elif getattr(records, "dtype", None) is not None:
        kinds = [getattr(records.dtype, "kind", "O")]
    else:
        return None
    return all(k in "iub" for k in kinds)


def _to_float(value: Any) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError, OverflowError):
        return float("nan")
    return out


def _records(records: Any, integer: bool | None) -> tuple[np.ndarray, bool]:
    """The records as a (rows, columns) float array, and whether their ends are rounded to whole numbers.

    A value that is not a number (None, text, pandas' NA) becomes NaN and counts in no utility: refusing it would
    say that some record is malformed. Whole numbers come from ``integer`` or the container's declared dtype, never
    from the values. Only the container's kind and shape can refuse (public)."""
    dtype = getattr(records, "dtype", None)
    if dtype is not None and getattr(dtype, "kind", "") in "cmMSUV":
        raise ValueError(f"records must be real numbers, got dtype {dtype} (complex, dates, durations or text are "
                         "refused by their dtype; convert them first). Nothing was spent.")
    declared = _declared_integer(records) if integer is None else bool(integer)
    if hasattr(records, "to_numpy") and not isinstance(records, np.ndarray):  # pandas: NA → NaN
        try:
            records = records.to_numpy(dtype=float, na_value=np.nan)
        except (TypeError, ValueError):
            records = records.to_numpy(dtype=object)
    array = np.asarray(records) if isinstance(records, np.ndarray) else np.asarray(records, dtype=object)
    if array.ndim not in (1, 2):
        raise ValueError(f"records must be a 1-D array (one column) or 2-D array (records × columns), got shape "
                         f"{array.shape}. Nothing was spent.")
    if array.dtype.kind in "iub":
        values = array.astype(float)
    elif array.dtype.kind == "f":
        with np.errstate(over="ignore"):  # a long double beyond the double range: ±inf, clipped like the rest
            values = array.astype(float)
    else:
        values = np.vectorize(_to_float, otypes=[float])(array) if array.size else array.astype(float)
    values = values.reshape(len(values), -1) if values.ndim == 2 else values.reshape(-1, 1)
    return values, bool(declared)


#: The utility's sensitivity: its two counts move in the same direction for any one record (see the module
#: docstring), so their difference moves by at most one.
SENSITIVITY = 1.0

#: f of ``method="fences"``: the range is (q₁ − f·IQR, q₃ + f·IQR).
FENCE = 3.0
#: Quartiles closer than this (the default grid's finest step) are read as one value shared by over half the records.
POINT_MASS = 1e-6
#: The second pass's candidates: evenly spaced over the first pass's quartiles widened by one grid step each way.
SECOND_PASS_GRID = 2001


def _within_support(candidates: np.ndarray, support: tuple[float, float] | None) -> np.ndarray:
    """The candidates inside a public ``support`` (lo, hi), closed; every candidate when None. Refuses a support that
    leaves fewer than two (before anything is spent)."""
    if support is None:
        return candidates
    try:
        lo, hi = (float(v) for v in support)
    except (TypeError, ValueError):
        raise ValueError(f"support must be a pair (lo, hi) of numbers (inf allowed), got {support!r}. Nothing was "
                         "spent.") from None
    if np.isnan(lo) or np.isnan(hi) or not lo < hi:
        raise ValueError(f"support must have lo < hi, got {support!r}. Nothing was spent.")
    kept = candidates[(candidates >= lo) & (candidates <= hi)]
    if len(kept) < 2:
        raise ValueError(f"support {support!r} leaves fewer than two of the grid's candidates: widen it or give "
                         "within= inside it. Nothing was spent.")
    return kept


def _shift(within: tuple[float, float] | None, candidates: int) -> int:
    """s: how many grid steps inside a candidate its reward counts records (a factor 1.33 on the default grid)."""
    return 2 if within is None else max(1, candidates // 20)


def end_utilities(ordered: np.ndarray, candidates: np.ndarray, cap: float, shift: int) -> tuple[np.ndarray, np.ndarray]:
    """The lower and upper ends' utilities over ``candidates`` (ascending) for the records ``ordered`` (ascending,
    finite): ``min(#{x < c_{i+s}}, K) − #{x < c_i}`` and ``min(#{x > c_{i−s}}, K) − #{x > c_i}``."""
    below = np.searchsorted(ordered, candidates, side="left").astype(float)
    above = (len(ordered) - np.searchsorted(ordered, candidates, side="right")).astype(float)
    g, n = len(candidates), float(len(ordered))
    inside = np.arange(g) + shift  # past the grid's edge the inner count is every record (one beyond any candidate)
    inner_below = np.where(inside <= g - 1, below[np.minimum(inside, g - 1)], n)
    inside = np.arange(g) - shift
    inner_above = np.where(inside >= 0, above[np.maximum(inside, 0)], n)
    return np.minimum(inner_below, cap) - below, np.minimum(inner_above, cap) - above


def rank_error(epsilon: float, columns: int = 1, *, within: tuple[float, float] | None = None, grid: int = 200,
               confidence: float = 0.01) -> float:
    """K = 2 ln(G / β) / ε′, ε′ = ε / (2 · columns): how many records an end may leave beyond it at 1 − β, from
    public numbers only (call it before spending anything; the ends are useful from about 3K records)."""
    candidates = len(bounds_grid(within, int(grid))) if within is not None else len(bounds_grid())
    return 2.0 * SENSITIVITY * np.log(candidates / float(confidence)) / (float(epsilon) / (2 * int(columns)))


def suggest_bounds(
    records: Any,
    *,
    epsilon: float,
    ledger: "PrivacyLedger",
    within: tuple[float, float] | None = None,
    grid: int = 200,
    confidence: float = 0.01,
    integer: bool | None = None,
    support: tuple[float, float] | None = None,
    decades: tuple[int, int] = _DECADES,
    method: str = "fences",
    fence: float = FENCE,
    rng: "None | int | np.random.Generator | NoiseSource" = None,
    touched: str = "",
) -> PrivateBounds:
    """Choose each column's range privately, for ``epsilon`` in all (see the module docstring).

    Parameters
    ----------
    records
        One row per record: a 1-D array (one column) or a 2-D array (records × columns).
    epsilon
        The total ε of the choice over k columns: the fences spend ε / (4k) on each of a column's four quartile
        releases, the tails ε / (2k) on each end; one ledger entry per release.
    ledger
        The :class:`~pymc_dp.accounting.PrivacyLedger` to charge (one entry per end). Required.
    within
        A public range ``(lo, hi)`` known without the data, over which ``grid`` candidates are spread; None (the
        default) uses the symmetric geometric grid 0, ±10ᵏ, k from −6 to 9.
    grid
        The number of candidates over ``within`` (ignored without it).
    confidence
        β, per end (a pair of ends misses with probability up to 2β): see the module docstring for what it bounds.
    integer
        Round the ends outward to whole numbers. None (default): when the container declares whole numbers (a NumPy
        integer or boolean dtype, pandas integer columns), never read from the values.
    support
        A public range ``(lo, hi)`` every end must lie in (a likelihood's support: ``(0, inf)`` for counts, the
        smallest positive number upward for a strictly positive family): candidates outside it are dropped before
        the choice, so no end lands where the likelihood cannot go; records outside it count at its edge.
    decades
        ``(lo, hi)``, whole numbers: the default grid's candidates are 0 and ±10ᵏ for k from lo to hi (ignored with
        ``within``). A higher lo drops the many candidates near 0, which at a small ε compete with the records' own
        ends when the records lie around 0 (a second pass on records less a centre).
    method
        ``"fences"`` (default): each column's quartiles found privately in two passes and the range
        ``(q₁ − f·IQR, q₃ + f·IQR)``; ``"tails"``: each end aimed at the records' extremes directly (see the module
        docstring for when each is accurate).
    fence
        f of ``"fences"`` (3 by default: ±4.7 standard deviations of a Normal's centre, 0.9 % of an exponential's
        records above).
    rng
        ``None`` for OpenDP's exact Gumbel noisy-max, a seed or Generator for reproducible noise, or a
        :class:`~pymc_dp.mechanisms.NoiseSource`.
    touched
        What the release touched, stored in the ledger entries.

    Returns
    -------
    PrivateBounds
        ``.pairs`` (one ``(lower, upper)`` per column), ``.pair`` for one column, ``.target`` (the tails: K, with
        probability 1 − β an end leaves fewer than 2K records beyond it, fewer than K where some candidate earns K;
        the fences: how many ranks a quartile may miss by at 1 − β)
        and the ledger entries.

    Raises
    ------
    ValueError
        For an invalid argument (named), before anything is spent.
    pymc_dp.accounting.BudgetExceededError
        If the ledger cannot afford ε; nothing is drawn or recorded.
    """
    eps = check_epsilon(epsilon, "epsilon")
    ledger = _require_ledger(ledger)
    touched = _check_touched(touched)
    if within is not None:
        try:
            lo, hi = (float(v) for v in within)
        except (TypeError, ValueError):
            raise ValueError(f"within must be a pair (lo, hi) of numbers, a range known without the data, got "
                             f"{within!r}. Nothing was spent.") from None
        if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi and np.isfinite(hi - lo)):
            raise ValueError(f"within must be finite with lo < hi (and hi − lo finite), got {within!r}. Nothing was "
                             "spent.")
        if not isinstance(grid, (int, np.integer)) or isinstance(grid, bool) or not 2 <= grid <= 100_000:
            raise ValueError(f"grid must be an integer from 2 to 100 000 (the candidates over within), got "
                             f"{grid!r}. Nothing was spent.")
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float, np.floating)) \
            or not 0.0 < float(confidence) < 1.0:
        raise ValueError(f"confidence must be a number in (0, 1) (β, how often an end may miss), got "
                         f"{confidence!r}. Nothing was spent.")
    if within is None:
        try:
            decades = tuple(int(k) for k in decades if float(k) == int(k))
        except (TypeError, ValueError, OverflowError):
            decades = ()
        if len(decades) != 2 or not -30 <= decades[0] < decades[1] <= 30:
            raise ValueError(f"decades must be a pair (lo, hi) of whole numbers with −30 ≤ lo < hi ≤ 30, got "
                             f"{decades!r}. Nothing was spent.")
    if method not in ("fences", "tails"):
        raise ValueError(f"method must be 'fences' (quartiles, then q₁ − f·IQR and q₃ + f·IQR) or 'tails' (each end "
                         f"aimed at the extremes), got {method!r}. Nothing was spent.")
    if isinstance(fence, bool) or not isinstance(fence, (int, float, np.floating)) or not 0.0 <= float(fence) < 1e6:
        raise ValueError(f"fence must be a number ≥ 0 (how many interquartile ranges beyond the quartiles), got "
                         f"{fence!r}. Nothing was spent.")
    values, integer = _records(records, integer)
    candidates = _within_support(bounds_grid(within, int(grid) if within is not None else 0, decades), support)
    columns = values.shape[1]
    source = resolve_noise_source(rng)
    missing = int(np.sum(np.isnan(values)))
    if method == "fences":
        lower, upper, target, recorded = _fences(values, candidates, eps, float(confidence), float(fence),
                                                 _grid_words(within, decades), ledger, source, touched)
    else:
        lower, upper, target, recorded = _tails(values, candidates, eps, float(confidence), within, decades, ledger,
                                                source, touched)
    # post-processing: an ordered pair, never a single point (a route needs lower < upper)
    lower, upper = np.minimum(lower, upper), np.maximum(lower, upper)
    point = lower == upper
    upper[point] = candidates[np.minimum(np.searchsorted(candidates, upper[point], side="right"), len(candidates) - 1)]
    if integer:  # whole numbers, outward (a candidate within 10⁻³ of one is read as it: −10⁻⁶ is 0, not −1)
        lower, upper = np.floor(np.round(lower, 3)) + 0.0, np.ceil(np.round(upper, 3)) + 0.0  # no −0.0
    upper = np.where(upper > lower, upper, lower + 1.0)  # still a point (the grid's last candidate): one unit up
    if missing:
        curator_report(f"{missing} value(s) of the records were not numbers and counted in no end's utility (the "
                       "count is for the curator only: it is not released).", UserWarning, stacklevel=2)
    return PrivateBounds(lower, upper, float(target), tuple(recorded))


def _tails(values: np.ndarray, candidates: np.ndarray, eps: float, confidence: float,
           within: tuple[float, float] | None, decades: tuple[int, int], ledger: "PrivacyLedger",
           source: "NoiseSource", touched: str) -> tuple[np.ndarray, np.ndarray, float, tuple]:
    """``method="tails"``: each end an exponential mechanism aimed at the records' extremes (module docstring)."""
    from ..accounting import LedgerEntry

    columns = values.shape[1]
    each = eps / (2 * columns)
    target = 2.0 * SENSITIVITY * np.log(len(candidates) / confidence) / each  # rank_error, this grid
    if ledger.neighbouring == "replace" and len(values) < 3 * target:  # N is public under replace-one only
        warnings.warn(f"{len(values)} records are few for private bounds at this ε: each end's rank error K is "
                      f"{target:.0f} records, and with fewer than about 3K records the ends are close to uniform "
                      "over the grid. Give more ε, a tighter public within=, or declare the bounds.",
                      UserWarning, stacklevel=3)
    shift = _shift(within, len(candidates))
    scale = _gumbel_scale(each, SENSITIVITY, False)
    details = {"algorithm": "private end: exponential mechanism over a public grid, utility min(records within s "
                            "steps inside the candidate, K) − records beyond it (sensitivity 1)",
               "sensitivity": SENSITIVITY, "num_candidates": int(len(candidates)), "shift s (grid steps)": shift,
               "grid": _grid_words(within, decades), "K (most records beyond each end, at 1 − β)": float(target),
               "confidence": confidence}
    if within is not None:
        details["within"] = [float(within[0]), float(within[1])]
    planned = [LedgerEntry("exponential", each, count=1, event=None, neighbouring=ledger.neighbouring,
                           touched=f"{touched or 'records'}: {end} end of column {j}", noise_source=source.name,
                           details=dict(details))
               for j in range(columns) for end in ("lower", "upper")]

    def ends(j: int, drawn: list[int]) -> tuple[float, float]:
        column = values[:, j]
        ordered = np.sort(np.clip(column[~np.isnan(column)], candidates[0], candidates[-1]))
        lower_utility, upper_utility = end_utilities(ordered, candidates, target, shift)
        lower = candidates[source.gumbel_argmax(lower_utility, scale)]
        drawn[0] += 1
        upper = candidates[source.gumbel_argmax(upper_utility, scale)]
        drawn[0] += 1
        return lower, upper

    lower, upper, recorded = _column_by_column(ledger, planned, columns, ends)
    return lower, upper, target, recorded


def _column_by_column(ledger: "PrivacyLedger", planned: list, columns: int,
                      choose: Any) -> tuple[np.ndarray, np.ndarray, tuple]:
    """Reserve ``planned``, then ``choose(j, drawn)`` each column's (lower, upper), ``drawn[0]`` counting the releases
    drawn so far: if a column fails, those are recorded (their noise was drawn) before the error propagates."""
    lower, upper, drawn = np.empty(columns), np.empty(columns), [0]
    with ledger.reserve(planned, what=f"private bounds of {columns} column(s)") as reservation:
        try:
            for j in range(columns):
                lower[j], upper[j] = choose(j, drawn)
        except BaseException:
            if drawn[0]:  # noise was drawn: those choices are spent whatever failed after them
                reservation.commit(planned[:drawn[0]])
            raise
        recorded = reservation.commit(planned)
    return lower, upper, recorded


def _grid_words(within: tuple[float, float] | None, decades: tuple[int, int]) -> str:
    return "evenly over within" if within is not None else f"0 and ±10^k, k from {decades[0]} to {decades[1]} by 1/8"


def _fences(values: np.ndarray, candidates: np.ndarray, eps: float, confidence: float, fence: float,
            grid_words: str, ledger: "PrivacyLedger",
            source: "NoiseSource", touched: str) -> tuple[np.ndarray, np.ndarray, float, tuple]:
    """``method="fences"``: per column, the quartiles on the grid (first pass), again on an even grid between the
    grid's candidates just outside them (second pass: the first pass's steps are a third of a decade, too coarse
    for records far from 0), then (q₁ − f·IQR, q₃ + f·IQR) inside the support. Four ε/(4k) releases per column.
    Where the quartiles are within 10⁻⁶ (over half the records share a value), the range is that value ± max(1, abs(v))."""
    from ..accounting import LedgerEntry
    from .private_quantiles import QUANTILE_SENSITIVITY, private_quantile_cell

    columns = values.shape[1]
    each = eps / (4 * columns)
    target = 2.0 * QUANTILE_SENSITIVITY * np.log(max(len(candidates), SECOND_PASS_GRID) / confidence) / each
    details = {"algorithm": "private quartile: exponential mechanism over a public grid, utility "
                            "−|(1 − q)·#below − q·#above| (sensitivity 1); range (q₁ − f·IQR, q₃ + f·IQR)",
               "sensitivity": QUANTILE_SENSITIVITY, "fence f": fence,
               "rank error (records, at 1 − β)": float(target), "confidence": confidence}
    planned = [LedgerEntry("exponential", each, count=1, event=None, neighbouring=ledger.neighbouring,
                           touched=f"{touched or 'records'}: {name} of column {j}, {stage}", noise_source=source.name,
                           details={**details, "grid": grid_words if stage == "first pass"
                                    else f"{SECOND_PASS_GRID} points evenly between the first pass's neighbours"})
               for j in range(columns) for stage in ("first pass", "second pass") for name in ("q₁", "q₃")]

    def fences(j: int, drawn: list[int]) -> tuple[float, float]:
        column = values[:, j]
        ordered = np.sort(column[~np.isnan(column)])
        clipped = np.clip(ordered, candidates[0], candidates[-1])
        first = [private_quantile_cell(clipped, candidates, q, each, source) for q in (0.25, 0.75)]
        drawn[0] += 2
        low, high = candidates[min(first)], candidates[max(first) + 1]  # the two cells' hull
        fine = np.linspace(low, high, SECOND_PASS_GRID)
        inside = np.clip(ordered, low, high)
        # cells again, read outward (q₁ at its cell's lower edge, q₃ at its upper edge): between two values of
        # discrete records (an indicator's 0 and 1) every candidate scores alike, and a candidate chosen there put
        # q₃ of a half-ones indicator below 1 a quarter of the time
        cell1 = private_quantile_cell(inside, fine, 0.25, each, source)
        cell3 = private_quantile_cell(inside, fine, 0.75, each, source)
        drawn[0] += 2
        q1, q3 = min(fine[cell1], fine[cell3]), max(fine[cell1 + 1], fine[cell3 + 1])
        # quartiles closer than the default grid's finest step: over half the records share one value (an
        # indicator mostly 0), whose other values no multiple of the IQR reaches
        spread = fence * (q3 - q1) if q3 - q1 >= POINT_MASS else max(1.0, abs(q1), abs(q3))
        return q1 - spread, q3 + spread

    lower, upper, recorded = _column_by_column(ledger, planned, columns, fences)
    # the fences inside the grid's span (within=, or the support's part of 0, ±10ᵏ): no end where no candidate is
    lower, upper = np.maximum(lower, candidates[0]), np.minimum(upper, candidates[-1])
    return lower, upper, target, recorded


@dataclass(frozen=True)
class PrivateMedian:
    """A median chosen privately (:func:`private_median`) and the ledger entries it was charged as."""

    value: float
    entries: tuple[Any, ...] = ()


def private_median(values: np.ndarray, *, epsilon: float, ledger: "PrivacyLedger", decades: tuple[int, int] = _DECADES,
                   rng: "None | int | np.random.Generator | NoiseSource" = None, touched: str = "") -> PrivateMedian:
    """The median of a 1-D array of values, chosen privately for ``epsilon`` in two releases of ε/2 (two ledger
    entries, reserved together): the cell of the grid 0, ±10ᵏ (k over ``decades``) that holds it, then a cell among
    2,001 points evenly over that one (:func:`~pymc_dp.mechanisms.private_quantiles.private_quantile_cell`, the
    quartiles' mechanism at q = ½, sensitivity 1); the midpoint of the second cell is returned. A far cell scores
    −N/2 against the median's 0 (−N/4 for a quartile), so the median is found at half the N ε of a quartile. NaN
    values count in neither count; values beyond the grid count at its edge. Returns the median and the two ledger
    entries."""
    from ..accounting import LedgerEntry
    from .private_quantiles import QUANTILE_SENSITIVITY, private_quantile_cell

    each = check_epsilon(epsilon, "epsilon") / 2.0
    ledger = _require_ledger(ledger)
    touched = _check_touched(touched)
    source = resolve_noise_source(rng)
    candidates = bounds_grid(None, 0, decades)
    column = np.asarray(values, dtype=float).ravel()
    ordered = np.sort(np.clip(column[~np.isnan(column)], candidates[0], candidates[-1]))
    details = {"algorithm": "private median: exponential mechanism over a public grid, utility "
                            "−|½·#below − ½·#above| (sensitivity 1)", "sensitivity": QUANTILE_SENSITIVITY}
    planned = [LedgerEntry("exponential", each, count=1, event=None, neighbouring=ledger.neighbouring,
                           touched=f"{touched or 'records'}: median, {stage}", noise_source=source.name,
                           details={**details, "grid": _grid_words(None, decades) if stage == "first pass"
                                    else f"{SECOND_PASS_GRID} points evenly over the first pass's cell"})
               for stage in ("first pass", "second pass")]

    def median(_: int, drawn: list[int]) -> tuple[float, float]:
        cell = private_quantile_cell(ordered, candidates, 0.5, each, source)
        drawn[0] += 1
        fine = np.linspace(candidates[cell], candidates[cell + 1], SECOND_PASS_GRID)
        cell = private_quantile_cell(np.clip(ordered, fine[0], fine[-1]), fine, 0.5, each, source)
        drawn[0] += 1
        return fine[cell], fine[cell + 1]

    lower, upper, recorded = _column_by_column(ledger, planned, 1, median)
    return PrivateMedian(float(0.5 * (lower[0] + upper[0])), tuple(recorded))
