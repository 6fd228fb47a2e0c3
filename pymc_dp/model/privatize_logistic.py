"""The privacy flag on a logistic regression: noisy gradients released once, the noise-aware posterior sampled.

``pm.Bernoulli("y", logit_p=intercept + X @ beta, observed=y)`` has no finite set of
sufficient statistics, so the Laplace route cannot privatise it. [WM10] §4 shows what
can: release the measurements an existing private algorithm makes — here the
noisy-gradient heuristic (:func:`pymc_dp.noisy_gradient_logistic`) — and infer the
weights from them, integrating over the unseen records
(:func:`pymc_dp.model.gradient_measurements.gradient_loglik`). The records are a row of
the design *and* a label: both are private.

What it needs, and why:

* **bounds on the covariates** (``bounds={"y": {"x": (lo, hi)}}``, one pair or one per
  covariate): rows are clipped into the box (counted, to the curator only) and the
  gradient's L1 sensitivity is 2·Σ max(abs(lo), abs(hi)) (an intercept adds 1 to the sum);
* **the covariates' distribution**, which the CLT moments integrate over: a public
  sample of rows (``features=``: a survey, a synthetic design, earlier public records),
  or ``"measured"`` (default): a share of ε (``feature_share``, 0.2) buys a Laplace
  release of the rows' second moment (mean and covariance, :func:`pymc_dp.noisy_second_moment`),
  and a Gaussian with those moments, clipped to the box, stands in for the design.

The copy of the model keeps every prior and data-free Deterministic, loses the observed
Bernoulli and its data, and gains one potential (the likelihood of the released
gradients) and, where the noise enters exactly, ``"<name>_latent"`` — T·d standard-normal
variables of the unseen gradient sums, functions of the release only.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Mapping, Sequence

import numpy as np

from ..accounting.curator import curator_report
from ..families import ClippedRecordsWarning
from ..accounting import LedgerEntry, PrivacyLedger
from ..accounting.event_types import LaplaceEvent
from ..accounting.validation import check_epsilon
from ..mechanisms.logistic_regression import REPLACE_ONLY, NoisyGradientRun, _positive, noisy_gradient_logistic
from ..mechanisms.second_moment import noisy_second_moment

__all__ = [
    "LogisticPrivatization", "PrivateLogistic", "plan_logistic_privatization", "FEATURE_ROWS", "PUBLIC_FEATURES",
]

#: The assumption recorded when covariate rows are passed as ``features=``: they are the analyst's
#: claim of a public sample, read by the likelihood as they are.
PUBLIC_FEATURES = (
    "the covariate rows given as features= are public (declared by the analyst): the likelihood reads them as "
    "they are"
)

#: Rows of the stand-in design drawn from the measured feature distribution.
FEATURE_ROWS = 4000


@dataclass(frozen=True)
class PrivateLogistic:
    """What :meth:`LogisticPrivatization.release` made: the record-free model and the releases it conditions on."""

    model: Any
    gradients: NoisyGradientRun
    features: np.ndarray
    feature_moment: Any = None


@dataclass(frozen=True)
class LogisticPrivatization:
    """A validated privatisation of one logistic-regression observed variable, priced; nothing drawn yet."""

    model: Any
    name: str
    design: np.ndarray = field(repr=False)
    labels: np.ndarray = field(repr=False)
    lower: np.ndarray
    upper: np.ndarray
    has_intercept: bool
    features: np.ndarray | None = field(repr=False)
    epsilon_gradients: float
    epsilon_features: float
    iterations: int
    learning_rate: float
    covariance: str
    noise: str
    public: frozenset[str]
    neighbouring: str = "replace"

    @property
    def feature_l1_bound(self) -> float:
        """The declared L1 bound on a design row (intercept column included)."""
        return float(np.maximum(np.abs(self.lower), np.abs(self.upper)).sum())

    @property
    def feature_norm(self) -> float:
        """Deprecated alias of :attr:`feature_l1_bound` (removed in the next release)."""
        warnings.warn("LogisticPrivatization.feature_norm is deprecated: it is the L1 bound on a design row, now "
                      "feature_l1_bound.", DeprecationWarning, stacklevel=2)
        return self.feature_l1_bound

    def entries(self) -> list[LedgerEntry]:
        """What :meth:`release` charges: the T gradient releases, then the feature moment (if measured)."""
        T = self.iterations
        per_step = self.epsilon_gradients / T
        out = [LedgerEntry("laplace", per_step, count=T, event=LaplaceEvent(noise_multiplier=1.0 / per_step),
                           neighbouring=self.neighbouring, touched=f"{self.name}: logistic gradient sums",
                           assumptions=(REPLACE_ONLY,))]
        if self.features is None:
            eps = self.epsilon_features
            out.append(LedgerEntry("laplace", eps, event=LaplaceEvent(noise_multiplier=1.0 / eps),
                                   neighbouring=self.neighbouring, touched=f"{self.name}: covariates' second moment",
                                   assumptions=(REPLACE_ONLY,)))
        return out

    def release(self, ledger: PrivacyLedger, rng: Any = None) -> PrivateLogistic:
        """Draw the noise (charging ``ledger``) and build the record-free model."""
        from .privatize_model import public_assumption

        declared = (public_assumption(sorted(self.public)),) if self.public else ()
        if self.features is not None:
            declared += (PUBLIC_FEATURES,)
        run = noisy_gradient_logistic(
            self.design, self.labels, epsilon=self.epsilon_gradients, feature_l1_bound=self.feature_l1_bound,
            iterations=self.iterations, learning_rate=self.learning_rate, ledger=ledger, rng=rng, assumptions=declared,
        )
        moment = None
        features = self.features
        if features is None:
            moment = _measure(self.design, self.lower, self.upper, self.has_intercept, self.epsilon_features, ledger,
                              rng, declared)
            features = _stand_in_design(moment, self.lower, self.upper, self.has_intercept)
        return PrivateLogistic(self._rebuild(run, features), run, features, moment)

    def _rebuild(self, run: NoisyGradientRun, features: np.ndarray) -> Any:
        from .gradient_measurements import gradient_loglik
        from .privatize_model import latent_normal_rv, rebuild_one_likelihood
        from .regression import logistic_regression_of

        rows = self.design.shape[0]

        def likelihood(node: Any, free: list, sizes: list, new_outputs: list) -> Any:
            predictor = logistic_regression_of(node.inputs[0], rows, free, sizes)
            make_latent = partial(latent_normal_rv, f"{self.name}_latent", new_outputs)
            return gradient_loglik(run, predictor.coefficients, features, make_latent, covariance=self.covariance,
                                   noise=self.noise)

        return rebuild_one_likelihood(self.model, self.name, likelihood, rows, self.public)

    def rehearse(self) -> None:
        """Build the record-free model once on a data-free placeholder release (refusals happen before any spend)."""
        T, d = self.iterations, self.design.shape[1]
        placeholder = NoisyGradientRun(
            measurements=np.zeros((T, d)), weights=np.zeros((T + 1, d)), scale=1.0, n_records=self.design.shape[0],
            feature_l1_bound=self.feature_l1_bound, epsilon=self.epsilon_gradients, learning_rate=self.learning_rate,
            entry=None,
        )
        rows = self.features if self.features is not None else np.zeros((2 * T * d, d)) + np.r_[
            np.zeros(d - self.has_intercept), np.ones(int(self.has_intercept))]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self._rebuild(placeholder, rows)


def _scales(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    return np.maximum(np.maximum(np.abs(lower), np.abs(upper)), 1e-300)


def _measure(design: np.ndarray, lower: np.ndarray, upper: np.ndarray, has_intercept: bool, epsilon: float,
             ledger: PrivacyLedger, rng: Any, assumptions: tuple[str, ...]) -> Any:
    """A Laplace release of Σ u uᵀ over the rows rescaled into [−1, 1], a column of ones last (for the mean)."""
    scaled = design / _scales(lower, upper)
    if not has_intercept:
        scaled = np.column_stack([scaled, np.ones(len(scaled))])
    return noisy_second_moment(scaled, epsilon=epsilon, norm_bound=float(np.sqrt(scaled.shape[1])),
                               mechanism="laplace", ledger=ledger, rng=rng, assumptions=assumptions)


#: The spread of a second-moment entry (rows rescaled into [−1, 1]) over the distributions the box
#: allows, against which the release's noise is weighed when it is shrunk toward the box's moments.
MOMENT_SPREAD = 0.5


def _box_moments(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """E[u uᵀ] of independent uniform coordinates on the rescaled box (a constant coordinate where lo = hi)."""
    lo, hi = lower, upper
    mean = (lo + hi) / 2
    width = np.where(hi > lo, hi - lo, 1.0)
    square = np.where(hi > lo, (hi**3 - lo**3) / (3 * width), lo**2)
    out = np.outer(mean, mean)
    out[np.diag_indices_from(out)] = square
    return out


def _stand_in_design(moment: Any, lower: np.ndarray, upper: np.ndarray, has_intercept: bool) -> np.ndarray:
    """Rows standing in for the design, from the released moment (post-processing).

    The released E[u uᵀ] (rows rescaled into [−1, 1]) is shrunk toward the uniform box's,
    entry by entry, with weight s²/(s² + (noise s.d./N)²), s = :data:`MOMENT_SPREAD`: where
    the release is noisier than the moments can plausibly vary (small N·ε), the box's
    moments dominate. A Gaussian with the resulting mean and covariance, clipped to the
    box, gives :data:`FEATURE_ROWS` rows.
    """
    scale = _scales(lower, upper)
    lo, hi = lower / scale, upper / scale
    if not has_intercept:
        lo, hi = np.r_[lo, 1.0], np.r_[hi, 1.0]
    noisy = moment.matrix() / moment.n_records
    weight = MOMENT_SPREAD**2 / (MOMENT_SPREAD**2 + (moment.noise_sd / moment.n_records) ** 2)
    S = weight * noisy + (1 - weight) * _box_moments(lo, hi)
    mean = S[-1, :-1]
    cov = S[:-1, :-1] - np.outer(mean, mean)
    values, vectors = np.linalg.eigh((cov + cov.T) / 2)
    cov = (vectors * np.clip(values, 1e-6, None)) @ vectors.T
    rows = np.random.default_rng(0).multivariate_normal(mean, cov, size=FEATURE_ROWS)
    if has_intercept:
        rows = np.column_stack([rows, np.ones(FEATURE_ROWS)])
    return np.clip(rows * scale, lower, upper)


def _box(given: Any, name: str, covariates: int, has_intercept: bool) -> tuple[np.ndarray, np.ndarray]:
    if not isinstance(given, Mapping) or "x" not in given:
        raise ValueError(
            f"observed variable {name!r} is a logistic regression on {covariates} covariate(s): its records are rows "
            f"of the design as well as labels, and the gradients' sensitivity needs every covariate's range. Declare "
            f"bounds={{{name!r}: {{'x': (lo, hi)}}}} (one pair for all covariates, or arrays of {covariates}); rows "
            "outside are clipped. Nothing was spent."
        )
    extra = sorted(set(given) - {"x"})
    if extra:
        raise ValueError(f"bounds[{name!r}] of a logistic regression takes only 'x' (labels are 0/1), got {extra}.")
    try:
        lo, hi = given["x"]
        lo, hi = (np.broadcast_to(np.asarray(v, dtype=float), (covariates,)).copy() for v in (lo, hi))
    except (TypeError, ValueError):
        raise ValueError(
            f"bounds[{name!r}]['x'] must be a (lo, hi) pair of numbers or of arrays of {covariates}, got {given['x']!r}."
        ) from None
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)) and np.all(lo < hi)):
        raise ValueError(f"bounds[{name!r}]['x'] must be finite with lo < hi for every covariate, got {given['x']!r}.")
    if has_intercept:
        lo, hi = np.r_[lo, 1.0], np.r_[hi, 1.0]
    return lo, hi


def _repair_records(labels: np.ndarray, design: np.ndarray, lower: np.ndarray,
                    upper: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Labels and design rows with every malformed record replaced by the default record, and how many were.

    A record (label and covariate row) is malformed when its label is not 0 or 1 or a covariate is NaN or
    infinite. It is not refused (a refusal would say that some record is malformed): it becomes the record with
    label 0 and the middle of the declared box as covariates. That is a function of the record alone and lies
    inside the box, so its gradient term obeys the same bound as any clipped record's and the sensitivity holds.
    """
    with np.errstate(invalid="ignore"):
        bad = ~((labels == 0) | (labels == 1)) | ~np.all(np.isfinite(design), axis=1)
    middle = lower / 2 + upper / 2
    return np.where(bad, 0.0, labels), np.where(bad[:, None], middle, design), int(bad.sum())


