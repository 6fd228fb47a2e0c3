"""Statistics by group, released together by parallel composition.

A hierarchy's records fall into disjoint groups (the counties of ``a[county_idx]``); each
group's records have a likelihood of their own family with parameters shared by them
(:mod:`pymc_dp.model.group_index`). Their statistics are released as **one** Laplace release
of the concatenated vector, whose L1 sensitivity is that of one group's release, not the sum
over groups:

* each group's statistics are released with the add/remove design of its family (the group's
  count among them: which group a record is in is private, so no group's size is public);
* under add/remove, one record is added to (or removed from) one group: Δ = max_g Δ_g, the
  largest add/remove sensitivity of one group's release (the same for every group when the
  bounds are shared; a public number of trials by group makes them differ);
* under replace-one, a record may also change its group: group g loses a record and group h
  gains one, moving by at most Δ_g + Δ_h, so Δ = 2·max_g Δ_g. A record kept in its group moves
  its group's release by at most 2·Δ_g too (a removal and an addition). So the whole vector
  costs ε with noise of scale Δ/ε on every coordinate, whatever the number of groups.

Each group's part is then post-processed as that family's add/remove release at ε/2
(replace-one) or ε (add/remove) would be: the same noise scale, so every likelihood of the
family (plug-in or noise-aware with a latent count) reads it unchanged.

**Pooled coordinates.** Where some of a group's statistics enter the likelihood only through
parameters every group shares — a varying-intercept regression ``a[idx] + X @ beta`` with one
``beta`` and one ``sigma``: the centred products of the covariates and the outcome — they are
released **once, summed over the groups**, and each group releases only the rest (its count
and its sums of x and y). A record moves its own group's coordinates and the pooled sums, each
by its weighted value, exactly as it moved its group's whole vector: the sensitivity is
unchanged (Δ = max_g Δ_g, doubled under replace-one: a record leaving g for h moves the pooled
sums by the difference of two rows, at most 2·Δ by the triangle inequality), and the pooled
sums carry the noise of one coordinate instead of G. Each group's part keeps its full length
for its post-processing, its pooled coordinates holding an equal share of the pooled release
(a stand-in that no likelihood reads as the group's own:
:func:`~pymc_dp.families._pooled_groups.pooled_sums_logp` reads the pooled release itself).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

import numpy as np

from ..accounting import PrivacyLedger
from ..accounting.validation import check_epsilon
from ..mechanisms import laplace_mechanism
from .privatize import PreparedStatistics, statistics_from_release
from .statistics import PrivateStatistics
from ._params import relation

__all__ = ["GroupedPrepared", "GroupedStatistics", "release_grouped", "group_factor", "with_weights_of"]


def group_factor(neighbouring: str) -> float:
    """How many groups' releases one neighbouring change can move: 2 under replace-one, 1 under add/remove."""
    return 2.0 if relation(neighbouring) == "replace" else 1.0


class _ByGroup:
    """What every group's part shares: the family and the bounds."""

    parts: tuple[Any, ...]

    @property
    def family(self) -> Any:
        return self.parts[0].family

    @property
    def bounds(self) -> Mapping[str, Any]:
        return self.parts[0].bounds


