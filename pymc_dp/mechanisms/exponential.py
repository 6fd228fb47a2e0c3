"""The exponential mechanism over a finite set of candidates.

Theory ([FGWC16] eq. 4-5; McSherry & Talwar 2007): given a utility ``u(X, r)``
whose sensitivity is ``Δu = max_r max_{X~X'} |u(X, r) - u(X', r)|`` and a
data-independent base measure μ, outputting ``r`` with probability::

    P(r) ∝ μ(r) exp(ε u(X, r) / (2 Δu))

is ε-DP. If the utilities are *monotonic* (for every neighbouring pair, all
utilities move in the same direction, e.g. counts under add/remove), the factor 2
can be dropped: ``P(r) ∝ μ(r) exp(ε u(X, r) / Δu)`` is still ε-DP (McSherry &
Talwar 2007, Dwork & Roth 2014 Remark 3.1).

Sampling uses the Gumbel-max trick: ``argmax_r [u(r) + b log μ(r) + G_r]`` with
``G_r`` i.i.d. Gumbel(0, b), ``b = 2Δu/ε`` (or ``Δu/ε``), has exactly the
distribution above, and works in log space, so utilities of ±1e6 are no problem.
Posterior sampling (OPS, theory notes section 4) is the same mechanism over an
infinite candidate set; this module handles the finite case.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ..accounting.validation import check_epsilon, check_finite_array, check_sensitivity
from .noise import _check_touched, _require_ledger, _scale_for, resolve_noise_source

if TYPE_CHECKING:  # pragma: no cover
    from ..accounting import PrivacyLedger
    from .noise import NoiseSource

__all__ = ["exponential_mechanism", "exponential_mechanism_probabilities"]


def _check_utilities(utilities: Any, n: int | None = None) -> np.ndarray:
    u = check_finite_array(utilities, "utilities", allow_bool=False)
    if u.ndim != 1 or u.size == 0:
        raise ValueError(f"utilities must be a non-empty 1-D array (one utility per candidate), got shape {u.shape}.")
    if n is not None and u.size != n:
        raise ValueError(f"utilities has {u.size} entries but there are {n} candidates; give one utility per candidate.")
    return u


def _check_base_measure(base_measure: Any, n: int) -> np.ndarray | None:
    if base_measure is None:
        return None
    mu = check_finite_array(base_measure, "base_measure", allow_bool=False)
    if mu.shape != (n,):
        raise ValueError(f"base_measure must have one weight per candidate (shape ({n},)), got shape {mu.shape}.")
    if np.any(mu < 0):
        raise ValueError("base_measure must be non-negative (zero excludes a candidate).")
    if not np.any(mu > 0):
        raise ValueError("base_measure must have at least one positive weight (all zero excludes every candidate).")
    return mu


def _check_mech_sensitivity(sensitivity: Any) -> float:
    s = check_sensitivity(sensitivity, "sensitivity")
    if s == 0.0:
        raise ValueError(
            "sensitivity must be > 0 for the exponential mechanism: with Δu = 0 the utilities do not depend "
            "on the data, so choose the best candidate directly (no mechanism and no budget needed)."
        )
    return s


def _check_monotonic(monotonic: Any) -> bool:
    if not isinstance(monotonic, (bool, np.bool_)):
        raise ValueError(f"monotonic must be True or False, got {monotonic!r}.")
    return bool(monotonic)


def _gumbel_scale(epsilon: float, sensitivity: float, monotonic: bool) -> float:
    """b with P(r) ∝ exp(u(r)/b): 2Δu/ε (or Δu/ε when monotonic), rounded up."""
    return _scale_for((1.0 if monotonic else 2.0) * sensitivity, epsilon)


def exponential_mechanism_probabilities(
    utilities: Sequence[float] | np.ndarray,
    *,
    epsilon: float,
    sensitivity: float,
    base_measure: Sequence[float] | np.ndarray | None = None,
    monotonic: bool = False,
) -> np.ndarray:
    """The exact output probabilities of :func:`exponential_mechanism` (no noise, no ledger).

    Parameters
    ----------
    utilities
        One finite utility per candidate.
    epsilon
        ε > 0.
    sensitivity
        The utility sensitivity Δu > 0.
    base_measure
        Optional non-negative weights μ(r), one per candidate (zeros exclude a
        candidate; not all zero). ``None`` means uniform.
    monotonic
        If ``True``, use ``exp(ε u / Δu)`` instead of ``exp(ε u / (2Δu))``.

    Returns
    -------
    numpy.ndarray
        ``P(r) ∝ μ(r) exp(ε u(r) / (2Δu))``, computed in log space (log-sum-exp), so
        that it is accurate for utilities of any magnitude; sums to 1.
    """
    eps = check_epsilon(epsilon, "epsilon")
    sens = _check_mech_sensitivity(sensitivity)
    u = _check_utilities(utilities)
    mu = _check_base_measure(base_measure, u.size)
    mono = _check_monotonic(monotonic)
    factor = 1.0 / _gumbel_scale(eps, sens, mono)  # the mechanism's own scale; inf if it underflows to 0
    allowed = np.ones(u.size, dtype=bool) if mu is None else mu > 0
    # Utilities relative to the best allowed one (≤ 0 there; −inf if more than the double
    # range below, and for excluded candidates), so that factor · shift never meets
    # inf − inf or 0 · inf.
    with np.errstate(over="ignore", invalid="ignore"):  # np.where evaluates inf · 0 where it then discards it
        shift = np.where(allowed, u - np.max(u[allowed]), -np.inf)
        logw = np.where(shift == 0, 0.0, factor * shift)
    if mu is not None:
        logw = logw + np.log(np.where(allowed, mu, 1.0))
    logw = logw - np.max(logw)
    w = np.exp(logw)
    return w / w.sum()


def exponential_mechanism(
    candidates: Sequence[Any] | np.ndarray,
    utilities: Sequence[float] | np.ndarray,
    *,
    epsilon: float,
    sensitivity: float,
    ledger: "PrivacyLedger",
    base_measure: Sequence[float] | np.ndarray | None = None,
    rng: "None | int | np.random.Generator | NoiseSource" = None,
    monotonic: bool = False,
    touched: str = "",
    return_entry: bool = False,
) -> Any:
    """Choose one of ``candidates`` with probability ∝ μ(r) exp(ε u(r) / (2Δu)) (ε-DP).

    Parameters
    ----------
    candidates
        The finite, data-independent set of outputs (any sequence; for a 2-D array
        each row is a candidate).
    utilities
        ``u(X, r)`` for each candidate, finite, in the same order. Higher is better.
    epsilon
        ε > 0.
    sensitivity
        The utility sensitivity ``Δu = max_r max_{X~X'} |u(X, r) - u(X', r)|`` under
        the ledger's neighbouring relation; must be > 0.
    ledger
        The :class:`~pymc_dp.accounting.PrivacyLedger` to charge. Required.
    base_measure
        Optional data-independent weights μ(r) ≥ 0, one per candidate. Zero weights
        exclude a candidate (it is never returned); not all may be zero. ``None`` is
        uniform.
    rng
        ``None`` (default) for OpenDP's exact Gumbel noisy-max, an ``int`` seed or
        :class:`numpy.random.Generator` for reproducible seeded noise (the same ``int`` gives the same
        draw on every call; reuse one ``Generator`` for independent draws), or a
        :class:`~pymc_dp.mechanisms.NoiseSource`.
    monotonic
        Set to ``True`` only if, for every pair of neighbouring data sets, the
        utilities of all candidates change in the same direction (all up or all
        down), as for counts under add/remove. The mechanism then uses
        ``exp(ε u / Δu)``, twice as sharp, and is still ε-DP. Default ``False``.
    touched
        What the release touched; stored in the ledger entry.

    return_entry
        Also return the :class:`~pymc_dp.accounting.LedgerEntry` this release
        recorded, as ``(value, entry)``.
    Returns
    -------
    object
        The chosen element of ``candidates``.

    Raises
    ------
    ValueError
        For an invalid argument (the message names it), including ``ledger=None``
        and a sensitivity of 0.
    pymc_dp.accounting.BudgetExceededError
        If the ledger's budget cannot afford ε; nothing is drawn or recorded then.

    Notes
    -----
    Sampling is Gumbel-max: index ``argmax_r [u(r) + b log μ(r) + G_r]`` with
    ``G_r ~ Gumbel(0, b)``, ``b = 2Δu/ε`` (``Δu/ε`` if monotonic), over the candidates
    with μ(r) > 0. The secure source uses OpenDP's exact Gumbel report-noisy-max;
    without a base measure the utilities are passed to it unchanged, with one the
    public, data-independent shift ``b log μ(r)`` is added in double precision first.
    The exact probabilities are :func:`exponential_mechanism_probabilities`.

    The ledger entry has ``mechanism="exponential"``, ``delta=0``, ``event=None`` (a
    generic pure ε-DP event) and
    ``details={"sensitivity": Δu, "scale": b, "monotonic": ..., "num_candidates": n}``.
    """
    eps = check_epsilon(epsilon, "epsilon")
    sens = _check_mech_sensitivity(sensitivity)
    if isinstance(candidates, (str, bytes)):
        raise ValueError("candidates must be a sequence of candidates, not a single string.")
    try:
        cand = list(candidates)
    except TypeError:
        raise ValueError(f"candidates must be a sequence, got {type(candidates).__name__}.") from None
    if not cand:
        raise ValueError("candidates must not be empty.")
    u = _check_utilities(utilities, len(cand))
    mu = _check_base_measure(base_measure, len(cand))
    mono = _check_monotonic(monotonic)
    touched = _check_touched(touched)
    ledger = _require_ledger(ledger)
    source = resolve_noise_source(rng)

    scale = _gumbel_scale(eps, sens, mono)
    if mu is None:
        allowed = np.arange(len(cand))
        scores = u
    else:
        allowed = np.flatnonzero(mu > 0)
        with np.errstate(over="ignore"):
            scores = u[allowed] + scale * np.log(mu[allowed])
        if not np.all(np.isfinite(scores)):
            raise ValueError(
                "utilities + scale × log(base_measure) overflow double precision (utilities reach "
                f"{np.max(np.abs(u)):g}, scale {scale:g}); rescale the utilities or the base measure."
            )
    details = {"sensitivity": sens, "scale": scale, "monotonic": mono, "num_candidates": len(cand)}
    with ledger.charge(
        mechanism="exponential",
        epsilon=eps,
        delta=0.0,
        count=1,
        touched=touched,
        noise_source=source.name,
        assumptions=(),
        parallel_group=None,
        event=None,
        details=details,
    ) as entry:
        i = source.gumbel_argmax(scores, scale)
    chosen = cand[int(allowed[i])]
    return (chosen, entry) if return_entry else chosen
