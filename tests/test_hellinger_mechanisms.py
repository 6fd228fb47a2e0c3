"""Private release of a whole Dirichlet posterior: LSDim, LSHist, EHD, EHDS (and the non-private EHDL)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import pymc_dp as pmdp
from pymc_dp.accounting import BudgetExceededError
from pymc_dp.mechanisms import _compositions
from pymc_dp.mechanisms import hellinger_mechanisms as hm

PRIVATE = hm.PRIVATE_MECHANISMS


# --------------------------------------------------------------------------- candidates


@pytest.mark.parametrize(("n", "k"), [(0, 2), (1, 3), (7, 2), (6, 3), (5, 4), (4, 5)])
def test_compositions_are_every_count_vector_once_in_lexicographic_order(n, k):
    rows = _compositions.compositions(n, k)
    brute = [c for c in itertools.product(range(n + 1), repeat=k) if sum(c) == n]
    assert rows.tolist() == [list(c) for c in sorted(brute)]
    assert rows.shape[0] == _compositions.num_compositions(n, k)
    # Small blocks give the same rows in the same order.
    blocks = list(_compositions.composition_blocks(n, k, max_rows=3))
    assert all(b.shape[0] <= 3 for b in blocks)
    assert np.vstack(blocks).tolist() == rows.tolist()


# --------------------------------------------------------------------------- the reference values


@pytest.mark.slow  # 2 × 100 000 releases through the public function: about a minute
@pytest.mark.parametrize(
    ("mechanism", "exact", "one", "two"),
    [("lsdim", 0.19673467, 0.11932561, 0.07237464), ("lshist", 0.31606028, 0.11627208, 0.04277411)],
)
def test_reference_probabilities_exactly_and_from_100000_releases(mechanism, exact, one, two):
    # ε = 1, k = 2: P(exact posterior) = ½(1 − e^{−ε/Δ}); "one/two steps away" are the
    # first count released one and two above the truth. n = 100 keeps the clamps far away.
    counts, prior = [50, 50], [1.0, 1.0]
    dist = hm.output_distribution(counts, prior, 1.0, mechanism)
    first = np.rint(dist.alphas[:, 0] - 1).astype(int)
    p = dist.probabilities
    assert p.sum() == pytest.approx(1.0, abs=1e-12)
    for offset, want in ((0, exact), (1, one), (2, two)):
        assert p[first == 50 + offset][0] == pytest.approx(want, abs=5e-9)

    # 100 000 releases through the public function (one ledger, seeded noise). Each
    # frequency has s.d. sqrt(p(1 − p)/1e5) ≤ 0.0015; 4.5 s.d. bounds all six checks
    # together at a false-alarm rate below 1e-4.
    rng = np.random.default_rng(7)
    ledger = pmdp.PrivacyLedger()
    released = np.array([pmdp.release_posterior(counts, prior, 1.0, mechanism, ledger=ledger, rng=rng).alpha[0] for _ in range(100_000)])
    assert len(ledger) == 100_000 and ledger.total().epsilon == pytest.approx(100_000.0)
    for offset, want in ((0, exact), (1, one), (2, two)):
        freq = np.mean(released == 51 + offset)
        assert abs(freq - want) <= 4.5 * np.sqrt(want * (1 - want) / 100_000), (offset, freq, want)


# --------------------------------------------------------------------------- sensitivities


def _brute_local(x, prior):
    return max(pmdp.hellinger(prior + x, prior + y) for y in hm.neighbours(x))


@pytest.mark.parametrize(("n", "k"), [(1, 2), (7, 2), (1, 3), (5, 3), (4, 4)])
def test_sensitivities_equal_brute_force_enumeration(n, k):
    prior = np.linspace(0.3, 2.5, k)
    rows = _compositions.compositions(n, k)
    local = np.array([_brute_local(x, prior) for x in rows])
    for x, ls in zip(rows, local):
        assert hm.local_sensitivity(x, prior) == pytest.approx(ls, rel=1e-12)
    # GS = max over all neighbouring pairs (the module docstring's closed form).
    assert hm.global_sensitivity(prior, n) == pytest.approx(local.max(), rel=1e-12)
    if np.all(prior == prior[0]):
        assert hm.global_sensitivity(float(prior[0]), n, k=k) == hm.global_sensitivity(prior, n)
    # S(x) = max_x' 1/(1/LS(x') + γ d(x, x')), by a plain loop over x'.
    for gamma in (1.0, 0.3):
        for x in rows[:: max(1, len(rows) // 4)]:
            want = max(1 / (1 / ls + gamma * 0.5 * np.abs(x - y).sum()) for y, ls in zip(rows, local))
            assert hm.smooth_sensitivity(x, prior, gamma) == pytest.approx(want, rel=1e-12)


def test_global_sensitivity_of_a_symmetric_prior_needs_k():
    with pytest.raises(ValueError, match="needs k"):
        hm.global_sensitivity(1.0, 10)
    assert hm.global_sensitivity(1.0, 10, k=3) == hm.global_sensitivity([1.0, 1.0, 1.0], 10)


def test_smooth_sensitivity_bounds_local_and_is_gamma_lipschitz_in_reciprocal():
    prior = np.ones(3)
    for x in ([20, 0, 0], [7, 7, 6], [18, 1, 1]):
        x = np.array(x)
        s = hm.smooth_sensitivity(x, prior)
        assert s >= hm.local_sensitivity(x, prior)
        for y in hm.neighbours(x):
            assert abs(1 / s - 1 / hm.smooth_sensitivity(y, prior)) <= 1.0 + 1e-12


# --------------------------------------------------------------------------- the privacy loss, exactly


def _data_sets(n, k):
    balanced = np.full(k, n // k)
    balanced[: n - balanced.sum()] += 1
    all_in_one = np.zeros(k, dtype=int)
    all_in_one[0] = n
    skewed = np.zeros(k, dtype=int)
    skewed[0], skewed[1] = n - n // 10 - (k - 2), n // 10
    skewed[2:] = 1
    return {"balanced": balanced, "all in one category": all_in_one, "skewed": skewed}


@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("n", [10, 100, 600])
def test_exact_privacy_loss_of_every_private_mechanism_is_at_most_epsilon(n, k):
    # Every neighbour (one record moved between any two categories) of a balanced, a
    # one-category and a skewed data set; the loss is the max over all outputs of the
    # log-probability ratio, from the exact output distributions. Tolerance 1e-9
    # relative: LSHist's loss is exactly ε, attained in the Laplace tails.
    epsilons = (0.1, 1.0, 5.0) if k == 2 else (1.0,)
    for eps in epsilons:
        for name, x in _data_sets(n, k).items():
            for mech in PRIVATE:
                p = hm.output_distribution(x, 1.0, eps, mech)
                for y in hm.neighbours(x):
                    q = hm.output_distribution(y, 1.0, eps, mech)
                    loss = np.max(np.abs(p.log_probabilities - q.log_probabilities))
                    assert loss <= eps * (1 + 1e-9), (mech, name, x, y, eps, loss)


def test_ehdl_is_not_private_and_its_loss_exceeds_epsilon():
    # Beta(0.1, 0.1) prior, n = 600: moving one record from the 599-side to the 1-side
    # changes the local sensitivity that sets EHDL's scale; the loss is 1.05 ε.
    loss = hm.privacy_loss([599, 1], [598, 2], 0.1, 1.0, "ehdl")
    assert loss > 1.05
    assert hm.privacy_loss([599, 1], [598, 2], 0.1, 1.0, "ehds") <= 1.0


def test_lsdim_spends_less_than_claimed_lshist_exactly_the_claim():
    x = np.array([40, 30, 30])
    worst = {m: max(hm.privacy_loss(x, y, 1.0, 1.0, m) for y in hm.neighbours(x)) for m in ("lsdim", "lshist")}
    assert worst["lshist"] == pytest.approx(1.0, rel=1e-9)
    assert worst["lsdim"] == pytest.approx(2 / 3, rel=1e-9)  # scale k/ε = 3 against an L1 sensitivity of 2


# --------------------------------------------------------------------------- sampling matches the exact distribution


@pytest.mark.parametrize(
    "mechanism",
    # One exponential mechanism and one Laplace one in the default suite (≈ 10 s), the rest with the slow tests.
    ["ehds", "lsdim", pytest.param("ehd", marks=pytest.mark.slow), pytest.param("ehdl", marks=pytest.mark.slow)],
)
def test_sampled_releases_follow_the_exact_output_distribution(mechanism, monkeypatch):
    # 8 000 seeded releases on n = 12, k = 3 (91 candidates), with candidate blocks of
    # 10 rows so that the two-stage (block, then candidate) Gumbel sampler is exercised.
    # Every output with expected count ≥ 50 is checked at 4.5 s.d. (a false alarm
    # anywhere below 1e-3 for the ≤ 91 outputs).
    monkeypatch.setattr(hm, "composition_blocks", lambda n, k: _compositions.composition_blocks(n, k, max_rows=10))
    counts, prior, eps = np.array([7, 4, 1]), np.array([1.0, 0.5, 2.0]), 2.0
    dist = hm.output_distribution(counts, prior, eps, mechanism)
    rng = np.random.default_rng(11)
    draws = np.array(
        [pmdp.release_posterior(counts, prior, eps, mechanism, rng=rng, allow_nonprivate=mechanism == "ehdl").alpha for _ in range(8_000)]
    )
    index = {tuple(a): i for i, a in enumerate(dist.alphas)}
    freq = np.bincount([index[tuple(a)] for a in draws], minlength=len(dist.alphas)) / 8_000
    p = dist.probabilities
    checked = p * 8_000 >= 50
    assert checked.sum() >= 5
    assert np.all(np.abs(freq - p)[checked] <= 4.5 * np.sqrt(p * (1 - p) / 8_000)[checked])


# --------------------------------------------------------------------------- ledger and noise


def test_ledger_entries_and_secure_noise_by_default():
    ledger = pmdp.PrivacyLedger()
    out = pmdp.release_posterior([120, 30, 50], [1, 1, 1], 0.5, "ehd", ledger=ledger)
    assert out.alpha.shape == (3,) and out.alpha.sum() == pytest.approx(203)
    e = out.entry
    assert e is ledger.entries[0]
    assert (e.mechanism, e.epsilon, e.delta, e.noise_source) == ("posterior_release:ehd", 0.5, 0.0, "secure")
    assert e.details["global_sensitivity"] == pytest.approx(hm.global_sensitivity(np.ones(3), 200))
    assert e.details["num_candidates"] == 20301
    lap = pmdp.release_posterior([120, 30, 50], [1, 1, 1], 0.5, "lshist", ledger=ledger).entry
    assert lap.event == {"type": "laplace", "noise_multiplier": 2.0}  # scale 2/ε = 4 over an L1 sensitivity of 2
    assert lap.details["scale"] == hm.laplace_scale("lshist", 3, 0.5) == 4.0
    assert hm.laplace_scale("lshist", 2, 0.5) == 2.0 and hm.laplace_scale("lsdim", 3, 0.5) == 6.0
    assert lap.noise_source == "secure"


def test_ehds_records_nothing_data_dependent():
    entry = pmdp.release_posterior([120, 30, 50], 1.0, 0.5, "ehds", rng=0).entry
    s = hm.smooth_sensitivity([120, 30, 50], 1.0)
    flat = repr(entry.details)
    assert "smooth" not in flat and repr(s) not in flat and repr(4 * s / 0.5) not in flat
    assert entry.details["gamma"] == 1.0


def test_without_a_ledger_the_entry_is_still_returned():
    out = pmdp.release_posterior([3, 4], 1.0, 1.0, "lsdim", rng=1)
    assert isinstance(out.entry, pmdp.LedgerEntry) and out.entry.epsilon == 1.0


def test_budget_is_checked_before_any_noise(monkeypatch):
    ledger = pmdp.PrivacyLedger(budget=pmdp.Budget(epsilon=1.0))
    pmdp.release_posterior([3, 4], 1.0, 0.8, "lshist", ledger=ledger, rng=0)

    def boom(*args, **kwargs):
        raise AssertionError("noise drawn although the budget cannot afford the release")

    monkeypatch.setattr(hm, "_sample_laplace", boom)
    monkeypatch.setattr(hm, "_sample_exponential", boom)
    for mech in PRIVATE:
        with pytest.raises(BudgetExceededError):
            pmdp.release_posterior([3, 4], 1.0, 0.5, mech, ledger=ledger, rng=0)
    assert len(ledger) == 1


def test_a_failed_draw_records_nothing(monkeypatch):
    ledger = pmdp.PrivacyLedger()

    def fail(*args, **kwargs):
        raise RuntimeError("noise source failed")

    monkeypatch.setattr(hm, "_sample_exponential", fail)
    with pytest.raises(RuntimeError):
        pmdp.release_posterior([3, 4], 1.0, 0.5, "ehd", ledger=ledger, rng=0)
    assert len(ledger) == 0


def test_ehdl_needs_an_explicit_opt_in_and_is_never_recorded():
    with pytest.raises(ValueError, match="NOT differentially private.*allow_nonprivate=True"):
        pmdp.release_posterior([3, 4], 1.0, 1.0, "ehdl", rng=0)
    with pytest.raises(ValueError, match="cannot account for it"):
        pmdp.release_posterior([3, 4], 1.0, 1.0, "ehdl", rng=0, allow_nonprivate=True, ledger=pmdp.PrivacyLedger())
    out = pmdp.release_posterior([3, 4], 1.0, 1.0, "ehdl", rng=0, allow_nonprivate=True)
    assert out.entry is None and out.alpha.sum() == pytest.approx(9.0)
    assert "**not** differentially private" in hm.release_posterior.__doc__
    assert "NOT private" in hm.__doc__


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"counts": [3]}, ValueError, "at least 2"),
        ({"counts": [3, -1]}, ValueError, ">= 0"),
        ({"counts": [3.5, 1]}, ValueError, "whole numbers"),
        ({"counts": [np.nan, 1]}, ValueError, "whole numbers"),
        ({"counts": [0, 0]}, ValueError, "nothing to release"),
        ({"counts": [[1, 2], [3, 4]]}, ValueError, "1-D"),
        ({"counts": ["a", "b"]}, TypeError, "counts must be integers"),
        ({"counts": [True, False]}, TypeError, "counts must be integers"),
        ({"counts": [2**62, 2**62]}, ValueError, "2\\*\\*53"),
        ({"prior": [1, 1, 1]}, ValueError, "one parameter per category"),
        ({"prior": 0.0}, ValueError, "finite and > 0"),
        ({"prior": [1, np.inf]}, ValueError, "finite and > 0"),
        ({"epsilon": 0.0}, ValueError, "epsilon"),
        ({"epsilon": float("nan")}, ValueError, "epsilon"),
        ({"mechanism": "gauss"}, ValueError, "mechanism must be one of"),
        ({"gamma": 1.5}, ValueError, "gamma must be in \\(0, 1\\]"),
        ({"gamma": 0.0}, ValueError, "gamma"),
        ({"counts": [10**6, 10**6, 10**6], "mechanism": "ehd"}, ValueError, "lshist"),
    ],
)
def test_bad_input_is_refused_with_a_clear_error(kwargs, error, match):
    args = {"counts": [3, 4], "prior": 1.0, "epsilon": 1.0, "mechanism": "ehds", "rng": 0}
    args.update(kwargs)
    ledger = pmdp.PrivacyLedger()
    with pytest.raises(error, match=match):
        pmdp.release_posterior(**args, ledger=ledger)
    assert len(ledger) == 0


def test_large_n_with_the_laplace_mechanisms_costs_nothing_per_record():
    out = pmdp.release_posterior([10**9, 2 * 10**9], 1.0, 1.0, "lshist", rng=0)
    assert out.alpha.sum() == pytest.approx(3 * 10**9 + 2, abs=50)
