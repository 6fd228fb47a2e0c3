"""Twelve canonical models of PyMC's example gallery, written as the gallery writes them.

coords and dims, ``pm.Data`` covariates, ``X @ beta``, group indices ``a[idx]``,
``initval``, mixtures and time series: each builder returns the model exactly as a
user would copy it, on simulated data of the gallery's shape (fixed seeds), plus the
declarations ``pmdp.sample`` needs for it (:data:`DECLARATIONS`). Nothing here is
written for pymc_dp.
"""

from __future__ import annotations

import numpy as np
import pymc as pm

SEED = 20261125


def _rng(offset: int) -> np.random.Generator:
    return np.random.default_rng(SEED + offset)


def _regression_data(n: int, offset: int) -> tuple[np.ndarray, np.ndarray]:
    rng = _rng(offset)
    X = rng.normal(size=(n, 2))
    return X, np.array([0.8, -0.5])


def linear_regression(n: int = 200) -> pm.Model:
    X, beta = _regression_data(n, 1)
    y = 1.0 + X @ beta + _rng(2).normal(0, 0.7, n)
    coords = {"coef": ["x1", "x2"], "obs_id": np.arange(n)}
    with pm.Model(coords=coords) as model:
        X_data = pm.Data("X", X, dims=("obs_id", "coef"))
        intercept = pm.Normal("intercept", 0, 5)
        beta_ = pm.Normal("beta", 0, 2, dims="coef")
        sigma = pm.HalfNormal("sigma", 2)
        mu = pm.Deterministic("mu", intercept + X_data @ beta_, dims="obs_id")
        pm.Normal("y", mu=mu, sigma=sigma, observed=y, dims="obs_id")
    return model


def logistic_regression(n: int = 300) -> pm.Model:
    X, beta = _regression_data(n, 3)
    p = 1 / (1 + np.exp(-(0.3 + X @ (2 * beta))))
    y = _rng(4).binomial(1, p)
    coords = {"coef": ["x1", "x2"]}
    with pm.Model(coords=coords) as model:
        X_data = pm.Data("X", X)
        intercept = pm.Normal("intercept", 0, 2.5)
        beta_ = pm.Normal("beta", 0, 2.5, dims="coef")
        pm.Bernoulli("y", logit_p=intercept + pm.math.dot(X_data, beta_), observed=y)
    return model


def poisson_regression(n: int = 200) -> pm.Model:
    X, beta = _regression_data(n, 5)
    y = _rng(6).poisson(np.exp(0.5 + X @ (0.5 * beta)))
    with pm.Model(coords={"coef": ["x1", "x2"]}) as model:
        intercept = pm.Normal("intercept", 0, 2)
        beta_ = pm.Normal("beta", 0, 1, dims="coef")
        pm.Poisson("y", mu=pm.math.exp(intercept + X @ beta_), observed=y)
    return model


def negative_binomial_regression(n: int = 200) -> pm.Model:
    X, beta = _regression_data(n, 7)
    mu = np.exp(1.0 + X @ (0.5 * beta))
    y = _rng(8).negative_binomial(5, 5 / (5 + mu))
    with pm.Model(coords={"coef": ["x1", "x2"]}) as model:
        intercept = pm.Normal("intercept", 0, 2)
        beta_ = pm.Normal("beta", 0, 1, dims="coef")
        alpha = pm.Exponential("alpha", 0.2)
        pm.NegativeBinomial("y", mu=pm.math.exp(intercept + X @ beta_), alpha=alpha, observed=y)
    return model


def robust_regression(n: int = 150) -> pm.Model:
    rng = _rng(9)
    x = rng.uniform(0, 1, n)
    y = 1.0 + 2.0 * x + rng.standard_t(3, n) * 0.3
    with pm.Model() as model:
        xdata = pm.Data("x", x, dims="obs_id")
        intercept = pm.Normal("Intercept", 0, sigma=20)
        slope = pm.Normal("slope", 0, sigma=20)
        sigma = pm.HalfCauchy("sigma", beta=10)
        nu = pm.Gamma("nu", alpha=2, beta=0.1)
        pm.StudentT("y", mu=intercept + slope * xdata, sigma=sigma, nu=nu, observed=y, dims="obs_id")
    return model


