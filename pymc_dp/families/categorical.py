"""Categorical records: x ∈ {0, 1, …, k − 1}, one probability vector p over k categories.

The likelihood of p depends on the records only through the histogram
``c_j = #{i : xᵢ = j}``, the sum of the one-hot encodings of the records
([FGWC16] §5; theory notes §5: "Categorical with K outcomes: S(x) = one-hot").

L1 sensitivity of the histogram:

* ``"replace"``: changing one record from category a to b lowers c_a by 1 and
  raises c_b by 1, so ΔS = 2. N is public and the released histogram is projected
  onto the simplex scaled to N.
* ``"add_remove"``: adding or removing one record changes one count by 1, so ΔS = 1;
  N is estimated as the sum of the (projected, non-negative) counts.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

from .base import Family, checked_range, dist_params, project_to_simplex, rv_op_name
from ._params import check_count

__all__ = ["Categorical", "histogram_loglik_sensitivity", "MAX_CATEGORIES"]

#: The most categories a histogram family accepts: every category is a released, noisy count,
#: and the records are one-hot encoded (N × k) on the way.
MAX_CATEGORIES = 10**6


def check_categories(k: Any, family: str) -> int:
    """The number of categories k as an int in [2, :data:`MAX_CATEGORIES`], or a ValueError naming it."""
    k = check_count(k, "k (the number of categories)", minimum=2)
    if k > MAX_CATEGORIES:
        raise ValueError(
            f"family {family!r}: k={k} categories is more than the {MAX_CATEGORIES:,} supported (each is a released "
            "count, and the records are one-hot encoded on the way); merge rare categories first."
        )
    return k


def probability_vector(p: Any, family: str) -> tuple[int, Any]:
    """``(k, p)`` for a distribution's probability parameter: a PyTensor vector of static length k.

    Leading dimensions of static length 1 (what PyMC makes of one shared p when
    ``shape=`` is given) are dropped. A batch of probability vectors (one per record)
    is refused: the records would then not enter the likelihood through one summed
    exponential-family statistic. The length k must be known statically.
    """
    import pytensor.tensor as pt

    p = pt.as_tensor_variable(p)
    shape = tuple(p.type.shape)
    if not shape:
        raise ValueError(f"the {family} parameter 'p' must be a vector of category probabilities, got a scalar.")
    from ._params import per_record_allowed

    batch = any(dim != 1 for dim in shape[:-1])
    if batch and per_record_allowed(p) and shape[-1] is not None:
        return int(shape[-1]), p
    if batch:
        raise ValueError(
            f"the {family} parameter 'p' has static shape {shape}: it must be one probability vector shared by "
            "all records (per-record parameters are not a single exponential-family statistic; the Laplace "
            "route needs one summed statistic for the whole data set)."
        )
    if shape[-1] is None:
        raise ValueError(
            f"the number of categories of the {family} parameter 'p' is not known statically (shape {shape}); "
            "give p a fixed length, e.g. pm.Dirichlet('p', a=np.ones(k))."
        )
    k = int(shape[-1])
    if len(shape) > 1:
        p = p.reshape((k,))
    return k, p


def dirichlet_posterior(values: np.ndarray, alpha: Any) -> dict[str, np.ndarray]:
    """Dirichlet(alpha) prior ⇒ Dirichlet(alpha + counts); ``alpha`` a scalar or a length-k vector."""
    counts = np.asarray(values, dtype=float).ravel()
    a = np.broadcast_to(np.asarray(alpha, dtype=float), counts.shape)
    if np.any(~np.isfinite(a)) or np.any(a <= 0):
        raise ValueError(f"alpha must be positive and finite (a scalar or one per category), got {alpha!r}.")
    return {"alpha": a + counts}


def count_loglik(values: Any, p: Any) -> Any:
    """``Σ_j c_j log p_j`` as a PyTensor scalar."""
    import pytensor.tensor as pt

    return pt.sum(pt.as_tensor_variable(values) * pt.log(p))


def count_moments(p: Any, trials: int) -> tuple[Any, Any]:
    """Mean ``t·p`` and covariance ``t·(diag p − p pᵀ)`` of one record's counts (t trials over k categories)."""
    import pytensor.tensor as pt

    p = pt.cast(pt.as_tensor_variable(p), "float64")
    return trials * p, trials * (pt.diag(p) - pt.outer(p, p))


