"""Private Newton steps: a log-likelihood's score and information released at a few public points.

For a likelihood that is a sum of per-record terms ℓ_i(φ) of a small parameter vector φ, the
curator releases, at a point φ_t that is itself public (the prior's centre, or a function of
earlier releases):

* the score ``g_t = Σ_i clip(∇ℓ_i(φ_t), C_g)`` (d numbers), and
* the information's upper triangle ``h_t = Σ_i clip(vech −∇²ℓ_i(φ_t), C_H)`` (d(d+1)/2 numbers),

each with Laplace noise scaled to its clip (L1 norm per record: Δ = 2C under replace-one, C
under add/remove). Where the clips are chosen privately, rounds after the first weight both norms
by the last release's scale (:func:`score_weights`): coordinate j of the score by w_j, entry (i, j)
of the information by w_i w_j, each getting noise that many times the base scale. The next point is the mean of a Gaussian that the releases so far update
from a summary of the prior — a Newton step weighted by its noise, the older rounds discounted
(an extended Kalman filter) — post-processing, free. After the last round the released
score and information give the one-step likelihood a noise-aware posterior conditions on
(:mod:`pymc_dp.model.score_measurements`): with the point within a few posterior standard
deviations of the truth, ``g ≈ I (φ − φ_t) + N(0, I)`` plus the noise, whatever the
likelihood (the classical one-step estimator).

Clipping each record's terms is what makes the release private, whatever clips are used, as long
as the clips themselves are public or released privately: the clips decide how much noise is added
and how many records are cut (counted for the curator only). ``clips(point)`` gives a public worst
case at each point (from declared bounds, :mod:`pymc_dp.model.score_measurements`); with a
``schedule.clip_selection`` each round first lowers it to a high quantile of the records' own
norms, chosen by the exponential mechanism on part of the round's ε
(:mod:`pymc_dp.mechanisms.private_clip`; replace-one only, since whether the choice is made
depends on N).

The whole run is reserved on the ledger before the first draw (per round: an entry for each clip
chosen, then one for the score and one for the information); if a round fails after noise was
drawn, the entries drawn so far are recorded before the error propagates (what was released is
spent).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

import numpy as np

from ..accounting.curator import curator_report
from ..accounting.event_types import LaplaceEvent
from .noise import _require_ledger, resolve_noise_source
from .private_clip import ClipSelection

if TYPE_CHECKING:  # pragma: no cover
    from ..accounting import LedgerEntry, PrivacyLedger

__all__ = ["ClippedTermsWarning", "NewtonRound", "NewtonRun", "NewtonSchedule", "private_newton", "clip_rows_l1", "vech",
           "unvech", "information_scales", "information_weights"]


def vech(matrices: np.ndarray) -> np.ndarray:
    """The upper triangles (diagonal included) of a stack of symmetric d × d matrices, row by row."""
    d = matrices.shape[-1]
    rows, cols = np.triu_indices(d)
    return matrices[..., rows, cols]


def unvech(values: np.ndarray, d: int) -> np.ndarray:
    """The symmetric d × d matrix whose upper triangle is ``values`` (the inverse of :func:`vech`)."""
    out = np.zeros((d, d))
    rows, cols = np.triu_indices(d)
    out[rows, cols] = values
    out[cols, rows] = values
    return out


def clip_rows_l1(rows: np.ndarray, bound: float) -> tuple[np.ndarray, int]:
    """Each row scaled into the L1 ball of radius ``bound``; rows that were not finite become 0. Returns the rows
    and how many were changed (for the curator only)."""
    finite = np.all(np.isfinite(rows), axis=1)
    rows = np.where(finite[:, None], rows, 0.0)
    norms = np.abs(rows).sum(axis=1)
    factor = np.minimum(1.0, bound / np.maximum(norms, 1e-300))
    return rows * factor[:, None], int((~finite).sum() + (norms > bound).sum())


@dataclass(frozen=True)
class NewtonSchedule:
    """How ε is spent over ``rounds`` releases: the last takes ``final_share`` of ε; the pilot rounds before it share
    the rest evenly. Within a round ``score_share`` (pilots) or ``final_score_share`` (last) of its ε
    goes to the score, the rest to the information."""

    rounds: int = 4
    final_share: float = 0.6
    score_share: float = 0.5
    final_score_share: float = 0.75
    #: How each release's clip is chosen privately (None: the ``clips`` callable's worst case, nothing spent), and
    #: over how many records (public under replace-one: whether a choice is worth making depends on it).
    clip_selection: ClipSelection | None = None
    records: int = 0

    def _shares(self, epsilon: float) -> list[tuple[float, float]]:
        final = epsilon if self.rounds == 1 else epsilon * self.final_share
        pilots = [epsilon * (1 - self.final_share) / (self.rounds - 1)] * (self.rounds - 1) if self.rounds > 1 else []
        return ([(float(e) * self.score_share, float(e) * (1 - self.score_share)) for e in pilots]
                + [(final * self.final_score_share, final * (1 - self.final_score_share))])

    def choices(self, epsilon: float) -> list[tuple[float, float]]:
        """(ε of the score's clip choice, ε of the information's) of each round: all 0 (the worst cases kept) unless
        every release's choice is worth making. A choice in the last round alone made Gamma regressions worse, not
        better (N = 10⁴, ε = 1, 20 releases: 41–54× the sampling s.d. and 0.7–0.8 coverage against 31–47× and
        0.75–0.9 with the worst cases): the pilots, noisy at the worst case, leave the last point far from the
        parameters, where clipping at the records' own tail cuts systematically."""
        selection, shares = self.clip_selection, self._shares(epsilon)
        if selection is None or not all(selection.worthwhile(self.records, e) for pair in shares for e in pair):
            return [(0.0, 0.0)] * len(shares)
        return [(selection.share * s, selection.share * i) for s, i in shares]

    def budgets(self, epsilon: float) -> list[tuple[float, float]]:
        """(ε of the score's noise, ε of the information's) of each round, in order (what the clips' choices leave)."""
        return [(s - cs, i - ci) for (s, i), (cs, ci) in zip(self._shares(epsilon), self.choices(epsilon))]


