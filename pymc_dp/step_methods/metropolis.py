"""``PrivateMetropolis``: random-walk updates of a tempered target, each charged.

Target ``π_X(θ) ∝ p(θ) p(X | θ)^{1/T}`` (likelihood tempered, prior as written),
symmetric data-independent proposal θ′ in the variables' unconstrained (value)
space, log-ratio ``r_X = log π_X(θ′) − log π_X(θ)`` (prior and Jacobian terms plus
``(ℓ_X(θ′) − ℓ_X(θ))/T``). Changing one record moves ``ℓ_X(θ′) − ℓ_X(θ)`` by at most
2Δ (Δ: half the range over θ of the record's log-likelihood difference, proven by
:func:`pymc_dp.loglik_sensitivity` for the terms that depend on the variables), so
``|r_X − r_X′| ≤ s = 2Δ/T``.

``acceptance="barker"`` (default)
    Move to θ′ with probability ``π(θ′) / (π(θ) + π(θ′)) = 1/(1 + e^{−r})``: the
    exponential mechanism over ``{θ, θ′}`` — a valid kernel for π with a symmetric
    proposal (Barker 1965) — and **ε = 2Δ/T-DP per step**: both outcomes' probabilities
    move by at most a factor e^s (Heikkilä et al. 2019).

``acceptance="metropolis"``
    Accept with ``min(1, e^r)``. The accept outcome's ratio is at most e^s, but the
    reject outcome's is unbounded: with r = −s and r′ = 0 the chain rejects with
    probability 1 − e^{−s} under X and never under X′. The step is therefore
    **(0, 1 − e^{−s})-DP, and (ε, δ)-DP for no smaller δ at any ε**: for any r, r′
    with |r − r′| ≤ s, both |a − a′| and |(1 − a) − (1 − a′)| are at most 1 − e^{−s}
    (the total variation between the two accept/reject laws), and the pair above
    attains it. That δ ≈ 2Δ/T per step is what this project charges; it accumulates
    linearly, so prefer Barker.

The proposal scale may adapt during tuning (every ``tune_interval`` draws, from the
acceptance rate): the acceptances are functions of the released (and charged)
chain, so adapting to them is post-processing.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping, Sequence

import numpy as np
from pymc.step_methods.compound import BlockedStep, Competence

from ._graph import PointFunction, children
from .base import PrivateStep, UpdateCost, expm1_neg, resolve_temperature, value_vars_of

__all__ = ["PrivateMetropolis", "ACCEPTANCES", "PROPOSALS"]

ACCEPTANCES = ("barker", "metropolis")
#: Symmetric proposal increments by name: (rng, scale, size) -> increment.
PROPOSALS: dict[str, Callable[[np.random.Generator, float, int], np.ndarray]] = {
    "normal": lambda rng, scale, size: rng.normal(0.0, scale, size),
    "uniform": lambda rng, scale, size: rng.uniform(-scale, scale, size),
    "laplace": lambda rng, scale, size: rng.laplace(0.0, scale, size),
}


def _tuned(scale: float, acceptance_rate: float) -> float:
    """PyMC's Metropolis scale tuning rule (``pymc.step_methods.metropolis.tune``)."""
    from pymc.step_methods.metropolis import tune

    return float(tune(scale, acceptance_rate))


