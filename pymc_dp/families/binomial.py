"""Binomial records: x ∈ {0, 1, …, n} successes out of a known number of trials n.

Every record counts the successes in the same known number of trials ``n_trials``
(per-record trial counts are not supported yet). The likelihood of the success
probability p depends on the records only through the total number of successes
``s = Σᵢ xᵢ`` and of failures ``f = Σᵢ (n − xᵢ) = N·n − s`` (theory notes §5).

Statistics and L1 sensitivities:

* ``"replace"`` (N public): only ``s`` is released; changing one record moves it by
  at most n (from 0 to n), so ΔS = n. The failures follow as N·n − s.
* ``"add_remove"`` (N private): ``(s, f)`` is released; adding or removing a record
  with x successes moves s by x and f by n − x, so ΔS = x + (n − x) = n. N is
  estimated as (s + f)/n.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

from ._noise_aware import laplace_marginal_count_logp, released_scalar, released_values
from .base import Family, checked_range, dist_params, rv_op_name, statistic_length
from ._params import check_count, constant_count, scalar_param

__all__ = ["Binomial"]


class Binomial(Family):
    """Binomial likelihood with a known number of trials; conjugate prior Beta(a, b).

    Parameters
    ----------
    n_trials
        The number of trials of every record (a positive integer, the same for all
        records; per-record trial counts are not supported yet).

    Raises
    ------
    ValueError
        If ``n_trials`` is missing or not a positive integer.
    """

    name = "binomial"
    pymc_ops = ("binomial",)

    def __init__(self, n_trials: int | None = None, **family_args: Any) -> None:
        if family_args:
            raise ValueError(f"family 'binomial' takes only n_trials, got unknown argument(s) {sorted(family_args)}.")
        if n_trials is None:
            raise ValueError("family 'binomial' needs the known number of trials per record: pass n_trials=<int>.")
        self.n_trials = check_count(n_trials, "n_trials")

    def family_args(self) -> dict[str, Any]:
        return {"n_trials": self.n_trials}

    # ------------------------------------------------------------------ data side
    def invalid(self, x: Any) -> Any:
        """Records that are not an integer in {0, …, n_trials} (NaN and ±inf included)."""
        return ~((x >= 0) & (x <= self.n_trials) & (x == np.floor(x)))

    def default_record(self, bounds: Mapping[str, Any]) -> float:
        """0 successes (a possible record whatever ``n_trials``): what a malformed record is replaced by."""
        return 0.0

    def statistic_names(self, neighbouring: str) -> tuple[str, ...]:
        return ("successes",) if neighbouring == "replace" else ("successes", "failures")

    def record_statistics(self, x: Any, neighbouring: str) -> Any:
        cols = [x] if neighbouring == "replace" else [x, self.n_trials - x]
        return np.stack(cols, axis=1)

    def integer_statistics(self, bounds: Mapping[str, Any], neighbouring: str) -> bool:
        """Yes: counts of successes (and failures)."""
        return True

    def sensitivity(self, bounds: Mapping[str, Any], neighbouring: str) -> float:
        """L1 sensitivity ``n_trials`` under both relations.

        Replace-one: s changes by x′ − x with x, x′ ∈ {0, …, n}, at most n (0 ↔ n).
        Add/remove-one: a record with x successes changes (s, f) by (x, n − x), whose
        L1 norm is exactly n whatever x is.
        """
        return float(self.n_trials)

    def project(self, noisy: np.ndarray, n: int | None, bounds: Mapping[str, Any], neighbouring: str) -> np.ndarray:
        """Replace: clip s to [0, N·n_trials]. Add/remove: clip (s, f) at 0."""
        noisy = np.asarray(noisy, dtype=float)
        if neighbouring == "replace":
            return np.clip(noisy, 0.0, float(n) * self.n_trials)
        return np.maximum(noisy, 0.0)

    def n_from_statistics(self, values: np.ndarray, neighbouring: str) -> float:
        """N = (successes + failures) / n_trials under add/remove."""
        if neighbouring != "add_remove":
            return super().n_from_statistics(values, neighbouring)
        return float(values[0] + values[1]) / self.n_trials

    # ------------------------------------------------------------------ model side
    def counts(self, values: Any, n: Any) -> tuple[Any, Any]:
        """(successes, failures) from the statistics; under replace failures = N·n_trials − successes."""
        if statistic_length(values) == 1:
            return values[0], n * self.n_trials - values[0]
        return values[0], values[1]

    def loglik(self, values: Any, n: Any, params: Mapping[str, Any]) -> Any:
        """``s log p + f log(1 − p)`` (the binomial coefficients do not depend on p)."""
        import pytensor.tensor as pt

        s, f = self.counts(values, n)
        p = params["p"]
        return s * pt.log(p) + f * pt.log1p(-p)

    supports_noise_aware = True

    def record_moments(self, params: Mapping[str, Any], bounds: Mapping[str, Any] | None = None) -> tuple[Any, Any]:
        """One record's successes: mean ``n_trials·p``, variance ``n_trials·p(1 − p)``."""
        from ._noise_aware import as_float64

        p = as_float64(params["p"])
        return self.n_trials * p, self.n_trials * p * (1.0 - p)

    @property
    def one_hot_counts(self) -> bool:  # type: ignore[override]
        """One trial per record (a Bernoulli): each record adds 1 to the successes or to the failures."""
        return self.n_trials == 1

    def add_remove_record_moments(self, params: Mapping[str, Any], bounds: Mapping[str, Any] | None = None) -> tuple[Any, Any]:
        """One record's (successes, failures): mean ``n·(p, 1 − p)``, covariance ``n·p(1 − p)·[[1, −1], [−1, 1]]``."""
        import pytensor.tensor as pt

        from ._noise_aware import as_float64

        p = as_float64(params["p"])
        v = self.n_trials * p * (1.0 - p)
        return self.n_trials * pt.stack([p, 1.0 - p]), pt.stack([pt.stack([v, -v]), pt.stack([-v, v])])

    def noise_aware_loglik(
        self,
        noisy: np.ndarray,
        n: float,
        scale: float,
        neighbouring: str,
        params: Mapping[str, Any],
        bounds: Mapping[str, Any] | None = None,
        noise_mixing: Any = None,
        mechanism: str = "laplace",
    ) -> Any:
        """``log p(z | p)``: the released count z = S + noise(scale), S ~ Binomial(N·n_trials, p) summed out.

        Exact (a sum over every possible count, against the noise's own density or pmf)
        up to :data:`~pymc_dp.families._noise_aware.EXACT_SUM_MAX_TRIALS` trials, the
        normal-Laplace (CLT) form above. Needs N public (``"replace"``); under add/remove
        :func:`~pymc_dp.model.observe_stats` uses the latent-count likelihood of
        :mod:`pymc_dp.families._latent_count` instead.
        """
        if neighbouring != "replace":
            raise ValueError(
                f"the noise-aware {self.name} likelihood needs N public (replace-one neighbouring); under "
                "add/remove use noise_aware=False."
            )
        trials = int(round(n)) * self.n_trials
        # the released count and the noise scale as shared inputs: the next release reuses the compiled graph
        count = released_values(np.ravel(noisy)[:1])[0]
        return laplace_marginal_count_logp(
            count, trials, params["p"], released_scalar(float(scale), "scale"), mechanism=mechanism
        )

    truncation_examples = {"p": "(0.05, 0.95)"}

    def loglik_sensitivity(self, ranges: Mapping[str, Any], bounds: Mapping[str, Any]) -> tuple[float, str]:
        """Δ = n · (logit hi − logit lo) / 2 for p ∈ [lo, hi] ⊂ (0, 1).

        ``log p(x | p) = x · logit p + n log(1 − p) + log C(n, x)``, so
        ``d = (x′ − x) · logit p`` with ``|x′ − x| ≤ n``; its range over p is
        ``n (logit hi − logit lo)`` (see :meth:`Family.loglik_sensitivity`). On
        [a₀, 1 − a₀] with n = 1 this is [FGWC16] eq. 15, log((1 − a₀)/a₀).
        """
        lo, hi = checked_range(ranges, "p", self, lower=0.0, upper=1.0, open_lower=True, open_upper=True)
        logit = lambda q: math.log(q) - math.log1p(-q)  # noqa: E731
        delta = float(self.n_trials) * (logit(hi) - logit(lo)) / 2.0
        how = f"{self.n_trials} × (logit {hi:g} − logit {lo:g}) / 2"
        declared = f"n_trials = {self.n_trials} and the range [{lo:g}, {hi:g}] of 'p'"
        return self.finite_loglik_sensitivity(delta, how, declared), how

    @classmethod
    def from_dist(cls, dist: Any) -> tuple["Binomial", dict[str, Any]]:
        """``pm.Binomial.dist(n=<constant int>, p=p)`` → ``(Binomial(n_trials=n), {"p": p})``.

        Raises
        ------
        ValueError
            For another distribution, a non-constant or per-record ``n``, or a
            per-record ``p``.
        """
        if rv_op_name(dist) not in cls.pymc_ops:
            raise ValueError(f"expected a Binomial distribution, got {rv_op_name(dist)!r}.")
        n, p = dist_params(dist)
        n_trials = constant_count(n, "n", "binomial")
        return cls(n_trials=n_trials), {"p": scalar_param(p, "p", "binomial")}

    def conjugate_posterior(
        self, values: np.ndarray, n: float, *, alpha: float = 1.0, beta: float = 1.0
    ) -> dict[str, float]:
        """Beta(alpha, beta) prior ⇒ Beta(alpha + successes, beta + failures)."""
        s, f = self.counts(np.asarray(values, dtype=float), float(n))
        return {"alpha": alpha + float(s), "beta": beta + float(f)}
