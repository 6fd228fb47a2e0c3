"""A logistic GLM's last point found by objective perturbation: the score there is known up to one noise vector.

The measurements route's newton engine (:mod:`pymc_dp.model.score_measurements`) spends 40 % of ε on pilot rounds
whose only job is to bring the last point near the parameters, where the one-step likelihood is accurate. For a
Bernoulli likelihood with a logit link and no parameter beside the linear predictor's coefficients φ (``logit_p =
[a +] X @ beta``, varying intercepts ``a[idx]`` and slopes included), objective perturbation (Chaudhuri, Monteleoni
& Sarwate 2011, Alg. 2; :func:`pymc_dp.objective_perturbation_logistic`) finds that point in one release, and the
release *is* a score measurement:

* each record's design row z_i (the coefficients' column values; a group's one-hot column reads 1) lies within
  ``R = max ‖z‖₂`` over the declared box (public); on z/R the logistic loss has a gradient of norm ≤ 1 and a
  curvature ≤ c = ¼, as the theorem needs;
* the released point φ_p is the exact minimiser of ``(1/N) Σ ℓ_i(φ̃) + (Λ/2)‖φ̃‖² + bᵀφ̃/N`` on φ̃ = Rφ, with
  b of density ∝ exp(−(ε′/2)‖b‖₂). Setting its gradient to zero gives the records' score at φ_p in φ's units:

      S(φ_p) = Σ_i z_i (y_i − σ(z_iᵀφ_p)) = N Λ R² φ_p + R b,

  so ``g = N Λ R² φ_p`` (a function of the release) is the score at φ_p measured with noise −R b, of covariance
  ``R² (d + 1) (2/ε′)² I`` (‖b‖ is Gamma(d, 2/ε′), its direction uniform), moment-matched by a Gaussian as the
  newton engine's Laplace noise is;
* the information at φ_p is then released as the newton engine's last round releases it (Laplace noise on its
  upper triangle, each record's terms clipped at the box's worst case at φ_p, replace-one Δ = 2C).

The one-step likelihood reads the pair as it reads the newton engine's last round. The release's density given the
records also carries the Jacobian of b ↦ φ_p, which depends on the covariates and φ_p but not on the outcomes, hence
not on the parameters the posterior is about.

Measured beside diffprivlib on the peers' question and in the utility cells: docs, "Inference from noisy
measurements", the logistic regression's engine.

Share and ridge (public constants, measured there): :data:`POINT_SHARE` of ε goes to the point, the rest to the
information; the ridge is set so that the Jacobian's term costs :data:`JACOBIAN_SHARE` of the point's ε
(Λ = c / (N (e^{JACOBIAN_SHARE·ε/2} − 1))). A ridge that is large against N·I shrinks φ_p toward 0; the one-step
likelihood measures from wherever φ_p lies, accurately while the parameters are within a few standard errors of
it, so strong effects against few records are where the engine is weak (a warning says when the release puts them
far).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["reads_as_logistic", "feature_bound", "point_regularisation", "POINT_SHARE", "JACOBIAN_SHARE",
           "score_noise_scale", "objective_preferred", "OBJECTIVE_ALGORITHM", "POINT_ASSUMPTIONS", "INFORMATION_ASSUMPTION"]

#: The share of ε spent on the perturbed point; the information at it gets the rest.
POINT_SHARE = 0.7
#: The share of the point's ε that the ridge lets the Jacobian's term cost (the noise b gets the rest). A larger share
#: is a smaller ridge: at 0.05 (NΛ ≈ 14 at ε = 0.7) an auditor's strong effects (slopes 3 and −2 on [−1, 1], N = 2,000)
#: were pulled to 0.55 θ and 40 % of 95 % intervals missed the non-private fit (20 releases; rms z 1.7–2.5); at 0.15
#: 8 % (rms z 0.86–1.38), at 0.2 8 % (0.76–1.24). The noise pays: the peers' RMSE at N = 1,000 rose 4 % at 0.15, 8 % at
#: 0.2 (a Gaussian reading of 40 data sets).
JACOBIAN_SHARE = 0.15
#: The logistic loss's curvature bound c.
LOGISTIC_CURVATURE = 0.25
#: What the ledger says the point is.
OBJECTIVE_ALGORITHM = ("objective perturbation (Chaudhuri, Monteleoni & Sarwate 2011, Alg. 2) for the last point, "
                       "whose stationarity gives the score there up to the noise vector; then the information there")

#: What the point's ledger entry rests on (its own guarantee: objective perturbation's, not the newton engine's clips).
POINT_ASSUMPTIONS = (
    "each record's design row within L2 norm R of the declared box (records outside it clipped into it), so that on "
    "x / R the logistic loss has a gradient of norm at most 1 and a curvature at most 1/4 (CMS 2011, Theorem 9)",
    "the perturbed objective is minimised exactly: Newton steps to a gradient of 1e-12; the guarantee is for the exact "
    "minimiser in real arithmetic (the noise vector is drawn by the noise source, the minimisation is floating point)",
)
#: What the information's entry rests on: its clip is the box's worst case at the released point (public), not lowered.
INFORMATION_ASSUMPTION = ("each record's information at the perturbed point clipped at the largest L1 norm any point "
                          "of the declared box reaches there (a function of the released point and the box)")
#: Linear predictors and outcomes at which the likelihood's terms are compared with the logistic's (public).
_PROBE_ETA = np.array([-4.0, -1.5, -0.3, 0.0, 0.7, 2.0, 5.0])


def reads_as_logistic(structure: Any, derivatives: Any) -> bool:
    """Whether the GLM is a Bernoulli with a logit link on one linear predictor and no other parameter: its terms,
    evaluated at public probe values of the predictor (never a record), are ``y η − log(1 + e^η)``."""
    if len(structure.predictors) != 1 or structure.nuisances:
        return False
    if str(structure.rv.dtype).startswith("float"):
        return False
    try:
        with np.errstate(all="ignore"):
            for y in (0.0, 1.0):
                terms = derivatives.terms(np.full(len(_PROBE_ETA), y), _PROBE_ETA)
                expected = y * _PROBE_ETA - np.logaddexp(0.0, _PROBE_ETA)
                if not np.allclose(terms, expected, rtol=1e-9, atol=1e-9):
                    return False
    except Exception:  # noqa: BLE001 - a likelihood the probe cannot evaluate is not read as logistic
        return False
    return True


def feature_bound(predictor: Any, lower: np.ndarray, upper: np.ndarray, norm: int = 2) -> float:
    """The largest norm (L2, or L1 with ``norm=1``) of a record's design row over the declared box (public, exact). A
    column contributes its larger end; a one-hot block of ``a[idx]`` one 1 (a record is in one group), of
    ``b[idx] * x`` its covariate's larger end. R of the module docstring is the L2 one."""
    ends = np.maximum(np.abs(np.asarray(lower, dtype=float)), np.abs(np.asarray(upper, dtype=float))) ** norm
    in_block = predictor.block_columns()
    total = float(np.sum(ends[~in_block])) + sum(float(ends[start]) for start, _ in predictor.blocks)
    return total ** (1.0 / norm)


