"""PyMC's step-method contract, for every step method of the project.

A step returns ``(point, stats)`` with exactly one stats dict per step, whose keys
are the step's declared ``stats_dtypes_shapes``. PyMC's progress bar zips the stats
against the steps (``strict=True`` from 5.28), ``CompoundStep`` merges them by
position and the trace backends allocate them from the declaration: a step that
returns ``[]`` or an undeclared stat breaks ``pm.sample`` with the progress bar on
(which is how users run it), whatever the tests did with it off.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest

import pymc_dp as pmdp
from pymc_dp.examples.warlogs.model import hmm_model, hmm_steps

RECORDS = np.r_[np.ones(6), np.zeros(34)].astype(np.int8)


def _beta_bernoulli():
    with pm.Model() as model:
        p = pm.Beta("p", 1, 1)
        pm.Bernoulli("y", p, observed=RECORDS)
    return pmdp.truncate(model, {"p": (0.2, 0.8)})


def _hmm():
    rng = np.random.default_rng(0)
    counts = [rng.poisson(3.0, size=(2, 6, k)).astype(float) for k in (3, 4)]
    model = hmm_model(counts, 2, features=("a", "b"))
    return model, hmm_steps(model, counts, features=("a", "b"))


def _private_steps():
    model = _beta_bernoulli()
    with model:
        return model, [pmdp.PrivateGibbs(["p"], temperature=4.0)], [pmdp.PrivateMetropolis(["p"], temperature=4.0)]


def _all_steps():
    model, gibbs, barker = _private_steps()
    hmm, steps = _hmm()
    return [(model, gibbs), (model, barker), (hmm, steps)]


@pytest.mark.parametrize("case", range(3), ids=["PrivateGibbs", "PrivateMetropolis", "HMM steps"])
def test_every_step_returns_one_declared_stats_dict(case):
    model, steps = _all_steps()[case]
    point = model.initial_point()
    for step in steps:
        new, stats = step.step(dict(point))
        assert isinstance(stats, list) and len(stats) == 1, f"{type(step).__name__} returned {stats!r}"
        assert set(stats[0]) == set(step.stats_dtypes_shapes), type(step).__name__
        assert set(new) == set(point)


@pytest.mark.parametrize("case", range(3), ids=["PrivateGibbs", "PrivateMetropolis", "HMM steps"])
def test_pm_sample_with_the_progress_bar_on(case, quiet_pymc):
    model, steps = _all_steps()[case]
    with model:
        idata = pm.sample(5, tune=5, chains=1, cores=1, step=steps, random_seed=1, progressbar=True,
                          compute_convergence_checks=False)
    assert idata.posterior.sizes["draw"] == 5
    for step in steps:
        for name in step.stats_dtypes_shapes:
            assert any(v == name or v.endswith(f"__{name}") for v in idata.sample_stats.data_vars), name
