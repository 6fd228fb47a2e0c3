"""Exponential records: x ≥ 0, one rate λ.

``log p(X | λ) = N log λ − λ Σx``: the records enter only through ``S = Σx`` and N.
The support [0, ∞) is unbounded above, so the curator declares
``bounds={"x": (lo, hi)}`` with ``0 ≤ lo < hi``; records outside are clipped to it
(and counted in a :class:`~pymc_dp.families.ClippedRecordsWarning`). Negative, NaN
or infinite records lie outside the support: each is replaced by ``lo``
(:meth:`~pymc_dp.families.Family.repair`; counted for the curator, never refused).

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

from ._bounded_sum import BoundedPositiveSum
from ._noise_aware import as_float64
from ._params import rate_from_scale, require_op, scalar_param
from .base import dist_params

__all__ = ["Exponential"]


class Exponential(BoundedPositiveSum):
    """Exponential likelihood (rate λ); needs ``bounds={"x": (lo, hi)}``, 0 ≤ lo; conjugate prior Gamma."""

    name = "exponential"
    pymc_ops = ("exponential",)
    bounds_example = "{'x': (0.0, 20.0)}"

    rate_name = "lam"
    truncation_examples = {"lam": "(0.01, 10.0)"}

    def loglik(self, values: Any, n: Any, params: Mapping[str, Any]) -> Any:
        """``N log λ − λ Σx`` with ``params = {"lam": λ}`` (the rate)."""
        import pytensor.tensor as pt

        s, count = self.sum_and_count(values, n)
        lam = params["lam"]
        return pt.as_tensor_variable(count * pt.log(lam) - lam * s)

    supports_noise_aware = True

    def record_moments(self, params: Mapping[str, Any], bounds: Mapping[str, Any] | None = None) -> tuple[Any, Any]:
        """Mean 1/λ and variance 1/λ² of one record (``params = {"lam": λ}``, the rate).

        These are the moments of the *unclipped* Exponential(λ): accurate for the
        noise-aware likelihood when few records fall outside ``bounds["x"]``; heavy
        clipping is not modelled.
        """
        lam = as_float64(params["lam"])
        return 1.0 / lam, 1.0 / (lam * lam)

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
