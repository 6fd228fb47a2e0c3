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
    "log_ratio_name", "initial_record_count", "noise_moment_matched",
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
    ``stats.moment_matched``, where set, decides instead (a hierarchy's groups decide together).
    """
    if getattr(stats, "moment_matched", None) is not None:
        return bool(stats.moment_matched)
    design = getattr(stats, "design", None)
    if stats.mechanism == "gaussian" or design is None or design.reference_variances is None:
        return False
    if not stats.family.count_released_alone(stats.neighbouring):
        return False
    sums = int(np.size(stats.noisy)) - 1
    v = np.asarray(design.reference_variances, dtype=float)[:sums]
    moving = np.array([j for j in range(sums) if v[j] > 0 and j not in design.zero_coordinates], dtype=int)
    if sums <= 2 or moving.size == 0:
        return False
    noise = 2.0 * (float(stats.scale) / design.weights[moving]) ** 2
    return bool(np.median(noise / (initial_record_count(stats) * v[moving])) < 1.0)


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
        logp = given_n - pt.abs(scaled[sums] - m[sums]) - np.log(2.0)
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
