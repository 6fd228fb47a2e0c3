"""The war-logs HMM as a PyMC model sampled by pm.sample with the HMM Gibbs steps."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest

from pymc_dp import _compat
from pymc_dp.examples.warlogs import data, hmm
from pymc_dp.examples.warlogs import model as warlogs_model
from pymc_dp.examples.warlogs.steps import DirichletCountsGibbs


pytestmark = pytest.mark.usefixtures("quiet_pymc")


def test_pm_sample_with_the_hmm_steps_recovers_the_regimes():
    logs = data.generate("small", seed=0)
    counts = data.feature_counts(logs)
    idata = warlogs_model.fit_hmm(counts, 2, draws=60, tune=60, random_seed=4)
    # No counts anywhere in the trace (PyMC 6 adds an empty observed_data group).
    with_data = {g for g in _compat.group_names(idata) if _compat.get_group(idata, g).data_vars}
    assert with_data <= {"posterior", "sample_stats"}
    states = idata.posterior["states"].values[0]
    assert states.shape == (60, 3, 72)
    ari = np.mean([hmm.adjusted_rand_index(s, logs.true_states) for s in states[::6]])
    assert ari >= 0.95
    theta = idata.posterior["theta_type"].values[0]
    np.testing.assert_allclose(theta.sum(axis=-1), 1.0, rtol=1e-12)
    # ArviZ reads it like any trace.
    import arviz as az

    assert az.summary(idata, var_names=["transitions"]).shape[0] == 4


def test_model_logp_is_finite_at_a_sampled_point():
    counts = data.feature_counts(data.generate("small", seed=1))
    model = warlogs_model.hmm_model(counts, 3)
    point = model.initial_point()
    assert np.isfinite(model.compile_logp(mode="FAST_COMPILE")(point))


def test_gibbs_steps_refuse_transformed_dirichlets():
    counts = data.feature_counts(data.generate("small", seed=1))
    with pm.Model() as model:
        theta = pm.Dirichlet("theta", a=np.ones((2, 8)))
        states = pm.Categorical("states", p=[0.5, 0.5], shape=(3, 72))
    with pytest.raises(ValueError, match="default_transform=None"):
        DirichletCountsGibbs(theta, counts[0], states, 1.0, model=model)
