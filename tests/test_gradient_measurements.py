"""Private logistic regression by noisy gradients ([WM10] §4.1) and inference from its measurements."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pymc as pm
import pytest

import pymc_dp as pmdp
from pymc_dp.mechanisms.logistic_regression import ClippedFeaturesWarning

D = 4
TRUE_W = np.array([8.0, -6.0, 4.0, 2.0])  # Bayes error ≈ 15 % on the unit cube
QUIET = dict(progressbar=False, compute_convergence_checks=False)


def synth(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """[WM10]'s SYNTH design: features uniform on the unit-volume cube centred at 0, logistic labels."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-0.5, 0.5, (n, D))
    return X, rng.binomial(1, 1 / (1 + np.exp(-X @ TRUE_W)))


def design_rows(m: int = 2000) -> np.ndarray:
    return np.random.default_rng(99).uniform(-0.5, 0.5, (m, D))


# ---------------------------------------------------------------------------- the mechanism


def test_the_run_is_reserved_whole_and_charged_as_iterations_laplace_releases():
    X, y = synth(300, 1)
    ledger = pmdp.PrivacyLedger()
    run = pmdp.noisy_gradient_logistic(X, y, epsilon=1.0, iterations=5, feature_l1_bound=2.0, ledger=ledger, rng=3)
    (entry,) = ledger.entries
    assert entry.count == 5 and entry.epsilon == pytest.approx(0.2) and ledger.total().epsilon == pytest.approx(1.0)
    assert entry.noise_source == "seeded" and entry.details["sensitivity"] == 4.0
    assert run.scale == pytest.approx(4.0 / 0.2)  # 2B/(ε/T)
    # The path is post-processing of the releases: w_{t+1} = w_t + η z_t / N, from w_0 = 0.
    assert np.allclose(run.weights[0], 0)
    start = np.array([1.0, -1.0, 0.5, 0.0])
    warm = pmdp.noisy_gradient_logistic(X, y, epsilon=1.0, iterations=2, feature_l1_bound=2.0,
                                        initial_weights=start, ledger=pmdp.PrivacyLedger(), rng=3)
    assert np.allclose(warm.weights[0], start)
    assert np.allclose(np.diff(run.weights, axis=0), run.learning_rate * run.measurements / 300)
    assert run.measurements.shape == (5, D) and not run.measurements.flags.writeable
    secure = pmdp.noisy_gradient_logistic(X, y, epsilon=1.0, iterations=2, ledger=pmdp.PrivacyLedger(),
                                          feature_l1_bound=2.0)
    assert secure.entry.noise_source == "secure"


def test_a_prefix_is_the_run_as_it_stood_after_its_first_measurements():
    X, y = synth(300, 1)
    ledger = pmdp.PrivacyLedger()
    run = pmdp.noisy_gradient_logistic(X, y, epsilon=1.0, iterations=5, feature_l1_bound=2.0, ledger=ledger, rng=3)
    head = run.prefix(2)
    assert head.iterations == 2 and np.array_equal(head.measurements, run.measurements[:2])
    assert np.array_equal(head.weights, run.weights[:3]) and np.array_equal(head.final_weights, run.weights[2])
    # The two measurements cost 2/5 of the run's ε at the run's per-measurement scale; nothing new is charged.
    assert head.epsilon == pytest.approx(0.4) and head.scale == run.scale and head.entry is run.entry
    assert len(ledger.entries) == 1 and np.array_equal(run.prefix(5).measurements, run.measurements)
    for bad in (0, 6, 2.0, True):
        with pytest.raises(ValueError, match="iterations must be an integer from 1 to the run's 5"):
            run.prefix(bad)


