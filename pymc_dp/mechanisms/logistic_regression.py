"""Differentially private logistic regression: the measurements inference can use.

Three mechanisms, each charged to a ledger before any noise is drawn:

* :func:`noisy_gradient_logistic` — the noisy-gradient heuristic of [WM10] §4.1 (from
  the PINQ distribution): ``iterations`` rounds of gradient ascent on the log-likelihood,
  each step along a Laplace-noised sum of the per-record gradients
  ``x_i (y_i − σ(w_t · x_i))``. Every noisy sum is *kept and released*: they are the
  measurements a noise-aware posterior (:func:`pymc_dp.logistic_from_gradients`) conditions
  on. The weights ``w_t`` at which the gradients are taken are post-processing of the
  earlier releases, so the run is the composition of ``iterations`` Laplace releases of
  ε/iterations each.
* :func:`output_perturbation_logistic` and :func:`objective_perturbation_logistic` — the
  regularised-logistic-regression mechanisms of Chaudhuri & Monteleoni (NIPS 2008) and
  Chaudhuri, Monteleoni & Sarwate (JMLR 2011, Algorithms 1 and 2), the textbook
  baselines of slides 004.

Records. A record is a feature row ``x`` and a label ``y`` in {0, 1}. Features must lie in
a declared ball — ``feature_l1_bound`` bounds ‖x‖₁ for the Laplace sums of the noisy
gradient, ``feature_l2_bound`` bounds ‖x‖₂ for the perturbation mechanisms (their theorems
need ‖x‖₂ ≤ 1, so the bound rescales) — and rows outside are projected onto it and counted
(a warning, never silent). Labels outside {0, 1} are refused, and so are NaN or infinite
features (nothing is spent; the refusal does not say how many). The number of records N is
public (replace-one neighbouring): the heuristic's step and the perturbation mechanisms'
regularisation use it.

The keyword ``feature_norm=`` (one name for an L1 bound in one function and an L2 bound in
the others) is deprecated: it still works for one release, with a :class:`DeprecationWarning`
naming the keyword that replaces it.

:class:`pymc_dp.PrivateLogisticRegression` wraps the perturbation mechanisms in an
estimator with scikit-learn's shape (``fit``, ``predict``, ``predict_proba``, an intercept).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ..accounting.curator import curator_report
from ..accounting.event_types import LaplaceEvent
from ..accounting.validation import as_records, check_epsilon, check_finite_array, numbers_entry_by_entry
from .noise import _require_ledger, resolve_noise_source

if TYPE_CHECKING:  # pragma: no cover
    from ..accounting import LedgerEntry, PrivacyLedger

__all__ = [
    "NoisyGradientRun",
    "noisy_gradient_logistic",
    "PerturbedWeights",
    "output_perturbation_logistic",
    "objective_perturbation_logistic",
    "LOGISTIC_CURVATURE",
    "check_logistic_records",
    "ClippedFeaturesWarning",
    "REPLACE_ONLY",
    "objective_perturbation_ridge",
]

#: The heuristic's weights are clipped into [−MAX_WEIGHT, MAX_WEIGHT] (public post-processing).
MAX_WEIGHT = 1e6

#: The assumption every entry of these mechanisms carries.
REPLACE_ONLY = "N (the number of records) is public: replace-one neighbouring"


class ClippedFeaturesWarning(UserWarning):
    """Feature rows outside the declared norm ball were projected onto it (the count is in the message)."""


def _sigmoid(u: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * u))


def _positive(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a positive number, got {value!r}.")
    value = float(value)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}.")
    return value


def _renamed_bound(new: Any, old: Any, new_name: str, kind: str, function: str) -> Any:
    """The declared feature bound of ``function``: ``new_name=``, or the deprecated ``feature_norm=`` with a warning."""
    if old is None:
        if new is None:
            raise TypeError(f"{function}() missing required keyword argument {new_name!r}: the declared {kind} bound "
                            "on a feature row (a property of the feature domain, not of the records).")
        return new
    if new is not None:
        raise TypeError(f"{function}() got both {new_name}= and the deprecated feature_norm=; pass {new_name}= only.")
    warnings.warn(
        f"feature_norm= of {function}() is deprecated and will be removed in the next release: it is the {kind} bound "
        f"on a feature row, now named {new_name}=. Pass {new_name}={old!r} instead.",
        DeprecationWarning, stacklevel=3,
    )
    return old


def project_rows(X: np.ndarray, bound: float, norm: str) -> np.ndarray:
    """Rows of ``X`` with ‖x‖ > ``bound`` (``norm`` ``"l1"`` or ``"l2"``) rescaled onto the sphere, with a
    :class:`ClippedFeaturesWarning` giving the count (to the curator only: it is data)."""
    norms = np.abs(X).sum(axis=1) if norm == "l1" else np.sqrt((X**2).sum(axis=1))
    outside = norms > bound * (1 + 1e-12)
    clipped = int(outside.sum())
    if clipped:
        X = X.copy()
        X[outside] *= (bound / norms[outside])[:, None]
        curator_report(
            f"{clipped} row(s) had {norm.upper()} norm above the declared bound {bound:g} and were projected onto "
            "the ball (the release is private for the declared bound, whatever the data).",
            ClippedFeaturesWarning, stacklevel=4,
        )
    return X


def check_logistic_records(X: Any, y: Any, bound: float, norm: str, *,
                           bound_name: str | None = None, private: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Check the records; project feature rows onto the declared ball; return ``(X, y)``.

    ``X`` is (N, d), ``y`` has N labels in {0, 1} (booleans accepted); ``norm`` is ``"l1"``
    or ``"l2"``. Rows with ‖x‖ > ``bound`` are rescaled onto the sphere of that radius and
    counted, with a :class:`ClippedFeaturesWarning` (for the curator only). ``bound_name``
    is the argument the caller's user passed the bound as (default ``feature_l1_bound`` or
    ``feature_l2_bound``, by ``norm``), for the error message.

    On private records (the default) a malformed record — a feature that is NaN, infinite
    or not a number, or a label other than 0 and 1 — is not refused (a refusal would say,
    for free, that some record is malformed): it becomes the default record (x = 0, y = 0),
    a function of that record alone inside the ball, counted for the curator only. Only
    the shapes, which are public, are refused. On public records (``private=False``: the
    analyst's own design rows or public data) malformed entries are refused as usual.
    """
    if not private:
        X = check_finite_array(X, "X")
    else:
        raw = as_records(X)
        X = raw.astype(float) if raw.dtype.kind in "biuf" else numbers_entry_by_entry(raw)
    if X.ndim != 2 or X.shape[0] < 1 or X.shape[1] < 1:
        raise ValueError(f"X must be a 2-D array of records × features, got shape {X.shape}.")
    labels = as_records(y) if private else np.asarray(y)
    if labels.shape != (X.shape[0],):
        raise ValueError(f"y must hold one label per row of X ({X.shape[0]}), got shape {labels.shape}.")
    labels = labels.astype(float) if labels.dtype.kind in "biuf" else numbers_entry_by_entry(labels)
    malformed = ~np.isfinite(X).all(axis=1) | ~((labels == 0) | (labels == 1))
    if malformed.any():
        if not private:
            raise ValueError("the public records must have finite features and labels 0 or 1; recode them first.")
        X = np.where(malformed[:, None], 0.0, X)
        labels = np.where(malformed, 0.0, labels)
        curator_report(f"{int(malformed.sum())} record(s) had a NaN, infinite or non-numeric feature or a label other "
                       "than 0 and 1; each counts as the default record (x = 0, y = 0). Not released.",
                       ClippedFeaturesWarning, stacklevel=3)
    name = bound_name or ("feature_l1_bound" if norm == "l1" else "feature_l2_bound")
    X = project_rows(X, _positive(bound, name), norm)
    return X, labels


