"""One meaning of a record: per-record inputs under a log-likelihood clip, and clipping any likelihood."""

from __future__ import annotations

import warnings

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

import pymc_dp as pmdp
from pymc_dp.model.loglik_clip import clip_terms

RNG = np.random.default_rng(3)
X = RNG.normal(size=(50, 2))
Y = RNG.normal(size=50)
IDX = RNG.integers(0, 3, 50)


def _regression(mean):
    with pm.Model() as model:
        b = pm.Normal("b", 0, 1, shape=3)
        pm.Normal("y", mean(b), 1.0, observed=Y)
    return model


ROW_LOCAL = {
    "X @ beta": lambda b: pt.as_tensor(X) @ b[:2],
    "a column": lambda b: pt.as_tensor(X)[:, 0] * b[0] + pt.as_tensor(X)[:, 1] * b[1],
    "a sum over covariates": lambda b: (pt.as_tensor(X) * b[:2]).sum(axis=1),
    "a group index": lambda b: b[pt.as_tensor(IDX)],
    "a switch on time": lambda b: pt.switch(b[0] >= pt.as_tensor(np.arange(50.0)), b[1], b[2]),
}
CROSS_RECORD = {
    "centred symbolically": (lambda b: (pt.as_tensor(X) - pt.as_tensor(X).mean(0)) @ b[:2], "reduction over the records"),
    "sorted": (lambda b: pt.sort(pt.as_tensor(X[:, 0])) * b[0], "SortOp"),
    "a slice of the records": (lambda b: pt.as_tensor(X)[1:, 0].sum() * b[0] + pt.zeros(50), "slice"),
    "records indexed by records": (lambda b: pt.as_tensor(X[:, 0])[pt.as_tensor(IDX)] * b[0], "indexed by another"),
    "a product of two records' columns": (
        lambda b: pt.as_tensor(X[:, 0]) @ pt.as_tensor(X[:, 1]) * b[0] + pt.zeros(50), "product"
    ),
    "a transposed design": (lambda b: pt.dot(b[:2], pt.as_tensor(X.T)), "not one row per record"),
    "a cumulative sum": (lambda b: pt.cumsum(pt.as_tensor(X[:, 0])) * b[0], "cumulative"),
    "a softmax over the records": (lambda b: pt.special.softmax(pt.as_tensor(X[:, 0]) * b[0]), "normalisation over"),
    "a join along the records": (lambda b: pt.concatenate([pt.as_tensor(X[:, 0]) * b[0], pt.zeros(0)]), "join along"),
    "records in a core dimension": (
        lambda b: pt.linalg.solve(pt.eye(50)[None] + b[0] ** 2, pt.as_tensor(X.T)[:, :, None])[0, :, 0],
        "core dimension|not known|not one row"),
    "rows taken in another order": (
        lambda b: pt.take_along_axis(pt.as_tensor(X) * b[:2], pt.as_tensor(np.zeros((50, 1), dtype=int)), axis=1)[::-1, 0],
        "slice"),
}


@pytest.mark.parametrize("name", ROW_LOCAL)
def test_per_record_inputs_are_part_of_the_record_under_a_clip(name):
    model = _regression(ROW_LOCAL[name])
    with pytest.raises(ValueError, match="vary by record.*loglik_clip"):
        pmdp.loglik_sensitivity(model)
    assert pmdp.loglik_sensitivity(pmdp.clip_loglik(model, -8, 1)).total == 9


@pytest.mark.parametrize("name", CROSS_RECORD)
def test_inputs_reaching_other_records_terms_are_refused_even_under_a_clip(name):
    mean, why = CROSS_RECORD[name]
    with pytest.raises(ValueError, match=why):
        pmdp.loglik_sensitivity(pmdp.clip_loglik(_regression(mean), -8, 1))


def test_per_record_data_in_a_prior_is_still_refused():
    with pm.Model() as model:
        m = pm.Normal("m", pt.as_tensor(Y).mean(), 1)
        pm.Normal("y", m, 1.0, observed=Y)
    with pytest.raises(ValueError, match="prior of 'm' depend"):
        pmdp.loglik_sensitivity(pmdp.clip_loglik(model, -8, 1))


