"""Private annealed importance sampling ([FGWC16] supplement): ``pmdp.sample(method="ais")``.

A private chain's cost falls as its temperature rises: a Barker step on the likelihood
tempered to T costs 2Δ/T. Annealed importance sampling (Neal 2001) moves M particles
from the prior (β = 0, free: no data is read) through tempered posteriors
``π_k(θ) ∝ p(θ) p(X | θ)^{β_k}``, ``0 < β_1 < … < β_K = 1/T``, with ``steps`` private
transitions each (:class:`~pymc_dp.PrivateMetropolis`, Barker acceptance: ε = 2Δβ_k per
transition), and accumulates the importance weights

    log w_m = Σ_k (β_k − β_{k−1}) ℓ_X(θ_m^{(k−1)}),

so the hot stages, where most of the moving is done, are the cheap ones. The weights read
the data, so they are released by a charged mechanism too (``weights=``):

``"laplace"`` (default)
    The normalised weights, a point of the simplex, with Laplace noise, then projected
    back onto it. One record moves every log-weight by ``Σ_k (β_k − β_{k−1}) g(θ_m)``
    where ``g`` (the record's log-likelihood change) spans at most 2Δ over θ: the
    log-weights move together up to a spread of W = 2Δβ_K, and two distributions on the
    simplex whose log-ratio spans W are at most ``tanh(W/4)`` apart in total variation,
    so the L1 sensitivity is ``2 tanh(Δβ_K/2)`` (≤ 2).
``"resample"``
    ``draws`` particles resampled by the exponential mechanism with utility log w (its
    sensitivity, after the common shift, is Δβ_K): each pick costs its share of the
    weights' ε, and is exactly ∝ w when that share reaches 2Δβ_K (∝ w^{ε/2Δβ_K} below).

The whole run — every transition of every particle and the weights — is priced before it
starts, reserved on the ledger, and recorded as it ran; ``epsilon=`` fits β_K so that the
total, composed by the tightest valid accountant at the ledger's δ (as for
``method="gibbs"``), is ε. No convergence is assumed: each transition is charged
whatever state it starts from; how good the estimate is depends on the schedule, and is
measured, not assumed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

import numpy as np

from ..accounting import Budget, LedgerEntry, PrivacyLedger, resolve_ledger
from ..accounting.composition import compose
from ..accounting.validation import check_epsilon
from ..families.privatize import PUBLIC_N
from ..mechanisms import exponential_mechanism, laplace_mechanism
from ..step_methods import PrivateMetropolis
from ..step_methods._graph import PointFunction
from ..step_methods._updates import is_per_record_latent
from .. import _compat
from ..trace import check_release_plan
from .base import Ran, RoutePlan, sampler_noise_source
from .gibbs import bounded_model, fitting_accountant
from .options import AIS
from .progress import ProgressLine

__all__ = ["AISRun", "plan_ais", "annealing_schedule", "weight_sensitivity", "release_weights", "ANNEALED"]

#: The statement every AIS transition entry carries.
ANNEALED = (
    "annealed importance sampling: each transition is a Barker step at its stage's temperature, charged whatever "
    "state it started from (valid without convergence); the importance weights are released by their own entry"
)
#: Stages of the default geometric schedule.
DEFAULT_STAGES = 20
#: The hottest stage's inverse temperature below which a run is refused (it would be the prior, at a cost).
MIN_BETA = 1e-12
#: ``pm.sample`` keywords the AIS route reads; it runs no ``pm.sample``, so every other one is refused.
_OWN_KEYWORDS = {"random_seed", "progressbar"}


def annealing_schedule(stages: int, first: float = 1e-3) -> np.ndarray:
    """Fractions of the final β: geometric from ``first`` to 1 over ``stages`` stages (most stages hot, cheap)."""
    if isinstance(stages, bool) or not isinstance(stages, (int, np.integer)) or stages < 1:
        raise ValueError(f"stages must be a positive integer, got {stages!r}.")
    if stages == 1:
        return np.ones(1)
    return np.geomspace(first, 1.0, int(stages))


def weight_sensitivity(delta_loglik: float, beta: float) -> float:
    """L1 sensitivity of AIS's normalised weights: ``2 tanh(Δ β_K / 2)`` (module docstring)."""
    return 2.0 * math.tanh(delta_loglik * beta / 2.0)


