"""The privacy routes and ``pmdp.sample``, the one entry point that picks one.

Every route has the same shape (:mod:`pymc_dp.routes.base`): plan (validate the
whole request, price it; nothing spent) → reserve on the ledger → run → record what
ran → release through the one whitelist. Routes (``method=``):

* ``"laplace"`` (:mod:`pymc_dp.routes.laplace`, options :class:`Laplace`): the
  observed records' sufficient statistics are privatised once; every draw after that
  is free post-processing.
* ``"measurements"`` (:mod:`pymc_dp.routes.measurements`, options
  :class:`Measurements`): a logistic regression's noisy gradients released once, the
  noise-aware posterior sampled for free ([WM10] §4.1).
* ``"ops"`` (:mod:`pymc_dp.routes.ops`, options :class:`OPS`): a tempered posterior,
  one released draw per chain, sharing ε, valid for exact samples ("assumes
  convergence").
* ``"gibbs"`` (:mod:`pymc_dp.routes.gibbs`, options :class:`Gibbs`): private step
  methods, every update charged as it runs; the whole chain is released, no
  convergence assumed.
* ``"saa"`` (:mod:`pymc_dp.routes.saa`, options :class:`SAA`): subsample and
  aggregate — any model as written, fit per block, a private aggregate released.
* ``"ais"`` (:mod:`pymc_dp.routes.ais`, options :class:`AIS`): private annealed
  importance sampling — particles moved from the prior by Barker steps at rising
  inverse temperatures, each charged, their importance weights released privately.
  Never chosen by ``"auto"``.

``"auto"`` (the default, :mod:`pymc_dp.routes.chooser`) picks the most accurate of
them that takes the model and its declarations.
"""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any, Mapping

from ..accounting import PrivacyLedger, resolve_ledger
from ..accounting.validation import check_delta, check_epsilon
from ..model.missing import restore_missing
from ..trace.release import group_level_assumption
from .base import Ran, RoutePlan, check_plan_keywords, check_request, execute, public_names, quiet_logs
from .gibbs import GibbsPlan, GibbsRun, plan_gibbs, plan_gibbs_run
from .laplace import LaplacePlan, plan_laplace
from .measurements import MeasurementsPlan, plan_measurements
from .ops import OPSPlan, OPSRun, plan_ops, plan_ops_run
from .chooser import AUTO_ORDER, ChosenRoute, choose_route
from .options import AIS, OPS, ROUTE_OPTIONS, SAA, Gibbs, Laplace, Measurements, RouteOptions, options_for
from .saa import SAARun, plan_saa
from .ais import AISRun, plan_ais
from .clip_selection import DISCRETE_ASSUMPTION, missing_clip
from .selection import (Selection, below_measurements_crossover, crossover_reason, missing_bounds, plan_with_selection,
                        resolve_selection, selection_strain)

__all__ = [
    "sample", "METHODS", "Selection", "AIS", "AISRun", "plan_ais", "Laplace", "Measurements", "MeasurementsPlan", "plan_measurements", "OPS", "Gibbs", "SAA", "SAARun", "plan_saa", "RouteOptions", "RoutePlan", "Ran", "execute",
    "OPSPlan", "plan_ops", "GibbsPlan", "plan_gibbs", "LaplacePlan", "OPSRun", "GibbsRun",
]

#: The planner of each route, by method name.
PLANNERS = {
    "laplace": plan_laplace, "measurements": plan_measurements, "ops": plan_ops_run, "gibbs": plan_gibbs_run,
    "saa": plan_saa, "ais": plan_ais,
}
#: The privacy routes ``sample`` implements (``"auto"`` chooses among them).
METHODS = tuple(PLANNERS)
_ALL_OPTIONS = {f.name for cls in ROUTE_OPTIONS.values() for f in fields(cls)}


