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
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.stats import norm

from ..accounting.validation import check_delta, check_epsilon, check_finite_array, check_sensitivity
from ._additive import release_with_additive_noise
from .noise import _check_touched, _require_ledger, resolve_noise_source

if TYPE_CHECKING:  # pragma: no cover
    from ..accounting import PrivacyLedger
    from .noise import NoiseSource

__all__ = ["gaussian_mechanism", "analytic_gaussian_sigma"]


def _log_delta_unit(sigma: float, epsilon: float) -> float:
    """log δ(ε) of the Gaussian mechanism with sensitivity 1 and noise ``sigma`` (Balle & Wang, Thm 8)."""
    a = 1.0 / (2.0 * sigma) - epsilon * sigma
    b = -1.0 / (2.0 * sigma) - epsilon * sigma
    x = norm.logcdf(a)
    y = epsilon + norm.logcdf(b)
    if y >= x:
        return -math.inf
    return float(x + math.log1p(-math.exp(y - x)))


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

    Notes
    -----
    The root is found by ``dp_accounting.get_sigma_gaussian`` (Google's
    implementation of Balle & Wang's exact condition, for Δ₂ = 1); the result is
    then checked against the condition here and nudged upwards if the root
    finder's tolerance left it a hair too small, and finally scaled by Δ₂.
    """
    eps = check_epsilon(epsilon, "epsilon")
    d = _check_positive_delta(delta)
    sens = check_sensitivity(sensitivity, "sensitivity")
    if sens == 0.0:
        return 0.0
    import dp_accounting

    sigma = float(dp_accounting.get_sigma_gaussian(eps, d, tol=1e-12)) * (1.0 + 1e-12)
    log_d = math.log(d)
    for _ in range(200):
        if _log_delta_unit(sigma, eps) <= log_d:
            break
        sigma *= 1.0 + 1e-12
    else:  # pragma: no cover - the root finder is never that far off
        raise RuntimeError(f"could not calibrate the Gaussian mechanism for epsilon={eps}, delta={d}.")
    return sigma * sens * (1.0 + 1e-15)


def gaussian_mechanism(
    value: Any,
    *,
    epsilon: float,
    delta: float,
    sensitivity: float,
    ledger: "PrivacyLedger",
    rng: "None | int | np.random.Generator | NoiseSource" = None,
    touched: str = "",
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

    sigma = analytic_gaussian_sigma(eps, d, sens)
    return release_with_additive_noise(
        arr, value, mechanism="gaussian", epsilon=eps, delta=d, sensitivity=sens, scale=sigma,
        event={"type": "gaussian", "noise_multiplier": sigma / sens} if sens > 0 else None,
        details={"norm": "l2", "calibration": "analytic Gaussian (Balle & Wang 2018)"},
        ledger=ledger, source=source, touched=touched, add=source.add_gaussian, dtype=float,
    )
