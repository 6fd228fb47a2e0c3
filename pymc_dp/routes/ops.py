"""The OPS route of ``pmdp.sample``: one posterior sample per chain from a tempered posterior.

"One posterior sample" ([FGWC16] §2.2, theory notes §4): an exact draw from
``p(θ) p(X | θ)^{1/T}`` with ``T = 2Δ/ε`` is ε-DP, Δ the proven sensitivity of one
record's log-likelihood (:func:`pymc_dp.loglik_sensitivity`). The route

1. applies the declared truncation and log-likelihood clip (new models; the user's
   model is untouched) and proves Δ, or refuses saying what to declare;
2. shares ``epsilon`` — the total of the call, as on every route — evenly among the
   ``chains × samples`` released draws: each gets ε = epsilon / (chains × samples),
   and ``T = max(1, 2Δ/ε)`` (a draw costs ``2Δ/T``: ε, or less when ε ≥ 2Δ and T is
   capped at 1). By default ``samples`` is as many exact (T = 1) posterior samples
   per chain as the budget buys, and at least one (:func:`samples_at_t1`);
3. checks the whole cost against the ledger's budget before anything runs;
4. clips the records into their declared bounds and samples the tempered model with
   any PyMC sampler;
5. releases ``samples`` draws per chain (evenly spaced, ending at the last) and records the
   spend, with the assumption that each released draw is an exact, independent sample
   (convergence): the guarantee is for exact samples only.

Nothing else of the run is released: the rest of the chain, the sampler statistics
(functions of the data-dependent density) and the tuning are not covered by the
cost and stay with the curator.

A run that fails is charged nothing. OPS spends budget only by releasing draws: the
guarantee is a property of the released draw's distribution, and the chain that
leads to it is curator-internal in every run (a successful run also reads the
records thousands of times and charges only what it releases). So the entry is
recorded after ``pm.sample`` has returned and the draws are chosen, immediately
before the release; if sampling raises, the exception propagates, nothing is
returned and nothing is recorded. (What stays private is the curator's to keep:
neither the partial chain nor the exception's message may be published.)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

import numpy as np

from ..accounting import LedgerEntry, PrivacyLedger, resolve_ledger
from ..accounting.validation import check_epsilon
from ..families.privatize import PUBLIC_N
from ..model import LoglikSensitivity, loglik_sensitivity, temper, truncate
from ..model.tempering import clip_records
from .. import _compat
from ..trace import check_release_plan
from .base import Ran, RoutePlan, apply_loglik_clip, check_initvals, check_step_model, resolve_chains, sampler_noise_source
from .options import OPS
from .progress import ProgressLine, chained_callback

__all__ = ["plan_ops_run", "samples_at_t1", "OPSRun", "plan_ops", "OPSPlan", "CONVERGENCE_ASSUMPTION", "MECHANISM"]

#: With ``samples=None``, released draws of one chain are at least this many draws apart.
MIN_THINNING = 10
#: The ledger mechanism name of a released posterior draw.
MECHANISM = "one_posterior_sample"
#: The assumption every OPS ledger entry carries.
CONVERGENCE_ASSUMPTION = (
    "assumes convergence: each released draw is an exact sample of the tempered posterior (a sampler within total "
    "variation δ of it gives (ε, (1 + e^ε)·δ)-DP instead; Wang et al. 2015, Prop. 3)"
)


@dataclass(frozen=True)
class OPSPlan:
    """What an OPS run will release and cost, known before it starts.

    Attributes
    ----------
    sensitivity
        The proven :class:`~pymc_dp.model.LoglikSensitivity`.
    epsilon
        The ε asked for per posterior sample.
    temperature
        T = max(1, 2Δ/ε).
    epsilon_per_sample
        What one released draw costs: 2Δ/T (= ε unless T is capped at 1).
    chains, samples
        Chains, and draws released per chain.
    draw_indices
        Which draws of each chain are released.
    """

    sensitivity: LoglikSensitivity
    epsilon: float
    temperature: float
    epsilon_per_sample: float
    chains: int
    samples: int
    draw_indices: tuple[int, ...]
    part: str = "likelihood"

    @property
    def total_epsilon(self) -> float:
        """The basic-composition cost of the whole release: chains × samples × ε per sample."""
        return self.chains * self.samples * self.epsilon_per_sample

    def assumptions(self) -> tuple[str, ...]:
        out = [CONVERGENCE_ASSUMPTION]
        if self.samples > 1:
            gap = self.draw_indices[1] - self.draw_indices[0]
            out.append(
                f"assumes the {self.samples} draws released per chain are independent exact samples "
                f"(taken {gap} draws apart)"
            )
        out.append(PUBLIC_N)
        return tuple(out)

    def entry(self, neighbouring: str) -> LedgerEntry:
        """The ledger entry this release records (one entry, ``chains × samples`` identical events)."""
        exact = self.sensitivity.exact_samples(self.epsilon)
        return LedgerEntry(
            mechanism=MECHANISM,
            epsilon=self.epsilon_per_sample,
            count=self.chains * self.samples,
            touched=", ".join(self.sensitivity.per_variable),
            neighbouring=neighbouring,
            noise_source="sampler",
            assumptions=self.assumptions(),
            details={
                "sensitivity": self.sensitivity.total,
                "sensitivity_per_variable": dict(self.sensitivity.per_variable),
                "derivations": dict(self.sensitivity.derivations),
                "temperature": self.temperature,
                "tempered_part": self.part,
                "epsilon_requested": self.epsilon,
                "chains": self.chains,
                "samples_per_chain": self.samples,
                "exact_samples_at_T1": None if math.isinf(exact) else int(exact),
            },
        )

    def __str__(self) -> str:
        lines = [self.sensitivity.describe(self.epsilon)]
        lines.append(
            f"Release: {self.samples} draw(s) per chain × {self.chains} chain(s), each ε = "
            f"{self.epsilon_per_sample:.6g}: total ε = {self.total_epsilon:.6g} (basic composition)."
        )
        return "\n".join(lines)


def _draw_indices(draws: int, samples: int) -> tuple[int, ...]:
    if isinstance(samples, bool) or not isinstance(samples, (int, np.integer)) or samples < 1:
        raise ValueError(f"samples must be a positive integer (draws released per chain), got {samples!r}.")
    if isinstance(draws, bool) or not isinstance(draws, (int, np.integer)) or draws < 1:
        raise ValueError(f"draws must be a positive integer, got {draws!r}.")
    if samples > draws:
        raise ValueError(f"samples={samples} draws per chain cannot be released from a chain of draws={draws}.")
    step = draws // samples
    if samples > 1 and step < MIN_THINNING:
        raise ValueError(
            f"samples={samples} draws per chain from a chain of draws={draws} would release draws {step} apart, but "
            f"each released draw is charged as an independent exact sample: release at most one in {MIN_THINNING} "
            f"(samples <= {max(1, draws // MIN_THINNING)}), or run draws >= {MIN_THINNING * samples}. Nothing was spent."
        )
    return tuple(int(draws - 1 - step * j) for j in reversed(range(samples)))


def _count(samples: Any) -> int:
    if isinstance(samples, bool) or not isinstance(samples, (int, np.integer)) or samples < 1:
        raise ValueError(f"samples must be a positive integer (draws released per chain), got {samples!r}.")
    return int(samples)


def samples_at_t1(exact: float, chains: int, draws: int) -> int:
    """Draws per chain for ``samples=None``: as many exact posterior (T = 1) samples as the budget buys.

    ``exact`` is ⌊ε / 2Δ⌋ (:meth:`~pymc_dp.model.LoglikSensitivity.exact_samples`),
    shared evenly by the chains and at most one in every :data:`MIN_THINNING` draws of a
    chain (the ledger assumes a chain's released draws independent); at least one per
    chain (the draws are then tempered, T = 2Δ chains / ε). Releasing fewer draws when the
    budget buys more would leave budget unspent for nothing; releasing more would push
    T below 1 and sharpen the draws beyond the posterior. Only ε, the declared Δ and the
    run's shape enter, never the data.
    """
    most = max(1, int(draws) // MIN_THINNING)
    if math.isinf(exact):
        return most
    return int(max(1, min(most, exact // chains)))


def plan_ops(
    model: Any,
    epsilon: float,
    *,
    draws: int = 1000,
    samples: int = 1,
    chains: int | None = None,
    bounds: Mapping[str, Mapping[str, Any]] | None = None,
    part: str = "likelihood",
    neighbouring: str = "replace",
) -> OPSPlan:
    """The temperature, cost and released draws of an OPS run on ``model`` (nothing is sampled or spent).

    ``model`` must already be truncated or clipped as needed (see :func:`pymc_dp.truncate`,
    :func:`pymc_dp.clip_loglik`). Raises ``ValueError`` where Δ cannot be proven.
    """
    eps = check_epsilon(epsilon)
    if part not in ("likelihood", "joint"):
        raise ValueError(f"part must be 'likelihood' or 'joint', got {part!r}.")
    indices = _draw_indices(draws, samples)
    report = loglik_sensitivity(model, bounds=bounds, neighbouring=neighbouring)
    return OPSPlan(
        sensitivity=report,
        epsilon=eps,
        temperature=report.temperature(eps),
        epsilon_per_sample=report.epsilon_per_sample(eps),
        chains=resolve_chains({"chains": chains}),
        samples=int(samples),
        draw_indices=indices,
        part=part,
    )


@dataclass
class OPSRun(RoutePlan):
    """``pmdp.sample(method="ops")``, validated and priced: the tempered model and the draws to release."""

    plan: OPSPlan | None = None
    model: Any = None
    draws: int = 1000
    pm_kwargs: Mapping[str, Any] = field(default_factory=dict)

    @property
    def what(self) -> str:
        return f"{self.plan.chains * self.plan.samples} posterior sample(s) (method='ops')"

    def run(self) -> Ran:
        """Sample the tempered model and choose the released draws; the spend is their release.

        A failed run releases nothing and records nothing (module docstring): the
        reservation is given back.
        """
        import pymc as pm

        kwargs = dict(self.pm_kwargs)
        # PyMC's NUTS unless asked: the tempered model holds the records, so it is new at every call and
        # nutpie would compile it every time (about 2x slower end to end; benchmarks/ops_samplers.py).
        kwargs["nuts_sampler"] = kwargs.get("nuts_sampler") or "pymc"
        progress = kwargs.pop("progressbar", True)
        if progress and kwargs["nuts_sampler"] == "pymc":
            chains, tune = self.plan.chains, int(kwargs.get("tune", 1000))
            line = ProgressLine("OPS", chains * (tune + self.draws), progress)
            kwargs["callback"] = chained_callback(line, kwargs.get("callback"))
        # PyMC's own bar shows divergences and step sizes of draws that are not released.
        idata = pm.sample(self.draws, model=self.model, progressbar=False, **kwargs)
        chosen = _compat.isel_draws(idata, list(self.plan.draw_indices))
        return Ran(chosen, self.model, list(self.entries))


def plan_ops_run(
    model: Any, draws: int, epsilon: float | None, options: OPS, ledger: PrivacyLedger | None,
    neighbouring: str | None, pm_kwargs: Mapping[str, Any],
) -> OPSRun:
    """Validate ``pmdp.sample(method="ops")`` completely and price it (see :func:`pymc_dp.sample`)."""
    if epsilon is None:
        raise ValueError(
            "method='ops' needs epsilon=: the total ε of the call, shared evenly by the chains × samples released "
            "posterior draws (each draw's ε sets T = max(1, 2Δ/ε))."
        )
    if not model.observed_RVs:
        raise ValueError("method='ops' needs a model with observed records; this one has none.")
    check_step_model(pm_kwargs, True, "ops", "tempered, with records clipped into their bounds")
    ledger = resolve_ledger(ledger, neighbouring)
    working = model
    if options.truncate is not None:
        working = truncate(working, options.truncate)
    working = apply_loglik_clip(working, options.loglik_clip)
    chains = resolve_chains(pm_kwargs)
    total = check_epsilon(epsilon)
    if options.samples is None:
        report = loglik_sensitivity(working, bounds=options.bounds, neighbouring=ledger.neighbouring)
        samples, chosen = samples_at_t1(report.exact_samples(total), chains, draws), "auto"
    else:
        samples, chosen = _count(options.samples), "given"
    plan = plan_ops(
        working, total / (chains * samples), draws=draws, samples=samples, chains=chains, bounds=options.bounds,
        part=options.tempered, neighbouring=ledger.neighbouring,
    )
    source, seeded = sampler_noise_source(pm_kwargs)
    entry = plan.entry(ledger.neighbouring)
    details = {**entry.details, "epsilon_total_requested": total, "samples_per_chain_chosen": chosen}
    entry = replace(entry, noise_source=source, details=details)
    entry = replace(entry, assumptions=(*entry.assumptions, *seeded)) if seeded else entry
    report = plan.sensitivity
    clipped_model, _ = clip_records(working, {n: (f, report.bounds[n]) for n, f in report.families.items()})
    tempered = temper(clipped_model, plan.temperature, part=options.tempered)
    # Only the released draws leave (the posterior group alone is cut to them): tuning
    # draws kept by discard_tuned_samples=False stay with the curator like the rest.
    check_release_plan(clipped_model, pm_kwargs.get("var_names"), ledger.neighbouring)
    check_initvals(tempered, pm_kwargs.get("initvals"))
    if pm_kwargs.get("compute_convergence_checks"):
        raise ValueError(
            "compute_convergence_checks=True cannot run with method='ops': PyMC would log R-hat, ESS and divergence "
            "counts of the whole chain, of which only the released draws are paid for. Leave it out (the route "
            "turns the checks off); nothing was spent."
        )
    kwargs = {**pm_kwargs, "chains": chains, "compute_convergence_checks": False}
    if chosen == "auto" and samples < max(1, draws // MIN_THINNING):  # ε, not the thinning, limits the release
        _compat.warn_at_caller(
            f"method='ops' will release {samples} draw(s) per chain, not the {draws} asked for: each released draw "
            f"is an exact posterior sample costing 2Δ = {2 * report.total:.4g}, and ε = {total:.4g} over {chains} "
            f"chain(s) buys {samples} a chain (the draws tempered at T = {plan.temperature:.3g}). A larger epsilon or "
            "a tighter loglik_clip buys more; a route that releases a whole posterior (method='auto' names them) may "
            "serve better.", UserWarning)
    return OPSRun(ledger=ledger, entries=[entry], plan=plan, model=tempered, draws=draws, pm_kwargs=kwargs)