class ClippedTermsWarning(UserWarning):
    """To the curator only (:func:`pymc_dp.curator_reports`): records' score or information terms lay beyond a
    round's clip and were scaled into it. Their count is not released; filter on this class to silence it."""


@dataclass(frozen=True)
class NewtonRound:
    """One round's public numbers: the point, the released score and information, their noise scales and clips."""

    point: np.ndarray
    score: np.ndarray
    information: np.ndarray
    #: the score's Laplace scale: one number, or one per coordinate where the round weighted its clip
    #: (:func:`score_weights`)
    score_scale: float | np.ndarray
    #: the information's Laplace scale: one number, or a symmetric d × d matrix, entry (i, j) w_i w_j times the base
    #: scale, where the round weighted its clip (:func:`information_weights`); see :func:`information_scales`
    information_scale: float | np.ndarray
    score_clip: float
    information_clip: float
    #: the entries of the information that can be non-zero for some record (d × d, symmetric; None: all). The
    #: others are zero for every record (a record is in one group of an ``a[idx]``), not released and carry no noise.
    support: np.ndarray | None = None
    #: the score's weights (:func:`score_weights`; the clip is then on ``Σ_j |g_j| / w_j``, the noise w_j-fold), or
    #: None where the round clipped the plain L1 norm
    score_weights: np.ndarray | None = None


def information_scales(release: NewtonRound) -> np.ndarray:
    """Each entry's Laplace scale in ``release``'s information, d × d (0 where the support releases none)."""
    d = len(release.score)
    scales = np.broadcast_to(np.asarray(release.information_scale, dtype=float), (d, d)).copy()
    return scales if release.support is None else np.where(np.asarray(release.support, dtype=bool), scales, 0.0)


def information_weights(weights: np.ndarray) -> np.ndarray:
    """The information's weights from the score's (vech of w wᵀ): entry (i, j) of a record's information scales like
    √(I_ii I_jj), so w_i w_j gives every entry noise in proportion to its own size, as w_j does the score's. Without
    it one scale served every entry, and a nuisance's small diagonal (a negative binomial's log α beside its
    coefficients, 30× smaller) came out a third noise."""
    weights = np.asarray(weights, dtype=float)
    return vech(np.outer(weights, weights))


