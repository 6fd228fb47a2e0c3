"""The contract every likelihood family of the Laplace route fulfils.

A family is one exponential-family likelihood whose records enter the model only
through summed sufficient statistics ``S(X) = Σᵢ s(xᵢ)`` (theory notes §5). It knows

* the per-record statistic ``s(x)`` (as array operations, so NumPy, pandas and Dask
  records all work) and the names of its coordinates;
* the L1 sensitivity of ``S`` under each neighbouring relation, from declared data
  bounds where the support is unbounded;
* how to project a noisy ``S`` back onto valid statistics;
* the log-likelihood of the model's parameters as a function of ``S`` (a PyTensor
  expression, for use inside a PyMC model);
* which PyMC distributions it stands for, and how to read their parameters;
* its conjugate update, where one exists (used for checks and by Gibbs samplers).

Under ``"replace"`` neighbouring N is public and statistics that follow from N are
not released; under ``"add_remove"`` N is private, so every family releases a
statistic from which N can be estimated (``n_from_statistics``).

Adding a family = adding one module with one subclass and registering it in
:mod:`pymc_dp.families`; nothing else changes.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar, Mapping

import numpy as np

from ..accounting.validation import check_interval, check_mapping, check_sensitivity_finite

if TYPE_CHECKING:  # pragma: no cover
    from .release_design import ReleaseDesign

__all__ = ["Family", "project_to_simplex", "project_to_psd", "check_bound_pair", "checked_range"]


class Family(ABC):
    """Base class of the likelihood families (see the module docstring)."""

    #: Registry name, e.g. ``"bernoulli"``.
    name: ClassVar[str]
    #: Names of the PyMC random-variable ops this family stands for (``rv.owner.op.name``).
    pymc_ops: ClassVar[tuple[str, ...]] = ()
    #: Keys of ``bounds`` the family needs (empty: the support is bounded already).
    bound_keys: ClassVar[tuple[str, ...]] = ()
    #: Example of a bounds argument, shown in error messages.
    bounds_example: ClassVar[str] = ""
    #: Whether :meth:`records` reads a tuple as several parts of the records (e.g. ``(X, y)``);
    #: for other families ``privatize`` reads a tuple like a list of values.
    tuple_records: ClassVar[bool] = False

    def __init__(self, **family_args: Any) -> None:
        if family_args:
            raise ValueError(f"family {self.name!r} takes no arguments, got {sorted(family_args)}.")

    # ------------------------------------------------------------------ identity
    def family_args(self) -> dict[str, Any]:
        """The arguments that configure this family (e.g. a known variance)."""
        return {}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.family_args().items())
        return f"{type(self).__name__}({args})"

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.family_args() == other.family_args()  # type: ignore[union-attr]

    def __hash__(self) -> int:
        return hash((type(self).__name__, repr(sorted(self.family_args().items()))))

    # ------------------------------------------------------------------ data side
    def check_bounds(self, bounds: Mapping[str, Any] | None) -> dict[str, Any]:
        """Validate ``bounds`` for this family; a missing one is a ValueError naming it.

        ``bounds`` must be a mapping (or None); anything else — e.g. a bare
        ``(lower, upper)`` pair — is a ValueError that shows the expected shape.
        """
        bounds = check_mapping(
            bounds,
            "bounds",
            shape=f"{{bound name: value}} for the {self.name} family (its bounds: {list(self.bound_keys) or 'none'})",
            example=f"bounds={self.bounds_example}" if self.bounds_example else "bounds=None",
        )
        unknown = sorted(set(bounds) - set(self.bound_keys))
        if unknown:  # first: a misnamed bound is the likelier mistake than a missing one
            raise ValueError(
                f"family {self.name!r} takes bounds {list(self.bound_keys) or 'none'}, got unknown key(s) {unknown}"
                + (f" (e.g. bounds={self.bounds_example})" if self.bounds_example else "") + "."
            )
        missing = [k for k in self.bound_keys if k not in bounds]
        if missing:
            raise ValueError(
                f"family {self.name!r} has an unbounded sensitivity without data bounds: declare "
                f"bounds={{{', '.join(repr(k) + ': ...' for k in missing)}}}"
                + (f" (e.g. bounds={self.bounds_example})" if self.bounds_example else "")
                + ". Records outside the bounds are clipped to them (and counted)."
            )
        return bounds

    def records(self, x: Any) -> Any:
        """Check the shape of the records (already an array: NumPy or Dask); return them."""
        if x.ndim != 1:
            raise ValueError(f"family {self.name!r} expects one value per record (a 1-D array), got shape {x.shape}.")
        return x

    def invalid(self, x: Any) -> Any:
        """Per-record mask of malformed records: NaN, infinite or outside the family's support (see :meth:`repair`)."""
        bad = ~np.isfinite(x)
        return bad if bad.ndim == 1 else bad.any(axis=tuple(range(1, bad.ndim)))

    @abstractmethod
    def default_record(self, bounds: Mapping[str, Any]) -> Any:
        """The public record that stands in for a malformed one (:meth:`repair`): a value, or a row for a family
        whose record is a row. It lies inside the family's support and inside the declared ``bounds``, and depends
        on nothing but the family and the bounds.

        Abstract, so that a family without one cannot be built at all: a refusal raised only when some record is
        malformed would itself say that one is.
        """

    def repair(self, x: Any, bounds: Mapping[str, Any]) -> tuple[Any, Any]:
        """The records with every malformed one replaced by :meth:`default_record`, and the per-record mask of those.

        A record is malformed when it is NaN, infinite or outside the family's support
        (:meth:`invalid`: a Bernoulli 0.5, a Poisson −1, a Multinomial row not summing to
        ``n_trials``). It is not refused: a refusal would answer "is any record malformed?"
        for free, before any noise. It is not dropped either (N is public under replace, and
        dropping would change it). It is replaced by the family's default record, which

        * is a function of that record alone (whether it is malformed), so one record
          replaced still changes one row of the data;
        * lies inside the support and the declared bounds, so its statistic ``s(default)``
          is one a well-formed, clipped record can have: every sensitivity of the family — a
          maximum over pairs of such records — still holds, and a record still counts as one.

        How many were replaced is a fact about the records: callers report it to the curator
        only (:func:`~pymc_dp.accounting.curator.curator_report`), never in a message or the
        ledger. Array operations only (``np.where``), so Dask records stay lazy. The default
        is computed first, whatever the records, so a family without one fails on every call
        alike.
        """
        default = np.asarray(self.default_record(bounds), dtype=float)
        bad = self.invalid(x)
        where = bad[(...,) + (None,) * (x.ndim - bad.ndim)]
        per_record = bad if bad.ndim == 1 else bad.reshape(bad.shape[0], -1).any(axis=1)
        return np.where(where, default, x), per_record

    def clip(self, x: Any, bounds: Mapping[str, Any]) -> tuple[Any, Any]:
        """Clip records into the declared bounds; return them and a per-record mask of clipped ones."""
        return x, np.zeros(x.shape[0], dtype=bool)

    @abstractmethod
    def statistic_names(self, neighbouring: str) -> tuple[str, ...]:
        """Names of the coordinates of S released under ``neighbouring``."""

    @abstractmethod
    def record_statistics(self, x: Any, neighbouring: str) -> Any:
        """Per-record statistics s(xᵢ), shape (N, d): summing over records gives S."""

    @abstractmethod
    def sensitivity(self, bounds: Mapping[str, Any], neighbouring: str) -> float:
        """L1 sensitivity of S: max ‖S(X) − S(X′)‖₁ over neighbouring X, X′."""

    @abstractmethod
    def project(self, noisy: np.ndarray, n: int | None, bounds: Mapping[str, Any], neighbouring: str) -> np.ndarray:
        """Map a noisy S onto the set of valid statistics (``n`` is None when N is private)."""

    def release_design(self, bounds: Mapping[str, Any], neighbouring: str) -> "ReleaseDesign":
        """How the statistics are released (:mod:`.release_design`): by default S itself, one noise scale Δ/ε.

        A family whose coordinates differ in scale overrides it to centre them on public
        constants and divide ε between them (the Normal with σ unknown).
        """
        from .release_design import identity_design

        return identity_design(self.sensitivity(bounds, neighbouring), len(self.statistic_names(neighbouring)))

    def gaussian_release_design(self, bounds: Mapping[str, Any], neighbouring: str) -> "ReleaseDesign | None":
        """The statistics weighted for Gaussian noise (its ``sensitivity`` the L2 one), or None (the default).

        Only a release of many numbers can gain from Gaussian noise: it adds less than Laplace
        only when the L1/L2 sensitivity ratio exceeds σ(ε, δ, 1)·ε/√2 (2.17 to 3.53 for ε from
        0.1 to 10 at δ = 10⁻⁵), and that ratio is at most √2 for every family releasing one or
        two numbers or a histogram. The regression overrides it.
        """
        return None

    def plug_in_degeneracy(self, values: np.ndarray, n: float) -> str | None:
        """Why the plug-in likelihood of these (projected) statistics has no maximum, or None.

        Post-processing of released values (no privacy cost). Families with a scale
        parameter say so when the noise left no spread: the plug-in likelihood then grows
        without bound as the scale goes to 0 and the posterior collapses there.
        """
        return None

    def n_from_statistics(self, values: np.ndarray, neighbouring: str) -> float:
        """The number of records implied by (projected) statistics, when N is private."""
        raise ValueError(f"family {self.name!r} cannot estimate N from its statistics under {neighbouring!r}.")

    def finite_sensitivity(self, value: float, formula: str, declared: str) -> float:
        """``value``, a sensitivity computed from the declared ``bounds``, if finite; else a ValueError.

        ``formula`` is the computation with its numbers, ``declared`` the bounds it used
        (e.g. ``"bounds['x'] = (-1e+200, 1e+200)"``): the error says they are too wide
        for float64 instead of calling the sensitivity unbounded.
        """
        return check_sensitivity_finite(value, what=f"the {self.name} family's sensitivity", formula=formula, declared=declared)

    def finite_loglik_sensitivity(self, value: float, formula: str, declared: str) -> float:
        """As :meth:`finite_sensitivity`, for the log-likelihood sensitivity Δ (bounds and parameter ranges)."""
        return check_sensitivity_finite(
            value,
            what=f"the {self.name} log-likelihood sensitivity Δ",
            formula=formula,
            declared=declared,
            fix="Declare narrower data bounds or truncate the parameters more tightly (pmdp.truncate), or rescale "
            "the data (e.g. to other units) and the bounds with it.",
        )

    # ------------------------------------------------------------------ model side
    @abstractmethod
    def loglik(self, values: Any, n: Any, params: Mapping[str, Any]) -> Any:
        """Log-likelihood of the parameters given the statistics (a PyTensor scalar).

        ``values`` are the statistics (NumPy or PyTensor), ``n`` the number of records.
        Terms that depend on the records but not on the parameters (base measures)
        are dropped: they do not change the posterior.
        """

    #: Whether :meth:`noise_aware_loglik` is available for this family.
    supports_noise_aware: ClassVar[bool] = False

    def integer_statistics(self, bounds: Mapping[str, Any], neighbouring: str) -> bool:
        """Whether every statistic is a whole number for any records within ``bounds``.

        Such statistics are released with discrete Laplace noise (the geometric
        mechanism) of scale Δ/ε: ε-DP like the continuous Laplace for an integer Δ, with
        a strictly smaller variance (8 % less at scale 1), and an exact integer output.
        Counts and histograms say yes; the default is no.
        """
        return False

    def record_moments(self, params: Mapping[str, Any], bounds: Mapping[str, Any] | None = None) -> tuple[Any, Any]:
        """Mean and variance of one record's released statistic, as PyTensor expressions.

        For a family releasing one number: two scalars. For d numbers: a length-d mean
        vector and a d×d covariance matrix. A family that defines it (and sets
        ``supports_noise_aware``) gets the central-limit noise-aware likelihood of
        :meth:`noise_aware_loglik`.
        """
        raise ValueError(f"the {self.name} family has no noise-aware likelihood yet; use noise_aware=False.")

    def shifted_record_moments(self, params: Mapping[str, Any], bounds: Mapping[str, Any] | None, shift: Any) -> Any:
        """Moments of one record's statistic computed at the records moved by ``shift``, or None.

        A centred release (:mod:`.release_design`) of a family whose centring is a shift of the
        records releases ``Σ s(x − c)``; its noise-aware likelihood needs the moments of
        ``s(x − c)``. Computed from the shifted parameters they stay exact far from zero, where
        mapping :meth:`record_moments` through the centring would cancel digits (x² ≈ 10¹⁸
        for records near 10⁹). ``shift`` is a PyTensor expression. None (the default): the
        centring is applied to :meth:`record_moments` instead.
        """
        return None

    #: Whether, under add/remove, N is released as a statistic of its own (the last); otherwise it is
    #: implicit in counts that sum to it (see :mod:`pymc_dp.families._latent_count`).
    releases_count: ClassVar[bool] = False

    #: Whether each record adds 1 to exactly one released count (Bernoulli, Categorical): Poissonised,
    #: the counts are then independent.
    one_hot_counts: ClassVar[bool] = False

    def count_released_alone(self, neighbouring: str) -> bool:
        """Whether N is a released statistic of its own under ``neighbouring`` (add/remove and :attr:`releases_count`)."""
        from ._params import relation

        return relation(neighbouring) == "add_remove" and self.releases_count

    def add_remove_record_moments(self, params: Mapping[str, Any], bounds: Mapping[str, Any] | None = None) -> tuple[Any, Any]:
        """Mean vector and covariance matrix of one record's released statistic under add/remove.

        Without the count coordinate (a constant 1, added by
        :func:`~pymc_dp.families._latent_count.latent_count_noise_aware_logp` where N is released
        on its own). The default is :meth:`record_moments` as a vector and a matrix; a family whose
        add/remove statistic has other coordinates than its replace-one statistic (the Binomial's
        failures) overrides it.
        """
        import pytensor.tensor as pt

        mean, cov = self.record_moments(params, bounds)
        mean = pt.as_tensor_variable(mean)
        if mean.type.ndim == 0:
            return mean[None], pt.reshape(pt.as_tensor_variable(cov), (1, 1))
        return mean, pt.as_tensor_variable(cov)

    def noise_mixing_size(self, n_released: int, n: float) -> int:
        """How many latent noise-mixing variables :meth:`noise_aware_loglik` needs for a release.

        ``n_released`` is the number of released numbers, ``n`` the number of records.
        0 for one released number (the Laplace convolution is closed-form), for two
        (a fixed quadrature integrates the mixing out) and where the family's
        likelihood is exact; ``n_released`` for the multivariate central-limit form
        above two (one Exponential(1) scale-mixing variable per noisy coordinate; see
        :mod:`pymc_dp.families._noise_aware`).
        """
        return 0 if n_released <= 2 else n_released

    def noise_aware_loglik(
        self,
        noisy: np.ndarray,
        n: float,
        scale: float,
        neighbouring: str,
        params: Mapping[str, Any],
        bounds: Mapping[str, Any] | None = None,
        noise_mixing: Any = None,
        mechanism: str = "laplace",
    ) -> Any:
        """Log-likelihood of the *released* (noisy, unprojected) statistic, the noise modelled.

        The default is the central-limit form: the released sum over N public records
        is ``Normal(N·m, N·C)`` (m, C from :meth:`record_moments`) convolved with the
        Laplace noise of scale ``scale`` — exactly in closed form for one number, through
        the latent ``noise_mixing`` variables (:meth:`noise_mixing_size` of them) for
        several (:func:`~pymc_dp.families._noise_aware.clt_noise_aware_logp`). Count
        families override it with an exact sum. ``bounds`` are the release's declared
        data bounds (records were clipped to them, which changes the true statistic's
        distribution). ``mechanism`` is the release's noise: ``"laplace"``, or
        ``"geometric"`` (discrete Laplace, for integer statistics: see
        :meth:`integer_statistics`), which the central-limit form models by the continuous
        Laplace of the same variance. Families without one refuse with a ``ValueError``.
        """
        from ._noise_aware import clt_noise_aware_logp, laplace_equivalent_scale  # imported here: _noise_aware -> _params -> base

        if not self.supports_noise_aware:
            raise ValueError(
                f"the {self.name} family has no noise-aware likelihood yet; use noise_aware=False (the plug-in "
                "likelihood) for it."
            )
        mean, var = self.record_moments(params, bounds)
        return clt_noise_aware_logp(
            self.name, noisy, n, laplace_equivalent_scale(scale, mechanism), neighbouring, mean, var, noise_mixing
        )

    # ------------------------------------------------------------------ tempered posteriors (OPS)
    #: Example truncations of each parameter, shown in error messages (``pmdp.truncate`` syntax).
    truncation_examples: ClassVar[dict[str, str]] = {}

    def loglik_sensitivity(self, ranges: Mapping[str, tuple[float, float]], bounds: Mapping[str, Any]) -> tuple[float, str]:
        """Sensitivity Δ of one record's log-likelihood, for tempered posteriors (OPS); and its derivation.

        ``ranges`` maps each parameter name (as :meth:`from_dist` returns them) to
        ``(lo, hi)``: every value the parameter can take lies in it (for a vector, every
        coordinate). ``bounds`` are the checked data bounds (:meth:`check_bounds`).

        Δ is **half the range over θ** of ``d(θ) = log p(x′ | θ) − log p(x | θ)``,
        maximised over pairs of records x, x′ (replace-one neighbouring). Sampling
        from ``p(θ) Π p(xᵢ | θ)^{1/T}`` then has privacy loss at most
        ``(sup_θ d − inf_θ d) / T ≤ 2Δ / T`` (the normalising constants' ratio lies
        between ``e^{inf d / T}`` and ``e^{sup d / T}``), so T = 2Δ/ε is ε-DP. Terms of
        ``log p(x | θ)`` that do not depend on θ (base measures such as ``log x!``)
        cancel from d's range. Δ never exceeds [FGWC16]'s ``sup |d|`` (eq. 9) and equals
        it when the natural parameter's range is symmetric (beta-Bernoulli on
        [a₀, 1 − a₀]: Δ = log((1 − a₀)/a₀)).

        Raises
        ------
        ValueError
            If a range is unbounded or outside the parameter's domain (the message names
            the parameter), or the family has no such bound (clip the log-likelihood).
        """
        raise ValueError(
            f"no log-likelihood sensitivity from parameter ranges for the {self.name} family; clip the per-record "
            "log-likelihood instead (pmdp.clip_loglik)."
        )

    @classmethod
    @abstractmethod
    def from_dist(cls, dist: Any) -> tuple["Family", dict[str, Any]]:
        """The family instance and parameters (PyTensor variables) of a PyMC distribution."""


