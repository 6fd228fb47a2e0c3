"""Bernoulli records: x ∈ {0, 1}, one success probability p.

Statistics ([FGWC16] §5, [H-DIST] LSHist): under ``"replace"`` N is public and the
number of successes alone (sensitivity 1) carries everything (failures = N − it);
under ``"add_remove"`` both counts are released, and a record added or removed
changes exactly one of them by 1 (sensitivity 1).
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from .base import Family, dist_params, rv_op_name, statistic_length

__all__ = ["Bernoulli"]


class Bernoulli(Family):
    """Bernoulli likelihood; conjugate prior Beta(a, b)."""

    name = "bernoulli"
    pymc_ops = ("bernoulli",)

    def invalid(self, x: Any) -> Any:
        return ~((x == 0) | (x == 1))

    def statistic_names(self, neighbouring: str) -> tuple[str, ...]:
        return ("successes",) if neighbouring == "replace" else ("successes", "failures")

    def record_statistics(self, x: Any, neighbouring: str) -> Any:
        cols = [x] if neighbouring == "replace" else [x, 1.0 - x]
        return np.stack(cols, axis=1)

    def sensitivity(self, bounds: Mapping[str, Any], neighbouring: str) -> float:
        return 1.0

    def project(self, noisy: np.ndarray, n: int | None, bounds: Mapping[str, Any], neighbouring: str) -> np.ndarray:
        if neighbouring == "replace":
            return np.clip(noisy, 0.0, float(n))
        return np.maximum(noisy, 0.0)

    def n_from_statistics(self, values: np.ndarray, neighbouring: str) -> float:
        return float(values[0] + values[1]) if neighbouring == "add_remove" else super().n_from_statistics(values, neighbouring)

    def counts(self, values: Any, n: Any) -> tuple[Any, Any]:
        """(successes, failures) from the statistics."""
        if statistic_length(values) == 1:
            return values[0], n - values[0]
        return values[0], values[1]

    def loglik(self, values: Any, n: Any, params: Mapping[str, Any]) -> Any:
        import pytensor.tensor as pt

        s, f = self.counts(values, n)
        p = params["p"]
        return s * pt.log(p) + f * pt.log1p(-p)

    @classmethod
    def from_dist(cls, dist: Any) -> tuple["Bernoulli", dict[str, Any]]:
        if rv_op_name(dist) not in cls.pymc_ops:
            raise ValueError(f"expected a Bernoulli distribution, got {rv_op_name(dist)!r}.")
        (p,) = dist_params(dist)
        return cls(), {"p": p}

    def conjugate_posterior(self, values: np.ndarray, n: float, *, alpha: float = 1.0, beta: float = 1.0) -> dict[str, float]:
        """Beta(alpha, beta) prior ⇒ Beta(alpha + successes, beta + failures)."""
        s, f = self.counts(np.asarray(values, dtype=float), n)
        return {"alpha": alpha + float(s), "beta": beta + float(f)}

