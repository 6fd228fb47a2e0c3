"""Privatised sufficient statistics: the one object the Laplace route releases."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from ..accounting import PrivacyLedger
from .base import Family
from .release_design import ReleaseDesign

__all__ = ["PrivateStatistics"]


#: How :meth:`PrivateStatistics.summary` names each mechanism's noise.
_NOISE_WORDS = {"laplace": "Laplace", "geometric": "discrete Laplace", "gaussian": "Gaussian (analytic, with δ)"}


@dataclass(frozen=True)
class PrivateStatistics:
    """Noisy, projected sufficient statistics of one data set, with what produced them.

    Everything here is differentially private (or public): any model, sampler,
    prior or number of draws that uses it costs no further privacy.

    Attributes
    ----------
    family
        The likelihood family (e.g. ``Bernoulli()``).
    names
        Names of the statistic coordinates (e.g. ``("successes",)``).
    values
        The projected noisy statistics (valid: counts ≥ 0, ...). Use these in models.
    noisy
        The noisy statistics before projection (also private), in the family's own
        coordinates.
    n
        The number of records: exact when N is public (``"replace"``), estimated from
        the statistics when it is not (``"add_remove"``).
    epsilon, sensitivity, scale
        The privacy parameter spent, the L1 sensitivity Δ of what was released and the
        scale Δ/ε of its (Laplace or discrete Laplace) noise.
    neighbouring
        The neighbouring relation the sensitivity was computed under.
    bounds
        The declared data bounds (records outside were clipped to them).
    entry_id
        The id of the ledger entry that paid for this release.
    noise_source
        ``"secure"`` or ``"seeded"``.
    ledger
        The ledger that was charged.
    mechanism
        ``"laplace"``, or ``"geometric"`` for whole-number statistics (counts, histograms,
        Poisson sums) released as they are: discrete Laplace noise of scale Δ/ε; or
        ``"gaussian"`` for a release at (ε, δ) weighted for Gaussian noise (a regression with
        several covariates, ``delta=`` given): ``scale`` is then the noise's σ and
        ``sensitivity`` the L2 one.
    design
        How the statistics were released (:class:`~pymc_dp.families.release_design.ReleaseDesign`):
        for a Normal with σ unknown, centred on the bounds' midpoint with ε divided between
        Σ(x − c) and Σ(x − c)²; otherwise the statistics themselves.
    released
        The numbers actually released, ``w ⊙ (A S + N a)`` plus noise of scale ``scale``
        on every coordinate (``noisy`` itself for the identity design); the noise-aware
        likelihood models these.
    """

    family: Family
    names: tuple[str, ...]
    values: np.ndarray
    noisy: np.ndarray
    n: float
    epsilon: float
    sensitivity: float
    scale: float
    neighbouring: str
    bounds: Mapping[str, Any]
    entry_id: str
    noise_source: str
    ledger: PrivacyLedger = field(repr=False, compare=False)
    mechanism: str = "laplace"
    design: ReleaseDesign | None = field(default=None, repr=False, compare=False)
    released: np.ndarray | None = field(default=None, repr=False, compare=False)
    #: Whether the noise-aware likelihood moment-matches the noise on the sums: None to decide from public numbers
    #: (:func:`~pymc_dp.families._latent_count.noise_moment_matched`); set for a hierarchy's groups, which decide
    #: together.
    moment_matched: bool | None = field(default=None, repr=False, compare=False)

    @property
    def centred(self) -> bool:
        """Whether the release was centred and ε divided between the statistics (:mod:`.release_design`)."""
        return self.design is not None and not self.design.is_identity

    @property
    def n_is_public(self) -> bool:
        """Whether ``n`` is the exact, public number of records."""
        return self.neighbouring == "replace"

    def as_dict(self) -> dict[str, float]:
        """``{name: value}`` of the projected statistics."""
        return {k: float(v) for k, v in zip(self.names, np.ravel(self.values))}

    def __getitem__(self, name: str) -> Any:
        try:
            return self.values[self.names.index(name)]
        except ValueError:
            raise KeyError(f"no statistic {name!r}; this release has {list(self.names)}") from None

    def summary(self) -> str:
        """A short readable description."""
        vals = ", ".join(f"{k} = {float(v):.6g}" for k, v in zip(self.names, np.ravel(self.values)))
        n = f"N = {int(self.n)}" if self.n_is_public else f"N ≈ {self.n:.1f} (private, estimated)"
        return (
            f"{self.family!r} statistics ({n}): {vals}\n"
            f"  released with {_NOISE_WORDS.get(self.mechanism, 'Laplace')} noise of scale "
            f"{self.scale:.4g} (Δ = {self.sensitivity:g}, ε = {self.epsilon:g}, "
            f"{self.neighbouring} neighbouring, {self.noise_source} noise); ledger entry {self.entry_id}"
            + (f"\n  {self.design.description}; noise scales on the centred coordinates "  # type: ignore[union-attr]
               + ", ".join(f"{b:.4g}" for b in self.scale / self.design.weights) if self.centred else "")  # type: ignore[union-attr]
        )
