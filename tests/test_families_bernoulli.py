"""Bernoulli family and the privatize pipeline it shares with every family."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pymc_dp as pmdp
from pymc_dp.families import Bernoulli, get_family
from pymc_dp.families.privatize import prepare_statistics


def exact_statistic(records, neighbouring):
    fam = Bernoulli()
    return fam.record_statistics(np.asarray(records, dtype=float), neighbouring).sum(axis=0)


def test_statistics_by_hand():
    x = [1, 0, 1, 1, 0]
    assert exact_statistic(x, "replace").tolist() == [3.0]
    assert exact_statistic(x, "add_remove").tolist() == [3.0, 2.0]
    assert Bernoulli().statistic_names("replace") == ("successes",)
    assert Bernoulli().statistic_names("add_remove") == ("successes", "failures")


@pytest.mark.parametrize("neighbouring", ["replace", "add_remove"])
def test_sensitivity_is_the_true_maximum_over_neighbours(neighbouring):
    fam = Bernoulli()
    worst = 0.0
    for data in itertools.product([0, 1], repeat=3):
        base = exact_statistic(data, neighbouring)
        if neighbouring == "replace":
            neighbours = [data[:i] + (v,) + data[i + 1:] for i in range(3) for v in (0, 1)]
        else:
            neighbours = [data + (v,) for v in (0, 1)]
        for other in neighbours:
            worst = max(worst, np.abs(exact_statistic(other, neighbouring) - base).sum())
    assert worst == fam.sensitivity({}, neighbouring) == 1.0


def test_numpy_pandas_and_dask_give_the_same_release():
    import dask.array as da
    import dask.dataframe as dd

    x = np.random.default_rng(1).binomial(1, 0.4, size=1000)
    outs = [
        pmdp.privatize(data, "bernoulli", 1.0, rng=7).noisy
        for data in (x, x.tolist(), pd.Series(x), da.from_array(x, chunks=128), dd.from_pandas(pd.Series(x), npartitions=4))
    ]
    for out in outs[1:]:
        np.testing.assert_array_equal(out, outs[0])


@settings(max_examples=200, deadline=None)
@given(st.floats(-1e6, 1e6), st.floats(-1e6, 1e6), st.integers(1, 10_000))
def test_projection_always_gives_valid_counts(a, b, n):
    fam = Bernoulli()
    s = fam.project(np.array([a]), n, {}, "replace")
    assert 0 <= s[0] <= n
    assert fam.project(s, n, {}, "replace") == pytest.approx(s)  # idempotent
    sf = fam.project(np.array([a, b]), None, {}, "add_remove")
    assert (sf >= 0).all() and fam.n_from_statistics(sf, "add_remove") == pytest.approx(sf.sum())


def test_huge_epsilon_recovers_the_conjugate_posterior():
    x = np.random.default_rng(2).binomial(1, 0.3, size=500)
    for neighbouring in ("replace", "add_remove"):
        stats = pmdp.privatize(x, "bernoulli", 1e9, rng=1, neighbouring=neighbouring)
        post = stats.family.conjugate_posterior(stats.values, stats.n, alpha=2.0, beta=3.0)
        assert post["alpha"] == pytest.approx(2 + x.sum(), rel=1e-6)
        assert post["beta"] == pytest.approx(3 + len(x) - x.sum(), rel=1e-6)


def test_loglik_matches_the_sum_of_record_logpmfs_up_to_a_constant():
    from scipy.stats import bernoulli

    x = np.random.default_rng(3).binomial(1, 0.3, size=200)
    stats = pmdp.privatize(x, "bernoulli", 1e9, rng=1)
    f = lambda p: float(stats.family.loglik(stats.values, stats.n, {"p": np.float64(p)}).eval(mode="FAST_COMPILE"))  # noqa: E731
    direct = lambda p: bernoulli(p).logpmf(x).sum()  # noqa: E731
    assert f(0.2) - f(0.6) == pytest.approx(direct(0.2) - direct(0.6), rel=1e-6)


def test_noise_scale_is_sensitivity_over_epsilon():
    x = np.random.default_rng(4).binomial(1, 0.5, size=100)
    rng = np.random.default_rng(5)
    errors = np.array([pmdp.privatize(x, "bernoulli", 0.5, rng=rng).noisy[0] - x.sum() for _ in range(2000)])
    # |Laplace(b)| has mean b and sd b: 2,000 draws put the mean within 5 SE = 5b/sqrt(2000) of b = 2.
    assert abs(np.abs(errors).mean() - 2.0) < 5 * 2.0 / np.sqrt(2000)


@pytest.mark.parametrize("bad", [2.0, 0.5, np.nan, -np.inf], ids=["two", "half", "nan", "-inf"])
def test_a_malformed_record_is_replaced_by_0_not_refused(bad):
    # Refusing would say "some record is malformed" for free: the record counts as the default record 0, so the
    # release is exactly its neighbour's with a 0 there, at the same cost; the count goes to the curator only.
    from pymc_dp.families import ClippedRecordsWarning

    records = np.array([0, 1, 1, bad, 0, 1])
    ours, theirs = pmdp.PrivacyLedger(), pmdp.PrivacyLedger()
    with pytest.warns(ClippedRecordsWarning, match=r"1 of 6 record\(s\) were NaN, infinite or outside the support"):
        got = pmdp.privatize(records, "bernoulli", 1.0, ledger=ours, rng=3)
    want = pmdp.privatize(np.where(np.arange(6) == 3, 0.0, records), "bernoulli", 1.0, ledger=theirs, rng=3)
    assert got.noisy == pytest.approx(want.noisy, abs=0) and got.names == want.names
    assert [(e.epsilon, e.touched, e.assumptions) for e in ours.entries] == [
        (e.epsilon, e.touched, e.assumptions) for e in theirs.entries]


def test_bad_arguments_spend_nothing():
    ledger = pmdp.PrivacyLedger()
    with pytest.raises(ValueError, match="no records"):
        pmdp.privatize(np.array([]), "bernoulli", 1.0, ledger=ledger)
    with pytest.raises(ValueError, match="epsilon"):
        pmdp.privatize(np.array([0, 1]), "bernoulli", 0.0, ledger=ledger)
    with pytest.raises(ValueError, match="unknown family"):
        pmdp.privatize(np.array([0, 1]), "zeta", 1.0, ledger=ledger)
    with pytest.raises(ValueError, match="takes no arguments"):
        get_family("bernoulli", k=3)
    with pytest.raises(ValueError, match="takes bounds"):
        pmdp.privatize(np.array([0, 1]), "bernoulli", 1.0, ledger=ledger, bounds={"x": (0, 1)})
    with pytest.raises(ValueError, match="ledger uses"):
        pmdp.privatize(np.array([0, 1]), "bernoulli", 1.0, ledger=ledger, neighbouring="add_remove")
    assert len(ledger) == 0


def test_privatize_charges_the_ledger_once_with_a_discrete_laplace_event():
    ledger = pmdp.PrivacyLedger(budget=pmdp.Budget(epsilon=1.0))
    stats = pmdp.privatize(np.array([0, 1, 1, 0]), "bernoulli", 0.25, ledger=ledger, rng=1, name="answers")
    (entry,) = ledger.entries
    assert entry.id == stats.entry_id and entry.touched == "answers:successes"
    assert any("N (the number of records) is public" in a for a in entry.assumptions)
    # a count is a whole number: discrete Laplace noise of scale Δ/ε = 4 (the geometric mechanism)
    assert entry.mechanism == "geometric" == stats.mechanism
    assert entry.event == {"type": "discrete_laplace", "noise_parameter": pytest.approx(0.25), "sensitivity": 1}
    assert stats.scale == pytest.approx(4.0) and stats.noise_source == "seeded" and stats.n == 4
    assert float(stats.noisy[0]).is_integer()
    with pytest.raises(pmdp.BudgetExceededError):
        pmdp.privatize(np.array([0, 1]), "bernoulli", 0.8, ledger=ledger)
    assert len(ledger) == 1


def test_prepare_spends_nothing():
    prepared = prepare_statistics(np.array([1, 1, 0]), "bernoulli")
    assert prepared.exact.tolist() == [2.0] and prepared.n == 3 and prepared.sensitivity == 1.0


def test_add_remove_releases_carry_no_public_n_assumption():
    stats = pmdp.privatize(np.array([0, 1, 1]), "bernoulli", 1.0, rng=1, neighbouring="add_remove")
    assert stats.ledger.entries[0].assumptions == ()


def test_laplace_mechanism_records_assumptions():
    from pymc_dp.mechanisms import laplace_mechanism

    ledger = pmdp.PrivacyLedger()
    laplace_mechanism(1.0, epsilon=1.0, sensitivity=1.0, ledger=ledger, rng=1, assumptions=("bounded records",))
    assert ledger.entries[0].assumptions == ("bounded records",)
    with pytest.raises(ValueError, match="assumptions"):
        laplace_mechanism(1.0, epsilon=1.0, sensitivity=1.0, ledger=ledger, rng=1, assumptions="bounded records")
    assert len(ledger) == 1
