"""Reservations: budget held for a spend in progress, so that checking, drawing and recording are one step.

A mechanism that draws noise must not let anything else spend the room it checked
between its check and its record. :meth:`PrivacyLedger.reserve
<pymc_dp.accounting.PrivacyLedger.reserve>` checks the budget against everything
recorded *plus every outstanding reservation* and holds the room under the ledger's
lock; :meth:`Reservation.commit` records what was actually spent and releases the
reservation in the same locked step; :meth:`Reservation.cancel` gives the room back.

::

    with ledger.reserve([entry], what="the release of y") as r:
        noisy = draw()      # the budget for it is held; no other thread can take it
        r.commit()          # recorded; leaving the block without commit() cancels
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from .entry import LedgerEntry

if TYPE_CHECKING:  # pragma: no cover
    from .ledger import PrivacyLedger

__all__ = ["Reservation", "LedgerOwnershipError"]


class LedgerOwnershipError(RuntimeError):
    """A spend was attempted on a copy of a ledger outside the process that owns it.

    The ledger of record lives in one process. A copy that reached another process
    (pickled into a worker, or inherited by a fork) can be read, but a spend recorded
    there would be lost to the ledger of record, so it is refused.
    """


class Reservation:
    """Budget held by :meth:`PrivacyLedger.reserve <pymc_dp.accounting.PrivacyLedger.reserve>` for a spend in progress.

    Not created directly. Outstanding reservations count against the budget in every
    check of the ledger until they are committed or cancelled. Use it as a context
    manager: leaving the ``with`` block without :meth:`commit` (normally or by an
    exception) cancels it.

    Attributes
    ----------
    entries : tuple of LedgerEntry
        The reserved entries.
    what : str
        What the reservation is for (used in messages).
    """

    __slots__ = ("_ledger", "entries", "what", "_state")

    def __init__(self, ledger: "PrivacyLedger", entries: Sequence[LedgerEntry], what: str):
        self._ledger = ledger
        self.entries: tuple[LedgerEntry, ...] = tuple(entries)
        self.what = what
        self._state = "open"

    # ------------------------------------------------------------------ state
    @property
    def open(self) -> bool:
        """Whether the reservation still holds budget (neither committed nor cancelled)."""
        return self._state == "open"

    @property
    def committed(self) -> bool:
        """Whether :meth:`commit` has recorded the spend."""
        return self._state == "committed"

    @property
    def cancelled(self) -> bool:
        """Whether the reservation was cancelled (nothing recorded)."""
        return self._state == "cancelled"

    # ------------------------------------------------------------------ actions
    def commit(self, entries: Sequence[LedgerEntry] | None = None) -> tuple[LedgerEntry, ...]:
        """Record what was actually spent and release the reservation, in one locked step.

        Parameters
        ----------
        entries
            The entries to record; default: the reserved entries. Each must be valid
            for the ledger (as for :meth:`~pymc_dp.accounting.PrivacyLedger.record`),
            and together they must cost no more than was reserved: their basic total
            may not exceed the reserved basic total in ε or δ and, under a budget
            composed by a tighter method, the ledger's total with them in place of
            the reservation must still fit the budget. Give fewer or cheaper entries
            when the spend stopped early (e.g. ``count`` runs of a planned larger
            count).

        Returns
        -------
        tuple of LedgerEntry
            The recorded entries.

        Raises
        ------
        RuntimeError
            If the reservation was already committed or was cancelled.
        ValueError
            If an entry is invalid for the ledger or the entries cost more than was
            reserved (a programming error: reserve what the spend may cost). The
            reservation stays open and nothing is recorded.
        LedgerOwnershipError
            In a process that does not own the ledger.
        """
        return self._ledger._commit_reservation(self, entries)

    def cancel(self) -> None:
        """Give the reserved budget back; nothing is recorded.

        Idempotent, and a no-op after :meth:`commit`. Cancel only when nothing was
        spent: once noise has been drawn, commit what it cost.
        """
        self._ledger._cancel_reservation(self)

    # ------------------------------------------------------------------ context manager
    def __enter__(self) -> "Reservation":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        if self._state == "open":
            self.cancel()
        return False

    def __reduce__(self) -> Any:
        raise TypeError(
            "a Reservation cannot be pickled or copied: it holds budget in the ledger of the process "
            "that made it; commit or cancel it there."
        )

    def __repr__(self) -> str:
        cost = sum(e.basic_cost.epsilon for e in self.entries)
        return f"Reservation({len(self.entries)} entries, ε≤{cost:.6g} (basic), {self.what!r}, {self._state})"
