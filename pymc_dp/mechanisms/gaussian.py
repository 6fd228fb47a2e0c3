"""The Gaussian mechanism, calibrated with the analytic Gaussian of Balle & Wang (2018).

Theory (theory notes, section 2): with L2 sensitivity
``Δ₂ = max_{X~X'} ||h(X) - h(X')||_2``, releasing ``h(X) + N(0, σ² I)`` is
(ε, δ)-DP if and only if (Balle & Wang, ICML 2018, Thm 8)::

    Φ(Δ₂/(2σ) - εσ/Δ₂) - e^ε Φ(-Δ₂/(2σ) - εσ/Δ₂) ≤ δ.

:func:`analytic_gaussian_sigma` returns the smallest such σ (up to a relative
1e-12 safety margin). It is valid for every ε > 0, unlike the classical bound
``σ = Δ₂ sqrt(2 ln(1.25/δ)) / ε`` of Dwork & Roth (2014, Thm A.1), which needs
ε < 1 and is always larger.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np
from scipy import special
from scipy.stats import norm

from ..accounting.event_types import GaussianEvent
from ..accounting.validation import check_delta, check_epsilon, check_finite_array, check_sensitivity
from ._additive import release_with_additive_noise
from .noise import _check_touched, _require_ledger, resolve_noise_source

if TYPE_CHECKING:  # pragma: no cover
    from ..accounting import PrivacyLedger
    from .noise import NoiseSource

__all__ = ["gaussian_mechanism", "analytic_gaussian_sigma"]


#: Above this ε, σ is calibrated at this ε instead (the root finder is unreliable beyond):
#: a mechanism that is (ε′, δ)-DP is (ε, δ)-DP for every ε ≥ ε′.
MAX_CALIBRATION_EPSILON = 1e4


def _log_delta_unit(sigma: float, epsilon: float) -> float:
    """An upper bound on log δ(ε) of the Gaussian mechanism with sensitivity 1 and noise ``sigma``.

    δ(ε) = Φ(a) − e^ε Φ(b) (Balle & Wang, Thm 8) = e^x (1 − e^{−(x − y)}) with x = log Φ(a),
    y = ε + log Φ(b). Both logs carry a rounding error of a few units in the last place of
    the larger of them (and of a, b); the bound allows for it. Where that error is as
    large as x − y itself (a tiny ε with a tiny δ: Φ(a) and e^ε Φ(b) agree to double
    precision) the bound is about ``2 err Φ(a)``: valid, but too large to certify a tiny δ.
    """
    a = 1.0 / (2.0 * sigma) - epsilon * sigma
    b = -1.0 / (2.0 * sigma) - epsilon * sigma
    x = float(norm.logcdf(a))
    y = epsilon + float(norm.logcdf(b))
    # |error of x − y|: a and b are each within ~1.5 ulp of (1/(2σ) + εσ), which log Φ turns into
    # at most (|a| + 1)× as much; log Φ itself and the sum with ε add a few ulp of |x| and |y|.
    terms = 1.0 / (2.0 * sigma) + epsilon * sigma
    err = np.finfo(float).eps * (4.0 * (max(abs(a), abs(b)) + 1.0) * terms + 5.0 * (abs(x) + abs(y)) + 4.0)
    gap = max(x - y, 0.0)
    return x + err + math.log(-math.expm1(-(gap + err)))


def _epsilon_free_sigma(delta: float) -> float:
    """The smallest σ (up to a 1e-12 margin) with δ(0) = erf(1/(2√2 σ)) ≤ δ: (0, δ)-DP, hence (ε, δ)-DP for every ε.

    ``erf`` near 0 is accurate to a few ulp relative, so this needs no cancellation.
    """
    # aimed at δ(1 − 1e-12), so that the check against δ passes whatever the last-place errors
    sigma = 1.0 / (2.0 * math.sqrt(2.0) * float(special.erfinv(delta * (1.0 - 1e-12))))
    while math.erf(1.0 / (2.0 * math.sqrt(2.0) * sigma)) > delta:
        sigma *= 1.0 + 1e-12
    return sigma


def _check_positive_delta(delta: Any) -> float:
    d = check_delta(delta, "delta")
    if d == 0.0:
        raise ValueError(
            "delta must be > 0 for the Gaussian mechanism (no finite σ gives pure ε-DP); "
            "pass e.g. delta=1e-6, or use laplace_mechanism for δ = 0."
        )
    return d


def analytic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    """The smallest noise standard deviation σ making the Gaussian mechanism (ε, δ)-DP.

    Parameters
    ----------
    epsilon
        ε > 0 (any size; the classical calibration needs ε < 1, this one does not).
    delta
        δ in (0, 1).
    sensitivity
        The L2 sensitivity Δ₂ ≥ 0.

    Returns
    -------
    float
        σ such that Φ(Δ₂/(2σ) - εσ/Δ₂) - e^ε Φ(-Δ₂/(2σ) - εσ/Δ₂) ≤ δ (Balle & Wang
        2018, Thm 8), within a relative 1e-12 of the σ where equality holds.
        ``0.0`` for a sensitivity of 0.

    Raises
    ------
    ValueError
        For an invalid argument, or a σ outside the range of normal doubles (a
        sensitivity so large or so small that σ overflows or underflows).

    Notes
    -----
    The root is found by ``dp_accounting.get_sigma_gaussian`` (Google's
    implementation of Balle & Wang's exact condition, for Δ₂ = 1); the result is
    then checked against the condition here, with the rounding error of that check
    allowed for, nudged upwards if the root finder's tolerance left it a hair too
    small, and finally scaled by Δ₂. Two ends of the range are handled conservatively
    (σ is then larger than the smallest valid one, never smaller):

    * for ε above :data:`MAX_CALIBRATION_EPSILON` (10⁴) σ is calibrated at 10⁴;
    * where ε and δ are both so small that the condition cannot be evaluated in double
      precision (roughly δ < 10⁻¹⁵ with ε σ² ≲ 1), σ is at most the ε-free calibration
      ``erf(Δ₂/(2√2 σ)) ≤ δ``, which is (0, δ)-DP and so (ε, δ)-DP.
    """
    eps = check_epsilon(epsilon, "epsilon")
    d = _check_positive_delta(delta)
    sens = check_sensitivity(sensitivity, "sensitivity")
    if sens == 0.0:
        return 0.0
    import dp_accounting

    eps_cal = min(eps, MAX_CALIBRATION_EPSILON)
    log_d = math.log(d)

    def certified(s: float) -> bool:
        return _log_delta_unit(s, eps_cal) <= log_d

    with np.errstate(all="ignore"):  # its own cancellations at tiny ε, δ: the result is checked below
        sigma = float(dp_accounting.get_sigma_gaussian(eps_cal, d, tol=1e-12)) * (1.0 + 1e-12)
    if not (math.isfinite(sigma) and sigma > 0):
        sigma = np.finfo(float).tiny
    for _ in range(200):
        if certified(sigma):
            break
        sigma *= 1.0 + 1e-12
    else:
        # The root finder is far off, or the condition cannot be certified near the root in
        # double precision: bisect (in log σ) between that σ and the ε-free σ, valid whatever ε.
        low, high = sigma, max(sigma, _epsilon_free_sigma(d))
        while high > low * (1.0 + 1e-12):
            mid = math.sqrt(low) * math.sqrt(high)
            if not low < mid < high:
                break
            low, high = (low, mid) if certified(mid) else (mid, high)
        sigma = high
    out = sigma * sens * (1.0 + 1e-15)
    if not np.finfo(float).tiny <= out < math.inf:
        raise ValueError(
            f"the Gaussian noise σ = {sigma:g} × sensitivity {sens:g} is outside the range of normal doubles; "
            "rescale the statistic so that its sensitivity is nearer 1."
        )
    return out


def gaussian_mechanism(
    value: Any,
    *,
    epsilon: float,
    delta: float,
    sensitivity: float,
    ledger: "PrivacyLedger",
    rng: "None | int | np.random.Generator | NoiseSource" = None,
    touched: str = "",
    return_entry: bool = False,
    assumptions: Sequence[str] = (),
    details: Mapping[str, Any] | None = None,
) -> Any:
    """Release ``value`` with Gaussian noise calibrated to (ε, δ) by the analytic Gaussian.

    Parameters
    ----------
    value
        A real number or array (any shape) with no NaN or infinite entry.
    epsilon
        ε > 0.
    delta
        δ in (0, 1); must be > 0 (the Gaussian mechanism is never pure ε-DP).
    sensitivity
        The L2 sensitivity Δ₂ of ``value`` under the ledger's neighbouring relation.
        ``0`` means the value does not depend on the data: see Notes.
    ledger
        The :class:`~pymc_dp.accounting.PrivacyLedger` to charge. Required.
    rng
        ``None`` (default) for OpenDP's exact sampler, an ``int`` seed or
        :class:`numpy.random.Generator` for reproducible seeded noise (the same ``int`` gives the same
        draw on every call; reuse one ``Generator`` for independent draws), or a
        :class:`~pymc_dp.mechanisms.NoiseSource`.
    touched
        What the release touched, e.g. ``"y:mean"``; stored in the ledger entry.

    return_entry
        Also return the :class:`~pymc_dp.accounting.LedgerEntry` this release
        recorded, as ``(value, entry)`` (the entry is the ledger's record of this
        spend, whatever else spends from the ledger concurrently).
    assumptions
        Assumptions recorded with the entry (e.g. ``("N is public",)``).
    details
        Further public details for the entry (e.g. how the statistics were weighted).

    Returns
    -------
    float or numpy.ndarray
        ``value + N(0, σ²)`` noise, with the shape of ``value``;
        σ = :func:`analytic_gaussian_sigma` (ε, δ, Δ₂).

    Raises
    ------
    ValueError
        For an invalid argument (the message names it), including ``ledger=None``
        and ``delta=0``.
    pymc_dp.accounting.BudgetExceededError
        If the ledger's budget cannot afford (ε, δ); nothing is drawn or recorded then.

    Notes
    -----
    The ledger entry has ``mechanism="gaussian"``, the requested (ε, δ),
    ``event={"type": "gaussian", "noise_multiplier": σ / Δ₂}`` (which lets the tight
    accountants compose many Gaussian releases far better than (ε, δ) sums) and
    ``details={"sensitivity": Δ₂, "scale": σ, "norm": "l2", ...}``.

    A sensitivity of 0 adds no noise and draws nothing; the entry is still
    recorded with the requested (ε, δ), ``event=None`` and ``noise_source="none"``
    (a conservative over-charge).
    """
    eps = check_epsilon(epsilon, "epsilon")
    d = _check_positive_delta(delta)
    sens = check_sensitivity(sensitivity, "sensitivity")
    arr = check_finite_array(value, "value")
    touched = _check_touched(touched)
    ledger = _require_ledger(ledger)
    source = resolve_noise_source(rng)

    if isinstance(assumptions, str):
        raise ValueError("assumptions must be a sequence of strings, e.g. ('N is public',), not a string.")

    sigma = analytic_gaussian_sigma(eps, d, sens)
    return release_with_additive_noise(
        arr, value, mechanism="gaussian", epsilon=eps, delta=d, sensitivity=sens, scale=sigma,
        event=GaussianEvent(noise_multiplier=sigma / sens) if sens > 0 else None,
        details={**(details or {}), "norm": "l2", "calibration": "analytic Gaussian (Balle & Wang 2018)"},
        ledger=ledger, source=source, touched=touched, assumptions=tuple(str(a) for a in assumptions),
        add=source.add_gaussian, dtype=float, return_entry=return_entry,
    )