@dataclass(frozen=True)
class GroupedPrepared(_ByGroup):
    """Exact statistics of every group, each prepared under add/remove (never leave the curator)."""

    parts: tuple[PreparedStatistics, ...]
    labels: tuple[str, ...]
    dim: str | None
    neighbouring: str
    name: str
    #: records whose group index named no group (outside 0..G−1): left out, counted for the curator only
    dropped: int = field(default=0, repr=False)
    #: coordinates of a group's release that only shared parameters read: released once, summed over the groups
    pooled: tuple[int, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return self.parts[0].names

    @property
    def design(self) -> Any:
        return self.parts[0].design

    @property
    def n(self) -> int:
        return int(sum(p.n for p in self.parts)) + self.dropped

    @property
    def exact(self) -> np.ndarray:
        """Every group's statistics but the pooled coordinates, then the pooled coordinates summed over the groups."""
        return _pool([np.atleast_1d(p.exact) for p in self.parts], self.pooled)

    @property
    def exact_released(self) -> np.ndarray:
        """The exact vector the release adds noise to: each group's released coordinates (its design's), the pooled
        ones summed over the groups last."""
        return _pool([_released_coordinates(p) for p in self.parts], self.pooled)

    @property
    def group_sensitivity(self) -> float:
        """The largest add/remove Δ of one group's release (groups may differ: a public number of trials by group)."""
        return max(p.sensitivity for p in self.parts)

    @property
    def sensitivity(self) -> float:
        """Δ of the concatenated release: the largest group's add/remove Δ, doubled under replace-one (module
        docstring: a record leaving group g for group h moves the release by at most Δ_g + Δ_h)."""
        return group_factor(self.neighbouring) * self.group_sensitivity

    @property
    def delta(self) -> float:
        return 0.0

    @property
    def offered_delta(self) -> float:
        return self.parts[0].offered_delta

    def part_epsilon(self, epsilon: float, part: PreparedStatistics | None = None) -> float:
        """The ε at which one group's add/remove release (``part``; else the largest) has the whole release's noise
        scale Δ/ε."""
        own = self.group_sensitivity if part is None else part.sensitivity
        return float(epsilon) * own / self.sensitivity

    def mechanism(self, epsilon: float) -> str:
        """Always ``"laplace"``: the concatenated release takes continuous Laplace noise (pure ε-DP)."""
        return "laplace"

    def release_event(self, epsilon: float) -> dict[str, Any]:
        return {"type": "laplace", "noise_multiplier": 1.0 / float(epsilon)}


def with_weights_of(prepared: PreparedStatistics, design: Any) -> PreparedStatistics:
    """``prepared`` released with ``design``: the same centring and mixing, other weights (a pooled design).

    The exact released coordinates are ``w ⊙ (M·centred sums)``: only the weights change, so they are rescaled
    coordinate by coordinate, and Δ is the new design's.
    """
    old = prepared.design
    if old is None or old.shift is None or not np.array_equal(old.shift, design.shift):
        raise ValueError("the new design must centre as the old one did; only its weights may differ.")
    ratio = np.asarray(design.weights, dtype=float) / np.asarray(old.weights, dtype=float)
    return replace(prepared, design=design, sensitivity=float(design.sensitivity),
                   exact_released=np.asarray(prepared.exact_released, dtype=float) * ratio)


def _released_coordinates(part: PreparedStatistics) -> np.ndarray:
    return np.atleast_1d(part.exact if part.exact_released is None else part.exact_released)


def _pool(values: Sequence[np.ndarray], pooled: Sequence[int]) -> np.ndarray:
    """The concatenated vector of a grouped release: each group's own coordinates, then the pooled ones summed."""
    if not pooled:
        return np.concatenate(values)
    own = [np.delete(v, list(pooled)) for v in values]
    return np.concatenate([*own, np.sum([v[list(pooled)] for v in values], axis=0)])


@dataclass(frozen=True)
class GroupedStatistics(_ByGroup):
    """The released statistics of every group (one ledger entry paid for all of them)."""

    parts: tuple[PrivateStatistics, ...]
    labels: tuple[str, ...]
    dim: str | None
    name: str
    #: the coordinates released once for all groups (:class:`GroupedPrepared`), and their released sums
    pooled: tuple[int, ...] = ()
    pooled_released: np.ndarray | None = None

    @property
    def entry_id(self) -> str:
        return self.parts[0].entry_id

    def __iter__(self):
        return iter(self.parts)


def grouping_assumption(neighbouring: str, dim: str | None, groups: int, pooled: Sequence[str] = ()) -> str:
    """What the ledger says of a grouped release: parallel composition, and where its factor comes from."""
    by = f"'{dim}'" if dim else "the group index"
    moved = ("a record may change its group, moving two groups' statistics (Δ doubled)"
             if relation(neighbouring) == "replace" else "a record added or removed moves one group's statistics")
    return (f"records split into {groups} disjoint groups by {by} (parallel composition): each group's statistics "
            f"and its count released with the add/remove design, one Laplace noise for all; {moved}; the groups' sizes "
            "are private"
            + (f"; {', '.join(pooled)} released once, summed over the groups (the likelihood reads them through "
               "shared parameters only; a record moves the sums by its own row, so Δ is unchanged)" if pooled else ""))


def release_grouped(prepared: GroupedPrepared, epsilon: float, *, ledger: PrivacyLedger, rng: Any = None,
                    assumptions: Sequence[str] = ()) -> GroupedStatistics:
    """One Laplace release of every group's statistics at ``epsilon`` (charged once), split back into groups."""
    eps = check_epsilon(epsilon)
    if ledger.neighbouring != prepared.neighbouring:
        raise ValueError(f"the statistics were prepared under {prepared.neighbouring!r}, the ledger uses "
                         f"{ledger.neighbouring!r}.")
    parts, pooled = prepared.parts, list(prepared.pooled)
    exact = [_released_coordinates(p) for p in parts]
    part_eps = prepared.part_epsilon(eps)
    details = prepared.design.ledger_details(prepared.names, part_eps) if prepared.design is not None else {}
    details = {**details, "groups": len(parts), "group_dim": prepared.dim, "group_sensitivity": prepared.group_sensitivity}
    if pooled:
        details["pooled_over_groups"] = [prepared.names[j] for j in pooled]
    if prepared.offered_delta:
        details["delta_not_used"] = (f"delta={prepared.offered_delta:g} was allowed; a release by group is pure ε-DP "
                                     "and spends no δ")
    touched = f"{prepared.name}:{prepared.family.name} statistics by {prepared.dim or 'group'} ({len(parts)} groups)"
    released, entry = laplace_mechanism(
        prepared.exact_released, epsilon=eps, sensitivity=prepared.sensitivity, ledger=ledger, rng=rng, touched=touched,
        assumptions=(grouping_assumption(prepared.neighbouring, prepared.dim, len(parts),
                                         [prepared.names[j] for j in pooled]), *assumptions),
        return_entry=True, details=details,
    )
    released = np.atleast_1d(np.asarray(released, dtype=float))
    scale = float(entry.details.get("scale", prepared.sensitivity / eps))
    pooled_released = released[released.size - len(pooled):] if pooled else None
    out, start = [], 0
    for part, values in zip(parts, exact):
        own = values.size - len(pooled)
        chunk = released[start:start + own]
        start += own
        if pooled:  # the group's full vector for its post-processing: an equal share of each pooled sum
            chunk = _with_shares(chunk, pooled, pooled_released / len(parts), values.size)
        out.append(statistics_from_release(part, chunk, prepared.part_epsilon(eps, part), scale, entry, ledger,
                                           "laplace"))
    return GroupedStatistics(parts=tuple(out), labels=prepared.labels, dim=prepared.dim, name=prepared.name,
                             pooled=tuple(pooled), pooled_released=pooled_released)


def _with_shares(own: np.ndarray, pooled: Sequence[int], shares: np.ndarray, size: int) -> np.ndarray:
    """A group's full vector: its own released coordinates, and ``shares`` at the pooled positions."""
    full = np.empty(size)
    mask = np.zeros(size, dtype=bool)
    mask[list(pooled)] = True
    full[mask], full[~mask] = shares, own
    return full
