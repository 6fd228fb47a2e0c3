"""Model transforms: PyMC models in, new PyMC models out (the user's model is never mutated).

Privatised statistics (``privatize_model``, ``observe_stats``, measurements) for the
Laplace route; truncation, log-likelihood clipping, tempering and the proven
log-likelihood sensitivity (``truncate``, ``clip_loglik``, ``temper``,
``loglik_sensitivity``) for tempered posteriors.
"""

from ._graph import DroppedDeterministicWarning
from .bounded_sum_measurements import observe_bounded_sum
from .mwem_measurements import observe_mwem
from .holdout_scores import HoldoutComparison, compare_on_holdout, log_predictive_score
from .gradient_measurements import logistic_from_gradients, observe_noisy_gradients
from .second_moment_measurements import pca_from_second_moment
from .measurement import Measurement, latent_sum, observe_count_measurements, observe_measurements
from .observe import observe_stats, statistics_of
from .privatize_model import PrivatisedModel, privatize_model, split_epsilon
from .sensitivity import LoglikSensitivity, loglik_sensitivity, parameter_range
from .tempering import clip_loglik, temper
from .truncation import SimplexFloor, truncate

__all__ = [
    "DroppedDeterministicWarning",
    "LoglikSensitivity",
    "Measurement",
    "PrivatisedModel",
    "SimplexFloor",
    "clip_loglik",
    "compare_on_holdout",
    "HoldoutComparison",
    "log_predictive_score",
    "latent_sum",
    "logistic_from_gradients",
    "observe_noisy_gradients",
    "observe_bounded_sum",
    "observe_mwem",
    "pca_from_second_moment",
    "loglik_sensitivity",
    "observe_count_measurements",
    "observe_measurements",
    "observe_stats",
    "parameter_range",
    "privatize_model",
    "split_epsilon",
    "statistics_of",
    "temper",
    "truncate",
]