def test_the_noise_is_laplace_of_the_stated_scale_around_the_exact_gradient_sum():
    # 4000 single-iteration runs: the centred measurement is Laplace(b), so its mean absolute
    # value is b (sd of the estimate b/√4000 ≈ 1.6 % of b: 5 % is > 3 sd) and its mean 0.
    X, y = synth(200, 2)
    exact = X.T @ (y - 0.5)  # the gradient sum at w_0 = 0
    rng = np.random.default_rng(7)
    noise = np.array([
        pmdp.noisy_gradient_logistic(X, y, epsilon=2.0, iterations=1, feature_l1_bound=2.0, ledger=pmdp.PrivacyLedger(),
                                     rng=rng).measurements[0] - exact
        for _ in range(4000)
    ])
    b = 4.0 / 2.0
    assert np.abs(noise).mean() == pytest.approx(b, rel=0.05)
    assert abs(noise.mean()) < 4 * b * math.sqrt(2) / math.sqrt(noise.size)


def test_bad_records_and_arguments_are_refused_before_anything_is_spent():
    X, y = synth(50, 3)
    ledger = pmdp.PrivacyLedger()
    cases = [
        (dict(X=X, y=y[:-1]), "one label per row"),
        (dict(X=X, y=y, feature_l1_bound=0.0), "feature_l1_bound"),
        (dict(X=X, y=y, iterations=0), "iterations"),
        (dict(X=X, y=y, epsilon=-1.0), "epsilon"),
        (dict(X=X, y=y, learning_rate=float("nan")), "learning_rate"),
        (dict(X=X, y=y, initial_weights=np.zeros(3)), "initial_weights must hold one weight per feature"),
        (dict(X=X, y=y, initial_weights=np.full(D, np.inf)), "initial_weights"),
    ]
    for kwargs, message in cases:
        args = {"epsilon": 1.0, "feature_l1_bound": 2.0, **kwargs}
        with pytest.raises(ValueError, match=message):
            pmdp.noisy_gradient_logistic(ledger=ledger, rng=1, **args)
    with pytest.raises(ValueError, match="replace-one"):
        pmdp.noisy_gradient_logistic(X, y, epsilon=1.0, feature_l1_bound=2.0,
                                     ledger=pmdp.PrivacyLedger(neighbouring="add_remove"))
    with pytest.raises(pmdp.BudgetExceededError):
        pmdp.noisy_gradient_logistic(X, y, epsilon=1.0, feature_l1_bound=2.0,
                                     ledger=pmdp.PrivacyLedger(budget=pmdp.Budget(0.5)), rng=1)
    with pytest.raises(TypeError, match="feature_l1_bound"):
        pmdp.noisy_gradient_logistic(X, y, epsilon=1.0, ledger=ledger)
    assert len(ledger) == 0


def test_rows_outside_the_declared_ball_are_projected_onto_it_and_counted():
    X, y = synth(40, 4)
    X[:3] *= 10  # L1 norms far above 2
    with pytest.warns(ClippedFeaturesWarning, match=r"3 row\(s\) had L1 norm"):
        run = pmdp.noisy_gradient_logistic(X, y, epsilon=1e9, iterations=1, feature_l1_bound=2.0,
                                           ledger=pmdp.PrivacyLedger(), rng=1)
    projected = X.copy()
    projected[:3] *= (2.0 / np.abs(X[:3]).sum(axis=1))[:, None]
    assert np.allclose(run.measurements[0], projected.T @ (y - 0.5), atol=1e-6)
    assert "3" not in str(run.entry.details)  # the count stays with the curator: it is data


# ---------------------------------------------------------------------------- inference


