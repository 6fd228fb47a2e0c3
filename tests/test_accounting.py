"""Unit tests of the privacy ledger, budgets and composition."""

from __future__ import annotations

import json
import math

import numpy as np
import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pymc_dp as pmdp
from pymc_dp.accounting import (
    Budget,
    BudgetExceededError,
    LedgerEntry,
    PrivacyCost,
    PrivacyLedger,
    amplified_epsilon,
    amplify_by_subsampling,
)
from pymc_dp.accounting.composition import blocks


def laplace_event(epsilon: float) -> dict:
    return {"type": "laplace", "noise_multiplier": 1.0 / epsilon}


# ----------------------------------------------------------------------------- entries


def test_entry_records_every_field_and_fills_id_and_timestamp():
    e = LedgerEntry(
        "laplace", 0.5, 0.0, count=3, touched="y:count", noise_source="secure",
        assumptions=["assumes convergence"], parallel_group="records", event=laplace_event(0.5),
        details={"sensitivity": 1.0},
    )
    assert e.count == 3 and e.touched == "y:count" and e.noise_source == "secure"
    assert e.assumptions == ("assumes convergence",)
    assert e.parallel_group == "records" and e.neighbouring == "replace"
    assert len(e.id) == 32 and e.timestamp.endswith("T00:00:00+00:00")  # dated, not timed (a timing channel)
    assert LedgerEntry("laplace", 0.5).id != LedgerEntry("laplace", 0.5).id
    assert e.basic_cost == PrivacyCost(1.5, 0.0)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"epsilon": -1.0}, "epsilon"),
        ({"epsilon": float("nan")}, "epsilon"),
        ({"epsilon": float("inf")}, "epsilon"),
        ({"delta": 1.0}, "delta"),
        ({"delta": -0.1}, "delta"),
        ({"delta": float("nan")}, "delta"),
        ({"count": 0}, "count"),
        ({"count": 1.5}, "count"),
        ({"neighbouring": "swap"}, "neighbouring"),
        ({"noise_source": "urandom"}, "noise_source"),
        ({"assumptions": "assumes convergence"}, "assumptions"),
        ({"event": {"type": "laplace"}}, "noise_multiplier"),
        ({"event": {"type": "cauchy", "scale": 1}}, "unknown event type"),
        ({"details": {"scale": float("nan")}}, "details"),
        ({"details": {"data": object()}}, "details"),
    ],
)
def test_bad_entry_fields_raise_value_error_naming_them(kwargs, name):
    args = {"mechanism": "laplace", "epsilon": 1.0, **kwargs}
    with pytest.raises(ValueError, match=name):
        LedgerEntry(**args)


def test_budget_validates_its_arguments():
    with pytest.raises(ValueError, match="budget epsilon"):
        Budget(0.0)
    with pytest.raises(ValueError, match="budget delta"):
        Budget(1.0, delta=1.5)
    with pytest.raises(ValueError, match="method"):
        Budget(1.0, method="magic")
    with pytest.raises(ValueError, match="delta > 0"):
        Budget(1.0, method="rdp")


# ----------------------------------------------------------------------------- spending


def test_spend_appends_and_totals():
    ledger = PrivacyLedger()
    ledger.spend("laplace", 0.3, touched="a")
    ledger.spend("gaussian_like", 0.2, 1e-6, touched="b")
    assert len(ledger.entries) == 2
    assert ledger.total() == PrivacyCost(pytest.approx(0.5), pytest.approx(1e-6))
    assert [e.touched for e in ledger] == ["a", "b"]
    assert ledger[ledger.entries[0].id].touched == "a"


def test_a_million_identical_steps_are_one_entry():
    ledger = PrivacyLedger()
    ledger.spend("barker_step", 1e-6, count=1_000_000)
    assert len(ledger) == 1
    assert ledger.total().epsilon == pytest.approx(1.0)


