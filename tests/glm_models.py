"""Gallery-style GLMs (coords and dims, ``pm.Data`` covariates, an intercept plus ``X @ b`` through the family's
usual link), shared by the GLM tests and ``benchmarks/utility.py``."""

from __future__ import annotations

import numpy as np
import pymc as pm

#: The families :func:`glm_model` writes.
GLM_FAMILIES = ("normal", "bernoulli", "binomial", "poisson", "negative binomial", "gamma", "student")


def glm_model(family: str, x: np.ndarray, y: np.ndarray) -> pm.Model:
    """The model of ``family`` on covariates ``x`` (N × 2) and outcomes ``y``."""
    with pm.Model(coords={"coef": ["x1", "x2"]}) as model:
        X = pm.Data("X", x)
        a = pm.Normal("a", 0.0, 5.0)
        b = pm.Normal("b", 0.0, 1.0, dims="coef")
        eta = a + X @ b
        if family == "normal":
            pm.Normal("y", mu=eta, sigma=pm.HalfNormal("sigma", 2.0), observed=y)
        elif family == "bernoulli":
            pm.Bernoulli("y", logit_p=eta, observed=y)
        elif family == "binomial":
            pm.Binomial("y", n=10, logit_p=eta, observed=y)
        elif family == "poisson":
            pm.Poisson("y", mu=pm.math.exp(eta), observed=y)
        elif family == "negative binomial":
            pm.NegativeBinomial("y", mu=pm.math.exp(eta), alpha=pm.HalfNormal("alpha", 10.0), observed=y)
        elif family == "gamma":
            shape = pm.HalfNormal("k", 5.0)
            pm.Gamma("y", alpha=shape, beta=shape / pm.math.exp(eta), observed=y)
        elif family == "student":
            pm.StudentT("y", nu=pm.Gamma("nu", 2.0, 0.1), mu=eta, sigma=pm.HalfNormal("sigma", 2.0), observed=y)
        else:
            raise ValueError(f"unknown family {family!r}; one of {GLM_FAMILIES}")
    return model
