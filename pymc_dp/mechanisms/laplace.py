"""The Laplace mechanism: release a real vector with L1-calibrated Laplace noise.

Theory ([FGWC16] eq. 2-3; Dwork & Roth 2014, Thm 3.6): if the L1 sensitivity of
``h`` is ``Δ = max_{X~X'} ||h(X) - h(X')||_1`` under the ledger's neighbouring
relation, releasing ``h(X) + Y`` with ``Y_j ~ Laplace(0, Δ/ε)`` i.i.d. over the
coordinates is ε-DP. This is the workhorse of pymc_dp's privatised sufficient
statistics (theory notes, section 5).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

from ..accounting.event_types import LaplaceEvent
from ..accounting.validation import check_epsilon, check_finite_array, check_sensitivity
from ._additive import release_with_additive_noise
from .noise import _check_touched, _require_ledger, _scale_for, resolve_noise_source

if TYPE_CHECKING:  # pragma: no cover
    from ..accounting import PrivacyLedger
    from .noise import NoiseSource

__all__ = ["laplace_mechanism"]


def laplace_mechanism(
    value: Any,
    *,
    epsilon: float,
    sensitivity: float,
    ledger: "PrivacyLedger",
    rng: "None | int | np.random.Generator | NoiseSource" = None,
    touched: str = "",
    assumptions: Sequence[str] = (),
    return_entry: bool = False,
    details: Mapping[str, Any] | None = None,
) -> Any:
    """Release ``value`` with Laplace noise of scale ``sensitivity / epsilon`` (ε-DP).

    Parameters
    ----------
    value
        A real number or array (any shape): the exact statistic ``h(X)``. It must
        have no NaN or infinite entry.
    epsilon
        The privacy parameter ε > 0 spent by this release.
    sensitivity
        The L1 sensitivity Δ of ``value`` under the ledger's neighbouring relation
        (sum over coordinates of the largest change one record can cause). ``0``
        means the value does not depend on the data: see Notes.
    ledger
        The :class:`~pymc_dp.accounting.PrivacyLedger` to charge. Required.
    rng
        ``None`` (default) for OpenDP's exact, floating-point-safe sampler; an
        ``int`` seed or :class:`numpy.random.Generator` for reproducible seeded noise (the same ``int`` gives the same
        draw on every call; reuse one ``Generator`` for independent draws)
        (not safe to publish: see :mod:`pymc_dp.mechanisms.noise`); or a
        :class:`~pymc_dp.mechanisms.NoiseSource`.
    touched
        What the release touched, e.g. ``"y:sum"``; stored in the ledger entry.
    assumptions
        Conditions the guarantee rests on that a reader of the ledger should see
        (e.g. that N is public); stored in the ledger entry.

    return_entry
        Also return the :class:`~pymc_dp.accounting.LedgerEntry` this release
        recorded, as ``(value, entry)`` (the entry is the ledger's record of this
        spend, whatever else spends from the ledger concurrently).
    details
        Further public facts about the release for the entry's ``details`` (e.g. how a
        statistic was centred and weighted); JSON-serialisable values only.

    Returns
    -------
    float or numpy.ndarray
        ``value + noise``, with the shape of ``value`` (a float for a Python scalar).

    Raises
    ------
    ValueError
        For an invalid argument (the message names it), including ``ledger=None``.
    pymc_dp.accounting.BudgetExceededError
        If the ledger's budget cannot afford ε; nothing is drawn or recorded then.

    Notes
    -----
    The ledger entry has ``mechanism="laplace"``, ``delta=0``, the noise source,
    ``event={"type": "laplace", "noise_multiplier": scale / sensitivity}`` and
    ``details={"sensitivity": Δ, "scale": b, "norm": "l1", "size": n}``. The scale is
    ``Δ/ε`` rounded *up* to the next double if needed, so the release is never
    more than ε-DP.

    A sensitivity of 0 is accepted: the value cannot depend on the data, so it is
    returned unchanged and no noise is drawn. The entry is still recorded with the
    requested ε (a conservative over-charge that keeps the ledger a complete record
    of what was released), with ``event=None`` and ``noise_source="none"``.

    Examples
    --------
    >>> import pymc_dp as pmdp  # doctest: +SKIP
    >>> ledger = pmdp.PrivacyLedger()  # doctest: +SKIP
    >>> noisy_count = laplace_mechanism(42, epsilon=0.5, sensitivity=1, ledger=ledger)  # doctest: +SKIP
    """
    eps = check_epsilon(epsilon, "epsilon")
    sens = check_sensitivity(sensitivity, "sensitivity")
    arr = check_finite_array(value, "value")
    touched = _check_touched(touched)
    ledger = _require_ledger(ledger)
    source = resolve_noise_source(rng)
    if isinstance(assumptions, str):
        raise ValueError("assumptions must be a sequence of strings, e.g. ('N is public',), not a string.")

    scale = _scale_for(sens, eps) if sens > 0 else 0.0
    return release_with_additive_noise(
        arr, value, mechanism="laplace", epsilon=eps, delta=0.0, sensitivity=sens, scale=scale,
        event=LaplaceEvent(noise_multiplier=scale / sens) if sens > 0 else None,
        details={**(details or {}), "norm": "l1"}, ledger=ledger, source=source, touched=touched,
        assumptions=tuple(str(a) for a in assumptions), add=source.add_laplace, dtype=float, return_entry=return_entry,
    )
