"""Composition: the total cost of a sequence of ledger entries.

Every method first turns the entries into *blocks of rounds*. An entry outside any
parallel group is ``count`` rounds of its own mechanism. The entries of one
parallel group act on disjoint subsets of the records, so in round r the group is
the parallel composition of the members that still run (those with count ≥ r):
it costs the max of their costs (basic), the max of their Rényi curves (RDP), or
the PLD that dominates them. Members sorted by count give a few blocks of equal
rounds, so a group of a million per-record updates costs one block, not a million.

Methods (all valid under adaptive composition):

``basic``
    Σ ε and Σ δ over rounds ([FGWC16] Thm 1).
``advanced``
    Dwork–Rothblum–Vadhan ([DR14] Thm 3.20) in its heterogeneous form: for
    rounds (ε_r, δ_r) and a slack δ′, ε′ = sqrt(2 ln(1/δ′) Σ ε_r²) + Σ ε_r (e^{ε_r} − 1),
    δ = Σ δ_r + δ′. With k equal rounds this is the textbook
    sqrt(2k ln(1/δ′)) ε + k ε (e^ε − 1).
``rdp``
    Rényi DP curves from dp-accounting (or the pure-DP bound min(ε, αε²/2)), summed
    over rounds and converted to (ε, δ) by dp-accounting. Rounds with no curve (an
    (ε, δ > 0) spend of unknown shape) are added by basic composition.
``pld``
    Privacy-loss distributions from dp-accounting composed by convolution; unknown
    events use the PLD that dominates every (ε, δ)-DP mechanism. Rounds of more than
    :data:`PLD_MAX_EPSILON` each (no privacy to speak of; their PLDs overflow or need
    ε/10⁻⁴ grid points) are added by basic composition, as RDP does for rounds without
    a curve.
``best``
    The smallest ε among the valid methods at the requested δ.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from .budget import COMPOSITION_METHODS
from .entry import LedgerEntry, PrivacyCost
from .events import event_key, pld, rdp_curve, rdp_orders
from .validation import check_delta

__all__ = ["Block", "blocks", "compose", "basic", "advanced", "rdp", "pld_total", "best", "PLD_MAX_EPSILON"]

#: Largest ε per round that ``pld`` builds a privacy-loss distribution for (see the module docstring).
PLD_MAX_EPSILON = 50.0


@dataclass(frozen=True)
class Block:
    """``rounds`` identical rounds, each the parallel composition of ``members``."""

    rounds: int
    members: tuple[LedgerEntry, ...]

    @property
    def epsilon(self) -> float:
        return max(e.epsilon for e in self.members)

    @property
    def delta(self) -> float:
        return max(e.delta for e in self.members)


def blocks(entries: Iterable[LedgerEntry]) -> list[Block]:
    """Split entries into blocks of identical rounds (see the module docstring)."""
    out: list[Block] = []
    groups: dict[str, list[LedgerEntry]] = defaultdict(list)
    for e in entries:
        if e.parallel_group is None:
            out.append(Block(e.count, (e,)))
        else:
            groups[e.parallel_group].append(e)
    for members in groups.values():
        previous = 0
        for c in sorted({m.count for m in members}):
            active = tuple(m for m in members if m.count >= c)
            out.append(Block(c - previous, active))
            previous = c
    return out


def basic(entries: Iterable[LedgerEntry]) -> PrivacyCost:
    """Basic composition: sums over rounds, parallel groups cost their max."""
    eps = 0.0
    delta = 0.0
    for b in blocks(entries):
        eps += b.rounds * b.epsilon
        delta += b.rounds * b.delta
    return PrivacyCost(eps, min(delta, 1.0))


def _require_delta(delta: float | None, method: str) -> float:
    if delta is None:
        raise ValueError(f"method={method!r} needs a target delta: pass delta=, e.g. delta=1e-6.")
    d = check_delta(delta)
    return d


def advanced(entries: Iterable[LedgerEntry], delta: float | None) -> PrivacyCost:
    """Advanced composition (heterogeneous Dwork–Rothblum–Vadhan) at total δ = ``delta``.

    The slack δ′ is what remains of ``delta`` after the entries' own δ's; a ledger
    whose own δ's already use it all gets ε = inf.
    """
    target = _require_delta(delta, "advanced")
    sum_sq = 0.0
    drift = 0.0
    own_delta = 0.0
    for b in blocks(entries):
        e = b.epsilon
        sum_sq += b.rounds * e * e
        drift += b.rounds * e * (math.expm1(e) if e < 709.0 else math.inf)  # e^ε overflows: the bound is infinite
        own_delta += b.rounds * b.delta
    slack = target - own_delta
    if sum_sq == 0:
        return PrivacyCost(0.0, own_delta)
    if slack <= 0:
        return PrivacyCost(math.inf, target)
    return PrivacyCost(math.sqrt(2 * math.log(1 / slack) * sum_sq) + drift, target)


def _rdp_split(entries: Sequence[LedgerEntry], neighbouring: str) -> tuple[np.ndarray | None, PrivacyCost]:
    """Total RDP curve of the rounds that have one, and the basic cost of the rest."""
    total = None
    rest_eps = rest_delta = 0.0
    for b in blocks(entries):
        curves = [rdp_curve(m.event, m.epsilon, m.delta, neighbouring) for m in b.members]
        if any(c is None for c in curves):
            rest_eps += b.rounds * b.epsilon
            rest_delta += b.rounds * b.delta
            continue
        curve = b.rounds * np.max(np.vstack(curves), axis=0)
        total = curve if total is None else total + curve
    return total, PrivacyCost(rest_eps, rest_delta)


def rdp(entries: Sequence[LedgerEntry], delta: float | None, neighbouring: str = "replace") -> PrivacyCost:
    """Rényi-DP accounting through dp-accounting, at total δ = ``delta`` (> 0)."""
    from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon

    target = _require_delta(delta, "rdp")
    curve, rest = _rdp_split(entries, neighbouring)
    if curve is None:
        return rest if rest.delta <= target else PrivacyCost(math.inf, target)
    slack = target - rest.delta
    if slack <= 0:
        return PrivacyCost(math.inf, target)
    eps, _order = compute_epsilon(rdp_orders(), curve, slack)
    return PrivacyCost(float(eps) + rest.epsilon, target)


def pld_total(
    entries: Sequence[LedgerEntry], delta: float | None, neighbouring: str = "replace", *, discretization: float = 1e-4
) -> PrivacyCost:
    """Privacy-loss-distribution accounting through dp-accounting at total δ = ``delta``.

    ``delta=None`` means 0. At δ = 0 the tight total of pure-ε mechanisms *is* the
    basic sum (the worst-case losses add up), and a discretised PLD cannot certify
    an exact zero, so the pure total is returned. Identical rounds are
    self-composed, so cost grows with the number of *distinct* events, not counts.
    """
    target = 0.0 if delta is None else check_delta(delta)
    if target == 0.0:
        pure = basic(entries)
        return pure if pure.delta == 0 else PrivacyCost(math.inf, 0.0)
    combined = None
    merged: dict[str, tuple[object, int]] = {}
    rest_eps = rest_delta = 0.0
    for b in blocks(entries):
        if b.epsilon > PLD_MAX_EPSILON:  # no PLD for it (module docstring): composed by basic composition
            rest_eps += b.rounds * b.epsilon
            rest_delta += b.rounds * b.delta
            continue
        if len(b.members) == 1 or len({(event_key(m.event), m.epsilon, m.delta) for m in b.members}) == 1:
            m = b.members[0]
            key = event_key(m.event) + f"|{m.epsilon!r}|{m.delta!r}"
            args = (m.event, m.epsilon, m.delta)
        else:  # a heterogeneous parallel block: the (max ε, max δ) worst case dominates it
            key = f"null|{b.epsilon!r}|{b.delta!r}"
            args = (None, b.epsilon, b.delta)
        previous = merged.get(key)
        merged[key] = (args, b.rounds + (previous[1] if previous else 0))
    for (event, eps, dlt), rounds in merged.values():
        if eps == 0 and dlt == 0:
            continue
        dist = pld(event, eps, dlt, neighbouring, discretization=discretization)
        if rounds > 1:
            dist = dist.self_compose(rounds)
        combined = dist if combined is None else combined.compose(dist)
    if rest_delta >= target:
        return PrivacyCost(math.inf, target)
    if combined is None:
        return PrivacyCost(rest_eps, rest_delta)
    return PrivacyCost(float(combined.get_epsilon_for_delta(target - rest_delta)) + rest_eps, target)


def best(entries: Sequence[LedgerEntry], delta: float | None, neighbouring: str = "replace") -> PrivacyCost:
    """The smallest ε over the valid methods with total δ ≤ ``delta``.

    With ``delta=None`` the target is the basic total δ (so a pure-ε ledger gets the
    tightest pure-ε total).
    """
    base = basic(entries)
    target = base.delta if delta is None else check_delta(delta)
    candidates = [base] if base.delta <= target else []
    if target > 0:
        candidates.append(advanced(entries, target))
        candidates.append(rdp(entries, target, neighbouring))
    candidates.append(pld_total(entries, target, neighbouring))
    valid = [c for c in candidates if c.delta <= target * (1 + 1e-12) + 1e-300]
    return min(valid, key=lambda c: c.epsilon)


def compose(entries: Sequence[LedgerEntry], method: str = "basic", delta: float | None = None, neighbouring: str = "replace") -> PrivacyCost:
    """Total cost of ``entries`` under ``method`` (one of :data:`COMPOSITION_METHODS`)."""
    if method == "basic":
        return basic(entries)
    if method == "advanced":
        return advanced(entries, delta)
    if method == "rdp":
        return rdp(entries, delta, neighbouring)
    if method == "pld":
        return pld_total(entries, delta, neighbouring)
    if method == "best":
        return best(entries, delta, neighbouring)
    raise ValueError(f"method must be one of {COMPOSITION_METHODS}, got {method!r}.")