class HistogramNoiseAware:
    """The noise-aware likelihood of a released histogram (mixed into Categorical and Multinomial).

    Exact — every histogram summed out by a forward recursion over the categories
    (:func:`~pymc_dp.families._noise_aware.laplace_marginal_histogram_logp`) — up to
    :data:`~pymc_dp.families._noise_aware.EXACT_HISTOGRAM_MAX_TRIALS` trials in all
    (N records × trials per record); above, the multivariate CLT with latent noise
    mixing (the family's :meth:`record_moments`), accurate when every expected count
    N·p_j is at least about 10. N must be public (replace-one neighbouring).
    """

    #: Trials per record: 1 for a categorical, n_trials for a multinomial.
    trials_per_record: int = 1

    def exact_histogram(self, n: float) -> bool:
        """Whether the exact sum is used for N = ``n`` records."""
        from ._noise_aware import EXACT_HISTOGRAM_MAX_TRIALS

        return int(round(float(n))) * self.trials_per_record <= EXACT_HISTOGRAM_MAX_TRIALS

    def noise_mixing_size(self, n_released: int, n: float) -> int:
        return 0 if self.exact_histogram(n) else n_released

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
        from ._noise_aware import laplace_marginal_histogram_logp, released_scalar, released_values

        if neighbouring == "replace" and self.exact_histogram(n):
            trials = int(round(float(n))) * self.trials_per_record
            # the released counts and the scale as shared inputs: the next release at this N reuses the compilation
            counts = released_values(np.ravel(noisy))
            return laplace_marginal_histogram_logp(
                counts, trials, params["p"], released_scalar(float(scale), "scale"), mechanism=mechanism
            )
        return super().noise_aware_loglik(  # type: ignore[misc]
            noisy, n, scale, neighbouring, params, bounds=bounds, noise_mixing=noise_mixing, mechanism=mechanism
        )

    def integer_statistics(self, bounds: Mapping[str, Any], neighbouring: str) -> bool:
        """Yes: counts per category."""
        return True


def histogram_loglik_sensitivity(family: Family, ranges: Mapping[str, Any], trials: int) -> tuple[float, str]:
    """Δ = t · log(hi / lo) for a histogram of t trials with every probability in [lo, hi] ⊂ (0, 1].

    ``log p(c | p) = Σ_j c_j log p_j + const`` for a record's counts c (Σc = t), so
    ``d = Σ_j w_j log p_j`` with ``w = c′ − c``, ``Σ w = 0`` and ``Σ w⁺ ≤ t``; hence
    ``|d| ≤ t (log hi − log lo)`` and d's range is at most twice that. For a
    Dirichlet truncated at every p_j ≥ a₀ over K categories, lo = a₀ and
    hi = 1 − (K − 1) a₀: Δ = log((1 − (K − 1)a₀)/a₀) for one trial (the theory
    notes §4), attained by x = the largest category, x′ = the smallest.
    """
    lo, hi = checked_range(ranges, "p", family, lower=0.0, upper=1.0, open_lower=True)
    how = f"{trials} × log({hi:g} / {lo:g})"
    declared = f"{trials} trial(s) per record and the range [{lo:g}, {hi:g}] of 'p'"
    ratio = hi / lo
    # log(hi) − log(lo) where the ratio itself overflows (lo below ~1e-308)
    log_ratio = math.log(ratio) if math.isfinite(ratio) else math.log(hi) - math.log(lo)
    return family.finite_loglik_sensitivity(float(trials) * log_ratio, how, declared), how