def test_budget_refusal_leaves_the_ledger_unchanged_and_names_the_numbers():
    ledger = PrivacyLedger(budget=Budget(epsilon=1.0))
    ledger.spend("laplace", 0.8, touched="y")
    before = ledger.to_json()
    with pytest.raises(BudgetExceededError) as info:
        ledger.spend("laplace", 0.3, touched="z")
    msg = str(info.value)
    assert "ε=1" in msg and "0.8" in msg and "0.3" in msg and "Nothing was drawn" in msg
    assert info.value.spent.epsilon == pytest.approx(0.8)
    assert info.value.requested.epsilon == pytest.approx(0.3)
    assert ledger.to_json() == before and len(ledger) == 1
    # spending exactly up to the budget is allowed (float rounding tolerated)
    ledger.spend("laplace", 0.2)
    assert ledger.total().epsilon == pytest.approx(1.0)


def test_budget_refuses_delta_overspend():
    ledger = PrivacyLedger(budget=Budget(epsilon=10.0, delta=1e-6))
    ledger.spend("g", 1.0, 8e-7)
    with pytest.raises(BudgetExceededError):
        ledger.spend("g", 1.0, 3e-7)
    assert len(ledger) == 1


def test_charge_refuses_before_the_body_runs_and_records_only_on_success():
    ledger = PrivacyLedger(budget=Budget(epsilon=1.0))
    ran = []
    with pytest.raises(BudgetExceededError):
        with ledger.charge("laplace", epsilon=2.0):
            ran.append(True)
    assert ran == [] and len(ledger) == 0

    with pytest.raises(RuntimeError, match="sampler broke"):
        with ledger.charge("laplace", epsilon=0.5):
            raise RuntimeError("sampler broke")
    assert len(ledger) == 0

    with ledger.charge("laplace", epsilon=0.5, touched="y", noise_source="seeded") as entry:
        pass
    assert ledger.entries == (entry,)


def test_repeat_extends_an_entry_with_budget_check():
    ledger = PrivacyLedger(budget=Budget(epsilon=1.0))
    e = ledger.spend("step", 0.1, count=5)
    new = ledger.repeat(e.id, 4)
    assert new.count == 9 and new.id == e.id and len(ledger) == 1
    assert ledger.total().epsilon == pytest.approx(0.9)
    with pytest.raises(BudgetExceededError):
        ledger.repeat(e.id, 2)
    assert ledger.entries[0].count == 9
    with pytest.raises(KeyError):
        ledger.repeat("nope")


def test_entry_under_other_relation_is_refused():
    ledger = PrivacyLedger(neighbouring="replace")
    with pytest.raises(ValueError, match="neighbouring"):
        ledger.record(LedgerEntry("laplace", 1.0, neighbouring="add_remove"))
    with pytest.raises(ValueError, match="neighbouring"):
        PrivacyLedger(neighbouring="adjacent")


def test_entry_that_understates_its_event_is_refused():
    ledger = PrivacyLedger()
    with pytest.raises(ValueError, match="understates"):
        ledger.spend("laplace", 0.4, event=laplace_event(0.5))
    with pytest.raises(ValueError, match="understates"):
        # σ/Δ = 1 is far from (1, 1e-9)-DP
        ledger.spend("gaussian", 1.0, 1e-9, event={"type": "gaussian", "noise_multiplier": 1.0})
    assert len(ledger) == 0


# ----------------------------------------------------------------------------- composition


def test_parallel_group_costs_the_max_per_round():
    ledger = PrivacyLedger()
    ledger.spend("update", 1.0, parallel_group="records")
    ledger.spend("update", 0.5, count=3, parallel_group="records")
    ledger.spend("other", 0.25)
    # rounds of the group: r1 max(1, 0.5) = 1, r2 and r3: 0.5; plus 0.25 alone
    assert ledger.total().epsilon == pytest.approx(2.25)
    bl = blocks(ledger.entries)
    assert sorted(b.rounds for b in bl) == [1, 1, 2]