def _public_rows(features: Any, lower: np.ndarray, upper: np.ndarray, has_intercept: bool, d: int) -> np.ndarray:
    from ..accounting.validation import check_finite_array

    rows = check_finite_array(features, "features", fix="public covariate rows must be finite numbers.")
    covariates = d - has_intercept
    if rows.ndim == 1 and covariates == 1:
        rows = rows[:, None]
    if rows.ndim != 2 or rows.shape[1] != covariates:
        raise ValueError(
            f"features must be an (M, {covariates}) array of covariate rows from the records' distribution (public: "
            f"a survey, a synthetic design), or 'measured'; got shape {rows.shape}."
        )
    if has_intercept:
        rows = np.column_stack([rows, np.ones(len(rows))])
    return np.clip(rows, lower, upper)


def plan_logistic_privatization(
    model: Any, epsilon: float, *, bounds: Mapping[str, Any] | None, features: Any = "measured",
    feature_share: float = 0.2, iterations: int = 10, learning_rate: float = 10.0, covariance: str = "auto",
    noise: str = "auto", public: Sequence[str] = (), neighbouring: str = "replace",
) -> LogisticPrivatization:
    """Validate the privacy flag on a logistic-regression model completely and price it; nothing is spent.

    The model must observe exactly one private variable, a Bernoulli whose ``logit_p`` is
    ``[intercept +] X @ beta`` (``X`` a NumPy array or ``pm.Data``, one row per record);
    other observed variables must be declared ``public``. Arguments as for
    :class:`pymc_dp.Measurements`.
    """
    from ._graph import dim_lengths
    from .privatize_model import single_private_observed
    from .regression import logistic_regression_of

    eps = check_epsilon(epsilon)
    if neighbouring != "replace":
        raise ValueError(
            "the logistic measurements need replace-one neighbouring (N is public: the heuristic's step divides by it); "
            f"the ledger uses {neighbouring!r}."
        )
    public_names, rv, labels = single_private_observed(model, public, "logistic measurements")
    why: list[str] = []
    predictor = logistic_regression_of(rv, labels.size, model.free_RVs, dim_lengths(model), why)
    if predictor is None:
        raise ValueError(
            f"observed variable {rv.name!r} is not a logistic regression the measurements route recognises: "
            f"{'; '.join(why)}. It takes pm.Bernoulli with logit_p (or p = invlogit of) a sum of X @ beta, b * x "
            "and scalar terms, X a NumPy array or pm.Data with one row per record (or columns of one)."
        )
    bounds = dict(bounds or {})
    unknown = sorted(set(bounds) - {rv.name})
    if unknown:
        raise ValueError(f"bounds names {unknown}, which are not the private observed variable {rv.name!r}.")
    d = predictor.design.shape[1]
    lower, upper = _box(bounds.get(rv.name), rv.name, predictor.covariates, predictor.has_intercept)
    labels, rows, malformed = _repair_records(labels, predictor.design, lower, upper)
    if malformed:
        curator_report(f"{malformed} record(s) of {rv.name!r} had a label other than 0 and 1 or a NaN or infinite "
                       "covariate and were replaced by the default record (label 0, the middle of the bounds) (the "
                       "count is for the curator only: it is not released).", ClippedRecordsWarning, stacklevel=4)
    design = np.clip(rows, lower, upper)
    clipped = int(np.any(design != rows, axis=1).sum())
    if clipped:
        curator_report(f"{clipped} design row(s) of {rv.name!r} were outside the declared bounds and were clipped "
                       "into them (the count is for the curator only: it is not released).", ClippedRecordsWarning,
                       stacklevel=4)
    if isinstance(iterations, bool) or not isinstance(iterations, (int, np.integer)) or iterations < 1:
        raise ValueError(f"iterations must be a positive integer, got {iterations!r}.")
    measured = isinstance(features, str)
    if measured and features != "measured":
        raise ValueError(f"features must be 'measured' or an array of public covariate rows, got {features!r}.")
    if measured:
        if (isinstance(feature_share, bool) or not isinstance(feature_share, (int, float, np.integer, np.floating))
                or not 0 < feature_share < 1):
            raise ValueError(f"feature_share must lie strictly between 0 and 1 (the share of epsilon spent measuring "
                             f"the covariates, e.g. 0.2); got {feature_share!r}.")
        share = float(feature_share)
        rows = None
    else:
        share = 0.0
        covariates = predictor.design[:, : d - predictor.has_intercept]
        if np.shape(features) == covariates.shape and np.array_equal(np.asarray(features, dtype=float), covariates):
            raise ValueError(f"features= are the records' own covariates of {rv.name!r}: public rows must come from "
                             "elsewhere (a survey, a synthetic design). Leave features= out to measure them privately; "
                             "nothing was spent.")
        rows = _public_rows(features, lower, upper, predictor.has_intercept, d)
    if covariance not in ("auto", "fixed", "exact"):
        raise ValueError(f"covariance must be 'auto', 'fixed' or 'exact', got {covariance!r}.")
    if noise not in ("auto", "exact", "gaussian"):
        raise ValueError(f"noise must be 'auto', 'exact' or 'gaussian', got {noise!r}.")
    plan = LogisticPrivatization(
        model=model, name=rv.name, design=design, labels=labels, lower=lower, upper=upper,
        has_intercept=predictor.has_intercept, features=rows, epsilon_gradients=eps * (1 - share),
        epsilon_features=eps * share, iterations=int(iterations), learning_rate=_positive(learning_rate, "learning_rate"),
        covariance=covariance, noise=noise, public=public_names, neighbouring=neighbouring,
    )
    plan.rehearse()
    return plan
