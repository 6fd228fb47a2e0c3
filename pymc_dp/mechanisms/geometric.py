"""The geometric (discrete Laplace) mechanism for integer-valued statistics such as counts.

Theory (theory notes, section 2; Ghosh, Roughgarden & Sundararajan 2012): for an
integer-valued ``h`` with integer L1 sensitivity Δ, releasing ``h(X) + K`` with
``K`` i.i.d. discrete Laplace, ``P(K = k) ∝ exp(-|k| ε/Δ)``, is ε-DP. The output
stays an integer and is exactly representable, so this is the floating-point-free
choice for counts (and histograms: Δ = 2 under replace-one, 1 under add/remove).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

from ..accounting.validation import check_epsilon, check_numeric_array, check_sensitivity
from ._additive import release_with_additive_noise
from .noise import _check_touched, _require_ledger, _scale_for, resolve_noise_source

if TYPE_CHECKING:  # pragma: no cover
    from ..accounting import PrivacyLedger
    from .noise import NoiseSource

__all__ = ["geometric_mechanism", "discrete_laplace_mechanism"]

#: Inputs are kept well inside int64 so that value + noise cannot overflow.
_MAX_ABS = 2**62


def _check_integer_value(value: Any) -> np.ndarray:
    try:
        arr = np.asarray(value)
    except Exception as err:  # pragma: no cover - exotic objects
        raise ValueError(f"value must be an integer or an array of integers: {err}") from None
    if arr.dtype.kind == "b":
        raise ValueError("value must be integers (counts), got booleans; convert with value.astype(int) first.")
    if arr.dtype.kind not in "iuf":
        check_numeric_array(arr, "value")  # names strings, None, dates and other objects; never converts them
    if arr.dtype.kind in "iu":
        if arr.size and max(abs(int(arr.max())), abs(int(arr.min()))) > _MAX_ABS:
            raise ValueError(f"value must have entries of magnitude <= 2**62, got {arr.max()!r} / {arr.min()!r}.")
        return arr.astype(np.int64)
    if arr.dtype.kind == "f":
        bad = ~np.isfinite(arr)
        if bad.any():
            raise ValueError("value has NaN or infinite entries; the geometric mechanism needs integers.")
        if not np.all(arr == np.round(arr)):
            raise ValueError(
                "value must be integers (counts) for the geometric mechanism, got non-integer floats; "
                "use laplace_mechanism for real-valued statistics."
            )
        if arr.size and np.abs(arr.astype(float)).max() > _MAX_ABS:  # as float64: 2**62 overflows a float16
            raise ValueError("value must have entries of magnitude <= 2**62.")
        return arr.astype(np.int64)
    raise ValueError(f"value must be an integer or an array of integers, got dtype {arr.dtype}.")


def _check_integer_sensitivity(sensitivity: Any) -> int:
    s = check_sensitivity(sensitivity, "sensitivity")
    if not float(s).is_integer():
        raise ValueError(
            f"sensitivity must be a whole number for the geometric mechanism, got {s}; "
            "an integer statistic changes by a whole number."
        )
    return int(s)


def geometric_mechanism(
    value: Any,
    *,
    epsilon: float,
    sensitivity: int = 1,
    ledger: "PrivacyLedger",
    rng: "None | int | np.random.Generator | NoiseSource" = None,
    touched: str = "",
    assumptions: Sequence[str] = (),
    return_entry: bool = False,
    details: Mapping[str, Any] | None = None,
) -> Any:
    """Release integer ``value`` with discrete Laplace noise, pmf ∝ ``exp(-|k| ε / Δ)`` (ε-DP).

    Parameters
    ----------
    value
        An integer or array of integers (counts, histogram cells). Floats are
        accepted only if every entry is a whole number; anything else raises.
    epsilon
        ε > 0.
    sensitivity
        The integer L1 sensitivity Δ (default 1: one record changes a count by at
        most one). ``0`` returns ``value`` unchanged (see Notes).
    ledger
        The :class:`~pymc_dp.accounting.PrivacyLedger` to charge. Required.
    rng
        ``None`` (default) for OpenDP's exact integer sampler, an ``int`` seed or
        :class:`numpy.random.Generator` for reproducible seeded noise (the same ``int`` gives the same
        draw on every call; reuse one ``Generator`` for independent draws), or a
        :class:`~pymc_dp.mechanisms.NoiseSource`.
    touched
        What the release touched, e.g. ``"y:count"``; stored in the ledger entry.
    assumptions
        Conditions the guarantee rests on (e.g. that N is public); stored in the ledger entry.
    return_entry
        Also return the :class:`~pymc_dp.accounting.LedgerEntry` this release
        recorded, as ``(value, entry)`` (the entry is the ledger's record of this
        spend, whatever else spends from the ledger concurrently).
    details
        Further public facts about the release for the entry's ``details``;
        JSON-serialisable values only.

    Returns
    -------
    int or numpy.ndarray
        ``value + noise`` as int64 with the shape of ``value`` (a Python ``int`` for a
        Python scalar). Noisy counts can be negative; clip or project them
        afterwards if needed (post-processing is free).

    Raises
    ------
    ValueError
        For an invalid argument (the message names it), including ``ledger=None``
        and non-integer values or sensitivity.
    pymc_dp.accounting.BudgetExceededError
        If the ledger's budget cannot afford ε; nothing is drawn or recorded then.

    Notes
    -----
    The noise has scale ``s = Δ/ε`` (rounded up to the next double if needed),
    variance ``2 e^{-1/s} / (1 - e^{-1/s})²``, and the ledger entry has
    ``mechanism="geometric"`` and
    ``event={"type": "discrete_laplace", "noise_parameter": 1/s, "sensitivity": Δ}``.
    A sensitivity of 0 draws nothing and records the requested ε with
    ``event=None`` and ``noise_source="none"`` (a conservative over-charge).
    """
    eps = check_epsilon(epsilon, "epsilon")
    sens = _check_integer_sensitivity(sensitivity)
    arr = _check_integer_value(value)
    touched = _check_touched(touched)
    ledger = _require_ledger(ledger)
    source = resolve_noise_source(rng)
    if isinstance(assumptions, str):
        raise ValueError("assumptions must be a sequence of strings, e.g. ('N is public',), not a string.")

    scale = _scale_for(float(sens), eps) if sens > 0 else 0.0
    return release_with_additive_noise(
        arr, value, mechanism="geometric", epsilon=eps, delta=0.0, sensitivity=sens, scale=scale,
        event={"type": "discrete_laplace", "noise_parameter": 1.0 / scale, "sensitivity": sens} if sens > 0 else None,
        details={**(details or {}), "norm": "l1"}, ledger=ledger, source=source, touched=touched,
        assumptions=tuple(str(a) for a in assumptions), add=source.add_discrete_laplace,
        dtype=np.int64, return_entry=return_entry,
    )


#: Alias of :func:`geometric_mechanism` (the geometric mechanism *is* the discrete Laplace one).
discrete_laplace_mechanism = geometric_mechanism


def geometric_variance(scale: float) -> float:
    """Variance of the discrete Laplace distribution with pmf ∝ ``exp(-|k|/scale)``: ``2q/(1-q)²``, ``q = exp(-1/scale)``."""
    q = math.exp(-1.0 / scale)
    return 2.0 * q / (1.0 - q) ** 2
