"""A log-likelihood clip chosen privately, at the model's start point, inside the same ε.

The tempered routes (``method="ops"``, ``"gibbs"``) bound a record's influence by clipping each log-likelihood term
into ``loglik_clip=(lower, upper)``; Δ is ``upper − lower`` per term, so the window should hold the terms of the
records where the posterior lies and be no wider. When a request plans only with such a clip and declares none
(nor ``bounds=`` that would take it to another route), :mod:`pymc_dp.routes.selection` chooses one:

1. the terms of the private observed variable at the model's **start point** — PyMC's initial point without
   jitter: the priors' central values and declared ``initval``\\ s, public — one term per record (the every
   ``k``-th term where one record enters ``k`` consecutive ones: a row of ``k`` elements, an AR(p) step with
   ``k = p + 1``; so one record moves one of them);
2. their median ``m`` found privately (:func:`pymc_dp.mechanisms.private_bounds.private_median`: two private
   cells, the quartiles' audited mechanism at q = ½, on a grid from 10⁻³ to 10⁴ either side of 0). A median, not
   quartiles and their spread: a cell far from the terms scores −N/2 against the median's (−N/4 for a quartile),
   and two releases take half the share each (a quartile pair four); at the gallery's sizes (N of 100–300, ε = 1)
   a quartile landed a decade out and the window with it;
3. the window, from ``m`` and public widths alone (post-processing): ``upper`` is 0 for a discrete likelihood (a
   probability's log is never above it), else ``m + ABOVE``; ``lower`` is ``min(m, upper) − BELOW``. Δ is then
   ``ABOVE + BELOW`` (11 nats) for a continuous likelihood, ``BELOW − m`` (at least 8) for a discrete one.

**Where it is weak.** The start point is not the posterior. A continuous likelihood's terms rise as its scale
shrinks: :data:`ABOVE` (3 nats) allows a posterior scale down to about e⁻³ ≈ 1/20 of the start's before the best
records' terms are clipped at ``upper``; :data:`BELOW` (8 nats) holds records up to four scales out at the start.
Priors far from the records (a start whose terms are thousands of nats down) place the window where the
posterior's terms are not: every record then clips, the likelihood is flat and the prior comes back. Centre the
priors near the records' scale, or declare ``loglik_clip=``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ..accounting import PrivacyLedger

__all__ = ["ClipRequest", "missing_clip", "clip_window", "median_needed_epsilon", "ABOVE", "BELOW"]

#: How far above the terms' median a continuous likelihood's window reaches (nats).
ABOVE = 3.0
#: How far below the terms' median the window reaches (nats).
BELOW = 8.0
#: The candidates' decades: 0 and ±10ᵏ for k from -3 to 4 (terms past ±10⁴ nats are of no usable model).
DECADES = (-3, 4)


def median_needed_epsilon(records: int, confidence: float = 0.01) -> float:
    """The ε at which both releases of :func:`~pymc_dp.mechanisms.private_bounds.private_median` land within the
    records' middle half with probability about 1 − β: a cell outside it scores below −N/4, so each release of ε/2
    needs N (ε/2) / 8 ≥ ln(2G/β), G the larger pass's 2,001 candidates — ε = 16 ln(2G/β) / N, half what one range's
    four quartile releases need (:func:`~pymc_dp.routes.selection.needed_epsilon`)."""
    from ..mechanisms.private_bounds import SECOND_PASS_GRID

    return 16.0 * float(np.log(2 * SECOND_PASS_GRID / confidence)) / max(int(records), 1)


def clip_window(median: float, discrete: bool) -> tuple[float, float]:
    """The clip from the terms' private median and public widths (see the module docstring)."""
    upper = 0.0 if discrete else median + ABOVE
    return float(min(median, upper) - BELOW), float(upper)


@dataclass(frozen=True)
class ClipRequest:
    """A missing ``loglik_clip``, chosen on the terms of ``variable`` at the start point (curator side)."""

    variable: str
    terms: np.ndarray = field(repr=False)
    discrete: bool = False
    per_record: int = 1
    width = 1
    what = "loglik_clip"

    @property
    def records(self) -> int:
        return int(len(self.terms))

    def needed(self, confidence: float) -> float:
        """The ε that makes the median's choice reliable (:func:`median_needed_epsilon`, over one term per record)."""
        return median_needed_epsilon(self.records, confidence)

    def placeholder(self) -> tuple[float, float]:
        return (-10.0, 0.0)

    def declare(self, declarations: dict[str, Any], value: Any) -> None:
        declarations["loglik_clip"] = value

    def choose(self, epsilon: float, ledger: PrivacyLedger, confidence: float, rng: Any) -> tuple[Any, list, list]:
        """The clip, its ledger entries and what each released, for ``epsilon`` in all."""
        from ..mechanisms.private_bounds import private_median

        picked = private_median(self.terms, epsilon=epsilon, ledger=ledger, decades=DECADES, rng=rng,
                                touched=f"{self.variable}: log-likelihood terms at the start point")
        median = picked.value
        window = clip_window(median, self.discrete)
        released = {"median of the terms at the start point": median, "clip chosen": list(window),
                    "at": "the model's start point (priors and initvals, no jitter)",
                    "terms used": "one per record" + (f" (every {self.per_record}th term: a record enters "
                                                      f"{self.per_record} consecutive ones)"
                                                      if self.per_record > 1 else "")}
        return window, list(picked.entries), [released] * len(picked.entries)


def missing_clip(model: Any, declared: Any, public: Sequence[str] = ()) -> ClipRequest | None:
    """The :class:`ClipRequest` of a model with one private observed variable whose records each enter their own
    terms, when ``loglik_clip`` is not declared; None otherwise (the route's refusal then stands)."""
    from ..model.loglik_clip import clip_terms, loglik_terms_at_start

    if declared is not None:
        return None
    private = [rv for rv in model.observed_RVs if rv.name not in set(public)]
    if len(private) != 1 or len(model.observed_RVs) != 1:
        return None  # a record spread over several variables: declare the clip
    rv = private[0]
    try:
        per_record = clip_terms(rv, model)
        terms = loglik_terms_at_start(model, rv.name)
    except Exception:  # noqa: BLE001 - a model the clip cannot copy or evaluate: the route's refusal says why
        return None
    subset = terms[::per_record.per_record]
    if subset.size < 2:
        return None  # one term holds every record: no quantile of records to take
    return ClipRequest(rv.name, subset, discrete=str(rv.type.dtype).startswith(("int", "uint", "bool")),
                       per_record=per_record.per_record)
