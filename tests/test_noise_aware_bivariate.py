"""The bivariate Normal ⊛ Laplace density (a Normal's released Σx and Σx²) as one Op.

Checked against an independent computation (adaptive quadrature of the exact
convolution over one noise coordinate), its gradient against finite differences, the
Op inside PyTensor against the kernel, the limits (tiny noise: the bivariate normal;
no correlation: the product of two normal-Laplace densities), and its use by the
Laplace route: no latent variables, the same compiled model for every release.
"""

from __future__ import annotations

import math

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from scipy import integrate, stats as sps
from scipy.special import erfcx

import pymc_dp as pmdp
from simple_models import normal_model
from pymc_dp.families._bivariate import _log_erfcx_and_slope, _normal_laplace, density
from pymc_dp.families._bivariate import bivariate_normal_laplace


def _normal_laplace_reference(d: float, s: float, b: float) -> float:
    """log density of Normal(0, s²) + Laplace(0, b) at d, by adaptive quadrature over the noise."""
    f = lambda y: math.exp(-abs(y) / b) / (2 * b) * sps.norm.pdf(d - y, 0.0, s)  # noqa: E731
    points = sorted({0.0, d})
    edges = [-np.inf, *points, np.inf]
    return math.log(sum(integrate.quad(f, a, c, limit=400, epsabs=0, epsrel=1e-12)[0] for a, c in zip(edges, edges[1:])))


def _reference(z: np.ndarray, m: np.ndarray, c: np.ndarray, b: float) -> float:
    """log p(z) by adaptive quadrature over the second noise value y₂, the first convolved exactly."""
    sd2 = math.sqrt(c[1, 1])
    slope, cond_var = c[0, 1] / c[1, 1], c[0, 0] - c[0, 1] ** 2 / c[1, 1]

    def f(y2: float) -> float:
        s2 = z[1] - y2
        first = float(_normal_laplace(z[0] - m[0] - slope * (s2 - m[1]), math.sqrt(cond_var), b)[0])
        return math.exp(-abs(y2) / b) / (2 * b) * sps.norm.pdf(s2, m[1], sd2) * math.exp(first)

    centre = z[1] - m[1]
    edges = [-np.inf, *sorted({0.0, centre, centre - 8 * sd2, centre + 8 * sd2}), np.inf]
    return math.log(sum(integrate.quad(f, a, c_, limit=500, epsabs=0, epsrel=1e-11)[0] for a, c_ in zip(edges, edges[1:])))