def test_parallel_group_of_many_identical_members_costs_one_member():
    ledger = PrivacyLedger()
    for _ in range(1000):
        ledger.spend("latent update", 0.2, parallel_group="z", event=laplace_event(0.2))
    assert ledger.total().epsilon == pytest.approx(0.2)
    assert ledger.total("pld", 0.0).epsilon == pytest.approx(0.2)
    assert ledger.total("pld", 1e-9).epsilon == pytest.approx(0.2, abs=2e-4)
    assert ledger.total("rdp", 1e-6).epsilon < 0.2 + 2 * math.sqrt(0.02 * math.log(1e6))


def test_advanced_composition_matches_the_formula_k100_eps01():
    k, eps, dprime = 100, 0.1, 1e-6
    ledger = PrivacyLedger()
    ledger.spend("laplace", eps, count=k)
    expected = math.sqrt(2 * k * math.log(1 / dprime)) * eps + k * eps * (math.exp(eps) - 1)
    total = ledger.total("advanced", delta=dprime)
    assert total.epsilon == pytest.approx(expected, rel=1e-12)
    assert total.delta == dprime
    assert expected == pytest.approx(6.3079, abs=1e-3)  # the number, worked by hand


def test_advanced_composition_adds_the_entries_own_delta():
    k, eps, d, target = 50, 0.2, 1e-8, 1e-5
    ledger = PrivacyLedger()
    ledger.spend("m", eps, d, count=k)
    slack = target - k * d
    expected = math.sqrt(2 * k * math.log(1 / slack)) * eps + k * eps * math.expm1(eps)
    assert ledger.total("advanced", target) == PrivacyCost(pytest.approx(expected), target)
    assert ledger.total("advanced", k * d).epsilon == math.inf


def test_tight_accountants_beat_basic_and_advanced_for_10000_laplace_events():
    ledger = PrivacyLedger()
    ledger.spend("laplace", 0.01, count=10_000, event=laplace_event(0.01))
    basic = ledger.total("basic")
    adv = ledger.total("advanced", 1e-6)
    rdp = ledger.total("rdp", 1e-6)
    pld = ledger.total("pld", 1e-6)
    assert basic.epsilon == pytest.approx(100.0)
    assert adv.epsilon == pytest.approx(6.2615, abs=1e-3)
    # "well below" the basic total of 100, and below the advanced theorem
    assert rdp.epsilon < 10 and pld.epsilon < 10
    assert rdp.epsilon < adv.epsilon and pld.epsilon < adv.epsilon
    assert rdp.delta == pld.delta == 1e-6
    assert ledger.total("best", 1e-6).epsilon == pytest.approx(min(rdp.epsilon, pld.epsilon))


def test_pld_of_a_single_laplace_at_delta_zero_is_its_epsilon():
    ledger = PrivacyLedger()
    ledger.spend("laplace", 1.0, event=laplace_event(1.0))
    assert ledger.total("pld") == PrivacyCost(1.0, 0.0)
    # dp-accounting discretises the loss at 1e-4 and rounds pessimistically, so at a
    # negligible δ the PLD total sits within a grid step of the exact ε = 1.
    assert ledger.total("pld", 1e-12).epsilon == pytest.approx(1.0, abs=2e-4)


def test_generic_pure_events_compose_tightly_in_rdp_and_pld():
    ledger = PrivacyLedger()
    ledger.spend("exponential", 0.05, count=2000)  # no event: generic pure ε
    basic = ledger.total().epsilon
    assert basic == pytest.approx(100.0)
    assert ledger.total("rdp", 1e-6).epsilon < 0.2 * basic
    assert ledger.total("pld", 1e-6).epsilon < 0.2 * basic


def test_rdp_adds_approximate_events_it_cannot_model_by_basic_composition():
    ledger = PrivacyLedger()
    ledger.spend("laplace", 0.01, count=1000, event=laplace_event(0.01))
    ledger.spend("opaque", 0.5, 1e-7)
    only_laplace = PrivacyLedger()
    only_laplace.spend("laplace", 0.01, count=1000, event=laplace_event(0.01))
    total = ledger.total("rdp", 1e-6)
    part = only_laplace.total("rdp", 1e-6 - 1e-7)
    assert total.epsilon == pytest.approx(part.epsilon + 0.5)


