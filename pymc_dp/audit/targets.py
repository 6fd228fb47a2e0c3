"""Every mechanism and private step of pymc_dp as an audit target, each with a deliberately broken twin.

Each :class:`AuditTarget` fixes a pair of neighbouring inputs chosen where the
mechanism's privacy loss is (near) its worst, the claimed (ε, δ), and how to run the
mechanism many times. Its *broken* twin runs the same code with the noise scale
halved (or the temperature halved, for tempered samplers) while still claiming the
original guarantee: an auditor with any power must fail it. The one exception is
EHDS, whose smooth sensitivity bound has enough slack that halving its scale leaves
it ε-DP on small data (exact loss 0.60 at ε = 1, n = 20, computed from its output
distributions): its twin divides the scale by 4 (exact loss 1.20); and the Barker step on
group intercepts, whose worst proposal is one region of many (its twin divides T by 4).

:func:`run_audits` audits them all; ``pymc-dp audit`` prints the table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from ..accounting import PrivacyLedger
from ..mechanisms import (
    NoiseSource,
    exponential_mechanism,
    gaussian_mechanism,
    geometric_mechanism,
    laplace_mechanism,
    randomized_response,
    release_posterior,
    resolve_noise_source,
)
from .auditor import AuditResult, Mechanism, audit

__all__ = ["AuditTarget", "TARGETS", "format_audit_table", "run_audits", "run_target"]

NOISE = ("secure", "seeded")


@dataclass(frozen=True)
class AuditTarget:
    """One mechanism to audit.

    Attributes
    ----------
    name
        Short name (the table's first column).
    epsilon, delta
        The claimed guarantee.
    runs
        Default runs on each input.
    build
        ``build(broken, secure) -> (mechanism, data, neighbour)``: the batched
        mechanism of :func:`pymc_dp.audit.audit` and the two neighbouring inputs.
        ``broken=True`` builds the twin with the noise scale halved; ``secure=True``
        lets mechanisms that draw noise use their default (OpenDP) source.
    events
        Event family for :func:`~pymc_dp.audit.audit`.
    broken_how
        How the broken twin differs.
    uses_noise_source
        Whether the mechanism draws from a pymc_dp noise source (the others use a
        NumPy generator inside a sampler step).
    """

    name: str
    epsilon: float
    delta: float
    runs: int
    build: Callable[[bool, bool], tuple[Mechanism, Any, Any]]
    events: str = "auto"
    broken_how: str = "noise scale halved"
    uses_noise_source: bool = True


def _noise(secure: bool, rng: np.random.Generator) -> Any:
    return None if secure else rng


# ---------------------------------------------------------------------------- additive noise


def _laplace(broken: bool, secure: bool):
    sensitivity = 0.5 if broken else 1.0

    def run(x: float, size: int, rng: np.random.Generator) -> np.ndarray:
        return laplace_mechanism(np.full(size, x), epsilon=1.0, sensitivity=sensitivity, ledger=PrivacyLedger(),
                                 rng=_noise(secure, rng))

    return run, 0.0, 1.0


def _gaussian(broken: bool, secure: bool):
    sensitivity = 0.5 if broken else 1.0  # σ is proportional to the declared sensitivity

    def run(x: float, size: int, rng: np.random.Generator) -> np.ndarray:
        return gaussian_mechanism(np.full(size, x), epsilon=1.0, delta=1e-5, sensitivity=sensitivity,
                                  ledger=PrivacyLedger(), rng=_noise(secure, rng))

    return run, 0.0, 1.0


def _geometric(broken: bool, secure: bool):
    epsilon = 2.0 if broken else 1.0  # scale 1/ε (sensitivity 1 is the smallest integer)

    def run(x: int, size: int, rng: np.random.Generator) -> np.ndarray:
        return geometric_mechanism(np.full(size, x, dtype=np.int64), epsilon=epsilon, sensitivity=1,
                                   ledger=PrivacyLedger(), rng=_noise(secure, rng))

    return run, 0, 1


def _randomized_response(broken: bool, secure: bool):
    # truthful with probability 3/4 (ln 3); the twin flips half as often (7/8: ln 7)
    epsilon = math.log(7.0) if broken else math.log(3.0)

    def run(x: bool, size: int, rng: np.random.Generator) -> np.ndarray:
        return randomized_response(np.full(size, x), epsilon=epsilon, ledger=PrivacyLedger(), rng=_noise(secure, rng))

    return run, True, False


# ---------------------------------------------------------------------------- selection


EXPONENTIAL_CANDIDATES = 11


def _exponential(broken: bool, secure: bool):
    # Candidate 0 gains Δ = 1 of utility while all others lose it: the case where the
    # normaliser moves against the candidate, so its probability ratio nears e^ε.
    m = EXPONENTIAL_CANDIDATES
    on, off = np.r_[1.0, np.zeros(m - 1)], np.r_[0.0, np.ones(m - 1)]
    epsilon = 2.0 if broken else 1.0

    def run(utilities: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        noise = _noise(secure, rng)
        return np.array([
            exponential_mechanism(np.arange(m), utilities, epsilon=epsilon, sensitivity=1.0, ledger=PrivacyLedger(),
                                  rng=noise)
            for _ in range(size)
        ])

    return run, on, off


# ---------------------------------------------------------------------------- the Laplace route


ROUTE_RECORDS = 50


def _route_records() -> tuple[np.ndarray, np.ndarray]:
    records = np.random.default_rng(2024).integers(0, 2, ROUTE_RECORDS).astype(np.int8)
    neighbour = records.copy()
    neighbour[np.flatnonzero(records == 0)[0]] = 1  # one record replaced
    return records, neighbour


def _laplace_route(broken: bool, secure: bool):
    from ..families import privatize

    epsilon = 2.0 if broken else 1.0

    def run(records: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        noise = _noise(secure, rng)
        return np.array([privatize(records, family="bernoulli", epsilon=epsilon, rng=noise).noisy[0]
                         for _ in range(size)])

    return (run, *_route_records())


def _centred_release(family: str, bounds: dict, records: np.ndarray, neighbour: Any, relation: str = "add_remove",
                     **family_args: Any):
    """A family's centred, weighted release (:mod:`pymc_dp.families.release_design`) on a worst-case pair.

    ``neighbour`` is the neighbouring data set, or a function of the release's design giving it:
    under add/remove one record more at the bounds' edge, where ``|x − c|`` (and ``(x − c)²``, and
    a regression's centred products) are largest at once, so the weighted vector moves by exactly
    Δ_w; under replace-one the pair of records the weighted sensitivity is the maximum over. The true
    loss is then ε (tight). The statistic is the exact privacy loss of the independent Laplace
    coordinates times their scale, ``Σᵢ sign(Δᵢ) clip(2zᵢ − mᵢ − m′ᵢ, −|Δᵢ|, |Δᵢ|)`` on the released
    coordinates z, m and m′ the exact released vectors and Δ = m − m′: the value Δ_w (an atom of
    probability 2⁻ᵈ under the data) when every coordinate falls beyond the data's mean. The twin's
    noise source halves the scale.

    The exact released vectors are :func:`~pymc_dp.families.privatize.prepare_statistics`' own; the
    noise is added as :func:`~pymc_dp.families.privatize.release_statistics` adds it (the noise
    source's ``add_laplace`` at the design's scale Δ_w/ε, which tests/test_release_design.py checks is
    the release's), for every run in one call.
    """
    def build(broken: bool, secure: bool):
        from ..families.privatize import prepare_statistics

        data = prepare_statistics(records, family, bounds=bounds, neighbouring=relation, **family_args)
        other = neighbour(data.design) if callable(neighbour) else neighbour
        prepared = [data, prepare_statistics(other, family, bounds=bounds, neighbouring=relation, **family_args)]
        m, m2 = (p.exact_released for p in prepared)
        gap = m - m2
        scale = data.design.noise_scale(1.0)

        def run(s: int, size: int, rng: np.random.Generator) -> np.ndarray:
            source = resolve_noise_source(_source(broken, secure, rng))
            z = source.add_laplace(np.tile(prepared[s].exact_released, (size, 1)), scale)
            return (np.sign(gap) * np.clip(2.0 * z - m - m2, -np.abs(gap), np.abs(gap))).sum(axis=1)

        return run, 0, 1

    return build


def _normal_replace_pair(design: Any) -> np.ndarray:
    """The Normal's replace-one neighbour of (18, 45, 61) on [18, 80]: 18 replaced by the x′ maximising the
    weighted gap ``w₀|x′ − 18| + w₁|(18 − c)² − (x′ − c)²|``, at x′ = c + w₀/(2w₁) (the gap's derivative is 0)."""
    w0, w1 = design.weights
    return np.array([design.shift + w0 / (2.0 * w1), 45.0, 61.0])


REGRESSION_AUDIT_BOUNDS = {"x": ([1.0, 0.0, 0.0], [1.0, 1.0, 1.0]), "y": (-1.0, 1.0)}
REGRESSION_AUDIT_ROWS = np.array([[1.0, 0.2, 0.7, -0.1], [1.0, 0.5, 0.4, 0.3], [1.0, 0.9, 0.1, 0.0]])
#: one record more at the corner where every centred column is largest: every product moves by its bound at once
REGRESSION_AUDIT_NEIGHBOUR = np.vstack([REGRESSION_AUDIT_ROWS, [1.0, 1.0, 1.0, 1.0]])


#: Group-indexed means mu[idx] on [18, 80]: group 0 holds (80, 45), group 1 (61); the neighbour moves the record
#: at 80 into group 1 (replace-one: its group is part of the record)
GROUPED_AUDIT_RECORDS = ((0, 80.0), (0, 45.0), (1, 61.0))
GROUPED_AUDIT_NEIGHBOUR = ((1, 80.0), (0, 45.0), (1, 61.0))


def _grouped_model(records: tuple[tuple[int, float], ...]) -> Any:
    import pymc as pm

    groups, values = (np.array(c) for c in zip(*records))
    with pm.Model(coords={"group": ["a", "b"]}) as model:
        mu = pm.Normal("mu", 50.0, 20.0, dims="group")
        sigma = pm.HalfNormal("sigma", 20.0)
        pm.Normal("y", mu[groups], sigma, observed=values)
    return model


#: A varying-intercept regression a[g] + b·x, x in [−1, 1], y in [−5, 6] (centres 0 and 0.5), two groups; the
#: neighbour adds a record at the corner (x, y) = (1, 6) to group 1, where every centred product is largest
POOLED_AUDIT_BOUNDS = {"x": (-1.0, 1.0), "y": (-5.0, 6.0)}
POOLED_AUDIT_RECORDS = ((0, 0.2, 0.5), (0, -0.4, 1.0), (1, 0.7, -0.3))
POOLED_AUDIT_NEIGHBOUR = POOLED_AUDIT_RECORDS + ((1, 1.0, 6.0),)


def _pooled_model(records: tuple[tuple[int, float, float], ...]) -> Any:
    import pymc as pm

    groups, x, y = (np.array(c) for c in zip(*records))
    with pm.Model(coords={"group": ["a", "b"]}) as model:
        a = pm.Normal("a", 0.0, 2.0, dims="group")
        pm.Normal("y", a[groups.astype(int)] + pm.Normal("b", 0.0, 2.0) * x, pm.HalfNormal("sigma", 2.0), observed=y)
    return model


def _pooled_regression_release(broken: bool, secure: bool):
    """The release by group of a varying-intercept regression with its products pooled over the groups, add/remove.

    Each group releases its count and centred sums; the centred products are released once, summed
    (:mod:`pymc_dp.families.grouped`). The neighbour adds a record at the corner of the box to group 1: it moves
    group 1's own coordinates and every pooled sum by its bound at once, so the release moves by exactly the Δ
    charged and the true loss is ε. Planned by the privacy flag's own
    :func:`~pymc_dp.model.privatize_model.plan_privatization`; the statistic is :func:`_grouped_release`'s.
    """
    from ..model.privatize_model import plan_privatization

    plans = [plan_privatization(_pooled_model(r), 1.0, bounds={"y": POOLED_AUDIT_BOUNDS},
                                neighbouring="add_remove").prepared["y"]
             for r in (POOLED_AUDIT_RECORDS, POOLED_AUDIT_NEIGHBOUR)]
    if not all(p.pooled for p in plans):
        raise AssertionError("the audit's regression was not pooled")  # pragma: no cover - the target's premise
    return _release_of_vectors(broken, secure, plans[0].exact_released, plans[1].exact_released, plans[0].sensitivity)


def _release_of_vectors(broken: bool, secure: bool, m: np.ndarray, m2: np.ndarray, sensitivity: float):
    """Laplace noise at Δ/ε (ε = 1) on two exact vectors, as :func:`~pymc_dp.families.grouped.release_grouped` adds
    it; the statistic projects the release on the sign of the gap, each coordinate clipped to it."""
    gap = m - m2
    exact = (m, m2)

    def run(s: int, size: int, rng: np.random.Generator) -> np.ndarray:
        source = resolve_noise_source(_source(broken, secure, rng))
        z = source.add_laplace(np.tile(exact[s], (size, 1)), sensitivity / 1.0)
        return (np.sign(gap) * np.clip(2.0 * z - m - m2, -np.abs(gap), np.abs(gap))).sum(axis=1)

    return run, 0, 1


def _grouped_release(broken: bool, secure: bool):
    """The release by group of ``pm.Normal("y", mu[idx], sigma)`` under replace-one (:mod:`pymc_dp.families.grouped`).

    Both data sets are planned by the privacy flag's own :func:`~pymc_dp.model.privatize_model.plan_privatization`;
    the neighbour moves a record at the bounds' edge from group 0 to group 1, so group 0's weighted
    vector loses the record's (|x − c|, (x − c)², 1) and group 1's gains it: the concatenated release
    moves by 2·Δ_g, the sensitivity charged, and the true loss is ε. The statistic is that of
    :func:`_centred_release` on the concatenated vectors; the noise is added as
    :func:`~pymc_dp.families.grouped.release_grouped` adds it (the noise source's Laplace at Δ/ε).
    """
    from ..model.privatize_model import plan_privatization

    plans = [plan_privatization(_grouped_model(r), 1.0, bounds={"y": {"x": (18.0, 80.0)}}).prepared["y"]
             for r in (GROUPED_AUDIT_RECORDS, GROUPED_AUDIT_NEIGHBOUR)]
    m, m2 = (np.concatenate([p.exact_released for p in plan.parts]) for plan in plans)
    return _release_of_vectors(broken, secure, m, m2, plans[0].sensitivity)


GAUSSIAN_RELEASE_DELTA = 1e-5


def _gaussian_regression_release(broken: bool, secure: bool):
    """A regression's centred products weighted for Gaussian noise, under add/remove, at (ε, δ) = (1, 10⁻⁵).

    Two covariates in [0, 1] and an outcome in [−1, 1] (an intercept column). The neighbour adds one
    record at the corner (1, 1, 1), where every centred column is largest, so every released coordinate
    moves by its largest magnitude at once and the L2 sensitivity charged is attained: the true loss
    is ε. The Gaussian's privacy loss is linear in the projection of the release on the gap between
    the two means, so that projection is the statistic, floored (as for the second moment) at half a
    noise s.d. above the smaller mean to move the auditor's bins into the upper tail. The twin's
    noise source halves σ.

    The exact released vectors are :func:`~pymc_dp.families.privatize.prepare_statistics`' own; the
    noise is added as :func:`~pymc_dp.families.privatize.release_statistics` adds it (the noise
    source's ``add_gaussian`` at the design's σ, which tests/test_gaussian_release.py checks is the
    release's), for every run in one call: one release per call would take minutes.
    """
    from ..families.linear_regression import LinearRegression
    from ..families.privatize import prepare_statistics

    family = LinearRegression(n_features=3)
    prepared = [prepare_statistics(rows, family, bounds=REGRESSION_AUDIT_BOUNDS, neighbouring="add_remove",
                                   noise="gaussian", delta=GAUSSIAN_RELEASE_DELTA)
                for rows in (REGRESSION_AUDIT_ROWS, REGRESSION_AUDIT_NEIGHBOUR)]
    m, m2 = (p.exact_released for p in prepared)
    direction = (m - m2) / np.linalg.norm(m - m2)
    sigma = prepared[0].design.noise_scale(1.0, GAUSSIAN_RELEASE_DELTA)
    floor = float(m2 @ direction) + SECOND_MOMENT_FLOOR * sigma  # the smaller mean: the neighbour's

    def run(s: int, size: int, rng: np.random.Generator) -> np.ndarray:
        source = resolve_noise_source(_source(broken, secure, rng))
        z = source.add_gaussian(np.tile(prepared[s].exact_released, (size, 1)), sigma)
        return np.maximum(z @ direction, floor)

    return run, 0, 1


# ---------------------------------------------------------------------------- tempered posteriors


# A truncated beta-Bernoulli: p on [0.2, 0.8], so Δ = ln 4 and T = 2Δ/ε. The neighbours
# replace one 0 by a 1. Few records keep the tempered posterior wide, so the
# normaliser moves against the far end of the interval, where the loss peaks.
BB_LOWER, BB_RECORDS, BARKER_RECORDS = 0.2, 5, 2


def _beta_bernoulli(successes: int, records: int, replicas: int = 0) -> Any:
    """The model; with ``replicas`` > 0, that many independent copies of p, each seeing the same records."""
    import pymc as pm

    from ..model import truncate

    data = np.r_[np.ones(successes), np.zeros(records - successes)].astype(np.int8)
    with pm.Model() as model:
        if replicas:
            p = pm.Beta("p", 1.0, 1.0, shape=replicas)
            pm.Bernoulli("y", p, observed=np.repeat(data[:, None], replicas, axis=1))
        else:
            p = pm.Beta("p", 1.0, 1.0)
            pm.Bernoulli("y", p, observed=data)
    return truncate(model, {"p": (BB_LOWER, 1.0 - BB_LOWER)})


OPS_GRID = 201


def _ops_draw(broken: bool, secure: bool):
    """One exact OPS draw of p on a grid (the convergence assumption made true by enumeration)."""
    from ..model import loglik_sensitivity, temper

    models = {s: _beta_bernoulli(s, BB_RECORDS) for s in (0, 1)}
    temperature = loglik_sensitivity(models[0]).temperature(1.0) / (2.0 if broken else 1.0)
    grid = np.linspace(-8.0, 8.0, OPS_GRID)  # the truncated interval's unconstrained coordinate (p within 2e-4 of its ends)
    laws = {}
    for s, model in models.items():
        tempered = temper(model, temperature)
        (value,) = tempered.value_vars
        logp = tempered.compile_logp()
        p_of = model.compile_fn(model.replace_rvs_by_values([model["p"]])[0], inputs=model.value_vars)
        log_w = np.array([logp({value.name: g}) for g in grid])
        w = np.exp(log_w - log_w.max())
        laws[s] = (np.array([float(p_of({value.name: g})) for g in grid]), w / w.sum())

    def run(s: int, size: int, rng: np.random.Generator) -> np.ndarray:
        points, weights = laws[s]
        return points[rng.choice(len(points), size=size, p=weights)]

    return run, 0, 1


GIBBS_REPLICAS = 1000


def _gibbs_update(broken: bool, secure: bool):
    """One PrivateGibbs update of p; a model with many independent copies of p gives many runs per step."""
    from ..step_methods import PrivateGibbs

    with _beta_bernoulli(0, BB_RECORDS):
        temperature = PrivateGibbs(["p"], epsilon_per_update=1.0).cost.temperature  # the claim: ε = 1 per update
    steps = {}
    for s in (0, 1):
        model = _beta_bernoulli(s, BB_RECORDS, replicas=GIBBS_REPLICAS)
        with model:
            steps[s] = (PrivateGibbs(["p"], temperature=temperature / (2.0 if broken else 1.0)), model.initial_point())

    def run(s: int, size: int, rng: np.random.Generator) -> np.ndarray:
        step, point = steps[s]
        step.rng = rng
        (name,) = point
        draws = [step.step(point)[0][name] for _ in range(-(-size // GIBBS_REPLICAS))]
        return np.concatenate(draws)[:size]

    return run, 0, 1


BARKER_START, BARKER_SCALING = -5.0, 10.0


def _barker_step(broken: bool, secure: bool):
    """One Barker step from p near the lower end, proposing moves across the whole interval."""
    from ..step_methods import PrivateMetropolis

    steps = {}
    for s in (0, 1):
        with _beta_bernoulli(s, BARKER_RECORDS) as model:
            steps[s] = PrivateMetropolis(["p"], epsilon_per_update=2.0 if broken else 1.0, acceptance="barker",
                                         tune=False, scaling=BARKER_SCALING)
            (name,) = model.initial_point()

    def run(s: int, size: int, rng: np.random.Generator) -> np.ndarray:
        step = steps[s]
        step.rng = rng
        point = {name: np.array(BARKER_START)}
        return np.array([float(step.step(point)[0][name]) for _ in range(size)])

    return run, 0, 1


# ---------------------------------------------------------------------------- per-record inputs under a clip

# A record is the whole row: covariate and outcome (or group index and outcome). The
# neighbours replace one row by one that pulls the other way, so the clipped
# log-likelihood difference spans its whole range 2 × (upper − lower) across the parameter.
CLIP_LOWER, CLIP_RECORDS, GROUP_SCALING = -2.0, 4, 4.0


def _clipped_logistic(last_row: tuple[float, int]) -> Any:
    import pymc as pm

    from ..model import clip_loglik

    x = np.r_[np.linspace(-1.0, 1.0, CLIP_RECORDS - 1), last_row[0]]
    y = np.r_[np.array([0, 1, 1])[: CLIP_RECORDS - 1], last_row[1]].astype(np.int8)
    with pm.Model() as model:
        b = pm.Uniform("b", -4.0, 4.0)
        pm.Bernoulli("y", logit_p=b * x, observed=y)
    return clip_loglik(model, CLIP_LOWER, 0.0)


def _ops_logistic(broken: bool, secure: bool):
    """One exact OPS draw of a logistic-regression slope whose covariate is part of each record (grid enumeration)."""
    from ..model import loglik_sensitivity, temper

    models = {0: _clipped_logistic((3.0, 1)), 1: _clipped_logistic((-3.0, 1))}
    temperature = loglik_sensitivity(models[0]).temperature(1.0) / (2.0 if broken else 1.0)
    grid = np.linspace(-6.0, 6.0, OPS_GRID)  # b's unconstrained (interval) coordinate
    laws = {}
    for s, model in models.items():
        tempered = temper(model, temperature)
        (value,) = tempered.value_vars
        logp = tempered.compile_logp()
        log_w = np.array([logp({value.name: g}) for g in grid])
        w = np.exp(log_w - log_w.max())
        laws[s] = w / w.sum()

    def run(s: int, size: int, rng: np.random.Generator) -> np.ndarray:
        return rng.choice(OPS_GRID, size=size, p=laws[s]).astype(float)

    return run, 0, 1


def _barker_group_index(broken: bool, secure: bool):
    """One Barker step of group intercepts ``a[idx]``: the neighbours move one record to the other group.

    The moved record (y = 2.5) starts at its clip floor in one group and at its ceiling in the other
    (a = (-2, 2.5); the clip [-3, -0.92] has both ends attainable for a unit Normal), so a proposal
    swapping the intercepts moves its term by +2Δ/T under one neighbour and -2Δ/T under the other. Three
    records in each group make that proposal's acceptance small (r ≈ -3), where Barker's acceptance is
    exponential in r and the whole ε shows. The output is ``a[0] - a[1]`` after the step (post-processing).
    The swap is one proposal region among many, so the binned events see a mixture: with the temperature
    halved (true ε = 2 on that region) the audit's bound stayed just under 1 at 10^6 runs (0.95; estimate
    1.22); the twin divides the temperature by 4 instead, as EHDS's does.
    """
    import pymc as pm

    from ..model import clip_loglik
    from ..step_methods import PrivateMetropolis

    steps = {}
    for s, group in ((0, 0), (1, 1)):
        idx = np.array([0, 0, 0, 1, 1, 1, group])
        y = np.array([-2.0, -2.0, -2.0, 2.5, 2.5, 2.5, 2.5])
        with pm.Model() as model:
            a = pm.Uniform("a", -3.0, 3.0, shape=2)
            pm.Normal("y", a[idx], 1.0, observed=y)
        with clip_loglik(model, -3.0, -0.92) as clipped:
            steps[s] = PrivateMetropolis(["a"], epsilon_per_update=4.0 if broken else 1.0, acceptance="barker",
                                         tune=False, scaling=GROUP_SCALING)
            (name,) = clipped.initial_point()
    start = np.log((np.array([-2.0, 2.5]) + 3.0) / (3.0 - np.array([-2.0, 2.5])))  # the interval transform

    def run(s: int, size: int, rng: np.random.Generator) -> np.ndarray:
        step = steps[s]
        step.rng = rng
        out = np.empty(size)
        for i in range(size):
            value = step.step({name: start})[0][name]
            a = 6.0 / (1.0 + np.exp(-value)) - 3.0
            out[i] = a[0] - a[1]
        return out

    return run, 0, 1


# ---------------------------------------------------------------------------- posterior release


def _noisy_gradient(broken: bool, secure: bool):
    """One noisy gradient of a logistic regression at a public point where one record's term reaches L1 norm 2B.

    At ``w_0 = (−20, 20)`` the record ``((1, 0), y = 1)`` contributes ≈ (1, 0) and its
    replacement ``((0, 1), y = 0)`` ≈ (0, −1): L1 distance 2 = 2·``feature_l1_bound``, the
    sensitivity the mechanism charges. The statistic ``clip(z₁, 0, 1) + clip(z₂, −1, 0)``
    is monotone in the privacy loss of the two Laplace coordinates, so it loses nothing.
    The broken twin spends ε = 2 while claiming 1 (noise scale halved).
    """
    from ..mechanisms.logistic_regression import noisy_gradient_logistic

    epsilon = 2.0 if broken else 1.0
    records = {0: (np.array([[1.0, 0.0]]), np.array([1])), 1: (np.array([[0.0, 1.0]]), np.array([0]))}
    start = np.array([-20.0, 20.0])

    def run(s: int, size: int, rng: np.random.Generator) -> np.ndarray:
        X, y = records[s]
        noise = _noise(secure, rng)
        out = np.empty(size)
        for i in range(size):
            z = noisy_gradient_logistic(X, y, epsilon=epsilon, iterations=1, feature_l1_bound=1.0,
                                        initial_weights=start, ledger=PrivacyLedger(), rng=noise).measurements[0]
            out[i] = np.clip(z[0], 0.0, 1.0) + np.clip(z[1], -1.0, 0.0)
        return out

    return run, 0, 1


#: The neighbours of the private Newton target: (covariates, labels) of a logistic regression on x ∈ [−1, 1],
#: differing in their second record.
NEWTON_AUDIT_RECORDS = {0: ([-1.0, 1.0], [1, 1]), 1: ([-1.0, 1.0], [1, 0])}


def _newton_audit_model(records: tuple[list, list]) -> Any:
    import pymc as pm

    x, y = records
    with pm.Model() as model:
        beta = pm.Normal("beta", 0.0, 1.0)
        a = pm.Normal("a", 0.0, 1.0)
        pm.Bernoulli("y", logit_p=a + beta * np.array(x), observed=np.array(y))
    return model


def newton_audit_terms(s: int, weights: np.ndarray | None = None
                       ) -> tuple[np.ndarray, np.ndarray, tuple[float, float]]:
    """The record's score and information at the public point 0 and the round's clips (the score's in the norm
    weighted by ``weights``, if any), from the measurements route's own plan
    (:func:`pymc_dp.model.score_measurements.plan_score_privatization`)."""
    from ..model.score_measurements import plan_score_privatization

    plan = plan_score_privatization(_newton_audit_model(NEWTON_AUDIT_RECORDS[s]), 1.0, bounds={"y": {"x": (-1, 1)}},
                                    rounds=1)
    point = np.zeros(plan.structure.dimension)
    scores, information = plan.derivatives(point, plan.outcomes, list(plan.designs))
    return scores, information, plan.clips(point, weights)


def _private_newton(broken: bool, secure: bool, weights: np.ndarray | None = None):
    """One private Newton round (the measurements route's GLM engine) of a logistic regression on one record.

    At the public point φ = 0 (p = ½) the record (x = 1, y = 1) has score (½, ½) and its replacement (x = 1,
    y = 0) has (−½, −½) (a common record (x = −1, y = 1) beside them): L1 distance 2 = 2·C_g, the sensitivity charged, with C_g = 1 the largest score over
    the box [−1, 1]. Their information is the same, so the information's release carries no loss and the pair
    attains the score's share of ε (0.75). The statistic Σ clip(z_j, −½, ½) is the score release's log-likelihood
    ratio up to a constant. The scores, information and clips come from the route's plan; the broken twin spends
    ε = 2 while claiming 1 (every noise scale halved).

    With ``weights`` the score is clipped in its weighted L1 norm ``Σ_j |g_j| / w_j`` (what the route does after its
    first round where the clips are chosen: :func:`pymc_dp.mechanisms.private_newton.score_weights`), noise w_j-fold
    per coordinate, the clip the plan's own weighted worst case over the box (½ + ½/3 = ⅔ for w = (1, 3), the pair
    2·⅔ apart in that norm: it still attains the score's share), the statistic Σ_j clip(z_j, −½, ½) / w_j.
    """
    from ..mechanisms.private_newton import NewtonSchedule, private_newton

    epsilon = 2.0 if broken else 1.0
    terms = {s: newton_audit_terms(s, weights) for s in (0, 1)}
    common = terms[0][0][0]  # the shared record's score (public to the auditor)
    scale = np.ones(2) if weights is None else np.asarray(weights, dtype=float)

    def run(s: int, size: int, rng: np.random.Generator) -> np.ndarray:
        scores, information, clips = terms[s]
        noise = _noise(secure, rng)
        out = np.empty(size)
        for i in range(size):
            release = private_newton(
                lambda point: [(scores, information)], lambda point: clips, start=np.zeros(2), prior_mean=np.zeros(2),
                prior_precision=np.ones(2), bound_step=lambda step: step, epsilon=epsilon,
                schedule=NewtonSchedule(rounds=1), ledger=PrivacyLedger(), rng=noise, first_weights=weights,
            ).final
            out[i] = (np.clip(release.score - common, -0.5, 0.5) / scale).sum()
        return out

    return run, 0, 1


#: The public score weights of the weighted private Newton target (the slope's coordinate, then the intercept's).
NEWTON_AUDIT_WEIGHTS = np.array([1.0, 3.0])


def _private_newton_weighted(broken: bool, secure: bool):
    """:func:`_private_newton` with the score weights :data:`NEWTON_AUDIT_WEIGHTS`."""
    return _private_newton(broken, secure, NEWTON_AUDIT_WEIGHTS)


#: The weighted information target's public weights, the information entry its pair differs in (vech position of
#: (0, 2) in 3 × 3: weight w_0·w_2 = 6, unlike w_0, w_2, max or either square) and the weighted clip.
NEWTON_INFORMATION_WEIGHTS = np.array([2.0, 1.0, 3.0])
NEWTON_INFORMATION_ENTRY, NEWTON_INFORMATION_CLIP = 2, 0.25


def _private_newton_information(broken: bool, secure: bool):
    """One private Newton round with public weights w = (2, 1, 3) whose neighbours differ in the information only: the
    replaced record's information terms are ±6h at entry (0, 2) (weight w_0·w_2 = 6) and 0 elsewhere, each of weighted
    norm h = :data:`NEWTON_INFORMATION_CLIP`, the clip given; so the pair is 2h apart in the weighted norm, the
    sensitivity charged. The round's schedule gives the information 0.95 of ε (the score's terms are equal and carry
    no loss), so the pair attains 0.95. The entry's weight differs from w_0, w_2, their maximum and their squares, and
    its place in the upper triangle from the one a column-major order would give it, so noise scaled any of those
    ways, or in another order, against a clip on Σ|H_k| / W_k is caught. Terms as a GLM never makes them (an
    information is positive semi-definite, whose pairs attain at most a third of this): the target checks the
    mechanism, not a model. Audited through clip(z, −6h, 6h) on that entry, the release's log-likelihood ratio up to
    a constant; the broken twin spends ε = 2 while claiming 1."""
    from ..mechanisms.private_newton import NewtonSchedule, private_newton

    epsilon = 2.0 if broken else 1.0
    h, k = NEWTON_INFORMATION_CLIP, NEWTON_INFORMATION_ENTRY
    weights = NEWTON_INFORMATION_WEIGHTS
    weight = float(weights[0] * weights[2])

    def run(s: int, size: int, rng: np.random.Generator) -> np.ndarray:
        information = np.zeros((2, 6))
        information[0, k] = (1.0 if s == 0 else -1.0) * weight * h
        scores = np.zeros((2, 3))
        noise = _noise(secure, rng)
        out = np.empty(size)
        for i in range(size):
            release = private_newton(
                lambda point: [(scores, information)], lambda point: (1.0, h), start=np.zeros(3),
                prior_mean=np.zeros(3), prior_precision=np.ones(3), bound_step=lambda step: step, epsilon=epsilon,
                schedule=NewtonSchedule(rounds=1, final_score_share=0.05), ledger=PrivacyLedger(), rng=noise,
                first_weights=weights,
            ).final
            out[i] = np.clip(release.information[0, 2], -weight * h, weight * h)
        return out

    return run, 0, 1


#: The neighbours of the private clip target: records' norms against candidates 1, 0.1 and 0.01 (a grid of three).
#: Eight records lie above the middle candidate and five between it and the last; the neighbour moves one of the
#: eight below every candidate.
CLIP_AUDIT_NORMS = {0: np.r_[np.full(8, 0.5), np.full(5, 0.05)], 1: np.r_[np.full(7, 0.5), 0.0, np.full(5, 0.05)]}


def _private_clip(broken: bool, secure: bool):
    """The measurements route's private clip (:meth:`pymc_dp.mechanisms.private_clip.ClipSelection.choose`) on a grid
    of three, ε′ = 1. The target is t = 2 ln(3 / 0.05) ≈ 8.19 records above: the middle candidate (8 above, then 7)
    loses a unit of utility while the last (13, then 12) gains one and the first (0 above, far from t) stays, the
    case where the normaliser moves against the gaining candidate: the pair's loss is 0.85 of ε′. The broken twin's
    Gumbel noise is halved (:class:`_HalvedNoise`)."""
    from ..mechanisms.noise import resolve_noise_source
    from ..mechanisms.private_clip import ClipSelection

    selection = ClipSelection(grid=3, floor=0.01, safety=1.0)

    def run(s: int, size: int, rng: np.random.Generator) -> np.ndarray:
        source = resolve_noise_source(_noise(secure, rng))
        source = _HalvedNoise(source) if broken else source
        return np.array([selection.choose(CLIP_AUDIT_NORMS[s], 1.0, 1.0, source) for _ in range(size)])

    return run, 0, 1


#: The neighbours of the private bounds target: 24 records at 0.1, 28 at 0.5 and 14 at 0.9 on a grid of six over
#: (0, 1); the neighbour moves one of those at 0.9 down to 0.05. Found by searching such pairs for the upper end's
#: largest exact loss on an event the twin reaches often: 0.43 of the end's ε′ = 0.5 (on an event of probability
#: 0.15), and 0.98 for the twin (probability 0.03).
BOUNDS_AUDIT_RECORDS = {0: np.repeat([0.1, 0.5, 0.9], [24, 28, 14]),
                        1: np.r_[0.05, np.repeat([0.1, 0.5, 0.9], [24, 28, 13])]}


def _private_bounds(broken: bool, secure: bool):
    """:func:`pymc_dp.mechanisms.private_bounds.suggest_bounds` on one column at ε = 1 over a grid of six on
    ``within=(0, 1)``, β = 0.05 (K ≈ 19.2; β is public and the privacy does not depend on it). Each end is an ε/2 release of its own; the audit reads the upper end (its index on the grid:
    post-processing of the release) against that end's claim, ε′ = 0.5. The broken twin's Gumbel noise is halved
    (:class:`_HalvedNoise`)."""
    from ..accounting import PrivacyLedger
    from ..mechanisms.noise import resolve_noise_source
    from ..mechanisms.private_bounds import bounds_grid, suggest_bounds

    grid = bounds_grid((0.0, 1.0), 6)

    def run(s: int, size: int, rng: np.random.Generator) -> np.ndarray:
        source = resolve_noise_source(_noise(secure, rng))
        source = _HalvedNoise(source) if broken else source
        upper = [suggest_bounds(BOUNDS_AUDIT_RECORDS[s], epsilon=1.0, ledger=PrivacyLedger(), within=(0.0, 1.0),
                                grid=6, confidence=0.05, rng=source, method="tails").pair[1] for _ in range(size)]
        return np.searchsorted(grid, np.asarray(upper)).astype(float)

    return run, 0, 1


#: The neighbours of the private quartile target (records on 0.1, 0.3, 0.5, 0.7, 0.9; a grid of six over (0, 1)),
#: found by an exact search of such pairs for the largest loss on an event of probability above 0.1 at ε = 1 whose
#: twin (ε doubled) reaches probability above 0.03: 2 records at 0.3 and 5 at 0.9, one 0.9 moved to 0.05; the cell
#: [0, 0.2) has probability 0.10 against 0.21, a loss of 0.71 (the twin's 1.41).
QUARTILE_AUDIT_RECORDS = {0: np.repeat([0.3, 0.9], [2, 5]), 1: np.r_[0.05, np.repeat([0.3, 0.9], [2, 4])]}


def _private_quartile(broken: bool, secure: bool):
    """The first quartile's cell at ε = 1 over six candidates evenly on (0, 1)
    (:func:`~pymc_dp.mechanisms.private_quantiles.private_quantile_cell`, each of the four releases of a column of
    ``suggest_bounds``'s fences). The release is the chosen cell's index; the broken twin's Gumbel noise is halved."""
    from ..mechanisms.noise import resolve_noise_source
    from ..mechanisms.private_quantiles import private_quantile_cell

    grid = np.linspace(0.0, 1.0, 6)
    records = {k: np.sort(v) for k, v in QUARTILE_AUDIT_RECORDS.items()}

    def run(s: int, size: int, rng: np.random.Generator) -> np.ndarray:
        source = resolve_noise_source(_noise(secure, rng))
        source = _HalvedNoise(source) if broken else source
        return np.array([private_quantile_cell(records[s], grid, 0.25, 1.0, source) for _ in range(size)], dtype=float)

    return run, 0, 1


#: The neighbours of the private median target (the grid 0, ±10ᵏ for k from −1 to 0 by eighths: 18 cells on
#: [−1, 1]), found by an exact search over records at the cells' midpoints for the largest loss of the first pass
#: (ε/2 = 0.5) on an event of probability above 0.1: two records at −0.875 and two at 0.492, one −0.875 moved to
#: 0.875; the loss is 0.44 against the claim's 0.5 (the twin's, Gumbel noise halved, 0.89).
MEDIAN_AUDIT_RECORDS = {0: np.array([-0.8749, -0.8749, 0.492, 0.492]), 1: np.array([0.8749, -0.8749, 0.492, 0.492])}
MEDIAN_AUDIT_DECADES = (-1, 0)


def _private_median(broken: bool, secure: bool):
    """:func:`pymc_dp.mechanisms.private_bounds.private_median` (the log-likelihood clip's choice,
    :mod:`pymc_dp.routes.clip_selection`) at ε = 1, run whole; the audit reads its first pass, an ε/2 release of its
    own (the cell of the coarse grid holding the returned median: post-processing of the output), against that
    release's claim, 0.5. The second pass is the same cell mechanism on a grid the first pass's release fixes. The
    broken twin's Gumbel noise is halved in both passes (:class:`_HalvedNoise`)."""
    from ..accounting import PrivacyLedger
    from ..mechanisms.noise import resolve_noise_source
    from ..mechanisms.private_bounds import bounds_grid, private_median

    grid = bounds_grid(None, 0, MEDIAN_AUDIT_DECADES)

    def run(s: int, size: int, rng: np.random.Generator) -> np.ndarray:
        source = resolve_noise_source(_noise(secure, rng))
        source = _HalvedNoise(source) if broken else source
        medians = [private_median(MEDIAN_AUDIT_RECORDS[s], epsilon=1.0, ledger=PrivacyLedger(),
                                  decades=MEDIAN_AUDIT_DECADES, rng=source).value for _ in range(size)]
        return np.searchsorted(grid, np.asarray(medians)).astype(float)

    return run, 0, 1


# ---------------------------------------------------------------------------- regularised logistic regression and PCA


class _HalvedNoise(NoiseSource):
    """A broken twin's noise: every scale handed to ``inner`` halved (the mechanism still reports the full one).

    Passed as a mechanism's ``rng``, it halves the noise of the mechanism's own code path, secure or
    seeded, without touching the mechanism: the Laplace and Gaussian samplers (hence the spherical
    Laplace vector of the perturbation mechanisms, whose norm is a sum of Laplace draws) and the
    exact ``add_*`` releases.
    """

    def __init__(self, inner: NoiseSource) -> None:
        self.inner = inner
        self.name = inner.name

    def laplace(self, scale: float, size: Any) -> np.ndarray:
        return self.inner.laplace(scale / 2.0, size)

    def gaussian(self, sigma: float, size: Any) -> np.ndarray:
        return self.inner.gaussian(sigma / 2.0, size)

    def discrete_laplace(self, scale: float, size: Any) -> np.ndarray:
        return self.inner.discrete_laplace(scale / 2.0, size)

    def gumbel_argmax(self, scores: Any, scale: float) -> int:
        return self.inner.gumbel_argmax(scores, scale / 2.0)

    def randomized_response(self, indices: np.ndarray, num_categories: int, truth_probability: float) -> np.ndarray:
        raise NotImplementedError("randomised response has no noise scale to halve")

    def add_laplace(self, value: np.ndarray, scale: float) -> np.ndarray:
        return self.inner.add_laplace(value, scale / 2.0)

    def add_gaussian(self, value: np.ndarray, sigma: float) -> np.ndarray:
        return self.inner.add_gaussian(value, sigma / 2.0)

    def add_discrete_laplace(self, value: np.ndarray, scale: float) -> np.ndarray:
        return self.inner.add_discrete_laplace(value, scale / 2.0)


def _source(broken: bool, secure: bool, rng: np.random.Generator) -> Any:
    """The ``rng`` argument of a mechanism run: the target's noise, or the twin's halved version of it."""
    return _HalvedNoise(resolve_noise_source(_noise(secure, rng))) if broken else _noise(secure, rng)


# Regularised logistic regression (CMS 2011): N = 500 records on the unit ball (feature_l2_bound 1), all
# labelled 1. N − 1 of them sit at (0.25, 0): they hold the minimiser far out along the first axis
# (w ≈ (9.7, ±0.87) at λ = 1/N, (5.2, ±0.16) at λ = 5/N) and add no curvature across it. The record
# replaced is x = (−cos θ, ±sin θ), θ = 65°: under both neighbours it is misclassified (margin −3.3 at
# λ = 1/N), so its loss gradient is nearly the whole of x, and the two gradients differ by nearly
# 2 sin θ across the axis, where the objective's curvature is λ alone. That is about as close as
# logistic regression lets a pair come to the 2/(Nλ) of the theorems: two records cannot be both
# misclassified and opposite (θ = 90°), and the margin a·cos θ they get grows only like √(1/λ).
LOGISTIC_RECORDS, LOGISTIC_BULK, LOGISTIC_ANGLE = 500, 0.25, math.radians(65.0)
OUTPUT_REGULARISATION, OBJECTIVE_REGULARISATION = 1.0 / LOGISTIC_RECORDS, 5.0 / LOGISTIC_RECORDS


def _logistic_records() -> dict[int, tuple[np.ndarray, np.ndarray]]:
    bulk = np.tile([LOGISTIC_BULK, 0.0], (LOGISTIC_RECORDS - 1, 1))
    cos, sin = math.cos(LOGISTIC_ANGLE), math.sin(LOGISTIC_ANGLE)
    y = np.ones(LOGISTIC_RECORDS, dtype=np.int8)
    return {s: (np.vstack([bulk, [-cos, sign * sin]]), y) for s, sign in ((0, 1.0), (1, -1.0))}


def _logistic_objective(X: np.ndarray, y: np.ndarray, lam: float, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """N ∇J(w) and ∇²J(w) for J(w) = (1/N) Σ log(1 + exp(−s wᵀx)) + (λ/2)‖w‖², s = 2y − 1 (CMS 2011)."""
    from ..mechanisms.logistic_regression import _sigmoid

    s = 2.0 * y - 1.0
    margin = s * (X @ w)
    gradient = X.T @ (-s * _sigmoid(-margin)) + len(s) * lam * w
    curvature = _sigmoid(margin) * _sigmoid(-margin)
    return gradient, (X.T * curvature) @ X / len(s) + lam * np.eye(len(w))


def _repeated(statistic: Callable[[int, np.random.Generator], float], s: int, size: int,
              rng: np.random.Generator) -> np.ndarray:
    """``size`` runs of a mechanism on input ``s``, each reduced to its audited statistic."""
    return np.array([statistic(s, rng) for _ in range(size)])


def _output_perturbation(broken: bool, secure: bool):
    """Output perturbation (CMS 2011, Alg. 1) on the neighbours of :func:`_logistic_records`, λ = 1/N.

    The exact minimisers w₀, w₁ of the two data sets lie 0.874 × 2/(Nλ) apart (2/(Nλ) is the
    sensitivity the mechanism charges), so the neighbours' true privacy loss is 0.874ε. The
    statistic is ‖o − w₁‖ − ‖o − w₀‖ of the released o: the privacy loss ln p₀(o)/p₁(o) of the
    spherical Laplace noise times its scale (post-processing with the public w₀, w₁), so thresholding
    it is the most powerful test; it reaches ‖w₀ − w₁‖ on the ray from w₁ through w₀ and beyond.
    The broken twin's noise source halves the Laplace draws whose sum is the noise's norm (scale
    halved, ε = 1 still claimed).
    """
    from ..mechanisms.logistic_regression import _fit_regularised, _scaled, output_perturbation_logistic

    records = _logistic_records()
    optimum = {s: _fit_regularised(*_scaled(X, y, 1.0), OUTPUT_REGULARISATION) for s, (X, y) in records.items()}

    def statistic(s: int, rng: np.random.Generator) -> float:
        o = output_perturbation_logistic(*records[s], epsilon=1.0, feature_l2_bound=1.0,
                                         regularisation=OUTPUT_REGULARISATION, ledger=PrivacyLedger(),
                                         rng=_source(broken, secure, rng)).weights
        return float(np.linalg.norm(o - optimum[1]) - np.linalg.norm(o - optimum[0]))

    def run(s: int, size: int, rng: np.random.Generator) -> np.ndarray:
        return _repeated(statistic, s, size, rng)

    return run, 0, 1


def _objective_perturbation(broken: bool, secure: bool):
    """Objective perturbation (CMS 2011, Alg. 2) on the neighbours of :func:`_logistic_records`, λ = 5/N.

    Nλ = 5 keeps ε′ = ε − 2 ln(1 + c/(Nλ)) = 0.90 at ε = 1 (c = 1/4: the theorem's first case, no
    extra ridge, where its (ε, 0) claim holds). A released f has density
    p_D(f) ∝ exp(−(ε′/2)‖b_D(f)‖) det ∇²J_D(f), where b_D(f) = −N∇J_D(f) is the one noise vector that
    makes f the minimiser for data D; the statistic is the exact privacy loss ln p₀(f)/p₁(f) computed
    from those (post-processing with the public neighbours), the most powerful test. It peaks at
    0.74 on these neighbours, where f lies far out along the first axis and b_D(f) points across it
    (b₀(f) − b₁(f) is the difference of the replaced records' loss gradients, nearly 2 sin θ there).
    The broken twin halves the noise vector b (ε′ doubled), still claiming ε = 1.
    """
    from ..mechanisms.logistic_regression import LOGISTIC_CURVATURE, objective_perturbation_logistic

    records = _logistic_records()
    lam, c = OBJECTIVE_REGULARISATION, LOGISTIC_CURVATURE
    n_lam = LOGISTIC_RECORDS * lam
    beta = (1.0 - math.log(1.0 + 2.0 * c / n_lam + (c / n_lam) ** 2)) / 2.0  # ε′/2, as the mechanism computes it

    def log_density(s: int, f: np.ndarray) -> float:
        gradient, hessian = _logistic_objective(*records[s], lam, f)
        return -beta * float(np.linalg.norm(gradient)) + float(np.linalg.slogdet(hessian)[1])

    def statistic(s: int, rng: np.random.Generator) -> float:
        f = objective_perturbation_logistic(*records[s], epsilon=1.0, feature_l2_bound=1.0, regularisation=lam,
                                            ledger=PrivacyLedger(), rng=_source(broken, secure, rng)).weights
        return log_density(0, f) - log_density(1, f)

    def run(s: int, size: int, rng: np.random.Generator) -> np.ndarray:
        return _repeated(statistic, s, size, rng)

    return run, 0, 1


SECOND_MOMENT_DELTA, SECOND_MOMENT_FLOOR = 1e-5, 0.5
#: Records per Gaussian release (each a run): a secure Gaussian draw costs ~50 µs, a seeded one nothing.
SECOND_MOMENT_BLOCKS = {True: 4, False: 32}


def _second_moment_gaussian(broken: bool, secure: bool):
    """The analytic Gaussian release of Σ x xᵀ ([WM10] 4.2) in d = 2, δ = 1e-5, R = 1: one record, e₁ or e₂.

    x xᵀ − x′x′ᵀ = diag(1, −1): its upper triangle has L2 norm √2 R², the sensitivity charged
    (attained). The statistic is S₁₁ − S₂₂, the direction in which the neighbours differ (the
    Gaussian's privacy loss is linear in it), floored at half its noise sd (under the claim's σ)
    above the neighbour's mean, −1: post-processing that leaves one atom below and moves the
    auditor's quantile bins into the upper tail, where the loss is largest (the twin's bound
    rose by 0.08 on average over five seeds). Each call releases d = 2k with k records, record j on
    coordinates 2j, 2j + 1 (k = 32, or 4 with secure noise, whose Gaussian draws cost ~50 µs each):
    Σ x xᵀ is then block diagonal, σ does not depend on d and the noise is i.i.d. on every entry,
    so the k diagonal 2 × 2 blocks are k independent runs of the d = 2 release on one record, at
    one calibration of σ per k runs. The twin's noise source halves σ.
    """
    from ..mechanisms.gaussian import analytic_gaussian_sigma
    from ..mechanisms.second_moment import noisy_second_moment

    k = SECOND_MOMENT_BLOCKS[secure]
    spread = math.sqrt(2.0) * analytic_gaussian_sigma(1.0, SECOND_MOMENT_DELTA, math.sqrt(2.0))  # sd of S₁₁ − S₂₂
    floor = -1.0 + SECOND_MOMENT_FLOOR * spread
    rows, cols = np.triu_indices(2 * k)
    first = np.flatnonzero((rows == cols) & (rows % 2 == 0))  # S_{2j,2j}
    second = np.flatnonzero((rows == cols) & (rows % 2 == 1))  # S_{2j+1,2j+1}

    def run(s: int, size: int, rng: np.random.Generator) -> np.ndarray:
        X = np.zeros((k, 2 * k))
        X[np.arange(k), 2 * np.arange(k) + s] = 1.0  # record j: e_{2j} (data) or e_{2j+1} (neighbour)
        out = []
        for _ in range(-(-size // k)):
            z = noisy_second_moment(X, epsilon=1.0, delta=SECOND_MOMENT_DELTA, norm_bound=1.0, ledger=PrivacyLedger(),
                                    rng=_source(broken, secure, rng)).values
            out.append(z[first] - z[second])
        return np.maximum(np.concatenate(out)[:size], floor)

    return run, 0, 1


SECOND_MOMENT_ANGLE = math.atan(0.5) / 2.0


def _second_moment_laplace(broken: bool, secure: bool):
    """The Laplace release of Σ x xᵀ ([WM10] 4.2) in d = 2, R = 1, which charges (d + 1)R² = 3.

    No pair of records attains 3. For unit records at angles α and β the upper triangle of
    x xᵀ − x′x′ᵀ is ((cos 2α − cos 2β)/2, (sin 2α − sin 2β)/2, (cos 2β − cos 2α)/2), of L1 norm
    |cos 2α − cos 2β| + |sin 2α − sin 2β|/2, largest (√5) for β = α + 90° with tan 2α = 1/2; shorter
    records do no better (the norm is convex in ‖x‖² and ‖x′‖²). Those two records are the
    neighbours: true loss √5/3 · ε = 0.745ε. The statistic is the exact privacy loss of the three
    Laplace coordinates times their scale, Σᵢ sign(Δᵢ) clip(2zᵢ − mᵢ − m′ᵢ, −|Δᵢ|, |Δᵢ|) with m, m′
    the exact upper triangles and Δ = m − m′: it takes the value √5 (an atom, of probability 1/8
    under the data) when every coordinate falls beyond the data's mean. The twin's noise source
    halves the scale.
    """
    from ..mechanisms.second_moment import noisy_second_moment

    a = SECOND_MOMENT_ANGLE
    records = {0: np.array([[math.cos(a), math.sin(a)]]), 1: np.array([[-math.sin(a), math.cos(a)]])}
    rows, cols = np.triu_indices(2)
    m, m2 = ((x[0, rows] * x[0, cols]) for x in (records[0], records[1]))
    gap = m - m2

    def run(s: int, size: int, rng: np.random.Generator) -> np.ndarray:
        z = np.array([noisy_second_moment(records[s], epsilon=1.0, norm_bound=1.0, mechanism="laplace",
                                          ledger=PrivacyLedger(), rng=_source(broken, secure, rng)).values
                      for _ in range(size)])
        return (np.sign(gap) * np.clip(2.0 * z - m - m2, -np.abs(gap), np.abs(gap))).sum(axis=1)

    return run, 0, 1


def _bounded_sum(broken: bool, secure: bool):
    """:func:`pymc_dp.noisy_bounded_sum` of f(r) = (r, r) with the L1 bound B = 1, on one record, r = 1 or −1.

    Both rows have L1 norm 2 and are projected onto the ball, to (½, ½) and (−½, −½): the sums differ
    by 2 = 2B in L1, the charged sensitivity, so the true loss is ε (tight). The statistic,
    Σᵢ clip(zᵢ, −½, ½), is the exact privacy loss of the two Laplace coordinates times their scale.
    The twin's noise source halves the scale.
    """
    from ..mechanisms.bounded_sum import noisy_bounded_sum

    records = {0: np.array([1.0]), 1: np.array([-1.0])}

    def f(r: np.ndarray) -> np.ndarray:
        return np.column_stack([r, r])

    def run(s: int, size: int, rng: np.random.Generator) -> np.ndarray:
        z = np.array([noisy_bounded_sum(records[s], f, bound=1.0, epsilon=1.0, ledger=PrivacyLedger(),
                                        rng=_source(broken, secure, rng)).values for _ in range(size)])
        return np.clip(z, -0.5, 0.5).sum(axis=1)

    return run, 0, 1


def _thresholdout(broken: bool, secure: bool):
    """One query of :class:`pymc_dp.ReusableHoldout` on a holdout of one record, φ = 0 or 1.

    With ``value_range=(0, 1)`` and n = 1 the holdout mean moves by Δ = 1, and σ = 2 makes a segment
    cost 2Δ/σ = 1. The training estimate is 0, so the record with φ = 1 is far over the threshold
    (T = ½) and the other is not. The statistic is the answer when it was over the threshold and
    −100 when it was not: its upper tail is where the Laplace answer's ratio e^{Δ/σ} and the
    comparison's add up. The twin's noise source halves all three noises (threshold, comparison, answer).
    """
    from ..mechanisms.thresholdout import ReusableHoldout

    records = {0: np.array([0.0]), 1: np.array([1.0])}

    def run(s: int, size: int, rng: np.random.Generator) -> np.ndarray:
        out = np.empty(size)
        for i in range(size):
            holdout = ReusableHoldout(records[s], threshold=0.5, sigma=2.0, budget=1, ledger=PrivacyLedger(),
                                      rng=_source(broken, secure, rng), batch=True)
            answer = holdout.query(lambda r: r, training_value=0.0)
            out[i] = answer.value if answer.over_threshold else -100.0
        return out

    return run, 0, 1


def _mwem(broken: bool, secure: bool):
    """One MWEM round (T = 1, ε = 1: ε/2 selecting, ε/2 measuring) over a 3-cell domain, n = 30.

    The workload counts cell 0 and cell 1; the uniform start answers 10 to both. X has counts
    (10, 18, 2), X′ moves one record from cell 1 to cell 0: (11, 17, 2). Query 0's score rises by 1 while
    query 1's falls by 1 — the exponential mechanism's worst case, with query 0 the unlikely choice, so
    its probability ratio nears e^{ε/2} — and query 0's count moves by 1, the Laplace measurement's
    sensitivity. The statistic is the measured count when query 0 was chosen and −100 otherwise.
    The twin's noise source halves the Gumbel and Laplace scales.
    """
    from ..mechanisms.mwem import Domain, Workload, mwem

    domain = Domain.of({"cell": 3})
    workload = Workload(domain, np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]), ("cell=0", "cell=1"))
    records = {0: np.repeat([0, 1, 2], [10, 18, 2]), 1: np.repeat([0, 1, 2], [11, 17, 2])}

    def run(s: int, size: int, rng: np.random.Generator) -> np.ndarray:
        out = np.empty(size)
        for i in range(size):
            result = mwem(records[s], domain=domain, workload=workload, epsilon=1.0, rounds=1, ledger=PrivacyLedger(),
                          rng=_source(broken, secure, rng), updates=1)
            m = result.measurements[0]
            out[i] = m.value if m.query == 0 else -100.0
        return out

    return run, 0, 1


def _ais_weights(broken: bool, secure: bool):
    """The AIS weights' release (Laplace on the simplex) at its worst-case pair of neighbours.

    Two particles, Δβ_K = 2 (log-weight spread W = 4): under X the weights are (p, 1 − p) with
    p = 1/(1 + e^{W/2}); under X′ particle 0's log-weight is W higher, which moves the normalised
    weights by 2 tanh(W/4) in L1 — the charged sensitivity, attained. The statistic is the released
    weight of particle 0 (after the projection onto the simplex, as released). The twin's noise
    source halves the Laplace scale.
    """
    from ..routes.ais import release_weights

    spread, W = 2.0, 4.0
    p = 1.0 / (1.0 + math.exp(W / 2))
    tilted = p * math.exp(W) / (p * math.exp(W) + 1 - p)
    weights = {0: np.array([p, 1 - p]), 1: np.array([tilted, 1 - tilted])}

    def run(s: int, size: int, rng: np.random.Generator) -> np.ndarray:
        return np.array([release_weights(weights[s], spread, 1.0, PrivacyLedger(), _source(broken, secure, rng))[0][0]
                         for _ in range(size)])

    return run, 0, 1


def _hellinger(mechanism: str, counts: Sequence[int], neighbour: Sequence[int], factor: float = 2.0):
    def build(broken: bool, secure: bool):
        epsilon = factor if broken else 1.0  # every scale is proportional to 1/ε
        prior = np.ones(len(counts))

        def run(x: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
            noise = _noise(secure, rng)
            return np.array([release_posterior(x, prior, epsilon, mechanism, ledger=PrivacyLedger(), rng=noise).alpha
                             for _ in range(size)])

        return run, np.asarray(counts), np.asarray(neighbour)

    return build


def _lsdim_statistic(build):
    """LSDim with k = 3 releases two noisy counts. Audit min(c₁ − 1, 6 − c₂) (post-processing): it is ≥ 0
    exactly where the likelihood ratio of the neighbours (0, 7, 3) and (1, 6, 3) is largest."""

    def wrapped(broken: bool, secure: bool):
        run, x, y = build(broken, secure)

        def statistic(d: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
            counts = run(d, size, rng) - 1.0  # the prior is Dir(1, 1, 1)
            return np.minimum(counts[:, 0] - 1.0, 6.0 - counts[:, 1])

        return statistic, x, y

    return wrapped


TARGETS: tuple[AuditTarget, ...] = (
    AuditTarget("laplace", 1.0, 0.0, 200_000, _laplace),
    AuditTarget("gaussian", 1.0, 1e-5, 200_000, _gaussian),
    AuditTarget("geometric", 1.0, 0.0, 200_000, _geometric, events="exact"),
    AuditTarget("randomized response", math.log(3.0), 0.0, 200_000, _randomized_response, events="exact",
                broken_how="flip probability halved"),
    AuditTarget("exponential mechanism", 1.0, 0.0, 40_000, _exponential, events="exact"),
    AuditTarget("laplace route (bernoulli statistics)", 1.0, 0.0, 40_000, _laplace_route),
    AuditTarget("laplace route (normal, centred and weighted, replace)", 1.0, 0.0, 200_000,
                _centred_release("normal", {"x": (18.0, 80.0)}, np.array([18.0, 45.0, 61.0]), _normal_replace_pair,
                                 relation="replace")),
    AuditTarget("laplace route (normal, centred and weighted, add/remove)", 1.0, 0.0, 200_000,
                _centred_release("normal", {"x": (18.0, 80.0)}, np.array([30.0, 45.0, 61.0]),
                                 np.array([30.0, 45.0, 61.0, 80.0]))),
    AuditTarget("laplace route (poisson, centred and weighted, add/remove)", 1.0, 0.0, 200_000,
                _centred_release("poisson", {"upper": 20}, np.array([0.0, 3.0, 5.0]), np.array([0.0, 3.0, 5.0, 20.0]))),
    AuditTarget("laplace route (regression, centred products, add/remove)", 1.0, 0.0, 200_000,
                _centred_release("linear_regression", REGRESSION_AUDIT_BOUNDS, REGRESSION_AUDIT_ROWS,
                                 REGRESSION_AUDIT_NEIGHBOUR, n_features=3)),
    AuditTarget("laplace route (group means mu[idx], by group, replace)", 1.0, 0.0, 200_000, _grouped_release),
    AuditTarget("laplace route (varying intercepts, products pooled over groups, add/remove)", 1.0, 0.0, 200_000,
                _pooled_regression_release),
    AuditTarget("laplace route (regression, Gaussian noise with δ, add/remove)", 1.0, GAUSSIAN_RELEASE_DELTA, 200_000,
                _gaussian_regression_release),
    AuditTarget("OPS draw (discretised beta-Bernoulli)", 1.0, 0.0, 2_000_000, _ops_draw, events="exact",
                broken_how="temperature halved", uses_noise_source=False),
    AuditTarget("PrivateGibbs update", 1.0, 0.0, 400_000, _gibbs_update, events="bins",
                broken_how="temperature halved", uses_noise_source=False),
    AuditTarget("Barker step", 1.0, 0.0, 100_000, _barker_step, events="bins",
                broken_how="temperature halved", uses_noise_source=False),
    AuditTarget("OPS draw (logistic regression, covariate in the record, clipped)", 1.0, 0.0, 2_000_000,
                _ops_logistic, events="exact", broken_how="temperature halved", uses_noise_source=False),
    AuditTarget("Barker step (group intercepts a[idx], clipped)", 1.0, 0.0, 400_000, _barker_group_index,
                events="bins", broken_how="temperature divided by 4", uses_noise_source=False),
    AuditTarget("noisy gradient (logistic regression, [WM10] 4.1)", 1.0, 0.0, 100_000, _noisy_gradient),
    AuditTarget("private Newton round (GLM score and information, measurements route)", 1.0, 0.0, 40_000,
                _private_newton),
    AuditTarget("private Newton round, weighted score clip (measurements route after its first round)", 1.0, 0.0,
                40_000, _private_newton_weighted),
    AuditTarget("private Newton round, weighted information clip (entry (i, j) w_i·w_j-fold)", 1.0, 0.0, 40_000,
                _private_newton_information),
    AuditTarget("private clip (exponential mechanism on the records above each clip, measurements route)", 1.0, 0.0,
                40_000, _private_clip, events="exact"),
    AuditTarget("private bounds (suggest_bounds, tails: the upper end, an ε/2 exponential mechanism)", 0.5, 0.0, 40_000,
                _private_bounds, events="exact"),
    AuditTarget("private quartile (suggest_bounds, fences: the grid cell holding it)", 1.0, 0.0, 40_000,
                _private_quartile, events="exact"),
    AuditTarget("private median (the log-likelihood clip's choice: its first pass, an ε/2 release)", 0.5, 0.0,
                40_000, _private_median, events="exact"),
    AuditTarget("output perturbation (logistic regression, CMS11 Alg. 1)", 1.0, 0.0, 20_000, _output_perturbation),
    AuditTarget("objective perturbation (logistic regression, CMS11 Alg. 2)", 1.0, 0.0, 20_000,
                _objective_perturbation),
    AuditTarget("noisy second moment (Gaussian, [WM10] 4.2)", 1.0, SECOND_MOMENT_DELTA, 100_000,
                _second_moment_gaussian),
    AuditTarget("noisy second moment (Laplace, [WM10] 4.2)", 1.0, 0.0, 20_000, _second_moment_laplace),
    AuditTarget("noisy bounded sum (your own f, L1 bound)", 1.0, 0.0, 20_000, _bounded_sum),
    AuditTarget("reusable holdout (Thresholdout, one segment)", 1.0, 0.0, 100_000, _thresholdout),
    AuditTarget("MWEM round (exponential selection + Laplace count)", 1.0, 0.0, 40_000, _mwem),
    AuditTarget("AIS importance weights (Laplace on the simplex)", 1.0, 0.0, 40_000, _ais_weights),
    AuditTarget("LSHist", 1.0, 0.0, 40_000, _hellinger("lshist", (0, 20), (1, 19)), events="exact"),
    AuditTarget("LSDim", 1.0, 0.0, 40_000, _lsdim_statistic(_hellinger("lsdim", (0, 7, 3), (1, 6, 3))),
                events="exact"),
    AuditTarget("EHD", 1.0, 0.0, 30_000, _hellinger("ehd", (0, 20), (1, 19)), events="exact"),
    AuditTarget("EHDS", 1.0, 0.0, 30_000, _hellinger("ehds", (0, 20), (1, 19), factor=4.0), events="exact",
                broken_how="noise scale divided by 4"),
)


def _target(name: str) -> AuditTarget:
    for t in TARGETS:
        if t.name == name:
            return t
    raise ValueError(f"no audit target {name!r}; the targets are {[t.name for t in TARGETS]}.")


def run_target(
    target: AuditTarget | str,
    *,
    broken: bool = False,
    runs: int | None = None,
    noise: str = "secure",
    seed: int = 0,
    confidence: float = 0.99,
) -> AuditResult:
    """Audit one target (or its broken twin) and return the result.

    Parameters
    ----------
    target
        An :class:`AuditTarget` or the name of one in :data:`TARGETS`.
    broken
        Audit the broken twin (which must fail) instead.
    runs
        Runs on each input (default: the target's own).
    noise
        ``"secure"`` (default): mechanisms draw from their default OpenDP source, as
        released code does; ``"seeded"``: from the auditor's NumPy generator (faster,
        reproducible).
    seed, confidence
        Passed to :func:`pymc_dp.audit.audit`.
    """
    t = _target(target) if isinstance(target, str) else target
    if noise not in NOISE:
        raise ValueError(f"noise must be one of {NOISE}, got {noise!r}.")
    mechanism, x, y = t.build(broken, noise == "secure")
    name = f"{t.name} [broken: {t.broken_how}]" if broken else t.name
    return audit(mechanism, x, y, epsilon=t.epsilon, delta=t.delta, runs=runs or t.runs, events=t.events,
                 confidence=confidence, seed=seed, name=name)


def run_audits(
    names: Iterable[str] | None = None,
    *,
    runs_scale: float = 1.0,
    noise: str = "secure",
    broken: bool = True,
    seed: int = 0,
    confidence: float = 0.99,
    progress: Callable[[AuditResult], None] | None = None,
) -> list[tuple[AuditResult, AuditResult | None]]:
    """Audit every target (or those named) and, with ``broken=True``, its broken twin.

    ``runs_scale`` multiplies every target's default run count (e.g. 0.1 for a quick
    look). ``progress`` is called with each result as it finishes. Returns
    ``(result, broken result or None)`` pairs in :data:`TARGETS` order.
    """
    if not (isinstance(runs_scale, (int, float)) and math.isfinite(runs_scale) and runs_scale > 0):
        raise ValueError(f"runs_scale must be a positive number, got {runs_scale!r}.")
    targets = [_target(n) for n in names] if names is not None else list(TARGETS)
    out = []
    for t in targets:
        runs = max(1000, int(t.runs * runs_scale))
        pair = []
        for twin in (False, True) if broken else (False,):
            result = run_target(t, broken=twin, runs=runs, noise=noise, seed=seed, confidence=confidence)
            if progress is not None:
                progress(result)
            pair.append(result)
        out.append((pair[0], pair[1] if broken else None))
    return out


def format_audit_table(results: Sequence[tuple[AuditResult, AuditResult | None]]) -> str:
    """A Markdown table: claimed ε (δ), runs, audited lower bound and verdict; then the broken twin's."""
    lines = [
        "| mechanism | claimed ε | δ | runs per input | audited ε ≥ | verdict | broken twin | twin's audited ε ≥ | twin |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for ok, bad in results:
        verdict = "pass" if ok.passed else "**FAIL**"
        how = bad.name.partition("[broken: ")[2].rstrip("]") if bad is not None else ""
        twin = ("—", "—", "—") if bad is None else (how, f"{bad.epsilon_lower:.3f}", "caught" if not bad.passed else "**MISSED**")
        delta = f"{ok.claimed_delta:.0e}" if ok.claimed_delta else "0"
        lines.append(
            f"| {ok.name} | {ok.claimed_epsilon:.4g} | {delta} | {ok.runs:,} | {ok.epsilon_lower:.3f} | {verdict} | "
            f"{twin[0]} | {twin[1]} | {twin[2]} |"
        )
    return "\n".join(lines)
