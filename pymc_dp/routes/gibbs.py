"""The private-MCMC route of ``pmdp.sample``: every update that reads the data is charged as it runs.

``pmdp.sample(method="gibbs", epsilon=... | temperature=...)``

1. applies the declared truncation (a new model) and clips the records into their
   declared bounds (reported, never silent);
2. gives every free variable whose conditional reads the data a private step
   (theory notes §6): :class:`~pymc_dp.PrivateGibbs` where the conditional is
   conjugate (and for per-record latents: one scan, parallel composition),
   :class:`~pymc_dp.PrivateMetropolis` otherwise; variables whose conditional does
   not read the data get an exact, free Gibbs update where conjugate and PyMC's own
   samplers otherwise. A non-private step given for a variable that reads the data
   is refused;
3. computes the whole run's cost before it starts — (tune + draws) × chains draws,
   each costing the sum of its private updates — and refuses a run that would
   exceed the budget; asked to fit ``epsilon``, it chooses the temperature that
   spends it (under basic composition, or the tightest accountant at ``delta > 0``);
4. runs ``pm.sample`` (sequential or parallel chains alike) and builds the ledger
   from the per-draw sample stats ``dp_epsilon``/``dp_delta`` of every chain,
   tuning included, checked against the plan. If the run fails instead — any
   exception out of ``pm.sample`` (a step that raises, a worker process that dies, a
   ``KeyboardInterrupt`` PyMC lets through) — the plan's whole cost, already checked
   against the budget in step 3, is recorded with the interruption noted, and the
   exception is re-raised: private updates ran, and how many cannot be proven from
   outside the failed run, so the upper bound is charged. (A ``KeyboardInterrupt``
   that PyMC catches returns a partial trace; the planned count is charged then too.)
5. releases the whole chain (every draw of every chain is paid for), the per-draw
   costs, and the ledger; nothing else of the run.

The guarantee does not assume convergence: it is a composition of per-update
guarantees, whatever state the chain is in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

import numpy as np

from ..accounting import Budget, LedgerEntry, PrivacyLedger, resolve_ledger
from ..accounting.composition import compose
from ..accounting.validation import check_delta, check_epsilon
from ..families.privatize import PUBLIC_N
from ..model import loglik_sensitivity, truncate
from ..model.tempering import clip_records
from ..step_methods import DP_STATS, NotConjugateError, PrivateGibbs, PrivateMetropolis, PrivateStep, UpdateCost
from ..step_methods._graph import children
from ..step_methods._updates import ConjugateUpdate, is_per_record_latent
from .. import _compat
from .progress import ProgressLine
from ..trace import check_release_plan
from .base import Ran, RoutePlan, apply_loglik_clip, check_initvals, check_step_model, resolve_chains, sampler_noise_source
from .options import Gibbs

__all__ = [
    "plan_gibbs_run", "GibbsRun", "InterruptedRunError", "plan_gibbs", "GibbsPlan", "ledger_entries_from_stats", "NO_CONVERGENCE_NEEDED", "DEFAULT_DELTA", "fitting_accountant",
    "INTERRUPTED_RUN", "bounded_model",
]

#: The statement every private-MCMC ledger entry carries.
NO_CONVERGENCE_NEEDED = (
    "valid without convergence: each update is charged as it ran (tuning draws included, every chain)"
)
#: Default tuning draws (PyMC's default), charged like every other draw.
DEFAULT_TUNE = 1000
#: The total δ at which ``epsilon=`` is fitted when neither ``delta=`` nor the ledger's budget says.
DEFAULT_DELTA = 1e-6
#: The assumption added to the entries of a run that failed before PyMC returned its trace.
INTERRUPTED_RUN = (
    "the run was interrupted before its trace was returned: the planned cost of every draw "
    "((tune + draws) × chains) was charged, an upper bound on the updates that ran (how many completed cannot be "
    "proven from a failed run)"
)


@dataclass(frozen=True)
class GibbsPlan:
    """What a private MCMC run will cost, known before it starts.

    Attributes
    ----------
    temperature
        T of the steps this run builds.
    steps
        The private steps, in the order they run within a draw.
    chains, tune, draws
        The run's shape; every one of the ``(tune + draws) × chains`` draws is charged.
    other_steps
        The user's non-private steps (on variables whose conditional does not read the data).
    fitted_to
        When the temperature was fitted to ``epsilon=``: ``{"epsilon", "delta", "accountant"}``,
        the total it spends and how it is composed; ``None`` for a given temperature.
    """

    temperature: float
    steps: tuple[Any, ...]
    chains: int
    tune: int
    draws: int
    other_steps: tuple[Any, ...] = ()
    fitted_to: Mapping[str, Any] | None = None

    @property
    def costs(self) -> tuple[UpdateCost, ...]:
        return tuple(s.cost for s in self.steps)

    @property
    def iterations(self) -> int:
        """Charged draws: (tune + draws) × chains."""
        return (self.tune + self.draws) * self.chains

    def entries(self, neighbouring: str) -> list[LedgerEntry]:
        """The ledger entries the run records (one per private step, ``iterations`` runs each)."""
        return [_entry(c, self.iterations, neighbouring, self) for c in self.costs if c.epsilon or c.delta]

    def total(self, method: str = "basic", delta: float | None = None, neighbouring: str = "replace") -> Any:
        """The run's total cost under ``method`` (see :meth:`pymc_dp.PrivacyLedger.total`)."""
        return compose(self.entries(neighbouring), method, delta, neighbouring)

    def __str__(self) -> str:
        lines = [
            f"Private MCMC: T = {self.temperature:.6g}; {self.chains} chain(s) × ({self.tune} tune + {self.draws} draws) "
            f"= {self.iterations} charged draws."
        ]
        for c in self.costs:
            lines.append(f"  {c.mechanism} [{c.touched}]: ε = {c.epsilon:.6g}, δ = {c.delta:.3g} per draw")
        t = self.total()
        lines.append(f"Total (basic composition): ε = {t.epsilon:.6g}, δ = {t.delta:.3g}")
        return "\n".join(lines)


