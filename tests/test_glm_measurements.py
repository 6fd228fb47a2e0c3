"""Any GLM through the measurements route: private Newton steps and the one-step likelihood.

What is read off the graph (links, nuisances on their unconstrained scale), that the per-record
derivatives are exact, that clipping bounds what one record moves, that the privacy flag picks the
route and returns an honest posterior, and that refusals come before any spend.
"""

from __future__ import annotations

import warnings

import numpy as np
import pymc as pm
import pytest

import pymc_dp as pmdp
from pymc_dp import _compat
from pymc_dp.accounting import PrivacyLedger
from pymc_dp.families import ClippedRecordsWarning
from pymc_dp.mechanisms.private_newton import clip_rows_l1, private_newton, unvech
from pymc_dp.model._graph import dim_lengths
from pymc_dp.model.glm_structure import RecordDerivatives, read_glm
from pymc_dp.model.score_measurements import one_step, plan_score_privatization

from glm_models import glm_model

TRUTH = np.array([0.5, -0.3, 1.0])  # the slopes, then the intercept
SHORT = dict(tune=300, chains=2, cores=1, progressbar=False, compute_convergence_checks=False)


def _records(family: str, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (n, 2))
    mu = np.exp(TRUTH[2] + x @ TRUTH[:2])
    if family == "poisson":
        return x, rng.poisson(mu)
    if family == "negbin":
        return x, rng.negative_binomial(3.0, 3.0 / (3.0 + mu))
    if family == "bernoulli":
        return x, rng.binomial(1, 1 / (1 + np.exp(-np.log(mu))))
    if family == "gamma":  # shape 2, mean mu
        return x, np.clip(rng.gamma(2.0, mu / 2.0), 0.01, None)
    raise ValueError(family)


def _glm(family: str, x: np.ndarray, y: np.ndarray) -> pm.Model:
    return glm_model({"negbin": "negative binomial"}.get(family, family), x, y)


def _read(model: pm.Model, why: list | None = None):
    rv = model.observed_RVs[0]
    return read_glm(rv, len(model.rvs_to_values[rv].data), model.free_RVs, dim_lengths(model), why)


@pytest.mark.parametrize("family, labels", [
    ("poisson", ["b[0]", "b[1]", "intercept"]),
    ("negbin", ["b[0]", "b[1]", "intercept", "log alpha"]),
    ("gamma", ["b[0]", "b[1]", "intercept", "log k"]),
    ("student", ["b[0]", "b[1]", "intercept", "log nu", "log sigma"]),
])
def test_the_gallerys_glms_are_read_with_their_links_and_nuisances(family, labels):
    x = np.random.default_rng(0).uniform(-1, 1, (50, 2))
    model = _glm(family, x, np.ones(50))
    structure = _read(model)
    assert structure is not None and len(structure.predictors) == 1
    np.testing.assert_array_equal(structure.predictors[0].design[:, :2], x)  # the intercept's column of ones last
    assert structure.labels(model.rvs_to_transforms.get) == labels


@pytest.mark.parametrize("case, words", [
    ("indexed_product", "other products with an indexed vector, such as a[idx] * b * x"),
    ("offset", "a linear predictor's term, a per-record offset"),
    ("no_predictor", "no parameter of its likelihood is a function of a linear predictor"),
    ("multivariate", "multivariate"),
])
def test_what_is_not_a_glm_is_refused_with_the_reason(case, words):
    rng = np.random.default_rng(1)
    x, idx, y = rng.uniform(-1, 1, 40), rng.integers(0, 3, 40), rng.poisson(2.0, 40)
    with pm.Model() as model:
        b = pm.Normal("b", 0, 1)
        if case == "indexed_product":  # a[idx] and b[idx] * x are read (one-hot blocks); a[idx] * b * x is not
            a = pm.Normal("a", 0, 1, shape=3)
            pm.Poisson("y", mu=pm.math.exp(a[idx] + a[idx] * b * x), observed=y)
        elif case == "offset":
            pm.Poisson("y", mu=pm.math.exp(np.log(x + 2.0) + b * x), observed=y)
        elif case == "no_predictor":
            pm.Poisson("y", mu=pm.math.exp(b), observed=y)
        else:
            pm.MvNormal("y", mu=b * np.ones(2), cov=np.eye(2), observed=rng.normal(size=(40, 2)))
    why: list[str] = []
    assert _read(model, why) is None
    assert words in " ".join(why), why


def test_each_records_score_and_information_are_its_exact_derivatives():
    x, y = _records("negbin", 300, 2)
    model = _glm("negbin", x, y)
    structure = _read(model)
    derivatives = RecordDerivatives(structure, model.rvs_to_transforms.get)
    point = np.array([0.4, -0.2, 0.9, np.log(2.5)])
    scores, information = derivatives(point, y.astype(float), [structure.predictors[0].design])
    from scipy.stats import nbinom

    def total(phi):
        mu, alpha = np.exp(phi[2] + x @ phi[:2]), np.exp(phi[3])
        return nbinom.logpmf(y, alpha, alpha / (alpha + mu)).sum()

    h, eye = 1e-5, np.eye(4)
    numeric = np.array([(total(point + h * e) - total(point - h * e)) / (2 * h) for e in eye])
    np.testing.assert_allclose(scores.sum(0), numeric, rtol=1e-6)
    hessian = np.array([[(total(point + h * (e + f)) - total(point + h * (e - f)) - total(point - h * (e - f))
                          + total(point - h * (e + f))) / (4 * h * h) for f in eye] for e in eye])
    # Central second differences at h = 1e-5 of a sum of size ~1e3 carry ~1e-2 of rounding: compare to 1e-3 relative.
    np.testing.assert_allclose(unvech(information.sum(0), 4), -hessian, rtol=1e-3, atol=0.05)


def test_clipping_bounds_what_one_record_can_move_whatever_its_values():
    x, y = _records("poisson", 200, 3)
    plan = plan_score_privatization(_glm("poisson", x, y), 1.0, bounds={"y": {"x": (-1, 1), "y": (0, 20)}})
    point = np.array([0.3, -0.1, 0.8])
    c_score, c_info = plan.clips(point)
    designs = [d.copy() for d in plan.designs]
    wild_y = plan.outcomes.copy()
    wild_y[5] = 1e6  # even a record no bound allows (the derivatives are taken on what is given)
    designs[0][5, :2] = [50.0, -50.0]
    sums = []
    for outcomes, design in ((plan.outcomes, list(plan.designs)), (wild_y, designs)):
        scores, information = plan.derivatives(point, outcomes, design)
        sums.append((clip_rows_l1(scores, c_score)[0].sum(0), clip_rows_l1(information, c_info)[0].sum(0)))
    assert np.abs(sums[0][0] - sums[1][0]).sum() <= 2 * c_score + 1e-9
    assert np.abs(sums[0][1] - sums[1][1]).sum() <= 2 * c_info + 1e-9
    # The clips are the box's largest norms: a record inside the box is never cut.
    scores, information = plan.derivatives(point, plan.outcomes, list(plan.designs))
    assert clip_rows_l1(scores, c_score)[1] == 0 and clip_rows_l1(information, c_info)[1] == 0


