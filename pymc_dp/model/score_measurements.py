"""The privacy flag on any generalised linear model: private Newton measurements, then the one-step posterior.

A GLM (:mod:`pymc_dp.model.glm_structure`: a Poisson, negative binomial, Gamma, Binomial,
Bernoulli, Normal, Student-t ... likelihood whose parameters are links of linear predictors
``[a +] X @ beta`` and shared scalars) has no finite set of sufficient statistics, but near any
point φ_t its log-likelihood is a quadratic whose coefficients are two sums over the records: the
score and the information. :func:`pymc_dp.mechanisms.private_newton.private_newton` releases them
at a few public points (pilot Newton steps on the releases, then a final point), and the
record-free copy of the model conditions on the last release:

    g ~ Normal(M(δ) δ, I + Σ_noise + ¼ κ² ‖δ̂_⊥‖⁴ 𝟙 + 2 b_H² ‖δ‖² 𝟙),   δ = φ − φ_t,

M(δ) the released information ``I`` averaged along δ (a secant correction from the last two
releases), Σ_noise the score's Laplace noise (moment-matched), an allowance for what the quadratic
leaves out (κ: how fast the information changed between the last two points; at the one-step
estimate δ̂, across the line it was measured along) and the information's own noise acting on δ
(see :func:`one_step`). With φ_t within a few posterior standard deviations
of the truth — what the pilot rounds are for — this is the classical one-step likelihood: the
posterior is as wide as the data and the noise make it. Every prior and Deterministic of the model
stays; sampling reads only the release.

What it needs: every covariate's range and the outcome's (``bounds={"y": {"x": (lo, hi), "y": (lo,
hi)}}``; a Bernoulli's outcome needs none, a Binomial's with a constant ``n`` neither). Records are
clipped into the box (counted for the curator only), and each record's score and information are
clipped at L1 norms no larger than the largest any point of the box reaches at the round's point
(computed from the bounds and the point alone, so public): clipping, not the box, is what makes the
release private. That worst case is far above most records (on a Gamma regression with outcomes
declared up to 20: 74–125 where the records' median norm was 2.3), so where the records are many
each round spends a tenth of its ε on choosing a lower clip privately, a high quantile of the
records' own norms (:mod:`pymc_dp.mechanisms.private_clip`).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..accounting import LedgerEntry, PrivacyLedger
from ..accounting.curator import curator_report
from ..accounting.event_types import LaplaceEvent
from ..accounting.validation import check_epsilon
from ..families import ClippedRecordsWarning
from ..mechanisms.logistic_regression import REPLACE_ONLY
from ..mechanisms.private_clip import ClipSelection
from ..mechanisms.private_newton import (NewtonRound, NewtonRun, NewtonSchedule, check_clips, entries_for,
                                         information_scales, information_weights, private_newton, vech)
from .glm_structure import GlmStructure, RecordDerivatives, read_glm
from .objective_point import (INFORMATION_ASSUMPTION, OBJECTIVE_ALGORITHM, POINT_ASSUMPTIONS, POINT_SHARE,
                              feature_bound, objective_preferred, point_regularisation, reads_as_logistic,
                              score_noise_scale)

__all__ = ["ScorePrivatization", "PrivateScore", "plan_score_privatization", "ONE_STEP_LIKELIHOOD", "OneStep", "one_step",
           "FarFromPilotWarning"]

#: What the ledger's details say of the likelihood the release is read with (an approximation of the inference,
#: not a condition of the privacy guarantee).
#: what the ledger states the measurements' guarantee and their reading rest on (short; details hold the rest)
CLIPPED_TO_BOUNDS = ("each record's score and information clipped at L1 norms no larger than the declared bounds' "
                     "worst case at the round's public point, lowered to a privately chosen high quantile of the "
                     "records' norms where N allows (records outside the bounds clipped into them)")
ONE_STEP_ASSUMPTION = ("the posterior reads the last round through a one-step (quadratic) likelihood: accurate when "
                       "that point is within a few posterior s.d. of the parameters (not a privacy assumption)")
ONE_STEP_LIKELIHOOD = (
    "the likelihood is the one-step (quadratic) approximation of the log-likelihood at the last measured point, "
    "with the noise moment-matched by a Gaussian: accurate when that point lies within a few posterior standard "
    "deviations of the parameters (a warning says when the release suggests otherwise)"
)

#: Box points at which the clips are computed: all corners up to this many covariates, else a public sample.
_CORNER_COVARIATES = 10
_SAMPLED_POINTS = 2048
_PRIOR_DRAWS = 2000

#: The largest move of a linear predictor (root mean square over the box) or of a nuisance (unconstrained) in one
#: pilot step.
TRUST_REGION = 1.0

#: The name of φ's vector in the record-free model's graph (its chains start near φ's estimate).
ONE_STEP_PARAMETERS = "one_step_parameters"


class FarFromPilotWarning(UserWarning):
    """The last release says the measured point was far from the parameters: the one-step likelihood may be poor."""


@dataclass(frozen=True)
class PrivateScore:
    """What :meth:`ScorePrivatization.release` made: the record-free model and the rounds it rests on."""

    model: Any
    run: NewtonRun
    #: A with ψ = A φ, the coordinates the rounds measured (:meth:`ScorePrivatization.centred`); None: φ itself
    reparameterisation: np.ndarray | None = None

    def start(self) -> dict[str, np.ndarray] | None:
        """Where the record-free model's chains start (constrained values by free variable, from released numbers
        only), or None for the sampler's default start (:mod:`pymc_dp.model.start_point`). Computed when asked:
        about a second, which a caller that does not sample need not pay."""
        previous = self.run.rounds[-2] if len(self.run.rounds) > 1 else None
        return _start(self.model, one_step(self.run.final, previous), self.reparameterisation)


def _transform_of(model: Any) -> Callable[[Any], Any]:
    def transform_of(var: Any) -> Any:
        from pymc.model.fgraph import ModelValuedVar

        if var.owner is not None and isinstance(var.owner.op, ModelValuedVar):
            return var.owner.op.transform
        return model.rvs_to_transforms.get(var) if model is not None else None

    return transform_of


@dataclass(frozen=True)
class ScorePrivatization:
    """A validated privatisation of one GLM observed variable, priced; nothing drawn yet."""

    model: Any
    name: str
    structure: GlmStructure = field(repr=False)
    derivatives: RecordDerivatives = field(repr=False)
    outcomes: np.ndarray = field(repr=False)
    designs: tuple[np.ndarray, ...] = field(repr=False)
    outcome_range: tuple[float, float]
    lower: tuple[np.ndarray, ...]
    upper: tuple[np.ndarray, ...]
    labels: tuple[str, ...]
    prior_mean: np.ndarray
    prior_scale: np.ndarray
    epsilon: float
    schedule: NewtonSchedule
    public: frozenset[str]
    neighbouring: str = "replace"
    #: ``"newton"`` (pilot rounds, then the last) or ``"objective"`` (a logistic GLM's last point found by objective
    #: perturbation, :mod:`pymc_dp.model.objective_point`)
    engine: str = "newton"
    #: per predictor, the centre subtracted from each design column (0: not centred; :meth:`centred`)
    centres: tuple[np.ndarray, ...] = ()

    def reparameterisation(self) -> np.ndarray | None:
        """A with ψ = A φ: each intercept coordinate (a predictor's ``intercept``, or every group of an ``a[idx]``
        block where it has none) plus the centres times that predictor's coefficients, the rest as they are; None
        where nothing is centred."""
        if not any(np.any(c) for c in self.centres):
            return None
        d = self.structure.dimension
        A, col = np.eye(d), 0
        for p, centre in zip(self.structure.predictors, self.centres):
            block = slice(col, col + p.size)
            for i in _intercept_columns(p):
                A[col + i, block] += centre
            col += p.size
        return A

    def centred(self) -> "ScorePrivatization":
        """The plan measuring ψ = A φ: each covariate column less its declared box's centre, the intercept (or the
        groups of the first ``a[idx]``) moved to that centre (η = a + x·β = (a + c·β) + (x − c)·β), where the predictor has an intercept to move.

        A box away from 0 (x in [0, 1]) correlates the intercept with the slopes: the information's small eigenvalue
        (the line's level at the data, not at x = 0) then rests on a difference of large, noisy entries, and the
        weights, one per coordinate, cannot follow it. Centred, the information is near-diagonal over the box. The
        box, its worst cases and the clips are the same records' in other coordinates: the centre is public (the
        declared bounds), ψ a fixed linear map of φ, and the record-free model reads the release through it."""
        centres = []
        for p, lo, hi in zip(self.structure.predictors, self.lower, self.upper):
            centre = np.zeros(p.size)
            if _intercept_columns(p):
                for kind, j in p.slots():
                    if kind == "column":
                        centre[j] = (lo[j] + hi[j]) / 2
            centres.append(centre)
        if not any(np.any(c) for c in centres):
            return self
        moved = replace(self, centres=tuple(centres), designs=tuple(X - c for X, c in zip(self.designs, centres)),
                        lower=tuple(lo - c for lo, c in zip(self.lower, centres)),
                        upper=tuple(hi - c for hi, c in zip(self.upper, centres)))
        A = moved.reparameterisation()
        spread = A @ np.diag(self.prior_scale**2) @ A.T
        labels = list(self.labels)
        col = 0
        for p in self.structure.predictors:
            for i in _intercept_columns(p):
                labels[col + i] += " (at the box's centre)"
            col += p.size
        return replace(moved, prior_mean=A @ self.prior_mean, prior_scale=np.sqrt(np.diag(spread)),
                       labels=tuple(labels))

    def _details(self) -> dict:
        algorithm = OBJECTIVE_ALGORITHM if self.engine == "objective" else "private Newton (score and information)"
        return {"algorithm": algorithm, "parameters": list(self.labels), "likelihood": ONE_STEP_LIKELIHOOD,
                "declared box": self._declared_box()}

    def _declared_box(self) -> dict:
        """The box the clips were computed from (declared, public): the outcome's range and each declared covariate's
        (a varying slope's once), by predictor (its intercept and a[idx] blocks, which need no declaration, left
        out)."""
        covariates = []
        centres = self.centres or tuple(np.zeros(p.size) for p in self.structure.predictors)
        for p, lo, hi, c in zip(self.structure.predictors, self.lower, self.upper, centres):
            lo, hi = lo + c, hi + c  # as declared
            at = [p.blocks[i][0] if kind == "slope" else i for kind, i in p.slots()]
            covariates.append([[float(lo[j]), float(hi[j])] for j in at])
        return {"outcome": [float(v) for v in self.outcome_range], "covariates by predictor": covariates}

    def _assumptions(self) -> tuple[str, ...]:
        from .privatize_model import public_assumption

        declared = (public_assumption(sorted(self.public)),) if self.public else ()
        return (REPLACE_ONLY, *declared, CLIPPED_TO_BOUNDS, ONE_STEP_ASSUMPTION)

    def entries(self) -> list[LedgerEntry]:
        """What :meth:`release` charges: pilot scores and information, then the final ones (the objective engine: the
        perturbed point, then the information there)."""
        if self.engine == "objective":
            return self._objective_entries()
        return entries_for(self.schedule.budgets(self.epsilon), self.neighbouring, f"{self.name}: GLM",
                           self._assumptions(), self._details(), choices=self.schedule.choices(self.epsilon),
                           selection=self.schedule.clip_selection)

    def support(self) -> np.ndarray | None:
        """The information's entries some record can make non-zero (None: all): two groups of one ``a[idx]`` never
        meet in one record, so their cross entries are zero for every record (public: the model's structure)."""
        d = self.structure.dimension
        support, col = np.ones((d, d), dtype=bool), 0
        for p in self.structure.predictors:
            for b, (start, groups) in enumerate(p.blocks):
                for c, (other, others) in enumerate(p.blocks):  # blocks of one index: a record in one group of both
                    if b == c or (len(p.block_keys) > max(b, c) and p.block_keys[b] == p.block_keys[c]):
                        support[col + start:col + start + groups, col + other:col + other + others] = \
                            np.eye(groups, others, dtype=bool)
            col += p.size
        return None if support.all() else support

    def _box_points(self) -> tuple[np.ndarray, list[np.ndarray]]:
        """Public points of the declared box: outcomes and design rows at the corners (or a seeded sample of them)
        and inside."""
        rng = np.random.default_rng(0)
        lo_y, hi_y = self.outcome_range
        # the declared covariates only (a varying slope's once): a block of a[idx] is one column of ones here, of
        # b[idx] * x one column of x (see _collapse)
        slots = [p.slots() for p in self.structure.predictors]
        spans = [(np.array([lo[p.blocks[i][0]] if kind == "slope" else lo[i] for kind, i in sl], dtype=float),
                  np.array([hi[p.blocks[i][0]] if kind == "slope" else hi[i] for kind, i in sl], dtype=float))
                 for p, sl, lo, hi in zip(self.structure.predictors, slots, self.lower, self.upper)]
        k = sum(len(lo) for lo, _ in spans)
        if k <= _CORNER_COVARIATES:
            corners = ((np.arange(2**k)[:, None] >> np.arange(k)) & 1).astype(float)
        else:
            corners = rng.integers(0, 2, size=(_SAMPLED_POINTS, k)).astype(float)
        interior = rng.uniform(size=(_SAMPLED_POINTS // 4, k))
        unit = np.vstack([corners, interior])
        ys = np.array([lo_y, (lo_y + hi_y) / 2, hi_y])
        if str(self.structure.rv.dtype).startswith(("int", "uint")):  # counts: the whole numbers of the range
            ys = np.unique(np.clip(np.round(ys), np.ceil(lo_y), np.floor(hi_y)))
        unit = np.repeat(unit, len(ys), axis=0)
        y = np.tile(ys, len(unit) // len(ys))
        designs, col = [], 0
        for p, sl, (lo, hi) in zip(self.structure.predictors, slots, spans):
            values = lo + unit[:, col:col + len(lo)] * (hi - lo)
            col += len(lo)
            by_slot = {slot: values[:, i] for i, slot in enumerate(sl)}
            starts = {start: b for b, (start, _) in enumerate(p.blocks)}
            columns, j, end = [], 0, p.size - p.has_intercept
            while j < end:  # the collapsed design, column by column in the design's order
                if j in starts:
                    b = starts[j]
                    columns.append(by_slot[("slope", b)] if p.is_slope(b) else np.ones(len(values)))
                    j += p.blocks[b][1]
                else:
                    columns.append(by_slot[("column", j)])
                    j += 1
            X = np.column_stack(columns) if columns else np.zeros((len(values), 0))
            designs.append(np.column_stack([X, np.ones(len(X))]) if p.has_intercept else X)
        return y, designs

    def _collapse(self, point: np.ndarray, groups: Sequence[int]) -> np.ndarray:
        """``point`` with each one-hot block's coefficients replaced by the one of its group ``groups[b]``.

        A record of group g sees a block only through its g-th column, a 1: its score and information are those of
        the design with the block as one column of ones at the coefficient a[g], their L1 norms too.
        """
        parts, col, b = [], 0, 0
        for p in self.structure.predictors:
            coefficients = np.asarray(point[col:col + p.size], dtype=float)
            keep, at = [], 0
            for start, size in p.blocks:
                keep += list(coefficients[at:start]) + [coefficients[start + groups[b]]]
                at, b = start + size, b + 1
            parts.append(np.r_[keep, coefficients[at:]])
            col += p.size
        return np.r_[np.concatenate(parts), point[col:]]

    def clips(self, point: np.ndarray, weights: np.ndarray | None = None) -> tuple[float, float]:
        """The L1 clips at ``point``: the largest norms of a record's score and information over the box's points
        (and every group of each ``a[idx]``); with score ``weights`` (one per coordinate), the norms are the weighted
        ones, ``Σ_j |g_j| / w_j`` and ``Σ_ij |H_ij| / (w_i w_j)`` (:func:`pymc_dp.mechanisms.private_newton.
        score_weights`, :func:`~pymc_dp.mechanisms.private_newton.information_weights`)."""
        import itertools

        y, designs = self._box_points()
        keys, sizes = [], []  # blocks reading one index share a group (a[idx] + b[idx] * x: G cases, not G²)
        for j, p in enumerate(self.structure.predictors):
            for b, (_, size) in enumerate(p.blocks):
                key = (p.block_keys[b] if len(p.block_keys) > b else (j, b), size)
                keys.append(key)
                if key not in keys[:-1]:
                    sizes.append(size)
        distinct = list(dict.fromkeys(keys))
        score_clip = info_clip = 0.0
        for chosen in itertools.product(*(range(g) for g in sizes)):
            groups = [chosen[distinct.index(key)] for key in keys]
            scores, info = self.derivatives(self._collapse(np.asarray(point, dtype=float), groups), y, designs)
            if weights is not None:  # the collapsed column of a group reads that group's weight
                collapsed = self._collapse(np.asarray(weights, dtype=float), groups)
                scores, info = scores / collapsed, info / information_weights(collapsed)
            finite = np.all(np.isfinite(scores), axis=1) & np.all(np.isfinite(info), axis=1)
            if finite.any():
                score_clip = max(score_clip, float(np.abs(scores[finite]).sum(axis=1).max()))
                info_clip = max(info_clip, float(np.abs(info[finite]).sum(axis=1).max()))
        if score_clip == 0.0 and info_clip == 0.0:
            raise ValueError(f"no point of the box declared for {self.name!r} has a finite log-likelihood at the "
                             "parameters being measured; check bounds= (nothing was spent for this round).")
        return max(score_clip, 1e-12), max(info_clip, 1e-12)

    def bound_step(self, step: np.ndarray) -> np.ndarray:
        """A pilot step shortened so that no group's coefficient in an ``a[idx]`` block moves by more than
        :data:`TRUST_REGION` (its own records' predictor moves by that much), then, its direction kept, so that no
        linear predictor moves by more than that in root mean square over the box, nor a nuisance by more than that
        on its unconstrained scale (public: bounds and releases only).

        The block's own cap matters for a small or noisy group: over the box its column is 1 for one record in G, so
        the root mean square alone lets one group move √G times as far, and a pilot whose information for that group
        was mostly noise sent it several units off (a Bernoulli with twenty groups at ε = 1: one group measured 2.5
        from the truth at the last round, its one-step estimate 6 standard errors off)."""
        step = np.asarray(step, dtype=float).copy()
        col = 0
        for p, hi_, lo_ in zip(self.structure.predictors, self.upper, self.lower):
            for b, (start, groups) in enumerate(p.blocks):  # a group's coefficient moves only its own records'
                block = slice(col + start, col + start + groups)  # predictor: by ≤ TR (a slope's: times its |x|)
                reach = max(abs(lo_[start]), abs(hi_[start])) if p.is_slope(b) else 1.0
                step[block] = np.clip(step[block], -TRUST_REGION / reach, TRUST_REGION / reach)
            col += p.size
        reaches, col = [], 0
        for p, lo, hi in zip(self.structure.predictors, self.lower, self.upper):
            size = len(lo)
            mean, var = (lo + hi) / 2, (hi - lo) ** 2 / 12  # the box's coordinates as independent uniforms
            for b, (start, groups) in enumerate(p.blocks):  # one column of G is 1 (or x): E[x²]/G (groups alike)
                second = float(mean[start] ** 2 + var[start]) if p.is_slope(b) else 1.0
                mean[start:start + groups], var[start:start + groups] = 0.0, second / groups
            reaches.append(float(np.sqrt(np.sum(step[col:col + size] ** 2 * (var + mean**2)))))
            col += size
        reaches += list(np.abs(step[col:]))
        return step * min(1.0, TRUST_REGION / max(max(reaches), 1e-300))

    def _objective_entries(self) -> list[LedgerEntry]:
        from .privatize_model import public_assumption

        declared = (public_assumption(sorted(self.public)),) if self.public else ()
        point = LedgerEntry("objective_perturbation", self.epsilon * POINT_SHARE, neighbouring=self.neighbouring,
                            touched=f"{self.name}: GLM: the perturbed point (its score)",
                            assumptions=(REPLACE_ONLY, *declared, *POINT_ASSUMPTIONS, ONE_STEP_ASSUMPTION),
                            details=self._details())
        eps = self.epsilon * (1 - POINT_SHARE)
        information = LedgerEntry("laplace", eps, event=LaplaceEvent(noise_multiplier=1.0 / eps),
                                  neighbouring=self.neighbouring, touched=f"{self.name}: GLM: information at the "
                                  "perturbed point", assumptions=(REPLACE_ONLY, *declared, INFORMATION_ASSUMPTION,
                                                                  ONE_STEP_ASSUMPTION), details=self._details())
        return [point, information]

    def _release_objective(self, ledger: PrivacyLedger, rng: Any) -> NewtonRun:
        """The perturbed point and the information there (:mod:`pymc_dp.mechanisms.perturbed_point`), charged to
        ``ledger`` entry by entry as drawn."""
        from ..mechanisms.noise import resolve_noise_source
        from ..mechanisms.perturbed_point import perturbed_point_release
        from ..mechanisms.private_newton import unvech

        point_entry, information_entry = self.entries()
        source = resolve_noise_source(rng)
        bound = feature_bound(self.structure.predictors[0], self.lower[0], self.upper[0])
        support = self.support()
        d = self.structure.dimension
        kept = np.ones(d * (d + 1) // 2, dtype=bool) if support is None else vech(support.astype(float)) != 0

        def clip(point: np.ndarray) -> float:
            c_info = self.clips(point)[1]
            check_clips(1.0, c_info, "at the perturbed point")
            return c_info

        out = perturbed_point_release(
            self.designs[0], self.outcomes, bound=bound, regularisation=point_regularisation(point_entry.epsilon,
                                                                                             len(self.outcomes)),
            point_entry=point_entry, information_entry=information_entry,
            information_terms=lambda point: (i for _, i in self.derivatives.chunks(point, self.outcomes, self.designs)),
            information_clip=clip, kept=kept, ledger=ledger, source=source)
        if out.clipped:
            curator_report(f"{out.clipped} record term(s) had an information beyond the clip at the perturbed point and "
                           "were scaled into it (the count is for the curator only: it is not released).",
                           ClippedRecordsWarning, stacklevel=4)
        final = NewtonRound(out.point, out.score, unvech(out.information, d),
                            score_noise_scale(bound, out.epsilon_prime, d), out.information_scale, bound,
                            out.information_clip, support)
        _warn_if_far(final, self.labels, FAR_FROM_PERTURBED_POINT)
        return NewtonRun((final,), out.recorded)

    def release(self, ledger: PrivacyLedger, rng: Any = None) -> PrivateScore:
        """Draw the noise round by round (charging ``ledger``) and build the record-free model."""
        if self.engine == "objective":
            run = self._release_objective(ledger, rng)
            return PrivateScore(self._rebuild(run.final), run)
        run = private_newton(
            lambda point: self.derivatives.chunks(point, self.outcomes, self.designs), self.clips,
            start=self.prior_mean, prior_mean=self.prior_mean, prior_precision=1.0 / self.prior_scale**2,
            bound_step=self.bound_step, epsilon=self.epsilon, schedule=self.schedule, ledger=ledger, rng=rng,
            touched=f"{self.name}: GLM", assumptions=self._assumptions(), details=self._details(),
            support=self.support(),
        )
        _warn_if_far(run.final, self.labels)
        previous = run.rounds[-2] if len(run.rounds) > 1 else None
        return PrivateScore(self._rebuild(run.final, previous), run, self.reparameterisation())

    def _rebuild(self, final: NewtonRound, previous: NewtonRound | None = None) -> Any:
        from .privatize_model import rebuild_one_likelihood

        rows = len(self.outcomes)
        transform_of = _transform_of(None)

        def likelihood(node: Any, free: list, sizes: list, new_outputs: list) -> Any:
            why: list[str] = []
            structure = read_glm(node.inputs[0], rows, free, sizes, why)
            if structure is None:  # read on the model, not on its copy: say so rather than fail obscurely
                raise ValueError(f"the copy of the model without records does not read {self.name!r} as the model "
                                 f"did: {'; '.join(why)}. Nothing was spent.")
            parameters = structure.parameters(transform_of)
            parameters.name = ONE_STEP_PARAMETERS  # found again in the copy to start its chains (start_point)
            A = self.reparameterisation()
            return one_step_loglik(final, parameters if A is None else _input(A) @ parameters, previous)

        return rebuild_one_likelihood(self.model, self.name, likelihood, rows, self.public)

    def rehearse(self) -> None:
        """Build the record-free model once on a placeholder release (refusals happen before any spend)."""
        d = self.structure.dimension
        placeholder = NewtonRound(self.prior_mean, np.zeros(d), np.eye(d), 1.0, 1.0, 1.0, 1.0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self._rebuild(placeholder)


@dataclass(frozen=True)
class OneStep:
    """The one-step likelihood's public numbers: the expected score at the last point is M(δ) δ, δ = φ − φ_t, with
    M(δ) = I + ½ D τ, τ = ⟨δ, u⟩ / ‖u‖² clipped to [−1, 1], the information averaged along δ: linear along the
    last pilot step u within one step's length (D the released information's change over it, symmetrised, its
    expected noise discounted), constant beyond. The released score has covariance ``cov`` plus the information's
    noise acting on δ around it: coordinate i's variance grows by Σ_j N_ij δ_j² (:meth:`extra_variance`; N_ij = 2 b_ij²,
    the entry's Laplace variance, 0 where the support releases none).

    Where the information has a ``support`` (the groups of ``a[idx]``), each row reads its own τ_i over the
    coordinates its row meets, τ_i = ⟨δ, u⟩_i / ⟨u, u⟩_i (sums over row i's support): a group's information changed
    with that group's own move, not with the whole step's."""

    point: np.ndarray
    score: np.ndarray
    information: np.ndarray
    change: np.ndarray
    direction: np.ndarray
    cov: np.ndarray
    information_noise: float | np.ndarray = 0.0  # N: one number, or d × d
    support: np.ndarray | None = None  # float 0/1 rows, or None for one τ
    step: np.ndarray | None = None  # u, with a support

    def extra_variance(self, delta: np.ndarray) -> np.ndarray:
        """What the information's noise adds to each score coordinate's variance at a NumPy δ: Σ_j N_ij δ_j²."""
        d = len(self.score)
        return np.broadcast_to(np.asarray(self.information_noise, dtype=float), (d, d)) @ np.square(delta)

    @property
    def isotropic_noise(self) -> bool:
        """Whether the information's noise adds one variance c‖δ‖² to every coordinate (one scale, no support)."""
        noise = np.asarray(self.information_noise, dtype=float)
        return noise.ndim == 0 or bool(np.all(noise == noise.flat[0]))

    def along(self, delta: np.ndarray) -> np.ndarray:
        """τ (one number, or one per row with a support) for a NumPy δ, clipped to [−1, 1]."""
        if self.support is None or self.step is None:
            return np.asarray(np.clip(delta @ self.direction, -1.0, 1.0))
        reach = self.support @ self.step**2
        with np.errstate(all="ignore"):
            tau = np.where(reach > 0, (self.support @ (delta * self.step)) / np.where(reach > 0, reach, 1.0), 0.0)
        return np.clip(tau, -1.0, 1.0)

    def averaged(self, delta: np.ndarray) -> np.ndarray:
        """M(δ) for a NumPy δ."""
        tau = self.along(delta)
        return self.information + 0.5 * self.change * (tau[:, None] if tau.ndim else float(tau))

    def slope(self, delta: np.ndarray) -> np.ndarray:
        """The Jacobian of M(δ) δ at δ (τ's own change counted inside its [−1, 1] range)."""
        jacobian = self.averaged(delta)
        moved = 0.5 * self.change @ delta
        if self.support is None or self.step is None:
            if abs(float(delta @ self.direction)) < 1:
                jacobian = jacobian + np.outer(moved, self.direction)
            return jacobian
        reach = self.support @ self.step**2
        raw = np.where(reach > 0, (self.support @ (delta * self.step)) / np.where(reach > 0, reach, 1.0), 0.0)
        inside = (np.abs(raw) < 1) & (reach > 0)
        gradient = self.support * self.step[None, :] / np.where(reach > 0, reach, 1.0)[:, None]
        return jacobian + (moved * inside)[:, None] * gradient

    def estimate(self, iterations: int = 20) -> np.ndarray:
        """δ̂ solving M(δ) δ = g (fixed-point iterations from the plain one-step estimate)."""
        pinv = np.linalg.pinv
        delta = pinv(self.information) @ self.score
        for _ in range(iterations):
            delta = pinv(_psd(self.averaged(delta))) @ self.score
        return delta


def _psd(matrix: np.ndarray) -> np.ndarray:
    values, vectors = np.linalg.eigh((matrix + matrix.T) / 2)
    return (vectors * np.maximum(values, 0.0)) @ vectors.T


#: The chance that some released entry's noise alone passes :func:`_detected_change`'s threshold.
CHANGE_FALSE_ALARM = 0.01


def _detected_change(raw: np.ndarray, final: NewtonRound, previous: NewtonRound) -> np.ndarray:
    """The information's change between the last two rounds where it is larger than their noise could make it: each
    released entry's difference kept when beyond ``(b_f + b_p) ln(2 m / α)`` (m released entries, α
    :data:`CHANGE_FALSE_ALARM`; a union bound: P(|L_f − L_p| > t) ≤ 2 exp(−t / (b_f + b_p)) for Laplace noise of
    scales b_f, b_p), else 0.

    With groups (``a[idx]``) each group's information rests on its own records, and its change between two rounds
    is often below the noise: the Laplace noise's tail then read as curvature (one entry's noise 5 of its s.d. on a
    Poisson hierarchy, N = 10⁵, ε = 1) made a group's interval 35–77× the sampling s.d. wide."""
    d = len(final.score)
    released = np.ones((d, d), dtype=bool) if final.support is None else np.asarray(final.support, dtype=bool)
    m = int(np.count_nonzero(np.triu(released)))
    scales = information_scales(final) + information_scales(previous)
    threshold = scales * np.log(2.0 * max(m, 1) / CHANGE_FALSE_ALARM)
    return np.where(released & (np.abs(raw) > threshold), raw, 0.0)


def one_step(final: NewtonRound, previous: NewtonRound | None = None) -> OneStep:
    """The :class:`OneStep` of the last release (and the one before it, for the change along the last step).

    The covariance is I + Σ_g + ¼ κ² ‖δ̂_⊥‖⁴ 𝟙 + 2 b_H² ‖δ‖² 𝟙: the score's noise, an allowance for the curvature's
    change across the last step (κ = ‖D‖/‖u‖) where the estimate δ̂ leaves the line the change was measured along
    (from released numbers, at δ̂ rather than as a function of φ, so the likelihood widens without flattening its
    tails toward the prior), and the information's own noise acting on δ (exact, a function of φ). With groups
    (``a[idx]``) D keeps only the entries whose change is beyond what the noise could make
    (:func:`_detected_change`), and κ is read row by row. Without, D is the whole change shrunk by the noise's
    expected share, read only where some entry's change is beyond what the noise could make: otherwise two releases'
    noise, whose squares sum above their expectation about half the time, was read as curvature (a negative
    binomial's log α 1.5–8.8× too wide in a third of 30 releases at N = 10⁵, ε = 1; one in 30 after).
    """
    d = len(final.score)
    information = _psd(final.information)
    change, direction, kappa = np.zeros((d, d)), np.zeros(d), 0.0
    grouped = final.support is not None and not np.all(final.support) and previous is not None
    if previous is not None:
        u = final.point - previous.point
        norm2 = float(u @ u)
        raw = (final.information + final.information.T - previous.information - previous.information.T) / 2
        noise = float(np.sum(2.0 * (information_scales(final) ** 2 + information_scales(previous) ** 2)))
        size = float(np.sum(raw**2))
        if norm2 > 0 and grouped:
            change = _detected_change(raw, final, previous)
            direction, kappa = u / norm2, (1.0 if np.any(change) else 0.0)  # κ by row below
        elif norm2 > 0 and size > noise and np.any(_detected_change(raw, final, previous)):
            change = raw * np.sqrt((size - noise) / size)
            direction = u / norm2
            kappa = float(np.sqrt(size - noise)) / np.sqrt(norm2)
    support = final.support.astype(float) if grouped else None
    u = final.point - previous.point if previous is not None else np.zeros(d)
    partial = OneStep(final.point, final.score, information, change, direction, np.eye(d), 0.0,
                      support if kappa else None, u if kappa else None)
    delta = partial.estimate()
    if grouped:
        # Row by row where the information has a support (groups of a[idx]): row i's change came from the move of
        # the coordinates it meets, so its rate is κ_i = ‖D_i‖ / ‖u‖_i (u over row i's support) and the estimate
        # leaves the line it was measured along by δ̂ − u τ_i there. One scalar κ = ‖D‖/‖u‖ over the whole step
        # would divide a group's change by all the groups' moves and understate its curvature √G-fold.
        reach = support @ u**2
        rows = np.sum(change**2, axis=1) / np.where(reach > 0, reach, np.inf) if kappa else np.zeros(d)
        tau = partial.along(delta) if kappa else np.zeros(d)
        across = delta[None, :] - tau[:, None] * u[None, :]
        allowance = 0.25 * rows * np.sum(support * across**2, axis=1) ** 2
    else:
        unit = direction / max(float(np.linalg.norm(direction)), 1e-300)
        across = delta - unit * float(delta @ unit)
        allowance = 0.25 * kappa**2 * float(across @ across) ** 2 * np.ones(d)
    cov = information + np.diag(2.0 * final.score_scale**2 + allowance)
    return OneStep(final.point, final.score, information, change, direction, cov,
                   2.0 * information_scales(final) ** 2, support if kappa else None, u if kappa else None)


def _input(value: Any) -> Any:
    """A released number (or a function of released numbers) as an unnamed shared variable of its public shape.

    As constants, the numbers would be part of the graph, and every release would compile its record-free model
    afresh (seconds each, tens of seconds with an empty compile cache); as inputs, a second release of a model of
    the same shape finds the first one's machine code in PyTensor's compile cache.
    """
    import pytensor

    value = np.asarray(value, dtype="float64")
    return pytensor.shared(value, shape=value.shape)


def one_step_loglik(final: NewtonRound, parameters: Any, previous: NewtonRound | None = None) -> Any:
    """log N(g; M(δ) δ, C + c ‖δ‖² 𝟙) of the last release as a tensor of φ (δ = φ − φ_t; M, C and c = 2 b_H² from
    :func:`one_step`): the information's noise acting on δ is part of the likelihood (errors in variables), so a
    release whose information is mostly noise says little wherever φ is."""
    import pytensor.tensor as pt

    step_model = one_step(final, previous)
    d = len(final.score)
    delta = parameters - _input(final.point)
    if step_model.support is not None:  # one τ per row, over the coordinates the row meets
        reach = step_model.support @ step_model.step**2
        rate = step_model.support * step_model.step[None, :] / np.where(reach > 0, reach, 1.0)[:, None]
        along = pt.clip(pt.dot(_input(rate), delta), -1.0, 1.0)[:, None]
    else:
        along = pt.clip(pt.dot(delta, _input(step_model.direction)), -1.0, 1.0)
    averaged = _input(step_model.information) + 0.5 * _input(step_model.change) * along
    residual = _input(final.score) - pt.dot(averaged, delta)
    if not step_model.isotropic_noise:
        # Score coordinate i's extra variance is Σ_j N_ij δ_j²: only the support's entries carry noise (a group's
        # coordinate does not feel the other groups' δ), and weighted entries carry their own. A full covariance,
        # factored per point.
        from pytensor.tensor.linalg import cholesky, solve_triangular

        extra = pt.dot(_input(step_model.information_noise), delta**2)
        factor = cholesky(_input(step_model.cov) + pt.diag(extra))
        z = solve_triangular(factor, residual, lower=True)
        return -0.5 * pt.sum(z**2) - pt.sum(pt.log(pt.diag(factor))) - 0.5 * d * np.log(2 * np.pi)
    values, vectors = np.linalg.eigh(step_model.cov)  # C + c‖δ‖²𝟙 shares C's eigenvectors
    noise = float(np.asarray(step_model.information_noise, dtype=float).flat[0])
    spread = _input(values) + _input(noise) * pt.sum(delta**2)
    r = pt.dot(_input(vectors.T), residual)
    return -0.5 * pt.sum(r**2 / spread) - 0.5 * pt.sum(pt.log(spread)) - 0.5 * d * np.log(2 * np.pi)


def _start(model: Any, step_model: OneStep, reparameterisation: np.ndarray | None = None
           ) -> dict[str, np.ndarray] | None:
    """The record-free model's start near the one-step estimate φ̂ = φ_t + δ̂, in its precision Iᵀ C(δ̂)⁻¹ I (the
    information's noise counted at δ̂ as the likelihood counts it); measured in ψ = A φ (``reparameterisation``),
    φ̂ = A⁻¹ ψ̂ with precision Aᵀ P A."""
    from .start_point import start_near

    delta = step_model.estimate()
    cov = step_model.cov + np.diag(step_model.extra_variance(delta))
    try:
        precision = step_model.information @ np.linalg.solve(cov, step_model.information)
        estimate = step_model.point + delta
        if reparameterisation is not None:
            estimate = np.linalg.solve(reparameterisation, estimate)
            precision = reparameterisation.T @ precision @ reparameterisation
    except np.linalg.LinAlgError:
        return None
    return start_near(model, ONE_STEP_PARAMETERS, estimate, precision)


#: Why the objective engine's point may lie far from the parameters, and what to do (the warning's second half).
FAR_FROM_PERTURBED_POINT = (
    "The objective engine's ridge pulls that point toward 0 where the effects are strong against N (the one-step "
    "likelihood then reads a slope far from where it was measured): engine='newton' (pilot rounds walk to the "
    "parameters), more ε, or covariates scaled so that the coefficients are near 1 bring it nearer.")
#: The newton engine's.
FAR_FROM_PILOTS = (
    "The pilot rounds chose that point: a tighter declared box (less noise in every round), more ε, a prior closer to "
    "the data, or more pilot rounds (rounds=, when the prior's centre is far from the data) bring it nearer.")


def _warn_if_far(final: NewtonRound, labels: Sequence[str], remedy: str = FAR_FROM_PILOTS) -> None:
    """Warn when the last release puts the parameters many standard errors from the measured point (released
    numbers only)."""
    d = len(final.score)
    values, vectors = np.linalg.eigh((final.information + final.information.T) / 2)
    information = (vectors * np.maximum(values, 1e-12 * max(values.max(), 1e-300))) @ vectors.T
    cov = information + np.diag(2.0 * np.broadcast_to(np.square(final.score_scale), (d,)))
    step = np.linalg.solve(information, final.score)
    z = np.abs(step) / np.sqrt(np.diag(np.linalg.inv(information) @ cov @ np.linalg.inv(information)))
    if np.any(z > 4.0):
        worst = int(np.argmax(z))
        warnings.warn(
            f"the released score puts {labels[worst]} {z[worst]:.1f} standard errors from the point it was measured "
            f"at: the one-step likelihood may be inaccurate there, and its interval too narrow. {remedy}",
            FarFromPilotWarning, stacklevel=4)


def _outcome_range(rv: Any, given: Mapping[str, Any], name: str, public: frozenset = frozenset()) -> tuple[float, float]:
    from ..families.base import dist_params

    op = getattr(rv.owner.op, "name", "")
    if "y" in given:
        try:
            lo, hi = (float(v) for v in given["y"])
        except (TypeError, ValueError):
            raise ValueError(f"bounds[{name!r}]['y'] must be a (lo, hi) pair of numbers, got {given['y']!r}. Nothing "
                             "was spent.") from None
        if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
            raise ValueError(f"bounds[{name!r}]['y'] must be finite with lo < hi, got {given['y']!r}.")
        return lo, hi
    if op == "bernoulli":
        return 0.0, 1.0
    if op == "binomial":
        from ..families._params import constant_value

        try:  # a constant however PyMC wrapped it (after imputing missing values: a slice of an added axis)
            n = constant_value(dist_params(rv)[0])
        except ValueError:
            n = None
        if n is not None:
            return 0.0, n
    raise ValueError(
        f"observed variable {name!r} ({op or 'its likelihood'}) needs its outcome's range for the measurements "
        f"route: declare bounds={{{name!r}: {{'x': (lo, hi), 'y': (lo, hi)}}}}; outcomes outside are clipped. "
        "Nothing was spent."
    )


def _covariate_box(given: Mapping[str, Any], structure: GlmStructure, name: str,
                   outcome_needed: bool = True) -> tuple[list, list]:
    k = structure.covariates
    if "x" not in given and k == 0:  # only group-indexed terms: nothing to declare
        given = {**given, "x": (0.0, 1.0)}
    if "x" not in given:
        example = "{'x': (lo, hi), 'y': (lo, hi)}" if outcome_needed else "{'x': (lo, hi)}"
        raise ValueError(
            f"observed variable {name!r} is a GLM on {k} covariate(s): the score's sensitivity needs every "
            f"covariate's range. Declare bounds={{{name!r}: {example}}} ('x' is the key itself, whatever the "
            f"covariates are called: one pair for all covariates, or arrays of {k} in the design's order); rows "
            "outside are clipped. Nothing was spent."
        )
    try:
        lo, hi = given["x"]
        lo, hi = (np.broadcast_to(np.asarray(v, dtype=float), (k,)).copy() for v in (lo, hi))
    except (TypeError, ValueError):
        raise ValueError(f"bounds[{name!r}]['x'] must be a (lo, hi) pair of numbers or of arrays of {k}, got "
                         f"{given['x']!r}.") from None
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)) and np.all(lo < hi)):
        raise ValueError(f"bounds[{name!r}]['x'] must be finite with lo < hi for every covariate, got {given['x']!r}.")
    lows, highs, col = [], [], 0
    for p in structure.predictors:
        width = p.size - p.has_intercept
        l_, h_ = np.zeros(width), np.ones(width)  # a one-hot block's columns: 0 or 1
        for kind, i in p.slots():  # each declared covariate's range, in the design's order
            columns = slice(p.blocks[i][0], p.blocks[i][0] + p.blocks[i][1]) if kind == "slope" else slice(i, i + 1)
            l_[columns], h_[columns] = lo[col], hi[col]  # a varying slope's G columns: its covariate's range
            col += 1
        if p.has_intercept:
            l_, h_ = np.r_[l_, 1.0], np.r_[h_, 1.0]
        lows.append(l_)
        highs.append(h_)
    return lows, highs


def _intercept_columns(p: Any) -> list[int]:
    """The design columns of ``p`` that act as its intercept: the ``intercept`` (last), or where there is none every
    group of its first ``a[idx]`` block (a record's predictor holds exactly one of them; crossed intercepts
    ``a[i] + b[j]`` hold one of each, and moving both would move the predictor twice); [] where it has neither."""
    if p.has_intercept:
        return [p.size - 1]
    for b, (start, groups) in enumerate(p.blocks):
        if not p.is_slope(b):
            return list(range(start, start + groups))
    return []


def _prior_summary(structure: GlmStructure, model: Any) -> tuple[np.ndarray, np.ndarray]:
    """The prior's median and a robust scale of φ (half the central 68 % range), from seeded prior draws (public)."""
    import pymc as pm

    draws = np.asarray(pm.draw(structure.parameters(_transform_of(model)), draws=_PRIOR_DRAWS, random_seed=0))
    draws = draws[np.all(np.isfinite(draws), axis=1)]
    q16, q50, q84 = np.quantile(draws, [0.16, 0.5, 0.84], axis=0)
    return q50, np.clip((q84 - q16) / 2, 1e-3, 1e3)


def default_rounds(structure: GlmStructure) -> int:
    """Four releases, two more per nuisance: from the prior's centre a shape or dispersion parameter converges more
    slowly than the coefficients (measured on Gamma and negative binomial regressions: with four rounds the last
    point stayed up to 0.8 from log k), and the pilots must bring the last point near the parameters. At most 10."""
    return min(4 + 2 * len(structure.nuisances), 10)


def plan_score_privatization(
    model: Any, epsilon: float, *, bounds: Mapping[str, Any] | None, rounds: int | None = None, public: Sequence[str] = (),
    neighbouring: str = "replace", engine: str = "auto", centre: bool = True,
) -> ScorePrivatization:
    """Validate the privacy flag on a GLM completely and price it; nothing is spent.

    The model must observe one private variable whose likelihood reads as a GLM
    (:func:`pymc_dp.model.glm_structure.read_glm`); other observed variables must be declared ``public``.
    ``engine``: ``"newton"`` (pilot rounds), ``"objective"`` (a logistic GLM's last point by objective perturbation,
    :mod:`pymc_dp.model.objective_point`), or ``"auto"``: the objective engine where the likelihood reads as a
    logistic one and ``rounds`` is not given, else newton. ``centre``: the newton engine measures the coefficients
    with each covariate centred at its declared box's centre and the intercept there (:meth:`ScorePrivatization.
    centred`; the record-free model reads the release through that linear map); False keeps the model's own
    coordinates.
    """
    if engine not in ("auto", "newton", "objective"):
        raise ValueError(f"engine must be 'auto', 'newton' or 'objective' here, got {engine!r}. Nothing was spent.")
    from ._graph import dim_lengths
    from .privatize_model import single_private_observed

    eps = check_epsilon(epsilon)
    if neighbouring != "replace":
        raise ValueError("the GLM measurements use replace-one neighbouring (N public); the ledger uses "
                         f"{neighbouring!r}. Nothing was spent.")
    if rounds is not None and (isinstance(rounds, bool) or not isinstance(rounds, (int, np.integer)) or rounds < 1):
        raise ValueError(f"rounds must be a positive integer (pilot rounds plus the final one, e.g. 3), got {rounds!r}.")
    public_names, rv, outcomes = single_private_observed(model, public, "GLM measurements")
    why: list[str] = []
    structure = read_glm(rv, outcomes.size, model.free_RVs, dim_lengths(model), why)
    if structure is None:
        raise ValueError(
            f"observed variable {rv.name!r} is not a GLM the measurements route reads: {'; '.join(why)}. It takes a "
            "univariate likelihood whose parameters are functions of linear predictors ([a +] X @ beta, b * x, X a "
            "NumPy array or pm.Data with one row per record) and of scalars shared by the records."
        )
    given = bounds.get(rv.name) if bounds else None
    unknown = sorted(set(bounds or {}) - {rv.name})
    if unknown:
        raise ValueError(f"bounds names {unknown}, which are not the private observed variable {rv.name!r}.")
    if not isinstance(given, Mapping):
        given = {}
    extra = sorted(map(str, set(given) - {"x", "y"}))
    if extra:
        raise ValueError(
            f"bounds[{rv.name!r}] takes two keys, 'x' (every covariate's range: the key itself, whatever the "
            f"covariates are called; one pair, or arrays with one entry per covariate) and 'y' (the outcome's range), "
            f"got {extra}. Nothing was spent.")
    lo_y, hi_y = _outcome_range(rv, given, rv.name, public_names)
    lows, highs = _covariate_box(given, structure, rv.name, outcome_needed="y" in given)
    if str(rv.dtype).startswith(("int", "uint")):  # counts: clipped to whole numbers, never between them
        lo_y, hi_y = float(np.ceil(lo_y)), float(np.floor(hi_y))
        if lo_y >= hi_y:
            raise ValueError(f"bounds[{rv.name!r}]['y'] holds fewer than two whole numbers for a count; widen it. "
                             "Nothing was spent.")
    transform_of = _transform_of(model)
    derivatives = RecordDerivatives(structure, transform_of)
    # A record with a value that is not finite becomes the default record (the outcome's lower bound, the middle of
    # the box): a function of the record alone, so the clip's sensitivity holds. Finite values outside are clipped.
    bad = ~np.isfinite(outcomes)
    unindexed = np.zeros_like(bad)
    for p in structure.predictors:
        bad |= ~np.all(np.isfinite(p.design), axis=1)
        for b, (start, groups) in enumerate(p.blocks):  # an index naming no group
            unindexed |= (p.block_members[b] < 0) if len(p.block_members) > b else \
                p.design[:, start:start + groups].sum(axis=1) != 1
    bad |= unindexed
    clipped_y = np.clip(np.where(bad, lo_y, outcomes), lo_y, hi_y)
    designs, moved = [], bad.copy()
    for p, lo, hi in zip(structure.predictors, lows, highs):
        default = (lo + hi) / 2
        slope_columns = np.zeros(p.size, dtype=bool)
        for b, (start, groups) in enumerate(p.blocks):  # the default record is in the first group
            default[start:start + groups] = np.eye(groups)[0]
            slope_columns[start:start + groups] = p.is_slope(b)
        X = np.clip(np.where(bad[:, None], default, p.design), lo, hi)
        moved |= np.any((X != np.where(bad[:, None], X, p.design))[:, ~slope_columns], axis=1)
        for b, (start, groups) in enumerate(p.blocks):
            if p.is_slope(b):
                # a varying slope's columns: its covariate clipped into its range in the record's own group, 0
                # elsewhere (clipping whole rows would move the other groups' zeros into a range without 0)
                members = np.where(bad, 0, p.block_members[b])
                raw = np.where(bad, (lo[start] + hi[start]) / 2, p.block_scales[b])
                value = np.clip(raw, lo[start], hi[start])
                X[:, start:start + groups] = 0.0
                X[np.arange(len(X)), start + members] = value
                moved |= value != raw
        designs.append(X)
    moved |= clipped_y != np.where(bad, clipped_y, outcomes)
    moved &= ~unindexed  # said apart, below
    if moved.any():
        curator_report(f"{int(moved.sum())} record(s) of {rv.name!r} lay outside the declared bounds or were not "
                       "finite, and were clipped into them or replaced by the default record (the outcome's lower "
                       "bound, the middle of the box) (the count is for the curator only: it is not released).",
                       ClippedRecordsWarning, stacklevel=4)
    if unindexed.any():
        curator_report(f"{int(unindexed.sum())} record(s) of {rv.name!r} had a group index naming no group (groups "
                       "are indexed from 0 to G − 1, as PyMC does: a 1-based index puts every group's records under "
                       "the next label; pd.factorize gives a 0-based one); they became the default record (the count "
                       "is for the curator only: it is not released).", ClippedRecordsWarning, stacklevel=4)
    logistic = reads_as_logistic(structure, derivatives)
    if engine == "objective" and not logistic:
        raise ValueError(
            f"engine='objective' takes a Bernoulli likelihood with a logit link on one linear predictor and no other "
            f"parameter (logit_p = [a +] X @ beta, a[idx], b[idx] * x); {rv.name!r} is not one. Use engine='newton' "
            "(any GLM). Nothing was spent.")
    if engine == "objective" and rounds is not None:
        raise ValueError("rounds= is the newton engine's; the objective engine releases one point and the information "
                         "there. Nothing was spent.")
    mean, scale = _prior_summary(structure, model)
    plan = ScorePrivatization(
        model=model, name=rv.name, structure=structure, derivatives=derivatives, outcomes=clipped_y,
        designs=tuple(designs), outcome_range=(lo_y, hi_y), lower=tuple(lows), upper=tuple(highs),
        labels=tuple(structure.labels(transform_of)), prior_mean=mean, prior_scale=scale, epsilon=eps,
        schedule=NewtonSchedule(rounds=default_rounds(structure) if rounds is None else int(rounds),
                                clip_selection=ClipSelection(), records=len(clipped_y)),
        public=public_names, neighbouring=neighbouring,
    )
    plan.rehearse()
    # the first round's clips, public: a box with no valid point, or one too wide, is refused before any spend
    score_clip, information_clip = plan.clips(mean)
    check_clips(score_clip, information_clip, "at the prior mean (the first round's point)")
    if engine == "objective" or (engine == "auto" and logistic and rounds is None and objective_preferred(
            structure.dimension, feature_bound(structure.predictors[0], lows[0], highs[0]),
            feature_bound(structure.predictors[0], lows[0], highs[0], norm=1), plan.schedule.budgets(eps)[-1][0] / eps)):
        return replace(plan, engine="objective")
    moved = plan.centred() if centre else plan
    if moved is not plan:
        moved.rehearse()  # the record-free model reads the release through A: built once before any spend
    return moved
