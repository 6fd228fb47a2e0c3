"""PyMC's distribution catalogue as observed variables, in regression form, with coords and dims.

Each case is a likelihood as the docs write it — a per-record covariate ``x`` (``pm.Data``,
``dims="obs"``) entering a parameter through its usual link (``a + b * x``, ``exp``,
``invlogit``, a softmax), its priors, and the one declaration a user gives (``loglik_clip``:
a few units below a typical term, at or above the term's maximum; chosen from the
likelihood's form, not from the data). The records are drawn from the model itself at a
fixed truth (``pm.do``), then observed (``pm.observe``), so every case's data fit its
likelihood. Nothing here is written for pymc_dp.

:data:`CASES` maps a name to its :class:`Case`; :func:`build` returns the model.
``refused`` names what pymc_dp says instead of running, for the likelihoods it cannot
prove private (listed in the docs' route table).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pymc as pm
import pytensor.tensor as pt

N = 120
SEED = 20261127


@dataclass(frozen=True)
class Case:
    likelihood: Callable[[Any], None]
    clip: tuple[float, float] = (-9.0, 1.0)
    truth: dict[str, Any] = field(default_factory=dict)
    refused: str | None = None
    coords: dict[str, Any] = field(default_factory=dict)


def _eta(x: Any) -> Any:
    return pm.Normal("a", 0.0, 1.0) + pm.Normal("b", 0.0, 1.0) * x


def _scale(name: str = "s") -> Any:
    return pm.HalfNormal(name, 1.0)


def _rows(x: Any, k: int) -> Any:
    """A (records, k) linear predictor: one column per outcome category or dimension."""
    slopes = pm.Normal("b", 0.0, 1.0, dims="dim")
    return pm.Normal("a", 0.0, 1.0, dims="dim") + x[:, None] * slopes


def _y(family: Any, *args: Any, **kw: Any) -> None:
    """Register the likelihood ``y`` (a distribution, its parameters) along the records."""
    family("y", *args, dims=kw.pop("dims", "obs"), **kw)


def _uniform(x: Any) -> None:
    eta = _eta(x)
    _y(pm.Uniform, lower=eta - 1.0, upper=eta + pm.HalfNormal("w", 2.0))


def _triangular(x: Any) -> None:
    eta = _eta(x)
    _y(pm.Triangular, lower=eta - 1.0, c=eta, upper=eta + 1.0)


def _poisson_mixture(x: Any) -> None:
    rate = pm.math.exp(_eta(x))
    _y(pm.Mixture, w=pm.Dirichlet("w", np.ones(2)), comp_dists=[pm.Poisson.dist(rate), pm.Poisson.dist(rate + 6.0)])


TRUTH = {"a": 0.3, "b": 0.5, "s": 0.8}
CASES: dict[str, Case] = {
    # ---- continuous
    "Normal": Case(lambda x: _y(pm.Normal, mu=_eta(x), sigma=_scale())),
    "StudentT": Case(lambda x: _y(pm.StudentT, nu=5, mu=_eta(x), sigma=_scale())),
    "Cauchy": Case(lambda x: _y(pm.Cauchy, alpha=_eta(x), beta=_scale())),
    "Laplace": Case(lambda x: _y(pm.Laplace, mu=_eta(x), b=_scale())),
    "AsymmetricLaplace": Case(lambda x: _y(pm.AsymmetricLaplace, mu=_eta(x), b=_scale(), kappa=1.5)),
    "Logistic": Case(lambda x: _y(pm.Logistic, mu=_eta(x), s=_scale())),
    "SkewNormal": Case(lambda x: _y(pm.SkewNormal, mu=_eta(x), sigma=_scale(), alpha=2.0)),
    "SkewStudentT": Case(lambda x: _y(pm.SkewStudentT, mu=_eta(x), sigma=_scale(), a=3.0, b=2.0)),
    "ExGaussian": Case(lambda x: _y(pm.ExGaussian, mu=_eta(x), sigma=_scale(), nu=0.5)),
    "Gumbel": Case(lambda x: _y(pm.Gumbel, mu=_eta(x), beta=_scale())),
    "Moyal": Case(lambda x: _y(pm.Moyal, mu=_eta(x), sigma=_scale())),
    "TruncatedNormal": Case(lambda x: _y(pm.TruncatedNormal, mu=_eta(x), sigma=_scale(), lower=-3.0, upper=3.5)),
    # Support set by the parameters: a clip cannot keep its edge (one record may not veto a value).
    "Uniform": Case(_uniform, truth={"w": 1.5}, refused="support is set by parameters"),
    "Triangular": Case(_triangular, refused="support is set by parameters"),
    "LogNormal": Case(lambda x: _y(pm.LogNormal, mu=_eta(x), sigma=_scale())),
    "Gamma": Case(lambda x: _y(pm.Gamma, mu=pm.math.exp(_eta(x)), sigma=_scale())),
    "InverseGamma": Case(lambda x: _y(pm.InverseGamma, alpha=3.0, beta=pm.math.exp(_eta(x)))),
    "Exponential": Case(lambda x: _y(pm.Exponential, lam=pm.math.exp(-_eta(x)))),
    "Weibull": Case(lambda x: _y(pm.Weibull, alpha=pm.HalfNormal("k", 2.0), beta=pm.math.exp(_eta(x))),
                    truth={"k": 1.5}),
    "HalfNormal": Case(lambda x: _y(pm.HalfNormal, sigma=pm.math.exp(_eta(x)))),
    "HalfStudentT": Case(lambda x: _y(pm.HalfStudentT, nu=5, sigma=pm.math.exp(_eta(x)))),
    "HalfCauchy": Case(lambda x: _y(pm.HalfCauchy, beta=pm.math.exp(_eta(x)))),
    "ChiSquared": Case(lambda x: _y(pm.ChiSquared, nu=pm.math.exp(_eta(x)) + 1.0)),
    "Wald": Case(lambda x: _y(pm.Wald, mu=pm.math.exp(_eta(x)), lam=pm.HalfNormal("lam", 5.0)), truth={"lam": 3.0}),
    "Pareto": Case(lambda x: _y(pm.Pareto, alpha=pm.math.exp(_eta(x)) + 1.0, m=1.0)),
    "Rice": Case(lambda x: _y(pm.Rice, nu=pm.math.exp(_eta(x)), sigma=_scale())),
    "Beta": Case(lambda x: _y(pm.Beta, mu=pm.math.invlogit(_eta(x)), nu=pm.HalfNormal("kappa", 20.0)),
                 clip=(-8.0, 3.0), truth={"kappa": 10.0}),
    "Kumaraswamy": Case(lambda x: _y(pm.Kumaraswamy, a=pm.math.exp(_eta(x)), b=2.0), clip=(-8.0, 2.0)),
    "LogitNormal": Case(lambda x: _y(pm.LogitNormal, mu=_eta(x), sigma=_scale()), clip=(-8.0, 3.0)),
    "VonMises": Case(lambda x: _y(pm.VonMises, mu=_eta(x), kappa=pm.HalfNormal("kappa", 5.0)), truth={"kappa": 2.0}),
    # ---- discrete
    "Bernoulli": Case(lambda x: _y(pm.Bernoulli, logit_p=_eta(x)), clip=(-8.0, 0.0)),
    "Binomial": Case(lambda x: _y(pm.Binomial, n=10, p=pm.math.invlogit(_eta(x))), clip=(-10.0, 0.0)),
    "BetaBinomial": Case(lambda x: _y(pm.BetaBinomial, n=10, alpha=5 * pm.math.exp(_eta(x)), beta=5.0),
                         clip=(-10.0, 0.0)),
    "Poisson": Case(lambda x: _y(pm.Poisson, mu=pm.math.exp(_eta(x))), clip=(-10.0, 0.0)),
    "NegativeBinomial": Case(lambda x: _y(pm.NegativeBinomial, mu=pm.math.exp(_eta(x)), alpha=pm.HalfNormal("alpha", 5.0)),
                             clip=(-10.0, 0.0), truth={"alpha": 3.0}),
    "Geometric": Case(lambda x: _y(pm.Geometric, p=pm.math.invlogit(_eta(x))), clip=(-10.0, 0.0)),
    "DiscreteWeibull": Case(lambda x: _y(pm.DiscreteWeibull, q=pm.math.invlogit(_eta(x)), beta=1.5), clip=(-10.0, 0.0)),
    "Categorical": Case(lambda x: _y(pm.Categorical, p=pm.math.softmax(
        pt.concatenate([pt.zeros((x.shape[0], 1)), _rows(x, 2)], axis=1), axis=-1)),
        clip=(-8.0, 0.0), coords={"dim": [1, 2]}, truth={"a": np.array([0.3, -0.2]), "b": np.array([0.5, -0.5])}),
    "OrderedLogistic": Case(lambda x: _y(pm.OrderedLogistic, eta=pm.Normal("b", 0.0, 1.0) * x, cutpoints=pm.Normal(
        "cut", [-1.0, 0.0, 1.0], 1.0, transform=pm.distributions.transforms.ordered, dims="cutpoint")),
        clip=(-8.0, 0.0), coords={"cutpoint": [0, 1, 2]}, truth={"b": 0.8, "cut": np.array([-1.0, 0.2, 1.2])}),
    "OrderedProbit": Case(lambda x: _y(pm.OrderedProbit, eta=pm.Normal("b", 0.0, 1.0) * x, sigma=1.0, cutpoints=pm.Normal(
        "cut", [-1.0, 0.0, 1.0], 1.0, transform=pm.distributions.transforms.ordered, dims="cutpoint")),
        clip=(-8.0, 0.0), coords={"cutpoint": [0, 1, 2]}, truth={"b": 0.8, "cut": np.array([-1.0, 0.2, 1.2])}),
    "ZeroInflatedPoisson": Case(lambda x: _y(pm.ZeroInflatedPoisson, psi=pm.Beta("psi", 2, 2), mu=pm.math.exp(_eta(x))),
                                clip=(-10.0, 0.0), truth={"psi": 0.7}),
    "ZeroInflatedBinomial": Case(lambda x: _y(pm.ZeroInflatedBinomial, psi=pm.Beta("psi", 2, 2), n=10,
                                              p=pm.math.invlogit(_eta(x))), clip=(-10.0, 0.0), truth={"psi": 0.7}),
    "ZeroInflatedNegativeBinomial": Case(lambda x: _y(pm.ZeroInflatedNegativeBinomial, psi=pm.Beta("psi", 2, 2),
                                                      mu=pm.math.exp(_eta(x)), alpha=3.0),
                                         clip=(-10.0, 0.0), truth={"psi": 0.7}),
    "HurdlePoisson": Case(lambda x: _y(pm.HurdlePoisson, psi=pm.Beta("psi", 2, 2), mu=pm.math.exp(_eta(x))),
                          clip=(-10.0, 0.0), truth={"psi": 0.7}),
    "HurdleNegativeBinomial": Case(lambda x: _y(pm.HurdleNegativeBinomial, psi=pm.Beta("psi", 2, 2),
                                                mu=pm.math.exp(_eta(x)), alpha=3.0), clip=(-10.0, 0.0),
                                   truth={"psi": 0.7}),
    "HurdleGamma": Case(lambda x: _y(pm.HurdleGamma, psi=pm.Beta("psi", 2, 2), mu=pm.math.exp(_eta(x)), sigma=_scale()),
                        truth={"psi": 0.7}),
    "HurdleLogNormal": Case(lambda x: _y(pm.HurdleLogNormal, psi=pm.Beta("psi", 2, 2), mu=_eta(x), sigma=_scale()),
                            truth={"psi": 0.7}),
    # ---- multivariate rows
    "MvNormal": Case(lambda x: _y(pm.MvNormal, mu=_rows(x, 2), chol=pm.LKJCholeskyCov(
        "chol", n=2, eta=2.0, sd_dist=pm.Exponential.dist(1.0), compute_corr=True)[0], dims=("obs", "dim")),
        clip=(-12.0, 0.0), coords={"dim": [0, 1]},
        truth={"a": np.array([0.3, -0.2]), "b": np.array([0.5, -0.5]), "chol": np.array([0.8, 0.3, 0.7])}),
    "MvStudentT": Case(lambda x: _y(pm.MvStudentT, nu=5, mu=_rows(x, 2), chol=pm.LKJCholeskyCov(
        "chol", n=2, eta=2.0, sd_dist=pm.Exponential.dist(1.0), compute_corr=True)[0], dims=("obs", "dim")),
        clip=(-12.0, 0.0), coords={"dim": [0, 1]},
        truth={"a": np.array([0.3, -0.2]), "b": np.array([0.5, -0.5]), "chol": np.array([0.8, 0.3, 0.7])}),
    "Dirichlet": Case(lambda x: _y(pm.Dirichlet, a=pm.math.exp(_rows(x, 3)), dims=("obs", "dim")),
                      clip=(-6.0, 6.0), coords={"dim": [0, 1, 2]},
                      truth={"a": np.array([1.0, 1.5, 0.5]), "b": np.array([0.3, -0.3, 0.0])}),
    "Multinomial": Case(lambda x: _y(pm.Multinomial, n=10, p=pm.math.softmax(_rows(x, 3), axis=-1), dims=("obs", "dim")),
                        clip=(-10.0, 0.0), coords={"dim": [0, 1, 2]},
                        truth={"a": np.array([0.3, 0.0, -0.3]), "b": np.array([0.5, 0.0, -0.5])}),
    "DirichletMultinomial": Case(lambda x: _y(pm.DirichletMultinomial, n=10, a=pm.math.exp(_rows(x, 3)) * 5,
                                              dims=("obs", "dim")),
                                 clip=(-10.0, 0.0), coords={"dim": [0, 1, 2]},
                                 truth={"a": np.array([0.3, 0.0, -0.3]), "b": np.array([0.5, 0.0, -0.5])}),
    # ---- mixtures, censoring, truncation
    "Mixture": Case(_poisson_mixture, clip=(-10.0, 0.0), truth={"w": np.array([0.6, 0.4])}),
    "Censored": Case(lambda x: _y(pm.Censored, dist=pm.Normal.dist(_eta(x), _scale()), lower=-1.5, upper=1.5)),
    "CensoredWeibull": Case(lambda x: _y(pm.Censored, dist=pm.Weibull.dist(alpha=pm.HalfNormal("k", 2.0),
                                                                           beta=pm.math.exp(_eta(x))),
                                         lower=None, upper=3.0), truth={"k": 1.5}),
    "Truncated": Case(lambda x: _y(pm.Truncated, dist=pm.Normal.dist(_eta(x), _scale()), lower=-2.0, upper=None)),
    "TruncatedPoisson": Case(lambda x: _y(pm.Truncated, dist=pm.Poisson.dist(pm.math.exp(_eta(x))), lower=1, upper=None),
                             clip=(-10.0, 0.0)),
    # ---- custom distributions
    "CustomDist(logp)": Case(lambda x: _y(pm.CustomDist, _eta(x), _scale(), logp=_normal_logp,
                                          random=_normal_random)),
    "CustomDist(dist)": Case(lambda x: _y(pm.CustomDist, _eta(x), _scale(), dist=_lognormal_dist)),
}


def _normal_logp(value: Any, mu: Any, sigma: Any) -> Any:
    return -0.5 * ((value - mu) / sigma) ** 2 - pt.log(sigma) - 0.5 * np.log(2 * np.pi)


def _normal_random(mu: Any, sigma: Any, rng: Any = None, size: Any = None) -> Any:
    return rng.normal(mu, sigma, size=size)


def _lognormal_dist(mu: Any, sigma: Any, size: Any) -> Any:
    return pm.math.exp(pm.Normal.dist(mu, sigma, size=size))


def _normal_mixture(x: Any) -> None:
    eta = _eta(x)
    mu = pt.stack([eta, eta + pm.HalfNormal("d", 5.0)], axis=-1)
    _y(pm.NormalMixture, w=pm.Dirichlet("w", np.ones(2)), mu=mu, sigma=0.5)


CASES["NormalMixture"] = Case(_normal_mixture, truth={"w": np.array([0.6, 0.4]), "d": 3.0})


def _ar(x: Any) -> None:
    rho = pm.Normal("rho", 0.0, 0.5, dims="lag")
    pm.AR("y", rho=rho, sigma=_scale(), init_dist=pm.Normal.dist(0.0, 2.0), constant=False, ar_order=1, dims="obs")


def _random_walk(x: Any) -> None:
    pm.GaussianRandomWalk("y", mu=pm.Normal("drift", 0.0, 1.0), sigma=_scale(), init_dist=pm.Normal.dist(0.0, 2.0),
                          dims="obs")


# A step enters two terms (its own and the next step's): half the width buys the same draws.
CASES["AR"] = Case(_ar, clip=(-5.0, 1.0), coords={"lag": [1]}, truth={"rho": np.array([0.6])})
CASES["GaussianRandomWalk"] = Case(_random_walk, clip=(-5.0, 1.0), truth={"drift": 0.2})


def covariate() -> np.ndarray:
    return np.random.default_rng(SEED).normal(size=N)


def build(name: str) -> pm.Model:
    """The model of case ``name``, observed on records drawn from it at its truth (fixed seed)."""
    case = CASES[name]
    with pm.Model(coords={"obs": np.arange(N), **case.coords}) as generative:
        x = pm.Data("x", covariate(), dims="obs")
        case.likelihood(x)
    truth = {k: v for k, v in {**TRUTH, **case.truth}.items() if k in generative.named_vars}
    fixed = pm.do(generative, {generative[k]: np.asarray(v, dtype=generative[k].dtype) for k, v in truth.items()})
    offset = sorted(CASES).index(name)
    records = pm.draw(fixed["y"], random_seed=SEED + offset)
    return pm.observe(generative, {"y": records})


def _shared_coordinates(trace: Any, model: pm.Model) -> dict[str, np.ndarray]:
    """Every scalar coordinate of the model's free variables in ``trace``'s posterior (draws flattened)."""
    from pymc_dp import _compat

    post = _compat.get_group(trace, "posterior")
    out = {}
    for rv in model.free_RVs:
        if rv.name not in post:
            continue
        values = np.asarray(post[rv.name].values)
        flat = values.reshape(values.shape[0] * values.shape[1], -1)
        out.update({f"{rv.name}[{i}]": flat[:, i] for i in range(flat.shape[1])})
    return out


def release_beside_plain(name: str, epsilon: float = 100.0, seed: int = 5) -> dict[str, Any]:
    """``pmdp.sample(epsilon=, loglik_clip=)`` on case ``name`` beside plain ``pm.sample`` on the same records.

    Returns the route, the ledger's total, T and the number of released draws, each coordinate's distance
    between the released mean and plain PyMC's posterior mean in plain posterior s.d., and both times.
    """
    import pymc_dp as pmdp

    case = CASES[name]
    options = dict(tune=400, chains=2, cores=1, progressbar=False, compute_convergence_checks=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        released = pmdp.sample(400, epsilon=epsilon, model=build(name), loglik_clip=case.clip, random_seed=seed,
                               **options)
        private_time = time.perf_counter() - start
        start = time.perf_counter()
        with build(name):
            plain = pm.sample(1000, random_seed=seed + 1, **options)
        plain_time = time.perf_counter() - start
    ledger = pmdp.ledger(released)
    entry = ledger.entries[0]
    model = build(name)
    ours, theirs = _shared_coordinates(released, model), _shared_coordinates(plain, model)
    return {
        "route": entry.details["route"], "epsilon": ledger.total().epsilon, "temperature": entry.details["temperature"],
        "draws": entry.count,
        "distance": {k: float(abs(ours[k].mean() - v.mean()) / v.std()) for k, v in theirs.items() if k in ours},
        "missing": sorted(set(theirs) - set(ours)), "time": private_time, "plain_time": plain_time,
    }
