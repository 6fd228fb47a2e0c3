"""PyMC's distribution catalogue through the privacy flag: every likelihood runs with a clip, or is refused.

``likelihood_models.py`` writes each distribution as an observed variable in regression form
(coords and dims, ``pm.Data``). Every case is planned here (nothing sampled: the record check,
the route, the price); one of each kind of construct the record check walks through is run end to end in
``make test``, one of each further kind (a multivariate row, a mixture, a hurdle, a truncation, a time
series) in the slow suite, and all of them by ``make test-release``; the released draws must land within
2 plain-posterior s.d. of plain PyMC on the same records.
"""

from __future__ import annotations

import warnings

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

import pymc_dp as pmdp
from pymc_dp.routes import _plan

import likelihood_models as L

#: Run end to end in ``make test`` (one per kind of construct the record check walks through).
SAMPLED = ("ZeroInflatedPoisson", "OrderedLogistic", "CensoredWeibull", "CustomDist(dist)")


@pytest.mark.parametrize("name", list(L.CASES))
def test_every_catalogue_likelihood_is_taken_with_a_clip_or_refused_before_spending(name):
    case = L.CASES[name]
    model = L.build(name)
    ledger = pmdp.PrivacyLedger(budget=pmdp.Budget(epsilon=100.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if case.refused:
            with pytest.raises(ValueError, match=case.refused):
                _plan(model, 300, 100.0, "auto", ledger, None, {"loglik_clip": case.clip})
            assert ledger.total().epsilon == 0.0
            return
        plan = _plan(model, 300, 100.0, "auto", ledger, None, {"loglik_clip": case.clip})
    assert plan.route == "ops"
    assert ledger.total().epsilon == 0.0  # planning spends nothing


def _plans_with_nothing_declared(name):
    """Planned with nothing declared (ε = 1): the missing numbers are to be chosen privately (data ranges where a
    family or GLM route takes the likelihood, a log-likelihood clip where only ops does, or where ranges would be
    unreliable or below the measurements route's crossover), or a discrete likelihood's public clip; nothing
    spent."""
    from pymc_dp.routes.clip_selection import DISCRETE_ASSUMPTION
    from pymc_dp.routes.selection import SelectionPlan

    ledger = pmdp.PrivacyLedger(budget=pmdp.Budget(epsilon=1.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = _plan(L.build(name), 300, 1.0, "auto", ledger, None, {})
    assert (isinstance(plan, SelectionPlan) and plan.requests) or DISCRETE_ASSUMPTION in plan.assumptions, plan
    assert sum(e.epsilon * e.count for e in plan.entries) == pytest.approx(1.0)
    assert ledger.total().epsilon == 0.0
    return plan


def test_a_likelihood_without_a_derivative_plans_on_ops_with_its_clip_chosen():
    """Rice's and VonMises' densities hold a Bessel function PyTensor cannot differentiate: the measurements route
    refuses them (a ValueError naming the derivative, not PyTensor's MethodNotDefined escaping the planner), so with
    nothing declared the clip is what is chosen."""
    for name in ("Rice", "VonMises"):
        plan = _plans_with_nothing_declared(name)
        assert plan.route == "ops" and [r.what for r in plan.requests] == ["loglik_clip"]
    with pytest.raises(ValueError, match="no derivative in PyTensor"):
        _plan(L.build("Rice"), 300, 1.0, "measurements", None, None, {"bounds": {"y": {"x": (-3, 3), "y": (0, 9)}}})


@pytest.mark.release_check
@pytest.mark.parametrize("name", list(L.CASES))
def test_every_catalogue_likelihood_plans_with_nothing_declared(name):
    _plans_with_nothing_declared(name)


def _check_lands_near_plain_pymc(name):
    run = L.release_beside_plain(name)
    assert run["epsilon"] <= 100.0 * (1 + 1e-9)
    assert run["temperature"] == 1.0, "the catalogue's clips buy exact (T = 1) draws at ε = 100"
    assert not run["missing"], run["missing"]
    # The released mean of q exact posterior draws is off plain PyMC's by sd/√q (q ≥ 4 here: clips
    # of width ≤ 12.5 at ε = 100), plus the reference's MCMC error (2000 draws, ≤ 0.1 sd): 2 sd is
    # more than 3.5 standard errors, a chance of < 5e-4 per coordinate for a correct release.
    assert run["draws"] >= 4
    for key, distance in run["distance"].items():
        assert distance < 2.0, (name, key, distance)


@pytest.mark.parametrize("name", SAMPLED)
def test_a_sample_of_the_catalogue_lands_near_plain_pymc(name):
    _check_lands_near_plain_pymc(name)


#: Run end to end in the slow suite (CI): one of each further kind.
SAMPLED_SLOW = ("MvNormal", "Mixture", "HurdlePoisson", "Truncated", "AR")


@pytest.mark.slow
@pytest.mark.parametrize("name", SAMPLED_SLOW)
def test_a_further_sample_of_the_catalogue_lands_near_plain_pymc(name):
    _check_lands_near_plain_pymc(name)


@pytest.mark.release_check
@pytest.mark.parametrize("name", [n for n, c in L.CASES.items()
                                  if not c.refused and n not in SAMPLED and n not in SAMPLED_SLOW])
def test_the_whole_catalogue_lands_near_plain_pymc(name):
    _check_lands_near_plain_pymc(name)


X = np.random.default_rng(4).normal(size=(60, 2))


Y = np.random.default_rng(5).normal(size=60)


def _moved_terms(build, change):
    """How many clipped terms of other records move when record 3's row changes (the empirical check)."""
    from pymc_dp.model.loglik_clip import clip_loglik

    def terms(data):
        with pm.Model() as model:
            build(data)
        clipped = clip_loglik(model, -10.0, 1.0)
        (term,) = clipped.logp(vars=clipped.observed_RVs, sum=False, jacobian=False)
        fn = clipped.compile_fn(term, inputs=clipped.value_vars, on_unused_input="ignore", mode="FAST_COMPILE")
        return np.asarray(fn({k: v + 0.4 for k, v in clipped.initial_point().items()}))

    before, after = terms(X), terms(change(X))
    moved = ~np.isclose(before, after)
    moved[3] = False
    return int(moved.sum())


#: Records mixed in ways an earlier walk missed; each truly moves other records' terms.
HIDDEN = {
    "a sort along the records (axis=0)": lambda X: pm.Normal(
        "y", pm.Normal("b") * pt.sort(pt.as_tensor(X), axis=0)[:, 0], 1.0, observed=Y),
    "ranks along the records (argsort, axis=0)": lambda X: pm.Normal(
        "y", pm.Normal("b") * pt.argsort(pt.as_tensor(X), axis=0)[:, 0], 1.0, observed=Y),
    "records closed over by an OpFromGraph": lambda X: pm.Normal(
        "y", _closure(X)(pm.Normal("m")), 1.0, observed=Y),
    "a group-dim container holding one value per record": lambda X: pm.Normal(
        "y", pm.Normal("m") + pm.Data("g", X[:, 0], dims="group").cumsum(), 1.0, observed=Y),
}


def _closure(X):
    from pytensor.compile.builders import OpFromGraph

    m = pt.scalar("m")
    return OpFromGraph([m], [m + pt.as_tensor(X[:, 0]).cumsum()])


@pytest.mark.parametrize("name", HIDDEN)
def test_records_mixed_behind_an_axis_an_inner_graph_or_a_declared_dim_are_refused(name):
    def build(data):
        pm.modelcontext(None).add_coord("group", length=5)
        HIDDEN[name](data)

    def change(data):
        data = data.copy()
        data[3] = [40.0, -40.0]
        return data

    assert _moved_terms(build, change) > 0  # the construct does mix records: accepting it would be a leak
    with pm.Model() as model:
        build(X)
    with pytest.raises(ValueError, match="other records' terms|not one row per record"):
        pmdp.loglik_sensitivity(pmdp.clip_loglik(model, -10.0, 1.0))


def test_under_add_remove_no_refusal_quotes_a_length_that_could_be_the_number_of_records():
    n = len(Y)
    cases = [lambda: pm.Normal("y", pm.Normal("b") * pt.as_tensor(np.r_[X[:, 0], 0.0])[1:], 1.0, observed=Y),
             lambda: pm.Normal("y", pm.Normal("m", pt.as_tensor(X[:, 0]).mean()), 1.0, observed=Y)]
    for build in cases:
        with pm.Model() as model:
            build()
        with pytest.raises(ValueError) as caught:
            pmdp.loglik_sensitivity(pmdp.clip_loglik(model, -10.0, 1.0), neighbouring="add_remove")
        assert str(n) not in str(caught.value) and str(n + 1) not in str(caught.value), str(caught.value)


@pytest.mark.parametrize("name", ["Categorical", "OrderedLogistic", "MvNormal", "LogitNormal"])
def test_under_add_remove_catalogue_likelihoods_sized_by_the_number_of_records_are_planned(name):
    """PyMC writes these densities with the records' count as a shape (an allocation, an identity index): one more
    record is one more term, so they are planned under add/remove; a term whose value reads the count is not."""
    ledger = pmdp.PrivacyLedger(budget=pmdp.Budget(epsilon=100.0), neighbouring="add_remove")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = _plan(L.build(name), 300, 100.0, "auto", ledger, None, {"loglik_clip": L.CASES[name].clip})
    assert plan.route == "ops"


#: Terms whose value reads the number of records (refused under add/remove) and one only sized by it (accepted).
COUNTED = {
    "log N": (lambda x: pt.log(x.shape[0]), "the number of records"),
    "a sum of ones(N)": (lambda x: pt.ones(x.shape[0]).sum(), "a reduction over the records"),
    "a cumulative sum of ones(N)": (lambda x: pt.cumsum(pt.ones(x.shape[0])), "along the records"),
    "arange(N) as a value": (lambda x: pt.arange(x.shape[0]), "the number of records"),
    "zeros(N), a size only": (lambda x: pt.zeros(x.shape[0]), None),
}


@pytest.mark.parametrize("name", COUNTED)
def test_under_add_remove_the_number_of_records_may_size_a_term_but_not_value_it(name):
    term, refusal = COUNTED[name]
    with pm.Model() as model:
        x = pm.Data("x", X[:, 0])
        pm.Normal("y", pm.Normal("b") * x + term(x), 1.0, observed=Y)
    clipped = pmdp.clip_loglik(model, -10.0, 1.0)
    assert pmdp.loglik_sensitivity(clipped).total == 11.0  # N public: all of them are row-local
    if refusal is None:
        assert pmdp.loglik_sensitivity(clipped, neighbouring="add_remove").total == 5.5
        return
    with pytest.raises(ValueError, match=refusal):
        pmdp.loglik_sensitivity(clipped, neighbouring="add_remove")
