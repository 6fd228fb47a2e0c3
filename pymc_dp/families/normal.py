"""Normal records: x ∈ ℝ, mean μ, with σ known (a family argument) or unknown.

``log p(X | μ, σ) = −(Σx² − 2μ Σx + N μ²) / (2σ²) − N log σ + const``, so the records
enter only through ``S = (Σx, Σx²)`` and N. The support is unbounded: the curator
declares ``bounds={"x": (lo, hi)}``; records outside are clipped to the box (and
counted in a :class:`~pymc_dp.families.ClippedRecordsWarning`); a NaN or ±inf record is
replaced by the midpoint of the bounds (:meth:`~pymc_dp.families.Family.repair`;
counted for the curator, never refused).

Statistics and their L1 sensitivities, for x, x′ ∈ [lo, hi] and ``M = max(|lo|, |hi|)``:

* **σ known**, ``"replace"``: only ``Σx`` matters for μ. Replacing x by x′ moves it
  by ``|x − x′| ≤ hi − lo`` (attained at x = lo, x′ = hi): **Δ = hi − lo**.
* **σ known**, ``"add_remove"``: ``(Σx, N)``; adding/removing x moves them by
  ``|x| + 1``: **Δ = M + 1**.
* **σ unknown**, ``"replace"``: ``(Σx, Σx²)``; replacing x by x′ moves them by
  ``f(x, x′) = |x − x′| + |x² − x′²| = |x − x′| (1 + |x + x′|)``. The exact maximum
  over the box is used (see :func:`moment_pair_sensitivity`): with ``L = hi − lo``
  and ``g_h(u) = u (1 + |2h − u|)``, **Δ = max over h ∈ {hi, −lo} and
  u ∈ {L, clip(2h, 0, L), clip(h + ½, 0, L)} of g_h(u)**. It never exceeds the sum
  of the two coordinate ranges ``(hi − lo) + (max(lo², hi²) − m₂)`` with
  ``m₂ = 0 if lo ≤ 0 ≤ hi else min(lo², hi²)``, and equals it unless lo < 0 < hi
  (then x = the endpoint nearer 0 and x′ = the farther one maximise both coordinates
  at once); when lo < 0 < hi the two ranges cannot be attained by the same pair
  (on [−1, 1]: 2.25, attained at x = −1, x′ = ½, instead of 2 + 1 = 3).
* **σ unknown**, ``"add_remove"``: ``(Σx, Σx², N)``; ``|x| + x² + 1`` is largest at
  |x| = M: **Δ = M + M² + 1**.

Projection: N̂ = max(N, 1) when N is private; ``Σx`` into ``[N̂·lo, N̂·hi]``; ``Σx²``
into ``[(Σx)²/N̂, (lo + hi)·Σx − N̂·lo·hi]`` — exactly the second moments of data
in the box with that first moment (Jensen below; ``(x − lo)(hi − x) ≥ 0`` above), so
the implied variance is ≥ 0 and consistent with the box. (This interval lies inside
``[max((Σx)²/N̂, N̂·min x²), N̂·max x²]``.)

This module also holds small helpers shared by the continuous families
(:mod:`.exponential`, :mod:`.gamma`, :mod:`.linear_regression`).
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

from ._params import clip_interval, constant_value, positive_float, relation, require_op, scalar_param
from ._noise_aware import as_float64
from .base import Family, check_bound_pair, checked_range, declared_bounds, dist_params, statistic_length
from .release_design import ReleaseDesign, centred_add_remove_design, optimal_weights

__all__ = ["Normal", "moment_pair_sensitivity", "centred_moment_design"]


# --------------------------------------------------------------------------- sensitivity


def moment_pair_sensitivity(lo: float, hi: float, first: float = 1.0, second: float = 1.0) -> float:
    """Exact ``max first·|x − x′| + second·|x² − x′²|`` over x, x′ ∈ [lo, hi].

    With u = |x − x′| and v = x + x′ the objective is ``u (first + second·|v|)``; for a
    given u, |v| is largest at an end of the box: v = 2·hi − u (x = hi) or v = 2·lo + u
    (x′ = lo), i.e. ``g_h(u) = u (first + second·|2h − u|)`` with h = hi or h = −lo. On
    u ∈ [0, 2h] g_h is the concave ``u (first + second·(2h − u))`` (stationary at
    h + first/(2·second)); beyond 2h it is increasing. So its maximum over [0, L] lies in
    {L, clip(2h, 0, L), clip(h + first/(2·second), 0, L)}. The weights (both ≥ 0) are
    those of a weighted release (:mod:`.release_design`); 1 and 1 give the plain L1
    sensitivity of (Σx, Σx²).
    """
    span = hi - lo
    best = 0.0
    for h in (hi, -lo):
        candidates = [span, min(max(2.0 * h, 0.0), span)]
        if second > 0:
            candidates.append(min(max(h + first / (2.0 * second), 0.0), span))
        for u in candidates:
            best = max(best, u * (first + second * abs(2.0 * h - u)))
    return best


def centred_moment_design(lo: float, hi: float) -> ReleaseDesign:
    """The release of (Σ(x − c), Σ(x − c)²), c = (lo + hi)/2, with ε divided between them.

    Centred on the box's midpoint the two coordinates range over 2h and h² (h the
    half-width) instead of hi − lo and max(lo², hi²) − m₂; their weights minimise the
    summed noise-to-sampling variance ratio under a uniform reference on the box (record
    variances h²/3 and 4h⁴/45; :func:`~pymc_dp.families.release_design.optimal_weights`),
    and Δ_w is the exact weighted sensitivity (:func:`moment_pair_sensitivity` on [−h, h]).
    """
    centre, half = lo / 2 + hi / 2, hi / 2 - lo / 2
    # the records are centred in floating point: their range is [lo − c, hi − c] as rounded, which for a box a few
    # ulps wide is not symmetric; the sensitivity is computed on that box, the weights on the symmetric one
    low, high = lo - centre, hi - centre
    if not (half > 0.0 and math.isfinite(half * half)):
        raise ValueError(
            f"bounds['x'] = ({lo:g}, {hi:g}) are too wide for a release in double precision (the centred squares "
            "reach beyond 1e308); declare narrower bounds or rescale the data (e.g. to other units)."
        )
    transform = np.array([[1.0, 0.0], [-2.0 * centre, 1.0]])  # (x − c, (x − c)²) = A (x, x²) + a
    offset = np.array([-centre, centre * centre])
    # the weights are scale-free: found on the unit box [−1, 1] (record variances 1/3 and 4/45), then divided by h
    # and h² (so that they weigh (x − c)/h and ((x − c)/h)²), without forming h⁴
    unit, _ = optimal_weights(lambda w: moment_pair_sensitivity(-1.0, 1.0, float(w[0]), float(w[1])),
                              np.array([1.0 / 3.0, 4.0 / 45.0]))
    weights = np.array([unit[0], unit[1] / half]) / max(unit[0], unit[1] / half)
    # rounded up by a relative 1e-12: the centred records' squares are computed in floating point
    delta = moment_pair_sensitivity(low, high, float(weights[0]), float(weights[1])) * (1.0 + 1e-12)
    ranges = np.array([high - low, max(low * low, high * high)])
    shares = weights * ranges / delta
    description = (
        f"records centred on the bounds' midpoint c = {float(centre)!r} (Σ(x − c), Σ(x − c)²: own sensitivities "
        f"{ranges[0]:.6g} and {ranges[1]:.6g}); weights {float(weights[0])!r} and {float(weights[1])!r}, weighted sensitivity "
        f"{delta:.6g}: shares {shares[0]:.3f} and {shares[1]:.3f} of ε (their sum exceeds 1 where no pair of "
        "records moves both coordinates fully)"
    )
    return ReleaseDesign(transform, offset, weights, delta, description, shift=centre)


# --------------------------------------------------------------------------- the family


class Normal(Family):
    """Normal likelihood with σ known (``sigma=σ``) or unknown (``sigma=None``).

    Conjugate priors (:meth:`conjugate_posterior`): Normal(mu0, tau0) on μ when σ is
    known; Normal-Inverse-Gamma when it is not.

    Parameters
    ----------
    sigma
        The known standard deviation (a positive float), or None when σ is a model
        parameter.
    """

    name = "normal"
    pymc_ops = ("normal",)
    bound_keys = ("x",)
    bounds_example = "{'x': (-10.0, 10.0)}"

    def __init__(self, sigma: float | None = None, **family_args: Any) -> None:
        if family_args:
            raise ValueError(f"family 'normal' takes only sigma=..., got {sorted(family_args)}.")
        self.sigma: float | None = None if sigma is None else positive_float(sigma, "sigma", self.name)

    def family_args(self) -> dict[str, Any]:
        return {"sigma": self.sigma}

    @property
    def known_sigma(self) -> bool:
        """Whether σ is a fixed family argument."""
        return self.sigma is not None

    # ------------------------------------------------------------------ data side
    def check_bounds(self, bounds: Mapping[str, Any] | None) -> dict[str, Any]:
        """``{"x": (lo, hi)}`` with lo < hi finite; a missing or bad bound is a ValueError naming it."""
        checked = super().check_bounds(bounds)
        check_bound_pair(checked, "x")
        return checked

    def clip(self, x: Any, bounds: Mapping[str, Any]) -> tuple[Any, Any]:
        lo, hi = check_bound_pair(bounds, "x")
        return clip_interval(x, lo, hi)

    def default_record(self, bounds: Mapping[str, Any]) -> float:
        """The midpoint of ``bounds["x"]``: what a NaN or infinite record is replaced by."""
        lo, hi = check_bound_pair(bounds, "x")
        return lo / 2 + hi / 2  # halves first: no overflow near the double range

    def statistic_names(self, neighbouring: str) -> tuple[str, ...]:
        names = ("sum",) if self.known_sigma else ("sum", "sum_sq")
        return names + (("n",) if relation(neighbouring) == "add_remove" else ())

    def record_statistics(self, x: Any, neighbouring: str) -> Any:
        cols = [x] if self.known_sigma else [x, x * x]
        if relation(neighbouring) == "add_remove":
            cols.append(np.ones_like(x))
        return np.stack(cols, axis=1)

    def sensitivity(self, bounds: Mapping[str, Any], neighbouring: str) -> float:
        """L1 sensitivity from ``bounds["x"]`` (derivation in the module docstring).

        ==========  ===========================  ==============================
        σ           replace                      add_remove
        ==========  ===========================  ==============================
        known       hi − lo                      M + 1
        unknown     max ``|x−x′| + |x²−x′²|``    M + M² + 1
        ==========  ===========================  ==============================

        with ``M = max(|lo|, |hi|)``.
        """
        lo, hi = check_bound_pair(bounds, "x")
        big = max(abs(lo), abs(hi))
        declared = declared_bounds("x", lo, hi)
        if relation(neighbouring) == "replace":
            span = self.finite_sensitivity(hi - lo, f"hi − lo = {hi:g} − ({lo:g}) = {hi - lo:g}", declared)
            if self.known_sigma:
                return span
            return self.finite_sensitivity(
                moment_pair_sensitivity(lo, hi), f"max |x − x′| + |x² − x′²| over the box (x² reaches {big:g}² = {big * big:g})", declared
            )
        if self.known_sigma:
            return self.finite_sensitivity(big + 1.0, f"M + 1 with M = {big:g}", declared)
        return self.finite_sensitivity(big + big * big + 1.0, f"M + M² + 1 with M = {big:g} (M² = {big * big:g})", declared)

    def release_design(self, bounds: Mapping[str, Any], neighbouring: str) -> ReleaseDesign:
        """Centred on the bounds' midpoint c, with ε divided between the statistics where there are several.

        * σ unknown, replace-one: (Σ(x − c), Σ(x − c)²) (:func:`centred_moment_design`);
        * add/remove-one: (Σ(x − c)[, Σ(x − c)²], N) (:func:`centred_add_remove_design`);
        * σ known, replace-one: Σx as it is (centring does not change its sensitivity hi − lo).
        """
        lo, hi = check_bound_pair(bounds, "x")
        if relation(neighbouring) == "add_remove":
            self.sensitivity(bounds, neighbouring)  # the same refusal of bounds too wide for float64
            return centred_add_remove_design(lo, hi, squares=not self.known_sigma)
        if self.known_sigma:
            return super().release_design(bounds, neighbouring)
        self.sensitivity(bounds, neighbouring)  # the same refusal of bounds too wide for float64
        return centred_moment_design(lo, hi)

    def project(self, noisy: np.ndarray, n: int | None, bounds: Mapping[str, Any], neighbouring: str) -> np.ndarray:
        """Onto valid statistics of N̂ records in the box (see the module docstring).

        N̂ = ``n`` under replace, max(released N, 1) under add/remove. Σx is clipped
        to [N̂·lo, N̂·hi], then Σx² to [(Σx)²/N̂, (lo + hi)Σx − N̂·lo·hi]. The identity
        on valid statistics (up to rounding).
        """
        lo, hi = check_bound_pair(bounds, "x")
        out = np.array(noisy, dtype=float, copy=True).ravel()
        if relation(neighbouring) == "add_remove":
            out[-1] = max(out[-1], 1.0)
            count = out[-1]
        else:
            count = float(n)  # type: ignore[arg-type]
        out[0] = min(max(out[0], count * lo), count * hi)
        if not self.known_sigma:
            lower = out[0] * out[0] / count
            upper = max((lo + hi) * out[0] - count * lo * hi, lower)
            out[1] = min(max(out[1], lower), upper)
        return out

    def plug_in_degeneracy(self, values: np.ndarray, n: float) -> str | None:
        """Σx² at its floor (Σx)²/N: the released spread is zero, and σ's plug-in posterior collapses."""
        if self.known_sigma:
            return None
        mean_square, square_mean = values[1] / n, (values[0] / n) ** 2
        if mean_square - square_mean > 1e-9 * max(abs(mean_square), np.finfo(float).tiny):
            return None
        return "the released Σx² leaves no spread around the released mean (the noise pushed it to its floor (Σx)²/N)"

    def n_from_statistics(self, values: np.ndarray, neighbouring: str) -> float:
        """N̂ = the released count (its last coordinate) under add/remove."""
        if relation(neighbouring) != "add_remove":
            return super().n_from_statistics(values, neighbouring)
        return float(values[-1])

    # ------------------------------------------------------------------ model side
    def moments(self, values: Any, n: Any) -> tuple[Any, Any, Any]:
        """(Σx, Σx² or None when σ is known, N) from the statistics."""
        k = statistic_length(values)
        base = 1 if self.known_sigma else 2
        if k not in (base, base + 1):
            raise ValueError(f"{self!r} expects {base} or {base + 1} statistics, got {k}.")
        count = values[base] if k == base + 1 else n
        return values[0], (None if self.known_sigma else values[1]), count

    def loglik(self, values: Any, n: Any, params: Mapping[str, Any]) -> Any:
        """Log-likelihood of μ (and σ) given the statistics.

        Known σ: ``(μ Σx − N μ²/2) / σ²`` (Σx²/(2σ²) and N log σ do not depend on μ).
        Unknown σ: ``−(Σx² − 2μ Σx + N μ²) / (2σ²) − N log σ``.
        ``params``: ``{"mu": μ}`` (plus ``"sigma"`` when σ is unknown; ignored when known).
        """
        import pytensor.tensor as pt

        s1, s2, count = self.moments(values, n)
        mu = params["mu"]
        if self.known_sigma:
            return pt.as_tensor_variable((mu * s1 - 0.5 * count * mu * mu) / (self.sigma * self.sigma))
        sigma = params["sigma"]
        quad = s2 - 2.0 * mu * s1 + count * mu * mu
        return pt.as_tensor_variable(-quad / (2.0 * sigma * sigma) - count * pt.log(sigma))

    supports_noise_aware = True
    releases_count = True

    def record_moments(self, params: Mapping[str, Any], bounds: Mapping[str, Any] | None = None) -> tuple[Any, Any]:
        """Moments of one record's statistic, the record x ~ Normal(μ, σ²).

        σ known (``params = {"mu": μ}``): x has mean μ and variance σ². σ unknown
        (``{"mu": μ, "sigma": σ}``): (x, x²) has mean (μ, μ² + σ²) and covariance
        ``[[σ², 2μσ²], [2μσ², 2σ⁴ + 4μ²σ²]]`` (Isserlis' theorem, through
        :func:`~pymc_dp.families._noise_aware.gaussian_product_moments` on z = (1, x)).

        These are the moments of the *unclipped* Normal (Σx is then exactly normal, Σx²
        approximately so by the CLT): accurate for the noise-aware likelihood when few
        records fall outside ``bounds["x"]``; heavy clipping is not modelled.
        """
        import pytensor.tensor as pt

        mu = as_float64(params["mu"])
        if self.known_sigma:
            return mu, float(self.sigma) * float(self.sigma)  # type: ignore[arg-type]
        var = as_float64(params["sigma"]) ** 2
        # Written out rather than through gaussian_product_moments' fancy indexing: the same
        # numbers (tests/test_noise_aware_continuous.py checks them against it) in a graph a
        # third smaller, which PyTensor compiles (with its gradient) in a fraction of the time.
        cross = 2.0 * mu * var
        mean = pt.stack([mu, mu * mu + var])
        cov = pt.stack([pt.stack([var, cross]), pt.stack([cross, 2.0 * var * var + 4.0 * mu * mu * var])])
        return mean, cov

    def shifted_record_moments(self, params: Mapping[str, Any], bounds: Mapping[str, Any] | None, shift: Any) -> Any:
        """The moments of (x − c[, (x − c)²]): those of a record with mean μ − c (σ unchanged)."""
        return self.record_moments({**params, "mu": as_float64(params["mu"]) - shift}, bounds)

    truncation_examples = {"mu": "(-10.0, 10.0)"}

    def loglik_sensitivity(self, ranges: Mapping[str, Any], bounds: Mapping[str, Any]) -> tuple[float, str]:
        """Δ = (hi − lo)(m_hi − m_lo) / (2σ²): records in [lo, hi], σ known, μ ∈ [m_lo, m_hi].

        ``d = ((x − μ)² − (x′ − μ)²) / (2σ²) = (x² − x′²)/(2σ²) + μ (x′ − x)/σ²``: linear
        in μ, so its range over μ is ``|x′ − x| (m_hi − m_lo)/σ²``, largest at
        ``|x′ − x| = hi − lo``. With σ unknown the family gives no bound (clip instead).
        """
        if self.sigma is None:
            raise ValueError(
                "the normal likelihood's sigma is a model parameter; the sensitivity is derived for a known "
                "(constant) sigma only. Fix sigma, or clip the per-record log-likelihood (pmdp.clip_loglik)."
            )
        m_lo, m_hi = checked_range(ranges, "mu", self)
        lo, hi = check_bound_pair(self.check_bounds(bounds), "x")
        how = f"({hi:g} − {lo:g}) × ({m_hi:g} − {m_lo:g}) / (2 × {self.sigma:g}²)"
        # divided by σ twice rather than by σ², which over- or underflows on its own for extreme σ
        delta = ((hi - lo) / self.sigma) * ((m_hi - m_lo) / self.sigma) / 2.0
        declared = f"{declared_bounds('x', lo, hi)} and the range [{m_lo:g}, {m_hi:g}] of 'mu'"
        return self.finite_loglik_sensitivity(delta, how, declared), how

    @classmethod
    def from_dist(cls, dist: Any) -> tuple["Normal", dict[str, Any]]:
        """``pm.Normal.dist(mu, sigma)`` → ``(Normal(sigma=σ), {"mu", "sigma"})`` if σ is a constant,
        ``(Normal(sigma=None), {"mu", "sigma"})`` otherwise.

        Raises
        ------
        ValueError
            For another distribution, or a per-record ``mu`` or ``sigma`` (for a
            regression mean ``mu = X @ beta`` the message points to the
            ``linear_regression`` family).
        """
        require_op(cls, dist, "Normal")
        mu, sigma = dist_params(dist)
        hint = (
            " For a regression mean such as mu = X @ beta use the 'linear_regression' family through "
            "pmdp.observe_stats (statistics XᵀX, Xᵀy, yᵀy; parameters {'beta': beta, 'sigma': sigma})."
        )
        mu = scalar_param(mu, "mu", cls.name, hint)
        sigma = scalar_param(sigma, "sigma", cls.name)
        value = constant_value(sigma)
        return (cls() if value is None else cls(sigma=value)), {"mu": mu, "sigma": sigma}

    def conjugate_posterior(
        self,
        values: np.ndarray,
        n: float,
        *,
        mu0: float = 0.0,
        tau0: float = 1.0,
        kappa0: float = 1.0,
        alpha0: float = 1.0,
        beta0: float = 1.0,
    ) -> dict[str, float]:
        """Conjugate update from the statistics.

        Known σ: prior μ ~ Normal(mu0, tau0²) (``tau0`` a standard deviation) ⇒
        μ ~ Normal(``mu``, ``sigma``²) with precision ``1/tau0² + N/σ²`` and mean
        ``(mu0/tau0² + Σx/σ²) / precision``. Returns ``{"mu", "sigma"}``.

        Unknown σ: Normal-Inverse-Gamma prior ``σ² ~ InvGamma(alpha0, beta0)`` (shape,
        scale), ``μ | σ² ~ Normal(mu0, σ²/kappa0)`` ⇒ the same form with
        ``kappa = kappa0 + N``, ``mu = (kappa0·mu0 + Σx)/kappa``,
        ``alpha = alpha0 + N/2``, ``beta = beta0 + (Σx² + kappa0·mu0² − kappa·mu²)/2``.
        Returns ``{"mu", "kappa", "alpha", "beta"}``.
        """
        s1, s2, count = self.moments(np.asarray(values, dtype=float), float(n))
        s1, count = float(s1), float(count)
        if self.known_sigma:
            prec = 1.0 / tau0**2 + count / self.sigma**2  # type: ignore[operator]
            mean = (mu0 / tau0**2 + s1 / self.sigma**2) / prec  # type: ignore[operator]
            return {"mu": mean, "sigma": math.sqrt(1.0 / prec)}
        kappa = kappa0 + count
        mean = (kappa0 * mu0 + s1) / kappa
        return {
            "mu": mean,
            "kappa": kappa,
            "alpha": alpha0 + count / 2.0,
            "beta": beta0 + 0.5 * (float(s2) + kappa0 * mu0**2 - kappa * mean**2),
        }