def test_the_weighted_clips_are_the_boxs_largest_weighted_norms():
    """With weights w (the rounds after the first where the clips are chosen), a record inside the box never exceeds
    the weighted clips, Σ|g_j|/w_j and Σ|H_ij|/(w_i w_j), which are at most the L1 ones (every weight ≥ 1): on a
    negative binomial far below for the information, whose coefficients' entries dominate its L1 norm."""
    from pymc_dp.mechanisms.private_newton import information_weights

    x, y = _records("negbin", 2000, 3)
    plan = plan_score_privatization(_glm("negbin", x, y), 1.0, bounds={"y": {"x": (-1, 1), "y": (0, 30)}})
    point, weights = np.array([0.5, -0.3, 1.0, 1.1]), np.array([2.5, 2.0, 3.0, 1.0])
    c_score, c_info = plan.clips(point, weights)
    plain_score, plain_info = plan.clips(point)
    assert c_score < plain_score and c_info < plain_info / 2  # the coefficients' products dominate the L1 one
    scores, information = plan.derivatives(point, plan.outcomes, list(plan.designs))
    assert np.abs(scores / weights).sum(1).max() <= c_score
    assert np.abs(information / information_weights(weights)).sum(1).max() <= c_info


def test_the_run_is_priced_and_reserved_before_the_first_draw():
    x, y = _records("poisson", 200, 4)
    plan = plan_score_privatization(_glm("poisson", x, y), 1.0, bounds={"y": {"x": (-1, 1), "y": (0, 20)}})
    ledger = PrivacyLedger(budget=pmdp.Budget(epsilon=0.99))
    draws = []

    def records(point):
        draws.append(point)
        return plan.derivatives.chunks(point, plan.outcomes, plan.designs)

    with pytest.raises(pmdp.BudgetExceededError):
        private_newton(records, plan.clips, start=plan.prior_mean, prior_mean=plan.prior_mean,
                       prior_precision=np.ones(3), bound_step=plan.bound_step, epsilon=1.0,
                       schedule=plan.schedule, ledger=ledger, rng=1)
    assert draws == [] and len(ledger) == 0 and not ledger.reserved
    assert sum(e.epsilon for e in plan.entries()) == pytest.approx(1.0)
    assert [e.touched for e in plan.entries()][-2:] == ["y: GLM: score at the final point",
                                                       "y: GLM: information at the final point"]
    # what the guarantee and the reading rest on, on every entry: N public, the clips from the bounds, the one step
    for entry in plan.entries():
        assert entry.assumptions[0].startswith("N (the number of records) is public")
        assert any("no larger than the declared bounds' worst case" in a for a in entry.assumptions)
        assert any("one-step (quadratic) likelihood" in a for a in entry.assumptions)


def _uncentred_poisson(n: int, seed: int) -> tuple[pm.Model, dict]:
    """``log mu = a + b * age``, age uniform on [18, 80] and declared so: a box far from 0."""
    rng = np.random.default_rng(seed)
    age = rng.uniform(18, 80, n)
    y = rng.poisson(np.exp(1.0 + (age - 49) / 62))
    with pm.Model() as model:
        a, b = pm.Normal("a", 0, 5), pm.Normal("b", 0, 2)
        pm.Poisson("y", pm.math.exp(a + b * pm.Data("age", age)), observed=y)
    return model, {"y": {"x": (18, 80), "y": (0, 30)}}


def test_the_newton_engine_measures_the_intercept_at_the_boxs_centre():
    """ψ = A φ: the covariate less its box's centre (49), the intercept a + 49 b, so every record's predictor is the
    same in both coordinates; the ledger's box is the declared one, and the record-free model reads the release
    through A (its log-likelihood at φ is the one-step likelihood's at A φ)."""
    import pytensor.tensor as pt
    from scipy.stats import norm

    from pymc_dp.model.score_measurements import one_step_loglik
    from pymc_dp.mechanisms.private_newton import NewtonRound

    model, bounds = _uncentred_poisson(500, 0)
    plan = plan_score_privatization(model, 1.0, bounds=bounds)
    raw = plan_score_privatization(model, 1.0, bounds=bounds, centre=False)
    A = plan.reparameterisation()
    np.testing.assert_allclose(A, [[1.0, 0.0], [49.0, 1.0]])  # (b, a): the slope, then the intercept
    assert raw.reparameterisation() is None and plan.labels == ("b", "intercept (at the box's centre)")
    phi = np.array([0.02, 0.3])
    np.testing.assert_allclose(plan.designs[0] @ (A @ phi), raw.designs[0] @ phi)
    np.testing.assert_allclose(plan.lower[0], [-31.0, 1.0]) and np.testing.assert_allclose(plan.upper[0], [31.0, 1.0])
    assert plan._declared_box()["covariates by predictor"] == [[[18.0, 80.0]]]
    final = NewtonRound(np.array([0.01, 1.0]), np.array([3.0, -2.0]), np.array([[900.0, 20.0], [20.0, 400.0]]),
                        1.5, 2.0, 1.0, 1.0)
    free = plan._rebuild(final)
    logp, vector = free.compile_logp(), pt.dvector("phi")
    one = one_step_loglik(final, vector)

    def expected(a: float, b: float) -> float:  # the priors a ~ N(0, 5), b ~ N(0, 2), and the release at ψ = A φ
        return float(norm.logpdf(a, 0, 5) + norm.logpdf(b, 0, 2) + one.eval({vector: A @ np.array([b, a])}))

    points = [(0.2, 0.03), (-0.4, 0.05), (1.0, -0.01)]
    got = [float(logp({"a": a, "b": b})) for a, b in points]
    want = [expected(a, b) for a, b in points]
    np.testing.assert_allclose(np.diff(got), np.diff(want), rtol=1e-9)  # up to the likelihood's constant


@pytest.mark.parametrize("crossed", [False, True])
def test_centring_moves_one_intercept_per_record(crossed):
    """Without a scalar intercept, the groups of ``a[i]`` take it: every record's predictor is the same in ψ = A φ
    on the centred design as in φ on the declared one — with crossed intercepts ``a[i] + c[j]`` too, where only the
    first index's groups move (moving both moved every predictor by c·β: 51.6 on age in [18, 80])."""
    rng = np.random.default_rng(1)
    i, j, age = rng.integers(0, 3, 200), rng.integers(0, 2, 200), rng.uniform(18, 80, 200)
    with pm.Model() as model:
        eta = pm.Normal("a", 0, 1, shape=3)[i] + pm.Normal("beta", 0, 0.1) * age
        if crossed:
            eta = eta + pm.Normal("c", 0, 1, shape=2)[j]
        pm.Poisson("y", mu=pm.math.exp(eta), observed=rng.poisson(1.0, 200))
    bounds = {"y": {"x": (18, 80), "y": (0, 20)}}
    plan = plan_score_privatization(model, 1.0, bounds=bounds, engine="newton")
    raw = plan_score_privatization(model, 1.0, bounds=bounds, engine="newton", centre=False)
    A = plan.reparameterisation()
    assert A is not None and np.count_nonzero(A - np.eye(len(A))) == 3  # three groups of a, each + 49·beta
    phi = rng.normal(size=len(A))
    np.testing.assert_allclose(plan.designs[0] @ (A @ phi), raw.designs[0] @ phi, atol=1e-9)


def test_centring_an_uncentred_box_narrows_the_release_and_keeps_it_honest():
    """Ten releases of a Poisson regression on age in [18, 80] (N = 20 000, ε = 1), read through the one-step
    likelihood: centred, the slope's interval is at least a fifth narrower than in the model's own coordinates
    (measured here: 0.18× for both coefficients; on 20 releases at N = 10⁵: RMSE 0.00021 → 0.00013, median s.d.
    0.00022 → 0.00011, the intercept's 0.013 → 0.0065), and the estimates stay within 3.5 of their own s.d. of the truth (10 × 2 coefficients: a miss
    beyond 3.5 s.d. has chance 0.0005 each)."""
    widths, z = {True: [], False: []}, []
    for seed in range(10):
        model, bounds = _uncentred_poisson(20_000, 10 + seed)
        for centre in (True, False):
            plan = plan_score_privatization(model, 1.0, bounds=bounds, centre=centre)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                release = plan.release(PrivacyLedger(), np.random.default_rng(seed))
            likelihood = one_step(release.run.final, release.run.rounds[-2])
            delta = likelihood.estimate()
            inverse = np.linalg.inv(likelihood.slope(delta))
            cov = inverse @ (likelihood.cov + np.diag(likelihood.extra_variance(delta))) @ inverse.T
            A = plan.reparameterisation() if centre else np.eye(2)
            back = np.linalg.inv(A)
            estimate, cov = back @ (release.run.final.point + delta), back @ cov @ back.T
            widths[centre].append(np.sqrt(np.diag(cov)))
            z.append((estimate - [1 / 62, 1.0 - 49 / 62]) / np.sqrt(np.diag(cov)))
    ratio = np.median(widths[True], axis=0) / np.median(widths[False], axis=0)
    assert ratio[0] < 0.8, ratio
    assert np.max(np.abs(z)) < 3.5, np.max(np.abs(z))


