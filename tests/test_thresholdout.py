"""The reusable holdout (Thresholdout): answers, accounting, refusals, and the model comparison helper."""

from __future__ import annotations

import numpy as np
import pytest

import pymc_dp as pmdp
from pymc_dp.mechanisms.thresholdout import SEGMENT_MECHANISM


def _holdout(records, **kw):
    kw.setdefault("threshold", 0.04)
    kw.setdefault("sigma", 0.01)
    kw.setdefault("budget", 5)
    kw.setdefault("ledger", pmdp.PrivacyLedger())
    kw.setdefault("rng", 0)
    return pmdp.ReusableHoldout(records, **kw)


def test_agreeing_estimates_return_the_training_value_and_cost_one_segment():
    rng = np.random.default_rng(1)
    hold = rng.integers(0, 2, (2000, 1)).astype(float)
    ledger = pmdp.PrivacyLedger()
    h = _holdout(hold, ledger=ledger, batch=True)
    # The training estimate equals the holdout's: the gap (0) is under the threshold T = 0.04 unless the noise
    # (T̂ + η: Laplace of scales 0.02 and 0.04) falls below 0, which happens with probability about 1/4 per query.
    exact = float(hold.mean())
    answers = [h.query(lambda r: r[:, 0], training_value=exact) for _ in range(20)]
    below = [a for a in answers if not a.over_threshold]
    assert below and all(a.value == exact for a in below)
    segments = [e for e in ledger.entries if e.mechanism == SEGMENT_MECHANISM]
    # One segment was opened at the first query, and one more after each over-threshold answer that was followed
    # by another query.
    over = sum(a.over_threshold for a in answers[:-1])
    assert len(segments) == 1 + over
    assert segments[0].epsilon == pytest.approx(2 * (1 / 2000) / 0.01)


def test_a_large_gap_is_answered_by_the_noisy_holdout_and_charged_2_over_sigma_n():
    hold = np.zeros((1000, 1))
    ledger = pmdp.PrivacyLedger()
    h = _holdout(hold, ledger=ledger, budget=3, batch=True)
    a = h.query(lambda r: r[:, 0], training_value=0.9)
    assert a.over_threshold and a.training == 0.9
    # The answer is 0 + Laplace(σ = 0.01): within 0.2 of 0 except with probability e^{-20}.
    assert abs(a.value) < 0.2
    assert h.over_threshold == 1 and h.remaining == 2
    assert ledger.total().epsilon == pytest.approx(2 * (1 / 1000) / 0.01)
    assert h.max_epsilon == pytest.approx(3 * 0.2)


def test_the_budget_of_over_threshold_answers_is_enforced():
    h = _holdout(np.zeros((500, 1)), budget=2, batch=True)
    for _ in range(2):
        assert h.query(lambda r: r[:, 0], training_value=1.0).over_threshold
    with pytest.raises(pmdp.HoldoutExhaustedError, match="all 2 over-threshold answers"):
        h.query(lambda r: r[:, 0], training_value=1.0)


def test_the_ledger_budget_is_checked_before_a_segment_draws():
    ledger = pmdp.PrivacyLedger(budget=pmdp.Budget(epsilon=0.1))
    h = _holdout(np.zeros((100, 1)), ledger=ledger, batch=True)  # a segment costs 2/(0.01 * 100) = 2
    with pytest.raises(pmdp.BudgetExceededError):
        h.query(lambda r: r[:, 0], training_value=0.5)
    assert len(ledger) == 0 and h.queries == 0


def test_values_are_clipped_into_the_declared_range():
    # φ = 5 on every record is clipped to the upper end, 1: the holdout mean is 1.
    h = _holdout(np.zeros((400, 1)), batch=True, threshold=0.01)
    a = h.query(lambda r: np.full(len(r), 5.0), training_value=0.0)
    assert a.over_threshold and abs(a.value - 1.0) < 0.2


def test_per_record_queries_are_row_local_by_construction():
    calls = []

    def phi(batch):
        calls.append(len(batch))
        return batch[:, 0] - batch[:, 0].mean()  # a batch-wide step: harmless on one record at a time

    h = _holdout(np.arange(50.0)[:, None], threshold=0.5, value_range=(-100, 100))
    assert h.query(phi, training_value=0.0).value == 0.0
    assert set(calls) == {1}


