"""Exponential records: x ≥ 0, one rate λ.

``log p(X | λ) = N log λ − λ Σx``: the records enter only through ``S = Σx`` and N.
The support [0, ∞) is unbounded above, so the curator declares
``bounds={"x": (lo, hi)}`` with ``0 ≤ lo < hi``; records outside are clipped to it
(and counted in a :class:`~pymc_dp.families.ClippedRecordsWarning`). Negative, NaN
or infinite records lie outside the support and are an error.

L1 sensitivities, for x, x′ ∈ [lo, hi]:

* ``"replace"`` (N public): ``S = Σx`` moves by ``|x − x′| ≤ hi − lo`` (x = lo,
  x′ = hi): **Δ = hi − lo**.
* ``"add_remove"`` (N private): ``(Σx, N)`` moves by ``x + 1 ≤ hi + 1``:
  **Δ = hi + 1**.

PyMC 5 stores ``pm.Exponential.dist(lam)`` by its *scale* 1/λ (``dist_params``
returns the scale); :meth:`Exponential.from_dist` converts back to the rate.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from .base import Family, check_bound_pair, dist_params, statistic_length
from ._params import clip_interval, rate_from_scale, relation, require_op, scalar_param

__all__ = ["Exponential"]


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


class Exponential(Family):
    """Exponential likelihood (rate λ); needs ``bounds={"x": (lo, hi)}``, 0 ≤ lo; conjugate prior Gamma."""

    name = "exponential"
    pymc_ops = ("exponential",)
    bound_keys = ("x",)
    bounds_example = "{'x': (0.0, 20.0)}"

    # ------------------------------------------------------------------ data side
    def check_bounds(self, bounds: Mapping[str, Any] | None) -> dict[str, Any]:
        """``{"x": (lo, hi)}`` with 0 ≤ lo < hi finite; a missing or bad bound is a ValueError naming it."""
        checked = super().check_bounds(bounds)
        positive_support_bounds(checked, self.name, strict=False)
        return checked

    def invalid(self, x: Any) -> Any:
        """Records that are negative or not finite (outside the support: an error, not clipped)."""
        return ~(np.isfinite(x) & (x >= 0))

    def clip(self, x: Any, bounds: Mapping[str, Any]) -> tuple[Any, Any]:
        lo, hi = positive_support_bounds(bounds, self.name, strict=False)
        return clip_interval(x, lo, hi)

    def statistic_names(self, neighbouring: str) -> tuple[str, ...]:
        return ("sum",) if relation(neighbouring) == "replace" else ("sum", "n")

    def record_statistics(self, x: Any, neighbouring: str) -> Any:
        cols = [x] if relation(neighbouring) == "replace" else [x, np.ones_like(x)]
        return np.stack(cols, axis=1)

    def sensitivity(self, bounds: Mapping[str, Any], neighbouring: str) -> float:
        """hi − lo under replace; hi + 1 under add/remove (see the module docstring)."""
        lo, hi = positive_support_bounds(bounds, self.name, strict=False)
        return hi - lo if relation(neighbouring) == "replace" else hi + 1.0

    def project(self, noisy: np.ndarray, n: int | None, bounds: Mapping[str, Any], neighbouring: str) -> np.ndarray:
        """N̂ = ``n`` (replace) or max(released N, 1) (add/remove); Σx clipped to [N̂·lo, N̂·hi]."""
        lo, hi = positive_support_bounds(bounds, self.name, strict=False)
        return project_sum(noisy, n, lo, hi, neighbouring)

    def n_from_statistics(self, values: np.ndarray, neighbouring: str) -> float:
        """N̂ = the released count under add/remove."""
        if relation(neighbouring) != "add_remove":
            return super().n_from_statistics(values, neighbouring)
        return float(values[1])

    # ------------------------------------------------------------------ model side
    def sum_and_count(self, values: Any, n: Any) -> tuple[Any, Any]:
        """(Σx, N): N is ``n`` under replace, the released count under add/remove."""
        return (values[0], n) if statistic_length(values) == 1 else (values[0], values[1])

    def loglik(self, values: Any, n: Any, params: Mapping[str, Any]) -> Any:
        """``N log λ − λ Σx`` with ``params = {"lam": λ}`` (the rate)."""
        import pytensor.tensor as pt

        s, count = self.sum_and_count(values, n)
        lam = params["lam"]
        return pt.as_tensor_variable(count * pt.log(lam) - lam * s)

    @classmethod
    def from_dist(cls, dist: Any) -> tuple["Exponential", dict[str, Any]]:
        """``pm.Exponential.dist(lam=λ)`` (or ``scale=``) → ``(Exponential(), {"lam": λ})``, λ the rate.

        Raises
        ------
        ValueError
            For another distribution or a per-record rate.
        """
        require_op(cls, dist, "Exponential")
        (scale,) = dist_params(dist)
        return cls(), {"lam": scalar_param(rate_from_scale(scale), "lam", cls.name)}

    def conjugate_posterior(
        self, values: np.ndarray, n: float, *, alpha: float = 1.0, beta: float = 1.0
    ) -> dict[str, float]:
        """Gamma(alpha, beta) prior on λ (shape, rate) ⇒ Gamma(alpha + N, beta + Σx)."""
        s, count = self.sum_and_count(np.asarray(values, dtype=float), float(n))
        return {"alpha": alpha + float(count), "beta": beta + float(s)}


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
