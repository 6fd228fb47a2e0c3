"""``PrivateGibbs``: exact tempered Gibbs updates, each charged as the exponential mechanism.

A Gibbs update of θ_l from ``p(θ_l | θ_{−l}) p(X | θ)^{1/T}`` is the exponential
mechanism restricted to the assignments that change only θ_l (theory notes §6,
[FGWC16] eq. 18–20): it costs ``ε_l = 2Δ_l/T``, with Δ_l the sensitivity of only the
log-likelihood terms that depend on θ_l (:func:`pymc_dp.loglik_sensitivity` with
``wrt=``). The guarantee is per update and holds whether or not the chain has
converged, so the whole chain may be released; a draw of a step holding several
variables costs the sum of their ε_l (basic composition).

**Per-record latent variables.** A Categorical or Bernoulli vector z with one value
per record, whose children read it record by record, is drawn in one scan: the
update of z_i reads only record i, so the N updates act on disjoint records and
the scan costs ``2Δ_z/T`` *once* (parallel composition), not N times.

**Random scan.** ``scan=Q`` updates a uniformly random subset of Q of the N latents
per draw. The release shows which z_i changed, so the pure ε is *not* amplified —
one draw still costs 2Δ_z/T — but record i is touched only with probability q = Q/N:
for every ε′ ≥ 0 the draw is (ε′, q·δ_{2Δ_z/T}(ε′))-DP (the mixture bound with a
common component, Balle, Barthe & Gaboardi 2018, "Privacy amplification by
subsampling", Thm 2), which the ledger's Rényi and PLD accountants use
(event ``"random_scan"``). [FGWC16] §4.1's 4ΔQ/N assumes a release that does not
reveal which latents were updated; a Gibbs chain does, so it is not used here.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
from pymc.step_methods.compound import BlockedStep, Competence

from ._updates import ConjugateUpdate, LatentScan, NotConjugateError, is_per_record_latent
from .base import PrivateStep, UpdateCost, resolve_temperature, value_vars_of

__all__ = ["PrivateGibbs", "NotConjugateError", "GIBBS_MECHANISM"]

#: Ledger mechanism name of a private Gibbs draw.
GIBBS_MECHANISM = "private_gibbs"


class PrivateGibbs(PrivateStep, BlockedStep):
    """A PyMC step method drawing variables exactly from their tempered conditionals, each update charged.

    Parameters
    ----------
    vars
        Free variables (or their names) to update, in order, once per draw. Each is
        either continuous with a conjugate prior and conjugate children (Beta,
        Gamma, Normal, Uniform — optionally truncated — with Bernoulli, Binomial,
        Poisson, Exponential, Normal children; Dirichlet with Categorical or
        Multinomial children), or a per-record Categorical/Bernoulli latent vector.
    temperature
        T ≥ 1: each update of θ_l costs ε_l = 2Δ_l/T.
    epsilon_per_update
        Instead of ``temperature``: the ε one update may cost; T = max(1, 2 max Δ_l/ε).
    bounds
        ``{observed variable: data bounds}`` for likelihoods with unbounded records,
        as for :func:`pymc_dp.loglik_sensitivity`. Records must already lie inside.
    scan
        For a per-record latent: ``"all"`` (default; a sequential scan over every
        record, parallel composition) or an integer Q (a uniformly random subset of
        Q records per draw).
    neighbouring
        ``"replace"`` (default).
    model
        The model (default: the enclosing ``with`` block's).

    Attributes
    ----------
    cost : UpdateCost
        What one draw costs; also emitted per draw as the sample stats
        ``dp_epsilon`` and ``dp_delta``.
    temperature : float

    Raises
    ------
    NotConjugateError
        If a variable's conditional is not among the supported ones (the message
        names the child and suggests :class:`pymc_dp.PrivateMetropolis`).
    ValueError
        If Δ_l is not finite (the message says which truncation, bound or clip to
        declare), records lie outside the declared bounds, or arguments are invalid.

    Examples
    --------
    >>> with pmdp.truncate(model, {"p": (0.05, 0.95)}):  # doctest: +SKIP
    ...     step = pmdp.PrivateGibbs(["p"], temperature=4.0)
    ...     idata = pm.sample(step=[step])
    """

    name = "private_gibbs"

    def __init__(
        self,
        vars: Sequence[Any],
        temperature: float | None = None,
        *,
        epsilon_per_update: float | None = None,
        bounds: Mapping[str, Any] | None = None,
        scan: str | int = "all",
        neighbouring: str = "replace",
        model: Any = None,
        blocked: bool = True,
        rng: Any = None,
    ) -> None:
        import pymc as pm

        model = pm.modelcontext(model)
        self.vars = value_vars_of(model, vars)
        rvs = [model.values_to_rvs[v] for v in self.vars]
        names = [rv.name for rv in rvs]
        reports = {n: self._sensitivity(model, [n], bounds, neighbouring) for n in names}
        self.temperature = resolve_temperature([r.total for r in reports.values()], temperature, epsilon_per_update)
        subset = self._check_scan(scan, rvs, model)
        self.updates: list[Any] = []
        for rv in rvs:
            if is_per_record_latent(model, rv):
                self.updates.append(LatentScan(model, rv, self.temperature, subset))
            else:
                self.updates.append(ConjugateUpdate(model, rv, self.temperature))
        per_update = {n: 2.0 * reports[n].total / self.temperature for n in names}
        latents = [u for u in self.updates if isinstance(u, LatentScan)]
        event = None
        details: dict[str, Any] = {
            "temperature": self.temperature,
            "epsilon_per_update": per_update,
            "derivations": {n: dict(r.derivations) for n, r in reports.items()},
        }
        assumptions = []
        for u in latents:
            details.setdefault("parallel_composition", {})[u.name] = (
                f"one scan updates the {u.records} per-record values of {u.name!r}, each reading only its own "
                "record: the scan costs 2Δ/T once"
            )
            assumptions.append(f"record i is the i-th element of the observed variables that read {u.name!r}")
        if subset is not None and per_update[latents[0].name] > 0:
            q = subset / latents[0].records
            details["random_scan"] = {"updated": subset, "records": latents[0].records, "probability": q}
            if len(names) == 1:
                event = {"type": "random_scan", "epsilon": per_update[names[0]], "probability": q}
        self.cost = UpdateCost(
            mechanism=GIBBS_MECHANISM,
            epsilon=float(sum(per_update.values())),
            delta=0.0,
            touched=", ".join(names),
            temperature=self.temperature,
            sensitivity={n: r.total for n, r in reports.items()},
            event=event,
            assumptions=tuple(assumptions),
            details=details,
        )
        self.rng = np.random.default_rng(rng)

    @staticmethod
    def _check_scan(scan: str | int, rvs: Sequence[Any], model: Any) -> int | None:
        if scan == "all":
            return None
        latents = [rv for rv in rvs if is_per_record_latent(model, rv)]
        if isinstance(scan, bool) or not isinstance(scan, (int, np.integer)) or scan < 1:
            raise ValueError(f"scan must be 'all' or a positive number of records per draw, got {scan!r}.")
        if len(latents) != 1:
            raise ValueError("scan=Q (a random scan) needs exactly one per-record latent variable in the step.")
        n = int(np.size(model.initial_point()[model.rvs_to_values[latents[0]].name]))
        if scan > n:
            raise ValueError(f"scan={scan} exceeds the {n} records of {latents[0].name!r}.")
        return int(scan)

    def step(self, point: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], list[dict[str, Any]]]:
        for update in self.updates:
            point = update.draw(point, self.rng)
        return point, [self.cost_stats()]

    @staticmethod
    def competence(var: Any, has_grad: bool) -> Competence:
        return Competence.INCOMPATIBLE  # never auto-assigned: privacy is opted into
