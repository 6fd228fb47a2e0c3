"""The empirical privacy auditor, and the audit of every mechanism and private step.

Every audit runs at 99 % confidence with a fixed seed, so each result below is
deterministic; the 99 % says how rarely a *correct* mechanism would fail its audit
over random seeds (checked by ``test_the_lower_bound_is_a_valid_confidence_bound``).
Each mechanism is audited with its broken twin (noise scale or temperature halved),
which must fail: that is what shows the audit has power. The run counts are the
targets' defaults (``pymc_dp.audit.targets.TARGETS``), chosen so every twin is caught
with a margin, or fewer where the margin is wide (``POWERED_RUNS``). The fast (vectorised) targets run with
their twins in ``make test``. The slower targets (a PyMC model to compile, or one Python call per run) are
split: every mechanism's own audit is marked ``slow`` and runs in CI (``make test-slow``), so a change that
weakens a mechanism is caught on every run; its twin, which shows the audit's power against that weakening
and changes only when the target's neighbours, statistic or run count do, is marked ``release_check`` and runs
in ``make test-release`` (before a release, and after any change to a target).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from pymc_dp.audit.auditor import AuditResult, audit, clopper_pearson, repeated
from pymc_dp.audit import targets as T
from pymc_dp.audit.targets import TARGETS, format_audit_table, run_audits, run_target
from pymc_dp.cli import main

# ---------------------------------------------------------------------------- the estimator


def test_clopper_pearson_matches_scipy_exact_interval():
    for k, n in [(0, 50), (3, 50), (25, 50), (50, 50), (1234, 10_000)]:
        lower, upper = clopper_pearson(k, n, 0.025)
        ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
        assert float(lower) == pytest.approx(ci.low, abs=1e-12)
        assert float(upper) == pytest.approx(ci.high, abs=1e-12)


def _coin(truth: float):
    """Randomised response by hand: report the bit with probability ``truth``."""

    def run(bit: int, size: int, rng: np.random.Generator) -> np.ndarray:
        return np.where(rng.random(size) < truth, bit, 1 - bit)

    return run


def test_randomised_response_by_hand_is_audited_at_ln3():
    # Exact loss ln 3 = 1.0986 on the event "answer 1". With 100 000 evaluation runs per input the
    # 99 % bound sits about 2.6 · sqrt(1/75 000 + 1/25 000) ≈ 0.019 below the truth; 0.04 allows twice that.
    result = audit(_coin(0.75), 1, 0, epsilon=math.log(3), runs=200_000, events="exact")
    assert result.passed
    assert math.log(3) - 0.04 < result.epsilon_lower <= math.log(3)
    assert abs(result.epsilon_estimate - math.log(3)) < 0.02


def test_a_mechanism_that_ignores_privacy_fails_by_a_wide_margin():
    def identity(x: float, size: int, rng: np.random.Generator) -> np.ndarray:
        return np.full(size, x)

    result = audit(identity, 0.0, 1.0, epsilon=1.0, runs=10_000)
    # p = 1 against an upper bound of 1 − (0.005)^(1/5000) ≈ 1.06e-3 on p′: ε ≥ ln(1/1.06e-3) ≈ 6.8
    assert not result.passed and result.epsilon_lower > 6.0


def test_the_lower_bound_is_a_valid_confidence_bound():
    # 200 independent audits of Laplace(1) (true ε = 1) at 90 % confidence: the bound exceeds the
    # truth in at most 10 % of them in expectation (Clopper-Pearson is conservative, so fewer).
    # Allow 10 % + 3 binomial s.d. (sqrt(0.1 · 0.9 / 200) = 0.021): at most 32 of 200.
    def laplace(x: float, size: int, rng: np.random.Generator) -> np.ndarray:
        return x + rng.laplace(0.0, 1.0, size)

    above = sum(
        audit(laplace, 0.0, 1.0, epsilon=1.0, runs=4000, confidence=0.9, seed=s).epsilon_lower > 1.0
        for s in range(200)
    )
    assert above <= 32


def test_delta_is_subtracted_from_the_event_probability():
    # A mechanism that leaks the bit with probability 0.01 and otherwise outputs noise-free 0:
    # (0, 0.01)-DP. Without δ the audit must see the leak, with δ = 0.01 it must not.
    def leaky(bit: int, size: int, rng: np.random.Generator) -> np.ndarray:
        return np.where(rng.random(size) < 0.01, bit + 1, 0)

    assert not audit(leaky, 1, 0, epsilon=0.0, runs=200_000, events="exact").passed
    assert audit(leaky, 1, 0, epsilon=0.0, delta=0.01, runs=200_000, events="exact").passed


def test_repeated_and_vector_outputs():
    one_run = repeated(lambda x, rng: (x + int(rng.integers(0, 2)), 7))
    result = audit(one_run, 0, 1, epsilon=5.0, runs=2000, events="exact")
    assert result.epsilon_lower > 3.0  # the outputs {0,1} and {1,2} differ on 0 and 2: an unbounded loss


def test_bad_arguments_are_refused():
    ok = _coin(0.75)
    with pytest.raises(ValueError, match="epsilon"):
        audit(ok, 1, 0, epsilon=-1.0)
    with pytest.raises(ValueError, match="delta"):
        audit(ok, 1, 0, epsilon=1.0, delta=1.5)
    with pytest.raises(ValueError, match="runs"):
        audit(ok, 1, 0, epsilon=1.0, runs=10)
    with pytest.raises(ValueError, match="events"):
        audit(ok, 1, 0, epsilon=1.0, events="histogram")
    with pytest.raises(ValueError, match="confidence"):
        audit(ok, 1, 0, epsilon=1.0, confidence=1.0)
    with pytest.raises(TypeError, match="callable"):
        audit("laplace", 1, 0, epsilon=1.0)
    with pytest.raises(ValueError, match="first axis"):
        audit(lambda x, size, rng: np.zeros(3), 1, 0, epsilon=1.0, runs=200)
    with pytest.raises(ValueError, match="one number per run"):
        audit(lambda x, size, rng: rng.normal(size=(size, 2)), 0, 1, epsilon=1.0, runs=200, events="bins")


# ---------------------------------------------------------------------------- every target


FAST = ("laplace", "gaussian", "geometric", "randomized response",  # vectorised: a second or two each
        *(t.name for t in TARGETS if t.name.startswith("laplace route (") and "bernoulli" not in t.name),
        *(t.name for t in TARGETS if t.name.startswith("private quartile")))  # 3–4 s each, seeded
SLOW = tuple(t.name for t in TARGETS if t.name not in FAST)


#: Run counts for targets whose twins clear the claim by a wide margin, below their defaults (the defaults, which
#: ``pymc-dp audit`` and docs/concepts/auditing.md use, keep the tight bounds). A quarter of the runs doubles the
#: bound's statistical shortfall (it goes as 1/√runs); each count below was checked on seeds 0, 1 and 2, and the
#: twin's 99 % lower bound stayed at or above the value in the comment (claim: 1), while every correct target passed.
#: Output and objective perturbation (a twin missed on one seed at a quarter of the runs), the Barker steps,
#: Thresholdout and the Hellinger targets (twins caught by narrow margins) keep their defaults.
POWERED_RUNS = {
    "private Newton round (GLM score and information, measurements route)": 10_000,  # twin ≥ 1.29
    "private Newton round, weighted score clip (measurements route after its first round)": 10_000,  # twin ≥ 1.25
    "private Newton round, weighted information clip (entry (i, j) w_i·w_j-fold)": 10_000,  # twin ≥ 1.62
    "MWEM round (exponential selection + Laplace count)": 10_000,  # twin ≥ 1.22
    "noisy gradient (logistic regression, [WM10] 4.1)": 25_000,  # twin ≥ 1.81
    "LSHist": 10_000,  # twin ≥ 1.83
    "exponential mechanism": 10_000,  # twin ≥ 1.49
    "noisy bounded sum (your own f, L1 bound)": 5_000,  # twin ≥ 1.59
    "laplace route (bernoulli statistics)": 10_000,  # twin ≥ 1.85
}


def test_the_powered_run_counts_name_real_targets_below_their_defaults():
    defaults = {t.name: t.runs for t in TARGETS}
    assert all(name in defaults and runs < defaults[name] for name, runs in POWERED_RUNS.items())


def _check_passes(name: str) -> AuditResult:
    ok = run_target(name, noise="seeded", runs=POWERED_RUNS.get(name))
    assert ok.passed, f"{name} failed its audit: {ok}"
    return ok


def _check_twin_caught(name: str) -> AuditResult:
    bad = run_target(name, broken=True, noise="seeded", runs=POWERED_RUNS.get(name))
    assert not bad.passed, f"the broken twin of {name} was not caught: {bad}"
    return bad


@pytest.mark.parametrize("name", FAST)
def test_target_passes_and_its_broken_twin_is_caught(name):
    _check_passes(name)
    _check_twin_caught(name)


@pytest.mark.slow
@pytest.mark.parametrize("name", SLOW)
def test_slow_target_passes_its_audit(name):
    _check_passes(name)


@pytest.mark.release_check
@pytest.mark.parametrize("name", SLOW)
def test_slow_targets_broken_twin_is_caught(name):
    _check_twin_caught(name)


# ---------------------------------------------------------------------------- logistic regression and PCA targets
# Their audits (one mechanism call per run) are among the slow targets above; these check, quickly, that
# the neighbours are near the worst case, that the statistics cannot exceed the claim for a correct
# mechanism, and that the twins' noise source halves the noise of the mechanisms' own code.


def test_the_logistic_neighbours_are_near_the_worst_case():
    import pymc_dp as pmdp
    from pymc_dp.mechanisms.logistic_regression import _fit_regularised, _scaled

    records = T._logistic_records()
    (X0, y0), (X1, y1) = records[0], records[1]
    assert np.array_equal(X0[:-1], X1[:-1]) and np.array_equal(y0, y1) and not np.array_equal(X0, X1)  # replace one
    assert np.all(np.linalg.norm(X0, axis=1) <= 1.0) and np.all(np.linalg.norm(X1, axis=1) <= 1.0)
    n, lam = len(y0), T.OUTPUT_REGULARISATION
    w0, w1 = (_fit_regularised(*_scaled(X, y, 1.0), lam) for X, y in (records[0], records[1]))
    gap = float(np.linalg.norm(w0 - w1))
    assert gap * n * lam / 2 > 0.87  # of the 2/(Nλ) output perturbation charges

    rng = np.random.default_rng(5)
    run, _, _ = T._output_perturbation(False, False)
    stat = run(0, 300, rng)  # ‖o − w₁‖ − ‖o − w₀‖ ≤ ‖w₀ − w₁‖, with much of its mass near the top
    assert stat.max() <= gap * (1 + 1e-9) and np.mean(stat > 0.9 * gap) > 0.05

    entry = pmdp.objective_perturbation_logistic(X0, y0, epsilon=1.0, feature_l2_bound=1.0,
                                                 regularisation=T.OBJECTIVE_REGULARISATION,
                                                 ledger=pmdp.PrivacyLedger(), rng=0).entry
    assert entry.details["extra_ridge"] == 0.0 and entry.details["epsilon_prime"] > 0.9  # the theorem's first case
    run, _, _ = T._objective_perturbation(False, False)
    loss = np.r_[run(0, 150, rng), -run(1, 150, rng)]  # the exact privacy loss: ≤ ε = 1 for every output
    assert loss.max() <= 1.0 and loss.max() > 0.7


def test_the_second_moment_neighbours_attain_or_near_the_sensitivity():
    import pymc_dp as pmdp

    rows, cols = np.triu_indices(2)
    e1, e2 = np.eye(2)
    gaussian = pmdp.noisy_second_moment(e1[None], epsilon=1.0, norm_bound=1.0, delta=T.SECOND_MOMENT_DELTA,
                                        ledger=pmdp.PrivacyLedger(), rng=0)
    gap = e1[rows] * e1[cols] - e2[rows] * e2[cols]
    assert np.linalg.norm(gap) == pytest.approx(gaussian.entry.details["sensitivity"])  # √2 R², attained

    a = T.SECOND_MOMENT_ANGLE
    x, x2 = np.array([math.cos(a), math.sin(a)]), np.array([-math.sin(a), math.cos(a)])
    l1 = np.abs(x[rows] * x[cols] - x2[rows] * x2[cols]).sum()
    angles = np.linspace(0.0, np.pi, 721)
    u = np.stack([np.cos(angles), np.sin(angles)], axis=1)
    tri = u[:, rows] * u[:, cols]
    best = np.abs(tri[:, None, :] - tri[None, :, :]).sum(axis=2).max()
    laplace = pmdp.noisy_second_moment(x[None], epsilon=1.0, norm_bound=1.0, mechanism="laplace",
                                       ledger=pmdp.PrivacyLedger(), rng=0)
    assert l1 == pytest.approx(math.sqrt(5)) and best <= l1 + 1e-12  # the largest L1 gap of any two unit records
    assert laplace.entry.details["sensitivity"] == pytest.approx(3.0)  # (d + 1)R², charged; √5/3 of it attained


def test_the_twins_noise_source_halves_the_mechanisms_own_noise():
    import pymc_dp as pmdp

    from pymc_dp.mechanisms import SeededNoise
    from pymc_dp.mechanisms.logistic_regression import _fit_regularised, _scaled

    X, y = T._logistic_records()[0]
    lam = T.OUTPUT_REGULARISATION
    optimum = _fit_regularised(*_scaled(X, y, 1.0), lam)
    ledger = pmdp.PrivacyLedger()
    full, half = (pmdp.output_perturbation_logistic(X, y, epsilon=1.0, feature_l2_bound=1.0, regularisation=lam,
                                                    ledger=book, rng=source).weights - optimum
                  for book, source in ((pmdp.PrivacyLedger(), SeededNoise(3)),
                                       (ledger, T._HalvedNoise(SeededNoise(3)))))
    assert np.allclose(half, full / 2, rtol=1e-9, atol=1e-12) and np.linalg.norm(full) > 0
    assert ledger.entries[0].details["scale"] == pytest.approx(2.0 / (len(y) * lam))  # the claim is unchanged

    Z = np.array([[0.6, 0.8], [1.0, 0.0]])
    exact = (Z.T @ Z)[np.triu_indices(2)]
    for mechanism in ("gaussian", "laplace"):
        full, half = (pmdp.noisy_second_moment(Z, epsilon=1.0, norm_bound=1.0, mechanism=mechanism,
                                               ledger=pmdp.PrivacyLedger(), rng=source).values - exact
                      for source in (SeededNoise(4), T._HalvedNoise(SeededNoise(4))))
        assert np.allclose(half, full / 2, rtol=1e-9, atol=1e-12) and np.all(full != 0)


def test_the_audit_is_tight_where_the_loss_is_attained():
    # Laplace and geometric attain e^ε on a tail event, randomised response ln 3 on one answer:
    # with 100 000 evaluation runs the 99 % bound is within 0.06 of the truth (a few standard errors).
    for name, truth in [("laplace", 1.0), ("geometric", 1.0), ("randomized response", math.log(3))]:
        result = run_target(name, noise="seeded")
        assert truth - 0.06 < result.epsilon_lower <= truth, result


@pytest.mark.slow
def test_secure_noise_is_audited_too():
    # The default (OpenDP) source, as released code uses it (~30 µs a draw, ~8 s here). It cannot
    # be seeded, so this test is random and its tolerances are set as for the other secure-source
    # tests: at confidence 1 - 1e-6 the correct mechanism fails the audit with probability <= 1e-6
    # (the Clopper-Pearson guarantee). Non-vacuity: over 1000 seeded replicates of this exact
    # audit (same runs and confidence, same Laplace distribution) the bound had mean 0.931,
    # sd 0.011, minimum 0.882, so 0.8 is > 11 sd below the mean. (At 50 000 runs and 99 % the
    # event choice gives a heavy left tail, min 0.65 in 1000 replicates: too noisy to assert on.)
    # The broken twin (true epsilon 2) audits at ~1.89 and is caught.
    ok = run_target("laplace", runs=100_000, noise="secure", confidence=1 - 1e-6)
    bad = run_target("laplace", runs=100_000, broken=True, noise="secure", confidence=1 - 1e-6)
    assert ok.passed and ok.epsilon_lower > 0.8, ok
    assert not bad.passed, bad


def test_target_names_and_arguments():
    assert len({t.name for t in TARGETS}) == len(TARGETS)
    with pytest.raises(ValueError, match="no audit target"):
        run_target("laplace mechanism")
    with pytest.raises(ValueError, match="noise"):
        run_target("laplace", noise="numpy")
    with pytest.raises(ValueError, match="runs_scale"):
        run_audits(runs_scale=0.0)


def test_table_and_cli(capsys, tmp_path):
    results = run_audits(["laplace", "geometric"], runs_scale=0.25, noise="seeded")
    table = format_audit_table(results)
    assert table.count("\n") == 3 and "| laplace | 1 | 0 | 50,000 |" in table and table.count("caught") == 2

    out = tmp_path / "audit.md"
    code = main(["audit", "--only", "laplace", "geometric", "--runs-scale", "0.25", "--noise", "seeded",
                 "--output", str(out)])
    printed = capsys.readouterr().out
    assert code == 0 and "| geometric | 1 | 0 | 50,000 |" in printed
    assert out.read_text().strip().endswith(printed.strip().splitlines()[-1])

    assert main(["audit", "--only", "nope"]) == 1
    assert "unknown target" in capsys.readouterr().err


def test_cli_exit_status_reports_a_missed_twin(capsys):
    # With 1 000 runs the Gaussian's twin cannot be told from a correct mechanism: exit status 1.
    code = main(["audit", "--only", "gaussian", "--runs-scale", "0.005", "--noise", "seeded"])
    assert code == 1 and "MISSED" in capsys.readouterr().out


CENTRED_PAIRS = [  # (family, bounds, relation, records, neighbour or a function of the design, family arguments)
    ("normal", {"x": (18.0, 80.0)}, "replace", [18.0, 45.0, 61.0], T._normal_replace_pair, {}),
    ("normal", {"x": (18.0, 80.0)}, "add_remove", [30.0, 45.0, 61.0], [30.0, 45.0, 61.0, 80.0], {}),
    ("poisson", {"upper": 20}, "add_remove", [0.0, 3.0, 5.0], [0.0, 3.0, 5.0, 20.0], {}),
    ("linear_regression", T.REGRESSION_AUDIT_BOUNDS, "add_remove", T.REGRESSION_AUDIT_ROWS, T.REGRESSION_AUDIT_NEIGHBOUR,
     {"n_features": 3}),
]


@pytest.mark.parametrize("family, bounds, relation, records, neighbour, args", CENTRED_PAIRS,
                         ids=[f"{c[0]}-{c[2]}" for c in CENTRED_PAIRS])
def test_the_centred_release_neighbours_attain_the_weighted_sensitivity(family, bounds, relation, records, neighbour,
                                                                        args):
    """The audit targets of the centred, weighted releases are tight: their neighbours move the weighted vector by
    Δ_w, the sensitivity charged (to its 1e-12 rounding up, and, for the Normal's replace-one pair, to the 1e-9 of
    the maximiser's closed form), so the true loss is ε."""
    from pymc_dp.families.privatize import prepare_statistics

    data = prepare_statistics(np.array(records), family, bounds=bounds, neighbouring=relation, **args)
    other = neighbour(data.design) if callable(neighbour) else np.array(neighbour)
    assert not data.design.is_identity
    gap = np.abs(data.exact_released - prepare_statistics(other, family, bounds=bounds, neighbouring=relation,
                                                          **args).exact_released).sum()
    assert gap == pytest.approx(data.sensitivity, rel=1e-9)


def test_the_grouped_release_neighbours_attain_twice_one_groups_sensitivity():
    """Moving the edge record from group 0 to group 1 moves the concatenated release by 2·Δ_g, the Δ the release by
    group charges under replace-one: the audit's pair is the worst case, and the true loss is ε."""
    from pymc_dp.model.privatize_model import plan_privatization

    plans = [plan_privatization(T._grouped_model(r), 1.0, bounds={"y": {"x": (18.0, 80.0)}}).prepared["y"]
             for r in (T.GROUPED_AUDIT_RECORDS, T.GROUPED_AUDIT_NEIGHBOUR)]
    m, m2 = (np.concatenate([p.exact_released for p in plan.parts]) for plan in plans)
    assert plans[0].sensitivity == pytest.approx(2.0 * plans[0].parts[0].sensitivity)
    assert np.abs(m - m2).sum() == pytest.approx(plans[0].sensitivity, rel=1e-9)


def test_the_weighted_information_neighbours_are_twice_the_clip_apart_in_the_weighted_norm():
    """The information target's pair differs in entry (0, 2) only, by 2·6h raw: with that entry's weight w_0·w_2 = 6,
    2h in Σ|H_k|/W_k, the sensitivity charged at clip h; the round's noise on entry (i, j) is w_i·w_j-fold (a release
    at the target's own settings, with the clip and weights given)."""
    from pymc_dp.accounting import PrivacyLedger
    from pymc_dp.mechanisms.private_newton import NewtonSchedule, information_weights, private_newton, vech

    w = T.NEWTON_INFORMATION_WEIGHTS
    weights = information_weights(w)
    np.testing.assert_allclose(weights, vech(np.outer(w, w)))
    h, k = T.NEWTON_INFORMATION_CLIP, T.NEWTON_INFORMATION_ENTRY
    assert vech(np.arange(9.0).reshape(3, 3))[k] == 2.0 and weights[k] == 6.0  # entry (0, 2)
    a, b = np.zeros(6), np.zeros(6)
    a[k], b[k] = 6 * h, -6 * h
    assert np.abs(a / weights).sum() == pytest.approx(h) and np.abs((a - b) / weights).sum() == pytest.approx(2 * h)
    final = private_newton(lambda point: [(np.zeros((1, 3)), a[None])], lambda point: (1.0, h), start=np.zeros(3),
                           prior_mean=np.zeros(3), prior_precision=np.ones(3), bound_step=lambda step: step,
                           epsilon=1.0, schedule=NewtonSchedule(rounds=1, final_score_share=0.05),
                           ledger=PrivacyLedger(), rng=0, first_weights=w).final
    np.testing.assert_allclose(final.information_scale, 2 * h / 0.95 * np.outer(w, w))


def test_the_private_newton_neighbours_attain_the_score_clip_twice():
    """At the public point the replaced record's score moves the release by 2·C_g, the sensitivity charged, and the
    information not at all: the audit's pair attains the score's share of ε (its clips come from the route's plan)."""
    (s0, h0, clips0), (s1, h1, clips1) = T.newton_audit_terms(0), T.newton_audit_terms(1)
    assert clips0 == clips1 == pytest.approx((1.0, 0.75))
    assert np.abs(s0.sum(0) - s1.sum(0)).sum() == pytest.approx(2 * clips0[0])
    np.testing.assert_allclose(h0.sum(0), h1.sum(0))