def test_randomized_response_ln3_is_ln3_in_every_accountant():
    ledger = PrivacyLedger()
    ledger.spend("randomized_response", math.log(3), event={"type": "randomized_response", "noise_parameter": 0.5, "num_buckets": 2})
    assert ledger.total().epsilon == pytest.approx(math.log(3))
    assert ledger.total("pld", 1e-12).epsilon == pytest.approx(math.log(3), abs=2e-4)
    assert ledger.total("rdp", 1e-6).epsilon <= math.log(3) + 1e-9 + 2 * math.sqrt(math.log(3) ** 2 / 2 * math.log(1e6))


def test_total_methods_reject_missing_delta_and_unknown_names():
    ledger = PrivacyLedger()
    ledger.spend("laplace", 0.1)
    with pytest.raises(ValueError, match="delta="):
        ledger.total("advanced")
    with pytest.raises(ValueError, match="delta="):
        ledger.total("rdp")
    with pytest.raises(ValueError, match="method"):
        ledger.total("moments")


def test_best_with_no_delta_is_the_pure_total():
    ledger = PrivacyLedger()
    ledger.spend("laplace", 0.1, count=10, event=laplace_event(0.1))
    best = ledger.total("best")
    assert best.delta == 0.0 and best.epsilon <= 1.0 + 1e-9


def test_empty_ledger_costs_nothing():
    ledger = PrivacyLedger()
    for method in ("basic", "advanced", "rdp", "pld", "best"):
        assert ledger.total(method, 1e-6).epsilon == 0.0


def test_rdp_budget_admits_what_basic_refuses():
    basic = PrivacyLedger(budget=Budget(epsilon=5.0, delta=1e-6))
    rdp = PrivacyLedger(budget=Budget(epsilon=5.0, delta=1e-6, method="rdp"))
    for ledger in (basic, rdp):
        ledger.spend("laplace", 0.01, count=400, event=laplace_event(0.01))
    with pytest.raises(BudgetExceededError):
        basic.spend("laplace", 0.01, count=2000, event=laplace_event(0.01))
    rdp.spend("laplace", 0.01, count=2000, event=laplace_event(0.01))
    assert rdp.spent.epsilon <= 5.0 and rdp.total().epsilon == pytest.approx(24.0)


# ----------------------------------------------------------------------------- subsampling


def test_subsampling_replace_one_is_without_replacement():
    base = LedgerEntry("laplace", 1.0, 1e-6, event=laplace_event(1.0), touched="x")
    amp = amplify_by_subsampling(base, sample_size=100, population_size=1000)
    assert amp.epsilon == pytest.approx(math.log(1 + 0.1 * (math.e - 1)))
    assert amp.delta == pytest.approx(1e-7)
    assert amp.event["type"] == "sampled_without_replacement" and amp.event["event"] == base.event
    assert amp.id != base.id and amp.mechanism == "subsampled laplace"
    assert amp.details["subsampling"]["scheme"] == "without_replacement"
    with pytest.raises(ValueError, match="without replacement"):
        amplify_by_subsampling(base, sampling_probability=0.1)
    with pytest.raises(ValueError, match="sample_size"):
        amplify_by_subsampling(base, sample_size=2000, population_size=1000)
    ledger = PrivacyLedger()
    ledger.record(amp)
    assert ledger.total().epsilon == pytest.approx(amp.epsilon)


