r"""A log-likelihood clip chosen privately, at the model's start point, inside the same ε.

The tempered routes (``method="ops"``, ``"gibbs"``, ``"ais"``) bound a record's influence by clipping each
log-likelihood term into ``loglik_clip=(lower, upper)``; Δ is ``upper − lower`` per term under replace-one, so the
window should hold the terms of the records where the posterior lies and be no wider. When a request plans only
with such a clip and declares none (nor ``bounds=`` that would take it to another route),
:mod:`pymc_dp.routes.selection` chooses one:

1. the terms of the private observed variable at the model's **start point**: each free variable's support point
   (PyMC's ``support_point``, the prior's centre from its parameters), without jitter, and never an ``initval``
   (initial values are often computed from the records, and this point sets every record's term). One value per
   record, moved by that record alone: its term; a row's mean over its k elements' terms; for a time series, whose
   step enters k consecutive terms (AR(p): k = p + 1), every k-th step's term, so T/k values for T steps. A
   malformed record's term (NaN, infinite, outside the support) reads −10³⁰; a group index out of range reads
   group 0 (that record's term alone moves); if the terms still cannot be evaluated, every term reads −10³⁰;
2. their median ``m`` found privately (:func:`pymc_dp.mechanisms.private_bounds.private_median`: two private
   cells, the quartiles' audited mechanism at q = ½, on a grid from 10⁻³ to 10⁴ either side of 0). A median, not
   quartiles and their spread: a cell outside the middle half scores below −N/4 against the median's 0, and two
   releases take half the share each (a quartile pair four); at the gallery's sizes (N of 100–300, ε = 1) a
   private quartile of the terms landed a decade out and the window with it. Under replace-one the share is
   :func:`median_needed_epsilon` over ε, within [0.05, 0.5];
3. the window from ``m`` and public widths alone (post-processing): ``(m − BELOW, m + ABOVE)``. Δ is 11 nats
   whatever ``m`` is, so the route's price with the chosen clip is the one reserved with a placeholder of that
   width; a route whose price would depend on where the window lies (under add/remove Δ is
   ``max(|lower|, |upper|)``) is planned at two placeholders, and if their prices differ the clip is not chosen
   (declare it).

A **discrete** likelihood (an integer dtype) gets :data:`DISCRETE_CLIP` = (−11, 0) instead, public, with no ε
spent: its terms are log-probabilities, never above 0, and the posterior's lie in that window for most count and
category models; the start point's terms, far below the posterior's when the priors are off, only misplaced it.
The ledger's entries carry it as an assumption.

**Where it is weak.** The start point is not the posterior. A continuous likelihood's terms rise as its scale
shrinks: :data:`ABOVE` (3 nats) lets the posterior's scale be about e⁻³ ≈ 1/20 of the start's, when the priors
are centred on the records, before the best records clip at ``upper``; :data:`BELOW` (8 nats) holds records
about four scales out. Priors far from the records put the window where the posterior's terms are not, every
record clips, the likelihood is flat and the prior comes back: a median below :data:`FAR_BELOW` is warned of (the
released median alone). Under add/remove the share is 0.1 whatever N is (private), and at a few hundred records
or fewer the median is close to uniform over the grid. Centre the priors near the records' scale, or declare
``loglik_clip=``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ..accounting import PrivacyLedger

__all__ = ["ClipRequest", "missing_clip", "clip_window", "median_needed_epsilon", "ABOVE", "BELOW", "DISCRETE_CLIP"]

#: How far above the terms' median a continuous likelihood's window reaches (nats).
ABOVE = 3.0
#: How far below the terms' median the window reaches (nats).
BELOW = 8.0
#: The clip of a discrete likelihood, public: its terms are log-probabilities, never above 0, and a record less
#: likely than e⁻¹¹ ≈ 1.7·10⁻⁵ under the parameters clips. No ε is spent on it (the start point's terms, far below
#: the posterior's when the priors are off, only misplaced the window: 2.3× a declared (−10, 0)'s distance on the
#: rat tumours at ε = 1, with half of ε spent on the choice).
DISCRETE_CLIP = (-11.0, 0.0)
#: What the ledger's entries say of it.
DISCRETE_ASSUMPTION = ("loglik_clip (-11, 0): the public default for a discrete likelihood (log-probabilities are "
                       "at most 0); a record less likely than e^-11 under the parameters clips")
#: A median term below this (nats) is warned of: the start point is far from the records.
FAR_BELOW = -50.0
#: The candidates' decades: 0 and ±10ᵏ for k from -3 to 4 (terms past ±10⁴ nats are of no usable model).
DECADES = (-3, 4)


def median_needed_epsilon(records: int, confidence: float = 0.01) -> float:
    """The ε at which both releases of :func:`~pymc_dp.mechanisms.private_bounds.private_median` land within the
    records' middle half with probability about 1 − β: a cell outside it scores below −N/4, so each release of ε/2
    needs N (ε/2) / 8 ≥ ln(2G/β), G the larger pass's 2,001 candidates — ε = 16 ln(2G/β) / N, half what one range's
    four quartile releases need (:func:`~pymc_dp.routes.selection.needed_epsilon`)."""
    from ..mechanisms.private_bounds import SECOND_PASS_GRID

    return 16.0 * float(np.log(2 * SECOND_PASS_GRID / confidence)) / max(int(records), 1)


def clip_window(median: float) -> tuple[float, float]:
    """The clip from the terms' private median and public widths: ``(m − BELOW, m + ABOVE)``; Δ = ABOVE + BELOW
    whatever the median (public, so the route's price with the chosen clip is the price reserved with the
    placeholder)."""
    return float(median - BELOW), float(median + ABOVE)


@dataclass(frozen=True)
class ClipRequest:
    """A missing ``loglik_clip``, chosen on the terms of ``variable`` at the start point (curator side)."""

    variable: str
    terms: np.ndarray = field(repr=False)
    discrete: bool = False
    per_record: int = 1
    dependent: bool = False
    width = 1
    what = "loglik_clip"

    @property
    def records(self) -> int:
        return int(len(self.terms))

    @property
    def public_window(self) -> tuple[float, float] | None:
        """The window used without a choice: :data:`DISCRETE_CLIP` for a discrete likelihood, else None."""
        return DISCRETE_CLIP if self.discrete else None

    def needed(self, confidence: float) -> float:
        """The ε that makes the median's choice reliable (:func:`median_needed_epsilon`, over one term per record)."""
        return median_needed_epsilon(self.records, confidence)

    def placeholder(self) -> tuple[float, float]:
        """A public clip of the chosen one's width (Δ, hence the route's price, is the same)."""
        return (-BELOW, ABOVE)

    def alternatives(self) -> tuple[tuple[float, float], ...]:
        """A placeholder of the same width elsewhere: a route priced differently there (Δ from where the window lies,
        as under add/remove) cannot have the choice reserved."""
        return ((-BELOW - 100.0, ABOVE - 100.0),)

    def declare(self, declarations: dict[str, Any], value: Any) -> None:
        declarations["loglik_clip"] = value

    def choose(self, epsilon: float, ledger: PrivacyLedger, confidence: float, rng: Any) -> tuple[Any, list, list]:
        """The clip, its ledger entries and what each released, for ``epsilon`` in all."""
        from ..mechanisms.private_bounds import private_median

        picked = private_median(self.terms, epsilon=epsilon, ledger=ledger, decades=DECADES, rng=rng,
                                touched=f"{self.variable}: log-likelihood terms at the start point")
        median = picked.value
        window = clip_window(median)
        if median < FAR_BELOW:  # the released median alone: post-processing
            warnings.warn(
                f"the clip was chosen around a median log-likelihood term of {median:.3g} at the start point (the "
                "priors' centres): records that far from the priors' centre make the posterior's terms lie elsewhere, "
                "and a clip around these may flatten the likelihood so that the prior comes back. Centre the priors "
                "near the records' scale, or declare loglik_clip=.", UserWarning, stacklevel=2)
        reads = ("one per record" if self.per_record == 1 else
                 f"every {self.per_record}-th step's term (a step enters {self.per_record} consecutive ones)"
                 if self.dependent else f"each record's mean over its row's {self.per_record} terms")
        released = {"median of the terms at the start point": median, "clip chosen": list(window),
                    "at": "the start point: each free variable's support point (its prior's centre), no initval",
                    "terms read": reads}
        return window, list(picked.entries), [released] * len(picked.entries)