def point_regularisation(epsilon: float, records: int) -> float:
    """λ of the perturbed objective (on φ̃ = Rφ, the objective averaged over N records): the ridge at which the
    Jacobian's term ``log(1 + c/(NΛ))²`` is :data:`JACOBIAN_SHARE` of ``epsilon``."""
    total = LOGISTIC_CURVATURE / math.expm1(JACOBIAN_SHARE * float(epsilon) / 2.0)
    return total / max(int(records), 1)


def score_noise_scale(bound: float, epsilon_prime: float, dimension: int) -> float:
    """The per-coordinate Laplace scale whose variance (2 s²) matches the score noise R b's: R² (d + 1) (2/ε′)²."""
    return float(bound) * (2.0 / float(epsilon_prime)) * math.sqrt((int(dimension) + 1) / 2.0)


def objective_preferred(dimension: int, bound: float, l1_bound: float, last_share: float) -> bool:
    """Whether ``method="auto"`` takes the objective engine: its score noise per coordinate, R² (d + 1) (2/ε′)², is
    no larger than the newton engine's last round's at its worst-case clip, 2 (2 C / ε_s)² (C the largest L1 norm of
    a design row over the box, the clip of a record's score ``(y − σ(η)) z`` once the point is away from 0; ε_s that
    round's share of ε) — public numbers only, ε and N cancel. The spherical noise grows with d where the Laplace
    noise does not: a design whose rows are sparse (the one-hot columns of ``a[idx]``: C ≈ R) has its score
    measured better coordinate by coordinate by the newton engine at many groups; a dense one (every covariate read
    by every record: C² ≈ d R²) never. (The newton engine also spends 40 % of ε on its pilots and can lower its
    clips privately at large N; neither is counted here.)"""
    point = (1.0 - JACOBIAN_SHARE) * POINT_SHARE
    objective = float(bound) ** 2 * (int(dimension) + 1) * (2.0 / point) ** 2
    newton = 2.0 * (2.0 * float(l1_bound) / float(last_share)) ** 2
    return objective <= newton
