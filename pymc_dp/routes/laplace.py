"""The Laplace route of ``pmdp.sample``: privatise the observed records once, then sample for free.

The spend is the privatisation: each observed variable's statistics get their
Laplace noise (through :func:`pymc_dp.privatize_model`), and each release is
recorded in the ledger as its noise is drawn. ``pm.sample`` afterwards reads only
those noisy statistics. So if ``pm.sample`` later raises, the entries stay: the
noise was drawn and the statistics exist (the sampler may have exposed functions of
them, e.g. in an error message) -- their cost is spent whether or not a trace comes
back. Sampling failures cost nothing more, because sampling never reads the records.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from .. import _compat
from .._compat import warn_at_caller
from ..accounting import LedgerEntry, PrivacyLedger, resolve_ledger
from ..families.grouped import GroupedPrepared
from ..model import statistics_of
from ..model.privatize_model import PrivatizationPlan, _check_public, plan_privatization
from ..trace import check_release_plan
from .base import Ran, RoutePlan, check_initvals, check_step_model
from .nutpie_cache import reusing_compiled_models
from .nuts_start import curvature_scaled
from .base import public_names as check_public_names  # the local name public_names is the result
from .options import Laplace
from .progress import stage

__all__ = ["plan_laplace", "LaplacePlan", "sample_released"]


def _ledger_of_statistics(model: Any, ledger: PrivacyLedger | None) -> PrivacyLedger:
    used = statistics_of(model)
    if ledger is not None:
        missing = [s for s in used if s.entry_id not in {e.id for e in ledger.entries}]
        if missing:
            return PrivacyLedger.combine([ledger, *(s.ledger for s in missing)], budget=ledger.budget)
        return ledger
    if not used:
        raise ValueError(
            "the model observes neither records nor privatised statistics: pass a model with observed "
            "variables and epsilon=, or use pmdp.observe_stats with the output of pmdp.privatize."
        )
    ledgers = {id(s.ledger): s.ledger for s in used}
    if len(ledgers) == 1:
        return next(iter(ledgers.values()))
    return PrivacyLedger.combine(ledgers.values())


@dataclass
class LaplacePlan(RoutePlan):
    """The Laplace route, validated and priced: the privatisation to draw (if any) and the model to sample."""

    model: Any = None
    draws: int = 1000
    privatization: PrivatizationPlan | None = None
    noise_rng: Any = None
    pm_kwargs: Mapping[str, Any] = field(default_factory=dict)
    _scratch: PrivacyLedger | None = None

    @property
    def what(self) -> str:
        return "privatising the model's observed variables"

    @property
    def reads_records(self) -> bool:
        return False  # the sampled model holds released statistics only

    def run(self) -> Ran:
        sampled = self.model
        if self.privatization is not None:
            # Noise goes through a scratch ledger whose entries are recorded against the
            # reservation; if the draw or the sampling fails they are what was spent.
            self._scratch = PrivacyLedger(neighbouring=self.ledger.neighbouring)
            sampled = self.privatization.release(self._scratch, self.noise_rng).model
        return sample_released(sampled, self.draws, self._sampler_kwargs(), self.spent_on_failure(None),
                               curvature_start=self._grouped())

    def _sampler_kwargs(self) -> Mapping[str, Any]:
        """``pm.sample``'s keywords: PyMC's NUTS for a release by group unless a sampler or step was asked for.

        nutpie compiles a hierarchy's record-free model in each new process, where PyMC's compiled pieces persist on
        disk: measured on three groups (N = 2·10⁴, warm caches), a varying-intercept regression's first release took
        101 s with nutpie against 31 s with PyMC's NUTS, three Bernoulli rates 38 s against 7 s; a new user's twelve
        groups with varying slopes 543–675 s against 217 s (docs/concepts/performance.md).
        """
        kwargs = self.pm_kwargs
        if self._grouped() and kwargs.get("nuts_sampler") is None and kwargs.get("step") is None:
            return {**kwargs, "nuts_sampler": "pymc"}
        return kwargs

    def _grouped(self) -> bool:
        """Whether a statistic is released by group (a hierarchy: PyMC's NUTS, its mass matrix started from the
        record-free posterior's curvature, :mod:`pymc_dp.routes.nuts_start`)."""
        return self.privatization is not None and any(
            isinstance(p, GroupedPrepared) for p in self.privatization.prepared.values())

    def spent_on_failure(self, failure: BaseException | None) -> list[LedgerEntry]:
        return list(self._scratch.entries) if self._scratch is not None else []


def started_at(pm_kwargs: Mapping[str, Any], start: Mapping[str, Any] | None) -> dict[str, Any]:
    """``pm.sample``'s keywords with every chain starting at ``start`` (constrained values by free variable), unjittered.

    The user's own ``initvals``, ``init`` or ``step`` win (returned unchanged); numpyro and blackjax get the start
    with their own jitter. Otherwise the sampler PyMC would pick is named explicitly and its start jitter (uniform
    ±1 on every unconstrained value) turned off: on a non-centred hierarchy that jitter moves a group's coefficient by ±``sigma``, enough to put a chain on
    the far slope of an errors-in-variables likelihood that a start near the estimate avoids
    (:mod:`pymc_dp.model.start_point`). The chains then differ by their random streams only.
    """
    kwargs = dict(pm_kwargs)
    if start is None or any(kwargs.get(k) is not None for k in ("initvals", "init", "step")):
        return kwargs
    sampler = kwargs.get("nuts_sampler") or _default_nuts_sampler(kwargs)
    if sampler == "pymc":
        return {**kwargs, "nuts_sampler": "pymc", "initvals": dict(start), "init": "adapt_diag"}
    if sampler == "nutpie":
        compile_kwargs = {**(kwargs.get("compile_kwargs") or {}), "jitter_rvs": set()}
        return {**kwargs, "nuts_sampler": "nutpie", "initvals": dict(start), "compile_kwargs": compile_kwargs}
    return {**kwargs, "initvals": dict(start)}  # numpyro, blackjax: the start, with their own jitter


def _default_nuts_sampler(pm_kwargs: Mapping[str, Any]) -> str:
    """The NUTS sampler ``pm.sample`` picks for these keywords: nutpie where PyMC picks it by default (PyMC 6 with
    nutpie installed, no compile mode given), else PyMC's own."""
    import importlib.util
    import inspect

    import pymc as pm

    if inspect.signature(pm.sample).parameters["nuts_sampler"].default is not None:  # PyMC 5: always its own
        return "pymc"
    import pymc.sampling.mcmc as mcmc

    installed = getattr(mcmc, "NUTPIE_INSTALLED", importlib.util.find_spec("nutpie") is not None)  # as PyMC sees it
    if not installed or (pm_kwargs.get("compile_kwargs") or {}).get("mode") is not None:
        return "pymc"
    try:
        from pymc.sampling.mcmc import _nutpie_meets_min_version

        return "nutpie" if _nutpie_meets_min_version() else "pymc"
    except ImportError:  # a PyMC without the check: nutpie, as it would pick
        return "nutpie"


def sample_released(model: Any, draws: int, pm_kwargs: Mapping[str, Any], spent: list[LedgerEntry],
                    start: Mapping[str, Any] | None = None, curvature_start: bool = False) -> Ran:
    """``pm.sample`` a record-free model; its sampler statistics kept, wall-clock ones left out.

    ``start`` (released numbers only) starts every chain there, unless the user chose a start (:func:`started_at`).
    ``curvature_start``: PyMC's NUTS starts its mass matrix from the curvature at the record-free posterior's mode,
    unless the user chose a start, a step or another sampler (:func:`~pymc_dp.routes.nuts_start.curvature_scaled`).

    With nutpie (PyMC 6's default sampler where it is installed) the compiled model is
    reused across calls whose models differ only in their released numbers
    (:mod:`pymc_dp.routes.nutpie_cache`).
    """
    import pymc as pm

    pm_kwargs = started_at(pm_kwargs, start)
    if "target_accept" not in pm_kwargs and any(v.name.endswith(NOISE_MIXING_SUFFIX) for v in model.free_RVs):
        # Laplace noise as a scale mixture of Gaussians: its mixing variables give the posterior funnels that
        # NUTS at the default 0.8 crosses with divergences (a regression with several covariates, measured)
        pm_kwargs = {**pm_kwargs, "target_accept": MIXING_TARGET_ACCEPT}
    stage("sampling the record-free model (released numbers only); its first run compiles it, which can take a "
          "minute or more", pm_kwargs.get("progressbar", True))
    if curvature_start:
        pm_kwargs = curvature_scaled(model, pm_kwargs)
    with reusing_compiled_models():
        idata = pm.sample(draws, model=model, **pm_kwargs)
    stats = _compat.get_group(idata, "sample_stats")
    _warn_divergences(stats, pm_kwargs)
    kept = tuple(s for s in stats.data_vars if not s.startswith(_TIMING_STATS)) if stats is not None else ()
    return Ran(idata, model, spent, sample_stats=kept)


def plan_laplace(
    model: Any, draws: int, epsilon: float | None, options: Laplace, ledger: PrivacyLedger | None,
    neighbouring: str | None, pm_kwargs: Mapping[str, Any],
) -> LaplacePlan:
    """Validate ``pmdp.sample(method="laplace")`` completely and price it (see :func:`pymc_dp.sample`)."""
    public_names = _check_public(model, check_public_names(options.public))
    private_names = [rv.name for rv in model.observed_RVs if rv.name not in public_names]
    if not private_names:
        if epsilon is not None or options.bounds is not None or options.epsilon_split is not None or options.delta:
            raise ValueError(
                "the model has no observed records to privatise, so epsilon/bounds/epsilon_split/delta do not apply; "
                "its privatised statistics were paid for when pmdp.privatize ran."
            )
        return LaplacePlan(ledger=_ledger_of_statistics(model, ledger), model=model, draws=draws,
                           pm_kwargs=pm_kwargs)
    if epsilon is None:
        raise ValueError(
            f"the model observes records ({', '.join(map(repr, private_names))}); pass epsilon= to privatise "
            "them (the privacy flag), declare them public=[...] if they are not private, or build the model "
            "on pmdp.privatize + pmdp.observe_stats."
        )
    check_step_model(pm_kwargs, True, "laplace", "one whose records are replaced by privatised statistics")
    ledger = resolve_ledger(ledger, neighbouring)
    privatization = plan_privatization(
        model, epsilon, bounds=options.bounds, neighbouring=ledger.neighbouring, epsilon_split=options.epsilon_split,
        noise_aware=options.noise_aware, public=public_names, delta=options.delta or 0.0,
    )
    check_release_plan(model, pm_kwargs.get("var_names"), ledger.neighbouring, public_names)
    check_initvals(model, pm_kwargs.get("initvals"))
    return LaplacePlan(
        ledger=ledger, entries=privatization.entries(), model=model, draws=draws, privatization=privatization,
        noise_rng=options.noise_rng, pm_kwargs=pm_kwargs,
    )


#: The free variables of a noise-aware likelihood's Laplace scale mixture end so (:func:`pymc_dp.model.observe.noise_mixing_name`).
NOISE_MIXING_SUFFIX = "_noise_mixing"
#: NUTS's target acceptance on a model with such variables, unless the caller sets one.
MIXING_TARGET_ACCEPT = 0.95


def _warn_divergences(stats: Any, pm_kwargs: Mapping[str, Any]) -> None:
    """Say how many transitions diverged: nutpie reports none itself (read from the record-free model's sampler)."""
    import numpy as np

    if stats is None or "diverging" not in stats.data_vars:
        return
    count = int(np.asarray(stats["diverging"]).sum())
    target = pm_kwargs.get("target_accept", getattr(pm_kwargs.get("step"), "target_accept", "the sampler default"))
    if count:
        warn_at_caller(
            f"{count} divergent transition(s) while sampling the record-free model (target_accept="
            f"{target}): the posterior may be explored incompletely. "
            "Raise target_accept= (e.g. 0.99); for a regression with several covariates, delta= (Gaussian noise) "
            "removes the noise-mixing variables behind most of them. Sampling again costs no privacy.",
            UserWarning,
        )


# Wall-clock statistics say nothing about the posterior; they are left out of every
# release as a matter of course (timing is a classic side channel).
_TIMING_STATS = ("perf_counter", "process_time")