# --------------------------------------------------------------------------- helpers


def rv_op_name(dist: Any) -> str:
    """Name of the op that created a PyMC random variable (``"normal"``, ``"bernoulli"``, ...)."""
    owner = getattr(dist, "owner", None)
    op = getattr(owner, "op", None)
    if op is None:
        raise ValueError(f"expected a PyMC distribution such as pm.Bernoulli.dist(p=p), got {dist!r}.")
    name = getattr(op, "name", None) or type(op).__name__.removesuffix("RV")
    if getattr(op, "pymc_dp_loglik_clip", None) is not None:  # a clipped log-density is not the family's
        return f"clipped {name}"
    return str(name)


def dist_params(dist: Any) -> list[Any]:
    """Parameters of a PyMC random variable (its op's inputs after rng and size)."""
    op = dist.owner.op
    try:
        return list(op.dist_params(dist.owner))
    except AttributeError:  # pragma: no cover - older PyTensor
        return list(dist.owner.inputs[2:])


def statistic_length(values: Any) -> int:
    """Number of coordinates of a statistics vector (NumPy, list or PyTensor with static shape)."""
    static = getattr(getattr(values, "type", None), "shape", None)
    if static is not None:
        if static[0] is None:
            raise ValueError("statistics must have a static length.")
        return int(static[0])
    return len(values)