def _sample(model, ledger=None, epsilon=1.0, draws=500, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pmdp.sample(draws, epsilon=epsilon, model=model, ledger=ledger, **{**SHORT, **kwargs})


def test_the_privacy_flag_takes_a_poisson_regression_to_the_measurements_route_and_stays_honest():
    """N = 20 000, ε = 2, outcomes bounded by 20: the released posterior's 95 % interval holds plain PyMC's mean for
    every coefficient, its mean lies within 2 of its own standard deviations of plain PyMC's (a draw of the noise
    lands beyond 2 s.d. 5 % of the time per coefficient; the seeds are fixed: over noise seeds 5–10, one of the 18
    coefficient releases was beyond, at 2.07, seed 5's b[1], the others within 1.25), and it is wider than plain
    PyMC's — the noise is counted — but by less than 2× (1.06–1.32× on those seeds, with the clips chosen
    privately; it was up to 6× with the box's worst case; the prior's is 100× wider)."""
    x, y = _records("poisson", 20_000, 5)
    model = _glm("poisson", x, y)
    ledger = PrivacyLedger()
    idata = _sample(model, ledger, epsilon=2.0, bounds={"y": {"x": (-1, 1), "y": (0, 20)}}, noise_rng=6,
                    random_seed=6)
    assert {e.details["route"] for e in ledger.entries} == {"measurements"}
    assert ledger.entries[0].details["routes_passed_over"] == ["laplace"]
    assert ledger.entries[0].details["route_reason"].startswith("measurements is the most accurate route in the order")
    assert ledger.total().epsilon == pytest.approx(2.0)
    posterior = _compat.get_group(idata, "posterior")
    assert not set(_compat.group_names(idata)) & {"observed_data", "constant_data", "log_likelihood"}
    with model:
        plain = pm.sample(500, random_seed=1, **SHORT)
    for name in ("a", "b"):
        got = posterior[name].values.reshape(-1, *posterior[name].shape[2:])
        mean, sd = plain.posterior[name].mean(("chain", "draw")).values, plain.posterior[name].std(("chain", "draw")).values
        lo, hi = np.quantile(got, [0.025, 0.975], axis=0)
        assert np.all((lo < mean) & (mean < hi)), (name, lo, hi, mean)
        assert np.all(np.abs(got.mean(0) - mean) < 2 * got.std(0)), (name, got.mean(0), mean, got.std(0))
        assert np.all((got.std(0) > sd) & (got.std(0) < 2 * sd)), (name, got.std(0), sd)


def test_a_glm_without_the_outcomes_range_is_refused_before_anything_is_spent():
    x, y = _records("poisson", 100, 6)
    ledger = PrivacyLedger()
    with pytest.raises(ValueError, match=r"needs its outcome's range .* 'y': \(lo, hi\)"):
        _sample(_glm("poisson", x, y), ledger, method="measurements", bounds={"y": {"x": (-1, 1)}}, selection=False)
    with pytest.raises(ValueError, match="relation|neighbouring"):
        _sample(_glm("poisson", x, y), PrivacyLedger(neighbouring="add_remove"), method="measurements",
                bounds={"y": {"x": (-1, 1), "y": (0, 20)}})
    assert len(ledger) == 0 and not ledger.reserved


def test_bounds_so_wide_that_the_noise_would_overflow_are_refused_before_anything_is_spent():
    """A covariate range of ±10⁶ under a log link: a record's information reaches exp(10⁶·β)-sized numbers at the
    first point already, whose noise s.d. squared is no double. Refused at planning, naming the bounds; a later
    round's point that reaches such clips is refused before its noise is drawn (the earlier rounds recorded)."""
    from pymc_dp.mechanisms.private_newton import MAX_CLIP, check_clips

    x, y = _records("poisson", 200, 4)
    ledger = PrivacyLedger()
    with pytest.raises(ValueError, match="narrower bounds"):
        _sample(_glm("poisson", x, y), ledger, method="measurements", bounds={"y": {"x": (-1e6, 1e6), "y": (0, 1e7)}})
    assert len(ledger) == 0 and not ledger.reserved
    check_clips(MAX_CLIP, 1.0, "here")
    for worst in (MAX_CLIP * 10, np.inf, np.nan):
        with pytest.raises(ValueError, match="overflow"):
            check_clips(1.0, worst, "at round 2's point")


def _coverage(family: str, n: int, releases: int, bounds: dict) -> np.ndarray:
    """Whether each coefficient's 90 % interval of the one-step likelihood (flat prior: the likelihood's own Gaussian)
    covers the truth, over ``releases`` data sets, with the route's own schedule (its private clips included)."""
    from scipy.stats import norm

    hits = []
    for seed in range(releases):
        x, y = _records(family, n, 100 + seed)
        plan = plan_score_privatization(_glm(family, x, y), 1.0, bounds={"y": bounds})
        run = private_newton(lambda p: plan.derivatives.chunks(p, plan.outcomes, plan.designs), plan.clips,
                             start=plan.prior_mean, prior_mean=plan.prior_mean,
                             prior_precision=1.0 / plan.prior_scale**2, bound_step=plan.bound_step, epsilon=1.0,
                             schedule=plan.schedule, ledger=PrivacyLedger(), rng=seed)
        likelihood = one_step(run.final, run.rounds[-2])
        delta = likelihood.estimate()
        slope = likelihood.slope(delta)  # the mean's Jacobian at the estimate, to first order
        inverse = np.linalg.inv(slope)
        cov = likelihood.cov + np.diag(likelihood.extra_variance(delta))
        sd = np.sqrt(np.diag(inverse @ cov @ inverse.T))
        hits.append(np.abs((run.final.point + delta)[:3] - TRUTH) < norm.ppf(0.95) * sd[:3])
    return np.mean(hits, axis=0)


#: The coverage studies' families and declared boxes (the utility benchmark's outcome ranges).
COVERAGE_BOXES = {"poisson": {"x": (-1, 1), "y": (0, 20)}, "gamma": {"x": (-1, 1), "y": (0.01, 20)}}


@pytest.mark.calibration
@pytest.mark.parametrize("family", sorted(COVERAGE_BOXES))
def test_the_one_step_intervals_cover_at_about_their_rate(family):
    """40 releases of a Poisson or Gamma regression, N = 10⁵, ε = 1: 90 % intervals cover in [0.76, 1] for every
    coefficient (3 standard errors of 40 Bernoulli trials at 0.9 below; the plug-in intervals, without the noise,
    would cover about a third of the time here: the noise is ~2× the sampling spread). The full study is in make
    test-study."""
    coverage = _coverage(family, 100_000, 40, COVERAGE_BOXES[family])
    assert np.all(coverage >= 0.76), coverage


@pytest.mark.study
@pytest.mark.parametrize("family", sorted(COVERAGE_BOXES))
def test_the_one_step_intervals_cover_at_their_rate_over_200_releases(family):
    """200 releases, N = 10⁵, ε = 1: coverage of every coefficient in [0.85, 0.95] (±2.4 standard errors of 200)."""
    coverage = _coverage(family, 100_000, 200, COVERAGE_BOXES[family])
    assert np.all((coverage >= 0.85) & (coverage <= 0.95)), coverage


@pytest.mark.parametrize("name, route", [
    ("linear_regression", "laplace"), ("logistic_regression", "measurements"), ("poisson_regression", "measurements"),
    ("negative_binomial_regression", "measurements"), ("robust_regression", "measurements"),
    ("radon_partial_pooling", "laplace"),
])
def test_the_gallerys_regressions_declared_with_bounds_take_the_statistics_routes(name, route):
    """The gallery's models as written, declared with their ranges instead of a log-likelihood clip, plan on the
    Laplace or measurements route (planned and priced only: nothing is spent; benchmarks/utility.py runs them)."""
    import gallery_models as G
    from pymc_dp.routes import _plan

    plan = _plan(getattr(G, name)(), 100, 1.0, "auto", PrivacyLedger(), None, dict(G.BOUNDS_DECLARATIONS[name]))
    assert plan.route == route
    assert sum(e.epsilon * e.count for e in plan.entries) == pytest.approx(1.0)


def test_a_public_variable_reading_the_private_covariates_is_refused():
    """A NumPy design read by the private likelihood and by a variable declared public would stay, unnoised, in the
    record-free model with the public one: refused before anything is spent (as a shared pm.Data container is)."""
    x, y = _records("poisson", 300, 7)
    with pm.Model() as model:
        a = pm.Normal("a", 0, 2)
        b = pm.Normal("b", 0, 1, shape=2)
        pm.Poisson("y", mu=pm.math.exp(a + x @ b), observed=y)
        pm.Normal("z", mu=x @ b, sigma=1, observed=np.zeros(300))
    ledger = PrivacyLedger()
    with pytest.raises(ValueError, match="public observed variable 'z' reads data a private likelihood reads too"):
        _sample(model, ledger, method="measurements", public=["z"], bounds={"y": {"x": (-1, 1), "y": (0, 20)}})
    assert len(ledger) == 0 and not ledger.reserved


def test_a_round_that_fails_after_its_noise_was_drawn_still_records_what_it_drew():
    x, y = _records("poisson", 200, 8)
    plan = plan_score_privatization(_glm("poisson", x, y), 1.0, bounds={"y": {"x": (-1, 1), "y": (0, 20)}})
    calls = []

    def records(point):
        calls.append(point)
        if len(calls) == 2:
            raise FloatingPointError("a failure in the second round")
        return plan.derivatives.chunks(point, plan.outcomes, plan.designs)

    ledger = PrivacyLedger()
    with pytest.raises(FloatingPointError):
        private_newton(records, plan.clips, start=plan.prior_mean, prior_mean=plan.prior_mean,
                       prior_precision=np.ones(3), bound_step=plan.bound_step, epsilon=1.0, schedule=plan.schedule,
                       ledger=ledger, rng=1)
    # The first round's score and information were released: they are spent; nothing else is, nothing is held.
    assert [e.touched.split(": ")[-1] for e in ledger.entries] == ["score at pilot point 1",
                                                                   "information at pilot point 1"]
    assert not ledger.reserved


def test_older_pilot_rounds_that_disagree_with_a_precise_round_are_discounted_down_to_a_floor():
    """The older rounds' summary (s.d. 0.1 a coordinate) keeps FORGETTING of its precision when this round's own
    estimate (s.d. 0.01) agrees with it, a quarter of that at a distance of 1 (χ² 30 at FORGETTING and 15 at half,
    over the 0.999 quantile of 13.8 for d = 2; 7.5 at a quarter), and never less than STALE_FLOOR."""
    from pymc_dp.mechanisms.private_newton import FORGETTING, STALE_FLOOR, stale_discount

    information = 1e4 * np.eye(2)
    noise = information + 2 * 10.0**2 * np.eye(2)
    older = 100.0 * np.eye(2)

    def kept(distance: float) -> float:
        return stale_discount(np.array([distance, 0.0]), older, np.zeros(2), information, np.zeros(2), noise)

    assert kept(0.05) == FORGETTING
    assert kept(1.0) == FORGETTING / 4
    assert kept(50.0) == pytest.approx(STALE_FLOOR)


# ----------------------------------------------------------------------------- varying intercepts, a[idx]
GROUPS = 5


def _hierarchy(n: int, seed: int, family: str = "poisson", index: np.ndarray | None = None) -> pm.Model:
    """The gallery's varying intercepts with a slope: ``a[county] + b * x``, ``a`` non-centred around ``mu_a``."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, GROUPS, n) if index is None else index
    x = rng.uniform(-1, 1, n)
    eta = np.linspace(-0.5, 0.5, GROUPS)[idx % GROUPS] + 0.8 * x
    y = rng.poisson(np.exp(eta)) if family == "poisson" else rng.binomial(1, 1 / (1 + np.exp(-eta)))
    with pm.Model(coords={"county": [f"c{g}" for g in range(GROUPS)]}) as model:
        mu_a, s_a = pm.Normal("mu_a", 0, 1), pm.HalfNormal("s_a", 1)
        a = pm.Deterministic("a", mu_a + s_a * pm.Normal("z", 0, 1, dims="county"), dims="county")
        county = pm.Data("county_idx", idx)
        eta_ = a[county] + pm.Normal("b", 0, 1) * x
        if family == "poisson":
            pm.Poisson("y", pm.math.exp(eta_), observed=y)
        else:
            pm.Bernoulli("y", logit_p=eta_, observed=y)
    return model


def test_varying_intercepts_are_read_as_a_one_hot_block_that_needs_no_bounds():
    index = np.array([0, 4, -1, 2, 7, 1] * 20)  # -1 is the last county; 7 names none
    model = _hierarchy(120, 0, index=index)
    structure = _read(model)
    (predictor,) = structure.predictors
    assert predictor.blocks == ((0, GROUPS),) and structure.covariates == 1
    assert structure.labels(model.rvs_to_transforms.get)[:GROUPS + 1] == [f"a[{g}]" for g in range(GROUPS)] + ["b"]  # a scalar slope: b, not b[0]
    np.testing.assert_array_equal(predictor.design[:6, :GROUPS].argmax(1)[:4], [0, 4, 4, 2])
    assert predictor.design[4, :GROUPS].sum() == 0  # no group: the plan replaces it by the default record
    with pytest.warns(ClippedRecordsWarning, match="20 record.*group index naming no group.*0-based") as seen:
        plan = plan_score_privatization(model, 1.0, bounds={"y": {"x": (-1, 1), "y": (0, 20)}})
    assert not any("outside the declared bounds" in str(w.message) for w in seen)  # said apart from the bounds
    assert np.all(plan.designs[0][:, :GROUPS].sum(1) == 1)  # every record in exactly one group


def test_the_clips_of_a_hierarchy_are_the_largest_norms_over_every_group_of_the_box():
    """The clip reads a group's block as one column of ones at that group's coefficient; computed with the whole
    one-hot design instead, group by group, the largest norms are the same (the clip is what one record can move)."""
    plan = plan_score_privatization(_hierarchy(300, 1), 1.0, bounds={"y": {"x": (-1, 1), "y": (0, 20)}})
    point = np.r_[np.linspace(-1.0, 1.2, GROUPS), 0.7]
    c_score, c_info = plan.clips(point)
    y_box, collapsed = plan._box_points()
    covariate = collapsed[0][:, 1]
    norms = []
    for g in range(GROUPS):
        design = np.column_stack([np.tile(np.eye(GROUPS)[g], (len(y_box), 1)), covariate])
        scores, information = plan.derivatives(point, y_box, [design])
        norms.append((np.abs(scores).sum(1).max(), np.abs(information).sum(1).max()))
    assert c_score == pytest.approx(max(n[0] for n in norms), rel=1e-12)
    assert c_info == pytest.approx(max(n[1] for n in norms), rel=1e-12)
    scores, information = plan.derivatives(point, plan.outcomes, list(plan.designs))
    assert clip_rows_l1(scores, c_score)[1] == 0 and clip_rows_l1(information, c_info)[1] == 0


def test_the_privacy_flag_takes_a_glm_hierarchy_to_the_measurements_route():
    """``logit_p = a[county] + b * x``: the Laplace route refuses it (a GLM within each group), so ``method="auto"``
    plans the measurements route; planning spends nothing."""
    from pymc_dp.routes import _plan

    model = _hierarchy(400, 2, family="bernoulli")
    ledger = PrivacyLedger()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = _plan(model, 100, 1.0, "auto", ledger, None, {"bounds": {"y": {"x": (-1, 1)}}})
    assert plan.route == "measurements" and len(ledger) == 0
    assert "laplace" in plan.passed_over


def test_two_groups_never_meet_in_one_record_so_their_cross_information_is_not_released():
    """The information's entries between two groups of ``a[idx]`` are zero for every record: they are released as
    exactly 0 with no noise, the rest with noise, and the run costs what it did (the L1 norms are unchanged)."""
    plan = plan_score_privatization(_hierarchy(400, 3), 1.0, bounds={"y": {"x": (-1, 1), "y": (0, 20)}})
    support = plan.support()
    d = GROUPS + 1
    assert support.shape == (d, d) and support[0, 1] == support[1, 0] == False  # noqa: E712 (array entries)
    assert support[0, 0] and support[0, GROUPS] and support[GROUPS, GROUPS]
    ledger = PrivacyLedger()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = plan.release(ledger, rng=np.random.default_rng(0)).run
    for r in run.rounds:
        off = r.information[~support]
        assert np.all(off == 0.0)
        assert np.all(r.information[support] != 0.0)  # noise on every entry released (continuous: never 0 exactly)
    assert ledger.total().epsilon == pytest.approx(1.0)


def test_the_one_step_likelihood_with_a_support_is_the_gaussian_it_describes():
    """With a support, score coordinate i's variance grows by c Σ_j support_ij δ_j² (not c ‖δ‖²): the tensor equals
    log N(g; M δ, C + diag(c support δ²)) computed directly."""
    import pytensor.tensor as pt
    from scipy.stats import multivariate_normal

    from pymc_dp.mechanisms.private_newton import NewtonRound
    from pymc_dp.model.score_measurements import one_step_loglik

    rng = np.random.default_rng(2)
    d = 4
    support = np.ones((d, d), dtype=bool)
    support[0, 1] = support[1, 0] = support[0, 2] = support[2, 0] = support[1, 2] = support[2, 1] = False
    info = np.diag([50.0, 60.0, 70.0, 80.0]) + 5.0 * (~np.eye(d, dtype=bool) & support)
    final = NewtonRound(np.zeros(d), rng.normal(size=d) * 5, info, 3.0, 2.0, 1.0, 1.0, support)
    phi = pt.dvector("phi")
    loglik = one_step_loglik(final, phi)
    at = np.array([0.1, -0.2, 0.3, 0.05])
    model = one_step(final)
    cov = model.cov + np.diag(2 * 2.0**2 * (support.astype(float) @ at**2))  # the entries' Laplace variance 2b², b = 2
    expected = multivariate_normal(model.information @ at, cov).logpdf(final.score)
    assert float(loglik.eval({phi: at}, mode="FAST_COMPILE")) == pytest.approx(expected, rel=1e-10)


def test_a_groups_curvature_allowance_reads_only_the_change_the_noise_cannot_make():
    """With groups, two rounds' informations whose difference is noise alone (Laplace, the last two rounds' scales)
    give no curvature allowance, in 200 of 200 draws (the threshold's union bound allows 1 %): before, the noise's
    tail read as curvature made a group's interval tens of times too wide. A real change of one group's entry,
    ten times the noise's scale, is kept, exactly, and widens that group's row only."""
    from pymc_dp.mechanisms.private_newton import NewtonRound

    rng = np.random.default_rng(4)
    groups, d = 12, 13
    support = np.zeros((d, d), dtype=bool)
    support[:groups, :groups] = np.eye(groups, dtype=bool)
    support[:, -1] = support[-1, :] = True
    base = np.diag(np.r_[np.full(groups, 2000.0), 30000.0]) + 300.0 * support * ~np.eye(d, dtype=bool)
    b_final, b_previous = 260.0, 600.0
    rows, cols = np.triu_indices(d)
    released = support[rows, cols]

    def noisy(scale: float, extra: np.ndarray | None = None) -> np.ndarray:
        values = base[rows, cols] + np.where(released, rng.laplace(0, scale, len(rows)), 0.0)
        if extra is not None:
            values = values + extra[rows, cols]
        return unvech(values, d)

    previous_point, final_point = np.zeros(d), np.full(d, 0.05)
    score = rng.normal(0, 50, d)
    allowances = []
    for _ in range(200):
        previous = NewtonRound(previous_point, score, noisy(b_previous), 1.0, b_previous, 1.0, 1.0, support)
        final = NewtonRound(final_point, score, noisy(b_final), 80.0, b_final, 1.0, 1.0, support)
        step = one_step(final, previous)
        allowances.append(np.diag(step.cov - step.information) - 2.0 * 80.0**2)
    assert np.max(np.abs(allowances)) < 1e-6
    bump = np.zeros((d, d))
    bump[3, 3] = 10 * (b_final + b_previous)
    previous = NewtonRound(previous_point, score, noisy(b_previous), 1.0, b_previous, 1.0, 1.0, support)
    final = NewtonRound(final_point, score, noisy(b_final, bump), 80.0, b_final, 1.0, 1.0, support)
    step = one_step(final, previous)
    assert step.change[3, 3] == pytest.approx(final.information[3, 3] - previous.information[3, 3])
    assert np.count_nonzero(step.change) == 1
    allowance = np.diag(step.cov - step.information) - 2.0 * 80.0**2
    assert allowance[3] > 0 and np.all(np.abs(np.delete(allowance, 3)) < 1e-6)


def test_without_groups_a_curvature_change_within_the_noise_gives_no_allowance():
    """Without groups, the information's change over the last step widens the likelihood only where some entry's
    change is beyond what the two releases' noise could make (the groups' union bound, 1 % false alarms): noise alone
    widened at most 6 of 200 draws (before, it did whenever the squared differences summed above their expectation,
    about half the time, and a negative binomial's log α came out 1.5–8.8× wide in a third of 30 releases). A real
    change, ten times the noise's scale in one entry, is read (shrunk by the noise's expected share, as before)."""
    from pymc_dp.mechanisms.private_newton import NewtonRound

    rng = np.random.default_rng(5)
    d = 4
    base = np.diag([180_000.0, 180_000.0, 180_000.0, 6_000.0]) + 500.0 * (1 - np.eye(d))
    b_final, b_previous = 100.0, 300.0
    rows, cols = np.triu_indices(d)

    def noisy(scale: float, extra: np.ndarray | None = None) -> np.ndarray:
        values = base[rows, cols] + rng.laplace(0, scale, len(rows)) + (0.0 if extra is None else extra[rows, cols])
        return unvech(values, d)

    previous_point, final_point, score = np.zeros(d), np.full(d, 0.02), rng.normal(0, 300, d)
    widened = 0
    for _ in range(200):
        previous = NewtonRound(previous_point, score, noisy(b_previous), 1.0, b_previous, 1.0, 1.0)
        final = NewtonRound(final_point, score, noisy(b_final), 200.0, b_final, 1.0, 1.0)
        step = one_step(final, previous)
        allowance = np.diag(step.cov - step.information) - 2.0 * 200.0**2
        widened += bool(np.any(step.change) or np.max(np.abs(allowance)) > 1e-6)
    assert widened <= 6, widened  # at most 1 % expected (2 of 200); P(more than 6) < 0.5 %
    bump = np.zeros((d, d))
    bump[3, 3] = 10 * (b_final + b_previous)
    previous = NewtonRound(previous_point, score, noisy(b_previous), 1.0, b_previous, 1.0, 1.0)
    final = NewtonRound(final_point, score, noisy(b_final, bump), 200.0, b_final, 1.0, 1.0)
    step = one_step(final, previous)
    assert np.any(step.change) and abs(step.change[3, 3]) > 5 * (b_final + b_previous)


@pytest.mark.slow
def test_a_bernoulli_hierarchy_lands_near_plain_pymc_with_honest_width():
    """``logit_p = a[county] + b * x``, N = 20,000, five groups, ε = 1 (seeded noise): every parameter's released
    mean within 3 plain-posterior s.d. of plain PyMC's and plain PyMC's mean inside the released 95 % interval; the
    released s.d. within 0.8–2× the plain one (at thousands of records a group the noise adds little: measured
    1.07–1.24× at N = 20,000 with eight groups, 0.96–1.25× at N = 10⁵ with twenty, one release each)."""
    model = _hierarchy(20_000, 7, family="bernoulli")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with model:
            plain = pm.sample(500, random_seed=1, nuts_sampler="pymc", **SHORT)
        released = pmdp.sample(500, epsilon=1.0, model=_hierarchy(20_000, 7, family="bernoulli"),
                               bounds={"y": {"x": (-1, 1)}}, noise_rng=11, random_seed=1, **SHORT)
    _assert_near_plain(plain, released, ("a", "b", "mu_a"))


def _assert_near_plain(plain, released, names) -> None:
    """The measurements route's release beside plain PyMC: each parameter's mean within 3 plain s.d., plain's mean
    inside the released 95 % interval, the released s.d. 0.8–2× plain's."""
    assert pmdp.ledger(released).entries[0].details["route"] == "measurements"
    for name in names:
        p, q = plain.posterior[name], released.posterior[name]
        p_mean, p_sd = p.mean(("chain", "draw")).values, p.std(("chain", "draw")).values
        q_mean, q_sd = q.mean(("chain", "draw")).values, q.std(("chain", "draw")).values
        assert np.all(np.abs(q_mean - p_mean) < 3 * p_sd), name
        lo, hi = q.quantile(0.025, ("chain", "draw")).values, q.quantile(0.975, ("chain", "draw")).values
        assert np.all((lo < p_mean) & (p_mean < hi)), name
        assert np.all((0.8 * p_sd < q_sd) & (q_sd < 2.0 * p_sd)), name


