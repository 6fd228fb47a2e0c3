"""Multinomial records: each a vector of k counts summing to a known number of trials n.

The likelihood of the probability vector p depends on the records only through the
column sums ``c_j = Σᵢ x_{ij}`` (theory notes §5, §8: Dirichlet-multinomial). Every
record is a row with ``‖xᵢ‖₁ = n``, so the L1 sensitivity of ``c`` is

* ``"replace"``: ‖x′ − x‖₁ ≤ ‖x′‖₁ + ‖x‖₁ = 2n, attained by moving all n trials from
  one category to another: ΔS = 2n. N is public and the released counts are
  projected onto the simplex scaled to N·n.
* ``"add_remove"``: ‖x‖₁ = n: ΔS = n. N is estimated as Σ_j c_j / n.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from .base import Family, dist_params, project_to_simplex, rv_op_name
from ._params import check_count, constant_count
from .categorical import (
    HistogramNoiseAware,
    check_categories,
    count_loglik,
    count_moments,
    dirichlet_posterior,
    histogram_loglik_sensitivity,
    probability_vector,
)

__all__ = ["Multinomial"]


class Multinomial(HistogramNoiseAware, Family):
    """Multinomial likelihood with k categories and a known number of trials; conjugate prior Dirichlet(alpha).

    Parameters
    ----------
    k
        The number of categories (an integer ≥ 2): every record is a row of k counts.
    n_trials
        The number of trials of every record (a positive integer, the same for all
        records; per-record trial counts are not supported yet): each row sums to it.

    Raises
    ------
    ValueError
        If an argument is missing or not an integer in range.
    """

    name = "multinomial"
    pymc_ops = ("multinomial",)

    def __init__(self, k: int | None = None, n_trials: int | None = None, **family_args: Any) -> None:
        if family_args:
            raise ValueError(
                f"family 'multinomial' takes only k and n_trials, got unknown argument(s) {sorted(family_args)}."
            )
        if k is None or n_trials is None:
            raise ValueError(
                "family 'multinomial' needs the number of categories and of trials per record: "
                "pass k=<int> and n_trials=<int>."
            )
        self.k = check_categories(k, self.name)
        self.n_trials = check_count(n_trials, "n_trials")

    def family_args(self) -> dict[str, Any]:
        return {"k": self.k, "n_trials": self.n_trials}

    # ------------------------------------------------------------------ data side
    def records(self, x: Any) -> Any:
        """Records as an (N, k) array: one row of k counts per record."""
        if x.ndim != 2 or x.shape[1] != self.k:
            raise ValueError(
                f"family 'multinomial' with k={self.k} expects one row of {self.k} counts per record "
                f"(an (N, {self.k}) array), got shape {tuple(x.shape)}."
            )
        return x

    def invalid(self, x: Any) -> Any:
        """Rows with a negative, non-integer or non-finite count, or not summing to n_trials."""
        ok_entries = ((x >= 0) & (x <= self.n_trials) & (x == np.floor(x))).all(axis=1)
        return ~(ok_entries & (x.sum(axis=1) == self.n_trials))

    def default_record(self, bounds: Mapping[str, Any]) -> np.ndarray:
        """The row ``(n_trials, 0, …, 0)`` (every trial in category 0): what a malformed row is replaced by."""
        return np.r_[float(self.n_trials), np.zeros(self.k - 1)]

    def statistic_names(self, neighbouring: str) -> tuple[str, ...]:
        return tuple(f"count_{j}" for j in range(self.k))

    def record_statistics(self, x: Any, neighbouring: str) -> Any:
        """The rows themselves, shape (N, k)."""
        return x

    def sensitivity(self, bounds: Mapping[str, Any], neighbouring: str) -> float:
        """2·n_trials under replace, n_trials under add/remove (see the module docstring)."""
        return float(2 * self.n_trials if neighbouring == "replace" else self.n_trials)

    def project(self, noisy: np.ndarray, n: int | None, bounds: Mapping[str, Any], neighbouring: str) -> np.ndarray:
        """Replace: Euclidean projection onto {c ≥ 0, Σc = N·n_trials}. Add/remove: clip the counts at 0."""
        noisy = np.asarray(noisy, dtype=float)
        if neighbouring == "replace":
            return project_to_simplex(noisy, float(n) * self.n_trials)
        return np.maximum(noisy, 0.0)

    def n_from_statistics(self, values: np.ndarray, neighbouring: str) -> float:
        """N = Σ_j c_j / n_trials under add/remove."""
        if neighbouring != "add_remove":
            return super().n_from_statistics(values, neighbouring)
        return float(np.sum(values)) / self.n_trials

    # ------------------------------------------------------------------ model side
    def loglik(self, values: Any, n: Any, params: Mapping[str, Any]) -> Any:
        """``Σ_j c_j log p_j`` (the multinomial coefficients do not depend on p)."""
        return count_loglik(values, params["p"])

    supports_noise_aware = True

    def record_moments(self, params: Mapping[str, Any], bounds: Mapping[str, Any] | None = None) -> tuple[Any, Any]:
        """One record of n_trials draws: mean ``n_trials·p``, covariance ``n_trials·(diag p − p pᵀ)`` (CLT form)."""
        return count_moments(params["p"], self.n_trials)

    @property
    def trials_per_record(self) -> int:  # type: ignore[override]
        """n_trials (each record is a histogram of n_trials draws)."""
        return self.n_trials

    truncation_examples = {"p": "0.01 (every probability ≥ 0.01)"}

    def loglik_sensitivity(self, ranges: Mapping[str, Any], bounds: Mapping[str, Any]) -> tuple[float, str]:
        """Δ = n · log(hi / lo) for n trials per record (see :func:`~pymc_dp.families.categorical.histogram_loglik_sensitivity`)."""
        return histogram_loglik_sensitivity(self, ranges, self.n_trials)

    @classmethod
    def from_dist(cls, dist: Any) -> tuple["Multinomial", dict[str, Any]]:
        """``pm.Multinomial.dist(n=<constant int>, p=p)`` → ``(Multinomial(k=len(p), n_trials=n), {"p": p})``.

        Raises
        ------
        ValueError
            For another distribution, a non-constant or per-record ``n``, a ``p`` of
            unknown length, or per-record p vectors.
        """
        if rv_op_name(dist) not in cls.pymc_ops:
            raise ValueError(f"expected a Multinomial distribution, got {rv_op_name(dist)!r}.")
        n, p = dist_params(dist)
        n_trials = constant_count(n, "n", "multinomial")
        k, p = probability_vector(p, "multinomial")
        return cls(k=k, n_trials=n_trials), {"p": p}

    def conjugate_posterior(self, values: np.ndarray, n: float, *, alpha: Any = 1.0) -> dict[str, np.ndarray]:
        """Dirichlet(alpha) prior ⇒ Dirichlet(alpha + counts) (``alpha`` a scalar or k values)."""
        return dirichlet_posterior(values, alpha)
