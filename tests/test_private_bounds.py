"""Data bounds chosen privately (``pmdp.suggest_bounds``): quartiles and fences (the default), or each end aimed at
the extremes (``method="tails"``), exponential mechanisms over a public grid."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import pymc_dp as pmdp
from pymc_dp.accounting import BudgetExceededError
from pymc_dp.mechanisms.exponential import exponential_mechanism_probabilities
from pymc_dp.mechanisms.private_bounds import SENSITIVITY, _shift, bounds_grid, end_utilities, rank_error
from pymc_dp.mechanisms.private_quantiles import cell_scores


def test_one_record_moves_either_ends_utility_by_at_most_one_under_both_relations():
    """The utility min(#beyond s steps inside, K) − #beyond: its two counts move in the same direction for any one
    record (added, removed or moved), so the difference moves by at most 1 — the sensitivity the ledger charges.
    Checked over 3 000 random neighbouring pairs at three scales, with records far off the grid too."""
    rng = np.random.default_rng(0)
    assert SENSITIVITY == 1.0
    largest = 0.0
    for trial in range(3000):
        within = None if trial % 2 else (-5.0, 5.0)
        candidates = bounds_grid(within, 50)
        shift, cap = _shift(within, len(candidates)), rng.uniform(1, 50)
        x = rng.normal(0.0, rng.choice([0.01, 1.0, 100.0]), rng.integers(1, 60))
        value = rng.normal(0.0, rng.choice([0.01, 1.0, 1e4]))
        y = (np.where(np.arange(x.size) == rng.integers(x.size), value, x), np.append(x, value),
             np.delete(x, rng.integers(x.size)))[trial % 3]
        before = np.stack(end_utilities(np.sort(x), candidates, cap, shift))
        after = np.stack(end_utilities(np.sort(y), candidates, cap, shift))
        largest = max(largest, float(np.abs(after - before).max()))
    assert largest <= 1.0 + 1e-9


def test_the_ends_enclose_the_records_tightly_and_rarely_land_far_beyond_them():
    """N(50, 10), 10⁴ records, ε = 1 (ε′ = 0.5 an end), the default grid (241 candidates from ±10⁻⁶ to ±10⁹): over
    the mechanism's exact probabilities each end leaves at most K records outside with probability ≥ 1 − β
    (β = 0.05), and lands more than a factor 10 beyond the records' extreme with probability ≤ β."""
    x = np.random.default_rng(1).normal(50.0, 10.0, 10_000)
    candidates = bounds_grid()
    each = 0.5
    cap = 2.0 * np.log(len(candidates) / 0.05) / each
    lower_u, upper_u = end_utilities(np.sort(x), candidates, cap, _shift(None, len(candidates)))
    p_upper = exponential_mechanism_probabilities(upper_u, epsilon=each, sensitivity=1.0)
    p_lower = exponential_mechanism_probabilities(lower_u, epsilon=each, sensitivity=1.0)
    above = np.array([(x > c).sum() for c in candidates])
    below = np.array([(x < c).sum() for c in candidates])
    assert p_upper[above <= cap].sum() >= 0.95 and p_lower[below <= cap].sum() >= 0.95
    assert p_upper[candidates > 10 * x.max()].sum() <= 0.05
    assert p_lower[candidates < 0].sum() <= 0.05  # every record is positive: a negative lower end is far off


def test_a_release_charges_one_entry_per_end_and_spends_exactly_epsilon():
    rng = np.random.default_rng(2)
    records = np.c_[rng.normal(0.0, 1.0, 2000), rng.poisson(3.0, 2000)]
    ledger = pmdp.PrivacyLedger()
    bounds = pmdp.suggest_bounds(records, epsilon=1.0, ledger=ledger, rng=3, touched="x, n", method="tails")
    assert len(ledger.entries) == 4 and {e.mechanism for e in ledger.entries} == {"exponential"}
    assert ledger.total().epsilon == pytest.approx(1.0)
    assert [e.epsilon for e in ledger.entries] == pytest.approx([0.25] * 4)
    assert "upper end of column 1" in ledger.entries[3].touched
    assert len(bounds.pairs) == 2 and all(lo < hi for lo, hi in bounds.pairs)
    assert bounds.entries == tuple(ledger.entries)
    with pytest.raises(ValueError, match="2 columns.*pairs"):
        bounds.pair


def test_integer_records_get_whole_number_ends_and_within_gives_an_even_grid():
    rng = np.random.default_rng(4)
    counts = rng.poisson(3.0, 1000)
    lo, hi = pmdp.suggest_bounds(counts, epsilon=1.0, ledger=pmdp.PrivacyLedger(), rng=5, method="tails").pair
    assert lo == 0.0 and not np.signbit(lo) and hi == np.ceil(hi) and counts.max() <= hi <= 2 * counts.max() + 2
    lo, hi = pmdp.suggest_bounds(rng.uniform(-3, 3, 2000), epsilon=1.0, ledger=pmdp.PrivacyLedger(), rng=6,
                                 within=(-10.0, 10.0), method="tails").pair
    grid = np.linspace(-10.0, 10.0, 200)
    assert np.isin([lo, hi], grid).all() and -4.5 < lo < -2.5 and 2.5 < hi < 4.5


def test_the_budget_is_checked_before_anything_is_drawn():
    ledger = pmdp.PrivacyLedger(budget=pmdp.Budget(epsilon=0.5))
    with pytest.raises(BudgetExceededError):
        pmdp.suggest_bounds(np.arange(100.0), epsilon=1.0, ledger=ledger, rng=0)
    assert len(ledger.entries) == 0 and not ledger.reserved


@pytest.mark.parametrize("kwargs, words", [
    ({"epsilon": 0.0}, "epsilon"),
    ({"epsilon": float("nan")}, "epsilon"),
    ({"epsilon": 1.0, "ledger": None}, "ledger is required"),
    ({"epsilon": 1.0, "within": (1.0, 1.0)}, "within must be finite with lo < hi"),
    ({"epsilon": 1.0, "within": (0.0, float("inf"))}, "within must be finite"),
    ({"epsilon": 1.0, "within": "wide"}, "within must be a pair"),
    ({"epsilon": 1.0, "within": (-1e308, 1e308)}, "hi − lo finite"),
    ({"epsilon": 1.0, "within": (0.0, 1.0), "grid": 1}, "grid must be an integer"),
    ({"epsilon": 1.0, "within": (0.0, 1.0), "grid": "a"}, "grid must be an integer"),
    ({"epsilon": 1.0, "within": (0.0, 1.0), "grid": 10**300}, "grid must be an integer"),
    ({"epsilon": 1.0, "confidence": 1.5}, "confidence"),
    ({"epsilon": 1.0, "confidence": None}, "confidence must be a number"),
    ({"epsilon": 1.0, "records": np.array(["a", "b"])}, "real numbers, got dtype <U1"),
    ({"epsilon": 1.0, "records": np.array([1 + 2j])}, "real numbers, got dtype complex"),
    ({"epsilon": 1.0, "records": np.zeros((2, 2, 2))}, "1-D array .* or 2-D"),
])
def test_bad_arguments_are_refused_by_name_and_nothing_is_spent(kwargs, words):
    kwargs = {"records": np.arange(10.0), "ledger": pmdp.PrivacyLedger(), **kwargs}
    ledger = kwargs["ledger"]
    with pytest.raises(ValueError, match=words):
        pmdp.suggest_bounds(kwargs.pop("records"), **kwargs)
    assert ledger is None or len(ledger.entries) == 0


def test_values_that_are_not_numbers_count_in_no_utility_and_are_reported_to_the_curator_only():
    x = np.r_[np.random.default_rng(7).normal(0.0, 1.0, 500), [np.nan] * 3]
    with pmdp.curator_reports(), pytest.warns(UserWarning, match="3 value.*not numbers.*curator only"):
        lo, hi = pmdp.suggest_bounds(x, epsilon=1.0, ledger=pmdp.PrivacyLedger(), rng=8).pair
    assert np.isfinite([lo, hi]).all() and lo < hi


def test_whole_numbers_come_from_the_declared_dtype_never_from_one_records_value():
    """A NaN, a huge integer or None among a list's records must not change how the ends are rounded, nor make the
    call refuse: a list declares nothing (ends as drawn), an integer array or a pandas Int64 column declares whole
    numbers even with a missing value, and integer= overrides both."""
    pd = pytest.importorskip("pandas")
    from pymc_dp.mechanisms.private_bounds import _records

    base = [int(v) for v in np.random.default_rng(9).poisson(3.0, 2000)]
    lists = [base, base[:-1] + [float("nan")], base[:-1] + [10**20], base[:-1] + [None], base[:-1] + ["text"]]
    assert [_records(x, None)[1] for x in lists] == [False] * 5  # a list declares nothing, whatever it holds
    values = [_records(x, None)[0] for x in lists]
    assert [int(np.isnan(v).sum()) for v in values] == [0, 1, 0, 1, 1]  # not a number: NaN, counted in no utility
    for x in lists:  # nothing refused whatever one record holds
        assert np.isfinite(pmdp.suggest_bounds(x, epsilon=1.0, ledger=pmdp.PrivacyLedger(), rng=1).pair).all()
    declared = [np.asarray(base), pd.Series(base, dtype="Int64"), pd.Series(base[:-1] + [None], dtype="Int64"),
                pd.DataFrame({"a": base, "b": base})]
    assert [_records(x, None)[1] for x in declared] == [True] * 4 and _records(base, True)[1]
    lo, hi = pmdp.suggest_bounds(declared[2], epsilon=1.0, ledger=pmdp.PrivacyLedger(), rng=1).pair
    assert lo == np.floor(lo) and hi == np.ceil(hi)


def test_grid_is_ignored_without_within():
    """grid= spreads candidates over within=; without it the default grid is used and grid is not read."""
    lo, hi = pmdp.suggest_bounds(np.arange(2000.0), epsilon=1.0, ledger=pmdp.PrivacyLedger(), grid="a", rng=0,
                                 method="tails").pair
    assert np.isin([lo, hi], bounds_grid()).all()


def test_no_records_are_taken_and_give_a_uniform_choice():
    """Under add/remove the number of records is private: an empty column must not be refused where one record
    would not be."""
    ledger = pmdp.PrivacyLedger(neighbouring="add_remove")
    lo, hi = pmdp.suggest_bounds(np.array([]), epsilon=1.0, ledger=ledger, rng=2).pair
    assert lo < hi and ledger.total().epsilon == pytest.approx(1.0)


def test_records_at_the_grids_edge_still_pull_the_far_end_in():
    """An all-zero column on within=(0, 10): past the grid's first candidate the inner count is every record, so the
    upper end's reward sits just above 0 (without it every upper candidate scored 0 and the end was uniform)."""
    zeros = np.zeros(2000)
    ends = [pmdp.suggest_bounds(zeros, epsilon=1.0, ledger=pmdp.PrivacyLedger(), within=(0.0, 10.0), rng=seed,
                                method="tails").pair for seed in range(10)]
    assert all(0.0 <= lo < hi <= 1.0 for lo, hi in ends), ends


def test_a_constant_column_still_gets_an_interval():
    for column in (np.zeros(3000, dtype=int), np.zeros(3000)):
        for seed in range(5):
            lo, hi = pmdp.suggest_bounds(column, epsilon=1.0, ledger=pmdp.PrivacyLedger(), rng=seed).pair
            assert lo < hi


def test_the_rank_error_is_known_before_spending_and_few_records_are_warned_of_where_n_is_public():
    k = rank_error(1.0)
    assert k == pytest.approx(2.0 * np.log(len(bounds_grid()) / 0.01) / 0.5)
    with pytest.warns(UserWarning, match="records are few for private bounds"):
        pmdp.suggest_bounds(np.arange(int(2 * k), dtype=float), epsilon=1.0, ledger=pmdp.PrivacyLedger(), rng=0,
                            method="tails")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # under add/remove the count is private: no warning reads it
        pmdp.suggest_bounds(np.arange(int(2 * k), dtype=float), epsilon=1.0,
                            ledger=pmdp.PrivacyLedger(neighbouring="add_remove"), rng=0, method="tails")


# ---------------------------------------------------------------------------- fences: private quartiles, two passes


def test_one_record_moves_a_quantile_score_by_at_most_one_under_both_relations():
    """The cell score −max(0, f(c_i), −f(c_{i+1})), f(c) = (1 − q)#{x < c} − q#{x ≥ c}: one record added, removed
    or replaced moves it by at most 1 (the sensitivity the entries charge). 3 000 random pairs, levels from 0.05
    to 0.95, records on and off the grid."""
    rng = np.random.default_rng(5)
    largest = 0.0
    for trial in range(3000):
        candidates = bounds_grid(None if trial % 2 else (-5.0, 5.0), 40)
        q = rng.uniform(0.05, 0.95)
        x = np.round(rng.normal(0.0, rng.choice([0.01, 1.0, 100.0]), rng.integers(1, 60)), 1)
        value = rng.choice([0.0, rng.normal(0.0, 3.0), 1e5])
        y = (np.where(np.arange(x.size) == rng.integers(x.size), value, x), np.append(x, value),
             np.delete(x, rng.integers(x.size)))[trial % 3]
        before, after = cell_scores(np.sort(x), candidates, q), cell_scores(np.sort(y), candidates, q)
        largest = max(largest, float(np.abs(after - before).max()))
    assert largest <= 1.0 + 1e-9


@pytest.mark.parametrize("centre, spread", [(50.0, 10.0), (1000.0, 10.0), (0.0, 1.0), (1e-3, 2e-4)])
def test_fences_find_a_range_a_few_spreads_wide_wherever_the_records_lie(centre, spread):
    """1,000 Normal records at ε = 0.4 (what pmdp.sample spends on one column at N = 1000, ε = 1), 20 releases:
    each range cuts at most 3 records (0.3 %) and lies within 8 spreads of the centre. With exact quartiles the
    fences (f = 3) sit at ±4.7 spreads, where a Normal leaves 3 in a million; each quartile's rank error at this ε
    (tens of records) moves a fence by about half a spread, so a handful cut is the mechanism working, not failing.
    Records far from 0 relative to their spread (1000 ± 10) are where the grid 0, ±10ᵏ alone gives a range 58
    spreads wide: the second pass's even grid inside the first pass's cells resolves them. A pass that misses
    makes the range wide, which the 8-spread bound catches (a miss has probability ≈ 0.01 a release here)."""
    ranges = []
    for seed in range(20):
        x = np.random.default_rng(seed).normal(centre, spread, 1000)
        lo, hi = pmdp.suggest_bounds(x, epsilon=0.4, ledger=pmdp.PrivacyLedger(), rng=seed).pair
        z = (np.array([lo, hi]) - centre) / spread
        ranges.append(z)
        assert np.sum((x < lo) | (x > hi)) <= 3, (seed, z)
    assert np.abs(ranges).max() < 8.0, ranges


def test_fences_charge_four_quartile_entries_per_column_and_keep_a_count_inside_its_support():
    rng = np.random.default_rng(2)
    records = np.c_[rng.normal(0.0, 1.0, 2000), rng.poisson(3.0, 2000)]
    ledger = pmdp.PrivacyLedger()
    bounds = pmdp.suggest_bounds(records, epsilon=1.0, ledger=ledger, rng=3, support=(0.0, np.inf), integer=True)
    assert len(ledger.entries) == 8 and ledger.total().epsilon == pytest.approx(1.0)
    assert [e.epsilon for e in ledger.entries] == pytest.approx([0.125] * 8)
    assert "q₃ of column 1, second pass" in ledger.entries[7].touched
    (lo0, hi0), (lo1, hi1) = bounds.pairs
    assert lo0 == 0.0 and lo1 == 0.0  # the support cuts the first column's negative fence too
    assert hi1 == int(hi1) and hi1 >= 9  # Poisson(3): q₃ + 3·IQR = 4 + 3·2 = 10 give or take a step


def test_a_column_mostly_of_one_value_gets_a_range_around_it():
    """Over half the records share a value (an indicator that is mostly 0): the quartiles coincide, and the range is
    that value ± max(1, |v|), so the indicator's ones are inside."""
    x = (np.random.default_rng(0).random(5000) < 0.15).astype(float)
    for seed in range(5):
        lo, hi = pmdp.suggest_bounds(x, epsilon=1.0, ledger=pmdp.PrivacyLedger(), rng=seed).pair
        assert lo <= 0.0 and hi >= 1.0, (lo, hi)


@pytest.mark.parametrize("kwargs, words", [({"method": "middle"}, "method must be"), ({"fence": -1.0}, "fence must"),
                                           ({"support": (1.0, 0.0)}, "support must"),
                                           ({"decades": (3, 1)}, "decades must")])
def test_the_new_arguments_are_refused_by_name(kwargs, words):
    ledger = pmdp.PrivacyLedger()
    with pytest.raises(ValueError, match=words):
        pmdp.suggest_bounds(np.arange(100.0), epsilon=1.0, ledger=ledger, **kwargs)
    assert not ledger.entries


@pytest.mark.parametrize("ones", [0.5, 0.6])
def test_an_indicator_keeps_its_ones_inside_the_range(ones):
    """Between an indicator's 0 and 1 no record lies, and every point between scores alike: the quartiles are read
    at their cells' outer edges, so q₃ is at or above 1 and the fences hold both values (2,000 records, ε = 0.4,
    20 releases). Chosen as a point, q₃ of a 50 %-ones indicator fell below 1 in a quarter of the releases. An
    indicator with about 25–35 % ones is not covered at this N ε: below 1 every cell scores only −(ones − ¼)·N
    from q₃'s (the mechanisms page says so)."""
    x = (np.random.default_rng(0).random(2000) < ones).astype(float)
    for seed in range(20):
        lo, hi = pmdp.suggest_bounds(x, epsilon=0.4, ledger=pmdp.PrivacyLedger(), rng=seed).pair
        assert lo <= 0.0 and hi >= 1.0, (seed, lo, hi)


def test_a_narrow_spread_far_from_zero_gets_a_range_a_few_spreads_wide():
    """N(500, 0.3): the first pass's cells are a third of a decade (about 140 wide); the second pass's 2,001
    candidates over them are 0.07 apart, a quarter of the s.d., fine enough for the quartiles (with 201 the range
    was hundreds of s.d. wide)."""
    x = np.random.default_rng(1).normal(500.0, 0.3, 2000)
    widths = [np.diff(pmdp.suggest_bounds(x, epsilon=0.5, ledger=pmdp.PrivacyLedger(), rng=s).pair)[0] / 0.3
              for s in range(10)]
    assert np.median(widths) < 20, widths
