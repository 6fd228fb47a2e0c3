"""The privacy flag with nothing declared: data bounds chosen privately, inside the same ε.

Every route but the Bernoulli's needs the range of the records it reads: a family's ``bounds={"y": {"x": ...}}``,
a regression's or a GLM's covariate and outcome ranges. A range read off the records by the analyst is a release
no ledger sees. When a ``pmdp.sample(epsilon=ε)`` request does not plan because such a range is missing, and
``selection`` is on (the default), this module:

1. works out, from the model's structure alone, which ranges are missing: for each private observed variable, its
   covariates' (``'x'``: each column of ``X`` of ``[a +] X @ beta``, or the ``x`` of ``b * x``) and its outcome's
   (``'y'``, where the likelihood needs one), or the values' own (``'x'`` of a family such as the Normal's);
2. plans the request with public placeholder ranges at ``(1 − share) ε``: if that does not plan either, the
   original refusal is raised (something else is missing); nothing is spent;
3. reserves the whole ε on the ledger (the choice and the route together), then chooses every missing range with
   :func:`pymc_dp.mechanisms.suggest_bounds` (fences) on ``share · ε`` (split evenly over the columns; four ledger
   entries a column, each with the range it gave), and plans and runs the same route with the chosen ranges on
   the rest (refusing, with the choice recorded, if that plan is not the route and price reserved).

Where no missing range is the problem (or the request does not plan with them either, or their choice is more
strained than the clip's: :func:`selection_strain`, the ε a choice needs over the ε it gets, under replace-one) and
the request plans with a ``loglik_clip`` it did not declare (the tempered routes), the same plan chooses the clip
instead
(:class:`~pymc_dp.routes.clip_selection.ClipRequest`: a private median of the terms at the start point). A request
is anything with ``what``, ``width``, ``records``, ``placeholder()``, ``declare(declarations, value)`` and
``choose(ε, ledger, confidence, rng)``.

Each range is chosen on the likelihood's own support, from its kind alone (:data:`SUPPORTS`: no end of a count or a
positive outcome below 0), in whole numbers where the observed values' dtype (as PyMC holds them) is an integer
one; covariates are rounded only where every covariate array is of an integer or boolean dtype (indicators,
counts), and their ranges then come from the private tails, which find a point mass's ends where the fences would
reach 3 IQRs past them. Declared ranges always win: only the
missing ones are chosen. ``selection=False`` turns this off (the route's refusal then says what to declare);
``selection=0.2`` (or :class:`Selection`) changes the share.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..accounting import LedgerEntry, PrivacyLedger
from .base import Ran, RoutePlan

__all__ = ["Selection", "DEFAULT_SHARE", "resolve_selection", "BoundRequest", "missing_bounds", "plan_with_selection",
           "selection_strain", "below_measurements_crossover", "MEASUREMENTS_CROSSOVER", "OBJECTIVE_CROSSOVER"]

#: The share of ε spent on choosing undeclared ranges where it cannot depend on N (add/remove neighbouring).
DEFAULT_SHARE = 0.1
#: Under replace-one (N public) the share is what :func:`needed_epsilon` asks, within [MIN_SHARE, MAX_SHARE].
MIN_SHARE, MAX_SHARE = 0.05, 0.5


@dataclass(frozen=True)
class Selection:
    """How ``pmdp.sample`` chooses the numbers a route needs and the request does not declare.

    Attributes
    ----------
    share
        The fraction of the call's ε spent on the choice (the route runs on the rest), in (0, 1). None (the default):
        from public numbers, under replace-one what :func:`needed_epsilon` asks within [0.05, 0.5]; under
        add/remove (N private) 0.1.
    confidence
        β of :func:`pymc_dp.mechanisms.suggest_bounds`, per end.
    """

    share: float | None = None
    confidence: float = 0.01

    def __post_init__(self) -> None:
        share = self.share
        if share is not None and (isinstance(share, bool) or not isinstance(share, (int, float, np.floating))
                                  or not 0.0 < float(share) < 1.0):
            raise ValueError(f"selection's share must be a number in (0, 1) (the fraction of ε spent on choosing "
                             f"undeclared ranges) or None (chosen from public numbers), got {share!r}. Nothing was "
                             "spent.")
        conf = self.confidence
        if isinstance(conf, bool) or not isinstance(conf, (int, float, np.floating)) or not 0.0 < float(conf) < 1.0:
            raise ValueError(f"selection's confidence must be a number in (0, 1), got {conf!r}. Nothing was spent.")

    def share_for(self, epsilon: float, needed: float, neighbouring: str) -> float:
        """The share of ``epsilon`` to spend on a choice that ``needed`` ε makes reliable (public numbers only: the
        requests' :meth:`needed`, from the number of records under replace-one)."""
        if self.share is not None:
            return float(self.share)
        if neighbouring != "replace":
            return DEFAULT_SHARE
        return float(np.clip(needed / float(epsilon), MIN_SHARE, MAX_SHARE))


def needed_epsilon(columns: int, records: int, confidence: float = 0.01) -> float:
    """The ε at which each column's four quartile releases (:func:`pymc_dp.mechanisms.suggest_bounds`, fences) all
    land near their quartiles with probability about 1 − β: a candidate far from the records scores −N/4 against
    the quartile's 0, so each release needs N ε′ / 8 ≥ ln(4 G / β) (G the grid's 243 candidates; the four share
    β), ε′ = ε / (4 × columns). One that misses makes the range too wide, not too narrow: on N(1000, 10) with
    1,000 records and β per release, 1 column in 10 came out 14 times as wide as the others."""
    from ..mechanisms.private_bounds import bounds_grid

    return 4 * columns * 8.0 * np.log(4 * len(bounds_grid()) / confidence) / max(records, 1)


def tails_needed_epsilon(columns: int, records: int, confidence: float = 0.01) -> float:
    """The ε at which each column's two ends (:func:`pymc_dp.mechanisms.suggest_bounds`, tails) are useful: from
    about 3K records, K = 2 ln(G/β)/ε′ with ε′ = ε/(2 × columns) (:func:`pymc_dp.mechanisms.rank_error`), so
    ε = 12 × columns × ln(G/β)/N — a third of what the fences' four quartiles need."""
    from ..mechanisms.private_bounds import bounds_grid

    return 12.0 * columns * np.log(len(bounds_grid()) / confidence) / max(records, 1)


def resolve_selection(value: Any) -> Selection | None:
    """``selection=`` as given to ``pmdp.sample``: None or True (the default share), False (off), a share in
    (0, 1), or a :class:`Selection`."""
    if value is None or value is True:
        return Selection()
    if value is False:
        return None
    if isinstance(value, Selection):
        return value
    if isinstance(value, (int, float, np.floating)) and not isinstance(value, bool):
        return Selection(share=float(value))
    raise ValueError(f"selection must be True (choose undeclared ranges privately on a share of ε, the default), "
                     f"False (never: declare them), a share of ε in (0, 1), or pmdp.Selection(...); got "
                     f"{value!r}. Nothing was spent.")


@dataclass(frozen=True)
class BoundRequest:
    """One missing range: ``bounds[variable][key]``, chosen on ``columns`` (records × columns, curator side)."""

    variable: str
    key: str
    columns: np.ndarray = field(repr=False)
    support: tuple[float, float] = (-np.inf, np.inf)
    integer: bool = False
    #: what the route reads: ``"pair"`` (one (lo, hi) for a column of values), ``"arrays"`` (a pair of arrays, one
    #: entry per covariate) or ``"upper"`` (the largest value alone: a Poisson family's count bound)
    form: str = "pair"
    #: :func:`~pymc_dp.mechanisms.suggest_bounds`'s method: ``"fences"`` (quartiles, then q₁ − 3·IQR, q₃ + 3·IQR),
    #: or ``"tails"`` for columns of whole numbers (their extremes are point masses: an indicator's quartiles 0 and 1
    #: would fence it in (−3, 4))
    method: str = "fences"

    @property
    def width(self) -> int:
        """The columns chosen (the choice's ε is split evenly over every request's columns)."""
        return int(self.columns.shape[1])

    @property
    def records(self) -> int:
        return int(self.columns.shape[0])

    @property
    def what(self) -> str:
        return f"bounds[{self.variable!r}][{self.key!r}]"

    def needed(self, confidence: float) -> float:
        """The ε that makes this range's choice reliable (:func:`needed_epsilon`, :func:`tails_needed_epsilon`)."""
        if self.method == "tails":
            return tails_needed_epsilon(self.width, self.records, confidence)
        return needed_epsilon(self.width, self.records, confidence)

    def placeholder(self) -> Any:
        """A public range of the right shape inside the support (valid for any likelihood): to test that the
        request plans once the range is given."""
        lo, hi = self.support
        a = 1.0 if lo <= 1.0 else float(np.ceil(lo))
        pair = (a, a + 1.0) if hi >= a + 1.0 else (max(lo, a - 1.0), a)
        if self.form == "arrays":
            return (np.full(self.width, pair[0]), np.full(self.width, pair[1]))
        return pair[1] if self.form == "upper" else pair

    def declare(self, declarations: dict[str, Any], value: Any) -> None:
        """Add ``value`` to the request's declarations (``bounds=``), declared ranges untouched."""
        declarations["bounds"] = with_bounds(declarations.get("bounds"), {(self.variable, self.key): value})

    def choose(self, epsilon: float, ledger: PrivacyLedger, confidence: float, rng: Any) -> tuple[Any, list, list]:
        """The range, its ledger entries, and each entry's range (the release it made), for ``epsilon`` in all."""
        from ..mechanisms.private_bounds import suggest_bounds

        picked = suggest_bounds(self.columns, epsilon=epsilon, ledger=ledger, confidence=confidence,
                                integer=self.integer, support=self.support, rng=rng, method=self.method,
                                touched=f"{self.variable}: bounds[{self.key!r}]")
        value = ((picked.lower, picked.upper) if self.form == "arrays" else
                 float(picked.upper[0]) if self.form == "upper" else picked.pair)
        per_column = len(picked.entries) // max(self.width, 1)
        ranges = [{"range chosen for the column": [float(picked.lower[k // per_column]),
                                                    float(picked.upper[k // per_column])]}
                  for k in range(len(picked.entries))]
        return value, list(picked.entries), ranges


#: Likelihoods whose support is not the whole line, by PyMC op name: (lower, upper), a strictly positive lower end
#: as the smallest positive double. Read from the likelihood's kind alone, never from its parameters or data.
_TINY = float(np.finfo(float).tiny)
SUPPORTS = {
    **{name: (0.0, np.inf) for name in (
        "poisson", "negative_binomial", "negativebinomial", "binomial", "betabinomial", "beta_binomial",
        "geometric", "discrete_weibull", "zero_inflated_poisson", "zero_inflated_negative_binomial",
        "zero_inflated_binomial", "hurdle_poisson", "hurdle_negative_binomial", "exponential", "halfnormal",
        "half_normal", "halfcauchy", "half_cauchy", "halfstudentt", "half_studentt", "chisquare", "chisquared",
        "rice", "hurdle_gamma", "hurdle_lognormal")},
    **{name: (_TINY, np.inf) for name in (
        "gamma", "lognormal", "weibull", "wald", "invgamma", "inverse_gamma", "inversegamma", "pareto",
        "exgaussian_positive")},
    **{name: (_TINY, 1.0 - np.finfo(float).eps) for name in ("beta", "kumaraswamy", "logitnormal", "logit_normal")},
}


def _support(model: Any, rv: Any) -> tuple[float, float]:
    """The support of ``rv``'s likelihood from its kind (:data:`SUPPORTS`; the whole line otherwise): public, never
    read from parameters or data. (A log-density probe at the model's start point read the other observed data and
    covariates through the parameters: one infinite covariate record changed the outcome's support, hence the
    released range.)"""
    from ..families.base import rv_op_name

    name = rv_op_name(rv).removeprefix("clipped ").lower()
    return SUPPORTS.get(name, (-np.inf, np.inf))


def _observed(model: Any, rv: Any) -> np.ndarray:
    from ..model.privatize_model import _observed_records

    return np.asarray(_observed_records(model, rv))


def _covariate_columns(model: Any, rv: Any, n: int) -> np.ndarray | None:
    """The covariates whose ranges a route declares, records × covariates, in the order the routes read them (the
    Laplace route's regression, else the GLM's slots); None where the likelihood has none."""
    from ..model._graph import dim_lengths
    from ..model.glm_structure import read_glm
    from ..model.regression import linear_regression_of

    predictor = linear_regression_of(rv, n, model.free_RVs, dim_lengths(model), [])
    if predictor is not None:
        return np.asarray(predictor.design, dtype=float)[:, :predictor.covariates]
    structure = read_glm(rv, n, model.free_RVs, dim_lengths(model), [])
    if structure is None or structure.covariates == 0:
        return None
    columns = []
    for p in structure.predictors:
        for kind, i in p.slots():
            columns.append(np.asarray(p.block_scales[i] if kind == "slope" else p.design[:, i], dtype=float))
    return np.column_stack(columns)


def _whole_number_covariates(rv: Any, free: Sequence[Any] = ()) -> bool:
    """Whether every data array the likelihood's parameters read, other than a group index, is of an integer or
    boolean dtype (0/1 indicators, counts used as covariates): read from the containers (``pm.Data``, NumPy
    arrays), never from the values. A float array holding 0s and 1s is not one."""
    from ..model._graph import ancestors
    from ..model.regression import _strip, leaf_value

    graph = ancestors(list(rv.owner.inputs[2:]), blockers=free)  # the priors' own arrays are not covariates
    indices = {id(_strip(i)) for v in graph if v.owner is not None
               and type(v.owner.op).__name__.startswith("AdvancedSubtensor") for i in v.owner.inputs[1:]}
    kinds = [value.dtype.kind for v in graph if id(_strip(v)) not in indices
             and (value := leaf_value(v)) is not None and value.ndim >= 1]
    return bool(kinds) and all(kind in "iub" for kind in kinds)


def _outcome_declared_by_family(rv: Any) -> bool:
    """Whether a GLM's outcome range follows from the likelihood (Bernoulli, Binomial with a constant n)."""
    from ..model.score_measurements import _outcome_range

    try:
        _outcome_range(rv, {}, rv.name)
    except ValueError:
        return False
    return True


def missing_bounds(model: Any, bounds: Mapping[str, Any] | None, public: Sequence[str] = ()) -> list[BoundRequest]:
    """The ranges a route may need that ``bounds`` does not declare, from the model's structure (no value read to
    decide): per private observed variable, its covariates' and outcome's (a regression or GLM) or its values'."""
    from ..families.registry import family_of_dist

    if bounds is not None and not isinstance(bounds, Mapping):
        return []  # the route says what shape bounds= takes
    out = []
    for rv in model.observed_RVs:
        if rv.name in set(public):
            continue
        given = (bounds or {}).get(rv.name)
        if given is not None and not isinstance(given, Mapping):
            continue  # the route says what is wrong with it
        given = dict(given or {})
        values = _observed(model, rv)
        if values.ndim != 1:
            continue  # rows of a multivariate likelihood: declared per coordinate
        integer = values.dtype.kind in "iub"
        covariates = _covariate_columns(model, rv, len(values))
        if covariates is not None:
            if "x" not in given:
                whole = _whole_number_covariates(rv, model.free_RVs)
                out.append(BoundRequest(rv.name, "x", covariates, integer=whole, form="arrays",
                                        method="tails" if whole else "fences"))
            if "y" not in given and not _outcome_declared_by_family(rv):
                out.append(BoundRequest(rv.name, "y", values[:, None].astype(float), _support(model, rv), integer))
            continue
        try:
            family, _ = family_of_dist(rv)
        except ValueError:
            continue
        for key in family.bound_keys:
            if key in ("x", "upper") and key not in given:
                out.append(BoundRequest(rv.name, key, values[:, None].astype(float), _support(model, rv), integer,
                                        form="pair" if key == "x" else "upper"))
    return out


def with_bounds(bounds: Mapping[str, Any] | None, chosen: Mapping[tuple[str, str], Any]) -> dict[str, dict[str, Any]]:
    """``bounds`` with the chosen ranges added (declared ones untouched)."""
    out = {name: dict(value) for name, value in (bounds or {}).items() if isinstance(value, Mapping)}
    out.update({name: value for name, value in (bounds or {}).items() if not isinstance(value, Mapping)})
    for (name, key), value in chosen.items():
        out.setdefault(name, {})[key] = value
    return out


def _noise_source(noise_rng: Any) -> Any:
    """The choice's noise: OpenDP's (None), or a stream of its own from a seed (never the route's own draws)."""
    if noise_rng is None:
        return None
    if isinstance(noise_rng, (int, np.integer)) and not isinstance(noise_rng, bool):
        return np.random.default_rng(np.random.SeedSequence([int(noise_rng), 0x5E1EC7]))
    return noise_rng  # a Generator or NoiseSource: later draws are independent of these


@dataclass
class SelectionPlan(RoutePlan):
    """A request whose missing ranges are chosen privately first: the choice's ε and the route's, reserved together."""

    requests: Sequence[Any] = ()
    selection: Selection = field(default_factory=Selection)
    epsilon: float = 0.0
    share: float = DEFAULT_SHARE
    declared: Mapping[str, Any] = field(default_factory=dict)
    replan: Callable[[dict[str, Any]], RoutePlan] | None = None
    placeholder: RoutePlan | None = None
    noise_rng: Any = None
    _scratch: PrivacyLedger | None = None
    _chosen: list = field(default_factory=list)
    _inner: RoutePlan | None = None

    @property
    def what(self) -> str:
        return f"{self.placeholder.what} with {', '.join(r.what for r in self.requests)} chosen privately"

    @property
    def route(self) -> str | None:
        """The route the ranges were chosen for (as its entries name it)."""
        return getattr(self.placeholder, "route", None) or self.placeholder.route_name

    @property
    def reads_records(self) -> bool:
        return self.placeholder.reads_records

    def run(self) -> Ran:
        self._scratch = PrivacyLedger(neighbouring=self.ledger.neighbouring)
        self._chosen = []
        columns = sum(r.width for r in self.requests)
        budget = self.share * self.epsilon
        rng = _noise_source(self.noise_rng)
        declarations = {key: value for key, value in self.declared.items()}
        for r in self.requests:
            value, entries, released = r.choose(budget * r.width / columns, self._scratch, self.selection.confidence,
                                                rng)
            r.declare(declarations, value)
            self._chosen.extend(self._annotated(r, entries, released))
        try:
            self._inner = self.replan(declarations)
        except ValueError as err:  # the route's words say nothing was spent: the choice was
            raise RuntimeError(
                f"with {', '.join(r.what for r in self.requests)} chosen, the request no longer plans (the route says: "
                f"{str(err).replace('Nothing was spent.', '').replace('nothing was spent', 'nothing of the route')}"
                "); the choice is recorded as spent. Declare the numbers (the ledger's entries hold the ones chosen) "
                "and run again.") from None
        self._check_priced_as_reserved()
        ran = self._inner.run()
        return replace(ran, spent=[*self._selection_spent(), *ran.spent])

    def _check_priced_as_reserved(self) -> None:
        """The route planned with the chosen ranges must be the one priced with the placeholders, at no more ε or
        δ: the reservation was made for that one (the ranges already drawn are recorded if not)."""
        route = getattr(self._inner, "route", None) or self._inner.route_name
        (eps, delta), (eps0, delta0) = _price(self._inner), _price(self.placeholder)
        if route != self.route or eps > eps0 * (1 + 1e-9) or delta > delta0 * (1 + 1e-9) + 1e-300:
            raise RuntimeError(
                f"with the ranges chosen the request planned as {route!r} at ε = {eps:.4g}, δ = {delta:.3g}, not as "
                f"reserved ({self.route!r}, ε = {eps0:.4g}, δ = {delta0:.3g}); the chosen ranges are recorded as "
                "spent. Declare the ranges (the ledger's entries hold the ones chosen) and run again.")

    def _annotated(self, request: Any, entries: Sequence[LedgerEntry], released: Sequence[dict]) -> list[LedgerEntry]:
        """The entries of one request's choice, each with what it released (public: it is what was released)."""
        return [replace(e, details={
            **e.details, "selection": f"{request.what}, not declared, chosen privately",
            "share of the call's ε": self.share, "chosen for": request.what, **extra,
            **({"route": self.route} if self.route else {})}) for e, extra in zip(entries, released)]

    def _selection_spent(self) -> list[LedgerEntry]:
        """The choice's entries: annotated where a range was finished, as drawn where one failed part-way."""
        if self._scratch is None:
            return []
        annotated = {e.id: e for e in self._chosen}
        return [annotated.get(e.id, e) for e in self._scratch.entries]

    def spent_on_failure(self, failure: BaseException) -> Sequence[LedgerEntry]:
        inner = self._inner.spent_on_failure(failure) if self._inner is not None else ()
        return [*self._selection_spent(), *inner]


def _price(plan: RoutePlan) -> tuple[float, float]:
    """A plan's ε and δ as the sum of its entries."""
    return (sum(e.epsilon * e.count for e in plan.entries), sum(e.delta * e.count for e in plan.entries))


def selection_strain(requests: Any, selection: Selection, epsilon: float, relation: str) -> float:
    """How far the choice of ``requests`` is from reliable: the ε it needs over the share it gets (≤ 1: reliable).
    0 where nothing is chosen (a discrete likelihood's public clip) or where it cannot be known from public numbers
    (under add/remove N is private, and the share is :data:`DEFAULT_SHARE` whatever it is)."""
    if getattr(requests, "public_window", None) is not None or relation != "replace":
        return 0.0
    requests = requests if isinstance(requests, (list, tuple)) else [requests]
    needed = sum(r.needed(selection.confidence) for r in requests)
    return needed / (selection.share_for(float(epsilon), needed, relation) * float(epsilon))


#: Below this N·ε (replace-one: N public) ranges that would take a model to the measurements route give way to a
#: clip on ops, where one plans. The measurements route's error falls as 1/(ε √N) in plain posterior s.d., the
#: tempered draws' stays near √(2Δ/ε): on the gallery's GLMs (150–300 records) ops with a declared clip was 1.5–170
#: times closer to plain PyMC at ε = 10 than the measurements route with declared ranges, and the crossover the two
#: laws put through those runs lies at N·ε ≈ 1.6·10⁴ (logistic) to 10⁵ (Poisson), so the threshold leans toward the
#: measurements route (its whole, noise-aware posterior) where the two are near (benchmarks/selection.py --gallery;
#: docs: "Which number is chosen"). A fitted law, not a measurement at large N.
MEASUREMENTS_CROSSOVER = 1e4
#: The same for a logistic likelihood on the measurements route's objective engine (one perturbed point, no pilot
#: rounds: :mod:`pymc_dp.model.objective_point`), whose error is the newton engine's without the pilots' noise.
#: Measured with nothing declared (the engine's ridge then at 5 % of its ε, now 15 %: docs, "Which number is
#: chosen"): the peers' logistic question at N = 1,000, ε = 1 (20 data sets) RMSE 0.82 on ops
#: (two draws, 90 % coverage 0.48) where the objective engine with declared ranges gave 0.46 (coverage 0.93); the
#: gallery's logistic regression at N = 300, ε = 10 (six releases) 1.51 plain s.d. through chosen ranges against
#: 1.57 on ops; at N = 300, ε = 1, 4.85 with declared ranges against 4.34 on ops.
OBJECTIVE_CROSSOVER = 500.0


def _measurements_engine(plan: Any) -> str | None:
    """The engine of the measurements route's plan inside ``plan`` (a selection's placeholder, a chosen route)."""
    for _ in range(4):
        privatization = getattr(plan, "privatization", None)
        if privatization is not None:
            return getattr(privatization, "engine", None)
        plan = getattr(plan, "placeholder", None) or getattr(plan, "inner", None)
        if plan is None:
            return None
    return None


def crossover_for(plan: RoutePlan) -> float:
    """The N·ε below which a clip on ops is preferred to ranges chosen for ``plan`` (public: the engine is chosen from
    the model's structure, the box's shape and ε)."""
    return OBJECTIVE_CROSSOVER if _measurements_engine(plan) == "objective" else MEASUREMENTS_CROSSOVER


def below_measurements_crossover(plan: RoutePlan, requests: Sequence[Any], epsilon: float, relation: str) -> bool:
    """Whether ranges chosen for ``plan`` would take it to the measurements route at N·ε below its crossover
    (:data:`MEASUREMENTS_CROSSOVER`, :data:`OBJECTIVE_CROSSOVER` on the objective engine; replace-one only: under
    add/remove N is private)."""
    if relation != "replace":
        return False
    route = getattr(plan, "route", None) or plan.route_name
    records = min((r.records for r in requests), default=0)
    return route == "measurements" and records * float(epsilon) < crossover_for(plan)


def crossover_reason(held: RoutePlan, epsilon: float) -> str:
    """What the ledger says of a clip preferred to ranges below the crossover (public numbers only)."""
    records = min(r.records for r in held.requests)
    return (f"a log-likelihood clip (ops) rather than ranges chosen for the measurements route: N·ε = "
            f"{records * float(epsilon):.3g} is below {crossover_for(held.placeholder):.0e}, where tempered draws are predicted "
            "the closer to the posterior (docs: 'Which number is chosen')")


def plan_with_selection(requests: Sequence[Any], selection: Selection, epsilon: float, declared: Mapping[str, Any],
                        plan: Callable[[dict[str, Any], float], RoutePlan], noise_rng: Any,
                        relation: str, fresh_ledger: bool = False) -> SelectionPlan:
    """The :class:`SelectionPlan` of a request missing ``requests`` (:class:`BoundRequest`\\ s, or a
    :class:`~pymc_dp.routes.clip_selection.ClipRequest`): ``plan(declarations, ε)`` plans the route (raising if it
    cannot) from ``declared`` (what the request declared, by keyword) with each request's value added — placeholders
    now, to price it and prove it would plan; the chosen values at run time. ``fresh_ledger``: the request gave no
    ledger, so a route that budgets its own at the ε it was given (the rest) has it raised to the whole ε. Raises what
    the placeholder plan raises; nothing is spent."""
    from ..accounting.curator import curator_reports

    placeholders = dict(declared)
    for r in requests:
        r.declare(placeholders, r.placeholder())
    columns, records = sum(r.width for r in requests), min(r.records for r in requests)
    needed = sum(r.needed(selection.confidence) for r in requests)
    share = selection.share_for(float(epsilon), needed, relation)
    if relation == "replace" and share * float(epsilon) < needed:
        warnings.warn(
            f"choosing {columns} number(s) privately over {records} values (one per record, or per k steps of a "
            f"series) needs about ε = {needed:.2g} to be "
            f"reliable, and {share:g} of ε = {float(epsilon):g} is {share * float(epsilon):.2g}: what is chosen may "
            f"be far off (a range far too wide or cutting records, a clip away from the records' terms). Declare {', '.join(sorted({r.what for r in requests}))}, give "
            "more ε, or pass selection= a larger share.", UserWarning, stacklevel=4)
    rest = float(epsilon) * (1.0 - share)
    with curator_reports(False), warnings.catch_warnings():  # of placeholders, not of the ranges that will be used:
        warnings.simplefilter("ignore", UserWarning)          # the route's plan with those says its own at run time
        placeholder = plan(placeholders, rest)
        for r in requests:  # a price that moves with where the number lies could not be reserved in advance
            for alternative in getattr(r, "alternatives", lambda: ())():
                moved = dict(placeholders)
                r.declare(moved, alternative)
                if _price(plan(moved, rest)) != _price(placeholder):
                    raise ValueError(f"the route's price depends on where {r.what} lies, so the choice cannot be "
                                     "reserved before it is made; declare it.")
    reserved = [LedgerEntry("exponential", float(epsilon) * share, count=1, event=None, neighbouring=relation,
                            touched="numbers the request did not declare, chosen privately")]
    ledger = placeholder.ledger
    budget = getattr(ledger, "budget", None)
    if fresh_ledger and budget is not None and not len(ledger):  # the route's own ledger, budgeted at the rest of ε
        ledger = PrivacyLedger(replace(budget, epsilon=float(epsilon)), ledger.neighbouring)
    return SelectionPlan(
        ledger=ledger, entries=[*reserved, *placeholder.entries], requests=tuple(requests),
        selection=selection, epsilon=float(epsilon), share=share, declared=dict(declared),
        replan=lambda chosen: plan(chosen, rest), placeholder=placeholder, noise_rng=noise_rng,
        assumptions=tuple(placeholder.assumptions), route_name=placeholder.route_name)
