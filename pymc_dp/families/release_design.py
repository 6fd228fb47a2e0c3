"""How a family's statistics are released: centred on public constants, ε divided between them.

The Laplace route releases a family's summed statistic ``S = Σᵢ s(xᵢ)``. Adding one
Laplace noise of scale Δ/ε to every coordinate, Δ the joint L1 sensitivity of S, spends
the budget badly when the coordinates differ in scale: for a Normal on ages in [18, 80]
the pair (Σx, Σx²) has Δ = 6,138, dominated by Σx², so Σx — all the mean needs, with a
sensitivity of 62 — gets a hundred times the noise it would get alone.

A :class:`ReleaseDesign` fixes both faults with public constants only:

* **centring**: an affine map of the record's statistic, ``s̃(x) = A s(x) + a``, e.g.
  ``(x − c, (x − c)²)`` with c the bounds' midpoint, whose coordinates have far smaller
  ranges (for ages: 62 and 31² = 961, against 62 and 6,076);
* **division of ε**: each centred coordinate j is multiplied by a weight ``w_j > 0``, and
  the weighted vector ``y = w ⊙ Σᵢ s̃(xᵢ)`` is released with one Laplace mechanism of
  sensitivity ``Δ_w = max over neighbouring data of ‖Δy‖₁``. The noise on coordinate j
  of S̃ then has scale ``Δ_w / (w_j ε)``: coordinate j receives, in effect, the share
  ``w_j Δ_j / Δ_w`` of ε (Δ_j its own sensitivity). The shares sum to one when a single
  pair of records can move every coordinate by its full range, and to more when none can
  (the Normal's sum to 1.30 on ages: the exact ``Δ_w`` collects that slack). One
  mechanism, one ledger entry, ε-DP exactly as computed.

The weights minimise, over the (public) weights, the sum of the noise-to-sampling
variance ratios of the coordinates,

``Σ_j Var(noise_j) / (N · v_j) ∝ Δ_w(w)² · Σ_j 1 / (w_j² v_j)``,

``v_j`` being the variance of one record's centred statistic under a public reference
distribution (uniform on the declared box): the factor by which the noise widens each
coordinate's contribution to the posterior, summed. They depend on the bounds alone — not
on the records, N or ε — and are recorded in the ledger entry with the centring.

Everything after the release is post-processing: the statistics in the family's own
coordinates are ``S = A⁻¹(z / w − N a)`` (N public), and the noise-aware likelihood
models the released ``z`` directly (:func:`designed_noise_aware_logp`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
from scipy.optimize import minimize_scalar

__all__ = [
    "ReleaseDesign", "identity_design", "optimal_weights", "centred_add_remove_design", "centred_noise_aware_logp",
    "designed_noise_aware_logp", "design_input", "preferred_noise", "GAUSSIAN_GAIN_REQUIRED",
]


@dataclass(frozen=True)
class ReleaseDesign:
    """A public affine re-parametrisation of a family's statistic and its weights (see the module docstring).

    Attributes
    ----------
    transform
        The d×d matrix A of the centring (invertible).
    offset
        The per-record offset a (length d).
    weights
        The weights w (length d, positive) multiplying the centred sums before the noise.
    sensitivity
        Δ_w: the L1 sensitivity of the released vector ``w ⊙ (A S + N a)``.
    description
        What was done, for the ledger (e.g. ``"centred on 49; weights ..."``); empty for
        the identity design.
    shift
        When the centring is a shift of the records themselves (``s(x − c) = A s(x) + a``,
        as for a Normal's (x, x²)): c, broadcast against the records; else None.
    """

    transform: np.ndarray
    offset: np.ndarray
    weights: np.ndarray
    sensitivity: float
    description: str = ""
    shift: Any = None
    #: With ``shift``: a matrix M applied to the sums of the shifted records before the weights, when the
    #: released coordinates are combinations of them (``A S + N a = M Σ s(x − shift)``); None for the identity.
    mix: Any = None
    #: The noise the weights were chosen for: ``"laplace"`` (``sensitivity`` is the L1 Δ_w) or ``"gaussian"``
    #: (``sensitivity`` is the L2 sensitivity of the weighted vector; released at (ε, δ), δ > 0).
    noise: str = "laplace"
    #: The reference variances v_j of the weights' objective (module docstring), where the family gives them:
    #: what :func:`preferred_noise` compares the two noises by. None: not comparable (Laplace is used).
    reference_variances: Any = None
    #: The v_j the weights were chosen by, where not the reference variances (a regression's, 1/importance of each
    #: coordinate to the parameters: :mod:`pymc_dp.families._regression_importance`); what :meth:`noise_cost` reads.
    objective_variances: Any = None
    #: Released coordinates that are 0 for every data set (a regression's Σk² − k²N under add/remove): set to
    #: exactly 0, since computed in floating point they would carry a rounding error that is a function of N.
    zero_coordinates: tuple[int, ...] = ()

    def released_from_centred(self, centred_sums: np.ndarray) -> np.ndarray:
        """The exact released vector ``w ⊙ (M Σ s(x − shift))`` from the sums of the shifted records."""
        centred = np.asarray(centred_sums, dtype=float).ravel()
        return self._zeroed(self.weights * (centred if self.mix is None else self.mix @ centred))

    def _zeroed(self, released: np.ndarray) -> np.ndarray:
        """``released`` with the :attr:`zero_coordinates` set to exactly 0."""
        if self.zero_coordinates:
            released = released.copy()
            released[list(self.zero_coordinates)] = 0.0
        return released

    def centred_records(self, records: Any) -> Any:
        """The records moved by the public ``shift`` (when the family's centring is a shift of the records).

        Then ``s(x − shift) = A s(x) + a`` exactly, and the centred sums are computed from the
        shifted records rather than as ``A S + N a`` (which, far from zero, would lose digits
        to cancellation).
        """
        return records if self.shift is None else records - self.shift

    def checked(self, declared: str) -> "ReleaseDesign":
        """This design, if every number of it is finite (weights positive, Δ_w positive); else a ValueError.

        Called from the bounds alone, before any record is read, so that a design that cannot be
        released (bounds too wide for double precision) is refused the same way whatever the records.
        """
        numbers = np.concatenate([self.transform.ravel(), self.offset, self.weights, [self.sensitivity]])
        if np.all(np.isfinite(numbers)) and np.all(self.weights > 0) and self.sensitivity > 0:
            return self
        raise ValueError(
            f"{declared} are too wide or too narrow for a release in double precision (its centred products or their "
            "weights overflow); rescale the data (e.g. to other units) and the bounds with them."
        )

    @property
    def is_identity(self) -> bool:
        """Whether the release is of S itself, with one noise scale (the design before centring existed)."""
        d = self.weights.size
        return bool(np.array_equal(self.transform, np.eye(d)) and not self.offset.any() and np.all(self.weights == 1.0))

    def forward(self, statistics: np.ndarray, n: float) -> np.ndarray:
        """The released coordinates ``w ⊙ (A S + N a)`` of exact statistics S of n records."""
        s = np.asarray(statistics, dtype=float).ravel()
        return self._zeroed(self.weights * (self.transform @ s + n * self.offset))

    def backward(self, released: np.ndarray, n: float) -> np.ndarray:
        """The family's statistics ``A⁻¹(z / w − N a)`` of released coordinates z (post-processing)."""
        z = np.asarray(released, dtype=float).ravel()
        return np.linalg.solve(self.transform, z / self.weights - n * self.offset)

    def noise_scale(self, epsilon: float, delta: float = 0.0) -> float:
        """The noise scale on the released (weighted) coordinates: Laplace ``Δ_w/ε``, or the analytic Gaussian's σ."""
        if self.noise == "gaussian":
            from ..mechanisms.gaussian import analytic_gaussian_sigma

            return float(analytic_gaussian_sigma(float(epsilon), float(delta), self.sensitivity))
        return self.sensitivity / float(epsilon)

    def coordinate_scales(self, epsilon: float, delta: float = 0.0) -> np.ndarray:
        """The noise scale on each centred coordinate of S̃: ``Δ_w / (w_j ε)`` (Laplace), ``σ / w_j`` (Gaussian)."""
        return self.noise_scale(epsilon, delta) / self.weights

    def noise_cost(self, epsilon: float, delta: float = 0.0) -> float:
        """The weights' objective at (ε, δ): ``Σ_j Var(noise_j) / v_j`` over the coordinates with a sensitivity
        (v_j the :attr:`objective_variances` where given).

        The summed noise-to-sampling variance ratio (up to the common factor 1/N) of the module
        docstring; comparable between a Laplace and a Gaussian design of the same statistics.
        Needs :attr:`reference_variances`.
        """
        if self.reference_variances is None:
            raise ValueError("this design has no reference variances to compare noises by.")
        per_unit = 2.0 if self.noise == "laplace" else 1.0  # Var Laplace(b) = 2b², Var N(0, σ²) = σ²
        variances = per_unit * self.coordinate_scales(epsilon, delta) ** 2
        v = np.asarray(self.reference_variances if self.objective_variances is None else self.objective_variances,
                       dtype=float)
        moving = self.weights < 1e7  # public coordinates carry a weight of 1e8 and no sensitivity
        return float(np.sum(variances[moving] / v[moving]))

    def ledger_details(self, names: tuple[str, ...], epsilon: float, delta: float = 0.0) -> dict[str, Any]:
        """The design as the ledger records it: centring, weights, each coordinate's noise scale and share of ε."""
        if self.is_identity:
            return {}
        scales = self.coordinate_scales(epsilon, delta)
        return {
            "design": self.description,
            "coordinates": list(names),
            "weights": [float(w) for w in self.weights],
            "coordinate_scales": [float(b) for b in scales],
        }


def identity_design(sensitivity: float, size: int) -> ReleaseDesign:
    """S released as it is, with one Laplace noise of scale Δ/ε on every coordinate."""
    return ReleaseDesign(np.eye(size), np.zeros(size), np.ones(size), float(sensitivity))


def optimal_weights(
    weighted_sensitivity: Callable[[np.ndarray], float],
    reference_variances: np.ndarray,
) -> tuple[np.ndarray, float]:
    """Weights minimising ``Δ_w(w)² Σ_j 1/(w_j² v_j)`` (the module docstring's objective), and their Δ_w.

    Only ratios of weights matter (Δ_w is homogeneous of degree one), so the first weight
    is 1. Two coordinates: a bounded scalar search over log(w₂/w₁); more: coordinate
    descent over each log-ratio in turn. ``weighted_sensitivity(w)`` is the exact L1
    sensitivity of ``w ⊙ S̃``; ``reference_variances`` the v_j.
    """
    v = np.asarray(reference_variances, dtype=float)
    d = v.size

    def objective(log_ratios: np.ndarray) -> float:
        w = np.exp(np.concatenate([[0.0], log_ratios]))
        return weighted_sensitivity(w) ** 2 * float(np.sum(1.0 / (w * w * v)))

    # start from the separable optimum w_j ∝ (Δ_j² v_j)^(−1/3) with Δ_j each coordinate's own sensitivity
    singles = np.array([weighted_sensitivity(np.eye(d)[j]) for j in range(d)])
    start = np.log(singles[0] ** 2 * v[0]) / 3.0 - np.log(singles**2 * v) / 3.0
    ratios = start[1:].copy()
    for _ in range(1 if d == 2 else 4):
        for j in range(d - 1):
            def along(t: float, j: int = j) -> float:
                trial = ratios.copy()
                trial[j] = t
                return objective(trial)

            found = minimize_scalar(along, bounds=(ratios[j] - 12.0, ratios[j] + 12.0), method="bounded",
                                    options={"xatol": 1e-6})
            ratios[j] = float(found.x)
    w = np.exp(np.concatenate([[0.0], ratios]))
    w = w / w.max()
    return w, float(weighted_sensitivity(w))


#: How much the released count matters under add/remove, as a reference variance on the unit box
#: (see :func:`centred_add_remove_design`): the mean's term (1/3) alone for a sum, the mean's and
#: the variance's (0.8) combined, 1/(3 + 1.25), with the sum of squares.
_COUNT_REFERENCE = {False: 1.0 / 3.0, True: 1.0 / 4.25}


def centred_add_remove_design(lo: float, hi: float, squares: bool) -> ReleaseDesign:
    """Add/remove-one: (Σ(x − c)[, Σ(x − c)²], N), c the bounds' midpoint, with ε divided between them.

    For a family whose statistic is (Σx[, Σx²], N) under add/remove (``squares``: with Σx²): the
    Normal, and with a sum alone the Exponential and the Gamma with known shape.

    Under add/remove N is private and released with the sums, so the centring is a linear map
    of the released vector itself — (x − c, (x − c)², 1) = A (x, x², 1), no offset — and is
    undone without N: S = A⁻¹(z / w). One record added or removed moves the weighted vector
    by ``w₀|x − c| + w₁(x − c)² + w_N``, so Δ_w = w₀m + w₁m² + w_N, m the centred box's
    half-width as rounded (against ``M + M² + 1``, ``M = max(|lo|, |hi|)``, uncentred).

    The weights minimise the summed noise-to-sampling variance ratio under a uniform
    reference on the box, the count weighed by how its noise reaches the estimates: a
    released N off by δN moves the mean by (mean − c)·δN/N, at most h·δN/N (as Σ(x − c)
    off by h·δN: reference variance (h²/3)/h² = 1/3 on the unit box), and σ² by σ²·δN/N
    (as Σ(x − c)² off by σ²δN: 4h⁴/45 over σ⁴ = h⁴/9, i.e. 0.8).
    """
    centre, half = lo / 2 + hi / 2, hi / 2 - lo / 2
    if not (half > 0.0 and math.isfinite(half * half)):
        raise ValueError(
            f"bounds['x'] = ({lo:g}, {hi:g}) are too wide for a release in double precision (the centred squares "
            "reach beyond 1e308); declare narrower bounds or rescale the data (e.g. to other units)."
        )
    reach = max(abs(lo - centre), abs(hi - centre))  # the centred records' largest magnitude, as rounded
    count_v = _COUNT_REFERENCE[bool(squares)]
    if not squares:
        transform = np.array([[1.0, -centre], [0.0, 1.0]])
        unit, _ = optimal_weights(lambda w: float(w[0] + w[1]), np.array([1.0 / 3.0, count_v]))
        weights = np.array([unit[0], unit[1] * half])
        own = np.array([reach, 1.0])
    else:
        transform = np.array([[1.0, 0.0, -centre], [-2.0 * centre, 1.0, centre * centre], [0.0, 0.0, 1.0]])
        unit, _ = optimal_weights(lambda w: float(w[0] + w[1] + w[2]), np.array([1.0 / 3.0, 4.0 / 45.0, count_v]))
        weights = np.array([unit[0], unit[1] / half, unit[2] * half])
        own = np.array([reach, reach * reach, 1.0])
    weights = weights / weights.max()
    # rounded up by a relative 1e-12: the centred records' squares are computed in floating point
    delta = float(np.dot(weights, own)) * (1.0 + 1e-12)
    shares = weights * own / delta
    description = (
        f"records centred on the bounds' midpoint c = {float(centre)!r}, the count released with the centred sums "
        f"(own sensitivities {', '.join(f'{v:.6g}' for v in own)}); weights "
        f"{', '.join(repr(float(w)) for w in weights)}, weighted sensitivity {delta:.6g}: shares "
        f"{', '.join(f'{v:.3f}' for v in shares)} of ε"
    )
    return ReleaseDesign(transform, np.zeros(transform.shape[0]), weights, delta, description, shift=centre)


#: How much smaller the Gaussian design's noise cost must be for it to be chosen: a gain below 2 % is not
#: worth giving up pure ε-DP for.
GAUSSIAN_GAIN_REQUIRED = 0.98


def preferred_noise(family: Any, bounds: Any, neighbouring: str, epsilon: float, delta: float) -> str:
    """``"gaussian"`` where δ > 0 is allowed and the family's Gaussian design adds less noise, else ``"laplace"``.

    Decided from public numbers only (the bounds, ε, δ): the two designs' :meth:`ReleaseDesign.noise_cost`,
    the summed noise-to-sampling variance ratio their weights minimise. The Gaussian must be at least 2 %
    better (:data:`GAUSSIAN_GAIN_REQUIRED`). A family offers a Gaussian design only where it can win
    (:meth:`~pymc_dp.families.Family.gaussian_release_design`): a release whose L1/L2 sensitivity
    ratio is at most √2 never gains from it (the laplace-route page).
    """
    if not delta:
        return "laplace"
    gaussian = family.gaussian_release_design(bounds, neighbouring)
    if gaussian is None:
        return "laplace"
    laplace = family.release_design(bounds, neighbouring)
    if laplace.reference_variances is None:
        return "laplace"
    gain = gaussian.noise_cost(epsilon, delta) / laplace.noise_cost(epsilon)
    return "gaussian" if gain < GAUSSIAN_GAIN_REQUIRED else "laplace"


def design_input(value: Any, suffix: str) -> Any:
    """A public number of a release design as a named shared float64 input (``release_design_<y>_<suffix>``).

    As a constant it would make every release a new graph, compiled afresh; as a shared input of
    static shape the compiled log density of one release serves the next.
    """
    import pytensor
    import pytensor.tensor as pt

    from .._compat import mark_released
    from ._noise_aware import RELEASE_NAME

    base = RELEASE_NAME.get().replace("released_statistics", "release_design")
    value = np.asarray(value, dtype="float64")
    return pt.specify_shape(mark_released(pytensor.shared(value, name=f"{base}_{suffix}")), value.shape)


def centred_noise_aware_logp(stats: Any, params: Any, noise_mixing: Any = None) -> Any:
    """log p(released | θ) for a centred, weighted release (``stats.design`` not the identity).

    The released vector is ``z = w ⊙ (A S + N a) + e``, e i.i.d. Laplace of scale
    b = ``stats.scale`` on every coordinate, S ≈ Normal(N·m(θ), N·C(θ)) with m, C one
    record's moments (``family.record_moments``). See :func:`designed_noise_aware_logp`.
    """
    from ._noise_aware import released_values

    scaled = released_values(np.asarray(stats.released, dtype=float) / float(stats.scale))
    return designed_noise_aware_logp(stats.family, stats.design, float(stats.n), float(stats.scale), stats.neighbouring,
                                     stats.bounds, params, scaled, noise_mixing)


def designed_noise_aware_logp(family: Any, design: ReleaseDesign, n: float, scale: float, neighbouring: str,
                              bounds: Any, params: Any, scaled_release: Any, noise_mixing: Any = None) -> Any:
    """The noise-aware log-likelihood of a designed release, given the released vector divided by its scale.

    Divided by b, the released z has unit Laplace noise and mean ``(N/b)·w ⊙ (A m + a)``,
    covariance ``(N/b²)·(w wᵀ) ⊙ (A C Aᵀ)``: the central-limit likelihood of
    :func:`~pymc_dp.families._noise_aware.clt_noise_aware_logp` at noise scale 1, minus
    the Jacobian ``d·log b``. ``scaled_release`` is z/b as a PyTensor variable (a shared
    variable, or a ``pm.Data`` container).

    Where the centring is a shift of the records (the Normal, the regression) the centred
    moments are the family's :meth:`~pymc_dp.families.Family.shifted_record_moments`, exact far
    from zero; otherwise A m + a and A C Aᵀ.

    Every other number of the release — N/b, 1/b, A, a, w, the shift — is a shared variable, not a
    constant: a second release of the same model at another N, ε or bounds has the same
    graph, and its compiled log density and gradient are reused.
    """
    import pytensor.tensor as pt

    from ._noise_aware import clt_noise_aware_logp

    d = design.weights.size
    shared = design_input
    numbers = shared(np.array([float(n) / scale, 1.0 / scale, d * np.log(scale)]), "scalars")
    weights = shared(design.weights, "weights")
    # the moments of the centred statistic: at the shifted records where the family can (exact far from zero),
    # else the centring applied to the moments of the statistic itself
    shifted = None if design.shift is None else family.shifted_record_moments(params, bounds, shared(design.shift, "shift"))
    if shifted is not None:
        centred_mean, centred_cov = shifted
        if design.mix is not None:
            mix = shared(design.mix, "mix")
            centred_mean, centred_cov = pt.dot(mix, centred_mean), pt.dot(pt.dot(mix, centred_cov), mix.T)
    else:
        transform, offset = shared(design.transform, "transform"), shared(design.offset, "offset")
        mean, cov = family.record_moments(params, bounds)
        centred_mean = pt.dot(transform, mean) + offset
        centred_cov = pt.dot(pt.dot(transform, cov), transform.T)
    m = numbers[0] * weights * centred_mean
    c = numbers[0] * numbers[1] * (pt.outer(weights, weights) * centred_cov)
    if design.noise == "gaussian":
        return gaussian_noise_logp(scaled_release, m, c) - numbers[2]
    logp = clt_noise_aware_logp(family.name, scaled_release, 1.0, 1.0, neighbouring, m, c, noise_mixing)
    return logp - numbers[2]


def gaussian_noise_logp(scaled_release: Any, mean: Any, cov: Any, noise_variance: float = 1.0) -> Any:
    """log p(z/σ) of a released vector with unit Gaussian noise, its sum Normal(mean, cov): Normal(mean, cov + I).

    The Gaussian noise convolves with the central-limit Normal in closed form, so a Gaussian
    release needs no noise-mixing variables, whatever its dimension. ``noise_variance``: the
    noise's variance at this scale (2 for a unit Laplace noise moment-matched by a Normal).
    """
    import pymc as pm
    import pytensor.tensor as pt

    size = cov.type.shape[0] if cov.type.shape[0] is not None else scaled_release.type.shape[0]
    return pm.logp(pm.MvNormal.dist(mu=mean, cov=cov + noise_variance * pt.eye(size, dtype="float64")), scaled_release)