def shifted_scalar_moments(mean: Any, var: Any, shift: Any) -> tuple[Any, Any]:
    """A one-number record's moments after a shift by ``shift``, as a length-1 mean and a 1×1 covariance.

    The mean moves with the shift and the variance does not: the moments of ``x − c`` that a
    family releasing one centred sum (:meth:`Family.shifted_record_moments`) returns.
    """
    import pytensor.tensor as pt

    return (pt.as_tensor_variable(mean) - shift).reshape((1,)), pt.reshape(pt.as_tensor_variable(var), (1, 1))


def check_bound_pair(bounds: Mapping[str, Any], key: str) -> tuple[float, float]:
    """A ``(lower, upper)`` pair of finite real numbers with lower < upper, or a ValueError naming ``key``.

    Strings, booleans, NaN and infinities are refused (:func:`~pymc_dp.accounting.validation.check_interval`).
    """
    return check_interval(bounds[key], f"bounds[{key!r}]")


def declared_bounds(key: str, lo: Any, hi: Any) -> str:
    """``"bounds['x'] = (lo, hi)"`` for error messages."""

    def fmt(v: Any) -> str:
        arr = np.asarray(v, dtype=float).ravel()
        return f"{arr[0]:g}" if arr.size and np.all(arr == arr[0]) else np.array2string(arr, precision=3)

    return f"bounds[{key!r}] = ({fmt(lo)}, {fmt(hi)})"


