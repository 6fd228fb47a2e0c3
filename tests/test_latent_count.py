"""The noise-aware likelihood under add/remove: N private, a latent Poissonised number of records."""

from __future__ import annotations

import warnings

import numpy as np
import pymc as pm
import pytest
from scipy import integrate, stats as st

import pymc_dp as pmdp
from pymc_dp.families import ClippedRecordsWarning
from pymc_dp.families._latent_count import LatentCount
from pymc_dp.model.privatize_model import PlugInLikelihoodWarning

pytestmark = pytest.mark.usefixtures("quiet_pymc")

AGES = (18.0, 80.0)


def _normal_laplace(z: float, mean: float, sd: float, b: float) -> float:
    """Density of Normal(mean, sd²) + Laplace(0, b) at z, by quadrature (independent of the library's closed form)."""
    f = lambda t: st.norm.pdf(t, mean, sd) * st.laplace.pdf(z - t, scale=b)  # noqa: E731
    lo, hi = mean - 12 * sd, mean + 12 * sd
    return integrate.quad(f, lo, hi, points=[min(max(z, lo), hi)], limit=400, epsabs=0, epsrel=1e-10)[0]


def test_a_bernoulli_release_under_add_remove_is_two_independent_poisson_counts():
    """Poissonised, successes and failures are independent Poisson(λp) and Poisson(λ(1 − p)) counts.

    Their central-limit form, each convolved with its own Laplace noise of scale 1/ε, is a product of
    two one-dimensional normal-Laplace densities; the library's bivariate quadrature must give it to
    within its documented accuracy (1e-3 at worst in log density; typically 1e-6).
    """
    x = np.random.default_rng(0).binomial(1, 0.3, 400)
    stats = pmdp.privatize(x, "bernoulli", 0.5, neighbouring="add_remove", rng=3)
    assert stats.mechanism == "geometric" and stats.values.size == 2
    with pm.Model() as model:
        p = pm.Flat("p")
        pmdp.observe_stats("y", pm.Bernoulli.dist(p), stats, noise_aware=True)
    # N = N̂·e^u, u flat from 0 (N̂ the release's estimate, a shared input), N itself a Deterministic
    assert [v.name for v in model.free_RVs] == ["p", "y_n_records_log_ratio"]
    assert [v.name for v in model.deterministics] == ["y_n_records"]
    assert model.initial_point()["y_n_records_log_ratio"] == 0.0
    term = model.compile_fn(model.replace_rvs_by_values([model.potentials[0]])[0], inputs=model.value_vars,
                          point_fn=False, mode="FAST_COMPILE")
    from pymc_dp.families._noise_aware import laplace_equivalent_scale

    b = laplace_equivalent_scale(stats.scale, "geometric")
    z = np.asarray(stats.released if stats.released is not None else stats.noisy, dtype=float)
    estimate = max(stats.n, 1.0)
    for prob, rate in ((0.3, 400.0), (0.25, 380.0), (0.4, 450.0)):
        u = np.log(rate / estimate)
        got = float(term(prob, u)) - u  # the term includes the flat prior's Jacobian, u
        means = (rate * prob, rate * (1 - prob))
        want = sum(np.log(_normal_laplace(zj, m, np.sqrt(m), b)) for zj, m in zip(z, means))
        assert got == pytest.approx(want, abs=1e-3), (prob, rate)


def _posterior_mode(model) -> dict[str, float]:
    """The mode of the model's log density (scipy on the transformed scalars), its variables and Deterministics."""
    from scipy.optimize import minimize

    logp = model.compile_logp(mode="FAST_COMPILE")
    start = model.initial_point()
    names = list(start)
    assert all(np.ndim(start[k]) == 0 for k in names)  # scalar variables only, as here
    point = lambda v: dict(zip(names, v))  # noqa: E731
    # Powell, not a gradient method: the count's Laplace noise puts a kink in the density at N = its release
    found = minimize(lambda v: -float(logp(point(v))), np.array([float(start[k]) for k in names]), method="Powell",
                     options={"xtol": 1e-8, "ftol": 1e-12})
    wanted = [*model.free_RVs, *model.deterministics]
    untransformed = model.compile_fn(model.replace_rvs_by_values(wanted), inputs=model.value_vars, point_fn=False,
        mode="FAST_COMPILE")
    by_value = dict(zip(names, found.x))
    values = untransformed(*[by_value[v.name] for v in model.value_vars])
    return {rv.name: float(v) for rv, v in zip(wanted, values)}


