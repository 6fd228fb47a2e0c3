"""The measurements route's private clip: the exponential mechanism on how many records lie above each candidate."""

from __future__ import annotations

import numpy as np
import pytest

from pymc_dp.accounting import PrivacyLedger
from pymc_dp.mechanisms.private_clip import ClipSelection
from pymc_dp.mechanisms.private_newton import WEIGHTS_DETAIL, ClippedTermsWarning, NewtonSchedule, private_newton


def test_replacing_one_record_moves_every_utility_by_at_most_one():
    """The sensitivity the choice is charged for (Δu = 1), checked on random neighbours: one record replaced by any
    value, including one that is not finite (counted as 0)."""
    rng = np.random.default_rng(0)
    selection = ClipSelection()
    for _ in range(200):
        norms = rng.lognormal(0.0, 1.5, 300)
        neighbour = norms.copy()
        neighbour[rng.integers(300)] = rng.choice([0.0, np.inf, np.nan, rng.lognormal(0.0, 3.0)])
        moved = selection.utilities(norms, 50.0, 0.3) - selection.utilities(neighbour, 50.0, 0.3)
        assert np.max(np.abs(moved)) <= 1.0 + 1e-12


def test_the_chosen_clip_leaves_at_most_twice_the_target_above_it_at_the_stated_confidence():
    """Over 400 choices from heavy-tailed norms (N = 10⁵, ε′ = 0.05: target t ≈ 286 records), the candidate chosen
    has at most 2t records above it in at least 1 − β = 95 % of them (the bound the module states; 400 trials put
    the observed rate within ±0.025 of its mean at 2.3 standard errors), and the clip used is safety × it, never
    above the worst case."""
    rng = np.random.default_rng(1)
    norms = rng.lognormal(0.0, 1.0, 100_000)
    selection, worst = ClipSelection(), 200.0
    target = selection.rank_error(0.05)
    within = 0
    for seed in range(400):
        clip = selection.choose(norms, worst, 0.05, np.random.default_rng(seed))
        assert clip <= worst
        within += np.sum(norms > clip / selection.safety) <= 2 * target
    assert within / 400 >= 0.95 - 0.025, within


def test_the_choice_is_made_only_when_its_rank_error_is_a_small_share_of_the_records():
    selection = ClipSelection()
    assert selection.worthwhile(100_000, 0.45)  # the final score's ε at ε = 1: t ≈ 318 records of 10⁵
    assert not selection.worthwhile(500, 0.45)  # 2t of 500 is 127 %: a quantile anywhere
    assert not selection.worthwhile(0, 10.0)


@pytest.mark.parametrize("argument, value", [("share", 0.0), ("share", 1.0), ("grid", 1), ("floor", 1.5),
                                             ("confidence", 0.0), ("safety", 0.5), ("max_fraction", 1.0)])
def test_bad_settings_are_refused_by_name(argument, value):
    with pytest.raises(ValueError, match=argument):
        ClipSelection(**{argument: value})


def _run(schedule: NewtonSchedule, ledger: PrivacyLedger, norms_scale: float = 1.0):
    rng = np.random.default_rng(3)
    scores = rng.normal(0.0, norms_scale, (200_000, 2))
    infos = np.abs(rng.normal(0.0, norms_scale, (200_000, 3)))
    return private_newton(lambda point: [(scores, infos)], lambda point: (100.0, 100.0), start=np.zeros(2),
                          prior_mean=np.zeros(2), prior_precision=np.ones(2), bound_step=lambda step: step,
                          epsilon=1.0, schedule=schedule, ledger=ledger, rng=4)


def test_a_run_with_private_clips_charges_each_choice_and_spends_exactly_its_epsilon():
    """Each round's choices are ledger entries of their own (exponential mechanism, before the round's releases), the
    whole run composes to the ε asked, and the clips used sit far below the worst case of 100 given to it (the
    records' norms: sums of two or three |N(0, 1)|)."""
    schedule = NewtonSchedule(rounds=3, clip_selection=ClipSelection(), records=200_000)
    ledger = PrivacyLedger()
    run = _run(schedule, ledger)
    mechanisms = [e.mechanism for e in ledger.entries]
    assert mechanisms.count("exponential") == sum((s > 0) + (i > 0) for s, i in schedule.choices(1.0)) > 0
    assert ledger.total().epsilon == pytest.approx(1.0)
    # each choice keeps a clip near the worst case with probability up to β = 5 % (the harmless direction: more
    # noise, no cut records), so of the six here at least five are far below it
    clips = [c for r in run.rounds for c in (r.score_clip, r.information_clip)]
    assert sum(c < 20 for c in clips) >= 5, clips
    final = run.final  # after the first round the score is clipped in its weighted norm, each weight ≥ 1
    assert run.rounds[0].score_weights is None and final.score_weights.min() == pytest.approx(1.0)
    np.testing.assert_allclose(final.score_scale, 2 * final.score_clip / schedule.budgets(1.0)[-1][0]
                               * final.score_weights)
    # the information's entry (i, j) is clipped and noised w_i·w_j-fold
    np.testing.assert_allclose(final.information_scale, 2 * final.information_clip / schedule.budgets(1.0)[-1][1]
                               * np.outer(final.score_weights, final.score_weights))
    assert WEIGHTS_DETAIL in ledger.entries[-1].details


def test_without_a_selection_the_worst_case_is_used_and_nothing_is_spent_on_choosing():
    ledger = PrivacyLedger()
    run = _run(NewtonSchedule(rounds=2), ledger)
    assert {e.mechanism for e in ledger.entries} == {"laplace"}
    assert run.final.score_clip == 100.0 and ledger.total().epsilon == pytest.approx(1.0)


