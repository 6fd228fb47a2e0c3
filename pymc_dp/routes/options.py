"""Per-route options of ``pmdp.sample``: one frozen object per route, no loose keywords.

``pmdp.sample(method=pmdp.OPS(truncate={"p": (0.05, 0.95)}), epsilon=1.0)`` and
``pmdp.sample(method="ops", truncate={"p": (0.05, 0.95)}, epsilon=1.0)`` are the same
call: :func:`options_for` turns the keyword form into the object, and refuses an
option of another route by naming the route it belongs to.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any, ClassVar, Mapping, Sequence

__all__ = ["Laplace", "Measurements", "OPS", "Gibbs", "SAA", "AIS", "RouteOptions", "ROUTE_OPTIONS", "options_for"]


@dataclass(frozen=True)
class RouteOptions:
    """Base of the per-route option objects; ``method`` names the route."""

    method: ClassVar[str] = ""


@dataclass(frozen=True)
class Laplace(RouteOptions):
    """``method="laplace"``: privatise the observed records' sufficient statistics once.

    Parameters
    ----------
    bounds
        ``{observed variable: family bounds}`` for families with unbounded support,
        e.g. ``{"y": {"x": (0.0, 10.0)}}``; records outside are clipped to them.
    epsilon_split
        Weights splitting ε across observed variables (default: evenly).
    noise_rng
        ``None`` for secure noise (default); a seed or Generator for reproducible,
        seeded noise (recorded as such in the ledger).
    noise_aware
        ``"auto"`` (default) models the noise where the family has a noise-aware
        likelihood (every family, under either relation; under add/remove with a latent
        number of records ``<y>_n_records``) and plugs the statistics in elsewhere;
        ``True`` / ``False`` force one or the other.
    public
        Observed variables whose records are public, and ``pm.Data`` containers
        whose values are (e.g. a prior's hyperparameters): used as they are, not
        privatised, recorded as an assumption.
    delta
        The δ the release may spend (default 0: pure ε-DP). With δ > 0 a regression
        with enough covariates (at ε = 1: two at δ = 1e-5, three at δ = 1e-6), whose many products add less noise with Gaussian
        noise, gets the analytic Gaussian mechanism at (ε, δ); every other release stays
        pure ε-DP (:func:`pymc_dp.privatize`).
    """

    method: ClassVar[str] = "laplace"
    bounds: Mapping[str, Mapping[str, Any]] | None = None
    epsilon_split: Mapping[str, float] | None = None
    noise_rng: Any = None
    noise_aware: bool | str = "auto"
    public: Sequence[str] = ()
    delta: float = 0.0


@dataclass(frozen=True)
class Measurements(RouteOptions):
    """``method="measurements"``: release a private algorithm's measurements once, sample the noise-aware posterior.

    Three engines:

    * ``"newton"`` — any GLM (:mod:`pymc_dp.model.score_measurements`): a univariate
      likelihood (Poisson, negative binomial, Gamma, Binomial, Bernoulli, Normal, Student-t, ...)
      whose parameters are links of linear predictors ``[a +] X @ beta`` (plus varying intercepts ``a[idx]``
      and slopes ``b[idx] * x`` by group) and scalars shared by
      the records. The log-likelihood's score and information are released at a few public
      points (private Newton steps), and the model conditions on the last release through the
      one-step likelihood, noise included.
    * ``"objective"`` — a GLM that is a logistic regression (``pm.Bernoulli`` with a logit link on
      ``[a +] X @ beta``, ``a[idx]``, ``b[idx] * x``): the last point found in one release by objective
      perturbation, whose stationarity gives the score there up to its noise, then the information
      there (:mod:`pymc_dp.model.objective_point`); the newton engine's one-step likelihood reads them.
    * ``"gradients"`` — a logistic regression, ``pm.Bernoulli("y", logit_p=[a +] X @ beta)``
      ([WM10] §4.1): the noisy-gradient heuristic's T gradient sums are released
      (:func:`pymc_dp.noisy_gradient_logistic`), and the weights are inferred from them, the
      unseen records integrated out (:mod:`pymc_dp.model.privatize_logistic`).

    Sampling afterwards is free.

    Parameters
    ----------
    bounds
        ``{observed variable: {"x": (lo, hi), "y": (lo, hi)}}``: every covariate's range (one
        pair, or arrays with one entry per covariate) and the outcome's (not needed for a
        Bernoulli, nor a Binomial with a constant ``n``); records outside are clipped. Required.
    engine
        ``"auto"`` (default): ``"gradients"`` when one of its own options below is given; else
        ``"objective"`` for a logistic likelihood whose score noise per coordinate it makes the
        smaller (public numbers: the design's largest L2 and L1 norms over the box and its dimension)
        and ``rounds`` is not given; else ``"newton"``. Or one by name.
    rounds
        The newton engine's releases: ``rounds − 1`` pilot points, then the final one (the
        final takes 60 % of ε). Default: 4, plus 2 per scalar parameter shared by the records
        (σ, a dispersion, a shape), at most 10.
    features
        (gradients engine) The covariates' distribution, which the likelihood integrates over: an (M, k)
        array of public covariate rows (k covariates, no intercept column), or
        ``"measured"`` (default): ``feature_share`` of ε buys a Laplace release of their
        mean and covariance, and a Gaussian with those moments stands in.
    feature_share
        Share of ε spent measuring the covariates (default 0.2); unused with public rows.
    iterations, learning_rate
        The heuristic's T (default 10; each gradient costs ε/T of the rest) and step η.
    covariance, noise
        How the likelihood treats the sums' covariance and the Laplace noise
        (:func:`pymc_dp.observe_noisy_gradients`; both ``"auto"`` by default).
    noise_rng
        ``None`` for secure noise (default); a seed or Generator for seeded noise.
    public
        Other observed variables whose records are public (e.g. a public survey's
        ``pm.Bernoulli`` on the same weights, [WM10] Fig. 3b; its own ``pm.Data``
        rows come with it), and ``pm.Data`` containers whose values are public (e.g.
        a prior's hyperparameters): kept as they are, recorded as an assumption.
    """

    method: ClassVar[str] = "measurements"
    bounds: Mapping[str, Mapping[str, Any]] | None = None
    engine: str = "auto"
    rounds: int | None = None
    features: Any = "measured"
    feature_share: float = 0.2
    iterations: int = 10
    learning_rate: float = 10.0
    covariance: str = "auto"
    noise: str = "auto"
    noise_rng: Any = None
    public: Sequence[str] = ()


@dataclass(frozen=True)
class OPS(RouteOptions):
    """``method="ops"``: posterior samples from the tempered posterior (by default as many exact T = 1 samples as ε buys, at least one per chain).

    Parameters
    ----------
    bounds
        Data bounds per observed variable (records outside are clipped).
    truncate
        ``{free variable: (lower, upper)}`` or ``{dirichlet: a0}``, applied with
        :func:`pymc_dp.truncate` before Δ is computed.
    loglik_clip
        ``(lower, upper)``: clip every record's log-likelihood term
        (:func:`pymc_dp.clip_loglik`); Δ = upper − lower per observed variable.
    samples
        Draws released per chain, ending at its last draw; the ``chains × samples``
        draws share ``epsilon`` evenly. Default ``None``: as many exact posterior
        samples (T = 1) as ``epsilon`` buys, ⌊ε / (2Δ · chains)⌋ per chain, at most one
        in ten draws of the chain, and at least one (tempered, T = 2Δ · chains / ε,
        when ε buys fewer). A given ``samples`` > 1 must also leave ten draws between
        released draws (they are charged as independent exact samples).
    tempered
        ``"likelihood"`` (default) or ``"joint"`` ([FGWC16] eq. 14).
    """

    method: ClassVar[str] = "ops"
    bounds: Mapping[str, Mapping[str, Any]] | None = None
    truncate: Mapping[str, Any] | None = None
    loglik_clip: Sequence[float] | None = None
    samples: int | None = None
    tempered: str = "likelihood"


@dataclass(frozen=True)
class Gibbs(RouteOptions):
    """``method="gibbs"``: private step methods, every update charged as it runs.

    Parameters
    ----------
    bounds
        Data bounds per observed variable (records outside are clipped).
    truncate
        As for :class:`OPS`.
    loglik_clip
        ``(lower, upper)``: clip every record's log-likelihood terms
        (:func:`pymc_dp.clip_loglik`), as for :class:`OPS`; the variables whose
        conditional reads the clipped likelihood get :class:`~pymc_dp.PrivateMetropolis`.
    temperature
        T ≥ 1 of every private step, instead of ``epsilon``.
    acceptance
        ``"barker"`` (default; pure ε) or ``"metropolis"`` ((0, 1 − e^{−2Δ/T}) per step).
    delta
        With ``epsilon``: the total δ at which T is fitted, so the tightest valid
        accountant (Rényi or PLD, dp-accounting) spends ``epsilon`` at this δ; 0 fits
        the pure basic total. Default ``None``: the ledger budget's δ and method (a
        basic budget: 0), else 10⁻⁶ — and the new ledger then carries the budget
        ``Budget(epsilon, 1e-6, "best")`` it was fitted to.
    """

    method: ClassVar[str] = "gibbs"
    bounds: Mapping[str, Any] | None = None
    truncate: Mapping[str, Any] | None = None
    loglik_clip: Sequence[float] | None = None
    temperature: float | None = None
    acceptance: str = "barker"
    delta: float | None = None


@dataclass(frozen=True)
class SAA(RouteOptions):
    """``method="saa"``: subsample and aggregate — any model as written, charged once.

    Parameters
    ----------
    ranges
        ``{parameter: (lower, upper)}`` for every released parameter (scalars or
        arrays broadcast to its shape): each block's estimate is clipped into it, and
        the aggregate's sensitivity is ``Σ (upper − lower) / blocks``. Required.
    blocks
        Number of disjoint blocks k (default ``round(√N)``, at most N/10, at least 2).
    spread
        Also release the blocks' spread (half of ε), so the released draws carry an
        error bar (default True); False spends all of ε on the mean.
    partition
        ``"auto"`` (default: contiguous blocks for a time-series likelihood, random
        otherwise), ``"random"`` or ``"contiguous"``.
    noise_rng
        ``None`` for secure noise (default); a seed or Generator for seeded noise.
    """

    method: ClassVar[str] = "saa"
    ranges: Mapping[str, Any] | None = None
    blocks: int | None = None
    spread: bool = True
    partition: str = "auto"
    noise_rng: Any = None


@dataclass(frozen=True)
class AIS(RouteOptions):
    """``method="ais"``: private annealed importance sampling; ``draws`` is the number of particles.

    Parameters
    ----------
    bounds, truncate, loglik_clip
        As for :class:`Gibbs`: what makes the log-likelihood's sensitivity Δ finite.
    temperature
        The final temperature T ≥ 1 (β_K = 1/T), instead of ``epsilon``.
    stages
        Number of tempered stages (default 20), spaced geometrically in β from β_K/1000.
    schedule
        Instead of ``stages``: increasing fractions of β_K in (0, 1], ending at 1.
    steps
        Private Barker transitions per particle per stage (default 2).
    weights
        ``"laplace"`` (default): the normalised importance weights released with Laplace
        noise (``sample_stats["weight"]``); ``"resample"``: ``draws`` particles resampled by
        the exponential mechanism, equally weighted.
    weight_share
        With ``epsilon``: the share of it spent on the weights (default 0.25).
    weight_epsilon
        With ``temperature``: the ε of the weights (required for ``"laplace"``; for
        ``"resample"`` the default is exact resampling, 2Δ/T a draw).
    delta
        As for :class:`Gibbs`: the total δ at which ``epsilon`` is fitted (default: the
        ledger budget's, else 10⁻⁶ with the tightest accountant; 0: basic composition).
    noise_rng
        ``None`` for secure noise in the weights' release (default); a seed or Generator.
    """

    method: ClassVar[str] = "ais"
    bounds: Mapping[str, Any] | None = None
    truncate: Mapping[str, Any] | None = None
    loglik_clip: Sequence[float] | None = None
    temperature: float | None = None
    stages: int | None = None
    schedule: Sequence[float] | None = None
    steps: int = 2
    weights: str = "laplace"
    weight_share: float = 0.25
    weight_epsilon: float | None = None
    delta: float | None = None
    noise_rng: Any = None


#: The option class of each route, by method name.
ROUTE_OPTIONS: dict[str, type[RouteOptions]] = {cls.method: cls for cls in (Laplace, Measurements, OPS, Gibbs, SAA, AIS)}


def _owners(key: str) -> list[str]:
    return [m for m, cls in ROUTE_OPTIONS.items() if key in {f.name for f in fields(cls)}]


def options_for(method: Any, keywords: dict[str, Any]) -> RouteOptions:
    """The route options of ``method``, with the route keywords popped from ``keywords``.

    ``method`` is a method name or a :class:`RouteOptions` object; route keywords given
    beside an object override its fields. What is left in ``keywords`` belongs to
    ``pm.sample``. A keyword of another route raises ``ValueError`` naming its route.
    """
    if isinstance(method, RouteOptions):
        options = method
    elif isinstance(method, str) and method in ROUTE_OPTIONS:
        options = ROUTE_OPTIONS[method]()
    else:
        raise ValueError(
            f"method must be one of {tuple(ROUTE_OPTIONS)} or a route object (pmdp.Laplace(), pmdp.Measurements(), "
            f"pmdp.OPS(), pmdp.Gibbs(), pmdp.SAA(), pmdp.AIS()), got {method!r}."
        )
    own = {f.name for f in fields(options)}
    given = {k: keywords.pop(k) for k in list(keywords) if k in own}
    for k in [k for k in keywords if keywords[k] is None and _owners(k)]:
        keywords.pop(k)  # another route's option left at its default (None) is no option at all
    misplaced = {k: _owners(k) for k in list(keywords) if _owners(k)}
    if misplaced:
        where = "; ".join(f"{k} applies to method={' / '.join(map(repr, m))}" for k, m in misplaced.items())
        raise ValueError(f"{where}, not method={options.method!r}"
                         + (" (its release is pure ε-DP: it has no δ to spend)" if "delta" in misplaced else "")
                         + ". Nothing was spent.")
    return replace(options, **given) if given else options
