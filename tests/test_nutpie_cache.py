"""The reuse of nutpie's compiled models (routes/nutpie_cache.py), checked without nutpie.

A stand-in ``nutpie`` module counts compilations and records the data each compiled model
is given, so the matching rule is tested in the default suite: a new release of the same
model is served from the cache with its own released numbers, and anything that changes
the graph (a prior, the coordinates, the initial point, the compile options) is compiled
afresh. tests/test_nuts_sampler.py runs the real nutpie (the ``nutpie`` CI stage).
"""

from __future__ import annotations

import importlib.machinery
import sys
import types

import numpy as np
import pymc as pm
import pytensor
import pytest

import pymc_dp as pmdp
from pymc_dp.routes import nutpie_cache

BOUNDS = {"y": {"x": (-10.0, 10.0)}}
X = np.random.default_rng(0).normal(1.0, 1.5, 200)


class _Named:
    def __init__(self, name: str):
        self.name = name


class _Compiled:
    def __init__(self, data: dict[str, np.ndarray]):
        self.data = data
        self.shared_var_keys = {_Named(name): name for name in data}  # nutpie: variable -> key

    def with_data(self, **updates: np.ndarray) -> "_Compiled":
        return _Compiled({**self.data, **{k: np.asarray(v) for k, v in updates.items()}})


@pytest.fixture
def fake_nutpie(monkeypatch):
    module = types.ModuleType("nutpie")
    module.__spec__ = importlib.machinery.ModuleSpec("nutpie", None)
    compiled = []

    def compile_pymc_model(model, var_names=None, **options):
        from pytensor.compile.sharedvalue import SharedVariable
        from pytensor.graph.traversal import ancestors

        shared = {v.name: v.get_value() for v in ancestors([model.logp()]) if isinstance(v, SharedVariable)}
        compiled.append(model)
        return _Compiled(shared)

    module.compile_pymc_model = compile_pymc_model
    monkeypatch.setitem(sys.modules, "nutpie", module)
    nutpie_cache.clear()
    yield module, compiled
    nutpie_cache.clear()


def _released(seed: int, prior_sd: float = 10.0, n: int = 200, initval: float | None = None) -> pm.Model:
    with pm.Model(coords={"obs": np.arange(n)}) as model:
        mu = pm.Normal("mu", 0.0, prior_sd, initval=initval)
        sigma = pm.HalfNormal("sigma", 5.0)
        pm.Normal("y", mu, sigma, observed=X[:n], dims="obs")
    return pmdp.privatize_model(model, 1.0, bounds=BOUNDS, rng=seed).model


def _compile(module, model, **options):
    with nutpie_cache.reusing_compiled_models():
        return module.compile_pymc_model(model, **options)


def _released_values(model: pm.Model) -> np.ndarray:
    from pytensor.compile.sharedvalue import SharedVariable
    from pytensor.graph.traversal import ancestors

    (value,) = [v.get_value() for v in ancestors([model.logp()])
                if isinstance(v, SharedVariable) and v.name == "released_statistics_y"]
    return value


def test_a_new_release_of_the_same_model_reuses_the_compilation_with_its_own_numbers(fake_nutpie):
    module, compiled = fake_nutpie
    first, second = _released(1), _released(2)
    a = _compile(module, first)
    b = _compile(module, second)
    assert len(compiled) == 1 and nutpie_cache.stats() == {"hits": 1, "misses": 1, "uncacheable": 0}
    values_a, values_b = a.data["released_statistics_y"], b.data["released_statistics_y"]
    np.testing.assert_array_equal(values_a, _released_values(first))
    np.testing.assert_array_equal(values_b, _released_values(second))
    assert not np.array_equal(values_a, values_b)  # two releases, two noise draws
    assert module.compile_pymc_model.__name__ == "compile_pymc_model" and module.compile_pymc_model is not None


@pytest.mark.parametrize(
    "changed",
    [
        pytest.param({"prior_sd": 1.0}, id="prior"),
        pytest.param({"initval": 0.5}, id="initial-point"),
    ],
)
def test_anything_that_changes_the_graph_is_compiled_afresh(fake_nutpie, changed):
    module, compiled = fake_nutpie
    _compile(module, _released(1))
    _compile(module, _released(2, **changed))
    assert len(compiled) == 2 and nutpie_cache.stats()["hits"] == 0


