"""The noise-aware likelihood when N is private (add/remove-one): the number of records a latent variable.

Under add/remove neighbouring the number of records N is private. It is released with the
statistics, as a coordinate of its own (a Normal's ``(Σ(x − c), Σ(x − c)², N)``, an
Exponential's ``(Σ(x − c), N)``, a Poisson's ``(Σx, N)``, a regression's products and N) or
implicitly, as counts that sum to it (a Bernoulli's successes and failures, a histogram).
The likelihood of the release must treat N as unknown: it becomes a latent variable of the
model, ``<y>_n_records``, with a flat prior on (0, ∞), sampled with the parameters. It
depends on the release alone, so it is released with the trace. It is sampled as
``u = log(N / N̂)`` (``<y>_n_records_log_ratio``, flat, with the Jacobian of N's flat prior
added to the likelihood), N̂ the count estimated from the release, a shared input: every
release starts at u = 0, so a second release of the same model has the same graph and initial
point, and reuses the compiled sampler.

* **N released on its own.** Given N the sums are the replace-one central-limit release
  ``Normal(N·m, N·C)`` (one record's moments m, C), and the count coordinate is N plus its
  noise: ``p(z | θ, N) = p(z_sums | θ, N) · Laplace(z_N − w_N·N; b)``. N is treated as a
  positive real (the central limit already treats the sums as continuous), so its posterior
  is that of N, and the sums keep the closed-form (one sum) or quadrature (two sums)
  convolutions of the replace-one likelihood, without noise-mixing variables.
* **N implicit in counts.** Conditioning on N would make the counts singular (they sum to
  it), so N is Poissonised instead: ``N ~ Poisson(λ)`` with λ flat on (0, ∞). Since
  ``∫ Poisson(N; λ) dλ = 1`` for every N, the prior on N is flat and the parameters'
  posterior is unchanged (a change of variables of the prior, not an approximation). The
  counts summed over a Poisson number of records form a compound Poisson sum, mean
  ``λ·E[s]`` and covariance ``λ·E[s sᵀ]`` (the raw second moment ``C + m mᵀ``), never
  singular; for one-hot records (Bernoulli, Categorical) they are independent Poisson(λ p_j)
  counts, each convolved with its own noise in closed form. λ's posterior is N's, widened by
  the Poisson spread √N.

The central limit needs every expected count (λ·p_j, or N) to be at least about 10.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from .release_design import ReleaseDesign, design_input, identity_design

__all__ = [
    "latent_count_noise_aware_logp", "latent_count_mixing_size", "latent_record_count", "record_count_name",
    "log_ratio_name", "initial_record_count", "noise_moment_matched", "moment_matching_applies", "LatentCount", "count_through_its_noise",
]


def record_count_name(name: str) -> str:
    """Name of the latent number of records of the observed variable ``name`` (add/remove releases)."""
    return f"{name}_n_records"


def log_ratio_name(count_name: str) -> str:
    """Name of the free variable u = log(N / N̂) behind the latent count ``count_name``."""
    return f"{count_name}_log_ratio"


def initial_record_count(stats: Any) -> float:
    """Where the latent number of records starts: the count estimated from the release (public), at least 1."""
    return max(float(stats.n), 1.0)


def latent_record_count(stats: Any, log_ratio: Any) -> Any:
    """N = N̂·e^u: the latent count from u (``log_ratio``), N̂ the release's estimate as a shared input."""
    import pytensor.tensor as pt

    from ._noise_aware import released_scalar

    return released_scalar(initial_record_count(stats), "n_estimate") * pt.exp(log_ratio)


def count_through_its_noise(stats: Any) -> bool:
    """Whether the latent count is sampled through its own noise: N released alone with Laplace noise.

    The count's Laplace density has a kink at its mode; written in N, the posterior has it too, and NUTS, whose
    steps assume a smooth gradient, takes small ones across it (a 20-group regression: 50 gradient evaluations
    a draw, against 7 without the kink). Sampled as the noise's normal score instead
    (:class:`LatentCount`), the same posterior is smooth: the count's term of the likelihood becomes the
    score's Normal(0, 1) prior, exactly.
    """
    return (not getattr(stats, "n_is_public", False) and stats.mechanism != "gaussian"
            and stats.family.count_released_alone(stats.neighbouring))


#: The largest |normal score| of the count's noise: Φ(−37) is below the smallest double.
_SCORE_LIMIT = 37.0