def test_subsampling_add_remove_is_poisson_and_pld_is_tighter_than_basic():
    base = LedgerEntry("laplace", 1.0, neighbouring="add_remove", event=laplace_event(1.0))
    amp = amplify_by_subsampling(base, sampling_probability=0.01)
    assert amp.event["type"] == "poisson_sampled"
    assert amplified_epsilon(1.0, 0.01) == pytest.approx(0.01 * (math.e - 1), rel=0.01)
    ledger = PrivacyLedger(neighbouring="add_remove")
    ledger.record(amp)
    ledger.repeat(amp.id, 999)
    assert ledger.total("pld", 1e-6).epsilon < 0.5 * ledger.total().epsilon
    with pytest.raises(ValueError, match="Poisson"):
        amplify_by_subsampling(base, sample_size=1, population_size=10)


# ----------------------------------------------------------------------------- serialising


def test_json_round_trip_loses_nothing():
    ledger = PrivacyLedger(budget=Budget(epsilon=5.0, delta=1e-5, method="rdp"))
    ledger.spend("laplace", 0.5, touched="y:sum", noise_source="secure", event=laplace_event(0.5),
                 details={"sensitivity": 2.0, "bounds": [0, 1], "nested": {"a": np.float64(1.5)}})
    ledger.spend("ops", 1.0, 1e-7, count=4, assumptions=("assumes convergence",), parallel_group="chains")
    text = ledger.to_json()
    back = PrivacyLedger.from_json(text)
    assert back == ledger
    assert back.to_json() == text
    assert back.entries[0].details["nested"]["a"] == 1.5
    assert back.budget == ledger.budget
    json.loads(text)  # plain JSON


def test_from_json_rejects_foreign_or_newer_input():
    with pytest.raises(ValueError, match="malformed"):
        PrivacyLedger.from_json("{not json")
    with pytest.raises(ValueError, match="format"):
        PrivacyLedger.from_json('{"entries": []}')
    good = json.loads(PrivacyLedger().to_json())
    good["version"] = 99
    with pytest.raises(ValueError, match="version"):
        PrivacyLedger.from_json(json.dumps(good))
    bad_entry = json.loads(PrivacyLedger().to_json())
    bad_entry["entries"] = [{**LedgerEntry("m", 1.0).to_dict(), "colour": "red"}]
    with pytest.raises(ValueError, match="colour"):
        PrivacyLedger.from_json(json.dumps(bad_entry))


def test_combine_keeps_each_spend_once():
    a = PrivacyLedger()
    shared = a.spend("laplace", 0.5)
    b = PrivacyLedger.from_json(a.to_json())
    b.spend("laplace", 0.25)
    a.repeat(shared.id, 1)
    both = PrivacyLedger.combine([a, b])
    assert len(both) == 2
    assert both.total().epsilon == pytest.approx(1.0 + 0.25)
    with pytest.raises(ValueError, match="neighbouring"):
        PrivacyLedger.combine([a, PrivacyLedger(neighbouring="add_remove")])


def test_summary_is_a_readable_table():
    ledger = PrivacyLedger(budget=Budget(3.0))
    ledger.spend("laplace", 0.5, touched="y:count", noise_source="secure")
    ledger.spend("ops", 1.0, count=2, assumptions=("assumes convergence",))
    text = ledger.summary()
    assert "laplace" in text and "y:count" in text and "secure" in text
    assert "Total (basic composition): ε = 2.5, δ = 0" in text
    assert "assumes convergence" in text and "Budget: ε = 3" in text
    assert "pld" in ledger.summary("pld", 1e-6)


def test_the_summary_numbers_each_assumption_once_and_wraps_long_ones():
    """Eight entries sharing a long assumption: the table says A1 on each row, the text is listed once below it,
    wrapped, so no line of the summary runs on past the table."""
    long = "records split into 85 disjoint groups by 'county' (parallel composition): " + "each group's statistics " * 20
    ledger = PrivacyLedger()
    for _ in range(8):
        ledger.spend("laplace", 0.1, touched="y", assumptions=(long, "N public"))
    ledger.spend("laplace", 0.1, touched="y by county", details={"groups": 85})
    text = ledger.summary()
    rows = text.splitlines()[3:12]
    assert all(r.rstrip().endswith("A1, A2") for r in rows[:8]) and rows[8].rstrip().endswith("-")
    assert "within 85 groups" in rows[8]
    assert text.count("records split into 85") == 1  # listed once, not on each row
    listed = text.split("Assumptions")[1].splitlines()[1:]
    assert listed[0].startswith("  A1   records split") and listed[-1] == "  A2   N public"
    assert max(len(line) for line in listed) <= 100