def _hierarchy_coverage(family: str, n: int, groups: int, releases: int) -> np.ndarray:
    """Whether each parameter's 90 % interval of the one-step likelihood (flat prior: its own Gaussian, the
    support's noise counted) covers the truth, for ``logit_p`` or ``log mu = a[idx] + b * x``, over ``releases``."""
    from scipy.stats import norm

    a_true, b_true = np.linspace(-0.8, 0.4, groups), 0.7
    hits = []
    for seed in range(releases):
        rng = np.random.default_rng(1000 + seed)
        idx, x = rng.integers(0, groups, n), rng.uniform(-1, 1, n)
        eta = a_true[idx] + b_true * x
        y = rng.poisson(np.exp(eta)) if family == "poisson" else rng.binomial(1, 1 / (1 + np.exp(-eta)))
        with pm.Model(coords={"g": range(groups)}) as model:
            a, b = pm.Normal("a", 0, 2, dims="g"), pm.Normal("b", 0, 2)
            eta_ = a[pm.Data("group", idx)] + b * x
            if family == "poisson":
                pm.Poisson("y", pm.math.exp(eta_), observed=y)
            else:
                pm.Bernoulli("y", logit_p=eta_, observed=y)
        bounds = {"y": {"x": (-1, 1), "y": (0, 15)}} if family == "poisson" else {"y": {"x": (-1, 1)}}
        plan = plan_score_privatization(model, 1.0, bounds=bounds)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run = private_newton(lambda p: plan.derivatives.chunks(p, plan.outcomes, plan.designs), plan.clips,
                                 start=plan.prior_mean, prior_mean=plan.prior_mean,
                                 prior_precision=1.0 / plan.prior_scale**2, bound_step=plan.bound_step, epsilon=1.0,
                                 schedule=plan.schedule, ledger=PrivacyLedger(), rng=seed, support=plan.support())
        likelihood = one_step(run.final, run.rounds[-2])
        delta = likelihood.estimate()
        slope = likelihood.slope(delta)
        inverse = np.linalg.inv(slope)
        cov = likelihood.cov + np.diag(likelihood.extra_variance(delta))
        sd = np.sqrt(np.diag(inverse @ cov @ inverse.T))
        hits.append(np.abs(run.final.point + delta - np.r_[a_true, b_true]) < norm.ppf(0.95) * sd)
    return np.asarray(hits)