@dataclass(frozen=True)
class NoisyGradientRun:
    """What :func:`noisy_gradient_logistic` released: every noisy gradient and the path it took.

    Attributes
    ----------
    measurements
        (iterations, d): the noisy sums ``g̃_t = Σ_i x_i (y_i − σ(w_t · x_i)) + Laplace(scale)``.
    weights
        (iterations + 1, d): ``w_0`` (zeros unless given) and ``w_{t+1} = w_t + learning_rate · g̃_t / N``; row
        ``t`` is where gradient ``t`` was taken. The last row is the heuristic's answer.
    scale
        The Laplace scale b of every coordinate of every measurement: 2·feature_l1_bound·iterations/ε.
    n_records
        N, public.
    feature_l1_bound
        The declared L1 bound on a feature row (``feature_norm`` is a deprecated alias).
    epsilon
        The run's total ε (ε/iterations per measurement).
    learning_rate
        The step η.
    entry
        The ledger entry recorded (one Laplace release of ε/iterations, ``count`` = iterations).
    """

    measurements: np.ndarray
    weights: np.ndarray
    scale: float
    n_records: int
    feature_l1_bound: float
    epsilon: float
    learning_rate: float
    entry: "LedgerEntry" = field(repr=False)

    @property
    def feature_norm(self) -> float:
        """Deprecated alias of :attr:`feature_l1_bound` (removed in the next release)."""
        warnings.warn("NoisyGradientRun.feature_norm is deprecated: it is the L1 bound on a feature row, now "
                      "feature_l1_bound.", DeprecationWarning, stacklevel=2)
        return self.feature_l1_bound

    @property
    def iterations(self) -> int:
        return int(self.measurements.shape[0])

    @property
    def final_weights(self) -> np.ndarray:
        """The heuristic's answer: the last iterate ``w_T``."""
        return self.weights[-1]

    def prefix(self, iterations: int) -> "NoisyGradientRun":
        """The run as it stood after its first ``iterations`` measurements (a post-processing: free).

        The first t noisy sums and the path ``w_0 … w_t`` they produced, with ``epsilon`` the
        t/T share of the run's ε those measurements cost; ``scale`` and ``entry`` are the whole
        run's (the ledger was charged once, for all T). Inference on prefixes shows how
        information grows with the ε spent ([WM10] Fig. 3a).
        """
        T = self.iterations
        if isinstance(iterations, bool) or not isinstance(iterations, (int, np.integer)) or not 1 <= iterations <= T:
            raise ValueError(f"iterations must be an integer from 1 to the run's {T}, got {iterations!r}.")
        t = int(iterations)
        return replace(self, measurements=self.measurements[:t], weights=self.weights[: t + 1],
                       epsilon=self.epsilon * t / T)