@dataclass(frozen=True)
class NewtonRun:
    """Every round of :func:`private_newton`, and the entries recorded."""

    rounds: tuple[NewtonRound, ...]
    entries: tuple[Any, ...] = ()

    @property
    def final(self) -> NewtonRound:
        return self.rounds[-1]


def _absolute(matrix: np.ndarray) -> np.ndarray:
    """The symmetric matrix with ``matrix``'s eigenvectors and the absolute values of its eigenvalues: far from the
    parameters the information may have negative curvature, and a step along it must still be a moderate ascent."""
    values, vectors = np.linalg.eigh((matrix + matrix.T) / 2)
    return (vectors * np.abs(values)) @ vectors.T


#: The most numbers (scores and information entries over the records) a round keeps from computing the records'
#: norms for its private clips to summing them (about 80 MB); beyond, the records' terms are computed again.
KEPT_TERMS = 10_000_000


#: The largest L1 clip of a record's score or information a round releases at: a worst case beyond it (bounds decades
#: too wide for an exponential link, whose terms grow like exp(β·x)) would give noise whose square overflows a double
#: in the one-step likelihood, and a release that says nothing at any ε.
MAX_CLIP = 1e100


def check_clips(score_clip: float, information_clip: float, when: str) -> None:
    """Refuse clips that are not finite or exceed :data:`MAX_CLIP` (public: functions of the bounds and the point)."""
    pair = np.array([score_clip, information_clip], dtype=float)
    worst = float(np.max(np.where(np.isnan(pair), np.inf, pair)))
    if worst > MAX_CLIP:
        raise ValueError(
            f"{when}, a record's score or information can reach {worst:.3g} within the declared bounds: the noise "
            f"that covers it would overflow a double and the release would say nothing. Declare narrower bounds "
            "(the covariates' 'x' and the outcome's 'y'; with a log or logit link a wide 'x' range makes exp(β·x) "
            "enormous), or rescale the data.")


#: How much of what the earlier rounds said the next point keeps (their precision is multiplied by it): early rounds
#: were measured far from the parameters, where the quadratic is least accurate, so newer ones must be able to move
#: the point.
FORGETTING = 0.3


@dataclass
class PilotState:
    """What the pilot rounds say of φ so far: a Gaussian (mean, precision), starting at the prior's summary."""

    mean: np.ndarray
    precision: np.ndarray

    def update(self, point: np.ndarray, score: np.ndarray, information: np.ndarray,
               score_scale: float | np.ndarray) -> None:
        """Condition on one round's release, read as g ~ N(I (φ − φ_t), I + 2 b² 𝟙) (I with its eigenvalues made
        positive, b the score's Laplace scale): an extended Kalman step, the older rounds' precision discounted by
        :data:`FORGETTING`, and further while they disagree with this round beyond its noise
        (:func:`stale_discount`)."""
        d = len(score)
        info = _absolute(information)
        noise = info + np.diag(2.0 * np.broadcast_to(np.square(score_scale), (d,)))
        gain = info @ np.linalg.solve(noise, np.eye(d))  # Iᵀ C⁻¹
        kept = stale_discount(self.mean, self.precision, point, info, score, noise)
        self.precision = kept * self.precision + gain @ info
        self.mean = self.mean + np.linalg.solve(self.precision, gain @ (score - info @ (self.mean - point)))


#: How far (a χ² quantile of the round's own dimension) the older rounds' summary may lie from what one round says
#: alone before it is discounted further.
STALE_QUANTILE = 0.999
#: The least the older rounds keep of their precision however stale they look: without this floor a single round
#: whose information is mostly noise could carry the point a whole trust region away (measured on Gamma regressions:
#: the rare release that did ended up 10–100× wider than the rest).
STALE_FLOOR = FORGETTING / 16


@functools.lru_cache(maxsize=64)
def _stale_limit(dimension: int) -> float:
    """The :data:`STALE_QUANTILE` quantile of χ² with ``dimension`` degrees of freedom."""
    from scipy.stats import chi2

    return float(chi2.ppf(STALE_QUANTILE, dimension))