def _entry(cost: UpdateCost, count: int, neighbouring: str, plan: GibbsPlan | None, observed: int | None = None) -> LedgerEntry:
    details = {
        **dict(cost.details),
        "temperature": cost.temperature,
        "sensitivity": dict(cost.sensitivity),
    }
    if plan is not None:
        details.update(chains=plan.chains, tune=plan.tune, draws=plan.draws)
        if plan.fitted_to is not None:
            details["fitted_to"] = dict(plan.fitted_to)
    if observed is not None:
        details["updates_in_trace"] = observed
    return LedgerEntry(
        mechanism=cost.mechanism,
        epsilon=cost.epsilon,
        delta=cost.delta,
        count=count,
        touched=cost.touched,
        neighbouring=neighbouring,
        noise_source="sampler",
        assumptions=(NO_CONVERGENCE_NEEDED, *cost.assumptions, PUBLIC_N),
        event=cost.event,
        details=details,
    )


# ---------------------------------------------------------------------------- step assignment


def _flatten(step: Any) -> list[Any]:
    if step is None:
        return []
    items = step if isinstance(step, (list, tuple)) else [step]
    out = []
    for s in items:
        out.extend(getattr(s, "methods", [s]))
    return out


def _reads_data(model: Any, rv: Any) -> bool:
    observed = set(model.observed_RVs)
    return any(c in observed for c in children(model, rv))


def _check_user_steps(model: Any, user_steps: Sequence[Any]) -> set[str]:
    """Names of the variables the user's steps cover; refuse non-private steps on data-reading variables."""
    covered: set[str] = set()
    for step in user_steps:
        for value in step.vars:
            rv = model.values_to_rvs.get(value)
            if rv is None:
                raise ValueError(f"step {type(step).__name__} updates {value.name!r}, which is not a variable of this model.")
            if not isinstance(step, PrivateStep) and _reads_data(model, rv):
                raise ValueError(
                    f"{type(step).__name__} on {rv.name!r} is refused: {rv.name!r}'s conditional reads the data, and "
                    f"{type(step).__name__} is not charged per update (its moves and its statistics depend on the "
                    f"records). Use pmdp.PrivateGibbs or pmdp.PrivateMetropolis for {rv.name!r}, or leave it to "
                    "pmdp.sample to assign."
                )
            covered.add(rv.name)
    return covered


def _auto_variables(model: Any, covered: set[str]) -> tuple[list[Any], list[Any]]:
    """(variables that read the data, the others) among those no step covers."""
    reading, free = [], []
    for rv in model.free_RVs:
        if rv.name not in covered:
            (reading if _reads_data(model, rv) else free).append(rv)
    return reading, free


def _sensitivities(model: Any, rvs: Sequence[Any], bounds: Mapping[str, Any] | None, neighbouring: str) -> dict[str, float]:
    return {rv.name: loglik_sensitivity(model, bounds=bounds, wrt=rv.name, neighbouring=neighbouring).total for rv in rvs}


