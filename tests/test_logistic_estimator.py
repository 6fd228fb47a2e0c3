"""PrivateLogisticRegression (scikit-learn's shape over the CMS 2011 mechanisms), the feature-bound
keywords' rename, and objective perturbation's extra ridge at small ε."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy.optimize import minimize

import pymc_dp as pmdp
import pymc_dp.mechanisms.logistic_regression as LR
from pymc_dp.mechanisms import SeededNoise
from pymc_dp.mechanisms.logistic_estimator import NotFittedError

TRUE_W, TRUE_B = np.array([3.0, -2.0, 1.0]), 1.5


def records(n: int = 400, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Features uniform on [−0.5, 0.5]³ (‖x‖₂ ≤ √3/2 < 1), logistic labels with an intercept."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-0.5, 0.5, (n, 3))
    return X, rng.binomial(1, 1 / (1 + np.exp(-(X @ TRUE_W + TRUE_B))))


def reference_fit(X, y, lam, B, a):
    """The documented objective, minimised independently (BFGS in the units of X):
    mean log-loss + (λ/2)(R²‖coef‖² + (R/a)² intercept²), R = √(B² + a²); a = None: no intercept."""
    s = 2.0 * y - 1.0
    d = X.shape[1]
    if a is None:
        def f(p):
            return np.logaddexp(0.0, -s * (X @ p)).mean() + 0.5 * lam * B**2 * p @ p
        return minimize(f, np.zeros(d), method="BFGS", options={"gtol": 1e-11}).x, 0.0
    R2 = B**2 + a**2

    def f(p):
        return (np.logaddexp(0.0, -s * (X @ p[:d] + p[d])).mean()
                + 0.5 * lam * (R2 * p[:d] @ p[:d] + R2 / a**2 * p[d] ** 2))
    p = minimize(f, np.zeros(d + 1), method="BFGS", options={"gtol": 1e-11}).x
    return p[:d], p[d]


# ---------------------------------------------------------------------------- the estimator


@pytest.mark.parametrize("mechanism", ["objective", "output"])
@pytest.mark.parametrize("fit_intercept, scaling", [(True, None), (True, 1.0), (False, None)])
def test_at_a_huge_epsilon_it_is_the_non_private_regularised_fit(mechanism, fit_intercept, scaling):
    # ε = 1e9: the noise's scale is ~1e-9 (objective) or 2/(Nλε) ~ 1e-7 (output), the Newton fit
    # is exact to a gradient of 1e-12 and BFGS to 1e-11 on a problem whose curvature is ≥ λR² ≈ 0.01,
    # so the two agree to ~1e-7: 1e-5 leaves room and still catches any wrong intercept convention
    # (a constant 1 read as B moves the intercept by a factor of B = 2 here).
    X, y = records()
    B, lam = 2.0, 0.005
    ledger = pmdp.PrivacyLedger()
    clf = pmdp.PrivateLogisticRegression(epsilon=1e9, feature_l2_bound=B, mechanism=mechanism, regularisation=lam,
                                         fit_intercept=fit_intercept, intercept_scaling=scaling, ledger=ledger, rng=1)
    assert clf.fit(X, y) is clf
    coef, intercept = reference_fit(X, y, lam, B, (B if scaling is None else scaling) if fit_intercept else None)
    assert clf.coef_.shape == (1, 3) and clf.intercept_.shape == (1,)
    assert np.allclose(clf.coef_[0], coef, atol=1e-5) and clf.intercept_[0] == pytest.approx(intercept, abs=1e-5)
    assert (clf.intercept_[0] != 0.0) == fit_intercept and list(clf.classes_) == [0, 1] and clf.n_features_in_ == 3

    X_new = records(50, seed=9)[0]
    z = X_new @ coef + intercept
    assert clf.decision_function(X_new).shape == (50,)
    assert np.allclose(clf.decision_function(X_new), z, atol=1e-4)
    proba = clf.predict_proba(X_new)
    assert proba.shape == (50, 2) and np.allclose(proba.sum(axis=1), 1.0)
    assert np.allclose(proba[:, 1], 1 / (1 + np.exp(-z)), atol=1e-5)
    assert np.allclose(clf.predict_log_proba(X_new), np.log(proba))
    assert clf.predict(X_new).dtype.kind == "i" and np.array_equal(clf.predict(X_new), (z > 0).astype(int))
    X_test, y_test = records(2000, seed=10)
    assert clf.score(X_test, y_test) == pytest.approx(np.mean(clf.predict(X_test) == y_test))
    (entry,) = ledger.entries
    R = math.hypot(B, B if scaling is None else scaling) if fit_intercept else B
    assert entry.details["feature_l2_bound"] == pytest.approx(R)


def test_the_intercept_is_learnt_and_the_default_constant_makes_the_fit_unit_free():
    # With the intercept column's constant a = B, rescaling X and B together leaves the scaled
    # problem, hence (same seed) the released decision function, unchanged; a constant 1 would not.
    X, y = records(600, seed=3)
    fits = [pmdp.PrivateLogisticRegression(epsilon=2.0, feature_l2_bound=B, ledger=pmdp.PrivacyLedger(),
                                           rng=4).fit(X * k, y) for k, B in ((1.0, 1.0), (50.0, 50.0))]
    assert np.allclose(fits[0].decision_function(X), fits[1].decision_function(X * 50.0), rtol=1e-8, atol=1e-10)
    assert np.allclose(fits[0].coef_, 50.0 * fits[1].coef_, rtol=1e-8)
    # The intercept matters: labels are 1 for ~80 % of these records. At ε = 1e9 and a small λ the
    # fit is the (nearly) unregularised MLE, whose intercept lies near TRUE_B = 1.5 (its standard
    # error at N = 600 is ~0.11; 0.5 is > 4 of them) and far from the 0 of a fit without one.
    big = pmdp.PrivateLogisticRegression(epsilon=1e9, feature_l2_bound=1.0, regularisation=1e-5,
                                         ledger=pmdp.PrivacyLedger(), rng=0).fit(X, y)
    assert abs(big.intercept_[0] - TRUE_B) < 0.5


def test_each_fit_charges_the_ledger_once_and_draws_fresh_noise():
    X, y = records()
    ledger = pmdp.PrivacyLedger()
    clf = pmdp.PrivateLogisticRegression(epsilon=0.7, feature_l2_bound=1.0, ledger=ledger, rng=5)
    first = clf.fit(X, y).coef_.copy()
    assert len(ledger) == 1 and ledger.total().epsilon == pytest.approx(0.7)
    assert clf.entry_ is ledger.entries[0] and clf.entry_.mechanism == "objective_perturbation"
    second = clf.fit(X, y).coef_
    assert len(ledger) == 2 and ledger.total().epsilon == pytest.approx(1.4)  # a refit is a new release
    assert not np.allclose(first, second)  # one generator for the estimator's life: independent draws
    output = pmdp.PrivateLogisticRegression(epsilon=0.3, feature_l2_bound=1.0, mechanism="output", ledger=ledger)
    output.fit(X, y)
    assert len(ledger) == 3 and ledger.entries[-1].mechanism == "output_perturbation"
    assert ledger.entries[-1].noise_source == "secure"


class CountingNoise(SeededNoise):
    """Seeded noise that counts its draws (to show a refusal drew nothing)."""

    def __init__(self, seed: int) -> None:
        super().__init__(seed)
        self.draws = 0

    def laplace(self, scale, size):
        self.draws += 1
        return super().laplace(scale, size)

    def gaussian(self, sigma, size):
        self.draws += 1
        return super().gaussian(sigma, size)


def test_a_refused_fit_charges_nothing_draws_nothing_and_keeps_the_last_fit():
    X, y = records()
    noise = CountingNoise(0)
    ledger = pmdp.PrivacyLedger(budget=pmdp.Budget(1.0))
    clf = pmdp.PrivateLogisticRegression(epsilon=0.6, feature_l2_bound=1.0, ledger=ledger, rng=noise).fit(X, y)
    kept, draws = clf.coef_.copy(), noise.draws
    # Malformed records (a label 2, a NaN feature) are not refused (a refusal would say some record is malformed):
    # test_hostile_input. What is refused here is public: shapes, and the budget.
    for args, error, message in (
        ((X[:, 0], y), ValueError, r"reshape a single feature"),
        ((X, y[:-1]), ValueError, "one label per row"),
        ((X, y), pmdp.BudgetExceededError, None),  # 0.6 spent, 0.6 more does not fit in 1.0
    ):
        with pytest.raises(error, match=message):
            clf.fit(*args)
    assert len(ledger) == 1 and noise.draws == draws and np.array_equal(clf.coef_, kept)


def test_arguments_are_refused_with_their_names_and_predictions_need_a_fit():
    ledger = pmdp.PrivacyLedger()
    good = dict(epsilon=1.0, feature_l2_bound=1.0, ledger=ledger)
    for bad, message in ((dict(epsilon=0.0), "epsilon"), (dict(epsilon=-1.0), "epsilon"),
                         (dict(feature_l2_bound=0.0), "feature_l2_bound"),
                         (dict(feature_l2_bound=float("inf")), "feature_l2_bound"),
                         (dict(regularisation=-0.1), "regularisation"), (dict(mechanism="gradient"), "mechanism"),
                         (dict(fit_intercept="yes"), "fit_intercept"),
                         (dict(intercept_scaling=0.0), "intercept_scaling"),
                         (dict(ledger=None), "ledger"), (dict(rng="seed"), "rng"),
                         (dict(ledger=pmdp.PrivacyLedger(neighbouring="add_remove")), "replace-one")):
        with pytest.raises(ValueError, match=message):
            pmdp.PrivateLogisticRegression(**{**good, **bad})
    clf = pmdp.PrivateLogisticRegression(**good)
    with pytest.raises(NotFittedError, match="not fitted yet"):
        clf.predict(np.zeros((2, 3)))
    assert isinstance(NotFittedError("x"), AttributeError) and isinstance(NotFittedError("x"), ValueError)
    clf.set_params(rng=0).fit(*records())
    with pytest.raises(ValueError, match="3 feature column"):
        clf.predict(np.zeros((2, 4)))
    with pytest.raises(ValueError, match="finite features"):
        clf.predict_proba(np.full((2, 3), np.nan))
    # scikit-learn's parameter protocol: a clone from get_params, set_params validated and undone on refusal.
    params = clf.get_params()
    assert params["epsilon"] == 1.0 and params["ledger"] is ledger and params["intercept_scaling"] is None
    assert pmdp.PrivateLogisticRegression(**params).get_params() == params
    with pytest.raises(ValueError, match="epsilon"):
        clf.set_params(epsilon=-2.0)
    assert clf.epsilon == 1.0
    with pytest.raises(ValueError, match="no parameter"):
        clf.set_params(C=1.0)
    assert "PrivateLogisticRegression(epsilon=1.0" in repr(clf)


# ---------------------------------------------------------------------------- the renamed keywords


def test_the_old_feature_norm_keyword_still_works_with_a_warning_naming_its_new_name():
    X, y = records(200)
    cases = ((pmdp.noisy_gradient_logistic, "feature_l1_bound", dict(iterations=2)),
             (pmdp.output_perturbation_logistic, "feature_l2_bound", {}),
             (pmdp.objective_perturbation_logistic, "feature_l2_bound", {}))
    for release, new, extra in cases:
        with pytest.warns(DeprecationWarning, match=rf"feature_norm= of {release.__name__}\(\) is deprecated.*"
                                                    rf"Pass {new}=2.0 instead"):
            old = release(X, y, epsilon=1.0, feature_norm=2.0, ledger=pmdp.PrivacyLedger(), rng=3, **extra)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # the new keyword warns about nothing
            renamed = release(X, y, epsilon=1.0, ledger=pmdp.PrivacyLedger(), rng=3, **{new: 2.0}, **extra)
        same = ("measurements", "weights") if release is pmdp.noisy_gradient_logistic else ("weights",)
        for attribute in same:
            assert np.array_equal(getattr(old, attribute), getattr(renamed, attribute))
        assert old.entry.details[new] == 2.0 and "feature_norm" not in old.entry.details
        with pytest.raises(TypeError, match=f"both {new}= and the deprecated feature_norm="):
            release(X, y, epsilon=1.0, feature_norm=2.0, ledger=pmdp.PrivacyLedger(), **{new: 2.0}, **extra)
        with pytest.raises(TypeError, match=f"missing required keyword argument '{new}'"):
            release(X, y, epsilon=1.0, ledger=pmdp.PrivacyLedger(), **extra)
        with pytest.raises(ValueError, match=new):
            release(X, y, epsilon=1.0, ledger=pmdp.PrivacyLedger(), **{new: -1.0}, **extra)
    run = pmdp.noisy_gradient_logistic(X, y, epsilon=1.0, iterations=1, feature_l1_bound=2.0,
                                       ledger=pmdp.PrivacyLedger(), rng=0)
    with pytest.warns(DeprecationWarning, match="feature_l1_bound"):
        assert run.feature_norm == run.feature_l1_bound == 2.0


# ---------------------------------------------------------------------------- objective perturbation's extra ridge


def test_the_extra_ridge_spends_exactly_epsilon_in_both_cases_and_is_continuous():
    # CMS 2011's bound on the privacy loss, for the regulariser the objective has (λ + Δ):
    # ε′ + 2 log(1 + c/(N(λ + Δ))). It must equal ε where the ridge is added, and not exceed it elsewhere.
    c = LR.LOGISTIC_CURVATURE
    for eps in (0.05, 0.1, 0.5, 1.0, 2.0, 8.0):
        for n in (20, 455, 10_000):
            for lam in (1e-5, 1e-3, 0.01, 0.1, 1.0):
                extra, eps_prime = LR.objective_perturbation_ridge(eps, n, lam)
                loss = eps_prime + 2 * math.log1p(c / (n * (lam + extra)))
                assert extra >= 0 and eps_prime >= eps / 2 * (1 - 1e-12) and loss <= eps * (1 + 1e-12)
                if extra > 0:
                    assert eps_prime == eps / 2 and loss == pytest.approx(eps, rel=1e-12)
    # Λ′ = c/(N(e^{ε/4} − 1)) is where the two cases meet: ε′ → ε/2 and Δ → 0 from both sides.
    eps, n = 0.5, 455
    floor = c / (n * math.expm1(eps / 4))
    below, above = (LR.objective_perturbation_ridge(eps, n, floor * f) for f in (1 - 1e-9, 1 + 1e-9))
    assert below[0] == pytest.approx(floor * 1e-9, rel=1e-3) and above[0] == 0.0
    assert below[1] == eps / 2 and above[1] == pytest.approx(eps / 2, rel=1e-7)


def test_objective_perturbation_at_a_small_epsilon_now_adds_the_ridge_and_less_noise(monkeypatch):
    # N = 400, λ = 0.003, ε = 0.5: Algorithm 2 as published keeps λ, as its ε′ = 0.5 − 2 log(1 + 0.25/1.2)
    # = 0.122 > 0, and adds noise of scale 2/ε′ = 16.4. Now λ is raised to Λ′ = 0.25/(400(e^{1/8} − 1))
    # = 0.0047 and ε′ = ε/2: scale 8, half the noise.
    X, y = records(400, seed=7)
    Xc = np.column_stack([X, np.ones(400)])  # an intercept column, bound √(1 + 1)
    n, d, eps, lam = 400, 4, 0.5, 0.003
    published = eps - math.log(1 + 2 * 0.25 / (n * lam) + (0.25 / (n * lam)) ** 2)
    assert 0 < published < eps / 2
    drawn = []
    real = LR._spherical_laplace

    def spy(dim, scale, source):
        drawn.append((scale, real(dim, scale, source)))
        return drawn[-1][1]

    monkeypatch.setattr(LR, "_spherical_laplace", spy)
    rng = np.random.default_rng(8)
    releases = [pmdp.objective_perturbation_logistic(Xc, y, epsilon=eps, feature_l2_bound=math.sqrt(2),
                                                     regularisation=lam, ledger=pmdp.PrivacyLedger(), rng=rng)
                for _ in range(200)]
    details = releases[0].entry.details
    floor = 0.25 / (n * math.expm1(eps / 4))
    assert details["epsilon_prime"] == eps / 2 and details["scale"] == 4.0 / eps
    assert details["extra_ridge"] == pytest.approx(floor - lam) and details["regularisation"] == lam
    assert all(scale == 8.0 for scale, _ in drawn) and 2 / published > 16
    # The noise vector's norm is Gamma(d, scale): mean 4 × 8 = 32 (the published rule's would be
    # 4 × 16.4 = 65.6). Over 200 draws the mean's relative s.d. is 1/√(200·4) = 3.5 %: 12 % is > 3 s.d.
    norms = np.array([np.linalg.norm(b) for _, b in drawn])
    assert norms.mean() == pytest.approx(d * 8.0, rel=0.12)
    # The release is the exact minimiser with the raised regulariser λ + Δ (the theorem's object).
    w, b = releases[-1].weights * math.sqrt(2), drawn[-1][1]
    Xs, s = Xc / math.sqrt(2), 2.0 * y - 1.0
    gradient = Xs.T @ (-s * LR._sigmoid(-s * (Xs @ w))) / n + floor * w + b / n
    assert np.abs(gradient).max() < 1e-8