class LatentCount:
    """How the latent number of records N of one add/remove release is sampled: one flat free variable v.

    * N released alone with Laplace noise (:func:`count_through_its_noise`): v is the count noise's normal
      score. With the release's count r = w·N + Laplace(b) read as N̂ = r/w and s = b/w (records per unit of
      noise), N's posterior from the count alone (flat prior on (0, ∞)) is N̂ − s·L, L standard Laplace
      truncated to L < N̂/s. Writing L = Q(η), Q the Laplace quantile of the normal CDF (``Q = F_L⁻¹∘Φ``,
      smooth, with a continuous derivative), η has the Normal(0, 1) density on η < η_max = Φ⁻¹(F_L(N̂/s)), the
      count's term exactly; v maps to η by η = η_max − softplus(η_max − v) (the identity well below the
      bound), its Jacobian in :meth:`log_prior`. The likelihood then leaves out the count's own term.
    * Otherwise v = u = log(N / N̂), N̂ the estimate (:func:`latent_record_count`), with the Jacobian of N's
      flat prior.

    Every release starts at v = 0 and its numbers are shared inputs, so that the compiled sampler of one
    release serves the next.
    """

    def __init__(self, stats: Any) -> None:
        self.stats = stats
        self.through_noise = count_through_its_noise(stats)
        self._inputs: tuple[Any, Any, Any] | None = None

    def free_name(self, count_name: str) -> str:
        """The free variable's name: ``<count>_noise`` (the normal score) or ``<count>_log_ratio``."""
        return f"{count_name}_noise" if self.through_noise else log_ratio_name(count_name)

    def numbers(self) -> tuple[float, float, float]:
        """(N̂, s, η_max) of a count released alone with Laplace noise (class docstring), from the release."""
        import math

        from scipy.stats import norm

        from ._noise_aware import laplace_equivalent_scale

        released = _released(self.stats)
        design = self.stats.design
        weight = 1.0 if design is None else float(design.weights[-1])
        spread = float(laplace_equivalent_scale(float(self.stats.scale), self.stats.mechanism)) / weight
        estimate = float(released[-1]) / weight
        q = estimate / spread  # Φ⁻¹(F_L(q)), computed on the side of q's tail
        bound = norm.isf(0.5 * math.exp(-q)) if q >= 0 else norm.ppf(0.5 * math.exp(q))
        return estimate, spread, float(np.clip(bound, -_SCORE_LIMIT, _SCORE_LIMIT))

    def _score(self, free: Any) -> tuple[Any, Any]:
        import pytensor.tensor as pt

        from ._noise_aware import released_scalar

        if self._inputs is None:  # once: shared inputs with repeated names would keep nutpie from reusing a compile
            self._inputs = tuple(released_scalar(v, f"n_noise_{k}")
                                 for k, v in zip(("estimate", "spread", "bound"), self.numbers()))
        estimate, spread, bound = self._inputs
        gap = bound - free
        return bound - pt.softplus(gap), (estimate, spread, gap)

    def count(self, free: Any) -> Any:
        """N from the free variable."""
        if not self.through_noise:
            return latent_record_count(self.stats, free)
        eta, (estimate, spread, _) = self._score(free)
        return estimate - spread * laplace_score_quantile(eta)

    def log_prior(self, free: Any) -> Any:
        """The free variable's log density: N's flat prior (and, through the noise, the count's own term)."""
        import pytensor.tensor as pt

        if not self.through_noise:
            return free  # the Jacobian dN/du = N, up to a constant
        eta, (_, _, gap) = self._score(free)
        return -0.5 * pt.square(eta) - pt.softplus(-gap)  # Normal(0, 1) in η, times dη/dv = sigmoid(η_max − v)


def laplace_score_quantile(eta: Any) -> Any:
    """``Q(η) = F_L⁻¹(Φ(η))``, the standard Laplace quantile of a normal score, stable in both tails.

    For η ≥ 0, ``Q = −log(2Φ(−η)) = η²/2 − log erfcx(η/√2)``; Q is odd. Its derivative is continuous (√(2/π)
    at 0), so a sampler's gradient has no kink.
    """
    import pytensor.tensor as pt

    def tail(a: Any) -> Any:
        return 0.5 * pt.square(a) - pt.log(pt.erfcx(a / np.sqrt(2.0)))

    return pt.switch(eta >= 0, tail(eta), -tail(-eta))


