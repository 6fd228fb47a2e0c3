"""The measurements route's objective engine: a logistic GLM's last point by objective perturbation.

The point's stationarity is read as the records' score there (``N Λ R² φ_p``, up to the noise ``R b``); these tests
check that identity exactly on replayed noise, the information released there, the public rule that picks the
engine, and the posterior beside plain PyMC.
"""

from __future__ import annotations

import warnings

import numpy as np
import pymc as pm
import pytest

import pymc_dp as pmdp
from pymc_dp.accounting import LedgerEntry, PrivacyLedger
from pymc_dp.mechanisms.logistic_regression import _spherical_laplace
from pymc_dp.mechanisms.noise import resolve_noise_source
from pymc_dp.mechanisms.perturbed_point import perturbed_point_release
from pymc_dp.model.objective_point import feature_bound, objective_preferred, point_regularisation
from pymc_dp.model.score_measurements import plan_score_privatization

from glm_models import glm_model

SHORT = dict(tune=300, chains=2, cores=1, progressbar=False, compute_convergence_checks=False)


def _records(n: int = 400, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (n, 2))
    y = rng.binomial(1, 1 / (1 + np.exp(-(0.4 + x @ np.array([1.0, -0.6])))))
    return np.column_stack([x, np.ones(n)]), y


def _information_terms(design: np.ndarray):
    def terms(point: np.ndarray):
        eta = design @ point
        curvature = np.exp(-np.logaddexp(0.0, eta) - np.logaddexp(0.0, -eta))
        rows = design[:, :, None] * design[:, None, :] * curvature[:, None, None]
        upper = np.triu_indices(design.shape[1])
        yield rows[:, upper[0], upper[1]]
    return terms


def _release(design, y, seed, eps_point=0.7, eps_information=0.3, information_clip=0.75):
    entries = (LedgerEntry("objective_perturbation", eps_point, touched="point"),
               LedgerEntry("laplace", eps_information, touched="information"))
    ledger = PrivacyLedger()
    bound = float(np.sqrt(3.0))  # (±1, ±1, 1)
    out = perturbed_point_release(
        design, y, bound=bound, regularisation=point_regularisation(eps_point, len(y)), point_entry=entries[0],
        information_entry=entries[1], information_terms=_information_terms(design),
        information_clip=lambda point: information_clip, kept=np.ones(6, dtype=bool), ledger=ledger,
        source=resolve_noise_source(np.random.default_rng(seed)))
    return out, ledger, bound


def test_the_points_stationarity_is_the_records_score_there_up_to_the_replayed_noise():
    # The noise vector b is replayed from the same seed: the records' score at the released point must equal
    # N Λ R² φ_p + R b to rounding (Newton stops at a gradient of 1e-12 of the objective averaged over N).
    design, y = _records()
    out, ledger, bound = _release(design, y, seed=5)
    b = _spherical_laplace(3, 2.0 / out.epsilon_prime, resolve_noise_source(np.random.default_rng(5)))
    score = design.T @ (y - 1 / (1 + np.exp(-design @ out.point)))
    np.testing.assert_allclose(score, out.score + bound * b, atol=1e-8 * len(y))
    assert np.linalg.norm(out.score) > 1.0 and np.linalg.norm(bound * b) > 1.0  # neither side is trivially 0
    # ε′ leaves the Jacobian's term 15 % of the point's ε; the ledger holds both entries at their reserved ε
    assert out.epsilon_prime == pytest.approx(0.85 * 0.7)
    assert [(e.mechanism, e.epsilon) for e in ledger.entries] == [("objective_perturbation", 0.7), ("laplace", 0.3)]
    assert ledger.entries[0].details["epsilon_prime"] == pytest.approx(out.epsilon_prime)


def test_the_information_is_the_records_own_at_the_point_clipped_with_laplace_noise_of_twice_the_clip():
    design, y = _records()
    # a record's six entries sum to at most ¼ (x1² + |x1 x2| + |x1| + x2² + |x2| + 1) ≤ 1.5 on the box: a clip of 1.5
    # cuts none; noise of scale 3e-6 lets the exact sum show
    out, _, _ = _release(design, y, seed=6, eps_information=1e6, information_clip=1.5)
    exact = next(_information_terms(design)(out.point)).sum(axis=0)
    np.testing.assert_allclose(out.information, exact, atol=1e-4)
    assert out.clipped == 0 and out.information_scale == pytest.approx(2 * 1.5 / 1e6)
    tight, _, _ = _release(design, y, seed=6, eps_information=1e6, information_clip=0.05)
    diagonal = [0, 3, 5]  # of the upper triangle, row by row: every record's diagonal terms are ≥ 0 and only shrink
    assert tight.clipped > 0 and np.all(tight.information[diagonal] < exact[diagonal])