def stale_discount(mean: np.ndarray, precision: np.ndarray, point: np.ndarray, information: np.ndarray,
                   score: np.ndarray, noise: np.ndarray) -> float:
    """The factor the older rounds' precision keeps: :data:`FORGETTING`, halved down to :data:`STALE_FLOOR` while
    their mean and this round's own estimate disagree beyond their noise.

    Each round reads the log-likelihood as a quadratic at its own point. Far from the parameters (a shape or
    dispersion parameter started at its prior's centre, coefficients whose first pilot overshot) that quadratic is
    wrong by more than the round's noise, and rounds measured there keep pulling the point back: on Gamma
    regressions (N = 10⁵, ε = 1) the last point stayed 0.3–0.8 from log k after six rounds. This round alone
    estimates φ at ``point + I⁻¹ g`` with covariance ``I⁻¹ C I⁻¹`` (C = ``noise``, the score's). When that estimate
    lies beyond the :data:`STALE_QUANTILE` χ² quantile of the combined covariance from the older summary
    (``mean``, ``precision``), the older rounds are stale and weigh less. The distance is computed without
    inverting I: with ``r = g + I (φ_t − mean)``, it is ``rᵀ (C + I (f P)⁻¹ I)⁻¹ r`` (C is positive definite: it
    holds the score's noise). A distance that is not finite (a degenerate release) leaves the older rounds their
    :data:`FORGETTING` share. The information's own noise is not counted, so at small N·ε a round may look stale
    when it is only noisy: the floor bounds what that costs. Post-processing of released numbers only."""
    limit = _stale_limit(len(mean))
    innovation = score + information @ (point - mean)
    older = np.linalg.pinv(precision)
    factor = FORGETTING
    with np.errstate(all="ignore"):
        while factor > STALE_FLOOR:
            try:
                distance = float(innovation @ np.linalg.solve(noise + information @ older @ information / factor,
                                                              innovation))
            except np.linalg.LinAlgError:
                return FORGETTING
            if not np.isfinite(distance):
                return FORGETTING
            if distance <= limit:
                break
            factor /= 2.0
    return factor


#: The ledger's detail holding each round's weights (public: functions of the earlier releases).
WEIGHTS_DETAIL = ("score weights by round (clip on Σ|g_j|/w_j, noise w_j-fold; the information's entry (i, j) "
                  "w_i·w_j-fold, its clip on Σ|H_ij|/(w_i·w_j))")

#: The most one coordinate's score weight may exceed the smallest (:func:`score_weights`).
MAX_WEIGHT_RATIO = 30.0
#: How many of its noise s.d. each diagonal entry of the information gets added before its square root is a weight
#: (:func:`score_weights`): where the noise is as large as the entries, the weights stay near 1.
WEIGHT_NOISE_FLOOR = 3.0


def score_weights(information: np.ndarray, information_scale: float | np.ndarray) -> np.ndarray:
    """The next round's score weights from a released information (post-processing): w_j ∝ √(I_jj + 3√2 b_H), the
    smallest 1 (b_H the diagonal entry's Laplace scale: one number, or a d × d matrix of them).

    A record's score is clipped in the weighted L1 norm ``Σ_j |g_j| / w_j`` and coordinate j gets Laplace noise of
    scale 2 C w_j / ε: still ε-DP (a record moves the released vector by at most 2C in that norm under
    replace-one), and since every w_j ≥ 1 the weighted norm is at most the plain L1 norm, so the public worst case
    still bounds it. Each coordinate's noise then follows its own sampling s.d.: with groups (``a[idx] + b * x``) a
    group's coefficient rests on its own records and the shared slope on all of them, and one scale for both gave
    the groups the slope's noise. Each entry gets :data:`WEIGHT_NOISE_FLOOR` times its noise s.d. (√2 b_H) added
    first, so an information that is mostly noise leaves the weights near 1 (on a Bernoulli hierarchy at N = 10⁴
    the entries' noise is of their own size) — or, where that round was itself weighted (its diagonal's noise
    w_j²-fold), near the previous round's weights — and the ratio is capped at :data:`MAX_WEIGHT_RATIO`."""
    diagonal = np.diag(np.asarray(information, dtype=float))
    scale = np.asarray(information_scale, dtype=float)
    scale = np.diag(scale) if scale.ndim == 2 else np.broadcast_to(scale, diagonal.shape)
    spread = WEIGHT_NOISE_FLOOR * np.sqrt(2.0) * scale  # the diagonal's noise s.d., times 3
    with np.errstate(all="ignore"):
        raw = np.sqrt(np.maximum(np.where(np.isfinite(diagonal), diagonal, 0.0), 0.0) + np.maximum(spread, 1e-300))
    weights = raw / raw.min()
    return np.minimum(weights, MAX_WEIGHT_RATIO) if np.all(np.isfinite(weights)) else np.ones_like(raw)


