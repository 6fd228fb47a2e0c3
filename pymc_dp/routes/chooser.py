"""``method="auto"``: the most accurate sound route for the model and its declarations.

The routes, in the order tried (most accurate first, for the models each serves):

1. ``laplace``: privatised sufficient statistics — the whole posterior, converging to
   the non-private one as N grows, no convergence assumed;
2. ``measurements``: a GLM's score and information released at a few public points
   (private Newton steps), and the posterior given the last release, noise counted (needs
   the covariates' and the outcome's bounds);
3. ``ops``: one tempered posterior draw per chain (needs a proven Δ: a truncation,
   data bounds or a log-likelihood clip);
4. ``gibbs``: private step methods, the whole chain released, every update charged
   (at the same ε usually much hotter than OPS);
5. ``saa``: subsample and aggregate — any model as written, a point estimate with
   an error bar (needs a declared range per parameter).

A route is tried only if it takes every route option given (``loglik_clip=`` rules
out the Laplace route, ``ranges=`` all but ``saa``). The first route that plans —
validates the whole request and prices it, spending nothing — runs, and every ledger
entry it records says which route ran and that it was chosen automatically. If none
plans, one message lists, route by route, what it would need for this model.

The choice is made from the model's structure and the declarations only, so which
route ran never depends on the data: no route refuses because of the records' values.
A malformed record (NaN, infinite, outside its likelihood's support) is replaced by its
family's default record, given a constant clipped log-likelihood term, or left out of
its block, depending on the route, and counted for the curator only (see the threat
model's "Malformed and missing records"); PyMC's imputation of missing values is undone first
(:func:`pymc_dp.model.missing.restore_missing`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any, Callable, Mapping, Sequence

from ..accounting import LedgerEntry, PrivacyLedger
from .base import Ran, RoutePlan
from .options import ROUTE_OPTIONS

__all__ = ["choose_route", "ChosenRoute", "AUTO_ORDER"]

#: Routes in the order ``method="auto"`` tries them.
AUTO_ORDER = ("laplace", "measurements", "ops", "gibbs", "saa")


@dataclass
class ChosenRoute(RoutePlan):
    """A route plan chosen by ``method="auto"``; its entries say so."""

    inner: RoutePlan | None = None
    route: str = ""
    passed_over: Mapping[str, str] | None = None

    @property
    def what(self) -> str:
        return self.inner.what

    @property
    def reads_records(self) -> bool:
        return self.inner.reads_records

    def _mark(self, entries: Sequence[LedgerEntry]) -> list[LedgerEntry]:
        passed = dict(self.passed_over or {})
        return [
            replace(e, details={**e.details, "route": self.route, "route_chosen_by": "method='auto'",
                                "routes_passed_over": sorted(passed), "route_reason": _reason(self.route, passed)})
            for e in entries
        ]

    def run(self) -> Ran:
        ran = self.inner.run()
        return replace(ran, spent=self._mark(ran.spent))

    def spent_on_failure(self, failure: BaseException) -> list[LedgerEntry]:
        return self._mark(self.inner.spent_on_failure(failure))


def _reason(route: str, passed: Mapping[str, str]) -> str:
    """Why ``method="auto"`` ran ``route``, in words for the ledger (from the model and declarations only)."""
    before = [m for m in AUTO_ORDER[:AUTO_ORDER.index(route)]]
    why = "; ".join(f"{m} did not take this model and its declarations" for m in before if m in passed)
    first = f"{route} is the most accurate route in the order {', '.join(AUTO_ORDER)} that takes them"
    return f"{first} ({why})" if why else first


def _route_keywords() -> set[str]:
    return {f.name for cls in ROUTE_OPTIONS.values() for f in fields(cls)}


def choose_route(
    planners: Mapping[str, Callable[..., RoutePlan]],
    model: Any, draws: int, epsilon: float | None, ledger: PrivacyLedger | None, neighbouring: str | None,
    keywords: dict[str, Any],
) -> RoutePlan:
    """Plan the first route of :data:`AUTO_ORDER` that takes the request (see the module docstring).

    ``keywords`` holds route options and ``pm.sample`` keywords together; the route
    options are popped from it.
    """
    given = {k: keywords.pop(k) for k in list(keywords) if k in _route_keywords()}
    refusals: dict[str, str] = {}
    for method in AUTO_ORDER:
        cls = ROUTE_OPTIONS[method]
        own = {f.name for f in fields(cls)}
        foreign = sorted(k for k in set(given) - own if given[k] is not None)  # None: left at its default
        if foreign:
            refusals[method] = f"does not take {', '.join(foreign)}"
            continue
        options = cls(**{k: v for k, v in given.items() if k in own})
        try:
            plan = planners[method](model, draws, epsilon, options, ledger, neighbouring, dict(keywords))
        except ValueError as err:
            refusals[method] = str(err)
            continue
        chosen = ChosenRoute(ledger=plan.ledger, inner=plan, route=method, passed_over=refusals)
        chosen.entries = chosen._mark(plan.entries)
        return chosen
    raise ValueError(
        "no privacy route applies to this model with what was declared (nothing was spent). What each route says:\n"
        + "\n".join(f"- method={m!r}: {why}" for m, why in refusals.items())
        + "\nDeclare what one of them needs (see the route table in the docs), or pass method= to pick one."
    )