FAMILIES = [
    # (name, distribution builder, records, bounds, the parameter and its truth)
    ("normal", lambda t: pm.Normal.dist(t, 12.0), lambda r: np.clip(r.normal(45.0, 12.0, 800), *AGES),
     {"x": AGES}, lambda: pm.Normal("theta", 50.0, 20.0), 45.0),
    ("exponential", lambda t: pm.Exponential.dist(t), lambda r: r.exponential(1 / 0.5, 800), {"x": (0.0, 30.0)},
     lambda: pm.Gamma("theta", 2.0, 2.0), 0.5),
    ("gamma", lambda t: pm.Gamma.dist(alpha=2.0, beta=t), lambda r: r.gamma(2.0, 1 / 1.5, 800), {"x": (0.01, 12.0)},
     lambda: pm.Gamma("theta", 2.0, 1.0), 1.5),
    ("poisson", lambda t: pm.Poisson.dist(t), lambda r: r.poisson(3.0, 800), {"upper": 15},
     lambda: pm.Gamma("theta", 2.0, 0.5), 3.0),
    ("binomial", lambda t: pm.Binomial.dist(4, t), lambda r: r.binomial(4, 0.3, 800), None,
     lambda: pm.Beta("theta", 1.0, 1.0), 0.3),
]


@pytest.mark.parametrize("case", FAMILIES, ids=[c[0] for c in FAMILIES])
def test_observe_stats_under_add_remove_models_the_noise_with_a_latent_count(case):
    """The posterior mode of θ and N lands where the records say, N within a few noise scales.

    At N = 800 and ε = 2 the noise on the centred sums is a few per cent of their sampling spread,
    so the mode is within 4 plain-posterior s.d. of the truth (a margin for the sampling error of
    one data set, about 1 s.d., and the noise); the count's noise scale is at most a few records.
    """
    name, dist, draw, bounds, prior, truth = case
    family = {"normal": pmdp.families.Normal(sigma=12.0), "binomial": pmdp.families.Binomial(n_trials=4),
              "gamma": pmdp.families.Gamma(shape=2.0)}.get(name, name)
    records = draw(np.random.default_rng(1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClippedRecordsWarning)
        stats = pmdp.privatize(records, family, 2.0, bounds=bounds, neighbouring="add_remove", rng=2)
    with pm.Model() as model:
        theta = prior()
        pmdp.observe_stats("y", dist(theta), stats, noise_aware=True)
    mode = _posterior_mode(model)
    plain_sd = {"normal": 12.0 / np.sqrt(800), "exponential": 0.5 / np.sqrt(800), "gamma": 1.5 / np.sqrt(1600),
                "poisson": np.sqrt(3.0 / 800), "binomial": np.sqrt(0.3 * 0.7 / 3200)}[name]
    assert abs(float(mode["theta"]) - truth) < 4 * plain_sd, (float(mode["theta"]), truth)
    assert abs(float(mode["y_n_records"]) - 800) < 60  # the Poisson spread √800 ≈ 28 and the count's noise
    # N released alone with Laplace noise: sampled through the noise's normal score (no kink); else u = log(N / N̂)
    free = "y_n_records_noise" if LatentCount(stats).through_noise else "y_n_records_log_ratio"
    assert free in {v.name for v in model.free_RVs}


def test_the_privacy_flag_under_add_remove_is_noise_aware_without_a_warning():
    x = np.random.default_rng(3).uniform(*AGES, 200)
    with pm.Model() as model:
        pm.Normal("age", pm.Normal("mu", 50.0, 20.0), pm.HalfNormal("sigma", 20.0), observed=x)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PlugInLikelihoodWarning)
        private = pmdp.privatize_model(model, 1.0, bounds={"age": {"x": AGES}}, neighbouring="add_remove", rng=1)
    stats = private.statistics["age"]
    assert stats.centred and not stats.n_is_public
    free = {v.name for v in private.model.free_RVs}
    # N released on its own: given it, the two sums have the bivariate quadrature, with no mixing variables
    assert "age_n_records_noise" in free and "age_noise_mixing" not in free
    assert "age_n_records" in {v.name for v in private.model.deterministics}
    point = private.model.initial_point()
    assert point["age_n_records_noise"] == 0.0 and np.isfinite(private.model.compile_logp(mode="FAST_COMPILE")(point))
    from pymc_dp.routes.nutpie_cache import _shared_variables

    # the release's numbers are uniquely named shared inputs: nutpie's compile of one release serves the next
    assert _shared_variables([private.model.logp()]) is not None
    assert not any("plug-in" in a for a in private.ledger.entries[-1].assumptions)


