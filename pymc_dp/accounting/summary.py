"""A readable, fixed-width table of a ledger (used by ``summary()`` and ``pymc-dp ledger``)."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from .ledger import PrivacyLedger

__all__ = ["format_summary"]


def _fmt(x: float) -> str:
    return f"{x:.4g}"


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths))
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    return out


def _fitted_accountants(ledger: "PrivacyLedger") -> list[tuple[str, float]]:
    """The tight (accountant, δ) pairs that entries say their run was fitted to (``details["fitted_to"]``)."""
    found = []
    for e in ledger.entries:
        fitted = (e.details or {}).get("fitted_to")
        if isinstance(fitted, Mapping) and fitted.get("accountant") not in (None, "basic") and fitted.get("delta", 0) > 0:
            pair = (str(fitted["accountant"]), float(fitted["delta"]))
            if pair not in found:
                found.append(pair)
    return found


def format_summary(ledger: "PrivacyLedger", method: str = "basic", delta: float | None = None) -> str:
    """Format ``ledger`` as a table: one row per entry, then the totals and the budget."""
    # "parallel": the entry's parallel-composition label (entries on disjoint records); a release split by group is
    # one entry whose noise covers all its groups ("within N groups"). Assumptions are numbered once, listed below.
    headers = ["#", "mechanism", "touched", "ε", "δ", "count", "ε×count", "parallel", "noise", "assumptions"]
    numbered: dict[str, int] = {}
    rows = []
    for i, e in enumerate(ledger.entries, 1):
        refs = [f"A{numbered.setdefault(a, len(numbered) + 1)}" for a in e.assumptions]
        rows.append([
            str(i), e.mechanism, e.touched or "-", _fmt(e.epsilon), _fmt(e.delta), str(e.count),
            _fmt(e.count * e.epsilon), _parallel(e), e.noise_source, ", ".join(refs) or "-",
        ])
    lines = [f"Privacy ledger: {len(ledger)} entr{'y' if len(ledger) == 1 else 'ies'}, neighbouring = {ledger.neighbouring}"]
    lines += _table(headers, rows) if rows else ["(no spends recorded)"]
    b = ledger.total()
    lines.append(f"Total (basic composition): ε = {_fmt(b.epsilon)}, δ = {_fmt(b.delta)}")
    if method != "basic":
        t = ledger.total(method, delta)
        lines.append(f"Total ({method}): ε = {_fmt(t.epsilon)}, δ = {_fmt(t.delta)}")
    elif ledger.budget is not None and ledger.budget.method != "basic":
        t = ledger.spent
        lines.append(
            f"Total ({ledger.budget.method} at δ = {_fmt(ledger.budget.delta)}, the budget's accountant): "
            f"ε = {_fmt(t.epsilon)}, δ = {_fmt(t.delta)}"
        )
    else:
        for accountant, fitted_delta in _fitted_accountants(ledger):
            t = ledger.total(accountant, fitted_delta)
            lines.append(
                f"Total ({accountant} at δ = {_fmt(fitted_delta)}, as a run was fitted): ε = {_fmt(t.epsilon)}, "
                f"δ = {_fmt(t.delta)}"
            )
    if ledger.budget is not None:
        s = ledger.spent
        over = "" if ledger.budget.allows(s) else " — OVER BUDGET (spends made under separate budgets were combined)"
        lines.append(
            f"Budget: ε = {_fmt(ledger.budget.epsilon)}, δ = {_fmt(ledger.budget.delta)} ({ledger.budget.method}); "
            f"spent ε = {_fmt(s.epsilon)}, δ = {_fmt(s.delta)}{over}"
        )
    if numbered:
        lines.append("Assumptions (of the guarantee, and of how the posterior reads the releases):")
        for text, k in numbered.items():
            lines += textwrap.wrap(text, WRAP, initial_indent=f"  A{k}  ".ljust(7), subsequent_indent=" " * 7,
                                   break_on_hyphens=False)
    return "\n".join(lines)


#: the width the assumptions below the table are wrapped at
WRAP = 100


def _parallel(entry) -> str:
    """The parallel column: the entry's parallel-composition label, or the groups one release by group covers."""
    if entry.parallel_group:
        return str(entry.parallel_group)
    groups = (entry.details or {}).get("groups")
    return f"within {groups} groups" if isinstance(groups, int) else "-"
