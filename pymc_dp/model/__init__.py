"""Model transforms: PyMC models in, new PyMC models out (the user's model is never mutated)."""

from .measurement import Measurement, latent_sum, observe_count_measurements, observe_measurements
from .observe import observe_stats, statistics_of
from .privatize_model import PrivatisedModel, privatize_model, split_epsilon

__all__ = [
    "Measurement",
    "PrivatisedModel",
    "latent_sum",
    "observe_count_measurements",
    "observe_measurements",
    "observe_stats",
    "privatize_model",
    "split_epsilon",
    "statistics_of",
]