def _terms(build):
    with pm.Model() as model:
        build()
    clipped = pmdp.clip_loglik(model, -3.0, 0.5)
    return clipped, clip_terms(clipped.observed_RVs[0], clipped)


def test_clip_loglik_serves_mixtures_custom_and_time_series_with_their_term_counts():
    walk = np.cumsum(Y)
    cases = {
        "mixture": (lambda: pm.NormalMixture("y", w=pm.Dirichlet("w", np.ones(2)), mu=np.array([-1.0, 1.0]), sigma=1.0,
                                              observed=Y), 1),
        "custom": (lambda: pm.CustomDist("y", pm.Normal("m"), logp=lambda v, m: -0.5 * (v - m) ** 2, observed=Y), 1),
        "two columns": (lambda: pm.Normal("y", pm.Normal("m"), 1, observed=Y.reshape(25, 2)), 2),
        "multinomial rows": (lambda: pm.Multinomial("y", n=5, p=pm.Dirichlet("p", np.ones(3)),
                                                    observed=RNG.multinomial(5, [0.2, 0.3, 0.5], size=10)), 1),
        "AR(2)": (lambda: pm.AR("y", rho=pm.Normal("r", 0, 0.3, shape=2), sigma=1.0, init_dist=pm.Normal.dist(0, 5),
                                constant=False, observed=walk), 3),
        "random walk": (lambda: pm.GaussianRandomWalk("y", sigma=pm.HalfNormal("s"), init_dist=pm.Normal.dist(0, 5),
                                                      observed=walk), 2),
    }
    for name, (build, terms) in cases.items():
        clipped, counted = _terms(build)
        assert counted.per_record == terms, name
        assert pmdp.loglik_sensitivity(clipped).total == pytest.approx(terms * 3.5), name


def test_time_series_are_clipped_step_by_step():
    """Per step: the clipped log-density equals the sum of the clipped per-step terms, computed by hand."""
    walk = np.cumsum(Y)
    with pm.Model() as model:
        pm.AR("y", rho=[0.5], sigma=1.0, init_dist=pm.Normal.dist(0, 5), constant=False, observed=walk)
    clipped = pmdp.clip_loglik(model, -3.0, 0.5)
    got = float(clipped.compile_logp(mode="FAST_COMPILE")({}))
    from scipy import stats

    steps = np.r_[stats.norm(0, 5).logpdf(walk[0]), stats.norm(0.5 * walk[:-1], 1).logpdf(walk[1:])]
    assert got == pytest.approx(np.clip(steps, -3.0, 0.5).sum(), rel=1e-9)
    with pytest.raises(ValueError, match="only neighbouring='replace'"):
        pmdp.loglik_sensitivity(clipped, neighbouring="add_remove")


def test_a_clipped_likelihood_is_never_taken_for_its_family():
    """A conjugate update or a Laplace-route family would ignore the clip: the clipped op is not a family's."""
    from pymc_dp.families import family_of_dist

    with pm.Model() as model:
        pm.Normal("y", pm.Normal("m"), 1.0, observed=Y)
    clipped = pmdp.clip_loglik(model, -3.0, 0.5)
    with pytest.raises(ValueError, match="clipped normal"):
        family_of_dist(clipped.observed_RVs[0])


def test_models_with_initval_can_be_clipped_truncated_and_tempered():
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 5, shape=2, initval=[-1.0, 1.0])
        pm.Normal("y", mu[0], 1.0, observed=Y)
    for copy in (pmdp.clip_loglik(model, -8, 1), pmdp.truncate(model, {"mu": (-3, 3)}), pmdp.temper(model, 2.0)):
        np.testing.assert_allclose(copy.rvs_to_initial_values[copy["mu"]], [-1.0, 1.0])
    np.testing.assert_allclose(model.rvs_to_initial_values[model["mu"]], [-1.0, 1.0])


# --------------------------------------------------------------------------- the Laplace route recognises regressions