def test_a_failure_after_the_point_still_records_the_point():
    design, y = _records()
    ledger = PrivacyLedger()

    def failing_clip(point):
        raise RuntimeError("the clip failed")

    entries = (LedgerEntry("objective_perturbation", 0.7, touched="point"), LedgerEntry("laplace", 0.3, touched="i"))
    with pytest.raises(RuntimeError, match="the clip failed"):
        perturbed_point_release(design, y, bound=float(np.sqrt(3)), regularisation=point_regularisation(0.7, len(y)),
                                point_entry=entries[0], information_entry=entries[1],
                                information_terms=_information_terms(design), information_clip=failing_clip,
                                kept=np.ones(6, dtype=bool), ledger=ledger,
                                source=resolve_noise_source(np.random.default_rng(1)))
    assert [e.mechanism for e in ledger.entries] == ["objective_perturbation"]


def test_the_design_bound_reads_group_columns_as_one_each():
    with pm.Model(coords={"g": range(4)}) as model:
        idx, x = np.arange(40) % 4, np.linspace(-3, 2, 40)
        a = pm.Normal("a", 0, 1, dims="g")
        b = pm.Normal("b", 0, 1, dims="g")
        pm.Bernoulli("y", logit_p=a[idx] + b[idx] * x + pm.Normal("c", 0, 1) * x, observed=np.arange(40) % 2)
    plan = plan_score_privatization(model, 1.0, bounds={"y": {"x": (-3, 2)}}, engine="objective")  # as declared
    p = plan.structure.predictors[0]
    # a record reads one a (1), one b (its x, at most 3 in size) and c's x: L2² = 1 + 9 + 9, L1 = 1 + 3 + 3
    assert feature_bound(p, plan.lower[0], plan.upper[0]) == pytest.approx(np.sqrt(19.0))
    assert feature_bound(p, plan.lower[0], plan.upper[0], norm=1) == pytest.approx(7.0)


def test_auto_takes_the_objective_engine_for_a_dense_design_and_newton_for_many_groups():
    x = np.random.default_rng(0).uniform(-1, 1, (500, 2))
    y = np.random.default_rng(1).binomial(1, 0.4, 500)
    dense = plan_score_privatization(glm_model("bernoulli", x, y), 1.0, bounds={"y": {"x": (-1, 1)}})
    assert dense.engine == "objective"
    with pm.Model(coords={"g": range(20)}) as grouped:
        idx = np.arange(500) % 20
        pm.Bernoulli("y", logit_p=pm.Normal("a", 0, 1, dims="g")[idx] + pm.Normal("b", 0, 1) * x[:, 0], observed=y)
    many = plan_score_privatization(grouped, 1.0, bounds={"y": {"x": (-1, 1)}})
    assert many.engine == "newton"
    # the rule from its public numbers: d = 21 coordinates, R² = 2 and C = 2 (a group's 1 and |x| ≤ 1)
    last = many.schedule.budgets(1.0)[-1][0]
    assert not objective_preferred(21, np.sqrt(2.0), 2.0, last) and objective_preferred(4, 2.0, 4.0, last)
    poisson = glm_model("poisson", x, np.random.default_rng(2).poisson(1.0, 500))
    assert plan_score_privatization(poisson, 1.0, bounds={"y": {"x": (-1, 1), "y": (0, 9)}}).engine == "newton"


def test_strong_effects_against_few_records_warn_that_the_point_is_far_and_name_the_newton_engine():
    """Slopes 4 and −3 on [−1, 1] at N = 2,000, ε = 1 (seed 7): the ridge pulls φ_p toward 0, 4.3 standard errors
    from where the release puts the intercept, and the one-step likelihood reads the slope too flat there; the
    release says so from released numbers. At slopes 1 and −0.5 it does not."""
    from pymc_dp.model.score_measurements import FarFromPilotWarning

    def warned(slopes, seed):
        rng = np.random.default_rng(seed)
        x = rng.uniform(-1, 1, (2000, 2))
        y = rng.binomial(1, 1 / (1 + np.exp(-(1 + x @ np.asarray(slopes)))))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            plan = plan_score_privatization(glm_model("bernoulli", x, y), 1.0, bounds={"y": {"x": (-1, 1)}})
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            plan._release_objective(PrivacyLedger(), seed)
        return [str(w.message) for w in caught if issubclass(w.category, FarFromPilotWarning)]

    far = warned([4.0, -3.0], 7)
    assert far and "engine='newton'" in far[0]
    assert not warned([1.0, -0.5], 7)