def radon_partial_pooling(n: int = 300, counties: int = 8) -> pm.Model:
    rng = _rng(10)
    county_idx = rng.integers(0, counties, n)
    a_true = rng.normal(1.5, 0.4, counties)
    floor = rng.binomial(1, 0.3, n)
    y = a_true[county_idx] - 0.6 * floor + rng.normal(0, 0.7, n)
    coords = {"county": [f"c{i}" for i in range(counties)]}
    with pm.Model(coords=coords) as model:
        floor_idx = pm.Data("floor_idx", floor, dims="obs_id")
        county = pm.Data("county_idx", county_idx, dims="obs_id")
        mu_a = pm.Normal("mu_a", 0.0, sigma=5)
        sigma_a = pm.Exponential("sigma_a", 1)
        alpha = pm.Normal("alpha", mu=mu_a, sigma=sigma_a, dims="county")
        beta = pm.Normal("beta", 0, 2)
        theta = alpha[county] + beta * floor_idx
        sigma = pm.Exponential("sigma", 1)
        pm.Normal("y", theta, sigma=sigma, observed=y, dims="obs_id")
    return model


def eight_schools() -> pm.Model:
    y = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
    sigma = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])
    coords = {"school": ["A", "B", "C", "D", "E", "F", "G", "H"]}
    with pm.Model(coords=coords) as model:
        mu = pm.Normal("mu", mu=0, sigma=5)
        tau = pm.HalfCauchy("tau", beta=5)
        theta_tilde = pm.Normal("theta_t", mu=0, sigma=1, dims="school")
        theta = pm.Deterministic("theta", mu + tau * theta_tilde, dims="school")
        pm.Normal("obs", mu=theta, sigma=sigma, observed=y, dims="school")
    return model


def rat_tumours(groups: int = 40) -> pm.Model:
    rng = _rng(11)
    n = rng.integers(15, 30, groups)
    theta_true = rng.beta(2.4, 14.0, groups)
    y = rng.binomial(n, theta_true)
    with pm.Model(coords={"trial": np.arange(groups)}) as model:
        ab = pm.HalfNormal("ab", 10, shape=2, initval=[1.0, 5.0])
        theta = pm.Beta("theta", alpha=ab[0], beta=ab[1], dims="trial")
        pm.Binomial("y", n=n, p=theta, observed=y, dims="trial")
    return model


def coal_mining_switchpoint(missing: bool = False) -> pm.Model:
    rng = _rng(12)
    years = np.arange(1851, 1962)
    rate = np.where(years < 1891, 3.0, 1.0)
    disasters = rng.poisson(rate).astype(float)
    if missing:
        disasters[[10, 83]] = np.nan
    with pm.Model(coords={"year": years}) as model:
        switchpoint = pm.DiscreteUniform("switchpoint", lower=years.min(), upper=years.max())
        early_rate = pm.Exponential("early_rate", 1.0)
        late_rate = pm.Exponential("late_rate", 1.0)
        rate_ = pm.math.switch(switchpoint >= years, early_rate, late_rate)
        pm.Poisson("disasters", rate_, observed=disasters, dims="year")
    return model


def gaussian_mixture(n: int = 300) -> pm.Model:
    rng = _rng(13)
    z = rng.binomial(1, 0.4, n)
    x = np.where(z, rng.normal(2.0, 0.6, n), rng.normal(-1.0, 0.6, n))
    with pm.Model(coords={"cluster": ["a", "b"]}) as model:
        w = pm.Dirichlet("w", np.ones(2), dims="cluster")
        mu = pm.Normal(
            "mu", 0.0, 5.0, dims="cluster", transform=pm.distributions.transforms.ordered, initval=[-1.0, 1.0]
        )
        sigma = pm.HalfNormal("sigma", 2.0)
        pm.NormalMixture("x", w=w, mu=mu, sigma=sigma, observed=x)
    return model