def test_training_records_give_the_training_estimate():
    rng = np.random.default_rng(3)
    train, hold = rng.normal(size=(300, 2)), rng.normal(size=(300, 2))
    h = _holdout(hold, training=train, batch=True, threshold=1.0, value_range=(-5, 5), sigma=0.01)
    a = h.query(lambda r: r[:, 1])
    assert a.training == pytest.approx(float(np.clip(train[:, 1], -5, 5).mean()))
    with pytest.raises(ValueError, match="leave training_value out"):
        h.query(lambda r: r[:, 1], training_value=0.0)


@pytest.mark.parametrize("kw, match", [
    ({"threshold": 0.0}, "threshold"),
    ({"sigma": -1.0}, "sigma"),
    ({"budget": 0}, "budget"),
    ({"budget": 2.5}, "budget"),
    ({"value_range": (1, 0)}, "value_range"),
    ({"value_range": (0, np.inf)}, "value_range"),
    ({"batch": "yes"}, "batch"),
    ({"ledger": None}, "ledger"),
])
def test_bad_arguments_are_refused(kw, match):
    with pytest.raises(ValueError, match=match):
        _holdout(np.zeros((10, 1)), **kw)


def test_add_remove_ledgers_and_bad_queries_are_refused():
    with pytest.raises(ValueError, match="replace-one"):
        _holdout(np.zeros((10, 1)), ledger=pmdp.PrivacyLedger(neighbouring="add_remove"))
    h = _holdout(np.zeros((10, 1)), batch=True)
    with pytest.raises(ValueError, match="training_value"):
        h.query(lambda r: r[:, 0])
    with pytest.raises(ValueError, match="phi must be"):
        h.query("mean", training_value=0.0)
    # On the analyst's own training records, a broken phi fails as usual.
    t = _holdout(np.zeros((10, 1)), training=np.zeros((10, 1)), batch=True)
    with pytest.raises(ValueError, match="one value per record"):
        t.query(lambda r: r[:3, 0])
    with pytest.raises(KeyError):
        t.query(lambda r: {}["x"])


def test_phi_failing_on_holdout_records_is_never_reported():
    """Whether φ fails on the holdout, and its message, depend on the private records: such records count as the
    lower end of the range, and no exception (which could quote a record) reaches the analyst."""
    secret = np.array([[0.0], [1.0], [42.0]])

    def phi(r):
        if np.any(r == 42.0):
            raise ValueError(f"bad record {r.tolist()}")
        return r[:, 0] / 2

    for batch in (True, False):
        h = _holdout(secret, batch=batch, threshold=0.01, value_range=(0, 1))
        a = h.query(phi, training_value=1.0)  # holdout mean (0 + 0.5 + 0) / 3: far from 1
        assert a.over_threshold and abs(a.value - 1 / 6) < 0.2


def test_dwork_et_al_adaptive_overfitting_is_prevented():
    """Dwork et al. (2015), Fig. 2, at a tenth of their size, one seed.

    With no signal, the plain holdout's reported accuracy of the adaptively chosen features climbs (here
    to ≥ 0.55 at 100+ features: the fresh-data accuracy is 0.50 ± 0.01, so this is overfitting of the holdout,
    about 4 s.e. of a 2 000-record mean above chance) while the reusable holdout's answers stay near 0.5: their
    median within 0.03 (an answer can be the training accuracy itself when the noisy threshold, T = 4/√n = 0.09
    with Laplace noise of scales 0.045 and 0.09, lets a gap of 0.1 through; the median is robust to one such).
    With 20 informative features both holdouts see the signal (fresh accuracy above 0.55).
    """
    from pymc_dp.examples.thresholdout import run_holdout_experiment

    noise = run_holdout_experiment(2000, 2000, ks=[20, 50, 100, 150], seed=4)
    assert noise.standard[-2:].mean() >= 0.55
    assert abs(np.median(noise.reusable) - 0.5) < 0.03
    assert noise.standard[-2:].mean() - np.median(noise.reusable) > 0.05
    assert abs(noise.fresh.mean() - 0.5) < 0.03
    signal = run_holdout_experiment(2000, 2000, signal=20, ks=[10, 20, 50], seed=4)
    assert signal.fresh.max() > 0.55 and signal.reusable.max() > 0.55
    assert noise.epsilon > 0 and noise.over_threshold >= 1


