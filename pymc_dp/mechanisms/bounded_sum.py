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
from ..accounting.validation import as_records
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


def bounded_rows(
    f: Callable[[np.ndarray], Any], records: Any, bound: float, *, dim: int | None = None, example: Any = None,
    private: bool = True, what: str = "records",
) -> np.ndarray:
    """``f`` of each record on its own, as an (n, k) array with every row projected onto ‖·‖₁ ≤ ``bound``.

    ``f`` is called on one record at a time (a batch of one), so row i is a function of record i
    alone by construction, whatever ``f`` does with its batch.

    On private records (``private=True``) nothing about ``f``'s run on a record decides anything
    the caller sees. The number of values k comes from the declaration ``dim`` or from ``f`` on
    public made-up records (``example``, default one record of zeros shaped like a record), never
    from a private record; a private record on which ``f`` raises, returns another number of values,
    or is NaN or infinite counts as zero (counted for the curator only), and ``f`` runs silenced
    (:func:`~pymc_dp.mechanisms._quiet.quietly`). On public points (``private=False``) ``f``'s errors
    propagate as they are.
    """
    if not callable(f):
        raise ValueError(f"f must be a function from a batch of records to an (n, k) array, got {f!r}.")
    batch = as_records(records) if private else np.asarray(records)
    if batch.ndim < 1 or batch.shape[0] < 1:
        raise ValueError(f"{what} must hold at least one record (one per row), got shape {batch.shape}.")
    if not private:
        return project_rows(_public_rows(f, batch, dim, what), bound, "l1")
    k = declared_dimension(f, batch.shape[1:], dim, example)
    rows = np.zeros((batch.shape[0], k))
    failed = 0
    with quietly():
        for i in range(batch.shape[0]):
            try:
                row = np.asarray(f(batch[i:i + 1]), dtype=float)
            except BaseException:  # noqa: BLE001 - on a private record any exit is data (SystemExit included)
                failed += 1
                continue
            if row.size != k or not np.all(np.isfinite(row)):
                failed += 1
                continue
            rows[i] = row.reshape(k)
    if failed:
        curator_report(f"f failed, gave another number of values than {k}, or was NaN or infinite on {failed} of the "
                       f"{what}; those rows count as 0 (the count is for the curator only: it is not released).",
                       ClippedFeaturesWarning, stacklevel=3)
    return project_rows(rows, bound, "l1")


def declared_dimension(f: Callable[[np.ndarray], Any], record_shape: tuple[int, ...], dim: Any, example: Any) -> int:
    """k, the number of values ``f`` gives per record: ``dim`` as declared, else ``f`` on public made-up records.

    ``example`` is a batch of made-up records (default: one record of zeros of ``record_shape``, the shape
    every record has). Everything here is public, so ``f``'s errors on the made-up records propagate.
    """
    if dim is not None:
        if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < 1:
            raise ValueError(f"dim must be a positive integer (the number of values f returns per record), got {dim!r}.")
        return int(dim)
    made_up = np.zeros((1, *record_shape)) if example is None else np.asarray(example)
    if made_up.ndim < 1 or made_up.shape[0] < 1:
        raise ValueError(f"example must be a batch of at least one made-up record, got shape {made_up.shape}.")
    try:
        out = np.asarray(f(made_up), dtype=float)
    except Exception as err:  # noqa: BLE001 - made-up records are public: say what f said
        which = "example=" if example is not None else f"a made-up record of zeros of shape {record_shape}"
        raise ValueError(f"f raised on {which} ({type(err).__name__}: {err}); k, the number of values f returns per "
                         "record, is read from f on made-up records, never from a private one. Declare it "
                         "(dim=k) or give example= (made-up records f accepts). Nothing was spent.") from None
    m = made_up.shape[0]
    if out.ndim not in (1, 2) or out.shape[0] != m or (out.ndim == 1 and out.size != m):
        raise ValueError(f"f must return one row per record: an (n, k) array (or (n,) for k = 1); for {m} made-up "
                         f"record(s) it returned shape {out.shape}. Nothing was spent.")
    return 1 if out.ndim == 1 else int(out.shape[1])


def _public_rows(f: Callable[[np.ndarray], Any], points: np.ndarray, dim: Any, what: str) -> np.ndarray:
    """``f`` of each public point on its own, (M, k); errors propagate (nothing here is private)."""
    k = declared_dimension(f, points.shape[1:], dim, points[:1])
    rows = np.empty((points.shape[0], k))
    for i in range(points.shape[0]):
        row = np.asarray(f(points[i:i + 1]), dtype=float)
        if row.size != k:
            raise ValueError(f"f must return the same number of values ({k}) for every one of the {what}.")
        rows[i] = row.reshape(k)
    finite = np.isfinite(rows).all(axis=1)
    rows[~finite] = 0.0
    return rows


def noisy_bounded_sum(
    records: Any, f: Callable[[np.ndarray], Any], *, bound: float, epsilon: float, ledger: "PrivacyLedger",
    rng: Any = None, assumptions: "tuple[str, ...]" = (), dim: int | None = None, example: Any = None,
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
        batch-wide step such as standardising has nothing to mix). Where f raises, returns
        another number of values than k, or is NaN or infinite on a record, the row counts as
        0 (counted, for the curator only): nothing f does on a private record reaches you.
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
    dim, example
        How k, the length of the released vector, is known: ``dim=k`` declares it;
        otherwise it is read from ``f`` on ``example`` (made-up records you supply, public)
        or, by default, on one made-up record of zeros shaped like a record. It is never
        read from a private record: a length that followed the data would be a release no
        ε covers. If f fails on the made-up record, the call refuses before spending and
        asks for ``dim=`` or ``example=``.

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
    rows = bounded_rows(f, records, bound, dim=dim, example=example)
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