def _released_record_moments(family: Any, design: ReleaseDesign, params: Mapping[str, Any],
                             bounds: Mapping[str, Any] | None) -> tuple[Any, Any, Any]:
    """Mean, covariance and the linear map to the released coordinates of one record's statistic.

    The statistic is in the coordinates the map ``M`` takes to the released ones (before the
    weights): the shifted records' statistic where the design centres by a shift (M the
    design's ``mix``, or the identity), else the family's own statistic (M the design's
    transform). A count coordinate (1, variance 0) is appended where N is released on its own
    (M keeps it last).
    """
    import pytensor.tensor as pt

    d = design.weights.size
    moments = None
    if design.shift is not None:
        moments = family.shifted_record_moments(params, bounds, design_input(design.shift, "shift"))
    if moments is not None:
        mean, cov = moments
        to_released = None if design.mix is None else design_input(design.mix, "mix")
    else:
        mean, cov = family.add_remove_record_moments(params, bounds)
        to_released = None if np.array_equal(design.transform, np.eye(d)) else design_input(design.transform, "transform")
    mean = pt.as_tensor_variable(mean)
    cov = pt.as_tensor_variable(cov)
    if mean.type.ndim == 0:
        mean, cov = mean[None], pt.reshape(cov, (1, 1))
    if family.count_released_alone("add_remove"):  # N released as the last coordinate: each record adds exactly 1
        mean = pt.concatenate([mean, pt.ones((1,), dtype="float64")])
        cov = pt.concatenate([pt.concatenate([cov, pt.zeros((d - 1, 1), dtype="float64")], axis=1),
                              pt.zeros((1, d), dtype="float64")], axis=0)
    elif mean.type.shape[-1] != d:
        raise ValueError(
            f"the {family.name} family's record moments have {mean.type.shape[-1]} coordinates, but the release has {d}."
        )
    return mean, cov, to_released


def noise_moment_matched(stats: Any) -> bool:
    """Whether the Laplace noise on the released sums is moment-matched by a Normal of its variance.

    Decided from public numbers only, as :func:`pymc_dp.observe_bounded_sum` decides it: for a
    release of more than two sums beside its count whose design gives reference variances v_j (one
    record's variance of centred coordinate j, uniform on the declared box), when the noise
    variance ``2 (b/w_j)²`` of the median moving sum is below its sampling variance ``N̂·v_j``
    (N̂ the count estimated from the release). The sum of a wider Normal and the Laplace noise is
    then close to Normal, and the likelihood ``Normal(m, C + 2I)`` (at unit noise) needs no
    noise-mixing variables, whose funnels make NUTS take small steps (a 20-group regression at
    N = 10⁵: 174 s against 41 s). Where the noise dominates, the exact scale mixture is kept.
    ``stats.moment_matched``, where set, decides instead (a hierarchy's groups are moment-matched
    wherever :func:`moment_matching_applies`: :func:`pymc_dp.model.privatize_model.together`).
    """
    if getattr(stats, "moment_matched", None) is not None:
        return bool(stats.moment_matched)
    if not moment_matching_applies(stats):
        return False
    design = stats.design
    sums = int(np.size(stats.noisy)) - 1
    v = np.asarray(design.reference_variances, dtype=float)[:sums]
    moving = _moving_sums(stats)
    noise = 2.0 * (float(stats.scale) / design.weights[moving]) ** 2
    return bool(np.median(noise / (initial_record_count(stats) * v[moving])) < 1.0)


def moment_matching_applies(stats: Any) -> bool:
    """Whether the release has the form the moment-matched likelihood is written for: Laplace noise on more than
    two sums (some of them moving) beside a count released alone, with a design that gives the sums' reference
    variances. Public numbers only; whether the noise is small enough is :func:`noise_moment_matched`'s question."""
    design = getattr(stats, "design", None)
    if stats.mechanism == "gaussian" or design is None or design.reference_variances is None:
        return False
    if not stats.family.count_released_alone(stats.neighbouring):
        return False
    return int(np.size(stats.noisy)) - 1 > 2 and _moving_sums(stats).size > 0


def _moving_sums(stats: Any) -> np.ndarray:
    design = stats.design
    sums = int(np.size(stats.noisy)) - 1
    v = np.asarray(design.reference_variances, dtype=float)[:sums]
    return np.array([j for j in range(sums) if v[j] > 0 and j not in design.zero_coordinates], dtype=int)


def latent_count_mixing_size(stats: Any) -> int:
    """How many noise-mixing variables the add/remove likelihood of ``stats`` needs (see the module docstring).

    N released on its own: one per released sum when there are more than two sums, unless the noise is
    moment-matched (:func:`noise_moment_matched`); counts that sum to N: none for one-hot counts
    (independent), else one per count above two.
    """
    released = int(np.size(stats.noisy))
    if stats.mechanism == "gaussian" or noise_moment_matched(stats):  # closed form: no mixing variables
        return 0
    if stats.family.count_released_alone(stats.neighbouring):
        return released - 1 if released - 1 > 2 else 0
    return 0 if stats.family.one_hot_counts or released <= 2 else released