def test_top_level_reexports():
    assert pmdp.PrivacyLedger is PrivacyLedger and pmdp.Budget is Budget
    assert pmdp.BudgetExceededError is BudgetExceededError


# ----------------------------------------------------------------------------- properties

epsilons = st.floats(min_value=1e-4, max_value=5.0, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(epsilons, st.integers(1, 50), st.sampled_from([None, "g1", "g2"])), min_size=1, max_size=20))
def test_basic_total_matches_round_by_round_sum(spends):
    ledger = PrivacyLedger()
    for eps, count, group in spends:
        ledger.spend("m", eps, count=count, parallel_group=group)
    expected = sum(e * c for e, c, g in spends if g is None)
    for g in ("g1", "g2"):
        members = [(e, c) for e, c, gg in spends if gg == g]
        if members:
            rounds = max(c for _, c in members)
            expected += sum(max(e for e, c in members if c >= r) for r in range(1, rounds + 1))
    assert ledger.total().epsilon == pytest.approx(expected, rel=1e-9)
    assert PrivacyLedger.from_json(ledger.to_json()).total().epsilon == pytest.approx(expected, rel=1e-9)


@settings(max_examples=40, deadline=None)
@given(st.lists(epsilons, min_size=1, max_size=10), epsilons)
def test_refused_spend_never_changes_the_ledger(spends, extra):
    budget = sum(spends)
    ledger = PrivacyLedger(budget=Budget(epsilon=budget))
    for eps in spends:
        ledger.spend("m", eps)
    before = ledger.to_json()
    with pytest.raises(BudgetExceededError):
        ledger.spend("m", extra + budget * 1e-9)
    assert ledger.to_json() == before


def test_rdp_total_agrees_with_dp_accounting_itself():
    """Guards the curve we read from dp-accounting's RDP accountant."""
    import dp_accounting as dpa
    from dp_accounting import rdp as dpa_rdp

    ledger = PrivacyLedger()
    ledger.spend("gaussian", 2.0, 1e-5, count=50, event={"type": "gaussian", "noise_multiplier": 3.0})
    acc = dpa_rdp.RdpAccountant()
    acc.compose(dpa.GaussianDpEvent(3.0), 50)
    assert ledger.total("rdp", 1e-5).epsilon == pytest.approx(acc.get_epsilon(1e-5), rel=1e-9)


def test_subsampled_gaussian_without_replacement_is_tight_in_rdp():
    from pymc_dp.mechanisms import analytic_gaussian_sigma

    sigma = analytic_gaussian_sigma(1.0, 1e-6, 1.0)
    base = LedgerEntry("gaussian", 1.0, 1e-6, event={"type": "gaussian", "noise_multiplier": sigma})
    amp = amplify_by_subsampling(base, sample_size=100, population_size=10_000)
    ledger = PrivacyLedger()
    ledger.record(amp)
    ledger.repeat(amp.id, 999)
    basic = ledger.total()
    rdp = ledger.total("rdp", 1e-5)
    assert basic.epsilon == pytest.approx(1000 * math.log1p(0.01 * math.expm1(1.0)))
    # 1000 subsampled Gaussian steps: RDP (sampled-without-replacement Gaussian, computed
    # by dp-accounting) is far below the basic sum of the amplified ε's.
    assert rdp.epsilon < 0.25 * basic.epsilon


def test_check_all_refuses_a_group_of_spends_that_would_not_fit_together():
    ledger = PrivacyLedger(budget=Budget(epsilon=1.0))
    a, b = LedgerEntry("laplace", 0.6), LedgerEntry("laplace", 0.6)
    ledger.check_all([a])
    with pytest.raises(BudgetExceededError, match="2 spends together"):
        ledger.check_all([a, b])
    assert len(ledger) == 0