class Categorical(HistogramNoiseAware, Family):
    """Categorical likelihood over ``k`` categories; conjugate prior Dirichlet(alpha).

    Parameters
    ----------
    k
        The number of categories (an integer ≥ 2); records are 0, 1, …, k − 1.

    Raises
    ------
    ValueError
        If ``k`` is missing or not an integer ≥ 2.
    """

    name = "categorical"
    pymc_ops = ("categorical",)

    def __init__(self, k: int | None = None, **family_args: Any) -> None:
        if family_args:
            raise ValueError(f"family 'categorical' takes only k, got unknown argument(s) {sorted(family_args)}.")
        if k is None:
            raise ValueError("family 'categorical' needs the number of categories: pass k=<int>.")
        self.k = check_categories(k, self.name)

    def family_args(self) -> dict[str, Any]:
        return {"k": self.k}

    # ------------------------------------------------------------------ data side
    def invalid(self, x: Any) -> Any:
        """Records that are not an integer in {0, …, k − 1} (NaN and ±inf included)."""
        return ~((x >= 0) & (x <= self.k - 1) & (x == np.floor(x)))

    def default_record(self, bounds: Mapping[str, Any]) -> float:
        """Category 0: what a malformed record is replaced by."""
        return 0.0

    def statistic_names(self, neighbouring: str) -> tuple[str, ...]:
        return tuple(f"count_{j}" for j in range(self.k))

    def record_statistics(self, x: Any, neighbouring: str) -> Any:
        """One-hot rows, shape (N, k) (array operations, so Dask arrays stay lazy)."""
        return (x[:, None] == np.arange(self.k)).astype(float)

    def sensitivity(self, bounds: Mapping[str, Any], neighbouring: str) -> float:
        """2 under replace (one count down by 1, another up by 1), 1 under add/remove (one count ±1)."""
        return 2.0 if neighbouring == "replace" else 1.0

    def project(self, noisy: np.ndarray, n: int | None, bounds: Mapping[str, Any], neighbouring: str) -> np.ndarray:
        """Replace: Euclidean projection onto {c ≥ 0, Σc = N}. Add/remove: clip the counts at 0."""
        noisy = np.asarray(noisy, dtype=float)
        if neighbouring == "replace":
            return project_to_simplex(noisy, float(n))
        return np.maximum(noisy, 0.0)

    def n_from_statistics(self, values: np.ndarray, neighbouring: str) -> float:
        """N = Σ_j c_j under add/remove."""
        if neighbouring != "add_remove":
            return super().n_from_statistics(values, neighbouring)
        return float(np.sum(values))

    # ------------------------------------------------------------------ model side
    def loglik(self, values: Any, n: Any, params: Mapping[str, Any]) -> Any:
        """``Σ_j c_j log p_j`` (``n`` is not needed: the counts already sum to it)."""
        return count_loglik(values, params["p"])

    supports_noise_aware = True
    one_hot_counts = True

    def record_moments(self, params: Mapping[str, Any], bounds: Mapping[str, Any] | None = None) -> tuple[Any, Any]:
        """One record's one-hot vector: mean p, covariance ``diag p − p pᵀ`` (for the CLT form above the exact sum's limit)."""
        return count_moments(params["p"], 1)

    truncation_examples = {"p": "0.01 (every probability ≥ 0.01)"}

    def loglik_sensitivity(self, ranges: Mapping[str, Any], bounds: Mapping[str, Any]) -> tuple[float, str]:
        """Δ = log(hi / lo), every category probability in [lo, hi] (see :func:`histogram_loglik_sensitivity`)."""
        return histogram_loglik_sensitivity(self, ranges, 1)

    @classmethod
    def from_dist(cls, dist: Any) -> tuple["Categorical", dict[str, Any]]:
        """``pm.Categorical.dist(p=p)`` with p of static length k → ``(Categorical(k=k), {"p": p})``.

        Raises
        ------
        ValueError
            For another distribution, a p of unknown length, or per-record p vectors.
        """
        if rv_op_name(dist) not in cls.pymc_ops:
            raise ValueError(f"expected a Categorical distribution, got {rv_op_name(dist)!r}.")
        (p,) = dist_params(dist)
        k, p = probability_vector(p, "categorical")
        return cls(k=k), {"p": p}

    def conjugate_posterior(self, values: np.ndarray, n: float, *, alpha: Any = 1.0) -> dict[str, np.ndarray]:
        """Dirichlet(alpha) prior ⇒ Dirichlet(alpha + counts) (``alpha`` a scalar or k values)."""
        return dirichlet_posterior(values, alpha)
