"""Model transforms: PyMC models in, new PyMC models out (the user's model is never mutated)."""

from .observe import observe_stats, statistics_of
from .privatize_model import PrivatisedModel, privatize_model, split_epsilon

__all__ = ["PrivatisedModel", "observe_stats", "privatize_model", "split_epsilon", "statistics_of"]
