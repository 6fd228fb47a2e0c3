"""The ledger under failure: an exception in the middle of sampling leaves a ledger that charges what was spent.

* ``method="gibbs"``: private updates run from the first draw, so a failed run is
  charged the plan's whole cost (the upper bound, checked before sampling), with the
  interruption noted, and the exception propagates;
* ``method="laplace"``: the spend is the privatisation, recorded when the noise is
  drawn; a later ``pm.sample`` failure leaves those entries and adds nothing;
* ``method="ops"`` and the war-logs ``fit_ops``: the spend is the released draws,
  recorded only once they exist; a failed run records and returns nothing.
"""

from __future__ import annotations

import math

import numpy as np
import pymc as pm
import pytest

import pymc_dp as pmdp
from pymc_dp.accounting import Budget, BudgetExceededError, PrivacyLedger
from pymc_dp.routes.gibbs import INTERRUPTED_RUN
from pymc_dp.step_methods import PrivateGibbs

N, SUCCESSES = 40, 6
RECORDS = np.r_[np.ones(SUCCESSES), np.zeros(N - SUCCESSES)].astype(np.int8)
A0 = 0.2  # p in [0.2, 0.8]: Δ = ln 4
DELTA = math.log(4.0)
T = 4.0
PER_DRAW = 2 * DELTA / T
TRUNCATE = {"p": (A0, 1 - A0)}
QUIET = dict(progressbar=False, compute_convergence_checks=False)
CRASH_AT = 30  # the step's 30th call raises: 29 draws completed in that chain


class Boom(RuntimeError):
    pass


def beta_bernoulli() -> pm.Model:
    with pm.Model() as model:
        p = pm.Beta("p", 1, 1)
        pm.Bernoulli("y", p, observed=RECORDS)
    return model


def crash_on_call(monkeypatch, at: int = CRASH_AT) -> dict:
    """Make PrivateGibbs.step raise Boom on its ``at``-th call (per process: forked workers count their own)."""
    original = PrivateGibbs.step
    calls = {"n": 0}

    def step(self, point):
        calls["n"] += 1
        if calls["n"] >= at:
            raise Boom(f"step failed at call {calls['n']}")
        return original(self, point)

    monkeypatch.setattr(PrivateGibbs, "step", step)
    return calls


def crash_after_draws(monkeypatch, after: int = CRASH_AT) -> dict:
    """Make every pm.sample call raise Boom from a callback once ``after`` draws were recorded (a real mid-run crash)."""
    original = pm.sample
    seen = {"draws": 0, "calls": 0}

    def crash(trace, draw):
        seen["draws"] += 1
        if seen["draws"] >= after:
            raise Boom("sampling failed mid-run")

    def sample(*args, callback=None, **kwargs):  # the route's own callback (its progress line) still runs
        seen["calls"] += 1
        route_callback = callback

        def both(trace, draw):
            if route_callback is not None:
                route_callback(trace=trace, draw=draw)
            crash(trace, draw)

        return original(*args, callback=both, **kwargs)

    monkeypatch.setattr(pm, "sample", sample)
    return seen


# --------------------------------------------------------------------------- gibbs


def test_gibbs_crash_charges_the_planned_cost_and_reraises(monkeypatch):
    calls = crash_on_call(monkeypatch)
    ledger = PrivacyLedger(budget=Budget(epsilon=1000.0))
    tune, draws = 20, 40
    with beta_bernoulli():
        with pytest.raises(Boom):
            pmdp.sample(draws, method="gibbs", temperature=T, truncate=TRUNCATE, tune=tune, chains=1, cores=1,
                        ledger=ledger, random_seed=1, **QUIET)
    assert calls["n"] == CRASH_AT
    completed = CRASH_AT - 1
    (entry,) = ledger.entries
    spent = ledger.total().epsilon
    assert spent >= completed * PER_DRAW
    assert spent == pytest.approx((tune + draws) * PER_DRAW, rel=1e-12)  # the plan's total
    assert entry.count == tune + draws and entry.mechanism == "private_gibbs"
    assert INTERRUPTED_RUN in entry.assumptions
    assert entry.details["interrupted"] == "Boom" and entry.details["charged"] == "planned"
    assert "failed at call" not in ledger.to_json()  # the message is not recorded, only the type
    assert spent <= ledger.budget.epsilon


