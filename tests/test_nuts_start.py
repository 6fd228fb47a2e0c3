"""PyMC's NUTS on a record-free model with its mass matrix started from the curvature at the mode (nuts_start)."""

import warnings

import numpy as np
import pymc as pm
import pytest

from pymc_dp.routes.nuts_start import curvature_scaled


def _scales_apart() -> pm.Model:
    """Two parameters whose posterior s.d. differ a millionfold (0.01 and 100) and a positive one (log scale)."""
    with pm.Model() as model:
        pm.Normal("narrow", 3.0, 0.01)
        pm.Normal("wide", -50.0, 100.0)
        pm.LogNormal("scale", 0.0, 0.5)
    return model


def test_the_mass_matrix_starts_at_the_posteriors_variances_and_the_chains_start_apart():
    kwargs = curvature_scaled(_scales_apart(), {"chains": 3, "random_seed": 1, "target_accept": 0.9})
    step = kwargs["step"]
    # a Gaussian's Hessian is exact by central differences: 1e-3 relative covers their rounding
    np.testing.assert_allclose(step.potential._var, [1e-4, 1e4, 0.25], rtol=1e-3)
    assert step.target_accept == 0.9 and "target_accept" not in kwargs  # given to the step, not twice
    starts = kwargs["initvals"]
    assert len(starts) == 3 and len({float(s["narrow"]) for s in starts}) == 3
    # each start is the mode moved by a draw of the posterior's own scale: within 5 s.d. of it
    assert all(abs(float(s["narrow"]) - 3.0) < 0.05 and float(s["scale"]) > 0 for s in starts)


@pytest.mark.parametrize("chosen", [{"init": "adapt_full"}, {"step": "mine"}, {"nuts_sampler": "numpyro"},
                                    {"initvals": {"wide": 0.0}}])
def test_what_the_user_chose_is_kept(chosen):
    assert curvature_scaled(_scales_apart(), chosen) == chosen


def test_sampling_with_it_gives_the_posterior():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = _scales_apart()
        kwargs = curvature_scaled(model, {"chains": 2, "cores": 1, "random_seed": 2, "progressbar": False,
                                          "compute_convergence_checks": False})
        trace = pm.sample(400, tune=200, model=model, **kwargs)
    narrow = np.asarray(trace.posterior["narrow"]).ravel()
    # 800 draws of a N(3, 0.01): the mean's s.e. is about 0.0004 (ESS ≥ 600 for a Gaussian), 0.002 is 5 s.e.
    assert abs(narrow.mean() - 3.0) < 0.002 and 0.008 < narrow.std() < 0.012


def test_a_mode_at_a_funnels_neck_leaves_pymcs_own_start():
    """A centred hierarchy whose groups say little: its density is unbounded as sigma_a goes to 0 (the groups'
    values collapsing onto mu_a), L-BFGS runs there and the curvature gives variances beyond [1e-12, 1e6]. Chains
    started from such a mode ran sigma_a to 1e124 (the radon model at 125 records a county, eps = 1); PyMC's own
    start is kept instead."""
    with pm.Model() as model:
        mu_a, sigma_a = pm.Normal("mu_a", 0.0, 5.0), pm.Exponential("sigma_a", 1.0)
        a = pm.Normal("a", mu_a, sigma_a, shape=8)
        pm.Normal("y", a, 30.0, observed=np.linspace(-1.0, 1.0, 8))  # one noisy measurement a group
    asked = {"chains": 2, "random_seed": 1}
    assert curvature_scaled(model, dict(asked)) == asked