def _linear(intercept=True, data=True, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(400, 2))
    y = (0.5 if intercept else 0.0) + X @ np.array([1.0, -0.5]) + rng.normal(0, 0.3, 400)
    with pm.Model(coords={"coef": ["a", "b"]}) as model:
        Xd = pm.Data("X", X) if data else X
        beta = pm.Normal("beta", 0, 2, dims="coef")
        mu = Xd @ beta
        if intercept:
            mu = pm.Normal("intercept", 0, 2) + mu
        pm.Normal("y", mu, pm.HalfNormal("sigma", 1), observed=y)
    return model


@pytest.mark.parametrize("intercept, data", [(True, True), (False, False)])
def test_the_laplace_route_privatises_a_regression_as_written(intercept, data):
    model = _linear(intercept, data)
    with pytest.raises(ValueError, match=r"linear regression on 2 covariate.*bounds=\{'y': \{'x'"):
        pmdp.sample(50, epsilon=1.0, method="laplace", model=model, progressbar=False, chains=1, selection=False)
    # target_accept as PyMC's default: this checks the privatisation, not the sampler (the route's 0.95 for
    # noise-mixing models doubles the run, 10 s to 21 s here, and far more on PyMC 5's NUTS)
    with warnings.catch_warnings():  # a divergence warning may come at 0.8; the posterior is checked below
        warnings.simplefilter("ignore", UserWarning)
        released = pmdp.sample(400, epsilon=200.0, method="laplace", model=model, target_accept=0.8,
                               bounds={"y": {"x": (-1, 1), "y": (-3, 3)}}, noise_rng=3, random_seed=3, progressbar=False,
                               chains=2)
    (entry,) = pmdp.ledger(released).entries
    assert entry.touched.startswith("y") and entry.epsilon == 200.0
    post = pmdp._compat.get_group(released, "posterior")
    assert {"beta", "sigma"} <= set(post.data_vars) and "X" not in post and "y" not in post
    # ε = 200 on 400 records: noise of scale Δ/ε ≈ 0.1 on sums of ~100: the plug-in posterior sits on the
    # truth (1, -0.5) within 0.1 (about 3 of its posterior sd of ~0.03) and σ within 0.1 of 0.3.
    np.testing.assert_allclose(post["beta"].mean(("chain", "draw")), [1.0, -0.5], atol=0.1)
    assert float(post["sigma"].mean()) == pytest.approx(0.3, abs=0.1)
    if intercept:
        assert float(post["intercept"].mean()) == pytest.approx(0.5, abs=0.1)


# --------------------------------------------------------------------------- found by an audit of the docs


def test_likelihoods_pymc_derives_from_their_generating_graph_are_clipped_too():
    """PyMC derives pm.Censored's and pm.CustomDist(dist=...)'s log-density from the generating graph; the
    clipped copy derives it itself and clips it (before this, a clip of [-5, 0] left terms of -27 000). The
    clipped censored terms equal the clipped censored log-density computed by hand."""
    from scipy import stats

    data = np.clip(Y, -1, 1)
    with pm.Model() as censored:
        pm.Censored("y", pm.Normal.dist(pm.Normal("m"), pm.HalfNormal("s")), lower=-1, upper=1, observed=data)
    clipped = pmdp.clip_loglik(censored, -5, 0)
    assert pmdp.loglik_sensitivity(clipped).total == 5
    (term,) = clipped.logp(vars=clipped.observed_RVs, sum=False, jacobian=False)
    got = clipped.compile_fn(term, inputs=clipped.value_vars, mode="FAST_COMPILE")({"m": 0.3, "s_log__": np.log(0.2)})
    exact = np.where(data <= -1, stats.norm.logcdf(-1, 0.3, 0.2),
                     np.where(data >= 1, stats.norm.logsf(1, 0.3, 0.2), stats.norm.logpdf(data, 0.3, 0.2)))
    np.testing.assert_allclose(got, np.clip(exact, -5, 0), atol=1e-6)
    assert got.min() == -5.0  # the clip binds