def test_gibbs_crash_in_parallel_chains_charges_the_planned_cost(monkeypatch):
    crash_on_call(monkeypatch)  # forked workers inherit the patched class; each raises at its own 30th call
    ledger = PrivacyLedger()
    tune, draws, chains = 20, 40, 2
    with beta_bernoulli():
        with pytest.raises(Exception) as info:
            pmdp.sample(draws, method="gibbs", temperature=T, truncate=TRUNCATE, tune=tune, chains=chains, cores=2,
                        mp_ctx="fork", ledger=ledger, random_seed=2, **QUIET)
    assert "Boom" in repr(info.value) or "Boom" in repr(info.value.__cause__)  # ParallelSamplingError wraps it
    (entry,) = ledger.entries
    assert ledger.total().epsilon >= chains * (CRASH_AT - 1) * PER_DRAW
    assert ledger.total().epsilon == pytest.approx(chains * (tune + draws) * PER_DRAW, rel=1e-12)
    assert INTERRUPTED_RUN in entry.assumptions


def test_gibbs_crash_raised_by_pm_sample_itself_is_charged_once(monkeypatch):
    seen = crash_after_draws(monkeypatch, after=10)
    ledger = PrivacyLedger(budget=Budget(epsilon=100.0))
    with beta_bernoulli():
        with pytest.raises(Boom):
            pmdp.sample(30, method="gibbs", temperature=T, truncate=TRUNCATE, tune=10, chains=1, cores=1,
                        ledger=ledger, **QUIET)
    assert seen["calls"] == 1 and seen["draws"] == 10
    assert len(ledger) == 1 and ledger.entries[0].count == 40  # recorded once, at the planned count


def test_gibbs_a_successful_run_is_recorded_once_without_the_interruption_note():
    ledger = PrivacyLedger()
    with beta_bernoulli():
        idata = pmdp.sample(30, method="gibbs", temperature=T, truncate=TRUNCATE, tune=10, chains=1, cores=1,
                            ledger=ledger, random_seed=3, **QUIET)
    (entry,) = ledger.entries
    assert entry.count == 40 and INTERRUPTED_RUN not in entry.assumptions and "interrupted" not in entry.details
    assert pmdp.ledger(idata).total().epsilon == pytest.approx(40 * PER_DRAW, rel=1e-12)


def test_gibbs_keyboard_interrupt_caught_by_pymc_releases_the_partial_trace_at_the_planned_cost(monkeypatch):
    original = PrivateGibbs.step
    calls = {"n": 0}

    def step(self, point):
        calls["n"] += 1
        if calls["n"] == CRASH_AT:
            raise KeyboardInterrupt
        return original(self, point)

    monkeypatch.setattr(PrivateGibbs, "step", step)
    ledger = PrivacyLedger()
    with beta_bernoulli():  # PyMC swallows the interrupt and returns what it has: the existing path
        idata = pmdp.sample(40, method="gibbs", temperature=T, truncate=TRUNCATE, tune=20, chains=1, cores=1,
                            ledger=ledger, **QUIET)
    (entry,) = ledger.entries
    assert entry.count == 60 and entry.details["updates_in_trace"] == CRASH_AT - 1
    assert pmdp.ledger(idata).total().epsilon == pytest.approx(60 * PER_DRAW, rel=1e-12)