def project_to_simplex(v: np.ndarray, total: float) -> np.ndarray:
    """Euclidean projection of ``v`` onto {c ≥ 0, Σc = total} (Duchi et al. 2008)."""
    v = np.asarray(v, dtype=float)
    if total <= 0:
        return np.zeros_like(v)
    # The projection commutes with adding a constant to every coordinate: shifting by the
    # maximum keeps the largest coordinate's test exact (0 − (0 − total) = total > 0), however
    # large the noise; coordinates more than the double range below it become −inf (and 0).
    with np.errstate(over="ignore", invalid="ignore"):
        v = v - np.max(v)
        u = np.sort(v)[::-1]
        css = np.cumsum(u) - total
        idx = np.arange(1, v.size + 1)
        rho = np.nonzero(u - css / idx > 0)[0][-1]
        theta = css[rho] / (rho + 1.0)
        return np.maximum(v - theta, 0.0)


def project_to_psd(m: np.ndarray, floor: float = 0.0) -> np.ndarray:
    """Nearest symmetric matrix (Frobenius) with eigenvalues ≥ ``floor``."""
    m = np.asarray(m, dtype=float)
    # scaled to a largest entry of 1, so that entries near the double range do not overflow
    size = float(np.max(np.abs(m), initial=0.0))
    if size == 0.0:
        return np.eye(m.shape[0]) * max(floor, 0.0)
    sym = (m / size + m.T / size) / 2
    w, v = np.linalg.eigh(sym)
    return ((v * np.maximum(w, floor / size)) @ v.T) * size