def test_a_release_at_another_n_or_epsilon_reuses_the_compilation(fake_nutpie):
    """N, the noise scale and the centring are shared inputs of the likelihood, not constants of its graph."""
    module, compiled = fake_nutpie
    _compile(module, _released(1))
    _compile(module, _released(2, n=150))
    with pm.Model(coords={"obs": np.arange(200)}) as model:
        pm.Normal("y", pm.Normal("mu", 0.0, 10.0), pm.HalfNormal("sigma", 5.0), observed=X[:200], dims="obs")
    _compile(module, pmdp.privatize_model(model, 0.1, bounds=BOUNDS, rng=3).model)
    assert len(compiled) == 1 and nutpie_cache.stats()["hits"] == 2


def test_other_compile_options_or_var_names_are_compiled_afresh(fake_nutpie):
    module, compiled = fake_nutpie
    _compile(module, _released(1))
    _compile(module, _released(2), backend="jax")
    _compile(module, _released(3), var_names=["mu"])
    assert len(compiled) == 3


def test_the_patch_is_undone_and_the_cache_is_bounded(fake_nutpie):
    module, compiled = fake_nutpie
    original = module.compile_pymc_model
    for sd in range(1, nutpie_cache.CAPACITY + 3):
        _compile(module, _released(sd, prior_sd=float(sd)))
    assert module.compile_pymc_model is original
    assert len(nutpie_cache._CACHE) == nutpie_cache.CAPACITY


def test_repeated_shared_names_are_not_cached(fake_nutpie):
    import pytensor

    module, compiled = fake_nutpie
    for _ in range(2):
        with pm.Model() as model:
            a = pytensor.shared(np.array(1.0), name="same")
            b = pytensor.shared(np.array(2.0), name="same")
            pm.Normal("mu", a + b, 1.0)
        _compile(module, model)
    assert len(compiled) == 2 and nutpie_cache.stats()["uncacheable"] == 2


def test_large_array_options_are_compared_element_by_element(fake_nutpie):
    """numpy elides the middle of a large array's repr: two initial points differing there must not match."""
    module, compiled = fake_nutpie
    start = np.zeros(2000)
    moved = start.copy()
    moved[1000] = 1.0
    assert repr(start) == repr(moved)
    _compile(module, _released(1), initial_points={"mu": start})
    _compile(module, _released(2), initial_points={"mu": moved})
    _compile(module, _released(3), initial_points={"mu": moved.copy()})
    assert len(compiled) == 2 and nutpie_cache.stats()["hits"] == 1


def _small(check_bounds: bool = True, coords: dict | None = None) -> pm.Model:
    import pytensor

    with pm.Model(check_bounds=check_bounds, coords=coords) as model:
        released = pytensor.shared(np.array(2.0), name="released_statistics")
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Potential("fit", -((released - mu) ** 2))
    return model


def test_check_bounds_coordinate_dtypes_and_mutated_initvals_are_part_of_the_match(fake_nutpie):
    module, compiled = fake_nutpie
    _compile(module, _small(check_bounds=True))
    _compile(module, _small(check_bounds=False))  # nutpie compiles the parameter checks out: another model
    _compile(module, _small(coords={"g": [0, 1]}))
    _compile(module, _small(coords={"g": [0.0, 1.0]}))  # the trace's labels would differ
    assert len(compiled) == 4
    start = {"mu": 0.5}
    _compile(module, _small(), initial_points=start)
    start["mu"] = 3.0  # the user's dict, changed after the first call
    _compile(module, _small(), initial_points=start)
    assert len(compiled) == 6


def test_shapes_set_by_data_are_part_of_the_match(fake_nutpie):
    """A deterministic sized by pm.Data (a shape nutpie fixes when compiling) matches only at the same size."""
    module, compiled = fake_nutpie
    for k in (3, 4, 3):
        with pm.Model() as model:
            length = pm.Data("k", np.array(k, dtype="int64"))
            x = pm.Normal("x", 0.0, 1.0)
            pm.Deterministic("d", pm.math.ones(length) * x)
        _compile(module, model)
    assert len(compiled) == 2 and nutpie_cache.stats()["hits"] == 1