@pytest.mark.calibration
def test_a_glm_hierarchys_intervals_cover_at_about_their_rate():
    """40 releases of a Poisson hierarchy (ten groups, N = 10⁵, ε = 1): every parameter's 90 % interval covers in
    [0.76, 1] (3 standard errors of 40 below 0.9), all eleven together in [0.84, 0.96]. Measured: 0.88–0.98, 0.92
    (before the support, the likelihood was flat and the posterior near the prior). The full study is in
    make test-study."""
    hits = _hierarchy_coverage("poisson", 100_000, 10, 40)
    assert np.all(hits.mean(axis=0) >= 0.76), hits.mean(axis=0)
    assert 0.84 <= hits.mean() <= 0.96, hits.mean()


@pytest.mark.study
@pytest.mark.parametrize("family", ["poisson", "bernoulli"])
def test_a_glm_hierarchys_intervals_cover_at_their_rate_over_100_releases(family):
    """100 releases, ten groups, N = 10⁵, ε = 1: each parameter's coverage in [0.81, 0.99] (0.9 ± 3 standard errors of
    100: eleven parameters, two families), all together in [0.86, 0.94]. Measured: Poisson 0.83–0.94 (0.908 in
    all), Bernoulli 0.85–0.95 (0.898); the intervals' mean s.d. within about 10 % of the estimates' RMSE."""
    hits = _hierarchy_coverage(family, 100_000, 10, 100)
    assert np.all((hits.mean(axis=0) >= 0.81) & (hits.mean(axis=0) <= 0.99)), hits.mean(axis=0)
    assert 0.86 <= hits.mean() <= 0.94, hits.mean()