def checked_range(
    ranges: Mapping[str, tuple[float, float]],
    key: str,
    family: "Family",
    *,
    lower: float = -math.inf,
    upper: float = math.inf,
    open_lower: bool = False,
    open_upper: bool = False,
) -> tuple[float, float]:
    """The range of parameter ``key``, checked to be finite and inside its domain.

    The domain is ``[lower, upper]`` (``open_lower``/``open_upper`` exclude an end, e.g.
    a probability in (0, 1) for a log-odds). A range that reaches outside it, or is
    unbounded, makes the sensitivity infinite: the ValueError names the parameter,
    and its range (the model layer adds which variable to truncate).
    """
    lo, hi = (float(v) for v in ranges[key])
    bad_lo = lo < lower or (open_lower and lo <= lower)
    bad_hi = hi > upper or (open_upper and hi >= upper)
    if math.isfinite(lo) and math.isfinite(hi) and not (bad_lo or bad_hi) and lo <= hi:
        return lo, hi
    left, right = ("(" if open_lower else "["), (")" if open_upper else "]")
    raise ValueError(
        f"the {family.name} parameter {key!r} can take values in [{lo:g}, {hi:g}], so one record's log-likelihood "
        f"has an unbounded sensitivity; it must stay inside a closed interval within {left}{lower:g}, {upper:g}{right}."
    )