def _fit_logistic(train, columns, coords=True):
    import pymc as pm

    n = len(train)
    with pm.Model(coords={"obs": np.arange(n), "feature": ["x1", "x2"]} if coords else None) as model:
        x = pm.Data("x", train[:, :2], dims=("obs", "feature") if coords else None)
        y_obs = pm.Data("y_obs", train[:, 2], dims="obs" if coords else None)
        a = pm.Normal("a", 0, 2)
        b = pm.Normal("b", 0, 2, dims="feature" if coords else None, shape=None if coords else 2)
        mask = np.isin(np.arange(2), columns).astype(float)
        pm.Bernoulli("y", logit_p=a + x @ (b * mask), observed=y_obs, dims="obs" if coords else None)
        idata = pm.sample(200, tune=200, chains=2, random_seed=1, progressbar=False, compute_convergence_checks=False)
    return model, idata


def test_compare_on_holdout_ranks_gallery_models_and_leaves_them_untouched():
    """Three logistic regressions written the gallery's way (coords, pm.Data, X @ beta); x1 carries the signal.

    The model with x1 scores about 0.15 nats per record better than the intercept-only one on 500 held-out records
    (s.e. of a mean log score ≈ 0.02), so the holdout answers it with its noisy value and ranks it first.
    """
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1000, 2))
    y = (rng.uniform(size=1000) < 1 / (1 + np.exp(-(0.3 + 1.2 * X[:, 0])))).astype(float)
    records = np.column_stack([X, y])
    train, hold = records[:500], records[500:]
    models = {"x1": _fit_logistic(train, [0]), "x2": _fit_logistic(train, [1]), "none": _fit_logistic(train, [])}
    before = models["x1"][0]["x"].get_value().copy()
    ledger = pmdp.PrivacyLedger()
    holdout = _holdout(hold, training=train, threshold=0.02, sigma=0.005, budget=10, value_range=(-5, 0),
                       ledger=ledger, batch=True)
    result = pmdp.compare_on_holdout(holdout, models, data=lambda r: {"x": r[:, :2], "y": r[:, 2]})
    assert result.best == "x1"
    assert set(result.answers) == {"x1", "x2", "none"}
    assert "holdout score" in str(result)
    assert np.array_equal(models["x1"][0]["x"].get_value(), before)  # the model was not modified
    entries = [e for e in ledger.entries if e.mechanism == SEGMENT_MECHANISM]
    assert entries and all("batch=True" in " ".join(e.assumptions) for e in entries)
    # The score is the log predictive density: for the intercept-only model, close to the Bernoulli entropy of
    # the training share (within 0.05 nats).
    score = pmdp.log_predictive_score(*models["none"], data=lambda r: {"x": r[:, :2], "y": r[:, 2]})(hold)
    share = train[:, 2].mean()
    entropy = -(share * np.log(share) + (1 - share) * np.log(1 - share))
    assert score.shape == (500,) and abs(-score.mean() - entropy) < 0.05


def test_compare_on_holdout_refuses_what_it_cannot_score():
    import pymc as pm

    rng = np.random.default_rng(1)
    records = np.column_stack([rng.normal(size=(60, 2)), rng.integers(0, 2, 60)])
    model = _fit_logistic(records[:30], [0], coords=False)
    with pytest.raises(ValueError, match="batch=True"):
        pmdp.compare_on_holdout(_holdout(records[30:], training=records[:30]), {"m": model},
                                data=lambda r: {"x": r[:, :2], "y": r[:, 2]})
    with pytest.raises(ValueError, match="training= records"):
        pmdp.compare_on_holdout(_holdout(records[30:], batch=True), {"m": model},
                                data=lambda r: {"x": r[:, :2], "y": r[:, 2]})
    with pm.Model() as walk:
        mu = pm.Normal("mu", 0, 1)
        pm.GaussianRandomWalk("z", mu=mu, sigma=1.0, observed=np.zeros(30), init_dist=pm.Normal.dist(0, 1))
    with pytest.raises(ValueError, match="elementwise"):
        pmdp.log_predictive_score(walk, None, data=lambda r: {"z": r[:, 0]})
    with pytest.raises(ValueError, match="observed="):
        pmdp.log_predictive_score(model[0], model[1], data=lambda r: {}, observed="nope")


