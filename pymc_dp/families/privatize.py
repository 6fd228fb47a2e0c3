"""``privatize``: sufficient statistics of records, released once with the Laplace mechanism."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from .._logs import reads_records
from ..accounting.curator import curator_report
from ..accounting import PrivacyLedger
from ..accounting.validation import check_delta, check_epsilon, check_neighbouring, check_noise_scale
from ..mechanisms import gaussian_mechanism, geometric_mechanism, laplace_mechanism
from ._arrays import as_array, compute, n_records
from .base import Family
from .registry import get_family
from .release_design import ReleaseDesign, identity_design, preferred_noise
from .statistics import PrivateStatistics

__all__ = ["privatize", "prepare_statistics", "release_statistics", "PreparedStatistics", "ClippedRecordsWarning"]


#: The assumption recorded with every release under replace-one neighbouring.
PUBLIC_N = "N (the number of records) is public: replace-one neighbouring"


class ClippedRecordsWarning(UserWarning):
    """Some records lay outside the declared bounds and were clipped to them, or were malformed and replaced.

    A curator-only report (:func:`~pymc_dp.accounting.curator.curator_reports`): silent unless asked for.
    """


class DegenerateReleaseWarning(UserWarning):
    """A release whose answer is degenerate: statistics that leave the plug-in likelihood without a maximum (σ's
    posterior collapses to 0), or an aggregate whose noise dominates it (method="saa").

    Raised from released values only (post-processing, no privacy cost), so it may be shown.
    """


@reads_records
def privatize(
    data: Any,
    family: str | Family,
    epsilon: float,
    *,
    bounds: Mapping[str, Any] | None = None,
    ledger: PrivacyLedger | None = None,
    neighbouring: str = "replace",
    rng: Any = None,
    name: str = "data",
    delta: float | None = 0.0,
    **family_args: Any,
) -> PrivateStatistics:
    """Release the sufficient statistics of ``data`` under ``family`` with the Laplace mechanism.

    The records enter an exponential-family likelihood only through
    ``S(X) = Σᵢ s(xᵢ)``. This computes S (chunk by chunk for Dask data), adds
    Laplace noise of scale Δ/ε once (charged to ``ledger``, budget checked first),
    and projects the result back onto valid statistics. Whole-number statistics
    (counts, histograms, Poisson sums) get the discrete Laplace noise of the same
    scale instead (the geometric mechanism: ε-DP, exact integers, less variance;
    ``result.mechanism == "geometric"``). Everything computed from
    the result afterwards — any model, prior, sampler, chain or number of draws —
    is post-processing and costs nothing more.

    Parameters
    ----------
    data
        The records: a NumPy array, list, pandas Series/DataFrame, or Dask
        array/DataFrame (reduced on the cluster; only the sums come back). One row
        per record.
    family
        A family name (``"bernoulli"``, ``"binomial"``, ``"categorical"``,
        ``"multinomial"``, ``"poisson"``, ``"normal"``, ``"exponential"``,
        ``"gamma"``, ``"linear_regression"``) or a family object.
    epsilon
        The privacy parameter ε > 0 this release spends.
    bounds
        Data bounds for families whose support is unbounded (the error says which
        are needed); records outside are clipped to them. A malformed record — NaN,
        infinite or outside the family's support (a Bernoulli 0.5, a Poisson −1) — is
        replaced by the family's default record inside the bounds
        (:meth:`~pymc_dp.families.Family.repair`: 0 for counts, the bounds' midpoint for
        a Normal, ...), never refused, since a refusal would say that some record is
        malformed. Both numbers are reported in a :class:`ClippedRecordsWarning` to you,
        the curator, inside :func:`~pymc_dp.curator_reports` only (they are not released).
    ledger
        The ledger to charge; a new one (no budget) if omitted, available as
        ``result.ledger``.
    neighbouring
        ``"replace"`` (N public, the default) or ``"add_remove"`` (N private: the
        statistics then include what is needed to estimate N). Must match the ledger's.
    rng
        ``None`` for OpenDP's secure noise (default), or a seed / Generator for
        reproducible seeded noise (recorded as such in the ledger).
    name
        What the data are called; the ledger entry records ``"<name>:<statistics>"``.
    delta
        The δ this release may spend (default 0: pure ε-DP). With δ > 0, a release of
        many numbers whose Gaussian noise at (ε, δ) is smaller than its Laplace noise at ε
        — a regression with enough covariates (at ε = 1: two at δ = 1e-5, three at δ = 1e-6) — gets the analytic Gaussian mechanism
        instead, on products weighted for it (``result.mechanism == "gaussian"``; the
        ledger entry charges (ε, δ)). Decided from public numbers only
        (:func:`~pymc_dp.families.release_design.preferred_noise`); every other release
        stays pure ε-DP and spends no δ.
    **family_args
        Arguments of the family, e.g. ``n_trials=10`` (binomial), ``k=4``
        (categorical), ``sigma=2.0`` (normal with known σ), ``shape=3.0`` (gamma).

    Returns
    -------
    PrivateStatistics

    Raises
    ------
    ValueError
        For bad arguments, an unknown family, a missing bound (naming it), records that
        are not numbers (text, None, dates: refused by their type, whatever their
        values), no records under replace-one (under add/remove, where N is private, an empty
        data set is released like any other), or a ledger under another relation. Never for the values of
        numeric records.
    pymc_dp.BudgetExceededError
        If the ledger's budget cannot pay ε; nothing is drawn or recorded then.
    """
    if "noise_rng" in family_args:
        raise TypeError("privatize takes the noise source as rng= (pmdp.sample calls it noise_rng=); nothing was spent.")
    eps = check_epsilon(epsilon)
    ledger = _resolve_ledger(ledger, neighbouring)
    noise = noise_for(family, bounds, ledger.neighbouring, eps, delta, **family_args)
    prepared = prepare_statistics(data, family, bounds=bounds, neighbouring=ledger.neighbouring, name=name,
                                  noise=noise, delta=delta, **family_args)
    return release_statistics(prepared, eps, ledger=ledger, rng=rng)


def noise_for(family: str | Family, bounds: Mapping[str, Any] | None, neighbouring: str, epsilon: float, delta: float,
              **family_args: Any) -> str:
    """``"gaussian"`` or ``"laplace"``: the noise of a release at (ε, δ), from public numbers only.

    Raises a ValueError for a δ that is not a number in [0, 1) (naming ``delta``).
    """
    if delta is None or check_delta(delta) == 0.0:  # None: as pmdp.sample's routes take it, no δ
        return "laplace"
    fam = get_family(family, **family_args)
    return preferred_noise(fam, fam.check_bounds(bounds), check_neighbouring(neighbouring), epsilon, float(delta))


def _resolve_ledger(ledger: PrivacyLedger | None, neighbouring: str) -> PrivacyLedger:
    neighbouring = check_neighbouring(neighbouring)
    if ledger is None:
        return PrivacyLedger(neighbouring=neighbouring)
    if not isinstance(ledger, PrivacyLedger):
        raise ValueError(f"ledger must be a pmdp.PrivacyLedger or None, got {type(ledger).__name__}.")
    if ledger.neighbouring != neighbouring:
        raise ValueError(
            f"neighbouring={neighbouring!r} but the ledger uses {ledger.neighbouring!r}; pass the ledger's relation."
        )
    return ledger


@dataclass(frozen=True)
class PreparedStatistics:
    """Exact sufficient statistics, checked and ready to be released (never leave the curator)."""

    family: Family
    names: tuple[str, ...]
    exact: np.ndarray = field(repr=False)
    n: int
    sensitivity: float
    bounds: Mapping[str, Any]
    neighbouring: str
    name: str
    #: How the statistics are released (centring and the division of ε); ``sensitivity`` is its Δ_w.
    design: ReleaseDesign | None = None
    #: The exact released coordinates ``w ⊙ (A S + N a)`` (``exact`` itself for the identity design).
    exact_released: np.ndarray | None = field(default=None, repr=False)
    #: The δ of a Gaussian release (its design's ``noise == "gaussian"``); 0 for the Laplace ones.
    delta: float = 0.0
    #: The δ the caller allowed (``delta=``), spent or not: the ledger says when it was not used.
    offered_delta: float = 0.0

    def mechanism(self, epsilon: float) -> str:
        """``"gaussian"`` for a design weighted for Gaussian noise; else ``"geometric"`` (discrete Laplace) for
        whole-number statistics released as they are, else ``"laplace"``.

        Decided from public facts alone: the family, the bounds, the design, Δ and ε. A noise
        scale Δ/ε above 2⁵⁶ keeps the continuous Laplace, so that an integer release can never
        overflow int64 (its sums are clamped to ±2⁶², beyond which no count of records reaches).
        """
        design = self.design
        if design is not None and design.noise == "gaussian":
            return "gaussian"
        whole = float(self.sensitivity).is_integer() and (design is None or design.is_identity)
        small = self.sensitivity / float(epsilon) <= 2.0**56
        integer = self.family.integer_statistics(self.bounds, self.neighbouring)
        return "geometric" if whole and small and integer else "laplace"

    def release_event(self, epsilon: float) -> dict[str, Any]:
        """The ledger event of releasing these statistics at ``epsilon`` (and :attr:`delta`, for a Gaussian release)."""
        if self.mechanism(epsilon) == "gaussian":
            return {"type": "gaussian", "noise_multiplier": self.design.noise_scale(epsilon, self.delta) / self.sensitivity}
        if self.mechanism(epsilon) == "geometric":
            return {"type": "discrete_laplace", "noise_parameter": epsilon / self.sensitivity,
                    "sensitivity": int(self.sensitivity)}
        return {"type": "laplace", "noise_multiplier": 1.0 / epsilon}


def prepare_statistics(
    data: Any,
    family: str | Family,
    *,
    bounds: Mapping[str, Any] | None = None,
    neighbouring: str = "replace",
    name: str = "data",
    noise: str = "laplace",
    delta: float = 0.0,
    **family_args: Any,
) -> PreparedStatistics:
    """Check ``data`` and compute its exact sufficient statistics; spend nothing.

    This is the first half of :func:`privatize`, split out so that several data
    sets can all be checked before any of them is released (a failure then spends
    nothing). Raises the same ``ValueError``s as :func:`privatize`; clipped and replaced
    records are reported to the curator only. ``noise="gaussian"`` (with the release's
    ``delta`` > 0) prepares the family's Gaussian design (:func:`noise_for` decides).
    """
    neighbouring = check_neighbouring(neighbouring)
    fam = get_family(family, **family_args)
    checked_bounds = fam.check_bounds(bounds)
    offered_delta = 0.0 if delta is None else check_delta(delta)
    # a tuple is a family's own multi-part record format, e.g. (X, y) for linear regression
    # the design is computed (and refused, if the bounds cannot carry it) from the bounds alone, before any record
    if noise == "gaussian":
        design = fam.gaussian_release_design(checked_bounds, neighbouring)
        if design is None or delta is None or not 0.0 < float(delta) < 1.0:
            raise ValueError(f"noise='gaussian' needs a family with a Gaussian design and 0 < delta < 1; the "
                             f"{fam.name} family with delta={delta!r} has none. Nothing was spent.")
    elif noise == "laplace":
        design, delta = fam.release_design(checked_bounds, neighbouring), 0.0
    else:
        raise ValueError(f"noise must be 'laplace' or 'gaussian', got {noise!r}. Nothing was spent.")
    x = fam.records(data if isinstance(data, tuple) and fam.tuple_records else as_array(data, "data"))
    n = n_records(x)
    if n == 0 and neighbouring == "replace":
        # N is public under replace-one; under add/remove it is private, and refusing N = 0 while releasing N = 1
        # would tell the two apart: an empty data set is released like any other (its sums are zero)
        raise ValueError(f"{name}: data has no records.")
    if offered_delta and neighbouring == "replace" and offered_delta * n >= 1.0:
        # N is public here; under add/remove it is not, and no check may compare δ with it
        raise ValueError(
            f"{name}: delta={offered_delta:g} is at least 1/N = 1/{n}: an (ε, δ) guarantee with δ ≥ 1/N allows a "
            "mechanism that publishes a record outright. Use δ far below 1/N, e.g. delta=1e-6. Nothing was spent."
        )
    repaired, malformed = fam.repair(x, checked_bounds)
    clipped, outside = fam.clip(repaired, checked_bounds)
    total = fam.record_statistics(clipped, neighbouring).sum(axis=0)
    # the centred sums from the centred records themselves (far from zero, A·S + N·a would cancel digits)
    centred = total if design.shift is None else fam.record_statistics(design.centred_records(clipped), neighbouring).sum(axis=0)
    n_malformed, n_outside, exact, exact_centred = compute(malformed.sum(), outside.sum(), total, centred)
    exact = np.asarray(exact, dtype=float).ravel()
    if design.shift is None:
        exact_released = design.forward(exact, n)
    else:
        exact_released = design.released_from_centred(exact_centred)
    if int(n_malformed):
        curator_report(
            f"{name}: {int(n_malformed)} of {n} record(s) were NaN, infinite or outside the support of the "
            f"{fam.name} family and were replaced by its default record "
            f"{np.asarray(fam.default_record(checked_bounds)).tolist()} (this count is for you, the curator; it is "
            "not released).",
            ClippedRecordsWarning,
            stacklevel=3,
        )
    if int(n_outside):
        curator_report(
            f"{name}: {int(n_outside)} of {n} record(s) lay outside bounds={checked_bounds} and were clipped to "
            "them (this count is for you, the curator; it is not released).",
            ClippedRecordsWarning,
            stacklevel=3,
        )
    return PreparedStatistics(
        family=fam,
        names=tuple(fam.statistic_names(neighbouring)),
        exact=exact,
        n=n,
        sensitivity=float(design.sensitivity),
        bounds=checked_bounds,
        neighbouring=neighbouring,
        name=name,
        design=design,
        exact_released=exact_released,
        delta=float(delta),
        offered_delta=offered_delta,
    )


def release_statistics(
    prepared: PreparedStatistics,
    epsilon: float,
    *,
    ledger: PrivacyLedger,
    rng: Any = None,
    assumptions: Sequence[str] = (),
) -> PrivateStatistics:
    """Add Laplace noise (discrete for whole-number statistics) to prepared statistics and project them.

    ``ledger`` is charged first.

    ``assumptions`` are added to the ledger entry's (besides the public N under replace).
    """
    eps = check_epsilon(epsilon)
    if ledger.neighbouring != prepared.neighbouring:
        raise ValueError(f"the statistics were prepared under {prepared.neighbouring!r}, the ledger uses {ledger.neighbouring!r}.")
    fam, names = prepared.family, prepared.names
    check_noise_scale(prepared.sensitivity, eps, declared=f"bounds of {prepared.name!r} ({fam.name} family)")
    touched = f"{prepared.name}:{'+'.join(names) if len(names) <= 4 else fam.name + ' statistics'}"
    assumptions = ((PUBLIC_N,) if prepared.neighbouring == "replace" else ()) + tuple(assumptions)
    design = prepared.design or identity_design(prepared.sensitivity, len(names))
    exact = prepared.exact if prepared.exact_released is None else prepared.exact_released
    mechanism = prepared.mechanism(eps)
    details = design.ledger_details(names, eps, prepared.delta)
    if prepared.offered_delta and mechanism != "gaussian":
        details["delta_not_used"] = (f"delta={prepared.offered_delta:g} was allowed; Laplace noise adds less to these "
                                     "statistics, so this release is pure ε-DP and spends no δ")
    if mechanism == "gaussian":
        released, entry = gaussian_mechanism(exact, epsilon=eps, delta=prepared.delta, sensitivity=prepared.sensitivity,
                                             ledger=ledger, rng=rng, touched=touched, assumptions=assumptions,
                                             return_entry=True, details=details)
    else:
        release = geometric_mechanism if mechanism == "geometric" else laplace_mechanism
        if mechanism == "geometric":  # the geometric mechanism takes |value| ≤ 2⁶²: clamped (1-Lipschitz, Δ kept)
            exact = np.clip(exact, -(2.0**62), 2.0**62)
        released, entry = release(exact, epsilon=eps, sensitivity=prepared.sensitivity, ledger=ledger, rng=rng,
                                  touched=touched, assumptions=assumptions, return_entry=True, details=details)
    return statistics_from_release(prepared, released, eps, float(entry.details.get("scale", prepared.sensitivity / eps)),
                                   entry, ledger, mechanism)


def statistics_from_release(prepared: PreparedStatistics, released: Any, epsilon: float, scale: float, entry: Any,
                            ledger: PrivacyLedger, mechanism: str) -> PrivateStatistics:
    """The released coordinates back in the family's own statistics, projected (post-processing).

    ``scale`` is the noise's scale on the released coordinates; ``entry`` the ledger entry that paid.
    """
    fam, names = prepared.family, prepared.names
    design = prepared.design or identity_design(prepared.sensitivity, len(names))
    eps = float(epsilon)
    released = np.atleast_1d(np.asarray(released, dtype=float))
    public_n = prepared.n if prepared.neighbouring == "replace" else None
    # post-processing: back to the family's own statistics. A design with an offset needs N, public under replace;
    # under add/remove the count is released with the sums, and the design is linear in them (no offset, no N).
    if public_n is None and design.offset.any():
        raise AssertionError("a design with an offset needs N public")  # pragma: no cover - guarded by the families
    noisy = released if design.is_identity else design.backward(released, float(public_n or 0))
    values = fam.project(noisy, public_n, prepared.bounds, prepared.neighbouring)
    n_out = float(prepared.n) if public_n is not None else fam.n_from_statistics(values, prepared.neighbouring)
    return PrivateStatistics(
        family=fam,
        names=names,
        values=np.asarray(values, dtype=float),
        noisy=np.asarray(noisy, dtype=float),
        n=n_out,
        epsilon=eps,
        sensitivity=prepared.sensitivity,
        scale=scale,
        neighbouring=prepared.neighbouring,
        bounds=prepared.bounds,
        entry_id=entry.id,
        noise_source=entry.noise_source,
        ledger=ledger,
        mechanism=mechanism,
        design=design,
        released=released,
    )
