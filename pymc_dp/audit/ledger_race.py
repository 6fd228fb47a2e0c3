"""An audit of the ledger itself: concurrent spends must never pass the budget together.

A privacy ledger shared by threads (a notebook kernel serving several requests, a
web service) is only a guarantee if checking the budget, drawing the noise and
recording the spend are one atomic step. :func:`audit_concurrent_spends` starts
threads together on one ledger, each releasing a Laplace-noised value whose ε fits the
budget alone but not twice, and counts the trials in which more than one released.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from ..accounting import Budget, BudgetExceededError, PrivacyLedger
from ..mechanisms import laplace_mechanism

__all__ = ["RaceAuditResult", "audit_concurrent_spends"]


@dataclass(frozen=True)
class RaceAuditResult:
    """The outcome of :func:`audit_concurrent_spends`.

    Attributes
    ----------
    trials
        Trials run.
    overspent
        Trials in which the ledger released more than its budget allows.
    method
        The budget's composition method.
    """

    trials: int
    overspent: int
    method: str

    @property
    def passed(self) -> bool:
        """No trial overspent."""
        return self.overspent == 0

    def __str__(self) -> str:
        verdict = "pass" if self.passed else "FAIL"
        return (
            f"ledger under concurrent spends ({self.method} budget ε = 1, two threads asking 0.8 each): "
            f"{self.overspent} of {self.trials} trials released both - {verdict}"
        )


def audit_concurrent_spends(trials: int = 10, *, method: str = "pld", threads: int = 2) -> RaceAuditResult:
    """Spend from one ledger in several threads at once; count trials where the budget was exceeded.

    Each trial makes a ledger with a budget of ε = 1 (composed by ``method``) and
    starts ``threads`` threads together, each releasing one value with the Laplace
    mechanism at ε = 0.8 (seeded noise: the noise is not what is audited). At most
    one may release; a trial where two did is an overspend.

    Parameters
    ----------
    trials
        How many trials (>= 1).
    method
        The budget's composition method (``"basic"``, ``"rdp"``, ``"pld"``, ...).
    threads
        Threads per trial (>= 2).

    Returns
    -------
    RaceAuditResult
    """
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        raise ValueError(f"trials must be a whole number >= 1, got {trials!r}.")
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 2:
        raise ValueError(f"threads must be a whole number >= 2, got {threads!r}.")
    overspent = 0
    for trial in range(trials):
        delta = 1e-6 if method != "basic" else 0.0
        ledger = PrivacyLedger(budget=Budget(epsilon=1.0, delta=delta, method=method))
        barrier = threading.Barrier(threads)
        released: list[int] = []

        def spend(i: int) -> None:
            barrier.wait()
            try:
                laplace_mechanism(1.0, epsilon=0.8, sensitivity=1.0, ledger=ledger, rng=trial * threads + i)
            except BudgetExceededError:
                return
            released.append(i)

        pool = [threading.Thread(target=spend, args=(i,)) for i in range(threads)]
        for t in pool:
            t.start()
        for t in pool:
            t.join()
        if len(released) > 1 or len(ledger) > 1:
            overspent += 1
    return RaceAuditResult(trials, overspent, method)