def test_terms_beyond_the_clip_are_counted_for_the_curator_under_their_own_warning():
    """Records' terms beyond a round's clip are scaled into it, and how many is reported to the curator only, as a
    ClippedTermsWarning (a class to filter on, not a bare UserWarning)."""
    rng = np.random.default_rng(0)
    scores, infos = rng.normal(0.0, 1.0, (500, 2)), np.abs(rng.normal(0.0, 1.0, (500, 3)))
    with pytest.warns(ClippedTermsWarning, match=r"record term\(s\).*curator only"):
        private_newton(lambda point: [(scores, infos)], lambda point: (0.5, 0.5), start=np.zeros(2),
                       prior_mean=np.zeros(2), prior_precision=np.ones(2), bound_step=lambda step: step,
                       epsilon=1.0, schedule=NewtonSchedule(rounds=1), ledger=PrivacyLedger(), rng=1)


def test_a_failure_after_a_choice_still_records_what_was_drawn():
    """A round that fails after its clips were chosen, as its score's noise is drawn: the choices and that draw are
    recorded as spent, nothing after them, and nothing stays reserved."""
    from pymc_dp.mechanisms.noise import SeededNoise

    class Failing(SeededNoise):
        def add_laplace(self, value, scale):
            raise RuntimeError("the noise source failed")

    ledger = PrivacyLedger()
    with pytest.raises(RuntimeError):
        private_newton(lambda point: [(np.ones((200_000, 2)), np.ones((200_000, 3)))], lambda point: (100.0, 100.0),
                       start=np.zeros(2), prior_mean=np.zeros(2), prior_precision=np.ones(2),
                       bound_step=lambda step: step, epsilon=1.0,
                       schedule=NewtonSchedule(rounds=1, clip_selection=ClipSelection(), records=200_000),
                       ledger=ledger, rng=Failing(0))
    assert [e.mechanism for e in ledger.entries] == ["exponential", "exponential", "laplace"]
    assert not ledger.reserved


def test_terms_kept_from_the_norms_pass_give_the_release_computed_afresh(monkeypatch):
    """Reusing the records' terms from the clip's pass (when they fit in memory) changes nothing released."""
    import pymc_dp.mechanisms.private_newton as PN

    schedule = NewtonSchedule(rounds=2, clip_selection=ClipSelection(), records=200_000)
    kept = _run(schedule, PrivacyLedger())
    monkeypatch.setattr(PN, "KEPT_TERMS", 0)
    afresh = _run(schedule, PrivacyLedger())
    for a, b in zip(kept.rounds, afresh.rounds):
        np.testing.assert_array_equal(a.score, b.score)
        np.testing.assert_array_equal(a.information, b.information)


def test_private_clips_are_refused_under_add_remove_where_the_number_of_records_is_private():
    """Whether a choice is made depends on N: under add/remove that would release N's side of a threshold for free."""
    ledger = PrivacyLedger(neighbouring="add_remove")
    with pytest.raises(ValueError, match="replace-one ledger"):
        _run(NewtonSchedule(rounds=1, clip_selection=ClipSelection(), records=200_000), ledger)
    assert len(ledger) == 0 and not ledger.reserved


def test_clips_are_chosen_in_every_round_or_in_none():
    """A choice in the last round alone, after pilots at the worst case, made Gamma regressions worse (measured in
    NewtonSchedule.choices): with six rounds at ε = 1, 5 000 records are too few for the pilots' information (2t ≈
    7 154 records), so no round chooses; at 10⁵ every release does."""
    selection = ClipSelection()
    assert all(c == (0.0, 0.0) for c in NewtonSchedule(rounds=6, clip_selection=selection,
                                                       records=5_000).choices(1.0))
    chosen = NewtonSchedule(rounds=6, clip_selection=selection, records=100_000).choices(1.0)
    assert all(s > 0 and i > 0 for s, i in chosen)


def test_a_shape_parameters_trigamma_compiles_in_c_not_numba_object_mode():
    """A negative binomial's second derivative in log α is a trigamma, which Numba runs one record at a time in
    Python (4 s per 10⁵ records): its derivatives compile with the C backend; a Poisson's stay on the default."""
    from glm_models import glm_model
    from pymc_dp.model.score_measurements import plan_score_privatization

    x = np.random.default_rng(0).uniform(-1, 1, (200, 2))
    y = np.random.default_rng(1).poisson(2.0, 200)
    linkers = {}
    for family in ("negative binomial", "poisson"):
        plan = plan_score_privatization(glm_model(family, x, y), 1.0, bounds={"y": {"x": (-1, 1), "y": (0, 30)}})
        linkers[family] = type(plan.derivatives._fn.maker.linker).__name__
    assert "Numba" not in linkers["negative binomial"], linkers


def test_the_score_weights_follow_the_informations_scale_only_where_it_beats_its_noise():
    """w_j ∝ √(I_jj + 3√2 b_H), the smallest 1, none above 30: post-processing of a released information."""
    from pymc_dp.mechanisms.private_newton import MAX_WEIGHT_RATIO, score_weights

    clear = score_weights(np.diag([100.0, 400.0, 1e6]), 0.01)  # noise negligible: √ of the ratios, capped
    np.testing.assert_allclose(clear, [1.0, 2.0, MAX_WEIGHT_RATIO], rtol=1e-3)
    noisy = score_weights(np.diag([100.0, -50.0, 400.0]), 1000.0)  # noise s.d. ≈ 1414: the weights stay near 1
    assert noisy.min() == 1.0 and noisy.max() < 1.1
    assert np.all(score_weights(np.diag([np.nan, 4.0]), 1.0) >= 1.0)
