"""Privacy budgets and the error raised when a spend would exceed one."""

from __future__ import annotations

from dataclasses import dataclass

from .entry import PrivacyCost
from .validation import check_delta, check_epsilon

__all__ = ["Budget", "BudgetExceededError", "COMPOSITION_METHODS"]

#: The composition methods :meth:`PrivacyLedger.total` understands.
COMPOSITION_METHODS = ("basic", "advanced", "rdp", "pld", "best")


@dataclass(frozen=True)
class Budget:
    """A total privacy budget: everything recorded must stay (epsilon, delta)-DP.

    Parameters
    ----------
    epsilon
        The total ε that may be spent (> 0).
    delta
        The total δ that may be spent (in [0, 1)); 0 means pure ε-DP.
    method
        How the ledger composes its entries when checking the budget: ``"basic"``
        (the default: sums, parallel groups cost their max), or one of the tighter
        methods of :meth:`PrivacyLedger.total`. ``"advanced"``, ``"rdp"`` and
        ``"pld"`` need ``delta > 0``.

    Notes
    -----
    A budget that refuses the spend which would overflow it is a *privacy filter*.
    Basic composition is a valid filter even when each spend's ε is chosen after
    seeing earlier outputs (Rogers, Roth, Ullman & Vadhan 2016). The tight methods
    re-optimise their conversion to (ε, δ) after every spend; that is valid when the
    sequence of spends is fixed in advance (as for an MCMC run whose per-step cost
    is set before it starts), but not for spends chosen adaptively from earlier
    outputs, where the known filters for them are weaker (Feldman & Zrnic 2021).
    Use the default ``"basic"`` for an interactive, adaptive analysis.
    """

    epsilon: float
    delta: float = 0.0
    method: str = "basic"

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon, "budget epsilon"))
        object.__setattr__(self, "delta", check_delta(self.delta, "budget delta"))
        if self.method not in COMPOSITION_METHODS:
            raise ValueError(f"Budget method must be one of {COMPOSITION_METHODS}, got {self.method!r}.")
        if self.method in ("advanced", "rdp", "pld") and self.delta == 0:
            raise ValueError(
                f"Budget(method={self.method!r}) needs delta > 0 (these accountants trade a small δ "
                "for a smaller ε); use method='basic' for a pure ε budget."
            )

    def allows(self, cost: PrivacyCost, *, rtol: float = 1e-12) -> bool:
        """Whether a total ``cost`` fits within this budget (up to float rounding)."""
        return cost.epsilon <= self.epsilon * (1 + rtol) and cost.delta <= self.delta * (1 + rtol) + 1e-300


class BudgetExceededError(RuntimeError):
    """A spend was refused because it would exceed the ledger's budget.

    Raised *before* any noise is drawn or any step runs; the ledger is unchanged.
    ``budget``, ``spent``, ``requested`` and ``would_total`` hold the numbers, and
    ``reserved`` the basic total held by outstanding reservations (spends in
    progress, see :meth:`PrivacyLedger.reserve <pymc_dp.accounting.PrivacyLedger.reserve>`)
    that counted against the budget, or ``None`` when there were none.
    """

    def __init__(
        self,
        budget: Budget,
        spent: PrivacyCost,
        requested: PrivacyCost,
        would_total: PrivacyCost,
        what: str,
        reserved: PrivacyCost | None = None,
    ):
        self.budget = budget
        self.spent = spent
        self.requested = requested
        self.would_total = would_total
        self.reserved = reserved
        held = "" if reserved is None else (
            f"; reserved by spends in progress (ε={reserved.epsilon:.6g}, δ={reserved.delta:.3g})"
        )
        super().__init__(
            f"privacy budget exceeded: budget is (ε={budget.epsilon:g}, δ={budget.delta:g}) composed by "
            f"{budget.method!r}; already spent (ε={spent.epsilon:.6g}, δ={spent.delta:.3g}){held}; "
            f"{what} asks for (ε={requested.epsilon:.6g}, δ={requested.delta:.3g}), which would make "
            f"(ε={would_total.epsilon:.6g}, δ={would_total.delta:.3g}). Nothing was drawn or recorded. "
            "Lower epsilon, reuse an earlier release (post-processing is free), or raise the budget."
        )