class PrivateMetropolis(PrivateStep, BlockedStep):
    """A PyMC random-walk step on a tempered target whose every step is charged.

    Parameters
    ----------
    vars
        Continuous free variables (or names) updated jointly, in their unconstrained
        (value) space.
    temperature
        T ≥ 1 of the likelihood.
    epsilon_per_update
        Instead of ``temperature``: the ε one Barker step may cost; T = max(1, 2Δ/ε).
        (With ``acceptance="metropolis"`` it sets T the same way; the step then costs
        δ = 1 − e^{−2Δ/T}.)
    proposal
        ``"normal"`` (default), ``"uniform"``, ``"laplace"``, or a callable
        ``(rng, scale, size) -> increment`` that must be symmetric and must not look
        at the data.
    scaling
        Initial proposal scale.
    acceptance
        ``"barker"`` (pure ε = 2Δ/T per step) or ``"metropolis"`` ((0, 1 − e^{−2Δ/T})
        per step; see the module docstring).
    tune, tune_interval
        Adapt the scale during tuning every ``tune_interval`` draws.
    bounds
        ``{observed variable: data bounds}``, as for :func:`pymc_dp.loglik_sensitivity`.
    neighbouring, model
        As for :class:`pymc_dp.PrivateGibbs`.
    """

    name = "private_metropolis"
    stats_dtypes_shapes = {
        "dp_epsilon": (np.float64, []),
        "dp_delta": (np.float64, []),
        "accepted": (bool, []),
        "scaling": (np.float64, []),
    }

    def __init__(
        self,
        vars: Sequence[Any],
        temperature: float | None = None,
        *,
        epsilon_per_update: float | None = None,
        proposal: str | Callable[..., np.ndarray] = "normal",
        scaling: float = 1.0,
        acceptance: str = "barker",
        tune: bool = True,
        tune_interval: int = 100,
        bounds: Mapping[str, Any] | None = None,
        neighbouring: str = "replace",
        model: Any = None,
        blocked: bool = True,
        rng: Any = None,
    ) -> None:
        import pymc as pm

        model = pm.modelcontext(model)
        if acceptance not in ACCEPTANCES:
            raise ValueError(f"acceptance must be one of {ACCEPTANCES}, got {acceptance!r}.")
        if isinstance(proposal, str):
            if proposal not in PROPOSALS:
                raise ValueError(f"proposal must be one of {sorted(PROPOSALS)} or a callable, got {proposal!r}.")
            self._propose = PROPOSALS[proposal]
        elif callable(proposal):
            self._propose = proposal
        else:
            raise ValueError(f"proposal must be a name or a callable (rng, scale, size), got {proposal!r}.")
        if not (isinstance(scaling, (int, float)) and math.isfinite(scaling) and scaling > 0):
            raise ValueError(f"scaling must be a positive number, got {scaling!r}.")
        self.vars = value_vars_of(model, vars)
        rvs = [model.values_to_rvs[v] for v in self.vars]
        discrete = [rv.name for rv in rvs if rv.dtype.startswith("int")]
        if discrete:
            raise ValueError(f"PrivateMetropolis updates continuous variables; {discrete} are discrete (use PrivateGibbs).")
        names = [rv.name for rv in rvs]
        report = self._sensitivity(model, names, bounds, neighbouring)
        self.acceptance = acceptance
        self._report = report
        self._names = names
        self._set_temperature(resolve_temperature([report.total], temperature, epsilon_per_update))
        depending = {c for rv in rvs for c in children(model, rv)}
        observed = [o for o in model.observed_RVs if o in depending]
        prior = model.logp(vars=[*model.free_RVs, *model.potentials], jacobian=True)
        loglik = model.logp(vars=observed, jacobian=False) if observed else prior * 0.0
        self._densities = PointFunction(model, [prior, loglik])
        self.scaling = float(scaling)
        self.tune = bool(tune)
        self.tune_interval = int(tune_interval)
        self._since_tuned = 0
        self._accepted_since = 0
        self.rng = np.random.default_rng(rng)

    def _set_temperature(self, temperature: float) -> None:
        """Set T and the cost of one step at T (ε = 2Δ/T for Barker, δ = 1 − e^{−2Δ/T} for Metropolis)."""
        report, names = self._report, self._names
        self.temperature = float(temperature)
        s = 2.0 * report.total / self.temperature
        barker = self.acceptance == "barker"
        self.cost = UpdateCost(
            mechanism="private_barker" if barker else "private_metropolis",
            epsilon=s if barker else 0.0,
            delta=0.0 if barker else expm1_neg(s),
            touched=", ".join(names),
            temperature=self.temperature,
            sensitivity={", ".join(names): report.total},
            details={
                "temperature": self.temperature,
                "acceptance": self.acceptance,
                "log_ratio_sensitivity": s,
                **self._describe(report),
            },
        )

    @property
    def sensitivity(self) -> float:
        """Δ of the log-likelihood terms this step reads (proven when it was built)."""
        return float(self._report.total)

    def at_temperature(self, temperature: float) -> "PrivateMetropolis":
        """The same step (same compiled densities, proposal and generator) on the target at T ≥ 1.

        For annealing: one step built once serves every temperature of a schedule, each
        copy charging its own cost 2Δ/T.
        """
        import copy

        if not (isinstance(temperature, (int, float)) and math.isfinite(temperature) and temperature >= 1):
            raise ValueError(f"temperature must be a number >= 1, got {temperature!r}.")
        other = copy.copy(self)
        other._set_temperature(temperature)
        return other

    def log_likelihood(self, point: dict[str, np.ndarray]) -> float:
        """The (untempered) log-likelihood of the data this step reads, at ``point``."""
        return float(self._densities(point)[1])

    def _log_target(self, point: dict[str, np.ndarray]) -> float:
        prior, loglik = self._densities(point)
        return float(prior) + float(loglik) / self.temperature

    def step(self, point: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], list[dict[str, Any]]]:
        if self.tune and self._since_tuned >= self.tune_interval:
            self.scaling = _tuned(self.scaling, self._accepted_since / self._since_tuned)
            self._since_tuned = self._accepted_since = 0
        proposal = dict(point)
        for v in self.vars:
            current = np.asarray(point[v.name])
            step = np.asarray(self._propose(self.rng, self.scaling, current.size), dtype=float)
            proposal[v.name] = np.asarray(current + step.reshape(current.shape), dtype=current.dtype)
        with np.errstate(all="ignore"):
            r = self._log_target(proposal) - self._log_target(point)
        log_u = math.log(self.rng.uniform())
        if math.isnan(r):
            accept = False
        elif self.acceptance == "barker":
            accept = log_u < -np.logaddexp(0.0, -r)  # u < 1 / (1 + e^{-r})
        else:
            accept = log_u < min(0.0, r)
        self._since_tuned += 1
        self._accepted_since += int(accept)
        stats = {**self.cost_stats(), "accepted": bool(accept), "scaling": self.scaling}
        return (proposal if accept else point), [stats]

    def stop_tuning(self) -> None:
        self.tune = False

    @staticmethod
    def competence(var: Any, has_grad: bool) -> Competence:
        return Competence.INCOMPATIBLE
