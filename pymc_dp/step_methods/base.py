"""What every private step method shares: its cost per draw, its temperature, and its sample stats.

A private step is an ordinary PyMC ``BlockedStep`` that

* proves, when it is built, the sensitivity Δ of the log-likelihood terms its
  update reads (:func:`pymc_dp.loglik_sensitivity` with ``wrt=`` its variables;
  [FGWC16] eq. 20), and refuses — naming the truncation, bound or clip to declare —
  when Δ is not finite;
* refuses records outside the declared data bounds (``pmdp.sample(method="gibbs")``
  clips them first and says so; a step cannot clip the model it was given);
* knows its cost per draw, :class:`UpdateCost`, before anything runs;
* emits that cost with every draw as the sample stats ``dp_epsilon`` and
  ``dp_delta`` — tuning draws included — so the ledger can be built from the run
  itself, whichever process ran which chain.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from ..accounting.validation import check_epsilon
from ..model import LoglikSensitivity, loglik_sensitivity
from ..model.tempering import records_outside_bounds

__all__ = ["PrivateStep", "UpdateCost", "resolve_temperature", "DP_STATS"]

#: The per-draw sample stats every private step emits.
DP_STATS = ("dp_epsilon", "dp_delta")


@dataclass(frozen=True)
class UpdateCost:
    """What one draw of a private step costs, known before sampling.

    Attributes
    ----------
    mechanism
        Ledger mechanism name, e.g. ``"private_gibbs"``, ``"private_barker"``.
    epsilon, delta
        The (ε, δ) of one draw (all the step's updates in that draw, composed).
    touched
        The variables updated (the ledger's ``touched``).
    temperature
        The temperature T of the conditionals.
    sensitivity
        ``{variable: Δ_l}`` of each update.
    event
        A machine-readable event for the tight accountants, or ``None`` (a generic
        (ε, δ) event, which for pure ε is already the tight worst case).
    assumptions
        Conditions the cost rests on.
    details
        Further JSON facts for the ledger entry.
    """

    mechanism: str
    epsilon: float
    delta: float
    touched: str
    temperature: float
    sensitivity: Mapping[str, float]
    event: Mapping[str, Any] | None = None
    assumptions: tuple[str, ...] = ()
    details: Mapping[str, Any] = field(default_factory=dict)


def resolve_temperature(
    sensitivities: Iterable[float], temperature: float | None, epsilon_per_update: float | None
) -> float:
    """T from exactly one of ``temperature`` (≥ 1) and ``epsilon_per_update``: T = max(1, 2 max Δ_l / ε)."""
    if (temperature is None) == (epsilon_per_update is None):
        raise ValueError(
            "give exactly one of temperature= (T >= 1; each update then costs 2Δ_l/T) and epsilon_per_update= "
            "(the ε one update may cost; T = max(1, 2Δ_l/ε))."
        )
    if temperature is not None:
        t = check_epsilon(temperature, "temperature")
        if t < 1:
            raise ValueError(f"temperature must be >= 1 (T < 1 sharpens the posterior and costs more), got {t}.")
        return float(t)
    eps = check_epsilon(epsilon_per_update, "epsilon_per_update")
    return max([1.0] + [2.0 * d / eps for d in sensitivities])


def value_vars_of(model: Any, vars: Sequence[Any]) -> list[Any]:
    """The value variables of ``vars`` (random variables, value variables or names)."""
    out = []
    for v in vars:
        if isinstance(v, str):
            v = model[v]
        if v in model.rvs_to_values:
            v = model.rvs_to_values[v]
        if v not in model.value_vars:
            raise ValueError(f"{getattr(v, 'name', v)!r} is not a free variable of the model.")
        out.append(v)
    if not out:
        raise ValueError("a private step needs at least one variable.")
    return out


class PrivateStep:
    """Mixin for the private step methods (used with ``pymc.step_methods.compound.BlockedStep``).

    Subclasses set :attr:`cost` in ``__init__`` and return :meth:`cost_stats` with
    every draw.
    """

    stats_dtypes_shapes = {"dp_epsilon": (np.float64, []), "dp_delta": (np.float64, [])}
    default_blocked = True
    cost: UpdateCost

    def cost_stats(self) -> dict[str, float]:
        return {"dp_epsilon": self.cost.epsilon, "dp_delta": self.cost.delta}

    @staticmethod
    def _sensitivity(
        model: Any, names: Sequence[str], bounds: Mapping[str, Any] | None, neighbouring: str
    ) -> LoglikSensitivity:
        """Δ of the conditional of ``names``; refuses a model with records outside the declared bounds or the support.

        A step built by hand runs on the model as it is and cannot change its records, so
        such a model is refused: a stated limitation (the refusal says that some record lies
        outside; it never says how many or which variable). ``pmdp.sample(method="gibbs")``
        repairs and clips the records of its copy first and refuses nothing for their values.
        """
        report = loglik_sensitivity(model, bounds=bounds, wrt=list(names), neighbouring=neighbouring)
        outside = records_outside_bounds(model, {n: (f, report.bounds[n]) for n, f in report.families.items()})
        if outside:
            raise ValueError(
                "some records lie outside the declared bounds or the support of their likelihood, so the sensitivity "
                "would not hold for a step built on this model. Sample with pmdp.sample(method='gibbs', bounds=...), "
                "which replaces and clips them in its copy (counted for the curator only), or clip them yourself first."
            )
        return report

    @staticmethod
    def _describe(report: LoglikSensitivity) -> dict[str, Any]:
        return {"sensitivity": report.total, "derivations": dict(report.derivations)}


def expm1_neg(x: float) -> float:
    """1 − e^{−x}, accurately for small x."""
    return -math.expm1(-x)
