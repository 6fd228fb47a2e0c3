"""``nuts_sampler=`` (nutpie, numpyro, blackjax): accepted where the sampler never sees records unguarded.

* method="laplace" samples a record-free model: any exact sampler is post-processing.
* method="ops" needs only an exact sampler of the tempered posterior (its convergence
  assumption is recorded as for PyMC's NUTS); only the chosen draws leave.
* method="gibbs" (and "ais") run the project's private steps: another sampler would run
  its own, unprivate ones, so it is refused before anything is spent.

nutpie is the optional extra ``pymc-dp[nutpie]`` (``make`` installs it); without it
these tests skip, and the refusal of an absent sampler is tested instead.
"""

from __future__ import annotations

import importlib.util
import warnings

import numpy as np
import pymc as pm
import pytest

import pymc_dp as pmdp
from pymc_dp import _compat

HAS_NUTPIE = importlib.util.find_spec("nutpie") is not None
BOUNDS = {"y": {"x": (-10.0, 10.0)}}


def _normal_model(n: int = 300, seed: int = 0) -> pm.Model:
    x = np.random.default_rng(seed).normal(1.0, 1.5, n)
    with pm.Model(coords={"obs": np.arange(n)}) as model:
        mu = pm.Normal("mu", 0.0, 10.0)
        sigma = pm.HalfNormal("sigma", 5.0)
        pm.Normal("y", mu, sigma, observed=x, dims="obs")
    return model


@pytest.mark.nutpie
@pytest.mark.skipif(not HAS_NUTPIE, reason="nutpie is the optional extra pymc-dp[nutpie]")
def test_laplace_route_samples_the_record_free_model_with_nutpie():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = pmdp.sample(300, model=_normal_model(), epsilon=2.0, bounds=BOUNDS, nuts_sampler="nutpie",
                            tune=300, chains=2, random_seed=3, progressbar=False, noise_rng=3)
    ledger = pmdp.ledger(idata)
    assert ledger.total().epsilon == pytest.approx(2.0)
    post = idata.posterior
    assert post.sizes["chain"] == 2 and post.sizes["draw"] == 300
    # 300 records, ε = 2: the posterior of μ is centred near the truth (1.0) within a few of its sds
    assert abs(float(post["mu"].mean()) - 1.0) < 5 * float(post["mu"].std()) + 0.05
    assert set(_compat.group_names(idata)) <= {"posterior", "sample_stats", "privacy"}
    stats = idata.sample_stats
    assert _library(idata) == "nutpie"
    assert not [s for s in stats.data_vars if "time" in s]  # wall-clock statistics are left out


@pytest.mark.nutpie
@pytest.mark.skipif(not HAS_NUTPIE, reason="nutpie is the optional extra pymc-dp[nutpie]")
def test_ops_route_releases_only_the_chosen_draws_with_nutpie():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        x = np.random.default_rng(1).normal(1.0, 1.5, 200)
        with pm.Model() as model:
            mu = pm.Normal("mu", 0.0, 10.0)
            pm.Normal("y", mu, 1.5, observed=x)
        idata = pmdp.sample(200, model=model, method="ops", epsilon=2.0, bounds=BOUNDS,
                            truncate={"mu": (-5.0, 5.0)}, samples=2, nuts_sampler="nutpie",
                            tune=200, chains=2, random_seed=4, progressbar=False)
    ledger = pmdp.ledger(idata)
    assert ledger.total().epsilon == pytest.approx(2.0)
    assert idata.posterior.sizes["draw"] == 2 and idata.posterior.sizes["chain"] == 2
    assert any("converge" in a for e in ledger.entries for a in e.assumptions)
    stats = _compat.get_group(idata, "sample_stats")
    assert stats is None or set(stats.data_vars) <= {"dp_epsilon", "dp_delta"}  # no sampler internals


@pytest.mark.parametrize("method", ["gibbs", "ais"])
def test_routes_whose_privacy_lives_in_their_own_steps_refuse_another_sampler(method):
    ledger = pmdp.PrivacyLedger()
    with pm.Model() as model:
        p = pm.Beta("p", 1.0, 1.0)
        pm.Bernoulli("y", p=p, observed=np.array([0, 1, 1, 0, 1]))
    sampler = "nutpie" if HAS_NUTPIE else "numpyro"
    with pytest.raises(ValueError, match="nuts_sampler|keywords"):
        pmdp.sample(50, model=model, method=method, epsilon=1.0, truncate={"p": (0.05, 0.95)},
                    nuts_sampler=sampler, ledger=ledger, progressbar=False)
    assert not ledger.entries