def latent_count_noise_aware_logp(stats: Any, params: Mapping[str, Any], count: Any, noise_mixing: Any = None) -> Any:
    """log p(released | θ, N) of an add/remove release, N (or its Poisson rate λ) latent (see the module docstring).

    Parameters
    ----------
    stats
        The :class:`~pymc_dp.families.PrivateStatistics` of an add/remove release.
    params
        The family's parameters (model variables).
    count
        The latent number of records N — or, for counts that sum to N, its Poisson rate λ — a
        positive model variable with a flat prior.
    noise_mixing
        The latent noise-mixing variables, :func:`latent_count_mixing_size` of them.

    The released vector z (every coordinate with noise of scale b; a discrete Laplace noise is
    modelled by the continuous Laplace of the same variance) is divided by b, so that its noise
    is unit Laplace, and the Jacobian ``d·log b`` is subtracted.
    """
    import pytensor.tensor as pt

    from ._noise_aware import clt_noise_aware_logp, normal_laplace_logpdf

    family = stats.family
    scaled, m, c, jacobian = scaled_release_moments(stats, params, count)
    d = _released(stats).size
    alone = family.count_released_alone(stats.neighbouring)
    if stats.mechanism == "gaussian":  # unit Gaussian noise on every coordinate: Normal(m, c + I), the count's row included
        from .release_design import gaussian_noise_logp

        return gaussian_noise_logp(scaled, m, c) - jacobian
    if alone:  # the sums given N, times the count's own noise (unit Laplace at this scale)
        sums = d - 1
        if sums == 1:
            given_n = normal_laplace_logpdf(scaled[0], m[0], pt.sqrt(c[0, 0]), 1.0)
        elif noise_moment_matched(stats):  # unit Laplace noise, variance 2, moment-matched
            from .release_design import gaussian_noise_logp

            given_n = gaussian_noise_logp(scaled[:sums], m[:sums], c[:sums, :sums], noise_variance=2.0)
        else:
            given_n = clt_noise_aware_logp(family.name, scaled[:sums], 1.0, 1.0, "replace", m[:sums], c[:sums, :sums],
                                           noise_mixing)
        # the count's own Laplace term, unless the count is sampled through its noise (LatentCount): there it is
        # the noise score's prior
        logp = given_n if count_through_its_noise(stats) else given_n - pt.abs(scaled[sums] - m[sums]) - np.log(2.0)
    elif family.one_hot_counts:  # independent Poisson(λ p_j) counts, each with its own noise
        logp = pt.sum(normal_laplace_logpdf(scaled, m, pt.sqrt(pt.diagonal(c)), 1.0))
    else:  # N is modelled (by λ), so the central-limit likelihood is the replace-one one at unit noise
        logp = clt_noise_aware_logp(family.name, scaled, 1.0, 1.0, "replace", m, c, noise_mixing)
    return logp - jacobian


def _released(stats: Any) -> np.ndarray:
    return np.asarray(stats.released if stats.released is not None else stats.noisy, dtype=float).ravel()


def scaled_release_moments(stats: Any, params: Mapping[str, Any], count: Any) -> tuple[Any, Any, Any, Any]:
    """The release at unit noise and the central-limit moments of its sums, for :func:`latent_count_noise_aware_logp`.

    Returns ``(z, m, c, jacobian)``: the released vector divided by the noise scale b (a shared input), the
    mean ``N·w∘(M m₁)/b`` and covariance ``N·(w wᵀ)∘(M C₁ Mᵀ)/b²`` of the released sums given N (one
    record's moments m₁, C₁ in the design's coordinates; for counts that sum to N, the compound Poisson
    sum's: C₁ + m₁m₁ᵀ), and ``d·log b``, the Jacobian of the division.
    """
    import pytensor.tensor as pt

    from ._noise_aware import laplace_equivalent_scale, released_values

    family = stats.family
    released = _released(stats)
    design = stats.design if stats.design is not None else identity_design(float(stats.sensitivity), released.size)
    scale = float(laplace_equivalent_scale(float(stats.scale), stats.mechanism))
    d = released.size
    alone = family.count_released_alone(stats.neighbouring)
    mean, cov, to_released = _released_record_moments(family, design, params, stats.bounds)
    second = cov if alone else cov + pt.outer(mean, mean)  # given N; or E[s sᵀ], a compound Poisson sum's
    if to_released is not None:
        mean, second = pt.dot(to_released, mean), pt.dot(pt.dot(to_released, second), to_released.T)
    numbers = design_input(np.array([1.0 / scale, d * np.log(scale)]), "scalars")
    weights = design_input(design.weights, "weights")
    per_unit = count * numbers[0]  # N/b (or λ/b)
    m = per_unit * weights * mean
    c = per_unit * numbers[0] * (pt.outer(weights, weights) * second)
    return released_values(released / scale), m, c, numbers[1]