def _fit(run, draws=500, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pmdp.logistic_from_gradients(run, design_rows(), **kwargs):
            return pm.sample(draws, tune=draws, chains=2, cores=1, random_seed=5, **QUIET)


def test_with_little_noise_the_posterior_covers_the_true_weights():
    # ε = 50 over 10 iterations: b = 0.8, far below the sums' sampling sd (≈ 7), so the posterior
    # is the CLT posterior of the data. Each coordinate's truth within 3 posterior sd (a correct
    # posterior misses one of four with probability < 1 %). 2 × 250 draws: Monte Carlo error of
    # the mean ≈ 0.06 posterior sd at ESS ≈ 300, small beside the 3-sd band.
    X, y = synth(1000, 5)
    run = pmdp.noisy_gradient_logistic(X, y, epsilon=50.0, iterations=10, feature_l1_bound=2.0, learning_rate=40.0,
                                       ledger=pmdp.PrivacyLedger(), rng=6)
    w = _fit(run, draws=250).posterior["w"].values.reshape(-1, D)
    z = (w.mean(axis=0) - TRUE_W) / w.std(axis=0)
    assert np.all(np.abs(z) < 3), z
    assert np.all(w.std(axis=0) < 2.5)  # informative: the prior sd is 5
    with pytest.raises(ValueError, match="noise must be 'auto', 'exact' or 'gaussian'"):
        pmdp.logistic_from_gradients(run, design_rows(), noise="laplace")


@pytest.mark.slow
def test_inference_beats_the_heuristic_at_a_small_epsilon():
    # ε = 1 on 1000 SYNTH records, 4 runs: the heuristic's last iterate against the posterior's
    # expected error on 2000 test records (Bayes error ≈ 15 %). [WM10] Table 3's claim, in mean.
    X_test, y_test = synth(2000, 100)
    heuristic, inference = [], []
    for seed in range(4):
        X, y = synth(1000, 10 + seed)
        run = pmdp.noisy_gradient_logistic(X, y, epsilon=1.0, iterations=10, feature_l1_bound=2.0, learning_rate=40.0,
                                           ledger=pmdp.PrivacyLedger(), rng=seed)
        heuristic.append(np.mean((X_test @ run.final_weights > 0) != y_test))
        draws = _fit(run).posterior["w"].values.reshape(-1, D)[::20]
        inference.append(np.mean([(X_test @ w > 0) != y_test for w in draws]))
    assert np.mean(inference) < np.mean(heuristic), (inference, heuristic)
    assert np.mean(inference) < 0.2


@pytest.mark.slow
def test_public_records_sharpen_the_posterior_and_both_covariances_agree():
    X, y = synth(1000, 20)
    run = pmdp.noisy_gradient_logistic(X, y, epsilon=1.0, iterations=10, feature_l1_bound=2.0, learning_rate=40.0,
                                       ledger=pmdp.PrivacyLedger(), rng=21)
    fixed = _fit(run).posterior["w"].values.reshape(-1, D)
    exact = _fit(run, covariance="exact").posterior["w"].values.reshape(-1, D)
    # Noise-dominated (b = 40 against a sampling sd ≈ 7): the covariance's θ-dependence hardly
    # matters; the means agree within 0.5 sd (MCMC error of 2000 draws ≈ 0.05 sd).
    assert np.all(np.abs(fixed.mean(axis=0) - exact.mean(axis=0)) < 0.5 * fixed.std(axis=0))
    X_pub, y_pub = synth(200, 22)
    public = _fit(run, public=(X_pub, y_pub)).posterior["w"].values.reshape(-1, D)
    assert np.all(public.std(axis=0) < 0.8 * fixed.std(axis=0))
    with pytest.raises(ValueError, match="covariance must be"):
        _fit(run, covariance="diagonal")
    with pytest.raises(ValueError, match=r"features must be an \(M, 4\)"):
        pmdp.logistic_from_gradients(run, design_rows()[:, :3])


# ---------------------------------------------------------------------------- output and objective perturbation


def test_output_perturbation_adds_noise_of_density_exp_minus_norm_over_the_stated_scale():
    # 3000 releases at one seed sequence: ‖w − w*‖ (scaled units) is Gamma(d, 2/(Nλε)), so its
    # mean is d·scale (relative sd 1/√(3000·d) ≈ 0.9 %: 4 % is > 4 sd) and the direction averages to 0.
    from pymc_dp.mechanisms.logistic_regression import _fit_regularised, _scaled

    X, y = synth(200, 30)
    lam, eps = 0.05, 1.0
    Xs, s = _scaled(X, y, 1.0)
    optimum = _fit_regularised(Xs, s, lam)
    rng = np.random.default_rng(31)
    noise = np.array([
        pmdp.output_perturbation_logistic(X, y, epsilon=eps, feature_l2_bound=1.0, regularisation=lam,
                                          ledger=pmdp.PrivacyLedger(), rng=rng).weights - optimum
        for _ in range(3000)
    ])
    scale = 2.0 / (200 * lam * eps)
    norms = np.sqrt((noise**2).sum(axis=1))
    assert norms.mean() == pytest.approx(D * scale, rel=0.04)
    assert np.all(np.abs((noise / norms[:, None]).mean(axis=0)) < 4 / math.sqrt(D * 3000))


def test_objective_perturbation_minimises_the_perturbed_objective_and_charges_epsilon(monkeypatch):
    import pymc_dp.mechanisms.logistic_regression as LR

    X, y = synth(300, 40)
    b = np.array([3.0, -1.0, 0.5, 2.0])
    monkeypatch.setattr(LR, "_spherical_laplace", lambda d, scale, source: b)
    ledger = pmdp.PrivacyLedger()
    out = pmdp.objective_perturbation_logistic(X, y, epsilon=1.0, feature_l2_bound=1.0, regularisation=0.01,
                                               ledger=ledger, rng=1)
    Xs, s = LR._scaled(X, y, 1.0)
    w = out.weights * 1.0
    margin = s * (Xs @ w)
    gradient = Xs.T @ (-s * LR._sigmoid(-margin)) / 300 + 0.01 * w + b / 300
    assert np.abs(gradient).max() < 1e-8  # the exact minimiser the theorem needs
    (entry,) = ledger.entries
    assert entry.epsilon == 1.0 and entry.mechanism == "objective_perturbation"
    assert entry.details["epsilon_prime"] == pytest.approx(1.0 - math.log(1 + 0.5 / 3 + 0.0625 / 9))
    # Nλ small: the extra ridge of CMS Algorithm 2 and ε′ = ε/2.
    small = pmdp.objective_perturbation_logistic(X[:20], y[:20], epsilon=0.1, feature_l2_bound=1.0,
                                                 regularisation=0.001, ledger=pmdp.PrivacyLedger(), rng=1)
    assert small.entry.details["epsilon_prime"] == 0.05
    assert small.entry.details["extra_ridge"] == pytest.approx(0.25 / (20 * math.expm1(0.025)) - 0.001)


def test_perturbation_mechanisms_refuse_bad_arguments_and_learn_at_a_large_epsilon():
    X, y = synth(1000, 50)
    X_test, y_test = synth(4000, 51)
    for release in (pmdp.output_perturbation_logistic, pmdp.objective_perturbation_logistic):
        ledger = pmdp.PrivacyLedger()
        for bad, message in ((dict(regularisation=0.0), "regularisation"), (dict(epsilon=0.0), "epsilon"),
                             (dict(y=y[:-1]), "one label per row")):
            with pytest.raises(ValueError, match=message):
                release(**{"X": X, "y": y, "epsilon": 1.0, "feature_l2_bound": 1.0, **bad}, ledger=ledger)
        with pytest.raises(ValueError, match="replace-one"):
            release(X, y, epsilon=1.0, feature_l2_bound=1.0, ledger=pmdp.PrivacyLedger(neighbouring="add_remove"))
        assert len(ledger) == 0
        w = release(X, y, epsilon=10.0, feature_l2_bound=1.0, regularisation=0.01, ledger=ledger, rng=2).weights
        assert np.mean((X_test @ w > 0) != y_test) < 0.17  # Bayes error ≈ 15 %


# ---------------------------------------------------------------------------- PCA from a noisy second moment ([WM10] 4.2)


def _pca_records(n: int = 2000, d: int = 5, seed: int = 60) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    u = np.ones(d) / np.sqrt(d)
    X = rng.normal(size=(n, 1)) * 0.4 * u + rng.normal(size=(n, d)) * 0.1
    return X / np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None], u


