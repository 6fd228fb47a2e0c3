"""Families whose records are positive reals entering only through ``(Σx, N)``.

The Exponential and the Gamma with known shape share everything on the data
side: a declared box ``bounds={"x": (lo, hi)}`` inside the positive support, the
statistic Σx (plus N when N is private), its sensitivity (hi − lo under replace,
hi + 1 under add/remove) and its projection (Σx ∈ [N̂·lo, N̂·hi]). Only the
likelihood in the parameters differs, so each family subclasses
:class:`BoundedPositiveSum` and adds that.
"""

from __future__ import annotations

from typing import Any, ClassVar, Mapping

import numpy as np

from ._params import clip_interval, relation
from .base import Family, check_bound_pair, checked_range, declared_bounds, shifted_scalar_moments, statistic_length
from .release_design import ReleaseDesign, centred_add_remove_design

__all__ = ["BoundedPositiveSum", "positive_support_bounds", "project_sum"]


def positive_support_bounds(bounds: Mapping[str, Any], family: str, strict: bool) -> tuple[float, float]:
    """``bounds["x"]`` checked to lie in [0, ∞) (``strict``: in (0, ∞))."""
    lo, hi = check_bound_pair(bounds, "x")
    if lo < 0 or (strict and lo == 0):
        support = "x > 0" if strict else "x ≥ 0"
        raise ValueError(
            f"bounds['x'] of the {family} family must lie in its support {support}, got ({lo}, {hi}); "
            f"e.g. bounds={{'x': ({'0.01' if strict else '0.0'}, {hi})}}."
        )
    return lo, hi


def project_sum(noisy: np.ndarray, n: int | None, lo: float, hi: float, neighbouring: str) -> np.ndarray:
    """``(Σx[, N])`` onto valid values: N̂ ≥ 1 when private, Σx ∈ [N̂·lo, N̂·hi]."""
    out = np.array(noisy, dtype=float, copy=True).ravel()
    if relation(neighbouring) == "add_remove":
        out[1] = max(out[1], 1.0)
        count = out[1]
    else:
        count = float(n)  # type: ignore[arg-type]
    out[0] = min(max(out[0], count * lo), count * hi)
    return out


class BoundedPositiveSum(Family):
    """Data side shared by families with positive records and statistic ``(Σx[, N])``."""

    bound_keys = ("x",)
    releases_count = True
    #: Whether the support excludes 0 (Gamma) or includes it (Exponential).
    strictly_positive: ClassVar[bool] = False

    # ------------------------------------------------------------------ data side
    def check_bounds(self, bounds: Mapping[str, Any] | None) -> dict[str, Any]:
        """``{"x": (lo, hi)}`` with lo ≥ 0 (> 0 if strictly positive), lo < hi finite; else a ValueError naming it."""
        checked = super().check_bounds(bounds)
        positive_support_bounds(checked, self.name, strict=self.strictly_positive)
        return checked

    def invalid(self, x: Any) -> Any:
        """Records outside the support (negative, or ≤ 0 if strictly positive) or not finite: replaced (:meth:`repair`)."""
        return ~(np.isfinite(x) & ((x > 0) if self.strictly_positive else (x >= 0)))

    def default_record(self, bounds: Mapping[str, Any]) -> float:
        """The lower bound of ``bounds["x"]`` (inside the support): what a malformed record is replaced by."""
        return positive_support_bounds(bounds, self.name, strict=self.strictly_positive)[0]

    def clip(self, x: Any, bounds: Mapping[str, Any]) -> tuple[Any, Any]:
        lo, hi = positive_support_bounds(bounds, self.name, strict=self.strictly_positive)
        return clip_interval(x, lo, hi)

    def statistic_names(self, neighbouring: str) -> tuple[str, ...]:
        return ("sum",) if relation(neighbouring) == "replace" else ("sum", "n")

    def record_statistics(self, x: Any, neighbouring: str) -> Any:
        cols = [x] if relation(neighbouring) == "replace" else [x, np.ones_like(x)]
        return np.stack(cols, axis=1)

    def sensitivity(self, bounds: Mapping[str, Any], neighbouring: str) -> float:
        """hi − lo under replace; hi + 1 under add/remove (see the module docstring)."""
        lo, hi = positive_support_bounds(bounds, self.name, strict=self.strictly_positive)
        return hi - lo if relation(neighbouring) == "replace" else hi + 1.0

    def release_design(self, bounds: Mapping[str, Any], neighbouring: str) -> ReleaseDesign:
        """Under add/remove, (Σ(x − c), N) centred on the bounds' midpoint with ε divided
        (:func:`~pymc_dp.families.release_design.centred_add_remove_design`): Δ_w = w₀h + w_N against
        hi + 1. Under replace Σx itself (centring does not change its sensitivity hi − lo).
        """
        if relation(neighbouring) != "add_remove":
            return super().release_design(bounds, neighbouring)
        lo, hi = positive_support_bounds(bounds, self.name, strict=self.strictly_positive)
        self.sensitivity(bounds, neighbouring)
        return centred_add_remove_design(lo, hi, squares=False)

    def project(self, noisy: np.ndarray, n: int | None, bounds: Mapping[str, Any], neighbouring: str) -> np.ndarray:
        """N̂ = ``n`` (replace) or max(released N, 1) (add/remove); Σx clipped to [N̂·lo, N̂·hi]."""
        lo, hi = positive_support_bounds(bounds, self.name, strict=self.strictly_positive)
        return project_sum(noisy, n, lo, hi, neighbouring)

    def n_from_statistics(self, values: np.ndarray, neighbouring: str) -> float:
        """N̂ = the released count under add/remove."""
        if relation(neighbouring) != "add_remove":
            return super().n_from_statistics(values, neighbouring)
        return float(values[1])

    # ------------------------------------------------------------------ model side
    #: Name of the rate parameter (as ``from_dist`` returns it).
    rate_name: ClassVar[str] = "rate"

    def loglik_sensitivity(self, ranges: Mapping[str, Any], bounds: Mapping[str, Any]) -> tuple[float, str]:
        """Δ = (hi − lo)(r_hi − r_lo) / 2: records in [lo, hi], rate r ∈ [r_lo, r_hi] (r ≥ 0).

        Both likelihoods are ``log p(x | r) = −r x + (terms in r alone) + (terms in x
        alone)``, so ``d = −r (x′ − x)``, whose range over r is
        ``|x′ − x| (r_hi − r_lo) ≤ (hi − lo)(r_hi − r_lo)``.
        """
        r_lo, r_hi = checked_range(ranges, self.rate_name, self, lower=0.0)
        lo, hi = positive_support_bounds(self.check_bounds(bounds), self.name, strict=self.strictly_positive)
        how = f"({hi:g} − {lo:g}) × ({r_hi:g} − {r_lo:g}) / 2"
        declared = f"{declared_bounds('x', lo, hi)} and the range [{r_lo:g}, {r_hi:g}] of {self.rate_name!r}"
        return self.finite_loglik_sensitivity((hi - lo) * (r_hi - r_lo) / 2.0, how, declared), how

    def shifted_record_moments(self, params: Mapping[str, Any], bounds: Mapping[str, Any] | None, shift: Any) -> Any:
        """The moments of x − c: the mean moved by the shift, the variance as it is (one coordinate)."""
        return shifted_scalar_moments(*self.record_moments(params, bounds), shift)

    def sum_and_count(self, values: Any, n: Any) -> tuple[Any, Any]:
        """(Σx, N): N is ``n`` under replace, the released count under add/remove."""
        return (values[0], n) if statistic_length(values) == 1 else (values[0], values[1])