def _build_private(
    model: Any, rv: Any, temperature: float, acceptance: str, bounds: Any, neighbouring: str
) -> Any:
    kwargs = dict(temperature=temperature, bounds=bounds, neighbouring=neighbouring, model=model)
    try:
        return PrivateGibbs([rv.name], **kwargs)
    except NotConjugateError as err:
        if rv.dtype.startswith("int"):
            raise ValueError(
                f"{rv.name!r} is discrete and reads the data, but its conditional is not one PrivateGibbs can draw "
                f"exactly ({err}); method='gibbs' cannot sample it privately."
            ) from None
        return PrivateMetropolis([rv.name], acceptance=acceptance, **kwargs)


def _free_gibbs(model: Any, rv: Any) -> Any | None:
    """An exact, cost-free Gibbs update for a variable that does not read the data (None if not conjugate)."""
    try:
        return PrivateGibbs([rv.name], temperature=1.0, model=model)
    except (NotConjugateError, ValueError):
        return None


# ---------------------------------------------------------------------------- the temperature


def fit_temperature(
    epsilon: float, delta: float, deltas: Mapping[str, float], iterations: int, fixed: Sequence[LedgerEntry],
    neighbouring: str, method: str = "best",
) -> float:
    """The smallest T ≥ 1 whose run (``iterations`` draws, one pure update per Δ in ``deltas``) fits ε.

    With ``delta == 0`` under basic composition (pure ε totals add up, and basic is the
    tight pure total): T = n Σ 2Δ_l / (ε − fixed). With ``delta > 0`` by bisection on
    ``method`` at that δ (default ``"best"``: the tightest valid accountant).
    """
    total_delta = sum(deltas.values())
    if total_delta == 0:
        return 1.0
    method = "basic" if delta == 0 else method
    target = None if delta == 0 else delta

    def cost(t: float) -> float:
        # One entry per private step, as the ledger records the run: composing the steps'
        # pure-ε updates separately is tighter than one update of their summed ε per draw.
        trial = [LedgerEntry("trial", 2.0 * d / t, count=iterations, neighbouring=neighbouring) for d in deltas.values() if d]
        entries = [*fixed, *trial]
        return compose(entries, method, target, neighbouring).epsilon

    if cost(1.0) <= epsilon:
        return 1.0
    if delta == 0:
        fixed_eps = compose(list(fixed), "basic").epsilon if fixed else 0.0
        if fixed_eps >= epsilon:
            raise ValueError(f"the given private steps alone cost ε = {fixed_eps:.6g}, the whole budget epsilon={epsilon}.")
        return iterations * 2.0 * total_delta / (epsilon - fixed_eps) * (1 + 1e-12)
    lo, hi = 1.0, 2.0
    while cost(hi) > epsilon:
        lo, hi = hi, hi * 4.0
        if hi > 1e15:
            raise ValueError(f"no temperature makes this run fit epsilon={epsilon} at delta={delta}.")
    for _ in range(60):
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if cost(mid) <= epsilon else (mid, hi)
        if hi / lo < 1 + 1e-6:
            break
    return hi


# ---------------------------------------------------------------------------- planning