def sample(
    draws: int = 1000,
    *,
    epsilon: float | None = None,
    method: str | RouteOptions = "auto",
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
        The total ε of the call, on every route: the privatised statistics (laplace;
        leave it out for a model on :func:`pymc_dp.observe_stats`), the released gradients
        (measurements), the ``chains × samples`` draws (ops), the whole run (gibbs, ais:
        tight accounting at δ = 10⁻⁶ by default), the aggregate (saa). ``delta=`` allows a δ
        (laplace: Gaussian noise where it adds less, :class:`Laplace`; gibbs, ais: accounting).
    method
        ``"auto"`` (default): the most accurate route that takes the model and the
        declarations (:mod:`pymc_dp.routes.chooser`; tried in the order laplace,
        measurements, ops, gibbs, saa; the ledger says which ran), or one route by
        name — ``"laplace"``, ``"measurements"``, ``"ops"``, ``"gibbs"``, ``"saa"``,
        ``"ais"`` — or a route object (:class:`Laplace`, :class:`Measurements`,
        :class:`OPS`, :class:`Gibbs`, :class:`SAA`, :class:`AIS`) carrying its options.
    ledger, neighbouring
        Ledger to charge (the cost is reserved on it before anything is drawn); ``"replace"`` (N public) or
        ``"add_remove"`` (default: the ledger's, else replace).
    model
        The model (default: the ``with`` block's), never modified.
    selection
        ``True`` (default): a data range or log-likelihood clip the route needs and the request lacks is chosen
        on a share of ε (:mod:`pymc_dp.routes.selection`); a share in (0, 1), a :class:`Selection`, or ``False``.
    **keywords
        The route's options by name (the fields of its route object, e.g.
        ``bounds=``, ``truncate=``, ``samples=``, ``temperature=``), then anything
        ``pm.sample`` takes (``tune``, ``chains``, ``random_seed``, ``step``, ...).
        An option of another route, or a keyword ``pm.sample`` does not know, is
        refused before anything is spent. ``nuts_sampler=``: PyMC's choice on laplace
        (:mod:`pymc_dp.routes.nutpie_cache`), PyMC's NUTS on ops and saa (their models hold the records).

    Returns
    -------
    xarray.DataTree or arviz.InferenceData
        ``pm.sample``'s trace type, released by :func:`pymc_dp.release` with its ledger.

    Raises
    ------
    ValueError
        For anything that cannot be proven private (the message says what to declare); before any spend.
        What each route releases and charges, also on failure: the threat-model page.
    pymc_dp.BudgetExceededError
        If the ledger's budget cannot pay for the run; nothing is drawn then.
    """
    return execute(_plan(model, draws, epsilon, method, ledger, neighbouring, keywords))


def _plan(model: Any, draws: int, epsilon: Any, method: Any, ledger: Any, neighbouring: Any, keywords: dict) -> RoutePlan:
    """The validated, priced plan of a ``sample`` call (nothing spent); planning reads the records, so quietly.

    Under add/remove (N private) no check compares a size with the number of records
    (:func:`~pymc_dp.model._graph.number_of_records_private`).
    """
    from ..model._graph import number_of_records_private

    relation = neighbouring if neighbouring is not None else getattr(ledger, "neighbouring", "replace")
    selection = resolve_selection(keywords.pop("selection", None))
    with quiet_logs(), number_of_records_private(relation == "add_remove"):
        try:
            return _plan_route(model, draws, epsilon, method, ledger, neighbouring, dict(keywords))
        except ValueError as refusal:
            chosen = _plan_choosing_ranges(model, draws, epsilon, method, ledger, neighbouring, keywords, selection)
            if chosen is None:
                raise _with_selection_note(refusal, selection, epsilon) from None
            return chosen


def _declared(method: Any, keywords: Mapping[str, Any], name: str) -> Any:
    return getattr(method, name, None) if isinstance(method, RouteOptions) else keywords.get(name)


def _plan_choosing_ranges(model: Any, draws: int, epsilon: Any, method: Any, ledger: Any, neighbouring: Any,
                          keywords: dict, selection: Selection | None) -> RoutePlan | None:
    """The plan that chooses what the request left undeclared privately (:mod:`pymc_dp.routes.selection`): its
    missing data ranges, else a log-likelihood clip (:mod:`pymc_dp.routes.clip_selection`) — a way whose choice is
    not reliable at this ε (:func:`~pymc_dp.routes.selection.selection_strain` above 1) tried after those that
    are, the least strained first; None where nothing is missing, selection is off, or the request would not plan
    with them either."""
    import pymc as pm

    if selection is None or epsilon is None:
        return None
    try:
        model = restore_missing(pm.modelcontext(model))
        check_epsilon(epsilon)
        relation = resolve_ledger(ledger, neighbouring).neighbouring
        public = public_names(_declared(method, keywords, "public") or ())
    except (TypeError, ValueError):
        return None

    def plan(declarations: Mapping[str, Any], eps: float) -> RoutePlan:
        if isinstance(method, RouteOptions):
            return _plan_route(model, draws, eps, replace(method, **declarations), ledger, neighbouring,
                               dict(keywords))
        given = dict(keywords)
        if "loglik_clip" in declarations and method in (None, "auto"):  # method='auto' choosing a tempered route,
            given.pop("noise_rng", None)  # which draws no noise: noise_rng seeds the clip's choice (a route named
            # by the request still refuses an option it does not take)
        return _plan_route(model, draws, eps, method, ledger, neighbouring, {**given, **declarations})

    noise_rng = _declared(method, keywords, "noise_rng")

    def planned(key: str, requests: Any) -> RoutePlan | None:
        try:
            if getattr(requests, "public_window", None) is not None:  # a discrete likelihood's clip: no choice
                chosen = plan({key: requests.public_window}, float(epsilon))
                chosen.assumptions = (*chosen.assumptions, DISCRETE_ASSUMPTION)
                return chosen
            return plan_with_selection(requests if isinstance(requests, list) else [requests], selection,
                                       float(epsilon), {key: _declared(method, keywords, key)}, plan, noise_rng,
                                       relation, fresh_ledger=ledger is None)
        except (TypeError, ValueError):
            return None

    strained = []  # ways whose choice would not be reliable at this ε: tried last, the least strained first
    held = None  # ranges that would take the request to the measurements route below its crossover
    for order, (key, missing) in enumerate((("bounds", missing_bounds), ("loglik_clip", missing_clip))):
        if isinstance(method, RouteOptions) and not hasattr(method, key):
            continue
        if key == "loglik_clip" and any(_declared(method, keywords, k) is not None for k in ("bounds", "truncate")):
            continue  # the request chose its way (data bounds, a truncation): its route's refusal says what is missing
        try:
            requests = missing(model, _declared(method, keywords, key), public)
        except (TypeError, ValueError):
            continue
        if not requests:
            continue
        strain = selection_strain(requests, selection, float(epsilon), relation)
        chosen = planned(key, requests) if strain <= 1.0 else None
        if chosen is not None and key == "bounds" and below_measurements_crossover(chosen, requests, epsilon,
                                                                                     relation):
            held = chosen  # a clip, if one plans, is predicted more accurate
            continue
        if chosen is not None:
            reason = crossover_reason(held, epsilon) if held is not None else next(
                (f"{key} rather than {k}: the ε that choosing {k} reliably needs is {s:.3g} times its share of this "
                 "ε" for s, _, k, _ in strained), None)
            if reason:
                chosen.ledger_details = {**chosen.ledger_details, "selection_reason": reason}
            return chosen
        if strain > 1.0:
            strained.append((strain, order, key, requests))
    if held is not None:
        return held
    for _, _, key, requests in sorted(strained, key=lambda s: s[:2]):
        chosen = planned(key, requests)
        if chosen is not None:
            return chosen
    return None


def _with_selection_note(refusal: ValueError, selection: Selection | None, epsilon: Any) -> ValueError:
    """The refusal, saying whether the missing ranges could have been chosen privately."""
    if selection is None and epsilon is not None:
        refusal.add_note("pymc_dp: with selection=True (the default) ranges left undeclared are chosen privately on "
                         "a share of ε (pmdp.Selection); selection=False was given, so declare them.")
    return refusal


def _plan_route(model: Any, draws: int, epsilon: Any, method: Any, ledger: Any, neighbouring: Any,
                keywords: dict) -> RoutePlan:
    import pymc as pm

    try:
        model = pm.modelcontext(model)
    except TypeError:
        raise ValueError("pmdp.sample needs a model: call it inside `with model:` or pass model=. Nothing was "
                         "spent.") from None
    # PyMC's imputation of missing values undone: one observed variable with NaN where a value is missing, which
    # every route treats as a malformed record (nothing refuses or branches on whether one is missing).
    model = restore_missing(model)
    try:  # a bad relation, ledger, ε or δ is the request's fault, not a route's: said once, before any route is tried
        resolve_ledger(ledger, neighbouring)
        if epsilon is not None:  # None: a model on observe_stats (its ε was paid there)
            check_epsilon(epsilon)
        if keywords.get("delta") is not None:
            check_delta(keywords["delta"])
    except ValueError as err:
        raise ValueError(f"{err} Nothing was spent.") from None
    if isinstance(method, str) and method == "auto":
        route_options = {k: keywords.pop(k) for k in list(keywords) if k in _ALL_OPTIONS}
        check_request(model, draws, keywords)
        plan = choose_route(PLANNERS, model, draws, epsilon, ledger, neighbouring, {**keywords, **route_options})
    else:
        options = options_for(method, keywords)
        check_request(model, draws, keywords)
        plan = PLANNERS[options.method](model, draws, epsilon, options, ledger, neighbouring, keywords)
        plan.route_name = options.method
    check_plan_keywords(plan, keywords)
    plan.assumptions = group_level_assumption(model)
    return plan