def test_the_number_of_groups_never_follows_the_records_index():
    """A vector sized from the index (``shape=idx.max() + 1``) is not read as groups, whether the index is pm.Data or
    a NumPy array folded into the shape: its length would follow the records. Sized by a dim, with a group-level
    predictor in its prior (the radon gallery's ``a ~ Normal(g0 + g1 * u, s)``), it is."""
    import pytensor.tensor as pt

    rng = np.random.default_rng(9)
    idx, x, y = rng.integers(0, 3, 200), rng.uniform(-1, 1, 200), rng.poisson(1.0, 200)
    for as_data in (True, False):
        with pm.Model() as model:
            index = pm.Data("idx", idx) if as_data else idx
            size = index.max() + 1 if as_data else pt.max(pt.as_tensor(idx)) + 1
            a = pm.Normal("a", 0, 1, shape=(size,))
            pm.Poisson("y", pm.math.exp(a[index] + pm.Normal("b") * x), observed=y)
        assert _read(model) is None
    with pm.Model(coords={"county": ["c0", "c1", "c2"]}) as model:
        u = pm.Data("u", np.array([-0.4, 0.1, 0.8]), dims="county")
        a = pm.Normal("a", pm.Normal("g0") + pm.Normal("g1") * u, pm.HalfNormal("s"), dims="county")
        pm.Poisson("y", pm.math.exp(a[pm.Data("idx", idx)] + pm.Normal("b") * x), observed=y)
    assert _read(model).predictors[0].blocks == ((0, 3),)


