"""The privacy routes and ``pmdp.sample``, the one entry point that picks one.

Every route has the same shape (:mod:`pymc_dp.routes.base`): plan (validate the
whole request, price it; nothing spent) → reserve on the ledger → run → record what
ran → release through the one whitelist. Routes (``method=``):

* ``"laplace"`` (:mod:`pymc_dp.routes.laplace`, options :class:`Laplace`): the
  observed records' sufficient statistics are privatised once; every draw after that
  is free post-processing.
* ``"ops"`` (:mod:`pymc_dp.routes.ops`, options :class:`OPS`): a tempered posterior,
  one released draw per chain, sharing ε, valid for exact samples ("assumes
  convergence").
* ``"gibbs"`` (:mod:`pymc_dp.routes.gibbs`, options :class:`Gibbs`): private step
  methods, every update charged as it runs; the whole chain is released, no
  convergence assumed.
"""

from __future__ import annotations

from typing import Any

from ..accounting import PrivacyLedger
from .base import Ran, RoutePlan, check_request, execute
from .gibbs import GibbsPlan, GibbsRun, plan_gibbs, plan_gibbs_run
from .laplace import LaplacePlan, plan_laplace
from .ops import OPSPlan, OPSRun, plan_ops, plan_ops_run
from .options import OPS, SAA, Gibbs, Laplace, RouteOptions, options_for
from .saa import SAARun, plan_saa

__all__ = [
    "sample", "METHODS", "Laplace", "OPS", "Gibbs", "SAA", "SAARun", "plan_saa", "RouteOptions", "RoutePlan", "Ran", "execute",
    "OPSPlan", "plan_ops", "GibbsPlan", "plan_gibbs", "LaplacePlan", "OPSRun", "GibbsRun",
]

#: The planner of each route, by method name.
PLANNERS = {"laplace": plan_laplace, "ops": plan_ops_run, "gibbs": plan_gibbs_run, "saa": plan_saa}
#: The privacy routes ``sample`` implements.
METHODS = tuple(PLANNERS)


def sample(
    draws: int = 1000,
    *,
    epsilon: float | None = None,
    method: str | RouteOptions = "laplace",
    ledger: PrivacyLedger | None = None,
    neighbouring: str | None = None,
    model: Any = None,
    **keywords: Any,
) -> Any:
    """Sample a PyMC model privately and return the released trace with its ledger.

    Parameters
    ----------
    draws
        Draws per chain, passed to ``pm.sample``.
    epsilon
        ``"laplace"``: the total ε privatising the observed variables (the privacy
        flag; leave it out for a model built on :func:`pymc_dp.observe_stats`).
        ``"ops"``: the total, shared evenly by the ``chains × samples`` released
        posterior draws. ``"gibbs"``: the whole run's budget (T is chosen to spend it).
        On every route ``epsilon`` is what the call costs in total.
    method
        ``"laplace"`` (default), ``"ops"`` or ``"gibbs"``, or a route object
        (:class:`Laplace`, :class:`OPS`, :class:`Gibbs`) carrying its options.
    ledger
        Ledger to charge: the cost is reserved on it before anything is drawn.
    neighbouring
        ``"replace"`` (N public) or ``"add_remove"``; default: the ledger's, else replace.
    model
        The model (default: the ``with`` block's). Never modified.
    **keywords
        The route's options by name (the fields of its route object, e.g.
        ``bounds=``, ``truncate=``, ``samples=``, ``temperature=``), then anything
        ``pm.sample`` takes (``tune``, ``chains``, ``random_seed``, ``step``, ...).
        An option of another route, or a keyword ``pm.sample`` does not know, is
        refused before anything is spent.

    Returns
    -------
    xarray.DataTree or arviz.InferenceData
        ``pm.sample``'s trace type, released by :func:`pymc_dp.release` with its ledger.

    Raises
    ------
    ValueError
        For anything that cannot be proven private (the message says what to
        declare); always before anything is spent.
    pymc_dp.BudgetExceededError
        If the ledger's budget cannot pay for the run; nothing is drawn then.

    What each route releases and charges, also on failure: the threat-model page.
    """
    import pymc as pm

    model = pm.modelcontext(model)
    options = options_for(method, keywords)
    check_request(model, draws, keywords)
    plan = PLANNERS[options.method](model, draws, epsilon, options, ledger, neighbouring, keywords)
    return execute(plan)
