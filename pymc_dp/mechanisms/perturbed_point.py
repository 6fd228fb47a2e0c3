"""A logistic likelihood's score and information at a point found by objective perturbation (one release pair).

The mechanism behind the measurements route's objective engine (:mod:`pymc_dp.model.objective_point`), on arrays:

1. the point φ_p: :func:`~pymc_dp.mechanisms.objective_perturbation_logistic` on the design rows z_i (each within
   L2 norm ``bound``, public) and labels, at ``point_entry.epsilon`` with the ridge ``regularisation``; its
   stationarity gives the records' score at φ_p as ``N Λ R² φ_p`` up to the noise R b;
2. the information at φ_p: each record's upper triangle of σ'(z_iᵀφ_p) z_i z_iᵀ (``information_terms(φ_p)``),
   projected onto ``kept`` (the entries some record can make non-zero) and clipped at ``information_clip(φ_p)``
   in L1 norm (a public function of the point), summed, with Laplace noise of scale ``2 C / ε_I``
   (replace-one: a record moves the sum by at most 2C).

The two releases compose sequentially (the clip and the point are functions of the first release). Each entry
is recorded in ``ledger`` as soon as its noise is drawn: a failure after the point's noise vector was drawn (its
minimisation, the clip, the information) still records the point, a failure before it nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from .logistic_regression import objective_perturbation_logistic
from .noise import NoiseSource
from .private_newton import clip_rows_l1

if TYPE_CHECKING:  # pragma: no cover
    from ..accounting import LedgerEntry, PrivacyLedger

__all__ = ["PerturbedPoint", "perturbed_point_release"]


@dataclass(frozen=True)
class PerturbedPoint:
    """What :func:`perturbed_point_release` released, and the public numbers that read it."""

    point: np.ndarray
    #: the records' score at the point up to the noise: N Λ R² φ_p
    score: np.ndarray
    #: the noisy information's upper triangle (entries outside ``kept`` exactly 0)
    information: np.ndarray
    epsilon_prime: float
    ridge: float
    information_scale: float
    information_clip: float
    recorded: tuple
    #: records whose information term was clipped (curator only)
    clipped: int = 0


class _Watched(NoiseSource):
    """A noise source that remembers whether it has drawn (so that a failure after the draw is charged)."""

    def __init__(self, inner: NoiseSource):
        self.inner, self.name, self.drawn = inner, inner.name, False

    def _mark(self, values: Any) -> Any:
        self.drawn = True
        return values

    def laplace(self, scale: float, size: Any) -> np.ndarray:
        return self._mark(self.inner.laplace(scale, size))

    def gaussian(self, sigma: float, size: Any) -> np.ndarray:
        return self._mark(self.inner.gaussian(sigma, size))

    def discrete_laplace(self, scale: float, size: Any) -> np.ndarray:
        return self._mark(self.inner.discrete_laplace(scale, size))

    def gumbel_argmax(self, scores: Any, scale: float) -> int:
        return self._mark(self.inner.gumbel_argmax(scores, scale))

    def randomized_response(self, indices: np.ndarray, num_categories: int, truth_probability: float) -> np.ndarray:
        return self._mark(self.inner.randomized_response(indices, num_categories, truth_probability))

    def add_laplace(self, value: np.ndarray, scale: float) -> np.ndarray:
        return self._mark(self.inner.add_laplace(value, scale))


def perturbed_point_release(
    design: np.ndarray, outcomes: np.ndarray, *, bound: float, regularisation: float,
    point_entry: "LedgerEntry", information_entry: "LedgerEntry",
    information_terms: Callable[[np.ndarray], Any], information_clip: Callable[[np.ndarray], float],
    kept: np.ndarray, ledger: "PrivacyLedger", source: Any,
) -> PerturbedPoint:
    """Release the point and the information there (module docstring). ``information_terms(point)`` yields chunks of
    the records' information upper triangles at ``point``; ``point_entry`` and ``information_entry`` are the
    reserved entries, recorded in ``ledger`` as their noise is drawn (their ε is what is spent)."""
    from ..accounting import PrivacyLedger

    scratch, watched = PrivacyLedger(neighbouring=ledger.neighbouring), _Watched(source)
    try:
        released = objective_perturbation_logistic(design, outcomes, epsilon=point_entry.epsilon,
                                                   feature_l2_bound=bound, ledger=scratch, rng=watched,
                                                   regularisation=regularisation)
    except BaseException:
        if watched.drawn:  # the noise vector was drawn (the minimisation failed after it): that is spent
            ledger.record(replace(point_entry, noise_source=source.name))
        raise
    (drawn,) = scratch.entries
    ridge = float(drawn.details["regularisation"] + drawn.details["extra_ridge"])
    epsilon_prime = float(drawn.details["epsilon_prime"])
    recorded = [ledger.record(replace(point_entry, noise_source=drawn.noise_source, details={
        **point_entry.details, "feature_l2_bound": float(bound), "ridge (on x / bound)": ridge,
        "epsilon_prime": epsilon_prime}))]
    point = np.asarray(released.weights, dtype=float)
    clip = float(information_clip(point))
    total, clipped = np.zeros(int(np.size(kept))), 0
    for infos in information_terms(point):
        infos, moved = clip_rows_l1(np.asarray(infos, dtype=float) * kept, clip)
        total += infos.sum(axis=0)
        clipped += moved
    scale = 2.0 * clip / information_entry.epsilon
    noisy = np.zeros_like(total)
    noisy[kept] = source.add_laplace(total[kept], scale)
    recorded.append(ledger.record(replace(information_entry, noise_source=source.name, details={
        **information_entry.details, "information clip (L1, per record)": clip, "information noise scale": scale})))
    score = len(outcomes) * ridge * float(bound) ** 2 * point
    return PerturbedPoint(point, score, noisy, epsilon_prime, ridge, scale, clip, tuple(recorded), clipped)