def _centred():
    return pt.as_tensor(X[:, 0]) - pt.as_tensor(X[:, 0]).mean()


MIXING_TERMS = {
    "a mixture component centred on the records' mean": lambda: pm.NormalMixture(
        "y", w=pm.Dirichlet("w", np.ones(2)), mu=pt.stack([_centred(), _centred() + 1], axis=-1), sigma=1.0,
        observed=X[:, 1]),
    "a censored distribution of a cumulative sum": lambda: pm.Censored(
        "y", pm.Normal.dist(pt.cumsum(pt.as_tensor(X[:, 0])) * pm.Normal("b"), 1.0), lower=-1, upper=1,
        observed=np.clip(X[:, 1], -1, 1)),
    "a zero-inflated rate of sorted covariates": lambda: pm.ZeroInflatedPoisson(
        "y", psi=0.5, mu=pt.exp(pt.sort(pt.as_tensor(X[:, 0])) * pm.Normal("b")), observed=np.zeros(50, dtype=int)),
    "ordinal probabilities normalised over the records": lambda: pm.Categorical(
        "y", p=pt.special.softmax(pt.as_tensor(X) * pm.Normal("b"), axis=0), observed=np.zeros(50, dtype=int)),
    "multivariate rows with means of the next record": lambda: pm.MvNormal(
        "y", mu=pt.roll(pt.as_tensor(X), 1, axis=0) * pm.Normal("b"), cov=np.eye(2), observed=X),
    "a generating graph that accumulates the records": lambda: pm.CustomDist(
        "y", pm.HalfNormal("s"), dist=lambda s, size: pt.cumsum(pm.Normal.dist(0, s, size=size)), observed=np.cumsum(Y)),
    "an observed value centred on its mean": lambda: pm.Normal(
        "y", pm.Normal("mu"), 1, observed=pm.Data("yd", Y) - pm.Data("yd2", Y).mean()),
    "a custom logp using a covariate's mean": lambda: pm.CustomDist(
        "y", X[:, 0], pm.Normal("mu"), logp=lambda v, x, mu: pm.logp(pm.Normal.dist(mu + x.mean(), 1), v), observed=Y),
    "a custom logp centring the values": lambda: pm.CustomDist(
        "y", pm.Normal("mu"), logp=lambda v, mu: pm.logp(pm.Normal.dist(mu, 1), v - v.mean()), observed=Y),
    "an index array broadcast against the per-record index": lambda: pm.Normal(
        "y", pm.Normal("alpha", 0, 1, shape=(51, 50))[IDX, pt.arange(50)[:, None]].sum(axis=1), 1, observed=Y),
}


@pytest.mark.parametrize("name", MIXING_TERMS)
def test_terms_that_mix_records_are_refused_wherever_the_mixing_happens(name):
    with pm.Model() as model:
        MIXING_TERMS[name]()
    with pytest.raises(ValueError, match="reach|not one per record|not one row per record|records' \\(the first"):
        pmdp.loglik_sensitivity(pmdp.clip_loglik(model, -5, 0))


def test_one_invalid_row_moves_only_its_own_term():
    """PyMC checks a parameter vector with one all(): a NaN covariate (or a zero standard error) in one row
    would push every record's term to the clip's lower end. Under the clip each row stands alone."""
    bad = X.copy()
    bad[0, 0] = np.nan
    terms = []
    for design in (X, bad):
        with pm.Model() as model:
            b = pm.Normal("b", 0, 2.5, shape=2)
            pm.Bernoulli("y", logit_p=pt.as_tensor(design) @ b, observed=(Y > 0).astype(int))
        clipped = pmdp.clip_loglik(model, -6, 0)
        (term,) = clipped.logp(vars=clipped.observed_RVs, sum=False, jacobian=False)
        terms.append(clipped.compile_fn(term, inputs=clipped.value_vars,
            mode="FAST_COMPILE")({"b": np.array([1.0, 0.5])}))
    assert terms[1][0] == -6.0
    np.testing.assert_array_equal(terms[0][1:], terms[1][1:])
