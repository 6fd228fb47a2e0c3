"""The sum of a bounded function of the records, released with Laplace noise: your own statistic.

:func:`noisy_bounded_sum` releases ``z = Σ_i f(r_i) + Laplace(b)`` for any function ``f``
from one record to k numbers that the analyst supplies, with ``‖f(r)‖₁ ≤ B`` declared
(``bound``): rows of f beyond the ball are projected onto it (counted, for the curator
only), so the bound holds whatever the records. One record then moves the sum by at most
2B in L1 under replace-one neighbouring (N public: inference needs it), and the scale is
b = 2B/ε. :func:`pymc_dp.observe_bounded_sum` infers a model's parameters from the release,
the unseen records and the noise integrated out — the machinery the logistic-regression
and PCA measurements use, for a statistic the project has never seen.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from ..accounting.curator import curator_report
from ._quiet import quietly
from .laplace import laplace_mechanism
from .logistic_regression import REPLACE_ONLY, ClippedFeaturesWarning, _positive, project_rows
from .noise import _require_ledger

if TYPE_CHECKING:  # pragma: no cover
    from ..accounting import LedgerEntry, PrivacyLedger

__all__ = ["BoundedSumRelease", "noisy_bounded_sum", "bounded_rows"]


@dataclass(frozen=True)
class BoundedSumRelease:
    """What :func:`noisy_bounded_sum` released.

    Attributes
    ----------
    values
        (k,): the noisy sum ``Σ_i f(r_i) + Laplace(scale)``.
    n_records
        N (public: replace-one neighbouring).
    bound
        The declared L1 bound B on a row of f.
    scale
        The Laplace scale b of every coordinate.
    entry
        The ledger entry recorded.
    """

    values: np.ndarray
    n_records: int
    bound: float
    scale: float
    entry: "LedgerEntry" = field(repr=False)


def bounded_rows(f: Callable[[np.ndarray], Any], records: Any, bound: float, what: str = "records") -> np.ndarray:
    """``f`` of each record on its own, as an (n, k) array with every row projected onto ‖·‖₁ ≤ ``bound``.

    ``f`` is called on one record at a time (a batch of one), so row i is a function of record i
    alone by construction, whatever ``f`` does with its batch. A row that is not finite counts as
    zero (counted for the curator only): refusing would tell the caller that some record makes f
    NaN, for free.
    """
    if not callable(f):
        raise ValueError(f"f must be a function from a batch of records to an (n, k) array, got {f!r}.")
    batch = np.asarray(records)
    if batch.ndim < 1 or batch.shape[0] < 1:
        raise ValueError(f"{what} must hold at least one record (one per row), got shape {batch.shape}.")
    private = what == "records"

    def call(i: int) -> np.ndarray | None:
        # On private records a failure of f is data-dependent, and its message can quote the record: such a
        # row counts as zero (counted for the curator only) and nothing of the failure reaches the caller,
        # nor anything f warns or prints on the way (quietly).
        if not private:
            return np.asarray(f(batch[i:i + 1]), dtype=float)
        with quietly():
            try:
                return np.asarray(f(batch[i:i + 1]), dtype=float)
            except Exception:  # noqa: BLE001
                return None

    first, start = None, 0
    while first is None and start < batch.shape[0]:
        first = call(start)
        start += 1
    if first is None:
        raise ValueError(f"f raised on every one of the {what} (its messages are not repeated: they can quote a "
                         "record). Try f on made-up records first.")
    if first.ndim not in (1, 2) or first.shape[0] != 1:
        raise ValueError(f"f must return one row per record: an (n, k) array (or (n,) for k = 1) for a batch of n; "
                         f"for one record it returned shape {first.shape}.")
    k = first.reshape(1, -1).shape[1]
    rows = np.full((batch.shape[0], k), np.nan)
    rows[start - 1] = first.reshape(-1)
    for i in range(start, batch.shape[0]):
        row = call(i)
        if row is None:
            continue
        if row.size != k:
            if private:
                continue
            raise ValueError(f"f must return the same number of values ({k}) for every record.")
        rows[i] = row.reshape(k)
    finite = np.isfinite(rows).all(axis=1)
    if not finite.all():
        rows[~finite] = 0.0
        curator_report(f"f failed or was NaN or infinite on {int((~finite).sum())} of the {what}; those rows count as 0 "
                       "(the count is for the curator only: it is not released).", ClippedFeaturesWarning,
                       stacklevel=3)
    return project_rows(rows, bound, "l1")


def noisy_bounded_sum(
    records: Any, f: Callable[[np.ndarray], Any], *, bound: float, epsilon: float, ledger: "PrivacyLedger",
    rng: Any = None, assumptions: "tuple[str, ...]" = (),
) -> BoundedSumRelease:
    """Release ``Σ_i f(r_i)`` over the records with Laplace noise, ``f`` bounded as declared.

    Parameters
    ----------
    records
        The records, one per row (any trailing shape ``f`` understands), as a NumPy array:
        anything else is converted with ``np.asarray`` first (a DataFrame becomes its
        values, so write ``f`` for arrays).
    f
        The per-record statistic: a pure function from a batch of records (rows of the
        array above) to an (n, k) array (or (n,) for k = 1). It is called on one record at
        a time, so row i depends on record i alone whatever f does with its batch (a
        batch-wide step such as standardising has nothing to mix). Where f is NaN or
        infinite, the row counts as 0 (counted, for the curator only).
    bound
        B, the declared bound on ‖f(r)‖₁ (required). Rows beyond it are projected onto
        the ball (counted, for the curator only: :func:`pymc_dp.curator_reports`).
    epsilon
        The ε spent.
    ledger, rng
        The ledger to charge (replace-one neighbouring: N is public, the sensitivity 2B)
        and the noise source (``None``: OpenDP's secure sampler).
    assumptions
        Further assumptions the ledger entry records.

    Returns
    -------
    BoundedSumRelease
        The noisy sum, N, the bound and the noise scale: what
        :func:`pymc_dp.observe_bounded_sum` needs.
    """
    bound = _positive(bound, "bound")
    ledger = _require_ledger(ledger)
    if ledger.neighbouring != "replace":
        raise ValueError("noisy_bounded_sum needs replace-one neighbouring (N is public: inference from the sum "
                         f"needs it); the ledger uses {ledger.neighbouring!r}.")
    rows = bounded_rows(f, records, bound)
    n, k = rows.shape
    sensitivity = 2.0 * bound
    values, entry = laplace_mechanism(
        rows.sum(axis=0), epsilon=epsilon, sensitivity=sensitivity, ledger=ledger, rng=rng,
        touched=f"sum of a bounded function of the records ({k} coordinate(s), L1 bound {bound:g})",
        assumptions=(REPLACE_ONLY, *assumptions), return_entry=True,
    )
    values = np.atleast_1d(np.asarray(values, dtype=float))
    values.setflags(write=False)
    return BoundedSumRelease(values, n, bound, sensitivity / float(epsilon), entry)
