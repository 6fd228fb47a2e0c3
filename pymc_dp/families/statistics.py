"""Privatised sufficient statistics: the one object the Laplace route releases."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from ..accounting import PrivacyLedger
from .base import Family

__all__ = ["PrivateStatistics"]


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
        The noisy statistics before projection (also private; noise-aware likelihoods
        use them, since their noise distribution is exactly known).
    n
        The number of records: exact when N is public (``"replace"``), estimated from
        the statistics when it is not (``"add_remove"``).
    epsilon, sensitivity, scale
        The privacy parameter spent, the L1 sensitivity Δ and the Laplace scale Δ/ε.
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
            f"  released with Laplace noise of scale {self.scale:.4g} (Δ = {self.sensitivity:g}, ε = {self.epsilon:g}, "
            f"{self.neighbouring} neighbouring, {self.noise_source} noise); ledger entry {self.entry_id}"
        )
