"""``privatize``: sufficient statistics of records, released once with the Laplace mechanism."""

from __future__ import annotations

import warnings
from typing import Any, Mapping

import numpy as np

from ..accounting import PrivacyLedger
from ..accounting.validation import check_epsilon, check_neighbouring
from ..mechanisms import laplace_mechanism
from ._arrays import as_array, compute, n_records
from .base import Family
from .registry import get_family
from .statistics import PrivateStatistics

__all__ = ["privatize", "ClippedRecordsWarning"]


class ClippedRecordsWarning(UserWarning):
    """Some records lay outside the declared bounds and were clipped to them."""


def privatize(
    data: Any,
    family: str | Family,
    epsilon: float,
    *,
    bounds: Mapping[str, Any] | None = None,
    ledger: PrivacyLedger | None = None,
    neighbouring: str = "replace",
    rng: Any = None,
    name: str = "data",
    **family_args: Any,
) -> PrivateStatistics:
    """Release the sufficient statistics of ``data`` under ``family`` with the Laplace mechanism.

    The records enter an exponential-family likelihood only through
    ``S(X) = Σᵢ s(xᵢ)``. This computes S (chunk by chunk for Dask data), adds
    Laplace noise of scale Δ/ε once (charged to ``ledger``, budget checked first),
    and projects the result back onto valid statistics. Everything computed from
    the result afterwards — any model, prior, sampler, chain or number of draws —
    is post-processing and costs nothing more.

    Parameters
    ----------
    data
        The records: a NumPy array, list, pandas Series/DataFrame, or Dask
        array/DataFrame (reduced on the cluster; only the sums come back). One row
        per record.
    family
        A family name (``"bernoulli"``, ``"binomial"``, ``"categorical"``,
        ``"multinomial"``, ``"poisson"``, ``"normal"``, ``"exponential"``,
        ``"gamma"``, ``"linear_regression"``) or a family object.
    epsilon
        The privacy parameter ε > 0 this release spends.
    bounds
        Data bounds for families whose support is unbounded (the error says which
        are needed); records outside are clipped to them and the number clipped is
        reported in a :class:`ClippedRecordsWarning` to you, the curator (it is not
        released).
    ledger
        The ledger to charge; a new one (no budget) if omitted, available as
        ``result.ledger``.
    neighbouring
        ``"replace"`` (N public, the default) or ``"add_remove"`` (N private: the
        statistics then include what is needed to estimate N). Must match the ledger's.
    rng
        ``None`` for OpenDP's secure noise (default), or a seed / Generator for
        reproducible seeded noise (recorded as such in the ledger).
    name
        What the data are called; the ledger entry records ``"<name>:<statistics>"``.
    **family_args
        Arguments of the family, e.g. ``n_trials=10`` (binomial), ``k=4``
        (categorical), ``sigma=2.0`` (normal with known σ), ``shape=3.0`` (gamma).

    Returns
    -------
    PrivateStatistics

    Raises
    ------
    ValueError
        For bad arguments, an unknown family, a missing bound (naming it), records
        outside the family's support (e.g. a Bernoulli value of 2: such records are
        an error, not clipped), NaN records, or a ledger under another relation.
    pymc_dp.BudgetExceededError
        If the ledger's budget cannot pay ε; nothing is drawn or recorded then.
    """
    eps = check_epsilon(epsilon)
    neighbouring = check_neighbouring(neighbouring)
    fam = get_family(family, **family_args)
    if ledger is None:
        ledger = PrivacyLedger(neighbouring=neighbouring)
    elif not isinstance(ledger, PrivacyLedger):
        raise ValueError(f"ledger must be a pmdp.PrivacyLedger or None, got {type(ledger).__name__}.")
    elif ledger.neighbouring != neighbouring:
        raise ValueError(
            f"neighbouring={neighbouring!r} but the ledger uses {ledger.neighbouring!r}; pass the ledger's relation."
        )
    checked_bounds = fam.check_bounds(bounds)

    x = fam.records(as_array(data, "data"))
    n = n_records(x)
    if n == 0:
        raise ValueError("data has no records.")
    invalid = fam.invalid(x)
    clipped, outside = fam.clip(x, checked_bounds)
    total = fam.record_statistics(clipped, neighbouring).sum(axis=0)
    n_invalid, n_outside, exact = compute(invalid.sum(), outside.sum(), total)
    if int(n_invalid):
        raise ValueError(
            f"{int(n_invalid)} record(s) are NaN or outside the support of the {fam.name} family; "
            "fix or drop them before privatising (nothing was spent)."
        )
    if int(n_outside):
        warnings.warn(
            f"{int(n_outside)} of {n} record(s) lay outside bounds={checked_bounds} and were clipped to them "
            "(this count is for you, the curator; it is not released).",
            ClippedRecordsWarning,
            stacklevel=2,
        )
    names = fam.statistic_names(neighbouring)
    exact = np.asarray(exact, dtype=float).ravel()
    sensitivity = fam.sensitivity(checked_bounds, neighbouring)
    noisy = np.atleast_1d(
        laplace_mechanism(exact, epsilon=eps, sensitivity=sensitivity, ledger=ledger, rng=rng,
                          touched=f"{name}:{'+'.join(names) if len(names) <= 4 else fam.name + ' statistics'}")
    )
    entry = ledger.entries[-1]
    public_n = n if neighbouring == "replace" else None
    values = fam.project(noisy, public_n, checked_bounds, neighbouring)
    n_out = float(n) if public_n is not None else fam.n_from_statistics(values, neighbouring)
    return PrivateStatistics(
        family=fam,
        names=tuple(names),
        values=np.asarray(values, dtype=float),
        noisy=np.asarray(noisy, dtype=float),
        n=n_out,
        epsilon=eps,
        sensitivity=float(sensitivity),
        scale=float(entry.details.get("scale", sensitivity / eps)),
        neighbouring=neighbouring,
        bounds=checked_bounds,
        entry_id=entry.id,
        noise_source=entry.noise_source,
        ledger=ledger,
    )
