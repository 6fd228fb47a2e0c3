"""Data bounds chosen privately: each end of each column a private tail quantile over a public grid.

Every route but the Bernoulli's needs a column's range, and a range read off the records is a release
no ledger sees (the records' minimum and maximum are two of them). :func:`suggest_bounds` spends a
stated ε on choosing them instead:

1. a public grid of candidates: ``within=(lo, hi)`` (a range known without the data) gives ``grid``
   evenly spaced points over it; without one, a symmetric geometric grid 0, ±10ᵏ for k from −6 to 9
   in steps of an eighth of a decade (241 candidates), wide enough for a measurement in any common
   unit (a value beyond ±10⁹ is clipped there);
2. for the upper end the exponential mechanism over the grid with utility
   ``u(c_i) = min(#{x > c_{i−s}}, K) − #{x > c_i}``: the records above the candidate cost one each,
   and a candidate earns at most K for the records in the s steps below it. The sensitivity is 1
   under either neighbouring relation: one record added, or moved up, can only raise both counts (each
   by at most one), and one removed, or moved down, only lower them, so their difference moves by at
   most one. The lower end is the mirror image (``#{x < c}``, the s steps above);
3. ``K = 2 ln(G / β) / ε′`` (G candidates, ε′ the choice's ε). A candidate just above the records'
   top, with K of them within s steps below it, earns K; one with m records above it K − m; an empty
   candidate far above them 0, and all of those together are chosen with probability at most β. A
   plain rank utility, ``−|#{x > c} − m|``, gives every empty candidate above the records the same
   utility as one near the target: on the wide default grid the hundreds of them outweighed it, and
   the chosen end landed decades above the data.

The chosen end has at most K records beyond it with probability at least ``1 − β``; a route clips
those few (its likelihood does not model that clipping). The shift s is two steps on the default
grid (a factor 1.33) and a twentieth of the grid over ``within``.

ε is divided evenly over the 2k choices (k columns; basic composition), each a ledger entry of its
own, all reserved before the first is drawn. Integer columns get whole-number ends (the lower
rounded down, the upper up: post-processing). A value that is not a number (NaN) is beyond no
candidate and counts in no utility; how many there were goes to the curator only.
"""

from __future__ import annotations

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

__all__ = ["PrivateBounds", "bounds_grid", "end_utilities", "suggest_bounds"]

#: The default grid's decades: ±10ᵏ for k from the first to the second, in steps of 1/``_PER_DECADE``.
_DECADES = (-6, 9)
_PER_DECADE = 8


def bounds_grid(within: tuple[float, float] | None = None, grid: int = 200) -> np.ndarray:
    """The public candidates, ascending: ``grid`` evenly spaced points over ``within``, or (None) the symmetric
    geometric grid 0, ±10ᵏ (k from −6 to 9 in eighths of a decade)."""
    if within is None:
        k = np.linspace(_DECADES[0], _DECADES[1], (_DECADES[1] - _DECADES[0]) * _PER_DECADE + 1)
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


def _records(records: Any) -> tuple[np.ndarray, bool]:
    """The records as a (rows, columns) float array, and whether every column is integer-valued by its dtype."""
    try:
        array = np.asarray(records)
    except Exception as exc:  # noqa: BLE001 - any failure to read is the caller's input
        raise ValueError(f"records must be an array of numbers (one row per record), got {type(records).__name__}: "
                         f"{exc}") from None
    if array.dtype == object or not (np.issubdtype(array.dtype, np.number) or array.dtype == bool):
        raise ValueError(f"records must be numbers (one row per record, one column per variable), got dtype "
                         f"{array.dtype}. Nothing was spent.")
    if array.ndim not in (1, 2) or array.size == 0:
        raise ValueError(f"records must be a non-empty 1-D array (one column) or 2-D array (records × columns), "
                         f"got shape {array.shape}. Nothing was spent.")
    integer = np.issubdtype(array.dtype, np.integer) or array.dtype == bool
    return (array.reshape(-1, 1) if array.ndim == 1 else array).astype(float), integer


#: The utility's sensitivity: its two counts move in the same direction for any one record (see the module
#: docstring), so their difference moves by at most one.
SENSITIVITY = 1.0


