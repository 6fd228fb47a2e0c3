"""Small models several test files build: one place for each."""

from __future__ import annotations

import numpy as np
import pymc as pm


def normal_model(y: np.ndarray, mu_sd: float = 10.0, sigma_sd: float = 5.0) -> pm.Model:
    """``y ~ Normal(mu, sigma)`` with ``mu ~ Normal(0, mu_sd)`` and ``sigma ~ HalfNormal(sigma_sd)``."""
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, mu_sd)
        sigma = pm.HalfNormal("sigma", sigma_sd)
        pm.Normal("y", mu, sigma, observed=y)
    return model
