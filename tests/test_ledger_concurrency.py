"""Concurrent spends from one ledger: checking, drawing and recording are one atomic step.

An audit found that two threads spending from one ledger could both pass the budget
check and both release (10 of 10 trials with a PLD budget of ε = 1 and two charges of
0.8). These tests start threads together on a barrier and widen the window between
the check and the record with a sleep; before the fix they overspend every time.
"""

from __future__ import annotations

import copy
import multiprocessing as mp
import os
import pickle
import threading
import time

import pytest

from pymc_dp.accounting import Budget, BudgetExceededError, LedgerEntry, PrivacyLedger
from pymc_dp.accounting.reservation import LedgerOwnershipError, Reservation

BUDGETS = {
    "pld": lambda: Budget(epsilon=1.0, delta=1e-6, method="pld"),
    "basic": lambda: Budget(epsilon=1.0),
}


def _run_together(n: int, work) -> list[object]:
    """Run ``work(i)`` in ``n`` threads released together; return each result or exception."""
    barrier = threading.Barrier(n)
    results: list[object] = [None] * n

    def target(i: int) -> None:
        barrier.wait()
        try:
            results[i] = work(i)
        except Exception as err:  # noqa: BLE001 - collected and checked by the test
            results[i] = err

    threads = [threading.Thread(target=target, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    return results


# ----------------------------------------------------------------------------- the audit's race


@pytest.mark.parametrize("method", sorted(BUDGETS))
def test_two_concurrent_charges_never_both_release(method):
    """20 trials of two threads charging ε = 0.8 against ε = 1: exactly one releases each time."""
    for trial in range(20):
        ledger = PrivacyLedger(budget=BUDGETS[method]())
        released = []

        def work(i: int) -> str:
            with ledger.charge("laplace", epsilon=0.8, touched=f"y:{i}") as entry:
                time.sleep(0.005)  # drawing the noise: the window the race needs
                released.append(entry.id)
            return "released"

        results = _run_together(2, work)
        refused = [r for r in results if isinstance(r, BudgetExceededError)]
        assert results.count("released") == 1 and len(refused) == 1, (trial, results)
        assert len(released) == 1 and len(ledger) == 1 and ledger.entries[0].id == released[0]
        assert ledger.reserved == ()
        assert ledger.budget.allows(ledger.spent)


@pytest.mark.parametrize("method", sorted(BUDGETS))
def test_many_threads_spending_and_repeating_never_exceed_the_budget(method):
    cost = 0.03
    ledger = PrivacyLedger(budget=BUDGETS[method]())
    seed = ledger.spend("gaussian" if method == "pld" else "laplace", cost, touched="seed")
    outcomes: list[str] = []
    lock = threading.Lock()

    def work(i: int) -> None:
        for k in range(12):
            try:
                if (i + k) % 2:
                    ledger.spend("laplace", cost, touched=f"t{i}:{k}")
                else:
                    ledger.repeat(seed.id, 1)
            except BudgetExceededError:
                outcome = "refused"
            else:
                outcome = "spent"
            with lock:
                outcomes.append(outcome)

    results = _run_together(6, work)
    assert not any(isinstance(r, Exception) for r in results), results
    spent = outcomes.count("spent")
    assert spent >= 1 and outcomes.count("refused") >= 1  # the budget ran out during the run
    total_runs = sum(e.count for e in ledger.entries)
    assert total_runs == 1 + spent  # every successful spend recorded, nothing else
    assert ledger.total().epsilon == pytest.approx(total_runs * cost, rel=1e-12)
    assert ledger.budget.allows(ledger.spent)
    if method == "basic":
        # under basic composition the budget is used up to within one spend
        assert ledger.total().epsilon > 1.0 - cost - 1e-9


def test_concurrent_reservations_hold_room_until_released():
    ledger = PrivacyLedger(budget=Budget(epsilon=1.0))
    entries = [LedgerEntry("laplace", 0.3) for _ in range(8)]
    results = _run_together(8, lambda i: ledger.reserve([entries[i]]))
    held = [r for r in results if isinstance(r, Reservation)]
    assert len(held) == 3 and all(isinstance(r, BudgetExceededError) for r in results if r not in held)
    assert len(ledger) == 0 and len(ledger.reserved) == 3
    _run_together(3, lambda i: held[i].commit())
    assert len(ledger) == 3 and ledger.reserved == ()
    assert ledger.total().epsilon == pytest.approx(0.9)


# ----------------------------------------------------------------------------- reservations


def test_reserve_counts_against_check_and_spend_until_cancelled():
    ledger = PrivacyLedger(budget=Budget(epsilon=1.0))
    r = ledger.reserve([LedgerEntry("laplace", 0.7)], what="the release of y")
    assert r.entries[0].epsilon == 0.7 and ledger.reserved == r.entries and r.what == "the release of y"
    assert len(ledger) == 0 and ledger.total().epsilon == 0.0  # reserved is not spent
    with pytest.raises(BudgetExceededError, match="reserved"):
        ledger.spend("laplace", 0.5)
    with pytest.raises(BudgetExceededError):
        ledger.check(LedgerEntry("laplace", 0.5))
    with pytest.raises(BudgetExceededError):
        ledger.check_all([LedgerEntry("laplace", 0.2), LedgerEntry("laplace", 0.2)])
    with pytest.raises(BudgetExceededError):
        with ledger.charge("laplace", 0.5):
            pytest.fail("the body must not run")
    with pytest.raises(BudgetExceededError):
        ledger.reserve([LedgerEntry("laplace", 0.5)])
    assert ledger.reserved == r.entries  # the refused reservation holds nothing
    r.cancel()
    r.cancel()  # idempotent
    assert ledger.reserved == () and len(ledger) == 0 and not r.open
    ledger.spend("laplace", 0.5)
    with pytest.raises(RuntimeError, match="cancelled"):
        r.commit()


def test_commit_records_the_reserved_entries_and_releases_the_reservation():
    ledger = PrivacyLedger(budget=Budget(epsilon=1.0))
    planned = [LedgerEntry("laplace", 0.25, touched="a"), LedgerEntry("laplace", 0.25, touched="b")]
    r = ledger.reserve(planned)
    assert r.open
    recorded = r.commit()
    assert recorded == tuple(planned) and ledger.entries == tuple(planned) and ledger.reserved == ()
    assert not r.open and r.committed
    with pytest.raises(RuntimeError, match="already committed"):
        r.commit()
    r.cancel()  # no-op after commit
    assert ledger.entries == tuple(planned)


def test_commit_of_what_was_actually_spent():
    ledger = PrivacyLedger(budget=Budget(epsilon=1.0))
    r = ledger.reserve([LedgerEntry("ops", 0.2, count=4)])  # plan: up to 4 runs
    actual = LedgerEntry("ops", 0.2, count=3)  # the run stopped after 3
    assert r.commit([actual]) == (actual,)
    assert ledger.total().epsilon == pytest.approx(0.6) and ledger.reserved == ()


def test_commit_of_a_more_expensive_entry_is_refused():
    ledger = PrivacyLedger(budget=Budget(epsilon=1.0))
    r = ledger.reserve([LedgerEntry("laplace", 0.3)])
    with pytest.raises(ValueError, match="more than was reserved"):
        r.commit([LedgerEntry("laplace", 0.31)])
    with pytest.raises(ValueError, match="more than was reserved"):
        r.commit([LedgerEntry("laplace", 0.2), LedgerEntry("laplace", 0.2)])
    with pytest.raises(ValueError, match="more than was reserved"):
        r.commit([LedgerEntry("laplace", 0.3, delta=1e-9)])
    assert r.open and len(ledger) == 0  # still held: commit correctly or cancel
    with pytest.raises(ValueError, match="neighbouring"):
        r.commit([LedgerEntry("laplace", 0.1, neighbouring="add_remove")])
    with pytest.raises(ValueError, match="LedgerEntry"):
        r.commit(["laplace"])
    r.commit([LedgerEntry("laplace", 0.1)])
    assert ledger.total().epsilon == pytest.approx(0.1)


def test_commit_under_a_tight_method_checks_the_composed_total():
    """A cheaper basic total can still compose worse under PLD than the event it replaces."""
    gaussian = {"type": "gaussian", "noise_multiplier": 5.0}  # about ε = 0.83 at δ = 1e-6 under PLD
    ledger = PrivacyLedger(budget=Budget(epsilon=1.0, delta=1e-6, method="pld"))
    planned = LedgerEntry("gaussian", 5.0, 1e-100, event=gaussian)  # a loose (ε, δ) statement of it
    r = ledger.reserve([planned])
    worse = LedgerEntry("laplace", 1.5)  # basic ε 1.5 < 5, but pure ε = 1.5 is past the budget
    with pytest.raises(ValueError, match="compose by 'pld'"):
        r.commit([worse])
    assert r.open and len(ledger) == 0
    cheaper = LedgerEntry("gaussian", 5.0, 1e-100, event={"type": "gaussian", "noise_multiplier": 6.0})
    assert r.commit([cheaper]) == (cheaper,)
    assert ledger.budget.allows(ledger.spent)


def test_reserve_validates_like_record():
    ledger = PrivacyLedger()
    e = ledger.spend("laplace", 0.1)
    with pytest.raises(ValueError, match="already in this ledger"):
        ledger.reserve([e])
    fresh = LedgerEntry("laplace", 0.1)
    with pytest.raises(ValueError, match="twice"):
        ledger.reserve([fresh, fresh])
    r = ledger.reserve([fresh])
    with pytest.raises(ValueError, match="reserved"):
        ledger.reserve([fresh])
    with pytest.raises(ValueError, match="reserved"):
        ledger.record(fresh)
    with pytest.raises(ValueError, match="neighbouring"):
        ledger.reserve([LedgerEntry("laplace", 0.1, neighbouring="add_remove")])
    with pytest.raises(ValueError, match="LedgerEntry"):
        ledger.reserve([0.1])
    with pytest.raises(ValueError, match="sequence"):
        ledger.reserve(fresh)
    assert ledger.reserved == (fresh,)
    r.commit()
    assert ledger[fresh.id] == fresh


def test_reservation_context_manager_cancels_unless_committed():
    ledger = PrivacyLedger(budget=Budget(epsilon=1.0))
    with ledger.reserve([LedgerEntry("laplace", 0.6)]) as r:
        assert ledger.reserved == r.entries
    assert ledger.reserved == () and len(ledger) == 0 and r.cancelled

    with pytest.raises(ZeroDivisionError):
        with ledger.reserve([LedgerEntry("laplace", 0.6)]) as r:
            1 / 0
    assert ledger.reserved == () and len(ledger) == 0 and r.cancelled

    with ledger.reserve([LedgerEntry("laplace", 0.6)]) as r:
        r.commit()
    assert len(ledger) == 1 and ledger.reserved == () and r.committed

    with pytest.raises(RuntimeError, match="already committed"):
        with ledger.reserve([LedgerEntry("laplace", 0.1)]) as r:
            r.commit()
            r.commit()
    assert len(ledger) == 2 and ledger.reserved == ()


def test_charge_records_on_success_and_cancels_on_failure():
    ledger = PrivacyLedger(budget=Budget(epsilon=1.0))
    with pytest.raises(RuntimeError, match="draw failed"):
        with ledger.charge("laplace", 0.6):
            assert len(ledger.reserved) == 1 and len(ledger) == 0
            raise RuntimeError("draw failed")
    assert len(ledger) == 0 and ledger.reserved == ()
    with ledger.charge("laplace", 0.6, touched="y:sum") as entry:
        pass
    assert ledger.entries == (entry,) and ledger.reserved == ()


def test_reserved_is_read_only():
    ledger = PrivacyLedger()
    with pytest.raises(AttributeError):
        ledger.reserved = ()


def test_empty_reservation_commits_nothing():
    ledger = PrivacyLedger(budget=Budget(epsilon=1.0))
    r = ledger.reserve([])
    assert r.entries == () and r.commit() == () and len(ledger) == 0


# ----------------------------------------------------------------------------- copies and processes


def test_pickle_and_copies_keep_the_entries_and_get_their_own_lock():
    ledger = PrivacyLedger(budget=Budget(epsilon=2.0))
    e = ledger.spend("laplace", 0.5)
    r = ledger.reserve([LedgerEntry("laplace", 0.5)])
    for clone in (pickle.loads(pickle.dumps(ledger)), copy.copy(ledger), copy.deepcopy(ledger)):
        assert clone == ledger and clone.reserved == ()  # reservations belong to their holders
        assert clone._lock is not ledger._lock
        clone.spend("laplace", 0.25)  # same process: the copy is a ledger of its own
        assert len(ledger) == 1 and ledger[e.id] == e
    r.cancel()


def _spend_in_child(ledger: PrivacyLedger, queue) -> None:
    outcome = {}
    for name, call in [
        ("spend", lambda: ledger.spend("laplace", 0.1)),
        ("record", lambda: ledger.record(LedgerEntry("laplace", 0.1))),
        ("repeat", lambda: ledger.repeat(ledger.entries[0].id, 1)),
        ("reserve", lambda: ledger.reserve([LedgerEntry("laplace", 0.1)])),
        ("charge", lambda: ledger.charge("laplace", 0.1).__enter__()),
    ]:
        try:
            call()
        except LedgerOwnershipError as err:
            outcome[name] = str(err)
        else:
            outcome[name] = "spent"
    outcome["read"] = (len(ledger), ledger.total().epsilon)
    queue.put(outcome)


@pytest.mark.parametrize("start_method", ["spawn", "fork"])
def test_a_copy_in_another_process_refuses_to_spend(start_method):
    if start_method not in mp.get_all_start_methods():
        pytest.skip(f"no {start_method} start method here")
    ledger = PrivacyLedger(budget=Budget(epsilon=1.0))
    ledger.spend("laplace", 0.25)
    before = ledger.to_json()
    ctx = mp.get_context(start_method)
    queue = ctx.Queue()
    proc = ctx.Process(target=_spend_in_child, args=(ledger, queue))
    proc.start()
    outcome = queue.get(timeout=120)
    proc.join(timeout=60)
    assert proc.exitcode == 0
    assert outcome["read"] == (1, 0.25)  # reading is fine
    for name in ("spend", "record", "repeat", "reserve", "charge"):
        message = outcome[name]
        assert message != "spent", name
        assert "process that owns it" in message and str(os.getpid()) in message
    assert ledger.to_json() == before  # the ledger of record is unchanged
    ledger.spend("laplace", 0.25)  # and still spends in its own process


# ----------------------------------------------------------------------------- one charge contract


def test_every_mechanism_returns_the_entry_it_recorded_even_when_others_spend_concurrently():
    """No caller has to guess its entry from ledger.entries[-1] (another thread may have spent since)."""
    import numpy as np

    from pymc_dp.mechanisms import (
        exponential_mechanism, gaussian_mechanism, geometric_mechanism, laplace_mechanism, randomized_response,
    )

    calls = {
        "laplace": lambda lg: laplace_mechanism(1.0, epsilon=0.1, sensitivity=1.0, ledger=lg, rng=1, return_entry=True),
        "gaussian": lambda lg: gaussian_mechanism(1.0, epsilon=0.1, delta=1e-6, sensitivity=1.0, ledger=lg, rng=1,
                                                  return_entry=True),
        "geometric": lambda lg: geometric_mechanism(3, epsilon=0.1, sensitivity=1, ledger=lg, rng=1, return_entry=True),
        "exponential": lambda lg: exponential_mechanism(["a", "b"], [1.0, 2.0], epsilon=0.1, sensitivity=1.0,
                                                        ledger=lg, rng=1, return_entry=True),
        "randomized_response": lambda lg: randomized_response(np.array([True, False]), epsilon=0.1, ledger=lg, rng=1,
                                                              return_entry=True),
    }
    ledger = PrivacyLedger()
    names = sorted(calls)
    results = _run_together(len(names), lambda i: calls[names[i]](ledger))
    for name, result in zip(names, results):
        assert not isinstance(result, Exception), (name, result)
        _, entry = result
        assert ledger[entry.id] == entry and entry.mechanism.startswith(name.split("_")[0][:5]), name
    assert len(ledger) == len(names)