def release_weights(weights: np.ndarray, spread: float, epsilon: float, ledger: PrivacyLedger, rng: Any = None
                    ) -> tuple[np.ndarray, LedgerEntry]:
    """Normalised importance weights with Laplace noise, projected back onto the simplex (ε-DP).

    ``spread`` is Δβ_K: one record moves the log-weights together up to a spread of 2Δβ_K, so the
    L1 sensitivity of the normalised weights is :func:`weight_sensitivity` = 2 tanh(Δβ_K/2). The
    projection (negative weights to 0, then renormalised; uniform if none is left) is post-processing.
    """
    n = len(weights)
    noisy, entry = laplace_mechanism(
        np.asarray(weights, dtype=float), epsilon=epsilon, sensitivity=weight_sensitivity(spread, 1.0), ledger=ledger,
        rng=rng, touched=f"AIS importance weights of {n} particles (normalised)", return_entry=True,
        assumptions=(PUBLIC_N,),
    )
    projected = np.clip(np.asarray(noisy, dtype=float), 0.0, None)
    total = projected.sum()
    return (projected / total if total > 0 else np.full(n, 1.0 / n)), entry


def _check_schedule(options: AIS) -> np.ndarray:
    if options.schedule is None:
        return annealing_schedule(DEFAULT_STAGES if options.stages is None else options.stages)
    s = np.asarray(options.schedule, dtype=float).reshape(-1)
    if s.size < 1 or not np.all(np.isfinite(s)) or s[0] <= 0 or s[-1] != 1.0 or np.any(np.diff(s) <= 0):
        raise ValueError(
            "schedule must be increasing fractions of the final inverse temperature in (0, 1], ending at 1, e.g. "
            f"np.geomspace(1e-3, 1, 20); got {options.schedule!r}."
        )
    return s


