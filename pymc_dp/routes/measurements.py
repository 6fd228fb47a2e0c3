"""The measurements route of ``pmdp.sample``: a private algorithm's measurements released once, then free sampling.

For any GLM (the ``newton`` engine, :mod:`pymc_dp.model.score_measurements`) the
log-likelihood's score and information are released at a few public points, and the copy of
the model conditions on the last release through the one-step likelihood. For a logistic
regression (the ``gradients`` engine) (``pm.Bernoulli`` with ``logit_p = [a +] X @ beta``), which
the Laplace route cannot privatise, the noisy-gradient heuristic's gradient sums are
released (and, unless public covariate rows are given, the covariates' second
moment), and the copy of the model samples the posterior given those releases with
the noise and the unseen records integrated out
(:mod:`pymc_dp.model.privatize_logistic`). As on the Laplace route, the spend is the
release: the entries stay if sampling later fails, and sampling never reads a record.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from ..accounting import LedgerEntry, PrivacyLedger, resolve_ledger
from ..model.privatize_logistic import LogisticPrivatization, plan_logistic_privatization
from ..model.score_measurements import ScorePrivatization, plan_score_privatization
from ..trace import check_release_plan
from .base import Ran, RoutePlan, check_initvals, check_step_model, public_names
from .laplace import sample_released
from .options import Measurements

__all__ = ["plan_measurements", "MeasurementsPlan"]


@dataclass
class MeasurementsPlan(RoutePlan):
    """The measurements route, validated and priced: the releases to draw and the model to sample."""

    draws: int = 1000
    privatization: LogisticPrivatization | ScorePrivatization | None = None
    noise_rng: Any = None
    pm_kwargs: Mapping[str, Any] = field(default_factory=dict)
    _scratch: PrivacyLedger | None = None

    @property
    def what(self) -> str:
        if isinstance(self.privatization, ScorePrivatization):
            return "releasing a GLM's score and information"
        return "releasing a logistic regression's noisy gradients"

    @property
    def reads_records(self) -> bool:
        return False  # the sampled model holds released statistics only

    def run(self) -> Ran:
        self._scratch = PrivacyLedger(neighbouring=self.ledger.neighbouring)
        private = self.privatization.release(self._scratch, self.noise_rng)
        return sample_released(private.model, self.draws, self.pm_kwargs, self.spent_on_failure(None),
                               start=private.start() if hasattr(private, "start") else None)

    def spent_on_failure(self, failure: BaseException | None) -> list[LedgerEntry]:
        spent = list(self._scratch.entries) if self._scratch is not None else []
        return [replace(e, details={"route": "measurements", **e.details}) for e in spent]


#: The gradients engine's own options, and their defaults: giving one of them picks that engine under "auto".
_GRADIENT_OPTIONS = {"features": "measured", "feature_share": 0.2, "iterations": 10, "learning_rate": 10.0,
                     "covariance": "auto", "noise": "auto"}


def _is_default(value: Any, default: Any) -> bool:
    if isinstance(default, str):
        return isinstance(value, str) and value == default
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == default


def _engine(options: Measurements) -> str:
    if options.engine not in ("auto", "newton", "objective", "gradients"):
        raise ValueError(f"engine must be 'auto', 'newton', 'objective' or 'gradients', got {options.engine!r}.")
    if options.engine != "auto":
        return options.engine
    given = [k for k, default in _GRADIENT_OPTIONS.items() if not _is_default(getattr(options, k), default)]
    return "gradients" if given else "newton"


def plan_measurements(
    model: Any, draws: int, epsilon: float | None, options: Measurements, ledger: PrivacyLedger | None,
    neighbouring: str | None, pm_kwargs: Mapping[str, Any],
) -> MeasurementsPlan:
    """Validate ``pmdp.sample(method="measurements")`` completely and price it (see :func:`pymc_dp.sample`)."""
    if epsilon is None:
        raise ValueError("pass epsilon=, the budget of the released measurements (the privacy flag).")
    check_step_model(pm_kwargs, True, "measurements", "one whose records are replaced by the released measurements")
    ledger = resolve_ledger(ledger, neighbouring)
    public = public_names(options.public)
    if _engine(options) == "gradients":
        privatization = plan_logistic_privatization(
            model, epsilon, bounds=options.bounds, features=options.features, feature_share=options.feature_share,
            iterations=options.iterations, learning_rate=options.learning_rate, covariance=options.covariance,
            noise=options.noise, public=public, neighbouring=ledger.neighbouring,
        )
    else:
        privatization = plan_score_privatization(model, epsilon, bounds=options.bounds, rounds=options.rounds,
                                                 public=public, neighbouring=ledger.neighbouring,
                                                 engine=options.engine)
    check_release_plan(model, pm_kwargs.get("var_names"), ledger.neighbouring, public)
    check_initvals(model, pm_kwargs.get("initvals"))
    return MeasurementsPlan(
        ledger=ledger, entries=privatization.entries(), draws=draws, privatization=privatization,
        noise_rng=options.noise_rng, pm_kwargs=dict(pm_kwargs),
    )
