"""Gamma records with a known shape α: x > 0, one unknown rate β.

``log p(X | β) = N α log β − β Σx + (α − 1) Σ log x − N log Γ(α)``. With α known the
``Σ log x`` term is part of the base measure (it does not involve β), so the records
enter the likelihood of β only through ``S = Σx`` and N. The support (0, ∞) is
unbounded above: the curator declares ``bounds={"x": (lo, hi)}`` with
``0 < lo < hi``; records outside are clipped to it (and counted in a
:class:`~pymc_dp.families.ClippedRecordsWarning`). Records ≤ 0, NaN or infinite lie
outside the support: each is replaced by ``lo`` (:meth:`~pymc_dp.families.Family.repair`;
counted for the curator, never refused).

L1 sensitivities, for x, x′ ∈ [lo, hi] (as for the exponential family):

* ``"replace"`` (N public): ``Σx`` moves by ``|x − x′| ≤ hi − lo``: **Δ = hi − lo**.
* ``"add_remove"`` (N private): ``(Σx, N)`` moves by ``x + 1 ≤ hi + 1``:
  **Δ = hi + 1**.

PyMC 5 stores ``pm.Gamma.dist(alpha, beta)`` as (alpha, scale = 1/beta);
:meth:`Gamma.from_dist` converts back to the rate and requires alpha to be a constant.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from ._bounded_sum import BoundedPositiveSum
from ._noise_aware import as_float64
from ._params import constant_value, positive_float, rate_from_scale, require_op, scalar_param
from .base import dist_params

__all__ = ["Gamma"]


class Gamma(BoundedPositiveSum):
    """Gamma likelihood with known shape α (``shape=α``) and unknown rate β; conjugate prior Gamma.

    Parameters
    ----------
    shape
        The known shape α > 0 (required).
    """

    name = "gamma"
    pymc_ops = ("gamma",)
    strictly_positive = True
    bounds_example = "{'x': (0.01, 20.0)}"

    def __init__(self, shape: float | None = None, **family_args: Any) -> None:
        if family_args:
            raise ValueError(f"family 'gamma' takes only shape=α (the known shape), got {sorted(family_args)}.")
        if shape is None:
            raise ValueError(
                "family 'gamma' needs its known shape: pass shape=α (e.g. shape=2.0). Only the rate is inferred "
                "from Σx; with an unknown shape Σ log x would be needed as well."
            )
        self.shape: float = positive_float(shape, "shape", self.name)

    def family_args(self) -> dict[str, Any]:
        return {"shape": self.shape}

    rate_name = "beta"
    truncation_examples = {"beta": "(0.01, 10.0)"}

    def loglik(self, values: Any, n: Any, params: Mapping[str, Any]) -> Any:
        """``N α log β − β Σx`` with ``params = {"beta": β}`` (the rate; α is the family's shape)."""
        import pytensor.tensor as pt

        s, count = self.sum_and_count(values, n)
        beta = params["beta"]
        return pt.as_tensor_variable(count * self.shape * pt.log(beta) - beta * s)

    supports_noise_aware = True

    def record_moments(self, params: Mapping[str, Any], bounds: Mapping[str, Any] | None = None) -> tuple[Any, Any]:
        """Mean α/β and variance α/β² of one record (``params = {"beta": β}``, the rate; α known).

        These are the moments of the *unclipped* Gamma(α, β): accurate for the
        noise-aware likelihood when few records fall outside ``bounds["x"]``; heavy
        clipping is not modelled.
        """
        beta = as_float64(params["beta"])
        return self.shape / beta, self.shape / (beta * beta)

    @classmethod
    def from_dist(cls, dist: Any) -> tuple["Gamma", dict[str, Any]]:
        """``pm.Gamma.dist(alpha=α, beta=β)`` → ``(Gamma(shape=α), {"beta": β})``, β the rate.

        Raises
        ------
        ValueError
            For another distribution, a non-constant alpha (the shape must be known),
            or a per-record alpha or rate.
        """
        require_op(cls, dist, "Gamma")
        alpha, scale = dist_params(dist)
        alpha = scalar_param(alpha, "alpha", cls.name)
        value = constant_value(alpha)
        if value is None:
            raise ValueError(
                "the gamma family needs a known shape: alpha must be a constant (e.g. pm.Gamma.dist(alpha=2.0, "
                "beta=beta)); with an unknown shape the likelihood also depends on Σ log x, which this family "
                "does not release."
            )
        return cls(shape=value), {"beta": scalar_param(rate_from_scale(scale), "beta", cls.name)}

    def conjugate_posterior(
        self, values: np.ndarray, n: float, *, alpha: float = 1.0, beta: float = 1.0
    ) -> dict[str, float]:
        """Gamma(alpha, beta) prior on the rate β (shape, rate) ⇒ Gamma(alpha + N·α_known, beta + Σx)."""
        s, count = self.sum_and_count(np.asarray(values, dtype=float), float(n))
        return {"alpha": alpha + float(count) * self.shape, "beta": beta + float(s)}
