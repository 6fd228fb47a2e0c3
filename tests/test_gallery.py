"""The privacy flag on twelve PyMC example-gallery models, written as the gallery writes them.

Each model (``gallery_models.py``: coords and dims, ``pm.Data``, ``X @ beta``, ``a[idx]``,
``initval``, a mixture, an AR(1), a switchpoint, per-record latents) goes through
``pmdp.sample(epsilon=100, **its declarations)`` with the route chosen by ``method="auto"``,
and its released mean is compared with plain ``pm.sample`` on the raw records.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pymc as pm
import pytest

import pymc_dp as pmdp
from pymc_dp import _compat

import gallery_models as G

SAMPLE = dict(draws=300, tune=300, chains=2, cores=1, progressbar=False, compute_convergence_checks=False)
SAMPLES_PER_CHAIN = 10


def _shared_parameters(model):
    from pymc_dp.routes.saa import _record_count

    n = _record_count(model)
    return [rv.name for rv in model.free_RVs if n not in tuple(int(s) for s in rv.shape.eval(mode="FAST_COMPILE"))]


def _coordinates(trace, names):
    post = _compat.get_group(trace, "posterior")
    out = {}
    for name in names:
        values = np.asarray(post[name].values)
        flat = values.reshape(values.shape[0] * values.shape[1], -1)
        out.update({f"{name}[{i}]": flat[:, i] for i in range(flat.shape[1])})
    return out


@pytest.mark.parametrize("name", list(G.MODELS))
def test_every_gallery_model_runs_as_written_and_releases_what_its_route_promises(name):
    """At ε = 100: OPS's released draws are draws of the clipped posterior tempered to the ledger's T
    (compared with plain PyMC sampling that tempered model); the Laplace route's posterior is plain
    PyMC's up to negligible noise. How far each is from plain PyMC on the raw records is measured by
    benchmarks/gallery.py and tabulated in the docs."""
    model = G.MODELS[name]()
    declared = dict(G.DECLARATIONS[name])
    if "loglik_clip" in declared:
        declared["samples"] = SAMPLES_PER_CHAIN
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        released = pmdp.sample(epsilon=100.0, model=model, random_seed=3, **SAMPLE, **declared)
    assert set(_compat.group_names(released)) <= {"posterior", "sample_stats", "privacy"}
    ledger = pmdp.ledger(released)
    assert ledger.total().epsilon <= 100.0 * (1 + 1e-9)
    entry = ledger.entries[0]
    route = entry.details["route"]
    reference_model = G.MODELS[name]()
    if route == "ops":
        reference_model = pmdp.temper(pmdp.clip_loglik(reference_model, *declared["loglik_clip"]),
                                      entry.details["temperature"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with reference_model:
            reference = pm.sample(random_seed=4, **{**SAMPLE, "draws": 1000})
    names = _shared_parameters(model)
    ours, theirs = _coordinates(released, names), _coordinates(reference, names)
    # OPS: the mean of q exact draws has standard error sd/√q; 4 of them, plus 0.15 sd for the
    # reference's own MCMC error (2000 draws), fail with probability < 1e-3 per coordinate for a
    # correct sampler. Laplace at ε = 100: the released posterior is plain PyMC's within 1 sd.
    tolerance = 4 / math.sqrt(entry.count) + 0.15 if route == "ops" else 1.0
    for key, values in theirs.items():
        distance = abs(ours[key].mean() - values.mean()) / values.std()
        assert distance < tolerance, (name, route, key, distance, tolerance)


def test_missing_values_in_a_gallery_model_are_neither_refused_nor_imputed():
    # Refusing would say that some value is missing; imputing would release how many. PyMC's imputation is undone
    # and each missing count's clipped log-likelihood term is the constant lower clip: the call spends what it
    # spends on the complete data and releases the same variables and shapes.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyMC's ImputationWarning
        model = G.coal_mining_switchpoint(missing=True)
    short = {**SAMPLE, "draws": 30, "tune": 30, "chains": 1}
    ours, theirs = pmdp.PrivacyLedger(), pmdp.PrivacyLedger()
    got = pmdp.sample(epsilon=1.0, model=model, ledger=ours, loglik_clip=(-10, 0), random_seed=1, **short)
    want = pmdp.sample(epsilon=1.0, model=G.coal_mining_switchpoint(), ledger=theirs, loglik_clip=(-10, 0),
                       random_seed=1, **short)
    assert [(e.mechanism, e.epsilon, e.count, e.touched, e.details.get("route")) for e in ours.entries] == [
        (e.mechanism, e.epsilon, e.count, e.touched, e.details.get("route")) for e in theirs.entries]
    post, ref = _compat.get_group(got, "posterior"), _compat.get_group(want, "posterior")
    assert {n: post[n].shape for n in post.data_vars} == {n: ref[n].shape for n in ref.data_vars}
    assert not any("unobserved" in n or "observed" in n for n in post.data_vars)