def test_the_second_moment_sensitivities_hold_for_any_pair_of_records():
    # 20 000 random pairs on and inside the unit ball in 6 dimensions, plus the extremes.
    rng = np.random.default_rng(61)
    d = 6
    x, x2 = (rng.normal(size=(20_000, d)) for _ in range(2))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    x2 /= np.maximum(1, np.linalg.norm(x2, axis=1, keepdims=True))
    rows, cols = np.triu_indices(d)
    diff = x[:, rows] * x[:, cols] - x2[:, rows] * x2[:, cols]
    assert np.sqrt((diff**2).sum(axis=1)).max() <= math.sqrt(2) + 1e-12
    assert np.abs(diff).sum(axis=1).max() <= d + 1 + 1e-12
    e1, e2 = np.eye(d)[0], np.eye(d)[1]  # two orthogonal unit records: the L2 bound is attained
    assert np.sqrt(((e1[rows] * e1[cols] - e2[rows] * e2[cols]) ** 2).sum()) == pytest.approx(math.sqrt(2))


def test_noisy_second_moment_charges_its_mechanism_and_refuses_bad_input():
    X, _ = _pca_records()
    gauss_ledger, laplace_ledger = pmdp.PrivacyLedger(), pmdp.PrivacyLedger()
    g = pmdp.noisy_second_moment(X, epsilon=1.0, norm_bound=1.0, ledger=gauss_ledger, rng=1)
    lap = pmdp.noisy_second_moment(X, epsilon=1.0, norm_bound=1.0, mechanism="laplace", ledger=laplace_ledger, rng=1)
    assert gauss_ledger.total() == (1.0, 1e-6) and g.entry.details["sensitivity"] == pytest.approx(math.sqrt(2))
    assert laplace_ledger.total() == (1.0, 0.0) and lap.entry.details["sensitivity"] == pytest.approx(6.0)
    assert g.values.shape == (15,) and np.allclose(g.matrix(), g.matrix().T) and lap.noise_sd > g.noise_sd
    for kwargs, message in ((dict(mechanism="wishart"), "mechanism"), (dict(norm_bound=-1.0), "norm_bound"),
                            (dict(X=X[:, :, None]), "2-D")):
        with pytest.raises(ValueError, match=message):
            pmdp.noisy_second_moment(**{"X": X, "epsilon": 1.0, "norm_bound": 1.0, **kwargs}, ledger=pmdp.PrivacyLedger())
    with pytest.raises(ValueError, match="replace-one"):
        pmdp.noisy_second_moment(X, epsilon=1.0, norm_bound=1.0, ledger=pmdp.PrivacyLedger(neighbouring="add_remove"))


def test_the_pca_posterior_finds_the_direction_and_knows_how_sure_it_is():
    X, _ = _pca_records()
    truth = np.linalg.eigh(X.T @ X)[1][:, -1]
    spread = {}
    for eps in (0.1, 10.0):
        release = pmdp.noisy_second_moment(X, epsilon=eps, norm_bound=1.0, ledger=pmdp.PrivacyLedger(), rng=2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pmdp.pca_from_second_moment(release):
                trace = pm.sample(500, tune=500, chains=2, cores=1, random_seed=3, **QUIET)
        theta = trace.posterior["theta"].values.reshape(-1, 5)
        directions = theta / np.linalg.norm(theta, axis=1, keepdims=True)
        angles = np.degrees(np.arccos(np.clip(np.abs(directions @ truth), 0, 1)))
        leading = np.linalg.eigh((theta[:, :, None] * theta[:, None, :]).mean(axis=0))[1][:, -1]
        spread[eps] = np.median(angles)
        assert np.degrees(np.arccos(min(1.0, abs(leading @ truth)))) < 3 * spread[eps] + 0.5
    assert spread[10.0] < 1.0 < spread[0.1]