def noisy_gradient_logistic(
    X: Any,
    y: Any,
    *,
    epsilon: float,
    feature_l1_bound: float | None = None,
    iterations: int = 10,
    learning_rate: float = 10.0,
    initial_weights: Any = None,
    ledger: "PrivacyLedger",
    rng: Any = None,
    assumptions: "tuple[str, ...]" = (),
    feature_norm: float | None = None,
) -> NoisyGradientRun:
    """The noisy-gradient logistic regression of [WM10] §4.1, every measurement released.

    Parameters
    ----------
    X, y
        The records: (N, d) features (rows projected onto ‖x‖₁ ≤ ``feature_l1_bound``, counted)
        and N labels in {0, 1}. Add a column of ones to ``X`` for an intercept (it counts
        toward the L1 bound: 1 more).
    epsilon
        The total ε of the run; each of the ``iterations`` measurements costs ε/iterations.
    feature_l1_bound
        The declared bound B on ‖x‖₁ (required: a property of the feature domain, e.g. 2
        for the unit cube in 4 dimensions, √d for the unit sphere). One record moves the
        gradient sum by at most 2B in L1 (the residual y − σ lies in (−1, 1);
        replace-one), so each measurement's Laplace scale is 2B·T/ε.
    iterations
        Rounds of gradient ascent T (≥ 1).
    learning_rate
        The step η: ``w_{t+1} = w_t + η · g̃_t / N``.
    initial_weights
        ``w_0`` (default zeros): a public starting point, e.g. a fit to public records.
        It must not be computed from the private records.
    ledger
        The ledger to charge (required); the whole run is reserved before the first draw.
    rng
        ``None`` (default): OpenDP's floating-point-safe Laplace sampler; an ``int`` or a
        ``numpy.random.Generator`` for seeded noise (research and tests only).
    assumptions
        Further assumptions the ledger entry records (e.g. records declared public).
    feature_norm
        Deprecated name of ``feature_l1_bound`` (a :class:`DeprecationWarning`; removed in
        the next release).

    Returns
    -------
    NoisyGradientRun
        The measurements, the weight path and the noise scale: what
        :func:`pymc_dp.logistic_from_gradients` needs.

    Raises
    ------
    ValueError
        For bad records or arguments (nothing is spent).
    pymc_dp.BudgetExceededError
        If the run does not fit the ledger's budget (nothing is drawn).
    """
    bound = _renamed_bound(feature_l1_bound, feature_norm, "feature_l1_bound", "L1", "noisy_gradient_logistic")
    eps = check_epsilon(epsilon, "epsilon")
    if isinstance(iterations, bool) or not isinstance(iterations, (int, np.integer)) or iterations < 1:
        raise ValueError(f"iterations must be a positive integer, got {iterations!r}.")
    eta = _positive(learning_rate, "learning_rate")
    ledger = _require_ledger(ledger)
    if ledger.neighbouring != "replace":
        raise ValueError(
            "noisy_gradient_logistic needs replace-one neighbouring (N public: the step divides by it); "
            f"the ledger uses {ledger.neighbouring!r}."
        )
    source = resolve_noise_source(rng)
    X, labels = check_logistic_records(X, y, bound, "l1")
    bound = float(bound)
    n, d = X.shape
    start = np.zeros(d) if initial_weights is None else check_finite_array(initial_weights, "initial_weights")
    if start.shape != (d,):
        raise ValueError(f"initial_weights must hold one weight per feature column ({d}), got shape {start.shape}.")
    T = int(iterations)
    eps_t = eps / T
    sensitivity = 2.0 * bound
    scale = sensitivity / eps_t
    weights = np.empty((T + 1, d))
    weights[0] = start
    measurements = np.empty((T, d))
    with ledger.charge(
        "laplace", eps_t, count=T, touched=f"logistic gradient sums ({d} coordinates, {T} iterations)",
        event=LaplaceEvent(noise_multiplier=1.0 / eps_t), noise_source=source.name,
        details={"norm": "l1", "sensitivity": sensitivity, "scale": scale, "feature_l1_bound": bound,
                 "iterations": T, "learning_rate": eta, "algorithm": "noisy gradient ascent"},
        assumptions=(REPLACE_ONLY, *assumptions),
    ) as entry:
        for t in range(T):
            residual = labels - _sigmoid(X @ weights[t])
            measurements[t] = source.add_laplace(X.T @ residual, scale)
            # Post-processing of the releases, kept in a public box so the path stays finite
            # whatever the step (an overflowing path would make the next sum NaN or not by record).
            weights[t + 1] = np.clip(weights[t] + eta * measurements[t] / n, -MAX_WEIGHT, MAX_WEIGHT)
    measurements.setflags(write=False)
    weights.setflags(write=False)
    return NoisyGradientRun(
        measurements=measurements, weights=weights, scale=scale, n_records=n, feature_l1_bound=bound, epsilon=eps,
        learning_rate=eta, entry=entry,
    )


