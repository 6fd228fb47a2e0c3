"""The OPS route of the war-logs HMM sampled by pm.sample: floored Dirichlet steps, the truncated model, fit_ops."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest

import pymc_dp as pmdp
from pymc_dp import _compat
from pymc_dp.accounting import Budget, BudgetExceededError, PrivacyLedger
from pymc_dp.examples.warlogs import data, fit_ops, ops_temperature
from pymc_dp.examples.warlogs import model as warlogs_model
from pymc_dp.routes.ops import CONVERGENCE_ASSUMPTION, MECHANISM
from pymc_dp.examples.warlogs.steps import DirichletCountsGibbs

pytestmark = pytest.mark.usefixtures("quiet_pymc")


@pytest.fixture(scope="module")
def small_counts():
    return data.feature_counts(data.generate("small", seed=0))


def _replica_model(rows: int, size: int = 3):
    """An emission variable with ``rows`` states and one region-month per state: each row its own chain."""
    with pm.Model() as model:
        theta = pm.Dirichlet("theta", a=np.full((rows, size), 0.1), default_transform=None)
        states = pm.Categorical("states", p=np.full(rows, 1.0 / rows), shape=(rows, 1))
    return model, theta, states


def test_floored_dirichlet_step_keeps_the_truncated_tempered_conditional():
    # 200 states, each alone in its region-month with the same counts: the rows of θ are
    # 200 independent chains with the same target, the tempered conditional
    # Dir(β + n/T) = Dir(0.1 + [3, 0, 8]/2) restricted to θ >= 0.05.
    rows, floor, temperature = 200, 0.05, 2.0
    model, theta, states = _replica_model(rows)
    counts = np.tile(np.array([3.0, 0.0, 8.0]), (rows, 1, 1))
    step = DirichletCountsGibbs(theta, counts, states, 0.1, temperature=temperature, floor=floor, model=model, rng=0)
    point = model.initial_point()
    point["states"] = np.arange(rows).reshape(rows, 1)
    draws = []
    for _ in range(320):
        point, _ = step.step(point)
        assert np.all(point["theta"] >= floor)
        np.testing.assert_allclose(point["theta"].sum(axis=1), 1.0, rtol=1e-12)
        draws.append(point["theta"])
    # Each chain's time average over 300 sweeps (the first 20 discarded; from the
    # centre the means settle within ~10 sweeps). The chains are independent, so the
    # spread of their 200 time averages gives an honest Monte Carlo s.e. whatever the
    # autocorrelation within a chain.
    chain_means = np.array(draws[20:]).mean(axis=0)
    alpha = 0.1 + np.array([3.0, 0.0, 8.0]) / temperature
    ref = np.random.default_rng(1).dirichlet(alpha, size=400_000)
    ref = ref[(ref >= floor).all(axis=1)]  # exact truncated draws by rejection (~37 000 kept)
    se = np.sqrt(chain_means.var(axis=0, ddof=1) / rows + ref.var(axis=0) / ref.shape[0])
    # 4.5 s.e. of the difference: a two-sided normal tail of 7e-6 per component. The
    # s.e. is ~0.001; ignoring the temperature (Dir(0.1 + [3, 0, 8])) moves the means by
    # ~0.02, and an untruncated draw moves the middle one by more.
    assert np.all(np.abs(chain_means.mean(axis=0) - ref.mean(axis=0)) <= 4.5 * se)


@pytest.mark.parametrize("floor", [0.5, 1 / 3, 0.0, -0.01, float("nan"), "low", True])
def test_bad_floor_is_refused_naming_the_argument(floor):
    model, theta, states = _replica_model(2)
    with pytest.raises(ValueError, match="floor"):
        DirichletCountsGibbs(theta, np.ones((2, 1, 3)), states, 0.1, floor=floor, model=model)


def test_truncated_model_density_and_start(small_counts):
    ops = ops_temperature(1.0)
    model = warlogs_model.hmm_model(small_counts, 2, temperature=ops["temperature"], floors=ops["floors"])
    point = model.initial_point()
    for name, size in zip(data.FEATURES, data.FEATURE_SIZES):
        np.testing.assert_allclose(point[f"theta_{name}"], 1.0 / size)  # inside every floor
    logp = model.compile_logp(mode="FAST_COMPILE")
    assert np.isfinite(logp(point))
    outside = dict(point)
    outside["theta_friendly_casualty"] = np.array([[0.01, 0.99], [0.5, 0.5]])  # below a0 = 0.05
    assert logp(outside) == -np.inf
    with pytest.raises(ValueError, match=r"floors\[2\]"):
        warlogs_model.hmm_model(small_counts, 2, floors=[0.01, 0.001, 0.5, 0.05, 0.05])
    with pytest.raises(ValueError, match="floors"):
        warlogs_model.hmm_model(small_counts, 2, floors=[0.01])


def test_fit_ops_releases_one_draw_per_chain_and_charges_the_ledger(small_counts):
    ledger = PrivacyLedger(budget=Budget(epsilon=2.0))
    released = fit_ops(small_counts, 2, 1.0, ledger=ledger, draws=3, tune=2, chains=2, random_seed=3)
    ops = ops_temperature(1.0)
    # Only the final draw of each chain of the free variables, and the ledger.
    assert set(_compat.group_names(released)) == {"posterior", "privacy"}
    post = released.posterior
    assert set(post.data_vars) == {f"theta_{f}" for f in data.FEATURES} | {"transitions", "initial", "states"}
    assert post.sizes["chain"] == 2 and post.sizes["draw"] == 1 and int(post["draw"].values[0]) == 2
    assert post["states"].shape == (2, 1, 3, 72)
    for name, a0 in zip(data.FEATURES, ops["floors"]):
        assert np.all(post[f"theta_{name}"].values >= a0)
    assert not {"sampling_time", "tuning_steps"} & set(released.attrs)
    # One entry: two released draws of 2Δ/T = ε each, under the convergence assumption.
    (entry,) = ledger.entries
    assert entry.mechanism == MECHANISM and entry.count == 2 and entry.noise_source == "sampler"
    assert entry.epsilon == pytest.approx(2 * ops["sensitivity"] / ops["temperature"]) == pytest.approx(1.0)
    assert entry.assumptions[0] == CONVERGENCE_ASSUMPTION
    assert any("replace-one" in a for a in entry.assumptions)
    assert any("a0 = 1/(M K_d)" in a for a in entry.assumptions)
    assert entry.details["sensitivity"] == pytest.approx(19.1945, abs=1e-4)
    assert entry.details["temperature"] == pytest.approx(ops["temperature"])
    assert ledger.total().epsilon == pytest.approx(2.0)
    assert pmdp.ledger(released) == ledger


def test_fit_ops_charges_less_than_epsilon_when_the_temperature_is_capped(small_counts):
    ledger = PrivacyLedger()
    released = fit_ops(small_counts, 1, 100.0, ledger=ledger, draws=1, tune=0, chains=1)
    assert released.posterior.sizes["draw"] == 1
    (entry,) = ledger.entries
    delta = ops_temperature(100.0)["sensitivity"]
    assert entry.details["temperature"] == 1.0 and entry.epsilon == pytest.approx(2 * delta)  # 38.4 < 100


def _no_sampling(*args, **kwargs):
    raise AssertionError("pm.sample must not run")


@pytest.mark.parametrize("budget, chains", [(0.5, 1), (1.5, 2)])
def test_fit_ops_checks_the_budget_before_sampling(small_counts, monkeypatch, budget, chains):
    monkeypatch.setattr(pm, "sample", _no_sampling)
    ledger = PrivacyLedger(budget=Budget(epsilon=budget))
    with pytest.raises(BudgetExceededError):
        fit_ops(small_counts, 2, 1.0, ledger=ledger, chains=chains)
    assert len(ledger) == 0


def test_fit_ops_records_nothing_when_sampling_fails(small_counts, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("sampler crashed")

    monkeypatch.setattr(pm, "sample", broken)
    ledger = PrivacyLedger(budget=Budget(epsilon=5.0))
    with pytest.raises(RuntimeError, match="crashed"):
        fit_ops(small_counts, 2, 1.0, ledger=ledger)
    assert len(ledger) == 0


def test_fit_ops_refuses_bad_arguments(small_counts, monkeypatch):
    monkeypatch.setattr(pm, "sample", _no_sampling)
    with pytest.raises(ValueError, match="ledger"):
        fit_ops(small_counts, 2, 1.0, ledger=None)
    with pytest.raises(ValueError, match="epsilon"):
        fit_ops(small_counts, 2, 0.0, ledger=PrivacyLedger())
    with pytest.raises(ValueError, match="replace"):
        fit_ops(small_counts, 2, 1.0, ledger=PrivacyLedger(neighbouring="add_remove"))
    with pytest.raises(ValueError, match="chains"):
        fit_ops(small_counts, 2, 1.0, ledger=PrivacyLedger(), chains=0)
    with pytest.raises(ValueError, match="multiplier"):
        fit_ops(small_counts, 2, 1.0, ledger=PrivacyLedger(), multiplier=1.0)