def _case(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    b = 10 ** rng.uniform(-2, 2)
    sd1, sd2 = 10 ** rng.uniform(-1.5, 1.5, 2) * b
    rho = rng.uniform(-0.99, 0.99)
    c = np.array([[sd1**2, rho * sd1 * sd2], [rho * sd1 * sd2, sd2**2]])
    m = rng.normal(0.0, 1.0, 2)
    z = m + rng.normal(0.0, 1.0, 2) * np.sqrt(np.diag(c)) + rng.laplace(0.0, b, 2) * rng.uniform(0.0, 3.0)
    return z, m, c, b


def test_log_erfcx_and_its_slope_match_scipy_across_the_branches():
    for x in [0.0, 0.3, 2.0, 10.0, 24.9, 25.1, 80.0, 1e4, 1e8]:
        value, slope = _log_erfcx_and_slope(x)
        assert value == pytest.approx(math.log(erfcx(x)), rel=1e-13, abs=1e-13)
        h = 1e-6 * max(1.0, x)
        numeric = (math.log(erfcx(x + h)) - math.log(erfcx(x - h))) / (2 * h) if x > h else None
        if numeric is not None:  # central differences: error O(h²) plus rounding ≈ 1e-16/h
            assert slope == pytest.approx(numeric, rel=1e-5, abs=1e-8)


@pytest.mark.parametrize("d, s, b", [(0.0, 1.0, 1.0), (4.0, 1e-6, 1.5), (1.0, 40.0, 1e-7), (-30.0, 2.0, 0.5),
                                     (300.0, 3.0, 20.0)])
def test_normal_laplace_kernel_matches_quadrature_at_the_extremes(d, s, b):
    value, d_d, d_s = _normal_laplace(d, s, b)
    if s / b > 1e4:  # noise negligible: the normal density (error O(b²/s²))
        assert value == pytest.approx(sps.norm(0.0, s).logpdf(d), abs=1e-9)
    elif s / b < 1e-4:  # normal part negligible: the Laplace density
        assert value == pytest.approx(sps.laplace(0.0, b).logpdf(d), abs=1e-6)
    else:
        assert value == pytest.approx(_normal_laplace_reference(d, s, b), abs=1e-9)
    for arg, got in ((0, d_d), (1, d_s)):
        h = 1e-6 * max(abs((d, s)[arg]), s)
        up, down = [list((d, s)) for _ in range(2)]
        up[arg] += h
        down[arg] -= h
        numeric = (_normal_laplace(*up, b)[0] - _normal_laplace(*down, b)[0]) / (2 * h)
        assert got == pytest.approx(numeric, rel=1e-5, abs=1e-7 / s)


def test_density_matches_adaptive_quadrature_on_random_cases():
    rng = np.random.default_rng(20261126)
    errors = []
    for _ in range(60):
        z, m, c, b = _case(rng)
        errors.append(abs(density(z, m, c, b)[0] - _reference(z, m, c, b)))
    # The trapezoid rule in log u converges geometrically (module docstring): typically
    # ~1e-8; 1e-3 in a log density is far below what any posterior could show.
    assert np.median(errors) < 1e-6 and max(errors) < 1e-3


def test_gradient_matches_finite_differences():
    rng = np.random.default_rng(7)
    for _ in range(40):
        z, m, c, b = _case(rng)
        _, d_mean, d_cov = density(z, m, c, b)
        f = lambda mm, cc: density(z, mm, cc, b)[0]  # noqa: E731
        for i in range(2):
            h = 1e-6 * math.sqrt(c[i, i])
            e = np.eye(2)[i] * h
            numeric = (f(m + e, c) - f(m - e, c)) / (2 * h)
            # scaled by the coordinate's sd: errors of central differences ≈ 1e-9 there
            assert abs(numeric - d_mean[i]) * math.sqrt(c[i, i]) < 1e-6
        for i, j in ((0, 0), (0, 1), (1, 1)):
            h = 1e-6 * math.sqrt(c[i, i] * c[j, j])
            e = np.zeros((2, 2))
            e[i, j] = h  # the density reads C₁₂ from the upper triangle only
            numeric = (f(m, c + e) - f(m, c - e)) / (2 * h)
            assert abs(numeric - d_cov[i, j]) * math.sqrt(c[i, i] * c[j, j]) < 1e-6


def test_limits_uncorrelated_is_a_product_and_tiny_noise_is_the_bivariate_normal():
    z, m = np.array([3.0, -2.0]), np.array([1.0, 0.5])
    c = np.diag([4.0, 9.0])
    b = 1.7
    product = _normal_laplace(z[0] - m[0], 2.0, b)[0] + _normal_laplace(z[1] - m[1], 3.0, b)[0]
    # the second factor is the quadrature's (exact in the first): its documented accuracy, ~1e-8 here
    assert density(z, m, c, b)[0] == pytest.approx(product, abs=1e-6)
    c = np.array([[4.0, 3.0], [3.0, 9.0]])
    exact = sps.multivariate_normal(m, c).logpdf(z)
    assert density(z, m, c, 1e-6)[0] == pytest.approx(exact, abs=1e-5)


def test_op_in_a_pytensor_graph_gives_the_kernel_value_and_gradient():
    mu, sigma = pt.dscalar("mu"), pt.dscalar("sigma")
    var = sigma**2
    mean = 50 * pt.stack([mu, mu**2 + var])
    cov = 50 * pt.stack([pt.stack([var, 2 * mu * var]), pt.stack([2 * mu * var, 2 * var**2 + 4 * mu**2 * var])])
    z = np.array([40.0, 130.0])
    logp = bivariate_normal_laplace(z, mean, cov, 12.0)
    f = pytensor.function([mu, sigma], [logp, *pytensor.grad(logp, [mu, sigma])], mode="FAST_COMPILE")
    value, g_mu, g_sigma = f(0.7, 1.3)
    v = 1.69
    m_np = 50 * np.array([0.7, 0.49 + v])
    c_np = 50 * np.array([[v, 1.4 * v], [1.4 * v, 2 * v * v + 4 * 0.49 * v]])
    # PyTensor's and NumPy's moments differ in the last bits, which may move a node across the
    # pruning threshold: the kernel's documented tolerance (69·e^−20 ≈ 1.4e-7), not 1e-12
    assert value == pytest.approx(density(z, m_np, c_np, 12.0)[0], abs=2e-7)
    g = pytensor.function([mu, sigma], logp, mode="FAST_COMPILE")
    h = 1e-6
    assert g_mu == pytest.approx((g(0.7 + h, 1.3) - g(0.7 - h, 1.3)) / (2 * h), rel=1e-5)
    assert g_sigma == pytest.approx((g(0.7, 1.3 + h) - g(0.7, 1.3 - h)) / (2 * h), rel=1e-5)
    with pytest.raises(Exception, match="second derivatives|not implemented"):
        pytensor.grad(pytensor.grad(logp, mu), mu)


_model = normal_model


def test_released_statistics_are_shared_inputs_so_one_graph_serves_every_release():
    """Two releases of the same model differ only in a shared vector's value, never in the graph's constants."""
    from pytensor.graph.traversal import graph_inputs
    from pytensor.compile.sharedvalue import SharedVariable

    x = np.random.default_rng(3).normal(1.0, 1.5, 400)
    released = [pmdp.privatize_model(_model(x), 1.0, bounds={"y": {"x": (-10.0, 10.0)}}, rng=seed) for seed in (1, 2)]
    values = []
    for private in released:
        assert sorted(v.name for v in private.model.free_RVs) == ["mu", "sigma"]
        shared = {v.name: v for v in graph_inputs([private.model.logp()]) if isinstance(v, SharedVariable)}
        # the released numbers and the release's constants (N, scale, the centre the records were shifted by,
        # weights), each named for 'y'
        assert sorted(shared) == ["release_design_y_scalars", "release_design_y_shift", "release_design_y_weights",
                                  "released_statistics_y"]
        values.append(shared["released_statistics_y"].get_value())
        assert not set(shared) & set(private.model.named_vars)  # not model data: no constant_data
    stats = released[0].statistics["y"]
    np.testing.assert_allclose(values[0], np.ravel(stats.released) / stats.scale)
    assert not np.allclose(values[0], values[1])
    point = {"mu": 1.0, "sigma_log__": math.log(1.5)}
    assert np.isfinite(released[0].model.compile_logp(mode="FAST_COMPILE")(point))


def test_lumping_and_pruning_stay_within_their_stated_error_of_the_full_69_node_sum():
    """The kernel evaluates the flat low end of the integrand once and skips negligible nodes.

    Against the plain trapezoid sum over all 69 nodes (each node by the same ``_node``), on
    extreme cases: noise and signal scales over six decades each, correlations within 1e-6
    of ±1, releases up to ten noise scales and five signal sds off. The stated bounds:
    pruning ≤ 69·e^−20 ≈ 1.4e-7 and lumping of order e^−16 ≈ 1e-7, in the log density.
    """
    from scipy.special import logsumexp

    from pymc_dp.families._bivariate import _LOG_WEIGHTS, _NODES, _node

    rng = np.random.default_rng(11)
    worst_value = worst_grad = 0.0
    for _ in range(1500):
        b = 10 ** rng.uniform(-3, 3)
        sd = 10 ** rng.uniform(-3, 3, 2) * b
        rho = rng.choice([-1.0, 1.0]) * (1 - 10 ** rng.uniform(-6, 0))
        c = np.array([[sd[0] ** 2, rho * sd[0] * sd[1]], [rho * sd[0] * sd[1], sd[1] ** 2]])
        m = rng.normal(0.0, 1.0, 2)
        z = m + rng.normal(0.0, 1.0, 2) * sd * rng.uniform(0, 5) + rng.laplace(0.0, b, 2) * rng.uniform(0, 10)
        floor = (1e-10 * b) ** 2
        terms = np.array([_node(u, w, z[0], m[0], z[1] - m[1], c[0, 0], c[0, 1], c[1, 1], b, floor)
                          for u, w in zip(_NODES, _LOG_WEIGHTS)])
        full = logsumexp(terms[:, 0])
        weights = np.exp(terms[:, 0] - full)
        full_grad = weights @ terms[:, 1:]
        value, d_mean, d_cov = density(z, m, c, b)
        got = np.array([*d_mean, d_cov[0, 0], d_cov[0, 1], d_cov[1, 1]])
        scales = np.array([sd[0], sd[1], sd[0] ** 2, sd[0] * sd[1], sd[1] ** 2])
        worst_value = max(worst_value, abs(value - full))
        worst_grad = max(worst_grad, np.max(np.abs(got - full_grad) * scales) / (1 + np.max(np.abs(full_grad) * scales)))
    assert worst_value < 3e-7
    assert worst_grad < 1e-6


@pytest.mark.parametrize("c22", [0.0, 1e-300])
def test_a_degenerate_second_moment_is_evaluated_not_raised(c22):
    """NUTS can step to σ → 0 (C₂₂ = 0 after underflow): the density is evaluated on the full rule."""
    from scipy.special import logsumexp

    from pymc_dp.families._bivariate import _LOG_WEIGHTS, _NODES, _node

    z, m, b = np.array([3.0, 40.0]), np.array([2.0, 35.0]), 2.0
    c = np.array([[4.0, 0.0], [0.0, c22]])
    value = density(z, m, c, b)[0]
    terms = [_node(u, w, z[0], m[0], z[1] - m[1], 4.0, 0.0, c22, b, (1e-10 * b) ** 2)[0]
             for u, w in zip(_NODES, _LOG_WEIGHTS)]
    assert np.isfinite(value) and value == pytest.approx(logsumexp(terms), abs=3e-7)
