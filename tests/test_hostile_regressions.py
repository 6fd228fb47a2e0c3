"""Regression tests for faults the property tests found under the wider ``dev`` profile.

Each case is one the derandomised ``ci`` profile of ``test_properties.py`` does not
necessarily draw, pinned here so that it is checked on every run.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import pymc_dp as pmdp
from pymc_dp.families._arrays import as_array
from pymc_dp.mechanisms.exponential import exponential_mechanism, exponential_mechanism_probabilities
from pymc_dp.mechanisms.hellinger_distance import midpoint_defect

mp = pytest.importorskip("mpmath")


def test_complex_records_are_refused_not_truncated():
    # np.asarray(..., dtype=float) would drop the imaginary part with only a warning.
    with pytest.raises(ValueError, match="data must be numeric"):
        as_array(np.array([1.0 + 2.0j, 3.0]))


def test_records_whose_type_follows_one_record_are_read_entry_by_entry_not_refused():
    # An integer beyond the double range, a None, a string in a list: NumPy would type the whole array by that one
    # record, and a refusal would say that some record is malformed. Each such entry is ±inf or NaN instead (a
    # malformed record privatize replaces by the default record); an array typed as text is refused by its type,
    # quoting no record.
    np.testing.assert_array_equal(as_array([10**400, 1]), [np.inf, 1.0])
    np.testing.assert_array_equal(as_array([1, None, "2", 0]), [1.0, np.nan, np.nan, 0.0])
    with pytest.raises(ValueError, match="array of strings") as err:
        as_array(np.array(["secret-1", "secret-2"]))
    assert "secret" not in str(err.value)


@pytest.mark.parametrize("bad", [10**400, -(10**400)], ids=["+1e400", "-1e400"])
def test_truncation_and_clip_bounds_beyond_the_double_range_are_a_value_error(bad):
    from pymc_dp.model.loglik_clip import _clip_bounds
    from pymc_dp.model.truncation import _interval

    with pytest.raises(ValueError, match="clip_loglik: (lower|upper) must be a finite number.*Δ unbounded"):
        _clip_bounds(bad, 0.0) if bad < 0 else _clip_bounds(-1.0, bad)
    with pytest.raises(ValueError, match="must be a finite number"):
        _interval((0.0, bad), "p")


@pytest.mark.parametrize("bad", [10**400, float("nan"), float("inf"), True, np.bool_(False), "1.0", [1.0]])
def test_check_finite_number_refuses_what_is_not_a_finite_real(bad):
    from pymc_dp.accounting.validation import check_finite_number

    with pytest.raises(ValueError, match="the bound"):
        check_finite_number(bad, "the bound")


def test_check_finite_number_accepts_numbers_of_any_numeric_type():
    from pymc_dp.accounting.validation import check_finite_number

    values = [3, -2.5, np.int64(7), np.float32(0.5), np.array(1.5)]
    assert [check_finite_number(v, "x") for v in values] == [3.0, -2.5, 7.0, 0.5, 1.5]


def test_exponential_probabilities_ignore_excluded_candidates_far_above_the_allowed_ones():
    # The excluded candidate's utility is ~2e308 above the allowed ones: u − max overflows
    # for it alone, and must neither warn nor leak into the allowed candidates' weights.
    u = np.array([1.7e308, -1.7e308, -1.7e308 + 1e292])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        p = exponential_mechanism_probabilities(u, epsilon=1.0, sensitivity=1.0, base_measure=[0.0, 1.0, 1.0])
    assert p[0] == 0.0 and np.all(np.isfinite(p)) and p.sum() == pytest.approx(1.0)
    assert p[2] == pytest.approx(1.0)  # 1e292 higher utility at scale 2: the other weight underflows


def test_exponential_mechanism_refuses_scores_that_overflow_and_charges_nothing():
    ledger = pmdp.PrivacyLedger()
    with pytest.raises(ValueError, match="overflow double precision"):
        # scale = 2Δ/ε = 2e305 and log(1e300) ≈ 691: the scores exceed 1.8e308.
        exponential_mechanism([0, 1], [1.7e308, 0.0], epsilon=1e-305, sensitivity=1.0, ledger=ledger,
                              base_measure=[1e300, 1.0], rng=0)
    assert len(ledger) == 0


def test_midpoint_defect_uses_the_exact_parameters_when_one_is_below_the_last_place():
    # a = 1e-17, b = 2: m ± h computed from m = 1.0 and h = −1.0 gives a − 0 (lnΓ(0) = ∞).
    a, b = 1e-17, 2.0
    got = float(midpoint_defect(0.5 * (a + b), 0.5 * (a - b), a, b))
    with mp.workdps(60):
        want = float(mp.loggamma((mp.mpf(a) + b) / 2) - (mp.loggamma(mp.mpf(a)) + mp.loggamma(mp.mpf(b))) / 2)
    assert np.isfinite(got) and got == pytest.approx(want, rel=1e-12)


def test_exponential_hellinger_release_with_a_tiny_scale_returns_the_exact_posterior():
    # ε so large that −H/b overflows to −∞ for every candidate but the exact one.
    # (Before the floor this was refused with "scores must be finite".)
    out = pmdp.release_posterior([50, 0], [1.0, 1.0], epsilon=1.7e308, mechanism="ehd", rng=0)
    assert np.array_equal(out.alpha, [51.0, 1.0])