def plan_gibbs(
    model: Any,
    *,
    draws: int = 1000,
    tune: int = DEFAULT_TUNE,
    chains: int = 2,
    epsilon: float | None = None,
    delta: float = 0.0,
    temperature: float | None = None,
    acceptance: str = "barker",
    bounds: Mapping[str, Any] | None = None,
    step: Any = None,
    neighbouring: str = "replace",
    accountant: str = "best",
) -> GibbsPlan:
    """Assign private steps to ``model`` and compute what the run costs (nothing is sampled or spent).

    ``model`` must already be truncated and its records inside ``bounds``. Exactly one
    of ``epsilon`` (the run's whole budget; T is fitted so the run costs ``epsilon`` at
    total ``delta`` composed by ``accountant``, or by basic composition at ``delta=0``)
    and ``temperature``. See :func:`pymc_dp.sample` for the arguments.
    """
    for name, value in (("draws", draws), ("tune", tune)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < (1 if name == "draws" else 0):
            raise ValueError(f"{name} must be a {'positive' if name == 'draws' else 'non-negative'} integer, got {value!r}.")
    if acceptance not in ("barker", "metropolis"):
        raise ValueError(f"acceptance must be 'barker' or 'metropolis', got {acceptance!r}.")
    if (epsilon is None) == (temperature is None):
        raise ValueError(
            "method='gibbs' needs exactly one of epsilon= (the whole run's budget; the temperature is chosen to spend "
            "it) and temperature= (T >= 1; the run then costs what it costs, checked against the ledger's budget)."
        )
    delta = check_delta(delta, "delta")
    user_steps = _flatten(step)
    covered = _check_user_steps(model, user_steps)
    reading, others = _auto_variables(model, covered)
    if not reading and not any(isinstance(s, PrivateStep) for s in user_steps):
        raise ValueError("no free variable's conditional reads the data: there is nothing private to sample.")
    iterations = (int(tune) + int(draws)) * int(chains)
    user_private = [s for s in user_steps if isinstance(s, PrivateStep)]
    if temperature is None:
        eps = check_epsilon(epsilon)
        metropolis = acceptance == "metropolis" and any(_not_conjugate(model, rv) for rv in reading)
        if metropolis:
            raise ValueError(
                "fitting epsilon= with acceptance='metropolis' is not supported (its cost is a δ); give temperature=."
            )
        deltas = _sensitivities(model, reading, bounds, neighbouring)
        fixed = [_entry(s.cost, iterations, neighbouring, None) for s in user_private if s.cost.epsilon or s.cost.delta]
        temperature = fit_temperature(eps, delta, deltas, iterations, fixed, neighbouring, accountant)
        fitted_to = {"epsilon": eps, "delta": delta, "accountant": accountant if delta > 0 else "basic"}
    else:
        fitted_to = None
    built = [_build_private(model, rv, temperature, acceptance, bounds, neighbouring) for rv in reading]
    free = [g for g in (_free_gibbs(model, rv) for rv in others) if g is not None]
    steps = (*user_private, *built, *free)
    return GibbsPlan(
        temperature=float(temperature), steps=steps, chains=int(chains), tune=int(tune), draws=int(draws),
        other_steps=tuple(s for s in user_steps if not isinstance(s, PrivateStep)), fitted_to=fitted_to,
    )


def _not_conjugate(model: Any, rv: Any) -> bool:
    """Whether ``rv`` would get a PrivateMetropolis step (the structural check only; no sensitivity)."""
    if is_per_record_latent(model, rv):
        return False
    try:
        ConjugateUpdate(model, rv, 1.0)
    except NotConjugateError:
        return True
    return False


# ---------------------------------------------------------------------------- the ledger from the run


def _stat_columns(idata: Any, name: str, n_steps: int) -> np.ndarray:
    """``name`` over every draw of every chain, tuning first: shape (chain, draw, step)."""
    from .. import _compat

    parts = []
    for group in ("warmup_sample_stats", "sample_stats"):
        ds = _compat.get_group(idata, group)
        if ds is not None and name in ds.data_vars:
            values = np.asarray(ds[name].values, dtype=float)
            parts.append(values if values.ndim == 3 else values[..., None])
    if not parts:
        raise RuntimeError(f"the run recorded no {name!r} sample stats; its cost cannot be read from the trace.")
    out = np.concatenate(parts, axis=1)
    if out.shape[-1] != n_steps:
        raise RuntimeError(f"the trace has {out.shape[-1]} {name!r} columns for {n_steps} private steps.")
    return out


def ledger_entries_from_stats(idata: Any, costs: Sequence[UpdateCost], neighbouring: str, plan: GibbsPlan | None = None) -> list[LedgerEntry]:
    """One ledger entry per private step, counted from the per-draw stats of every chain (tuning included).

    Each step's recorded per-draw cost is checked against what it declared. If the
    trace holds fewer draws than the plan (an interrupted run), the planned count
    is charged: updates of a draw in progress are not in the trace.
    """
    eps = _stat_columns(idata, "dp_epsilon", len(costs))
    dlt = _stat_columns(idata, "dp_delta", len(costs))
    entries = []
    for j, cost in enumerate(costs):
        col_e, col_d = eps[..., j].ravel(), dlt[..., j].ravel()
        if not (np.all(col_e == cost.epsilon) and np.all(col_d == cost.delta)):
            raise RuntimeError(
                f"the per-draw costs recorded for {cost.mechanism} [{cost.touched}] differ from the step's declared "
                f"cost (ε = {cost.epsilon}, δ = {cost.delta}); the ledger cannot be built."
            )
        if not (cost.epsilon or cost.delta):
            continue
        observed = int(col_e.size)
        count = max(observed, plan.iterations if plan is not None else 0)
        entries.append(_entry(cost, count, neighbouring, plan, observed))
    return entries


# ---------------------------------------------------------------------------- the route


def _hmc_keywords() -> set[str]:
    """``pm.sample`` keywords that only configure NUTS/HMC steps."""
    import inspect

    from pymc.step_methods.hmc.base_hmc import BaseHMC
    from pymc.step_methods.hmc.nuts import NUTS

    names = {p for cls in (BaseHMC, NUTS) for p in inspect.signature(cls.__init__).parameters}
    return (names - {"self", "vars", "model", "kwargs", "args", "blocked", "rng"}) | {"nuts", "hamiltonianmc"}


class InterruptedRunError(RuntimeError):
    """A private MCMC run stopped (e.g. Ctrl-C during tuning) before it kept any draw; its planned cost was charged."""


@dataclass
class GibbsRun(RoutePlan):
    """``pmdp.sample(method="gibbs")``, validated and priced: the steps, the run's shape and its cost."""

    plan: GibbsPlan | None = None
    model: Any = None
    pm_kwargs: Mapping[str, Any] = field(default_factory=dict)
    seeded: tuple[str, ...] = ()

    @property
    def what(self) -> str:
        return f"a private MCMC run of {self.plan.iterations} charged draws (method='gibbs')"

    def run(self) -> Ran:
        """Run ``pm.sample`` with the private steps; the ledger's entries come from the per-draw stats.

        A ``KeyboardInterrupt`` that PyMC catches returns a partial trace: its draws are
        released, and the planned cost is charged all the same (the counts are the
        plan's, an upper bound on what ran).
        """
        import pymc as pm

        steps = [*self.plan.steps, *self.plan.other_steps]
        kwargs = dict(self.pm_kwargs)
        # PyMC's bar shows speed, elapsed time and the NUTS statistics of a density that reads the
        # records: a counter of the charged draws (a public number) stands in for it.
        line = ProgressLine("private MCMC", self.plan.iterations, kwargs.pop("progressbar", True))
        idata = pm.sample(self.plan.draws, model=self.model, step=steps, progressbar=False, callback=line.callback,
                          **kwargs)
        if _compat.get_group(idata, "posterior") is None:
            raise InterruptedRunError(
                "the private MCMC run was interrupted during tuning, before any draw was kept: there is nothing to "
                "release. The planned cost was charged all the same (the tuning updates ran); see the ledger."
            )
        entries = ledger_entries_from_stats(idata, self.plan.costs, self.ledger.neighbouring, self.plan)
        return Ran(idata, self.model, self._mark(entries), sample_stats=DP_STATS, warmup_sample_stats=True)

    def spent_on_failure(self, failure: BaseException) -> list[LedgerEntry]:
        """From the first draw on, private updates run: a failed run is charged its whole plan.

        How many updates completed cannot be proven from outside a failed run (worker
        processes may have died mid-draw, and a trace is only returned on success), so
        the upper bound -- the plan, reserved before the run -- is recorded.
        """
        return self._mark(_interrupted_entries(self.plan, self.ledger.neighbouring, failure))

    def _mark(self, entries: Sequence[LedgerEntry]) -> list[LedgerEntry]:
        if not self.seeded:
            return list(entries)
        return [replace(e, noise_source="seeded", assumptions=(*e.assumptions, *self.seeded)) for e in entries]


def plan_gibbs_run(
    model: Any, draws: int, epsilon: float | None, options: Gibbs, ledger: PrivacyLedger | None,
    neighbouring: str | None, pm_kwargs: Mapping[str, Any],
) -> GibbsRun:
    """Validate ``pmdp.sample(method="gibbs")`` completely and price it (see :func:`pymc_dp.sample`)."""
    if not model.observed_RVs:
        raise ValueError("method='gibbs' needs a model with observed records; this one has none.")
    kwargs = dict(pm_kwargs)
    if kwargs.get("nuts_sampler") not in (None, "pymc"):
        raise ValueError(
            f"nuts_sampler={kwargs['nuts_sampler']!r} cannot run method='gibbs': private steps are PyMC step methods "
            "(leave nuts_sampler out)."
        )
    hmc = sorted(k for k in kwargs if k in _hmc_keywords())
    if hmc:
        raise ValueError(
            f"{hmc} configure NUTS/HMC, which method='gibbs' never runs (every variable gets a private step); "
            "leave them out. Nothing was spent."
        )
    # Tuning draws are charged and their costs kept to build the ledger; they are never
    # released, whatever discard_tuned_samples says.
    kwargs.pop("discard_tuned_samples", None)
    if options.temperature is not None and options.delta is not None:
        raise ValueError(
            "delta= applies only with epsilon= (the total δ at which the temperature is fitted); with temperature= "
            "the run costs what it costs. Leave delta out. Nothing was spent."
        )
    fresh_ledger = ledger is None
    ledger = resolve_ledger(ledger, neighbouring)
    delta, accountant = fitting_accountant(options.delta, ledger)
    working, report = bounded_model(model, options, ledger.neighbouring)
    chains = resolve_chains(kwargs)
    tune = kwargs.pop("tune", DEFAULT_TUNE)
    user_step = kwargs.pop("step", None)
    check_step_model({"step": user_step}, working is not model, "gibbs", "truncated, or with records clipped")
    with working:
        plan = plan_gibbs(
            working, draws=draws, tune=tune, chains=chains, epsilon=epsilon, delta=delta,
            temperature=options.temperature, acceptance=options.acceptance, bounds=report.bounds or None,
            step=user_step, neighbouring=ledger.neighbouring, accountant=accountant,
        )
    if fresh_ledger and plan.fitted_to is not None:
        # The run was fitted to (ε, δ) by an accountant: its ledger carries that budget, so
        # ``ledger.spent`` and the summary read the total the way it was fitted.
        fitted = plan.fitted_to
        ledger = PrivacyLedger(Budget(fitted["epsilon"], fitted["delta"], fitted["accountant"]), ledger.neighbouring)
    check_release_plan(working, kwargs.get("var_names"), ledger.neighbouring)
    check_initvals(working, kwargs.get("initvals"))
    kwargs.update(chains=chains, tune=plan.tune, discard_tuned_samples=False)
    _, seeded = sampler_noise_source(kwargs)
    run = GibbsRun(ledger=ledger, plan=plan, model=working, pm_kwargs=kwargs, seeded=seeded)
    run.entries = run._mark(plan.entries(ledger.neighbouring))
    return run


def bounded_model(model: Any, options: Any, neighbouring: str) -> tuple[Any, Any]:
    """The model the private steps run on, and its proven log-likelihood sensitivity.

    ``options`` carries ``truncate``, ``loglik_clip`` and ``bounds`` (:class:`Gibbs`,
    :class:`~pymc_dp.routes.options.AIS`): the declared truncation is applied, the
    log-likelihood clipped, Δ proven, and records outside the bounds clipped (reported).
    """
    working = truncate(model, options.truncate) if options.truncate is not None else model
    working = apply_loglik_clip(working, options.loglik_clip)
    report = loglik_sensitivity(working, bounds=options.bounds, neighbouring=neighbouring)
    working, _ = clip_records(working, {n: (f, report.bounds[n]) for n, f in report.families.items()})
    return working, report


def fitting_accountant(delta: float | None, ledger: PrivacyLedger) -> tuple[float, str]:
    """The total δ and composition method at which ``epsilon=`` is fitted.

    ``delta`` when given (0: basic composition of pure updates; > 0: the tightest valid
    accountant, ``"best"``). Otherwise the ledger budget's: a basic budget is fitted by
    basic composition (the budget checks the basic sum), a tight one at its δ by its
    method. Without a budget: :data:`DEFAULT_DELTA` with ``"best"`` — a long chain of
    small pure-ε updates composes far more tightly under Rényi/PLD accounting than by
    their sum (docs: private-mcmc, "How accuracy grows with ε").
    """
    if delta is not None:
        delta = check_delta(delta, "delta")
        return delta, "basic" if delta == 0 else "best"
    budget = ledger.budget
    if budget is not None:
        return (0.0, "basic") if budget.method == "basic" else (budget.delta, budget.method)
    return DEFAULT_DELTA, "best"


def _interrupted_entries(plan: GibbsPlan, neighbouring: str, failure: BaseException) -> list[LedgerEntry]:
    """The plan's entries, marked as charged in full because the run failed with ``failure``.

    Only the exception's type is recorded, never its message: messages can quote
    data-dependent values (log densities, the point that failed), and ledgers get published.
    """
    out = []
    for e in plan.entries(neighbouring):
        details = {**e.details, "interrupted": type(failure).__name__, "charged": "planned"}
        out.append(replace(e, assumptions=(*e.assumptions, INTERRUPTED_RUN), details=details))
    return out