def test_gibbs_budget_is_checked_before_sampling(monkeypatch):
    def no_sampling(*args, **kwargs):  # pragma: no cover - reached only if the check failed
        raise AssertionError("pm.sample ran although the run exceeds the budget")

    monkeypatch.setattr(pm, "sample", no_sampling)
    ledger = PrivacyLedger(budget=Budget(epsilon=5.0))
    with beta_bernoulli():
        with pytest.raises(BudgetExceededError):
            pmdp.sample(100, method="gibbs", temperature=T, truncate=TRUNCATE, tune=10, chains=2, ledger=ledger,
                        **QUIET)
    assert len(ledger) == 0  # refused: nothing ran, nothing charged


# --------------------------------------------------------------------------- laplace


def test_laplace_flag_keeps_the_privatisation_entry_when_sampling_crashes(monkeypatch):
    ledger = PrivacyLedger(budget=Budget(epsilon=2.0))
    seen = crash_after_draws(monkeypatch, after=5)
    with beta_bernoulli():
        with pytest.raises(Boom):
            pmdp.sample(50, epsilon=1.0, ledger=ledger, tune=10, chains=1, cores=1, **QUIET)
    assert seen["draws"] == 5
    (entry,) = ledger.entries
    # a count: discrete Laplace noise (the geometric mechanism)
    assert entry.mechanism == "geometric" and entry.epsilon == 1.0 and entry.noise_source == "secure"
    assert ledger.total().epsilon == 1.0  # the noise was drawn; the crash adds nothing


def test_laplace_statistics_keep_their_entry_when_sampling_crashes(monkeypatch):
    ledger = PrivacyLedger()
    stats = pmdp.privatize(RECORDS, "bernoulli", 0.5, ledger=ledger)
    crash_after_draws(monkeypatch, after=5)
    with pm.Model():
        p = pm.Beta("p", 1, 1)
        pmdp.observe_stats("y", pm.Bernoulli.dist(p=p), stats)
        with pytest.raises(Boom):
            pmdp.sample(50, ledger=ledger, tune=10, chains=1, cores=1, **QUIET)
    assert [e.id for e in ledger.entries] == [stats.entry_id]
    assert ledger.total().epsilon == 0.5


# --------------------------------------------------------------------------- ops


def test_ops_crash_records_nothing_and_releases_nothing(monkeypatch):
    import pymc_dp.routes.base as base_module

    released = []
    monkeypatch.setattr(base_module, "release", lambda *a, **k: released.append(1))
    seen = crash_after_draws(monkeypatch, after=CRASH_AT)
    ledger = PrivacyLedger(budget=Budget(epsilon=10.0))
    with beta_bernoulli():
        with pytest.raises(Boom):
            pmdp.sample(100, epsilon=1.0, method="ops", truncate=TRUNCATE, tune=50, chains=1, cores=1, ledger=ledger,
                        **QUIET)
    assert seen["draws"] == CRASH_AT  # sampling really started (and read the records)
    assert len(ledger) == 0 and released == []


def test_ops_budget_is_checked_before_sampling(monkeypatch):
    def no_sampling(*args, **kwargs):  # pragma: no cover
        raise AssertionError("pm.sample ran although the release exceeds the budget")

    monkeypatch.setattr(pm, "sample", no_sampling)
    ledger = PrivacyLedger(budget=Budget(epsilon=1.5))
    with beta_bernoulli():
        with pytest.raises(BudgetExceededError):
            pmdp.sample(100, epsilon=2.0, method="ops", truncate=TRUNCATE, chains=2, ledger=ledger, **QUIET)
    assert len(ledger) == 0


def test_warlogs_fit_ops_crash_records_nothing(monkeypatch):
    from pymc_dp.examples.warlogs import data
    from pymc_dp.examples.warlogs.ops import fit_ops

    counts = data.feature_counts(data.generate("small", seed=0))
    seen = crash_after_draws(monkeypatch, after=3)
    ledger = PrivacyLedger(budget=Budget(epsilon=5.0))
    with pytest.raises(Boom):
        fit_ops(counts, 2, 1.0, ledger=ledger, draws=5, tune=2, chains=1, random_seed=0)
    assert seen["draws"] == 3
    assert len(ledger) == 0