def test_an_absent_sampler_is_refused_before_anything_is_spent():
    ledger = pmdp.PrivacyLedger()
    with pytest.raises(ValueError, match="not available here"):
        pmdp.sample(50, model=_normal_model(50), epsilon=1.0, bounds=BOUNDS, nuts_sampler="no-such-sampler",
                    ledger=ledger, progressbar=False)
    assert not ledger.entries


def _library(idata: object) -> str | None:
    """The sampler that made a trace (PyMC 6 labels both groups; 5.28 only the posterior, after release)."""
    return idata.posterior.attrs.get("inference_library") or idata.sample_stats.attrs.get("inference_library")


def _nutpie(n: int, noise_rng: int, seed: int = 5, model: pm.Model | None = None, **kwargs) -> object:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pmdp.sample(200, model=model or _normal_model(n), epsilon=2.0, bounds=BOUNDS, tune=200, chains=2,
                           cores=1, random_seed=seed, progressbar=False, noise_rng=noise_rng, **kwargs)


@pytest.mark.nutpie
@pytest.mark.skipif(not HAS_NUTPIE, reason="nutpie is the optional extra pymc-dp[nutpie]")
def test_laplace_route_follows_pymcs_default_sampler():
    """PyMC 6 picks nutpie wherever it is installed; the laplace route does the same (5.28 picks its own NUTS)."""
    idata = _nutpie(100, noise_rng=5)
    expected = "nutpie" if int(pm.__version__.split(".")[0]) >= 6 else "pymc"
    assert (_library(idata) == "nutpie") == (expected == "nutpie")


@pytest.mark.nutpie
@pytest.mark.skipif(not HAS_NUTPIE, reason="nutpie is the optional extra pymc-dp[nutpie]")
def test_a_reused_compiled_model_samples_exactly_what_a_fresh_compilation_does():
    """Two releases of one model share nutpie's compilation; the second must sample its own release."""
    from pymc_dp.routes import nutpie_cache

    nutpie_cache.clear()
    fresh = _nutpie(300, noise_rng=21, nuts_sampler="nutpie")
    assert nutpie_cache.stats() == {"hits": 0, "misses": 1, "uncacheable": 0}
    other = _nutpie(300, noise_rng=22, nuts_sampler="nutpie")  # another release: same graph, new numbers
    again = _nutpie(300, noise_rng=21, nuts_sampler="nutpie")  # the first release again, now from the cache
    assert nutpie_cache.stats()["hits"] == 2 and nutpie_cache.stats()["misses"] == 1
    # Same release, same seed: bit for bit the draws of the fresh compilation, so with_data swapped the
    # released numbers in (the other release's posterior differs, so a stale value would show).
    np.testing.assert_array_equal(again.posterior["mu"].values, fresh.posterior["mu"].values)
    assert not np.array_equal(other.posterior["mu"].values, fresh.posterior["mu"].values)
    # A different prior is a different graph: compiled afresh, never served the cached one.
    x = np.random.default_rng(0).normal(1.0, 1.5, 300)
    with pm.Model(coords={"obs": np.arange(300)}) as narrow:
        mu = pm.Normal("mu", 0.0, 0.1)
        sigma = pm.HalfNormal("sigma", 5.0)
        pm.Normal("y", mu, sigma, observed=x, dims="obs")
    shrunk = _nutpie(300, noise_rng=21, nuts_sampler="nutpie", model=narrow)
    assert nutpie_cache.stats()["misses"] == 2
    assert abs(float(shrunk.posterior["mu"].mean())) < 0.5 * abs(float(fresh.posterior["mu"].mean()))




@pytest.mark.parametrize(
    "method, options",
    [("ops", {"loglik_clip": (-8.0, 0.0)}), ("saa", {"ranges": {"mu": (-3.0, 3.0), "sigma": (0.0, 5.0)}, "blocks": 3})],
)
def test_routes_whose_models_hold_the_records_use_pymcs_nuts_unless_asked(monkeypatch, method, options):
    # Their sampled models are new at every call (every block), so nutpie would compile each one
    # (benchmarks/ops_samplers.py: 1.7-3.5x slower end to end); an explicit choice is still taken.
    asked = []
    original = pm.sample

    def recording(*args, **kwargs):
        asked.append(kwargs.get("nuts_sampler"))
        return original(*args, **{**kwargs, "nuts_sampler": "pymc"})  # run PyMC's whatever was asked

    monkeypatch.setattr(pm, "sample", recording)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for sampler in (None, "nutpie"):
            chosen = {} if sampler is None else {"nuts_sampler": sampler}
            if sampler == "nutpie" and not HAS_NUTPIE:
                continue
            pmdp.sample(10, tune=10, chains=1, model=_normal_model(60), epsilon=5.0, method=method, progressbar=False,
                        random_seed=1, **options, **chosen)
            assert asked and set(asked) == {sampler or "pymc"}
            asked.clear()