@pytest.mark.slow
def test_the_objective_engines_posterior_lands_near_plain_pymc_with_honest_width():
    """N = 3,000, ε = 1, two covariates uniform on [−1, 1] (seeded noise): every coefficient's released mean within
    3 plain s.d. of plain PyMC's, plain's mean inside the released 95 % interval, the released s.d. 1–4× plain's
    (the noise's s.d. on a score coordinate, R √((d + 1)/2)·2/ε′·√2 ≈ 10.5, against its sampling s.d. √(N/4 · E[x²]) ≈ 16
    for a slope: the width about √(1 + (10.5/16)²) ≈ 1.2×, the information's noise adding a little)."""
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (3000, 2))
    y = rng.binomial(1, 1 / (1 + np.exp(-(0.3 + x @ np.array([0.8, -0.5])))))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with glm_model("bernoulli", x, y):
            plain = pm.sample(500, random_seed=1, nuts_sampler="pymc", **SHORT)
        released = pmdp.sample(500, epsilon=1.0, model=glm_model("bernoulli", x, y), bounds={"y": {"x": (-1, 1)}},
                               noise_rng=7, random_seed=1, nuts_sampler="pymc", **SHORT)
    assert pmdp.ledger(released).entries[0].mechanism == "objective_perturbation"
    for name in ("a", "b"):
        p, q = plain.posterior[name], released.posterior[name]
        p_mean, p_sd = p.mean(("chain", "draw")).values, p.std(("chain", "draw")).values
        q_sd = q.std(("chain", "draw")).values
        assert np.all(np.abs(q.mean(("chain", "draw")).values - p_mean) < 3 * p_sd), name
        lo, hi = q.quantile(0.025, ("chain", "draw")).values, q.quantile(0.975, ("chain", "draw")).values
        assert np.all((lo < p_mean) & (p_mean < hi)), name
        assert np.all((p_sd < q_sd) & (q_sd < 4 * p_sd)), name


#: The coverage study's coefficients, in the design's order (b1, b2, then the intercept a).
COVERAGE_TRUTH = np.array([0.8, -0.5, 0.3])


def _coverage(n: int, releases: int) -> np.ndarray:
    """Whether each coefficient's 90 % interval of the one-step likelihood (flat prior: its own Gaussian, as in
    tests/test_glm_measurements.py) covers the truth, over ``releases`` data sets, through the engine's own release."""
    from scipy.stats import norm

    from pymc_dp.model.score_measurements import one_step

    hits = []
    for seed in range(releases):
        rng = np.random.default_rng(1000 + seed)
        x = rng.uniform(-1, 1, (n, 2))
        y = rng.binomial(1, 1 / (1 + np.exp(-(x @ COVERAGE_TRUTH[:2] + COVERAGE_TRUTH[2]))))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            plan = plan_score_privatization(glm_model("bernoulli", x, y), 1.0, bounds={"y": {"x": (-1, 1)}})
        assert plan.engine == "objective"
        final = plan._release_objective(PrivacyLedger(), seed).final
        likelihood = one_step(final, None)
        delta = likelihood.estimate()
        inverse = np.linalg.inv(likelihood.slope(delta))
        cov = likelihood.cov + np.diag(likelihood.extra_variance(delta))
        sd = np.sqrt(np.diag(inverse @ cov @ inverse.T))
        hits.append(np.abs(final.point + delta - COVERAGE_TRUTH) < norm.ppf(0.95) * sd)
    return np.mean(hits, axis=0)


@pytest.mark.calibration
def test_the_objective_engines_intervals_cover_at_about_their_rate():
    """40 releases at N = 1,000, ε = 1: every coefficient's 90 % interval covers in [0.76, 1] (3 standard errors of
    40 trials at 0.9 below). Measured over 100: 0.91, 0.85, 0.96 (N = 10⁴: 0.94, 0.92, 0.90)."""
    coverage = _coverage(1000, 40)
    assert np.all(coverage >= 0.76), coverage


@pytest.mark.study
@pytest.mark.parametrize("n", [1000, 10_000])
def test_the_objective_engines_intervals_cover_at_their_rate_over_200_releases(n):
    """200 releases, ε = 1: every coefficient's coverage in [0.85, 0.97]: 2.4 standard errors of 200 below 0.9, and
    above it the intercept's measured over-coverage at N = 10³ (0.96 over 100 releases, its z s.d. 0.82: wider than
    needed, not dishonest) plus one standard error."""
    coverage = _coverage(n, 200)
    assert np.all((coverage >= 0.85) & (coverage <= 0.97)), coverage