def test_a_groups_pilot_step_is_capped_at_the_trust_region_of_its_own_records():
    """Over the box a group's column is 1 for one record in G, so the root mean square alone would let one group's
    coefficient move √G trust regions in one pilot step; its own records' predictor moves by at most one."""
    from pymc_dp.model.score_measurements import TRUST_REGION

    plan = plan_score_privatization(_hierarchy(300, 1), 1.0, bounds={"y": {"x": (-1, 1), "y": (0, 20)}})
    step = np.zeros(GROUPS + 1)
    step[3] = -3.0 * TRUST_REGION  # one group's noisy information asks for three trust regions
    bounded = plan.bound_step(step)
    assert bounded[3] == pytest.approx(-TRUST_REGION) and np.count_nonzero(bounded) == 1
    small = np.r_[np.full(GROUPS, 0.1), 0.05]  # within the region: unchanged
    np.testing.assert_array_equal(plan.bound_step(small), small)


def test_the_record_free_model_starts_where_the_released_estimate_points():
    """The start reproduces the one-step estimate through the model's own parametrisation (``a = mu_a + s_a * z``,
    non-centred): with a likelihood much narrower than the prior (N = 50,000), the a's it implies are within a
    fifth of the estimate's standard error of it (the prior's pull, which the start keeps, is smaller than that)."""
    from pymc_dp.model.score_measurements import one_step

    plan = plan_score_privatization(_hierarchy(50_000, 4), 1.0, bounds={"y": {"x": (-1, 1), "y": (0, 20)}})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        private = plan.release(PrivacyLedger(), rng=np.random.default_rng(3))
    step = one_step(private.run.final, private.run.rounds[-2])
    estimate = step.point + step.estimate()
    start = private.start()
    assert set(start) == {"mu_a", "s_a", "z", "b"}
    implied = np.r_[start["mu_a"] + start["s_a"] * start["z"], start["b"]]
    information_inverse = np.linalg.inv(step.information)
    se = np.sqrt(np.diag(information_inverse @ step.cov @ information_inverse))
    assert np.all(np.abs(implied - estimate) < 0.2 * se)


def test_the_start_goes_to_the_sampler_unjittered_unless_the_user_chose_one():
    from pymc_dp.routes.laplace import started_at

    start = {"b": np.array(0.5)}
    assert started_at({"chains": 2}, None) == {"chains": 2}
    for own in ({"initvals": {"b": 0.0}}, {"init": "jitter+adapt_diag"}, {"step": object()}):
        assert started_at(own, start) == own  # the user's choice wins
    pymc_nuts = started_at({"nuts_sampler": "pymc"}, start)
    assert pymc_nuts["initvals"] == start and pymc_nuts["init"] == "adapt_diag"
    nutpie = started_at({"nuts_sampler": "nutpie", "compile_kwargs": {"mode": "NUMBA"}}, start)
    assert nutpie["initvals"] == start and nutpie["compile_kwargs"] == {"mode": "NUMBA", "jitter_rvs": set()}
    chosen = started_at({}, start)  # the sampler PyMC would pick, named
    assert chosen["nuts_sampler"] in ("pymc", "nutpie") and chosen["initvals"] == start