def test_gallery_models_with_dims_are_cached_and_unreadable_ones_compiled_as_pymc_would(fake_nutpie):
    module, compiled = fake_nutpie
    for groups in (["a", "b"], ["a", "b"], ["a", "b", "c"]):  # dim lengths are shared variables in PyMC 6
        with pm.Model(coords={"group": groups}) as model:
            released = pytensor.shared(np.array([1.0, 2.0]), name="released_statistics_y")
            effect = pm.Normal("effect", 0.0, 1.0, dims="group")
            pm.Potential("fit", -((released.sum() - effect.sum()) ** 2))
        _compile(module, model)
    assert len(compiled) == 2 and nutpie_cache.stats()["hits"] == 1
    with pm.Model() as model:
        model.add_coord("g", length=2)
        pm.Normal("x", 0.0, 1.0, dims="g")
    _compile(module, model)  # coordinates declared by length only
    assert len(compiled) == 3


def test_another_threads_compilation_is_neither_cached_nor_served(fake_nutpie):
    import threading

    module, compiled = fake_nutpie
    with nutpie_cache.reusing_compiled_models():
        module.compile_pymc_model(_released(1))
        worker = threading.Thread(target=lambda: module.compile_pymc_model(_released(2)))
        worker.start()
        worker.join()
    assert len(compiled) == 2 and len(nutpie_cache._CACHE) == 1 and nutpie_cache.stats()["hits"] == 0


def test_a_count_release_reuses_the_compilation_too(fake_nutpie):
    """The Bernoulli's noise-aware likelihood reads the released count and its noise scale as shared inputs."""
    module, compiled = fake_nutpie
    answers = np.random.default_rng(0).binomial(1, 0.3, 300)
    for seed in (1, 2):
        with pm.Model() as model:
            pm.Bernoulli("y", pm.Beta("p", 1.0, 1.0), observed=answers)
        _compile(module, pmdp.privatize_model(model, 0.5, rng=seed).model)
    assert len(compiled) == 1 and nutpie_cache.stats()["hits"] == 1


def _by_group(seed: int, regression: bool) -> pm.Model:
    """Three groups of 300 records: rates ``p[g]`` (one likelihood per group), or ``a[g] + b * x`` (pooled sums)."""
    rng = np.random.default_rng(seed)
    idx, x = rng.integers(0, 3, 300), rng.uniform(-1, 1, 300)
    with pm.Model(coords={"g": ["a", "b", "c"]}) as model:
        group = pm.Data("group", idx)
        if regression:
            a = pm.Normal("a", 0.0, 2.0, dims="g")
            pm.Normal("y", a[group] + pm.Normal("b", 0.0, 2.0) * x, pm.HalfNormal("s", 2.0),
                      observed=rng.normal(0.5 * x, 1.0))
            bounds = {"y": {"x": (-1.0, 1.0), "y": (-5.0, 5.0)}}
        else:
            pm.Bernoulli("y", p=pm.Beta("p", 1.0, 1.0, dims="g")[group], observed=rng.integers(0, 2, 300))
            bounds = None
    return pmdp.privatize_model(model, 1.0, bounds=bounds, rng=seed).model


_PYTENSOR_2 = int(pytensor.__version__.split(".")[0]) < 3


@pytest.mark.parametrize("regression", [
    False,
    pytest.param(True, marks=pytest.mark.skipif(
        _PYTENSOR_2, reason="PyTensor 2's AllocDiag (pt.diag of a vector, in the pooled covariance) is an OpFromGraph, "
                            "equal only to itself: no two such graphs match, whatever their names")),
], ids=["by-group", "pooled-regression"])
def test_a_release_by_group_names_each_groups_numbers_apart_and_reuses_the_compilation(fake_nutpie, regression):
    """Every group's released numbers had one name (``released_statistics_y`` three times): a model with repeated
    names cannot be cached, so nutpie compiled every release of a hierarchy afresh (measured: 27 s a call for three
    Bernoulli rates, 93 s for a varying-intercept regression, against 1.4 s and 8 s reused)."""
    module, compiled = fake_nutpie
    first = _compile(module, _by_group(1, regression))
    second = _compile(module, _by_group(2, regression))
    assert len(compiled) == 1 and nutpie_cache.stats() == {"hits": 1, "misses": 1, "uncacheable": 0}
    names = [name for name in first.data if name.startswith("released_statistics_y_group")]
    assert {name.split("_")[3] for name in names} >= {"group0", "group1", "group2"}
    assert any(not np.array_equal(first.data[k], second.data[k]) for k in names)  # each release its own numbers