def test_nothing_phi_warns_or_prints_on_the_holdout_gets_out(capsys):
    """A φ whose NumPy warnings (or prints) depend on the holdout would be a free oracle: on the holdout it runs
    silenced. On the analyst's training records it is not."""
    import warnings

    hold = np.array([[0.5], [3.0]])

    def phi(r):
        print("seen", r.tolist())
        return 0.0 * np.nan_to_num(np.log(1.0 - r[:, 0]))  # log of a negative number iff some record > 1

    h = _holdout(hold, threshold=0.5, batch=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        h.query(phi, training_value=0.0)
    assert not caught and "seen" not in capsys.readouterr().out


def test_the_segment_is_charged_before_phi_touches_the_holdout():
    calls = []
    ledger = pmdp.PrivacyLedger(budget=pmdp.Budget(epsilon=0.01))
    h = _holdout(np.zeros((100, 1)), ledger=ledger, batch=True)  # a segment costs 2
    with pytest.raises(pmdp.BudgetExceededError):
        h.query(lambda r: calls.append(len(r)) or r[:, 0], training_value=0.5)
    assert calls == []


def test_infinite_values_are_clipped_to_the_nearer_end():
    h = _holdout(np.zeros((400, 1)), batch=True, threshold=0.01)
    a = h.query(lambda r: np.full(len(r), np.inf), training_value=0.0)
    assert a.over_threshold and abs(a.value - 1.0) < 0.2


def test_compare_on_holdout_refuses_before_spending_a_model_that_cannot_score_other_sizes():
    """The gallery often fixes the observed length (no shape=x.shape[0]): such a model would fail on every held-out
    record (failures there count as the lower end, silently), so it is refused on a public probe first. So is a
    data= that forgets a per-record pm.Data container, and a comparison the budget cannot finish."""
    import pymc as pm

    rng = np.random.default_rng(2)
    records = np.column_stack([rng.normal(size=100), rng.normal(size=100), rng.integers(0, 3, 100)])
    train, hold = records[:60], records[60:]
    with pm.Model() as fixed:
        x = pm.Data("x", train[:, 0])
        a, b = pm.Normal("a", 0, 3), pm.Normal("b", 0, 3)
        pm.Normal("y", a + b * x, 1.0, observed=train[:, 1])
        idata = pm.sample(50, tune=50, chains=1, random_seed=1, progressbar=False, compute_convergence_checks=False)
    ledger = pmdp.PrivacyLedger()
    holdout = _holdout(hold, training=train, batch=True, value_range=(-10, 0), ledger=ledger)
    with pytest.raises(ValueError, match="shape=x.shape"):
        pmdp.compare_on_holdout(holdout, {"fixed": (fixed, idata)}, data=lambda r: {"x": r[:, 0], "y": r[:, 1]})
    with pm.Model() as grouped:
        x = pm.Data("x", train[:, 0])
        g = pm.Data("g", train[:, 2].astype(int))
        a = pm.Normal("a", 0, 3, shape=3)
        pm.Normal("y", a[g] + x, 1.0, observed=train[:, 1], shape=x.shape[0])
        idata_g = pm.sample(50, tune=50, chains=1, random_seed=1, progressbar=False, compute_convergence_checks=False)
    with pytest.raises(ValueError, match=r"also return \['g'\]"):
        pmdp.compare_on_holdout(holdout, {"grouped": (grouped, idata_g)}, data=lambda r: {"x": r[:, 0], "y": r[:, 1]})
    small = _holdout(hold, training=train, batch=True, value_range=(-10, 0), budget=1, ledger=ledger)
    both = {"a": (grouped, idata_g), "b": (grouped, idata_g)}
    full = lambda r: {"x": r[:, 0], "y": r[:, 1], "g": r[:, 2].astype(int)}  # noqa: E731
    with pytest.raises(ValueError, match="over-threshold answer"):
        pmdp.compare_on_holdout(small, both, data=full)
    tight = pmdp.PrivacyLedger(budget=pmdp.Budget(epsilon=1.5 * holdout.epsilon_per_segment))
    poor = _holdout(hold, training=train, batch=True, value_range=(-10, 0), ledger=tight)
    with pytest.raises(pmdp.BudgetExceededError):
        pmdp.compare_on_holdout(poor, both, data=full)
    assert len(ledger) == 0 and len(tight) == 0