def ar1(n: int = 200) -> pm.Model:
    rng = _rng(14)
    y = np.zeros(n)
    for t in range(1, n):
        y[t] = 0.7 * y[t - 1] + rng.normal(0, 1.0)
    with pm.Model() as model:
        rho = pm.Normal("rho", 0.0, 1.0)
        sigma = pm.HalfNormal("sigma", 3.0)
        pm.AR("y", rho=[rho], sigma=sigma, init_dist=pm.Normal.dist(0, 5), constant=False, observed=y)
    return model


def dirichlet_multinomial(n: int = 100) -> pm.Model:
    rng = _rng(15)
    counts = rng.multinomial(20, [0.2, 0.5, 0.3], size=n)
    coords = {"category": ["a", "b", "c"], "obs": np.arange(n)}
    with pm.Model(coords=coords) as model:
        p = pm.Dirichlet("p", a=np.ones(3), dims="category")
        pm.Multinomial("counts", n=20, p=p, observed=counts, dims=("obs", "category"))
    return model


#: Every gallery model by name.
MODELS = {
    "linear_regression": linear_regression,
    "logistic_regression": logistic_regression,
    "poisson_regression": poisson_regression,
    "negative_binomial_regression": negative_binomial_regression,
    "robust_regression": robust_regression,
    "radon_partial_pooling": radon_partial_pooling,
    "eight_schools": eight_schools,
    "rat_tumours": rat_tumours,
    "coal_mining_switchpoint": coal_mining_switchpoint,
    "gaussian_mixture": gaussian_mixture,
    "ar1": ar1,
    "dirichlet_multinomial": dirichlet_multinomial,
}


#: What a user declares for each model (besides epsilon): a log-likelihood clip for the
#: likelihoods with per-record parameters (bounds chosen from the likelihood's form, not the
#: data: a few units below a typical term, at or above its maximum), nothing for the
#: Dirichlet-Multinomial, which the Laplace route takes as it is. ``method="auto"`` picks the route.
DECLARATIONS = {
    "linear_regression": {"loglik_clip": (-8.0, 1.5)},
    "logistic_regression": {"loglik_clip": (-6.0, 0.0)},
    "poisson_regression": {"loglik_clip": (-10.0, 0.0)},
    "negative_binomial_regression": {"loglik_clip": (-10.0, 0.0)},
    # A heavy-tailed likelihood's far terms are what identify nu: a floor of -8 would make a
    # near-normal model pay no more for an outlier than the Student-t, and bias nu upwards.
    "robust_regression": {"loglik_clip": (-12.0, 1.5)},
    "radon_partial_pooling": {"loglik_clip": (-8.0, 1.5)},
    "eight_schools": {"loglik_clip": (-10.0, -2.0)},
    "rat_tumours": {"loglik_clip": (-10.0, 0.0)},
    "coal_mining_switchpoint": {"loglik_clip": (-10.0, 0.0)},
    "gaussian_mixture": {"loglik_clip": (-8.0, 0.5)},
    "ar1": {"loglik_clip": (-8.0, 0.0)},
    "dirichlet_multinomial": {},
}


#: The same regressions declared the other way the docs offer: the ranges of their covariates and outcomes (from the
#: data's generating form, not the data), which take them to the Laplace route (a Normal linear regression, the
#: radon model by county) or the measurements route (the GLMs) instead of OPS.
BOUNDS_DECLARATIONS = {
    "linear_regression": {"bounds": {"y": {"x": (-4.0, 4.0), "y": (-6.0, 8.0)}}},
    "logistic_regression": {"bounds": {"y": {"x": (-4.0, 4.0)}}},
    "poisson_regression": {"bounds": {"y": {"x": (-4.0, 4.0), "y": (0.0, 30.0)}}},
    "negative_binomial_regression": {"bounds": {"y": {"x": (-4.0, 4.0), "y": (0.0, 60.0)}}},
    "robust_regression": {"bounds": {"y": {"x": (0.0, 1.0), "y": (-10.0, 15.0)}}},
    "radon_partial_pooling": {"bounds": {"y": {"x": (0.0, 1.0), "y": (-2.0, 5.0)}}},
}