def test_random_scan_event_matches_its_three_point_laws():
    """The random-scan event's Rényi curve and PLD are those of (1−q)⊥ + q·RR_ε(0) vs (1−q)⊥ + q·RR_ε(1)."""
    import math

    import numpy as np

    from pymc_dp.accounting.events import pld, random_scan_rdp

    eps, q = 0.8, 0.15
    rr = np.array([math.exp(eps), 1.0]) / (1 + math.exp(eps))
    p = np.r_[1 - q, q * rr]
    r = np.r_[1 - q, q * rr[::-1]]
    orders = np.array([1.5, 2.0, 4.0, 16.0, 64.0])
    brute = [math.log(np.sum(p**a * r ** (1 - a))) / (a - 1) for a in orders]
    assert np.allclose(random_scan_rdp(eps, q, orders), brute, rtol=1e-10)
    event = {"type": "random_scan", "epsilon": eps, "probability": q}
    dist = pld(event, eps, 0.0, "replace", discretization=1e-4)
    for target in (0.0, 0.3, 0.6):
        exact = np.sum(np.maximum(p - math.exp(target) * r, 0.0))  # hockey-stick divergence = q·δ_RR(ε′)
        assert exact == pytest.approx(q * np.sum(np.maximum(rr - math.exp(target) * rr[::-1], 0.0)))
        assert exact * (1 - 1e-12) <= dist.get_delta_for_epsilon(target) <= exact + 2e-3  # pessimistic discretisation
    assert LedgerEntry("scan", eps, event=event).epsilon == eps  # no pure-ε amplification claimed
    with pytest.raises(ValueError, match="understates"):
        pmdp.PrivacyLedger().spend("scan", eps / 2, event=event)


def test_neighbouring_is_an_enum_stored_as_its_string():
    from pymc_dp.accounting import Neighbouring, PrivacyLedger

    ledger = PrivacyLedger(neighbouring=Neighbouring.ADD_REMOVE)
    assert ledger.neighbouring == "add_remove" and type(ledger.neighbouring) is str
    ledger.spend("laplace", 1.0)
    assert PrivacyLedger.from_json(ledger.to_json()) == ledger
    assert [str(n) for n in Neighbouring] == ["replace", "add_remove"]


@pytest.mark.parametrize(
    "first", ["pymc_dp.accounting.events", "pymc_dp.accounting.subsampling", "pymc_dp.accounting.entry"]
)
def test_the_accounting_modules_import_in_any_order_without_a_cycle(first):
    import subprocess
    import sys

    code = f"import {first}; import pymc_dp.accounting.entry, pymc_dp.accounting.events, pymc_dp.accounting.subsampling"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True).returncode == 0
    # and no module-level import is deferred into a function to dodge one
    import inspect

    import pymc_dp.accounting.entry as entry
    import pymc_dp.accounting.events as events

    assert "from .events import" not in inspect.getsource(entry.LedgerEntry)
    assert "from .subsampling import" not in inspect.getsource(events)


def test_typed_events_build_and_read_the_stored_event_dicts():
    from pymc_dp.accounting import DpEvent, LaplaceEvent, LedgerEntry
    from pymc_dp.accounting.event_types import PoissonSampledEvent

    entry = LedgerEntry("laplace", 0.5, event=LaplaceEvent(noise_multiplier=2.0))
    assert entry.event == {"type": "laplace", "noise_multiplier": 2.0}  # stored (and digested) as JSON
    assert entry.typed_event == LaplaceEvent(noise_multiplier=2.0)
    nested = PoissonSampledEvent(sampling_probability=0.1, event=LaplaceEvent(noise_multiplier=1.0))
    assert DpEvent.from_dict(nested.to_dict()) == nested
    with pytest.raises(ValueError, match="noise_multiplier"):
        LaplaceEvent(noise_multiplier=-1.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        entry.typed_event.noise_multiplier = 3.0
