"""The Hellinger distance between Dirichlets: accuracy against high-precision arithmetic."""

from __future__ import annotations

import numpy as np
import pytest

import pymc_dp as pmdp
from pymc_dp.mechanisms.hellinger_distance import log_bhattacharyya, midpoint_defect

mp = pytest.importorskip("mpmath")


def _hellinger_mp(a, b) -> float:
    with mp.workdps(60):
        a = [mp.mpf(float(v)) for v in a]
        b = [mp.mpf(float(v)) for v in b]

        def log_beta(v):
            return sum(mp.loggamma(x) for x in v) - mp.loggamma(sum(v))

        m = [(x + y) / 2 for x, y in zip(a, b)]
        return float(mp.sqrt(-mp.expm1(log_beta(m) - (log_beta(a) + log_beta(b)) / 2)))


def test_known_values_and_metric_properties():
    # Beta(1, 1) vs Beta(2, 1): BC = B(1.5, 1) / sqrt(B(1, 1) B(2, 1)) = (2/3) / sqrt(1/2).
    assert pmdp.hellinger([1, 1], [2, 1]) == pytest.approx(np.sqrt(1 - (2 / 3) / np.sqrt(0.5)), rel=1e-14)
    assert pmdp.hellinger([3.5, 2, 7], [3.5, 2, 7]) == 0.0
    assert not np.signbit(pmdp.hellinger([3.5, 2, 7], [3.5, 2, 7]))  # +0.0, never −0.0
    a, b = np.array([2.0, 5.0, 1.5]), np.array([40.0, 1.0, 9.0])
    assert pmdp.hellinger(a, b) == pytest.approx(pmdp.hellinger(b, a), rel=1e-14)
    assert 0 < pmdp.hellinger(a, b) < 1
    # Far apart: H → 1.
    assert pmdp.hellinger([1e7, 1e-3], [1e-3, 1e7]) == pytest.approx(1.0, abs=1e-12)


def test_broadcasts_many_candidates_against_one_posterior():
    post = np.array([31.0, 71.0])
    cands = np.stack([np.arange(1, 101), 101 - np.arange(1, 101) + 1], axis=1).astype(float)
    out = pmdp.hellinger(post, cands)
    assert out.shape == (100,)
    assert out[np.argmin(out)] == 0.0 and np.argmin(out) == 30
    assert np.all(np.diff(out[30:]) > 0) and np.all(np.diff(out[:31]) < 0)  # unimodal in the candidate


def test_accurate_from_1e_minus_3_to_1e7_against_60_digit_arithmetic():
    # 400 random pairs, k = 2..4, parameters log-uniform on [1e-3, 1e7]: a third far apart,
    # a third perturbed by a few units (unequal totals), a third two posteriors with the
    # same total (the mechanisms' case). Tolerance: 1e-9 relative where H > 1e-6, else
    # 1e-14 absolute (the module docstring's claim; measured worst cases over 3 000 pairs:
    # 5e-10 and 4e-15).
    rng = np.random.default_rng(20261123)
    for it in range(400):
        k = int(rng.integers(2, 5))
        a = 10 ** rng.uniform(-3, 7, size=k)
        if it % 3 == 0:
            b = 10 ** rng.uniform(-3, 7, size=k)
        elif it % 3 == 1:
            b = a + rng.integers(-3, 4, size=k)
            b = np.where(b > 0, b, a)
        else:
            b = a + rng.multinomial(3, np.ones(k) / k)
            a = a + rng.multinomial(3, np.ones(k) / k)
        got, want = pmdp.hellinger(a, b), _hellinger_mp(a, b)
        if want > 1e-6:
            assert abs(got - want) <= 1e-9 * want, (a, b, got, want)
        else:
            assert abs(got - want) <= 1e-14, (a, b, got, want)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ((1e7, 1e-3), (2e7, 1e-3)),  # large defects that cancel: stick-breaking form
        ((1e7, 1e7), (1e7 + 1, 1e7 + 1)),  # same mean, concentration differs by 1 in 2e7
        ((1e-3, 1e-3), (2e-3, 1e-3)),
        ((0.5, 1e5, 3.0), (1.5, 1e5 - 1, 3.0)),
    ],
)
def test_hard_cases(a, b):
    want = _hellinger_mp(a, b)
    assert pmdp.hellinger(a, b) == pytest.approx(want, rel=1e-8, abs=1e-14)


def test_midpoint_defect_regimes_agree_with_mpmath():
    # Each regime (Stirling for m − |h| ≥ 9, Taylor for |h| ≤ m/10, direct) on both sides of its border.
    for m, h in [(9.6, 0.5), (9.4, 0.5), (5.0, 0.5), (5.0, 0.49), (1e-2, 5e-3), (1e6, 3e5), (20.0, 11.5)]:
        with mp.workdps(60):
            want = float(mp.loggamma(m) - (mp.loggamma(mp.mpf(m) + h) + mp.loggamma(mp.mpf(m) - h)) / 2)
        assert float(midpoint_defect(m, h)) == pytest.approx(want, rel=1e-12, abs=1e-300)


@pytest.mark.parametrize(
    ("a", "b", "match"),
    [
        ([1.0], [1.0], "at least 2"),
        ([1.0, 0.0], [1.0, 1.0], "finite and > 0"),
        ([1.0, np.nan], [1.0, 1.0], "finite and > 0"),
        ([1.0, 2.0], [1.0, 2.0, 3.0], "same number"),
        ([1.0, -2.0], [1.0, 2.0], "finite and > 0"),
    ],
)
def test_bad_parameters_are_refused(a, b, match):
    with pytest.raises(ValueError, match=match):
        pmdp.hellinger(a, b)


def test_not_numbers_is_a_type_error():
    with pytest.raises(TypeError, match="a must be"):
        log_bhattacharyya(["x", "y"], [1.0, 2.0])