def test_asked_for_by_hand_under_add_remove_the_family_alone_still_refuses_in_words():
    """The family's own likelihood takes N as a number; only observe_stats can add the latent count."""
    stats = pmdp.privatize(np.random.default_rng(0).poisson(2.0, 300), "poisson", 1.0, bounds={"upper": 10},
                           neighbouring="add_remove", rng=1)
    with pytest.raises(ValueError, match="observe_stats"):
        stats.family.noise_aware_loglik(stats.noisy, stats.n, stats.scale, "add_remove", {"mu": 2.0})


# The calibration of the add/remove release (200 releases, slow): test_release_design.py's
# test_the_noise_aware_posterior_of_a_centred_release_is_calibrated[add_remove].


def test_a_name_the_record_free_model_adds_that_the_model_already_has_is_refused_before_spending():
    ledger = pmdp.PrivacyLedger(neighbouring="add_remove")
    with pm.Model() as model:
        p = pm.Beta("p", 1.0, 1.0)
        pm.Normal("y_n_records_log_ratio", 0.0, 1.0)
        pm.Bernoulli("y", p, observed=np.array([0, 1, 1, 0] * 10))
    with pytest.raises(ValueError, match="already has a variable of that name.*nothing was spent"):
        pmdp.privatize_model(model, 1.0, ledger=ledger, rng=1)
    assert len(ledger) == 0


def test_the_laplace_quantile_of_a_normal_score_matches_scipy_in_both_tails():
    import pytensor.tensor as pt

    from pymc_dp.families._latent_count import laplace_score_quantile

    eta = np.array([-30.0, -8.0, -1.5, -1e-9, 0.0, 1e-9, 0.4, 3.0, 12.0, 30.0])
    got = laplace_score_quantile(pt.as_tensor(eta)).eval(mode="FAST_COMPILE")
    # F_L⁻¹(Φ(η)) = −log(2 Φ(−η)) for η ≥ 0, odd in η: SciPy's log survival function keeps the far tail
    want = np.sign(eta) * -(np.log(2.0) + st.norm.logsf(np.abs(eta)))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    e = pt.dscalar("e")
    slope = pt.grad(laplace_score_quantile(e), e)
    assert float(slope.eval({e: 0.0},
        mode="FAST_COMPILE")) == pytest.approx(np.sqrt(2.0 / np.pi), rel=1e-12)  # no kink at the mode


@pytest.mark.parametrize("released", [900.0, 12.0, -5.0])
def test_the_count_sampled_through_its_noise_has_the_flat_prior_times_laplace_posterior(released):
    """Written in the free variable v, log prior(v) − log |dN/dv| is the count's Laplace log density at N(v) plus one
    constant: the same posterior of N as a flat prior on (0, ∞) times the count's noise, for a large count, a small
    one (the bound N > 0 within a few noise scales) and a negative release; N(v) > 0 everywhere."""
    import pytensor.tensor as pt
    from types import SimpleNamespace

    from pymc_dp.families._noise_aware import RELEASE_NAME

    family = SimpleNamespace(count_released_alone=lambda how: True)
    design = SimpleNamespace(weights=np.array([0.3, 0.5]))  # the count weighted 0.5: N̂ = r / 0.5, s = b / 0.5
    stats = SimpleNamespace(family=family, neighbouring="add_remove", n_is_public=False, mechanism="laplace",
                            scale=4.0, design=design, released=np.array([1.0, released]), noisy=None)
    token = RELEASE_NAME.set("released_statistics_t")
    try:
        latent = LatentCount(stats)
        v = pt.dscalar("v")
        count = latent.count(v)
        log_prior, slope = latent.log_prior(v), pt.grad(count, v)
        values = np.linspace(-6.0, 6.0, 49)
        n, lp, dn = (np.array([float(t.eval({v: x},
            mode="FAST_COMPILE")) for x in values]) for t in (count, log_prior, slope))
    finally:
        RELEASE_NAME.reset(token)
    assert latent.through_noise and np.all(n > 0)
    laplace = -np.abs(released - 0.5 * n) / 4.0  # log Laplace(r − w·N; b), up to a constant
    offset = lp - np.log(np.abs(dn)) - laplace
    assert np.ptp(offset) < 1e-7, offset