@pytest.mark.slow
def test_a_bernoulli_hierarchys_chains_agree_with_a_standard_normal_covariate_declared_wide():
    """Twenty groups, N = 50,000, x ~ N(0, 1) declared ±3, ε = 1, seeded noise that sent a chain of the default
    start (nutpie's, jittered) onto the far slope of one group's errors-in-variables likelihood (R-hat 1.8, the
    group's mean 2 units off in that chain). Started unjittered near the released estimate, the chains agree
    (R-hat < 1.05 on every parameter) and every group lies within 4 released s.d. of its truth."""
    import arviz as az

    rng = np.random.default_rng(1)
    n, groups = 50_000, 20
    idx, x = rng.integers(0, groups, n), rng.normal(size=n)
    a_true = rng.normal(-0.5, 0.8, groups)
    y = rng.binomial(1, 1 / (1 + np.exp(-(a_true[idx] + 0.8 * x))))
    with pm.Model(coords={"group": np.arange(groups)}) as model:
        mu_a, s_a = pm.Normal("mu_a", 0, 1.5), pm.HalfNormal("sigma_a", 1)
        a = pm.Deterministic("a", mu_a + s_a * pm.Normal("z", 0, 1, dims="group"), dims="group")
        pm.Bernoulli("y", logit_p=a[idx] + pm.Normal("b", 0, 1) * x, observed=y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        released = pmdp.sample(500, epsilon=1.0, model=model, method="measurements", bounds={"y": {"x": (-3, 3)}},
                               noise_rng=4, random_seed=4, **SHORT)
    assert float(az.summary(released, var_names=["a", "b", "mu_a", "sigma_a"])["r_hat"].max()) < 1.05
    post = released.posterior["a"]
    z = np.abs(post.mean(("chain", "draw")).values - a_true) / post.std(("chain", "draw")).values
    assert np.all(z < 4.0)


def test_the_ledger_records_the_box_the_clips_were_computed_from():
    """The declared box (public) is in every GLM entry's details, the group block and intercept left out, and it
    survives the ledger's save and load."""
    plan = plan_score_privatization(_hierarchy(300, 1), 1.0, bounds={"y": {"x": (-1, 1), "y": (0, 20)}})
    box = {"outcome": [0.0, 20.0], "covariates by predictor": [[[-1.0, 1.0]]]}
    entries = plan.entries()
    assert all(e.details["declared box"] == box for e in entries)
    ledger = PrivacyLedger()
    for entry in entries:
        ledger.record(entry)
    restored = PrivacyLedger.from_json(ledger.to_json())
    assert restored.entries[0].details["declared box"] == box


def test_bounds_with_a_covariates_own_name_are_refused_naming_the_literal_keys():
    """``bounds={"y": {"temperature": ...}}`` names the covariate, not the key: refused with the two keys the route
    takes; a Bernoulli missing 'x' is asked for 'x' only (its outcome's range is known)."""
    model = _hierarchy(200, 5, family="bernoulli")
    with pytest.raises(ValueError, match=r"takes two keys, 'x' .* the key itself.*got \['temperature'\]"):
        plan_score_privatization(model, 1.0, bounds={"y": {"temperature": (-1, 1)}})
    with pytest.raises(ValueError, match=r"covariate's range\. Declare bounds=\{'y': \{'x': \(lo, hi\)\}\} \('x' is"):
        plan_score_privatization(model, 1.0, bounds={"y": {}})


def test_a_release_far_from_its_measured_point_warns_naming_the_parameter():
    """One round (no pilots) measured at the prior's centre, the intercept's truth 1.0 away with 20,000 records: the
    release puts it tens of standard errors off, and the warning names it and what brings the point nearer."""
    from pymc_dp.model.score_measurements import FarFromPilotWarning

    x, y = _records("poisson", 20_000, 9)
    plan = plan_score_privatization(_glm("poisson", x, y), 5.0, bounds={"y": {"x": (-1, 1), "y": (0, 30)}},
                                    rounds=1)
    with pytest.warns(FarFromPilotWarning, match=r"puts intercept .* standard errors .* tighter declared box"):
        plan.release(PrivacyLedger(), rng=np.random.default_rng(0))


def _slopes(n: int, seed: int, x_range: float = 1.0, groups: int = GROUPS) -> tuple[pm.Model, np.ndarray, np.ndarray]:
    """Varying intercepts and slopes, ``logit_p = a[g] + b[g] * x``, both centred hierarchies, the index pm.Data."""
    rng = np.random.default_rng(seed)
    idx, x = rng.integers(0, groups, n), rng.uniform(-x_range, x_range, n)
    a_true, b_true = rng.normal(0, 0.5, groups), rng.normal(0.8, 0.4, groups)
    y = rng.binomial(1, 1 / (1 + np.exp(-(a_true[idx] + b_true[idx] * x))))
    with pm.Model(coords={"g": np.arange(groups)}) as model:
        g = pm.Data("g_idx", idx)
        a = pm.Normal("a", pm.Normal("mu_a", 0, 1), pm.HalfNormal("s_a", 1), dims="g")
        b = pm.Normal("b", pm.Normal("mu_b", 0, 1), pm.HalfNormal("s_b", 1), dims="g")
        pm.Bernoulli("y", logit_p=a[g] + b[g] * x, observed=y)
    return model, idx, x


def test_a_varying_slope_is_read_as_a_one_hot_block_scaled_by_its_covariate():
    model, idx, x = _slopes(200, 0)
    structure = _read(model)
    (predictor,) = structure.predictors
    assert predictor.blocks == ((0, GROUPS), (GROUPS, GROUPS)) and structure.covariates == 1
    assert [predictor.is_slope(b) for b in range(2)] == [False, True]
    assert predictor.block_keys[0] == predictor.block_keys[1]  # one index: a record is in one group of both
    np.testing.assert_array_equal(predictor.design[:, :GROUPS], np.eye(GROUPS)[idx])
    np.testing.assert_array_equal(predictor.design[:, GROUPS:], np.eye(GROUPS)[idx] * x[:, None])
    labels = structure.labels(model.rvs_to_transforms.get)
    assert labels == [f"a[{g}]" for g in range(GROUPS)] + [f"b[{g}]" for g in range(GROUPS)]


def test_the_clips_of_a_varying_slope_are_the_largest_norms_over_every_group_of_the_box():
    """The clip reads a group's two blocks as a column of ones and a column of x at that group's a and b; with the
    whole design (onehot, onehot * x) instead, group by group, the largest norms are the same. The two blocks share
    their index, so G cases are evaluated, not G²; the information between a[g] and b[h], h ≠ g, is not released."""
    model, _, _ = _slopes(300, 1)
    plan = plan_score_privatization(model, 1.0, bounds={"y": {"x": (-2, 2)}})
    point = np.r_[np.linspace(-1.0, 1.2, GROUPS), np.linspace(0.3, -0.6, GROUPS)]
    c_score, c_info = plan.clips(point)
    y_box, collapsed = plan._box_points()
    covariate = collapsed[0][:, 1]
    assert covariate.min() == -2 and covariate.max() == 2
    norms = []
    for g in range(GROUPS):
        onehot = np.tile(np.eye(GROUPS)[g], (len(y_box), 1))
        scores, information = plan.derivatives(point, y_box, [np.column_stack([onehot, onehot * covariate[:, None]])])
        norms.append((np.abs(scores).sum(1).max(), np.abs(information).sum(1).max()))
    assert c_score == pytest.approx(max(n[0] for n in norms), rel=1e-12)
    assert c_info == pytest.approx(max(n[1] for n in norms), rel=1e-12)
    support = plan.support()
    assert support[0, GROUPS] and support[1, GROUPS + 1] and not support[0, GROUPS + 1] and not support[1, GROUPS]


def test_a_varying_slopes_covariate_is_clipped_in_its_own_group_only():
    """x beyond the declared range is clipped into it in the record's group; the other groups' columns stay 0 even
    when the range excludes 0 (clipping whole rows would move them); the count goes to the curator only."""
    model, idx, x = _slopes(400, 2, x_range=3.0)
    with pytest.warns(ClippedRecordsWarning):
        plan = plan_score_privatization(model, 1.0, bounds={"y": {"x": (0.5, 2.0)}})
    block = plan.designs[0][:, GROUPS:]
    np.testing.assert_array_equal(block[np.arange(len(idx)), idx], np.clip(x, 0.5, 2.0))
    assert np.count_nonzero(block) == len(idx)  # one entry per record, in its own group
    assert plan._declared_box()["covariates by predictor"] == [[[0.5, 2.0]]]


@pytest.mark.slow
def test_varying_intercepts_and_slopes_land_near_plain_pymc_with_honest_width():
    """``logit_p = a[g] + b[g] * x``, N = 20,000, five groups, ε = 1 (seeded noise): every a and b within 3 plain s.d.
    of plain PyMC's mean, plain's mean inside the released 95 % interval, the released s.d. 0.8–2× plain's (measured
    at eight groups: 0.1–1.6 s.d. away, 0.96–1.54× the width)."""
    model, _, _ = _slopes(20_000, 7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with model:
            plain = pm.sample(500, random_seed=1, **SHORT)
        released = pmdp.sample(500, epsilon=1.0, model=_slopes(20_000, 7)[0], bounds={"y": {"x": (-1, 1)}},
                               noise_rng=11, random_seed=1, **SHORT)
    _assert_near_plain(plain, released, ("a", "b"))


def test_a_per_record_trial_count_is_refused_by_its_name_not_as_an_offset():
    """A Binomial's n given per record (pm.Data) is not an offset: the refusal names the parameter and says per-record
    parameters are not supported, before anything is spent."""
    rng = np.random.default_rng(0)
    X, n = rng.uniform(-1, 1, (200, 2)), rng.integers(1, 20, 200)
    with pm.Model(coords={"c": ["a", "b"]}) as model:
        Xd, nd = pm.Data("X", X), pm.Data("n", n)
        pm.Binomial("y", n=nd, logit_p=pm.Normal("a") + Xd @ pm.Normal("b", dims="c"), observed=rng.binomial(n, 0.5))
    with pytest.raises(ValueError, match=r"its parameter 'n' is data of each record") as refused:
        pmdp.sample(100, model=model, epsilon=1.0, method="measurements", bounds={"y": {"x": (-1, 1), "y": (0, 20)}})
    assert "offset" not in str(refused.value)


def test_refusals_name_the_users_construct_not_pytensor_ops():
    """Covariates standardised inside the model with the records' own mean, and a pm.Censored likelihood: the refusal
    says which data and which PyMC construct, not only the PyTensor op that built the term."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 2))
    y = rng.normal(X @ [0.5, -0.3], 1.0)
    bounds = {"y": {"x": (-3, 3), "y": (-5, 5)}}
    with pm.Model() as standardised:
        Xd = pm.Data("X", X)
        pm.Normal("y", pm.Normal("a") + ((Xd - Xd.mean(0)) / Xd.std(0)) @ pm.Normal("b", shape=2),
                  pm.HalfNormal("s"), observed=y)
    with pytest.raises(ValueError, match=r"a term computed from the data 'X' .*compute it in NumPy before the model"):
        pmdp.sample(10, model=standardised, epsilon=1.0, method="measurements", bounds=bounds)
    with pm.Model() as censored:
        pm.Censored("y", pm.Normal.dist(pm.Normal("a") + X @ pm.Normal("b", shape=2), pm.HalfNormal("s")),
                    lower=None, upper=1.0, observed=np.minimum(y, 1.0))
    with pytest.raises(ValueError, match=r"a Normal distribution inside the likelihood \(pm.Censored"):
        pmdp.sample(10, model=censored, epsilon=1.0, method="measurements", bounds=bounds)