def _shift(within: tuple[float, float] | None, candidates: int) -> int:
    """s: how many grid steps inside a candidate its reward counts records (a factor 1.33 on the default grid)."""
    return 2 if within is None else max(1, candidates // 20)


def end_utilities(ordered: np.ndarray, candidates: np.ndarray, cap: float, shift: int) -> tuple[np.ndarray, np.ndarray]:
    """The lower and upper ends' utilities over ``candidates`` (ascending) for the records ``ordered`` (ascending,
    finite): ``min(#{x < c_{i+s}}, K) − #{x < c_i}`` and ``min(#{x > c_{i−s}}, K) − #{x > c_i}``."""
    below = np.searchsorted(ordered, candidates, side="left").astype(float)
    above = (len(ordered) - np.searchsorted(ordered, candidates, side="right")).astype(float)
    g = len(candidates)
    inner_below = below[np.minimum(np.arange(g) + shift, g - 1)]
    inner_above = above[np.maximum(np.arange(g) - shift, 0)]
    return np.minimum(inner_below, cap) - below, np.minimum(inner_above, cap) - above


def suggest_bounds(
    records: Any,
    *,
    epsilon: float,
    ledger: "PrivacyLedger",
    within: tuple[float, float] | None = None,
    grid: int = 200,
    confidence: float = 0.05,
    rng: "None | int | np.random.Generator | NoiseSource" = None,
    touched: str = "",
) -> PrivateBounds:
    """Choose each column's range privately, for ``epsilon`` in all (see the module docstring).

    Parameters
    ----------
    records
        One row per record: a 1-D array (one column) or a 2-D array (records × columns).
    epsilon
        The total ε of the choice; each of the 2k ends gets ε / (2k).
    ledger
        The :class:`~pymc_dp.accounting.PrivacyLedger` to charge (one entry per end). Required.
    within
        A public range ``(lo, hi)`` known without the data, over which ``grid`` candidates are spread; None (the
        default) uses the symmetric geometric grid 0, ±10ᵏ, k from −6 to 9.
    grid
        The number of candidates over ``within`` (ignored without it).
    confidence
        β: with probability at least ``1 − β`` each end leaves at most K records outside it, and an end lands far
        beyond the records with probability at most β.
    rng
        ``None`` for OpenDP's exact Gumbel noisy-max, a seed or Generator for reproducible noise, or a
        :class:`~pymc_dp.mechanisms.NoiseSource`.
    touched
        What the release touched, stored in the ledger entries.

    Returns
    -------
    PrivateBounds
        ``.pairs`` (one ``(lower, upper)`` per column), ``.pair`` for one column, ``.target`` (K, the most
        records each end leaves outside with probability 1 − β) and the ledger entries.

    Raises
    ------
    ValueError
        For an invalid argument (named), before anything is spent.
    pymc_dp.accounting.BudgetExceededError
        If the ledger cannot afford ε; nothing is drawn or recorded.
    """
    from ..accounting import LedgerEntry

    eps = check_epsilon(epsilon, "epsilon")
    ledger = _require_ledger(ledger)
    touched = _check_touched(touched)
    if within is not None:
        try:
            lo, hi = (float(v) for v in within)
        except (TypeError, ValueError):
            raise ValueError(f"within must be a pair (lo, hi) of numbers, a range known without the data, got "
                             f"{within!r}. Nothing was spent.") from None
        if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
            raise ValueError(f"within must be finite with lo < hi, got {within!r}. Nothing was spent.")
        if isinstance(grid, bool) or int(grid) != grid or grid < 2:
            raise ValueError(f"grid must be an integer ≥ 2 (the candidates over within), got {grid!r}.")
    if not 0.0 < float(confidence) < 1.0:
        raise ValueError(f"confidence must lie in (0, 1) (β, how often an end may miss its target), got "
                         f"{confidence!r}.")
    values, integer = _records(records)
    candidates = bounds_grid(within, int(grid))
    columns = values.shape[1]
    each = eps / (2 * columns)
    target = 2.0 * SENSITIVITY * np.log(len(candidates) / float(confidence)) / each
    shift = _shift(within, len(candidates))
    source = resolve_noise_source(rng)
    scale = _gumbel_scale(each, SENSITIVITY, False)
    details = {"algorithm": "private end: exponential mechanism over a public grid, utility min(records within s "
                            "steps inside the candidate, K) − records beyond it (sensitivity 1)",
               "sensitivity": SENSITIVITY, "num_candidates": int(len(candidates)), "shift s (grid steps)": shift,
               "grid": "evenly over within" if within is not None else "0 and ±10^k, k from −6 to 9 by 1/8",
               "K (most records beyond each end, at 1 − β)": float(target), "confidence": float(confidence)}
    if within is not None:
        details["within"] = [float(within[0]), float(within[1])]
    planned = [LedgerEntry("exponential", each, count=1, event=None, neighbouring=ledger.neighbouring,
                           touched=f"{touched or 'records'}: {end} end of column {j}", noise_source=source.name,
                           details=dict(details))
               for j in range(columns) for end in ("lower", "upper")]
    missing = int(np.sum(~np.isfinite(values)))
    lower, upper = np.empty(columns), np.empty(columns)
    with ledger.reserve(planned, what=f"private bounds of {columns} column(s)") as reservation:
        drawn = 0
        try:
            for j in range(columns):
                column = values[:, j]
                ordered = np.sort(np.clip(column[np.isfinite(column)], candidates[0], candidates[-1]))
                lower_utility, upper_utility = end_utilities(ordered, candidates, target, shift)
                lower[j] = candidates[source.gumbel_argmax(lower_utility, scale)]
                drawn += 1
                upper[j] = candidates[source.gumbel_argmax(upper_utility, scale)]
                drawn += 1
        except BaseException:
            if drawn:  # noise was drawn: those choices are spent whatever failed after them
                reservation.commit(planned[:drawn])
            raise
        recorded = reservation.commit(planned)
    lower, upper = np.minimum(lower, upper), np.maximum(lower, upper)  # post-processing: an ordered pair
    if integer:  # whole numbers, outward (a candidate within 10⁻³ of one is read as it: −10⁻⁶ is 0, not −1)
        lower, upper = np.floor(np.round(lower, 3)) + 0.0, np.ceil(np.round(upper, 3)) + 0.0  # no −0.0
    if missing:
        curator_report(f"{missing} value(s) of the records were not numbers and counted in no end's utility (the "
                       "count is for the curator only: it is not released).", UserWarning, stacklevel=2)
    return PrivateBounds(lower, upper, float(target), tuple(recorded))
