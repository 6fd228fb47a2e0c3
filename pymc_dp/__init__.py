"""pymc_dp: differential privacy for PyMC models.

The public API is re-exported here; see the documentation for the layers
(accounting, mechanisms, trace) and what each guarantees.
"""

from importlib.metadata import PackageNotFoundError, version as _version

from .accounting import (
    Budget,
    BudgetExceededError,
    LedgerEntry,
    Neighbouring,
    PrivacyCost,
    PrivacyLedger,
    amplify_by_subsampling,
    curator_reports,
)
from .families import PrivateStatistics, privatize
from .mechanisms import hellinger_mechanisms
from .mechanisms.hellinger_distance import hellinger
from .mechanisms.hellinger_mechanisms import PosteriorRelease, release_posterior
from .mechanisms.logistic_regression import (
    NoisyGradientRun,
    PerturbedWeights,
    noisy_gradient_logistic,
    objective_perturbation_logistic,
    output_perturbation_logistic,
)
from .mechanisms.logistic_estimator import PrivateLogisticRegression
from .mechanisms.second_moment import SecondMomentRelease, noisy_second_moment
from .mechanisms.bounded_sum import BoundedSumRelease, noisy_bounded_sum
from .mechanisms.private_bounds import PrivateBounds, suggest_bounds
from .mechanisms.thresholdout import HoldoutAnswer, HoldoutExhaustedError, ReusableHoldout
from .mechanisms.mwem import Domain, MWEMResult, Workload, laplace_workload, marginal_workload, mwem, range_workload
from .model import (
    LoglikSensitivity,
    Measurement,
    clip_loglik,
    compare_on_holdout,
    latent_sum,
    logistic_from_gradients,
    log_predictive_score,
    loglik_sensitivity,
    observe_count_measurements,
    observe_measurements,
    observe_noisy_gradients,
    observe_bounded_sum,
    observe_mwem,
    pca_from_second_moment,
    observe_stats,
    privatize_model,
    temper,
    truncate,
)
from .routes import AIS, OPS, SAA, Gibbs, Laplace, Measurements, Selection, sample
from .step_methods import PrivateGibbs, PrivateMetropolis
from .trace import attach_ledger, concat, ledger, plot_ledger, release, resample_weighted

from . import audit  # noqa: E402 - last: it imports the layers it audits

try:
    __version__ = _version("pymc-dp")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0+unknown"

__all__ = [
    "Budget",
    "Gibbs",
    "SAA",
    "AIS",
    "Laplace",
    "Measurements",
    "Selection",
    "OPS",
    "BudgetExceededError",
    "LedgerEntry",
    "Neighbouring",
    "LoglikSensitivity",
    "Measurement",
    "NoisyGradientRun",
    "PerturbedWeights",
    "PrivateLogisticRegression",
    "SecondMomentRelease",
    "PrivacyCost",
    "PosteriorRelease",
    "PrivacyLedger",
    "curator_reports",
    "PrivateGibbs",
    "PrivateMetropolis",
    "PrivateStatistics",
    "__version__",
    "amplify_by_subsampling",
    "attach_ledger",
    "audit",
    "clip_loglik",
    "concat",
    "hellinger",
    "hellinger_mechanisms",
    "latent_sum",
    "ledger",
    "logistic_from_gradients",
    "loglik_sensitivity",
    "noisy_gradient_logistic",
    "noisy_second_moment",
    "BoundedSumRelease",
    "noisy_bounded_sum",
    "PrivateBounds",
    "suggest_bounds",
    "observe_bounded_sum",
    "ReusableHoldout",
    "HoldoutAnswer",
    "HoldoutExhaustedError",
    "compare_on_holdout",
    "Domain",
    "Workload",
    "MWEMResult",
    "mwem",
    "marginal_workload",
    "range_workload",
    "laplace_workload",
    "observe_mwem",
    "log_predictive_score",
    "objective_perturbation_logistic",
    "output_perturbation_logistic",
    "observe_count_measurements",
    "observe_measurements",
    "observe_noisy_gradients",
    "pca_from_second_moment",
    "observe_stats",
    "plot_ledger",
    "privatize",
    "privatize_model",
    "release",
    "resample_weighted",
    "release_posterior",
    "sample",
    "temper",
    "truncate",
]