def _add_laplace(source: Any, values: np.ndarray, scales: float | np.ndarray) -> np.ndarray:
    """``values`` with Laplace noise of ``scales`` (one, or one per coordinate: each distinct scale drawn by the
    source at that scale, never unit noise multiplied afterwards, so OpenDP's floating-point-safe sampling holds)."""
    if np.ndim(scales) == 0:
        return source.add_laplace(values, float(scales))
    out = np.array(values, dtype=float)
    scales = np.asarray(scales, dtype=float)
    for scale in np.unique(scales):
        at = scales == scale
        out[at] = source.add_laplace(out[at], float(scale))
    return out


def newton_step(point: np.ndarray, state: PilotState, bound_step: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """The next point: the pilot state's mean, the move from ``point`` shortened by ``bound_step`` (a trust region;
    all post-processing of released numbers)."""
    return point + bound_step(state.mean - point)


def entries_for(epsilons: Sequence[tuple[float, float]], neighbouring: str, touched: str,
                assumptions: Sequence[str], details: dict, noise_source: str = "none",
                choices: Sequence[tuple[float, float]] | None = None,
                selection: ClipSelection | None = None) -> list["LedgerEntry"]:
    """The ledger entries of a run with these per-round budgets, in the order their noise is drawn: each round's
    clip choices (where ``choices`` gives them a positive ε), then its score and information."""
    from ..accounting import LedgerEntry

    out = []

    def add(eps: float, what: str) -> None:
        out.append(LedgerEntry("laplace", eps, count=1, event=LaplaceEvent(noise_multiplier=1.0 / eps),
                               neighbouring=neighbouring, touched=f"{touched}: {what}", noise_source=noise_source,
                               assumptions=tuple(assumptions), details=dict(details)))

    def choose(eps: float, what: str) -> None:
        chosen = {"algorithm": "private clip: exponential mechanism over a geometric grid, utility −|records above "
                               "− target| (sensitivity 1)", "sensitivity": 1.0, "num_candidates": selection.grid,
                  "target (records above)": float(selection.rank_error(eps)), "safety": selection.safety}
        out.append(LedgerEntry("exponential", eps, count=1, event=None, neighbouring=neighbouring,
                               touched=f"{touched}: {what}", noise_source=noise_source,
                               assumptions=tuple(assumptions), details={**details, **chosen}))

    choices = choices if choices is not None else [(0.0, 0.0)] * len(epsilons)
    last = len(epsilons) - 1
    for t, ((eps_score, eps_info), (choice_score, choice_info)) in enumerate(zip(epsilons, choices)):
        where = "the final point" if t == last else f"pilot point {t + 1}"
        if choice_score > 0:
            choose(choice_score, f"score's clip at {where}")
        if choice_info > 0:
            choose(choice_info, f"information's clip at {where}")
        add(eps_score, f"score at {where}")
        add(eps_info, f"information at {where}")
    return out


def _takes_weights(clips: Callable) -> bool:
    """Whether ``clips`` accepts score weights after the point (``clips(point, weights)``)."""
    import inspect

    try:
        parameters = list(inspect.signature(clips).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in parameters)


def private_newton(
    per_record: Callable[[np.ndarray], Iterable[tuple[np.ndarray, np.ndarray]]],
    clips: Callable[..., tuple[float, float]],
    *,
    start: np.ndarray,
    prior_mean: np.ndarray,
    prior_precision: np.ndarray,
    bound_step: Callable[[np.ndarray], np.ndarray],
    epsilon: float,
    schedule: NewtonSchedule,
    ledger: "PrivacyLedger",
    rng: Any = None,
    touched: str = "score and information",
    assumptions: Sequence[str] = (),
    details: dict | None = None,
    support: np.ndarray | None = None,
    first_weights: np.ndarray | None = None,
) -> NewtonRun:
    """Run the private Newton rounds (see the module docstring) and charge ``ledger``.

    Parameters
    ----------
    per_record
        ``per_record(point)`` yields chunks ``(scores, information)`` of the records' terms at
        ``point``: (n, d) per-record gradients and (n, d(d+1)/2) upper triangles of the per-record
        negative Hessians. Chunks let large data sets pass in pieces.
    clips
        ``clips(point)``: the L1 clips (C_g, C_H) at ``point``, computed from public quantities: the worst case that
        ``schedule.clip_selection`` (if any) lowers privately. Where the clips are chosen, rounds after the first
        clip the score and the information in weighted L1 norms (:func:`score_weights`, every weight ≥ 1;
        :func:`information_weights`); a ``clips(point, weights)`` gives those norms' worst cases (tighter), a
        ``clips(point)`` the L1 ones, which bound them too.
    start, prior_mean, prior_precision, bound_step
        The first point, the Gaussian summary of the prior, and the trust region that shortens a
        pilot step (all public).
    epsilon, schedule
        The total ε and how the rounds divide it (:class:`NewtonSchedule`).
    support
        Optional d × d boolean matrix: the entries of the information some record can make non-zero (public, from
        the model's structure). Only those are released (each record's terms projected onto them first, which
        cannot raise its L1 norm); the others are exactly zero and noiseless.
    first_weights
        Optional public score weights of the first round (each ≥ 1; see :func:`score_weights`; the information's
        entry (i, j) then weighs w_i·w_j), ``clips`` then giving the weighted norms' clips; later rounds take theirs
        from the releases where the clips are chosen.
    """
    ledger = _require_ledger(ledger)
    if schedule.clip_selection is not None and ledger.neighbouring != "replace":
        raise ValueError(
            "private clips (schedule.clip_selection) decide from the number of records whether a choice is worth "
            f"making, and the ledger's neighbouring is {ledger.neighbouring!r}, under which that number is private: "
            "use a replace-one ledger, or a schedule without clip_selection (the clips given). Nothing was spent.")
    source = resolve_noise_source(rng)
    factor = 2.0 if ledger.neighbouring == "replace" else 1.0
    weighted_clips = _takes_weights(clips)
    budgets, choices = schedule.budgets(float(epsilon)), schedule.choices(float(epsilon))
    planned = entries_for(budgets, ledger.neighbouring, touched, assumptions,
                          {**(details or {}), "rounds": len(budgets)}, noise_source=source.name, choices=choices,
                          selection=schedule.clip_selection)
    d = int(np.size(start))
    if first_weights is not None:
        first_weights = np.asarray(first_weights, dtype=float)
        if first_weights.shape != (d,) or not np.all(np.isfinite(first_weights)) or np.any(first_weights < 1.0):
            raise ValueError(f"first_weights must hold {d} finite numbers, each ≥ 1 (the weighted norm must not exceed "
                             f"the L1 one), got {first_weights!r}. Nothing was spent.")
    kept = np.ones(d * (d + 1) // 2, dtype=bool) if support is None else vech(np.asarray(support, dtype=float)) != 0
    point = np.asarray(start, dtype=float).copy()
    rounds: list[NewtonRound] = []
    state = PilotState(np.asarray(prior_mean, dtype=float).copy(), np.diag(np.asarray(prior_precision, dtype=float)))
    cut = 0
    drawn = 0  # how many of the planned entries' noise has been drawn (in their order): what a failure still costs

    def commit(reservation: Any, upto: int) -> tuple:
        clips_used = [[float(r.score_clip), float(r.information_clip)] for r in rounds]
        used = {"clips (score, information) by round": clips_used}
        if any(r.score_weights is not None for r in rounds):  # public: functions of the earlier releases
            used[WEIGHTS_DETAIL] = [
                None if r.score_weights is None else [round(float(w), 4) for w in r.score_weights] for r in rounds]
        return reservation.commit([replace(e, details={**e.details, **used}) for e in planned[:upto]])

    def norms(point: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray, list | None]:
        """The records' weighted L1 norms at ``point``, and their terms when they fit in :data:`KEPT_TERMS` numbers
        (None: the sums read them again)."""
        score_norms, info_norms, terms, size = [], [], [], 0
        entry_weights = information_weights(weights)
        for scores, infos in per_record(point):  # copies: a caller may hand every chunk in one reused buffer
            scores, infos = np.array(scores, dtype=float), np.asarray(infos, dtype=float) * kept
            with np.errstate(all="ignore"):  # a record's inf or NaN must not raise or warn (its norm counts as 0)
                score_norms.append(np.abs(scores / weights).sum(axis=1))
                info_norms.append(np.abs(infos / entry_weights).sum(axis=1))
            size += scores.size + infos.size
            terms = terms if terms is not None and size <= KEPT_TERMS else None
            if terms is not None:
                terms.append((scores, infos))
        return np.concatenate(score_norms), np.concatenate(info_norms), terms

    with ledger.reserve(planned) as reservation:
        try:
            weights = np.ones(d) if first_weights is None else np.asarray(first_weights, dtype=float).copy()
            for t, ((eps_score, eps_info), (choice_score, choice_info)) in enumerate(zip(budgets, choices)):
                # the worst cases; an L1 one also bounds the weighted norm (every weight ≥ 1) where ``clips`` takes none
                c_score, c_info = clips(point, weights) if weighted_clips and np.any(weights != 1.0) else clips(point)
                check_clips(c_score, c_info, f"at round {t + 1}'s point")
                terms = None
                if choice_score > 0 or choice_info > 0:  # the worst cases lowered to the records' own tail, privately
                    score_norms, info_norms, terms = norms(point, weights)
                    if choice_score > 0:
                        drawn += 1
                        c_score = schedule.clip_selection.choose(score_norms, c_score, choice_score, source)
                    if choice_info > 0:
                        drawn += 1
                        c_info = schedule.clip_selection.choose(info_norms, c_info, choice_info, source)
                score_sum, info_sum = np.zeros(d), np.zeros(d * (d + 1) // 2)
                weighted = bool(np.any(weights != 1.0))
                entry_weights = information_weights(weights)
                for scores, infos in terms if terms is not None else per_record(point):
                    scores, a = clip_rows_l1(np.asarray(scores, dtype=float) / weights, c_score)
                    scores = scores * weights
                    infos, b = clip_rows_l1(np.asarray(infos, dtype=float) * kept / entry_weights, c_info)
                    infos = infos * entry_weights
                    cut += max(a, b)
                    score_sum += scores.sum(axis=0)
                    info_sum += infos.sum(axis=0)
                # a matrix where weighted: entry (i, j)'s scale, 0 where the support releases none
                b_info = factor * c_info / eps_info * (unvech(entry_weights * kept, d) if weighted else 1.0)
                b_score = factor * c_score / eps_score * (weights.copy() if weighted else 1.0)
                drawn += 1
                score = _add_laplace(source, score_sum, b_score)
                drawn += 1
                released = np.zeros_like(info_sum)
                released[kept] = _add_laplace(source, info_sum[kept], vech(b_info)[kept] if weighted else b_info)
                info = unvech(released, d)
                rounds.append(NewtonRound(point.copy(), score, info, b_score, b_info, c_score, c_info,
                                          None if support is None else np.asarray(support, dtype=bool),
                                          weights.copy() if weighted else None))
                if t < len(budgets) - 1:  # the next point (after the last release nothing moves)
                    state.update(point, score, info, b_score)
                    point = newton_step(point, state, bound_step)
                    if choices[t + 1][0] > 0:  # a chosen clip can follow each coordinate's own scale
                        weights = score_weights(info, b_info)
        except BaseException:
            if drawn:  # noise was drawn: those releases are spent whatever fails after them
                commit(reservation, drawn)
            raise
        recorded = commit(reservation, len(planned))
    if cut:
        curator_report(f"{cut} record term(s) had a score or information beyond the round's clip and were scaled "
                       "into it (the count is for the curator only: it is not released).", ClippedTermsWarning,
                       stacklevel=3)
    return NewtonRun(tuple(rounds), tuple(recorded))