def _check_int(value: Any, name: str, least: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
        raise ValueError(f"{name} must be an integer >= {least}, got {value!r}.")
    return int(value)


@dataclass
class AISRun(RoutePlan):
    """``pmdp.sample(method="ais")``, validated and priced."""

    model: Any = None
    particles: int = 1000
    fractions: np.ndarray = field(default_factory=lambda: np.ones(1))
    beta: float = 1.0
    steps: int = 2
    weights: str = "laplace"
    weight_epsilon: float = 0.0
    step: Any = None
    seed: Any = None
    sampler_source: str = "sampler"
    seeded: tuple[str, ...] = ()
    noise_rng: Any = None
    progressbar: Any = True
    var_names: Sequence[str] = ()
    _spent: list[LedgerEntry] = field(default_factory=list)

    @property
    def what(self) -> str:
        return (f"annealed importance sampling of {self.particles} particles over {len(self.fractions)} stages "
                "(method='ais')")

    @property
    def betas(self) -> np.ndarray:
        return self.beta * self.fractions

    # ------------------------------------------------------------------ the run

    def _prior_particles(self, rng: np.random.Generator) -> list[dict[str, np.ndarray]]:
        """M exact draws from the prior (no data is read), as sampler points (value space)."""
        import pymc as pm
        import pytensor
        from pytensor.graph.replace import clone_replace

        import warnings

        model = self.model
        with warnings.catch_warnings():  # PyMC 6 compiles the draw with numba; some samplers run in object mode
            warnings.filterwarnings("ignore", message="Numba will use object mode", category=UserWarning)
            draws = pm.draw(model.free_RVs, draws=self.particles, random_seed=rng)
        draws = draws if isinstance(draws, list) else [draws]
        placeholders = {rv: rv.type() for rv in model.free_RVs}
        outs = []
        for rv in model.free_RVs:
            transform = model.rvs_to_transforms.get(rv)
            outs.append(transform.forward(rv, *rv.owner.inputs) if transform is not None else rv)
        forward = pytensor.function(list(placeholders.values()), clone_replace(outs, placeholders),
                                    on_unused_input="ignore")
        names = [model.rvs_to_values[rv].name for rv in model.free_RVs]
        points = []
        for m in range(self.particles):
            values = forward(*(np.asarray(d[m], dtype=rv.dtype) for d, rv in zip(draws, model.free_RVs)))
            points.append({n: np.asarray(v, dtype=model.rvs_to_values[rv].dtype)
                           for n, v, rv in zip(names, values, model.free_RVs)})
        return points

    def run(self) -> Ran:
        rng = np.random.default_rng(self.seed)
        self.step.rng = rng
        points = self._prior_particles(rng)
        betas = np.concatenate([[0.0], self.betas])
        log_w = np.zeros(self.particles)
        bar = ProgressLine("annealed importance sampling", len(self.fractions) * self.particles, self.progressbar,
                           unit="particle stages")
        for k in range(1, len(betas)):
            log_w += (betas[k] - betas[k - 1]) * np.array([self.step.log_likelihood(p) for p in points])
            stage = self.step.at_temperature(1.0 / betas[k])
            stage.tune = False
            stage.scaling = _proposal_scale(points)
            for m in range(self.particles):
                for _ in range(self.steps):
                    points[m], _ = stage.step(points[m])
                bar.advance()
            self._spent.append(self._stage_entry(k, stage))
        if not np.all(np.isfinite(log_w)):
            log_w = np.where(np.isfinite(log_w), log_w, -np.inf)
        released, weights = self._release_weights(log_w)
        return Ran(self._trace(points, released, weights), self.model, list(self._spent),
                   sample_stats=("weight",) if weights is not None else ())

    def _stage_entry(self, k: int, stage: PrivateMetropolis) -> LedgerEntry:
        cost = stage.cost
        return LedgerEntry(
            mechanism=cost.mechanism, epsilon=cost.epsilon, delta=cost.delta, count=self.particles * self.steps,
            touched=cost.touched, neighbouring=self.ledger.neighbouring, noise_source=self.sampler_source,
            assumptions=(ANNEALED, PUBLIC_N, *self.seeded),
            details={**dict(cost.details), "route": "ais", "stage": k, "stages": len(self.fractions),
                     "particles": self.particles, "steps_per_stage": self.steps,
                     "inverse_temperature": float(self.betas[k - 1])},
        )

    def _release_weights(self, log_w: np.ndarray) -> tuple[list[int], np.ndarray | None]:
        """Release the weights (Laplace on the simplex) or resample by them (exponential mechanism)."""
        top = np.max(log_w[np.isfinite(log_w)]) if np.any(np.isfinite(log_w)) else 0.0
        w = np.exp(log_w - top)
        w = w / w.sum() if w.sum() > 0 else np.full(self.particles, 1.0 / self.particles)
        delta_loglik = self.step.sensitivity
        scratch = PrivacyLedger(neighbouring=self.ledger.neighbouring)
        details = {"route": "ais", "particles": self.particles, "final_inverse_temperature": self.beta,
                   "loglik_sensitivity": delta_loglik}
        if self.weights == "laplace":
            projected, entry = release_weights(w, delta_loglik * self.beta, self.weight_epsilon, scratch, self.noise_rng)
            self._spent.append(replace(entry, details={**entry.details, **details}))
            return list(range(self.particles)), projected
        # Resampling: utility log w (finite floor for zero weights), sensitivity Δβ_K after the common shift.
        utility = np.log(np.maximum(w, 1e-300))
        per_pick = self.weight_epsilon / self.particles
        exact = 2.0 * delta_loglik * self.beta
        chosen = []
        for _ in range(self.particles):
            i, entry = exponential_mechanism(
                np.arange(self.particles), utility, epsilon=min(per_pick, exact), sensitivity=delta_loglik * self.beta,
                ledger=scratch, rng=self.noise_rng, touched="AIS resampling: one particle by its importance weight",
                return_entry=True,
            )
            chosen.append(int(i))
        self._spent.append(LedgerEntry(
            "exponential", min(per_pick, exact), count=self.particles, touched=entry.touched,
            neighbouring=self.ledger.neighbouring, noise_source=entry.noise_source, assumptions=(PUBLIC_N,),
            details={**entry.details, **details, "exact_resampling": per_pick >= exact},
        ))
        return chosen, None

    def _trace(self, points: list[dict[str, np.ndarray]], chosen: list[int], weights: np.ndarray | None) -> Any:
        import xarray as xr

        model = self.model
        constrained = PointFunction(model, model.free_RVs)
        values = [constrained(points[i]) for i in chosen]
        variables, coords = {}, {"chain": [0], "draw": np.arange(len(chosen))}
        for j, rv in enumerate(model.free_RVs):
            if self.var_names and rv.name not in self.var_names:
                continue
            stacked = np.stack([v[j] for v in values])[None]
            dims = list(model.named_vars_to_dims.get(rv.name) or [f"{rv.name}_dim_{i}" for i in range(stacked.ndim - 2)])
            variables[rv.name] = (["chain", "draw", *dims], stacked)
            for dim in dims:
                if dim in model.coords and model.coords[dim] is not None:
                    coords[dim] = list(model.coords[dim])
        groups = {"posterior": xr.Dataset(variables, coords=coords)}
        if weights is not None:
            groups["sample_stats"] = xr.Dataset({"weight": (["chain", "draw"], weights[None])},
                                                coords={"chain": [0], "draw": np.arange(len(chosen))})
        return _compat.new_trace(groups)

    def spent_on_failure(self, failure: BaseException) -> list[LedgerEntry]:
        """The stages that ran (all their transitions: a stage is charged in full once it starts) and the weights."""
        ran = len(self._spent)
        planned = list(self.entries)
        return list(self._spent) + ([planned[ran]] if ran < len(self.fractions) else [])


def _proposal_scale(points: list[dict[str, np.ndarray]]) -> float:
    """Random-walk scale for the next stage: 2.38/√d times the particle cloud's median spread (value space).

    The cloud is made of states the charged transitions produced, so adapting to it is post-processing.
    """
    flat = np.array([np.concatenate([np.ravel(v) for v in p.values()]) for p in points], dtype=float)
    spread = float(np.median(flat.std(axis=0)))
    if not math.isfinite(spread) or spread <= 0:
        spread = 1.0
    return 2.38 / math.sqrt(flat.shape[1]) * spread


def _planned_entries(beta: float, fractions: np.ndarray, particles: int, steps: int, delta_loglik: float,
                     weights: str, weight_epsilon: float, neighbouring: str, source: str = "sampler") -> list[LedgerEntry]:
    entries = [LedgerEntry("private_barker", 2.0 * delta_loglik * beta * f, count=particles * steps,
                           neighbouring=neighbouring, noise_source=source) for f in fractions]
    if weight_epsilon > 0:
        if weights == "laplace":
            entries.append(LedgerEntry("laplace", weight_epsilon, neighbouring=neighbouring))
        else:
            per_pick = min(weight_epsilon / particles, 2.0 * delta_loglik * beta)
            entries.append(LedgerEntry("exponential", per_pick, count=particles, neighbouring=neighbouring))
    return entries


def _fit_beta(epsilon: float, delta: float, method: str, fractions: np.ndarray, particles: int, steps: int,
              delta_loglik: float, weights: str, weight_epsilon: float, neighbouring: str) -> float:
    """The largest β_K ≤ 1 whose whole run costs at most ``epsilon`` (composed by ``method`` at ``delta``)."""
    target = None if delta == 0 else delta
    # "best" takes the smaller of the Rényi and PLD totals; fitting by Rényi alone (milliseconds, where PLD takes
    # a second per call on a schedule of small steps) gives a β_K whose "best" total is at most ε all the same.
    how = "basic" if delta == 0 else ("rdp" if method == "best" else method)

    def cost(beta: float) -> float:
        return compose(_planned_entries(beta, fractions, particles, steps, delta_loglik, weights, weight_epsilon,
                                        neighbouring), how, target, neighbouring).epsilon

    if cost(1.0) <= epsilon:
        return 1.0
    if weights == "laplace" and weight_epsilon >= epsilon:
        raise ValueError(f"the weights alone take ε = {weight_epsilon:g} of epsilon={epsilon:g}; lower weight_share.")
    # Basic composition (pure ε totals add up) bounds the tight accountants from above, so the β_K it fits in
    # closed form is feasible for them (halved until it is, for one that is not); bisect in log β between it and
    # 1 to a relative tolerance of 10⁻³.
    per_beta = 2.0 * delta_loglik * particles * steps * float(np.sum(fractions))
    fixed = weight_epsilon if weights == "laplace" else 0.0
    if weights == "resample":
        per_beta += 2.0 * delta_loglik * particles  # the picks cost at most 2Δβ_K each
    lo = (epsilon - fixed) / per_beta * (1 - 1e-12)
    for _ in range(200):  # an accountant above basic (advanced, for some counts) needs a smaller β_K
        if lo <= 0 or cost(lo) <= epsilon:
            break
        lo /= 2.0
    if lo <= 0 or cost(lo) > epsilon:
        raise ValueError(f"no annealing schedule of this size fits epsilon={epsilon:g} under {how!r} composition; "
                         "use fewer particles or stages.")
    hi = 1.0
    while math.log(hi) - math.log(lo) > 1e-3:
        mid = math.exp(0.5 * (math.log(lo) + math.log(hi)))  # in logs: lo × hi can underflow
        lo, hi = (mid, hi) if cost(mid) <= epsilon else (lo, mid)
    return lo


def plan_ais(
    model: Any, draws: int, epsilon: float | None, options: AIS, ledger: PrivacyLedger | None,
    neighbouring: str | None, pm_kwargs: Mapping[str, Any],
) -> AISRun:
    """Validate ``pmdp.sample(method="ais")`` completely and price it (see :func:`pymc_dp.sample`)."""
    if not model.observed_RVs:
        raise ValueError("method='ais' needs a model with observed records; this one has none.")
    if pm_kwargs.get("step") is not None:
        raise ValueError("step= was built on your model, but method='ais' moves its particles by its own private "
                         "Barker steps; leave step= out. Nothing was spent.")
    other = sorted(set(pm_kwargs) - _OWN_KEYWORDS - {"var_names"})
    if other:
        raise ValueError(
            f"{other} are pm.sample keywords; method='ais' runs no pm.sample (its particles move by private Barker "
            "steps), so it takes only random_seed=, progressbar= and var_names=. Nothing was spent."
        )
    if model.potentials:
        raise ValueError("method='ais' starts from exact draws of the prior, which a model with pm.Potential terms "
                         "does not have; write them as distributions. Nothing was spent.")
    discrete = [rv.name for rv in model.free_RVs if rv.dtype.startswith("int")]
    if discrete:
        raise ValueError(f"method='ais' moves continuous parameters; {discrete} are discrete (use method='gibbs').")
    latents = [rv.name for rv in model.free_RVs if is_per_record_latent(model, rv)]
    if latents:
        raise ValueError(f"{latents} have one entry per record; their shape and values would be released. Use "
                         "method='gibbs' for per-record latents.")
    if (epsilon is None) == (options.temperature is None):
        raise ValueError("method='ais' needs exactly one of epsilon= (the whole run's budget; the final temperature "
                         "is fitted to it) and temperature= (the final T >= 1; the run costs what it costs).")
    if epsilon is not None and options.weight_epsilon is not None:
        raise ValueError("weight_epsilon applies with temperature=; with epsilon=, the weights' part is set by "
                         "weight_share= (default 0.25). Nothing was spent.")
    if options.schedule is not None and options.stages is not None:
        raise ValueError("give stages= (a geometric schedule) or schedule= (your own), not both. Nothing was spent.")
    if options.weights not in ("laplace", "resample"):
        raise ValueError(f"weights must be 'laplace' or 'resample', got {options.weights!r}.")
    share = options.weight_share
    if not (isinstance(share, (int, float)) and not isinstance(share, bool) and 0 < share < 1):
        raise ValueError(f"weight_share must be a number strictly between 0 and 1, got {share!r}.")
    particles = _check_int(draws, "draws (the number of particles)", 2)
    steps = _check_int(options.steps, "steps")
    fractions = _check_schedule(options)
    fresh_ledger = ledger is None
    ledger = resolve_ledger(ledger, neighbouring)
    delta, accountant = fitting_accountant(options.delta, ledger)
    working, report = bounded_model(model, options, ledger.neighbouring)
    with working:
        step = PrivateMetropolis([rv.name for rv in working.free_RVs], temperature=1.0, bounds=report.bounds or None,
                                 neighbouring=ledger.neighbouring, model=working, tune=False)
    delta_loglik = step.sensitivity
    if options.temperature is not None:
        t = check_epsilon(options.temperature, "temperature")
        if t < 1:
            raise ValueError(f"temperature must be >= 1, got {t}.")
        beta = 1.0 / t
        if options.weight_epsilon is not None:
            weight_epsilon = check_epsilon(options.weight_epsilon, "weight_epsilon")
        elif options.weights == "resample":
            weight_epsilon = 2.0 * delta_loglik * beta * particles  # exact resampling
        else:
            raise ValueError("with temperature=, give weight_epsilon= (the ε of the Laplace-noised weights), or "
                             "weights='resample' (exact resampling costs 2Δ/T a draw). Nothing was spent.")
    else:
        eps = check_epsilon(epsilon)
        weight_epsilon = share * eps
        beta = _fit_beta(eps, delta, accountant, fractions, particles, steps, delta_loglik, options.weights,
                         weight_epsilon, ledger.neighbouring)
        if fresh_ledger and delta > 0:
            ledger = PrivacyLedger(Budget(eps, delta, accountant), ledger.neighbouring)
    if beta * fractions[0] < MIN_BETA:
        raise ValueError(f"epsilon={epsilon} buys this run (the hottest of {len(fractions)} stages, {particles} particles "
                         f"× {steps} steps each) an inverse temperature below {MIN_BETA:g}: the particles would stay at "
                         "the prior. Use a larger epsilon, fewer particles or fewer stages. Nothing was spent.")
    var_names = pm_kwargs.get("var_names")
    check_release_plan(working, var_names, ledger.neighbouring)
    names = list(var_names) if var_names is not None else []
    derived = sorted(set(names) - {rv.name for rv in working.free_RVs})
    if derived:
        raise ValueError(f"method='ais' releases free variables only; {derived} are not (compute deterministics from "
                         "the released particles afterwards). Nothing was spent.")
    unknown = sorted(set(names) - {rv.name for rv in working.free_RVs})
    if unknown:
        raise ValueError(f"var_names {unknown} are not free variables of the model; method='ais' releases only "
                         "free variables. Nothing was spent.")
    source, seeded = sampler_noise_source(pm_kwargs)  # the same rule (and warning) as ops and gibbs
    run = AISRun(
        ledger=ledger, model=working, particles=particles, fractions=fractions, beta=float(beta), steps=steps,
        weights=options.weights, weight_epsilon=float(weight_epsilon), step=step, seed=pm_kwargs.get("random_seed"),
        sampler_source=source, seeded=seeded, noise_rng=options.noise_rng, progressbar=pm_kwargs.get("progressbar", True), var_names=tuple(names),
    )
    run.entries = _planned_entries(float(beta), fractions, particles, steps, delta_loglik, options.weights,
                                   float(weight_epsilon), ledger.neighbouring, source)
    return run