# ---------------------------------------------------------------------------- regularised logistic regression

#: The logistic loss's second-derivative bound c of Chaudhuri, Monteleoni & Sarwate (2011).
LOGISTIC_CURVATURE = 0.25


@dataclass(frozen=True)
class PerturbedWeights:
    """The weights a perturbation mechanism released.

    Attributes
    ----------
    weights
        (d,) in the units of the records' features (the mechanism worked on ``x / feature_l2_bound``).
    mechanism
        ``"output_perturbation"`` or ``"objective_perturbation"``.
    epsilon
        The ε spent.
    regularisation
        λ of the objective ``(1/N) Σ log(1 + exp(−y wᵀx)) + (λ/2)‖w‖²`` (on scaled features),
        as given; objective perturbation may add an extra ridge to it (``entry.details``).
    entry
        The ledger entry recorded.
    """

    weights: np.ndarray
    mechanism: str
    epsilon: float
    regularisation: float
    entry: "LedgerEntry" = field(repr=False)


def _scaled(X: Any, y: Any, bound: float, bound_name: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Records on the unit L2 ball (``x / bound``, rows outside projected) with labels ±1."""
    X, labels = check_logistic_records(X, y, bound, "l2", bound_name=bound_name)
    return X / float(bound), 2.0 * labels - 1.0


#: The gradient norm (largest coordinate) at which a regularised fit counts as the exact minimiser.
FIT_TOLERANCE = 1e-12


def _fit_regularised(X: np.ndarray, s: np.ndarray, lam: float, linear: np.ndarray | None = None) -> np.ndarray:
    """argmin_w (1/N) Σ log(1 + e^{−s wᵀx}) + (λ/2)‖w‖² + linearᵀw, by damped Newton steps.

    The objective is λ-strongly convex with one minimiser; Newton's method reaches it to a
    gradient of :data:`FIT_TOLERANCE` (the privacy theorems are about the exact minimiser),
    or a ``RuntimeError`` says it did not (never a silently inexact release).
    """
    n, d = X.shape
    c = np.zeros(d) if linear is None else np.asarray(linear, dtype=float)

    def value(w: np.ndarray) -> float:
        return float(np.logaddexp(0.0, -s * (X @ w)).mean() + 0.5 * lam * w @ w + c @ w)

    w = np.zeros(d)
    for _ in range(200):
        margin = s * (X @ w)
        gradient = X.T @ (-s * _sigmoid(-margin)) / n + lam * w + c
        if np.abs(gradient).max() < FIT_TOLERANCE:
            return w
        curvature = _sigmoid(margin) * _sigmoid(-margin)
        hessian = (X.T * curvature) @ X / n + lam * np.eye(d)
        step = np.linalg.solve(hessian, gradient)
        t, current = 1.0, value(w)
        # Near the minimiser the decrease Newton promises (gradient·step) is below what double
        # precision resolves in the objective's value: take the full step there (quadratic
        # convergence), where a line search on rounding noise would shrink it to nothing.
        if gradient @ step > 1e-14 * max(1.0, abs(current)):
            while value(w - t * step) > current - 0.25 * t * gradient @ step and t > 1e-10:
                t *= 0.5
        w = w - t * step
    raise RuntimeError(
        f"the regularised logistic fit did not reach a gradient of {FIT_TOLERANCE:g} in 200 Newton steps (nothing "
        "was released); a larger regularisation makes the objective better conditioned."
    )


def _spherical_laplace(d: int, scale: float, source: Any) -> np.ndarray:
    """A vector with density ∝ exp(−‖b‖₂ / scale): norm Gamma(d, scale) (a sum of d |Laplace(scale)|), uniform direction.

    Built from the noise source's Laplace and Gaussian samplers (OpenDP's by default); the
    arithmetic that combines them is ordinary floating point.
    """
    norm = float(np.abs(source.laplace(scale, d)).sum())
    direction = np.asarray(source.gaussian(1.0, d), dtype=float)
    length = float(np.sqrt(direction @ direction))
    while length == 0.0:  # probability zero; never loop on a degenerate draw
        direction = np.asarray(source.gaussian(1.0, d), dtype=float)
        length = float(np.sqrt(direction @ direction))
    return norm * direction / length


def _check_perturbation_args(epsilon: Any, regularisation: Any, ledger: Any, rng: Any) -> tuple[float, float, Any, Any]:
    eps = check_epsilon(epsilon, "epsilon")
    lam = _positive(regularisation, "regularisation")
    ledger = _require_ledger(ledger)
    if ledger.neighbouring != "replace":
        raise ValueError(
            f"the perturbation mechanisms need replace-one neighbouring (N public); the ledger uses {ledger.neighbouring!r}."
        )
    return eps, lam, ledger, resolve_noise_source(rng)


def output_perturbation_logistic(
    X: Any, y: Any, *, epsilon: float, feature_l2_bound: float | None = None, regularisation: float = 0.01,
    ledger: "PrivacyLedger", rng: Any = None, feature_norm: float | None = None,
) -> PerturbedWeights:
    """Regularised logistic regression with output perturbation (Chaudhuri & Monteleoni 2008; CMS 2011, Alg. 1).

    The minimiser of ``(1/N) Σ log(1 + exp(−y wᵀx)) + (λ/2)‖w‖²`` on ``x / feature_l2_bound``
    (rows with ‖x‖₂ > ``feature_l2_bound`` projected) has L2 sensitivity 2/(Nλ) under
    replace-one, so adding a vector with density ∝ exp(−(Nλε/2)‖b‖₂) is ε-DP. The
    weights are returned in the units of ``X``.

    Parameters
    ----------
    X, y
        (N, d) features and N labels in {0, 1}. No intercept is added: append a constant
        column (and count it in the bound) or use :class:`pymc_dp.PrivateLogisticRegression`.
    epsilon
        ε of the release.
    feature_l2_bound
        The declared bound on ‖x‖₂ (required).
    regularisation
        λ (> 0): larger is less noisy and more biased toward 0.
    ledger, rng
        As for :func:`noisy_gradient_logistic`.
    feature_norm
        Deprecated name of ``feature_l2_bound`` (a :class:`DeprecationWarning`; removed in
        the next release).
    """
    bound = _renamed_bound(feature_l2_bound, feature_norm, "feature_l2_bound", "L2", "output_perturbation_logistic")
    eps, lam, ledger, source = _check_perturbation_args(epsilon, regularisation, ledger, rng)
    Xs, s = _scaled(X, y, bound)
    n, d = Xs.shape
    scale = 2.0 / (n * lam * eps)
    with ledger.charge(
        "output_perturbation", eps, touched=f"logistic regression weights ({d})", noise_source=source.name,
        details={"norm": "l2", "sensitivity": 2.0 / (n * lam), "scale": scale, "regularisation": lam,
                 "feature_l2_bound": float(bound)},
        assumptions=(REPLACE_ONLY, "the regularised optimum is computed exactly (Newton steps to a gradient of 1e-12)"),
    ) as entry:
        w = _fit_regularised(Xs, s, lam) + _spherical_laplace(d, scale, source)
    return PerturbedWeights(w / float(bound), "output_perturbation", eps, lam, entry)


def objective_perturbation_ridge(epsilon: float, n_records: int, regularisation: float) -> tuple[float, float]:
    """``(extra ridge Δ, ε′)`` of objective perturbation at ε, N and λ (public numbers).

    CMS 2011 (Theorem 9 and its proof) bound the privacy loss of Algorithm 2 by
    ε′ + log(1 + 2c/(NΛ) + c²/(NΛ)²), where Λ is the regulariser the perturbed objective
    actually has — λ + Δ — and ε′ the noise's share. So ε′ = ε − log(1 + c/(N(λ + Δ)))² is
    ε-DP for *any* Δ ≥ 0. Algorithm 2 adds Δ only when ε′ ≤ 0 at λ; here it is added
    whenever that ε′ falls below ε/2, i.e. whenever λ < Λ′ = c/(N(e^{ε/4} − 1)), the
    regulariser at which the log term is exactly ε/2. Raising λ to Λ′ (Δ = Λ′ − λ) then
    leaves ε′ = ε/2 for the noise — more than the ε′ at λ, so less noise — at the price of
    a larger ridge. When λ ≥ Λ′, Δ = 0 and ε′ = ε − log(1 + c/(Nλ))² ≥ ε/2, as in the paper.
    """
    eps, lam, n = float(epsilon), float(regularisation), int(n_records)
    c = LOGISTIC_CURVATURE
    # Λ′ = c/(N(e^{ε/4} − 1)), the regulariser at which the log term is exactly ε/2, written so
    # that it underflows to 0 rather than overflowing at a huge ε.
    floor = c * math.exp(-eps / 4.0) / (n * -math.expm1(-eps / 4.0))
    if lam < floor:
        return floor - lam, eps / 2.0
    return 0.0, eps - math.log(1.0 + 2.0 * c / (n * lam) + c**2 / (n * lam) ** 2)


def objective_perturbation_logistic(
    X: Any, y: Any, *, epsilon: float, feature_l2_bound: float | None = None, regularisation: float = 0.01,
    ledger: "PrivacyLedger", rng: Any = None, feature_norm: float | None = None,
) -> PerturbedWeights:
    """Regularised logistic regression with objective perturbation (Chaudhuri, Monteleoni & Sarwate 2011, Alg. 2).

    With c = 1/4 (the logistic loss's curvature bound), the privacy loss is at most
    ε′ + log(1 + c/(NΛ))² for the perturbed objective's regulariser Λ. With Λ = λ:
    ε′ = ε − log(1 + 2c/(Nλ) + c²/(Nλ)²). Where that leaves the noise less than ε/2 (small
    Nλ for the ε: λ < Λ′ = c/(N(e^{ε/4} − 1))), an extra ridge Δ = Λ′ − λ is added and
    ε′ = ε/2 (:func:`objective_perturbation_ridge`; Algorithm 2 adds it only once ε′ ≤ 0,
    which leaves far more noise in between). A vector b with density ∝ exp(−(ε′/2)‖b‖₂)
    enters the objective as ``bᵀw / N``, and the released weights are the exact minimiser
    of ``(1/N) Σ log(1 + exp(−y wᵀx)) + ((λ + Δ)/2)‖w‖² + bᵀw / N``. The ledger entry's
    details record ``extra_ridge`` Δ and ``epsilon_prime`` ε′. Arguments as for
    :func:`output_perturbation_logistic`.
    """
    bound = _renamed_bound(feature_l2_bound, feature_norm, "feature_l2_bound", "L2", "objective_perturbation_logistic")
    eps, lam, ledger, source = _check_perturbation_args(epsilon, regularisation, ledger, rng)
    Xs, s = _scaled(X, y, bound)
    n, d = Xs.shape
    extra, eps_prime = objective_perturbation_ridge(eps, n, lam)
    scale = 2.0 / eps_prime
    with ledger.charge(
        "objective_perturbation", eps, touched=f"logistic regression weights ({d})", noise_source=source.name,
        details={"norm": "l2", "scale": scale, "regularisation": lam, "extra_ridge": extra,
                 "epsilon_prime": eps_prime, "feature_l2_bound": float(bound)},
        assumptions=(REPLACE_ONLY, "the perturbed objective is minimised exactly (Newton steps to a gradient of 1e-12)"),
    ) as entry:
        b = _spherical_laplace(d, scale, source)
        w = _fit_regularised(Xs, s, lam + extra, linear=b / n)
    return PerturbedWeights(w / float(bound), "objective_perturbation", eps, lam, entry)