def _one_per_record(terms: np.ndarray, per_record: Any) -> np.ndarray:
    """One value per record from the terms, each moved by that record alone: a time series' every k-th step (a step
    enters k consecutive terms, so k consecutive ones hold one of these), a row's mean over its k elements' terms."""
    if per_record.dependent:
        return terms.ravel()[::per_record.per_record]
    rows = terms.reshape(terms.shape[0], -1) if terms.ndim else terms.reshape(1, 1)
    return rows.mean(axis=1) if rows.shape[1] > 1 else rows[:, 0]


def missing_clip(model: Any, declared: Any, public: Sequence[str] = ()) -> ClipRequest | None:
    """The :class:`ClipRequest` of a model with one private observed variable whose records each enter their own
    terms, when ``loglik_clip`` is not declared; None otherwise (the route's refusal then stands). Decided from the
    model's structure alone: never from a record's value, nor (under add/remove) from their number."""
    from ..model.loglik_clip import clip_terms, loglik_terms_at_start

    if declared is not None:
        return None
    private = [rv for rv in model.observed_RVs if rv.name not in set(public)]
    if len(private) != 1 or len(model.observed_RVs) != 1:
        return None  # a record spread over several variables: declare the clip
    rv = private[0]
    try:
        per_record = clip_terms(rv, model)
    except ValueError:
        return None
    if per_record.whole:
        return None  # one term holds every record: no quantile of records to take
    if str(rv.type.dtype).startswith(("int", "uint", "bool")):
        return ClipRequest(rv.name, np.zeros(0), discrete=True, per_record=per_record.per_record,
                           dependent=per_record.dependent)  # the public window: no term is read
    terms = loglik_terms_at_start(model, rv.name)  # ValueError (structure) propagates: the refusal stands
    return ClipRequest(rv.name, _one_per_record(terms, per_record), per_record=per_record.per_record,
                       dependent=per_record.dependent)
