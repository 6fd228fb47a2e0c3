"""The privacy ledger: every spend, checked against the budget before it happens.

Concurrency
-----------
Every read-modify-write of a ledger (checking, reserving, recording, repeating)
runs under the ledger's lock (a :class:`threading.RLock`), and budget checks count
the entries recorded *plus every outstanding reservation*: two threads spending
from one ledger cannot both pass the check for room that only one of them fits in.
A mechanism that draws noise holds its budget with :meth:`PrivacyLedger.reserve`
(or :meth:`PrivacyLedger.charge`, which reserves, runs the body and commits) for
the whole time it draws.

The ledger of record lives in the process that created it. A copy in another
process (pickled into a worker, or inherited by a fork) can be read, but refuses
to spend (:class:`~pymc_dp.accounting.reservation.LedgerOwnershipError`).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import threading
import warnings
import weakref
from collections.abc import Mapping as _MappingABC
from contextlib import contextmanager
from typing import Any, Iterable, Iterator, Mapping, Sequence

from .budget import Budget, BudgetExceededError
from .composition import basic, compose
from .entry import LedgerEntry, PrivacyCost
from .events import check_entry_consistency
from .integrity import SIGNATURE_ALGORITHM, ledger_digest, sign, verify_signature
from .reservation import LedgerOwnershipError, Reservation
from .validation import MAX_COUNT, check_count, check_neighbouring

__all__ = ["PrivacyLedger", "resolve_ledger", "Reservation", "LedgerOwnershipError"]

_FORMAT = "pymc_dp.ledger"
_VERSION = 2

# Every live ledger, so that a forked child gets fresh locks (a lock held by another
# thread of the parent at the fork would otherwise stay held in the child forever).
# (Keyed by id: ledgers compare by content and are unhashable.)
_LIVE: "weakref.WeakValueDictionary[int, PrivacyLedger]" = weakref.WeakValueDictionary()


def _fresh_locks_after_fork() -> None:  # pragma: no cover - runs in forked children
    for ledger in list(_LIVE.values()):
        ledger._lock = threading.RLock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_fresh_locks_after_fork)


def _entries_argument(entries: Any, where: str) -> tuple[LedgerEntry, ...]:
    """``entries`` as a tuple; a single entry, a string or a mapping is refused (a sequence is wanted)."""
    if isinstance(entries, (LedgerEntry, str, bytes, _MappingABC)) or not hasattr(entries, "__iter__"):
        raise ValueError(
            f"{where} takes a sequence of LedgerEntry objects, got {type(entries).__name__}; "
            "wrap a single entry in a list: [entry]."
        )
    return tuple(entries)


class PrivacyLedger:
    """A record of every privacy spend on one data set, with an optional budget.

    Parameters
    ----------
    budget
        If given, every spend is checked *before* it happens: a spend that would
        take the composed total (under ``budget.method``) past the budget raises
        :class:`BudgetExceededError` and nothing is drawn or recorded.
    neighbouring
        The neighbouring relation all entries are stated under: ``"replace"``
        (bounded DP, the default; N is public) or ``"add_remove"``.

    Notes
    -----
    A ledger is safe to share between threads: checking, reserving, recording and
    repeating run under one lock, and every budget check counts outstanding
    reservations (:meth:`reserve`) as well as recorded entries. It belongs to the
    process that created it: a copy in another process can be read but refuses to
    spend (:class:`~pymc_dp.accounting.reservation.LedgerOwnershipError`). Copies
    (``copy.copy``, ``copy.deepcopy``, ``pickle``) hold the recorded entries but no
    reservations (those belong to the code holding them, which commits them to the
    original).

    Examples
    --------
    >>> ledger = PrivacyLedger(budget=Budget(epsilon=1.0))
    >>> entry = ledger.spend("laplace", epsilon=0.5, touched="y:count")
    >>> ledger.total()
    PrivacyCost(epsilon=0.5, delta=0.0)
    """

    def __init__(self, budget: Budget | None = None, neighbouring: str = "replace"):
        if budget is not None and not isinstance(budget, Budget):
            raise ValueError(f"budget must be a pmdp.Budget or None, got {type(budget).__name__}.")
        self.budget = budget
        self.neighbouring = check_neighbouring(neighbouring)
        self._entries: list[LedgerEntry] = []
        self._index: dict[str, int] = {}
        self._basic_cache: PrivacyCost | None = PrivacyCost(0.0, 0.0)
        self._lock = threading.RLock()
        self._owner_pid: int | None = os.getpid()
        self._reservations: dict[Reservation, None] = {}  # outstanding, oldest first
        self._reserved_ids: dict[str, Reservation] = {}
        _LIVE[id(self)] = self

    # ------------------------------------------------------------------ copies and processes
    def __getstate__(self) -> dict[str, Any]:
        with self._lock:
            state = self.__dict__.copy()
            state["_entries"] = list(self._entries)
            state["_index"] = dict(self._index)
        del state["_lock"]
        state["_reservations"] = {}
        state["_reserved_ids"] = {}
        return state

    def __setstate__(self, state: Mapping[str, Any]) -> None:
        self.__dict__.update(state)
        self.__dict__.setdefault("_owner_pid", None)  # pickled before owners were recorded: nobody's
        self._lock = threading.RLock()
        self._reservations = {}
        self._reserved_ids = {}
        _LIVE[id(self)] = self

    @property
    def owner_pid(self) -> int | None:
        """The id of the process that owns this ledger (the only one where it can spend)."""
        return self._owner_pid

    def _check_owner(self, action: str) -> None:
        pid = os.getpid()
        if self._owner_pid != pid:
            owner = "an unknown process" if self._owner_pid is None else f"process {self._owner_pid}"
            raise LedgerOwnershipError(
                f"cannot {action} here: this ledger is a copy in process {pid}, and the ledger of record belongs "
                f"to {owner}. Spends must be made through the ledger in the process that owns it: a spend "
                "recorded in a copy (e.g. in a PyMC worker process) would be lost to the ledger of record. "
                "Reading the copy is fine."
            )

    # ------------------------------------------------------------------ reading
    @property
    def entries(self) -> tuple[LedgerEntry, ...]:
        """All entries, oldest first."""
        with self._lock:
            return tuple(self._entries)

    @property
    def reserved(self) -> tuple[LedgerEntry, ...]:
        """The entries held by outstanding reservations (:meth:`reserve`), oldest first.

        They are not spent (not in :attr:`entries` or :meth:`total`) but count
        against the budget in every check until committed or cancelled.
        """
        with self._lock:
            return tuple(e for r in self._reservations for e in r.entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[LedgerEntry]:
        return iter(self.entries)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PrivacyLedger):
            return NotImplemented
        return (
            self.entries == other.entries
            and self.budget == other.budget
            and self.neighbouring == other.neighbouring
        )

    def __repr__(self) -> str:
        spent = self.total()
        return (
            f"PrivacyLedger({len(self)} entries, spent ε={spent.epsilon:.6g}, δ={spent.delta:.3g} (basic), "
            f"budget={self.budget!r}, neighbouring={self.neighbouring!r})"
        )

    def __getitem__(self, entry_id: str) -> LedgerEntry:
        with self._lock:
            try:
                return self._entries[self._index[entry_id]]
            except KeyError:
                raise KeyError(f"no ledger entry with id {entry_id!r}") from None

    def total(self, method: str = "basic", delta: float | None = None) -> PrivacyCost:
        """The total cost of everything recorded.

        Parameters
        ----------
        method
            ``"basic"`` (sums; parallel groups cost their max), ``"advanced"``
            (Dwork–Rothblum–Vadhan), ``"rdp"`` (Rényi DP) and ``"pld"``
            (privacy-loss distributions) through Google's dp-accounting, or
            ``"best"`` (the tightest of those valid at ``delta``). See
            :mod:`pymc_dp.accounting.composition` for the formulas.
        delta
            The total δ to report ε at; needed by ``"advanced"`` and ``"rdp"``,
            optional for ``"pld"`` (0) and ``"best"`` (the basic δ), ignored by
            ``"basic"``.

        Returns
        -------
        PrivacyCost
            Named tuple ``(epsilon, delta)``: everything recorded is jointly
            (epsilon, delta)-DP. Outstanding reservations are not included.
        """
        with self._lock:
            if method == "basic":
                if self._basic_cache is None:
                    self._basic_cache = basic(self._entries)
                return self._basic_cache
            entries = list(self._entries)
        return compose(entries, method, delta, self.neighbouring)

    @property
    def spent(self) -> PrivacyCost:
        """The total under the budget's method (basic when there is no budget)."""
        if self.budget is None:
            return self.total()
        return self.total(self.budget.method, self.budget.delta if self.budget.method != "basic" else None)

    def remaining(self) -> PrivacyCost | None:
        """Budget left under its method (``None`` without a budget). Exact for ``basic``;
        for the tight methods it is the headroom of the total, not a promise that one more
        spend of that size fits (their composition is not additive). Outstanding
        reservations (:attr:`reserved`) are not subtracted: they may yet be cancelled."""
        if self.budget is None:
            return None
        s = self.spent
        return PrivacyCost(max(0.0, self.budget.epsilon - s.epsilon), max(0.0, self.budget.delta - s.delta))

    # ------------------------------------------------------------------ checking
    def _make_entry(self, mechanism: str, epsilon: float, delta: float, **kwargs: Any) -> LedgerEntry:
        kwargs.setdefault("neighbouring", self.neighbouring)
        return LedgerEntry(mechanism=mechanism, epsilon=epsilon, delta=delta, **kwargs)

    def _candidate_total(self, entries: Sequence[LedgerEntry]) -> PrivacyCost:
        assert self.budget is not None
        method = self.budget.method
        if method == "basic":
            return basic(entries)
        return compose(entries, method, self.budget.delta, self.neighbouring)

    def _validate(self, entry: LedgerEntry, *, reservation: Reservation | None = None) -> None:
        """Refuse an entry this ledger cannot hold; ids held by ``reservation`` count as free."""
        if not isinstance(entry, LedgerEntry):
            raise ValueError(f"expected a LedgerEntry, got {type(entry).__name__}.")
        if entry.neighbouring != self.neighbouring:
            raise ValueError(
                f"entry is stated under neighbouring={entry.neighbouring!r} but this ledger uses "
                f"{self.neighbouring!r}; recompute the sensitivity under the ledger's relation."
            )
        if entry.id in self._index:
            raise ValueError(f"entry {entry.id} is already in this ledger.")
        holder = self._reserved_ids.get(entry.id)
        if holder is not None and holder is not reservation:
            raise ValueError(
                f"entry {entry.id} is reserved by a spend in progress ({holder.what}); it is recorded when that "
                "reservation is committed."
            )
        check_entry_consistency(entry.epsilon, entry.delta, entry.event)

    def _fast_basic_candidate(self, entry: LedgerEntry) -> PrivacyCost | None:
        if entry.parallel_group is not None or self._basic_cache is None:
            return None
        cur = self._basic_cache
        add = entry.basic_cost
        return PrivacyCost(cur.epsilon + add.epsilon, min(1.0, cur.delta + add.delta))

    def _held(self, skip: Reservation | None = None) -> list[LedgerEntry]:
        """The entries of every outstanding reservation but ``skip``."""
        return [e for r in self._reservations if r is not skip for e in r.entries]

    def _would_total(
        self,
        extra: Sequence[LedgerEntry],
        *,
        skip: Reservation | None = None,
        replace: tuple[int, LedgerEntry] | None = None,
    ) -> PrivacyCost:
        """The budget-method total of recorded (one replaced) + reserved (but ``skip``) + ``extra`` entries."""
        held = self._held(skip)
        if (
            self.budget.method == "basic"
            and replace is None
            and self._basic_cache is not None
            and all(e.parallel_group is None for e in held)
            and all(e.parallel_group is None for e in extra)
        ):
            eps, delta = self._basic_cache
            for e in (*held, *extra):
                add = e.basic_cost
                eps, delta = eps + add.epsilon, min(1.0, delta + add.delta)
            return PrivacyCost(eps, delta)
        recorded = list(self._entries)
        if replace is not None:
            recorded[replace[0]] = replace[1]
        return self._candidate_total([*recorded, *held, *extra])

    def _refuse(self, requested: PrivacyCost, total: PrivacyCost, what: str) -> BudgetExceededError:
        held = self._held()
        return BudgetExceededError(self.budget, self.spent, requested, total, what, basic(held) if held else None)

    def _check_fits(self, entries: Sequence[LedgerEntry], what: str, requested: PrivacyCost | None = None) -> None:
        if self.budget is None or not entries:
            return
        total = self._would_total(entries)
        if not self.budget.allows(total):
            raise self._refuse(requested if requested is not None else basic(entries), total, what)

    def _check_budget(self, entry: LedgerEntry, what: str) -> None:
        self._check_fits([entry], what, entry.basic_cost)

    @staticmethod
    def _describe(entries: Sequence[LedgerEntry]) -> str:
        if len(entries) == 1:
            return f"{entries[0].mechanism!r} on {entries[0].touched or 'the data'}"
        return f"{len(entries)} spends together"

    def check(self, entry: LedgerEntry) -> None:
        """Raise :class:`BudgetExceededError` if recording ``entry`` would exceed the budget.

        Counts the recorded entries and every outstanding reservation. Also raises
        ``ValueError`` for an entry this ledger cannot hold. Changes nothing; to keep
        the room until the spend is recorded, :meth:`reserve` it instead.

        Parameters
        ----------
        entry
            The spend to check.
        """
        with self._lock:
            self._validate(entry)
            self._check_budget(entry, self._describe([entry]))

    def check_all(self, entries: Sequence[LedgerEntry]) -> None:
        """Raise :class:`BudgetExceededError` unless *all* of ``entries`` fit together.

        For an operation that spends several times (e.g. privatising every observed
        variable of a model): check the whole before the first spend, so a refusal
        leaves nothing half-spent. Counts the recorded entries and every outstanding
        reservation. Changes nothing; to keep the room, :meth:`reserve` the entries.

        Parameters
        ----------
        entries
            The spends to check together.
        """
        entries = list(entries)
        with self._lock:
            for e in entries:
                self._validate(e)
            self._check_fits(entries, f"{len(entries)} spends together")

    # ------------------------------------------------------------------ spending
    def reserve(self, entries: Sequence[LedgerEntry], what: str | None = None) -> Reservation:
        """Hold budget for spends about to happen; return the :class:`Reservation`.

        Each entry is validated as :meth:`record` validates it, and the budget is
        checked against the recorded entries *plus every outstanding reservation*,
        all under the ledger's lock: if the entries do not fit, nothing is reserved.
        Until the reservation is committed (:meth:`Reservation.commit`, which records
        what was actually spent) or cancelled (:meth:`Reservation.cancel`), its
        entries count against the budget in every check, so no concurrent spend can
        take the room while the noise is drawn.

        Parameters
        ----------
        entries
            The entries the spend may record (e.g. one per statistic, or a step
            method's planned count): a sequence of :class:`LedgerEntry`.
        what
            What the spend is, for messages (default: the mechanism and what it
            touches, or the number of entries).

        Returns
        -------
        Reservation
            Also a context manager: leaving the ``with`` block without
            :meth:`Reservation.commit` cancels it, also on an exception.

        Raises
        ------
        BudgetExceededError
            If the entries do not fit the budget with what is recorded and reserved.
        ValueError
            For an entry the ledger cannot hold (wrong relation, an id already
            recorded or reserved, an id given twice, an (ε, δ) that understates its
            event), or ``entries`` that is not a sequence of entries.
        LedgerOwnershipError
            In a process that does not own the ledger.

        Examples
        --------
        >>> ledger = PrivacyLedger(budget=Budget(epsilon=1.0))
        >>> with ledger.reserve([LedgerEntry("laplace", 0.5)], what="y:sum") as r:
        ...     noisy = 42 + 0.0  # draw the noise here
        ...     recorded = r.commit()
        >>> ledger.total().epsilon
        0.5
        """
        entries = _entries_argument(entries, "reserve")
        with self._lock:
            self._check_owner("reserve budget")
            seen: set[str] = set()
            for e in entries:
                self._validate(e)
                if e.id in seen:
                    raise ValueError(f"entry {e.id} is given twice in one reservation.")
                seen.add(e.id)
            what = self._describe(entries) if what is None else str(what)
            self._check_fits(entries, what)
            reservation = Reservation(self, entries, what)
            self._reservations[reservation] = None
            for e in entries:
                self._reserved_ids[e.id] = reservation
            return reservation

    def _release(self, reservation: Reservation, state: str) -> None:
        del self._reservations[reservation]
        for e in reservation.entries:
            if self._reserved_ids.get(e.id) is reservation:
                del self._reserved_ids[e.id]
        reservation._state = state

    def _commit_reservation(
        self, reservation: Reservation, entries: Sequence[LedgerEntry] | None
    ) -> tuple[LedgerEntry, ...]:
        """:meth:`Reservation.commit`: check the entries, record them and release, under the lock."""
        with self._lock:
            self._check_owner("commit a reservation")
            if reservation._state == "committed":
                raise RuntimeError(
                    f"this reservation ({reservation.what}) was already committed; its spend is recorded once."
                )
            if reservation._state == "cancelled":
                raise RuntimeError(
                    f"this reservation ({reservation.what}) was cancelled and holds no budget; reserve again."
                )
            if reservation not in self._reservations:  # pragma: no cover - defensive
                raise ValueError("this reservation does not belong to this ledger.")
            if entries is None:
                chosen = reservation.entries
            else:
                chosen = _entries_argument(entries, "commit")
                seen: set[str] = set()
                for e in chosen:
                    self._validate(e, reservation=reservation)
                    if e.id in seen:
                        raise ValueError(f"entry {e.id} is given twice in one commit.")
                    seen.add(e.id)
                self._check_within_reservation(reservation, chosen)
            for e in chosen:
                self._append(e)
            self._release(reservation, "committed")
            return chosen

    def _check_within_reservation(self, reservation: Reservation, chosen: Sequence[LedgerEntry]) -> None:
        if chosen == reservation.entries:
            return
        got, held = basic(chosen), basic(reservation.entries)
        if got.epsilon > held.epsilon * (1 + 1e-12) or got.delta > held.delta * (1 + 1e-12) + 1e-300:
            raise ValueError(
                f"the entries committed cost (ε={got.epsilon:.6g}, δ={got.delta:.3g}) under basic composition, "
                f"more than was reserved (ε={held.epsilon:.6g}, δ={held.delta:.3g}) for {reservation.what}. "
                "Reserve what the spend may cost, then commit what it did cost. Nothing was recorded; the "
                "reservation is still open."
            )
        if self.budget is not None and self.budget.method != "basic":
            total = self._would_total(chosen, skip=reservation)
            if not self.budget.allows(total):
                raise ValueError(
                    f"the entries committed for {reservation.what} compose by {self.budget.method!r} to "
                    f"(ε={total.epsilon:.6g}, δ={total.delta:.3g}) with everything else recorded and reserved, past "
                    "the budget: they cost more than was reserved (their events compose worse than the reserved "
                    "ones). Nothing was recorded; the reservation is still open."
                )

    def _cancel_reservation(self, reservation: Reservation) -> None:
        """:meth:`Reservation.cancel`: release it without recording anything (no-op unless open)."""
        with self._lock:
            if reservation._state == "open" and reservation in self._reservations:
                self._release(reservation, "cancelled")

    def record(self, entry: LedgerEntry) -> LedgerEntry:
        """Check ``entry`` against the budget and append it, in one locked step; return it.

        Use this for entries built elsewhere (e.g. by
        :func:`~pymc_dp.accounting.amplify_by_subsampling`). The check counts
        outstanding reservations; a refused entry is not recorded.

        Parameters
        ----------
        entry
            The spend to record.

        Returns
        -------
        LedgerEntry
            ``entry`` itself.

        Raises
        ------
        BudgetExceededError
            If it does not fit the budget.
        ValueError
            For an entry the ledger cannot hold.
        LedgerOwnershipError
            In a process that does not own the ledger.
        """
        with self._lock:
            self._check_owner("record a spend")
            self.check(entry)
            self._append(entry)
        return entry

    def _append(self, entry: LedgerEntry) -> None:
        with self._lock:
            self._check_owner("record a spend")
            fast = self._fast_basic_candidate(entry)
            self._index[entry.id] = len(self._entries)
            self._entries.append(entry)
            self._basic_cache = fast  # None (recompute lazily) for grouped entries

    def spend(
        self,
        mechanism: str,
        epsilon: float,
        delta: float = 0.0,
        *,
        count: int = 1,
        touched: str = "",
        noise_source: str = "none",
        assumptions: Sequence[str] = (),
        parallel_group: str | None = None,
        event: Mapping[str, Any] | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> LedgerEntry:
        """Record a spend of (epsilon, delta), repeated ``count`` times; return its entry.

        The budget is checked first, counting outstanding reservations, and the
        entry recorded in the same locked step: if it would be exceeded,
        :class:`BudgetExceededError` is raised and nothing is recorded. See
        :class:`LedgerEntry` for the meaning of each argument.

        Returns
        -------
        LedgerEntry
            The recorded entry.
        """
        entry = self._make_entry(
            mechanism, epsilon, delta, count=count, touched=touched, noise_source=noise_source,
            assumptions=tuple(assumptions), parallel_group=parallel_group, event=event, details=details or {},
        )
        return self.record(entry)

    @contextmanager
    def charge(self, mechanism: str, epsilon: float, delta: float = 0.0, **kwargs: Any) -> Iterator[LedgerEntry]:
        """Context manager for a mechanism that draws noise: reserve, run, then commit.

        The budget is reserved on entry (raising :class:`BudgetExceededError` before
        the body runs, so no noise is drawn); the reservation holds the room while
        the body runs, so no concurrent spend can take it; the entry is recorded
        only if the body finishes without an exception, so a failed draw spends
        nothing (the reservation is cancelled). Keyword arguments are those of
        :meth:`spend`.

        Yields
        ------
        LedgerEntry
            The entry that is recorded when the body succeeds.

        Examples
        --------
        >>> ledger = PrivacyLedger()
        >>> with ledger.charge("laplace", epsilon=0.1, noise_source="seeded") as entry:
        ...     noisy = 42 + 0.0  # draw the noise here
        >>> len(ledger)
        1
        """
        kwargs.setdefault("details", {})
        kwargs["assumptions"] = tuple(kwargs.get("assumptions", ()))
        entry = self._make_entry(mechanism, epsilon, delta, **kwargs)
        with self.reserve([entry]) as reservation:
            yield entry
            reservation.commit()

    @contextmanager
    def spend_planned(self, entries: Sequence[LedgerEntry], what: str | None = None) -> Iterator["PrivacyLedger"]:
        """Reserve a planned set of spends, let the body charge them, record what it charged.

        For an operation that charges several mechanisms (one per statistic, one per
        feature): the whole plan is reserved first (:meth:`reserve`: refused before
        anything is drawn if it does not fit), the body charges a budget-free scratch
        ledger that is yielded, and what the scratch ledger recorded is committed to
        this ledger when the body ends, also when it fails part-way (noise already
        drawn is spent). What the body records may not cost more than the plan.

        Parameters
        ----------
        entries
            The planned spends (their costs; the recorded entries are the body's).
        what
            What the operation is, for messages.

        Yields
        ------
        PrivacyLedger
            The scratch ledger to charge (same neighbouring relation, no budget).

        Examples
        --------
        >>> ledger = PrivacyLedger(budget=Budget(epsilon=1.0))
        >>> plan = [LedgerEntry("laplace", 0.5), LedgerEntry("laplace", 0.5)]
        >>> with ledger.spend_planned(plan, what="two statistics") as scratch:
        ...     for name in ("sum", "count"):
        ...         _ = scratch.spend("laplace", 0.5, touched=f"y:{name}")
        >>> len(ledger)
        2
        """
        with self.reserve(entries, what=what) as reservation:
            scratch = PrivacyLedger(neighbouring=self.neighbouring)
            try:
                yield scratch
            finally:  # what was drawn is spent, even if a later draw failed
                if scratch.entries:
                    reservation.commit(list(scratch.entries))

    def repeat(self, entry_id: str, count: int = 1) -> LedgerEntry:
        """Add ``count`` more runs to an existing entry (budget checked first); return the updated entry.

        This is the cheap way to charge a step method as it runs: the ledger keeps
        one entry whose count grows (about a microsecond per call with a basic budget).
        The check counts outstanding reservations and runs in the same locked step
        as the update.

        Parameters
        ----------
        entry_id
            The id of a recorded entry.
        count
            How many more runs (>= 1).

        Returns
        -------
        LedgerEntry
            The updated entry (a new object; entries are immutable).

        Raises
        ------
        KeyError
            If no entry has that id.
        BudgetExceededError
            If the extra runs do not fit the budget.
        LedgerOwnershipError
            In a process that does not own the ledger.
        """
        if type(count) is not int or count < 1:
            count = check_count(count)
        with self._lock:
            self._check_owner("repeat a spend")
            i = self._index.get(entry_id)
            if i is None:
                raise KeyError(f"no ledger entry with id {entry_id!r}")
            old = self._entries[i]
            if old.count + count > MAX_COUNT:
                raise ValueError(
                    f"{count} more run(s) would take the count of entry {entry_id} past 2**63 - 1; record a new entry instead."
                )
            new = copy.copy(old)
            object.__setattr__(new, "count", old.count + count)  # already-validated entry: skip __post_init__
            fast = old.parallel_group is None and self._basic_cache is not None
            if fast:
                cache = self._basic_cache
                recorded = PrivacyCost(cache.epsilon + count * old.epsilon, min(1.0, cache.delta + count * old.delta))
            if self.budget is not None:
                if fast and self.budget.method == "basic" and not self._reservations:
                    total = recorded
                else:
                    total = self._would_total((), replace=(i, new))
                if not self.budget.allows(total):
                    extra = PrivacyCost(count * old.epsilon, min(1.0, count * old.delta))
                    raise self._refuse(extra, total, f"{count} more run(s) of {old.mechanism!r}")
            self._entries[i] = new
            self._basic_cache = recorded if fast else None
            return new

    # ------------------------------------------------------------------ combining
    @classmethod
    def combine(cls, ledgers: Iterable["PrivacyLedger"], budget: Budget | None = None) -> "PrivacyLedger":
        """One ledger holding the union of the entries of ``ledgers``.

        Entries with the same id are the same spend and are kept once. Copies of one
        entry may differ only in ``count`` (a later copy extended by :meth:`repeat`):
        the larger count is kept. Copies that differ in anything else (ε, δ, event,
        mechanism, ...) contradict each other, and one of them was altered: they are
        refused rather than one of them being trusted. All ledgers must use the same
        neighbouring relation. The result has ``budget`` (default: none) and is not
        checked against it.

        Raises
        ------
        ValueError
            For no ledgers, something that is not a ledger, mixed relations, or
            conflicting copies of one entry.
        """
        ledgers = list(ledgers)
        if not ledgers:
            raise ValueError("combine needs at least one ledger.")
        strays = [type(lg).__name__ for lg in ledgers if not isinstance(lg, PrivacyLedger)]
        if strays:
            raise ValueError(f"combine takes pmdp.PrivacyLedger objects only, got {strays}.")
        relations = {lg.neighbouring for lg in ledgers}
        if len(relations) > 1:
            raise ValueError(f"cannot combine ledgers with different neighbouring relations {sorted(relations)}.")
        out = cls(budget=budget, neighbouring=relations.pop())
        for lg in ledgers:
            for e in lg.entries:
                j = out._index.get(e.id)
                if j is None:
                    out._index[e.id] = len(out._entries)
                    out._entries.append(e)
                    continue
                kept = out._entries[j]
                if dataclasses.replace(kept, count=e.count) != e:
                    raise ValueError(
                        f"two copies of ledger entry {e.id} disagree in more than their count "
                        f"({_differences(kept, e)}): one of them was altered after it was recorded. "
                        "Refusing to choose between them; read the ledgers from their original files."
                    )
                if e.count > kept.count:
                    out._entries[j] = e
        out._basic_cache = None
        return out

    # ------------------------------------------------------------------ serialising
    def _budget_dict(self) -> dict[str, Any] | None:
        if self.budget is None:
            return None
        return {"epsilon": self.budget.epsilon, "delta": self.budget.delta, "method": self.budget.method}

    def digest(self) -> str:
        """The ledger's content digest: SHA-256 over its relation, budget and entry digests in order.

        See :func:`~pymc_dp.accounting.integrity.ledger_digest`. Written by
        :meth:`to_dict` and checked by :meth:`from_dict`.
        """
        entries = self.entries
        return ledger_digest(_FORMAT, _VERSION, self.neighbouring, self._budget_dict(), [e.digest for e in entries])

    def to_dict(self, *, key: bytes | str | None = None, bound_to: str | None = None) -> dict[str, Any]:
        """A JSON-serialisable dict (see :meth:`to_json`).

        Parameters
        ----------
        key
            A curator's secret key: when given, the dict also holds ``"signature"``,
            the HMAC-SHA256 of the ledger digest under ``key``, which
            :meth:`from_dict` verifies when given the same key.
        bound_to
            With ``key``: a digest of what the ledger accounts for (e.g. the trace it
            is attached to), signed together with the ledger so that the signed ledger
            cannot be copied onto another release.
        """
        entries = [e.to_dict() for e in self.entries]
        budget = self._budget_dict()
        out: dict[str, Any] = {
            "format": _FORMAT,
            "version": _VERSION,
            "neighbouring": self.neighbouring,
            "budget": budget,
            "entries": entries,
        }
        out["digest"] = ledger_digest(_FORMAT, _VERSION, self.neighbouring, budget, [d["digest"] for d in entries])
        if key is not None:
            signed = out["digest"] if bound_to is None else f"{out['digest']}:{bound_to}"
            out["signature"] = {"algorithm": SIGNATURE_ALGORITHM, "value": sign(key, signed)}
            if bound_to is not None:
                out["signature"]["bound_to"] = bound_to
        return out

    def to_json(self, *, key: bytes | str | None = None, bound_to: str | None = None, **json_kwargs: Any) -> str:
        """Serialise the whole ledger (budget, relation, every field of every entry, digests).

        Parameters
        ----------
        key, bound_to
            Sign the ledger with this secret key, optionally bound to a digest of
            what it accounts for (see :meth:`to_dict`).
        **json_kwargs
            Passed to :func:`json.dumps` (e.g. ``indent=2``).
        """
        return json.dumps(self.to_dict(key=key, bound_to=bound_to), allow_nan=False, **json_kwargs)

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any], *, key: bytes | str | None = None, bound_to: str | None = None
    ) -> "PrivacyLedger":
        """Rebuild a ledger from :meth:`to_dict` output, verifying its integrity.

        Every entry's content digest and the ledger digest are checked: an entry
        edited, dropped, added or reordered after writing, or a budget or relation
        changed, is refused. A digest only catches edits by someone who did not
        recompute it; with ``key`` the ledger's keyed signature is checked too, and a
        ledger without a valid signature under that key is refused. Every entry is
        also checked as :meth:`record` checks it (its relation is the ledger's, its
        (ε, δ) does not understate its event, its id is new); the budget is not
        applied (as for :meth:`combine`: the file is a record of what was spent).

        Ledgers written by pymc_dp before digests existed (format version 1) are
        read with a :class:`UserWarning` saying they cannot be verified; with ``key``
        they are refused.

        Parameters
        ----------
        data
            The output of :meth:`to_dict`.
        key
            The curator's secret key the ledger must be signed with.
        bound_to
            With ``key``: the digest of what the ledger is read from (e.g. the trace
            it is attached to). A signature bound to something else is refused: the
            signed ledger was copied from another release.

        Raises
        ------
        ValueError
            For data that is not a ledger, a failed digest or signature check, or an
            invalid entry.
        """
        if not isinstance(data, Mapping) or data.get("format") != _FORMAT:
            raise ValueError("not a pymc_dp ledger (missing format marker).")
        version = data.get("version")
        if version not in (1, _VERSION):
            raise ValueError(f"unsupported ledger version {version!r}; this pymc_dp reads versions 1 and {_VERSION}.")
        missing = sorted({"neighbouring", "entries"} - set(data))
        if missing:
            raise ValueError(f"ledger data is missing the field(s) {missing}.")
        b = data.get("budget")
        if b is not None and not isinstance(b, Mapping):
            raise ValueError(f"ledger budget must be an object with epsilon, delta and method, got {b!r}.")
        if not isinstance(data["entries"], list):
            raise ValueError(f"ledger entries must be a list, got {type(data['entries']).__name__}.")
        if version == 1:
            if key is not None:
                raise ValueError(
                    "this ledger was written before ledgers were signed (format version 1): it cannot be "
                    "verified against a key. Do not trust it as signed."
                )
            warnings.warn(
                "reading a pymc_dp ledger of format version 1, written before ledgers carried digests: its "
                "entries cannot be verified. Write it again with this pymc_dp to protect it.",
                UserWarning,
                stacklevel=3,
            )
        entries = []
        for d in data["entries"]:
            if not isinstance(d, Mapping):
                raise ValueError(f"a ledger entry must be an object of fields, got {d!r}.")
            entries.append(LedgerEntry.from_dict(d, require_digest=version >= 2))
        budget = None if b is None else dict(b)
        digest = ledger_digest(_FORMAT, _VERSION, data["neighbouring"], budget, [e.digest for e in entries])
        if version >= 2 and data.get("digest") != digest:
            raise ValueError(
                "this ledger was altered after it was written: its digest does not match its budget, relation "
                "and entries (an entry dropped, added or reordered, or the budget changed). Do not trust it; "
                "read the original file."
            )
        out = cls(budget=None if b is None else Budget(**b), neighbouring=data["neighbouring"])
        for e in entries:
            if e.id in out._index:
                raise ValueError(f"duplicate ledger entry id {e.id}.")
            out._validate(e)
            out._index[e.id] = len(out._entries)
            out._entries.append(e)
        out._basic_cache = None
        if key is not None:
            sig = data.get("signature")
            value = sig.get("value") if isinstance(sig, Mapping) else None
            if not isinstance(sig, Mapping) or sig.get("algorithm") != SIGNATURE_ALGORITHM:
                raise ValueError(
                    f"this ledger is not signed ({SIGNATURE_ALGORITHM}); a key was given, so a signed ledger is "
                    "required. Ask the curator for the signed ledger."
                )
            bound = sig.get("bound_to")
            if bound_to is not None and bound != bound_to:
                raise ValueError(
                    "this ledger's signature was made for another release (or for none): the signed ledger was "
                    "copied onto this one, or this release was changed after it was signed. Do not trust it."
                )
            if not verify_signature(key, digest if bound is None else f"{digest}:{bound}", value):
                raise ValueError(
                    "this ledger's signature does not verify under the given key: it was altered after it was "
                    "signed, or signed with another key. Do not trust it."
                )
        return out

    @classmethod
    def from_json(
        cls, text: str, *, key: bytes | str | None = None, bound_to: str | None = None
    ) -> "PrivacyLedger":
        """Rebuild a ledger from :meth:`to_json` output; ``from_json(l.to_json()) == l``.

        Integrity is checked as by :meth:`from_dict` (``key``: require a valid
        signature under this secret key, bound to ``bound_to`` when given).
        """
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise ValueError(f"ledger JSON is malformed: {err}") from None
        return cls.from_dict(data, key=key, bound_to=bound_to)

    # ------------------------------------------------------------------ display
    def summary(self, method: str = "basic", delta: float | None = None) -> str:
        """A readable table of the entries and the totals."""
        from .summary import format_summary

        return format_summary(self, method=method, delta=delta)

    def _repr_html_(self) -> str:  # pragma: no cover - notebook display
        import html

        return "<pre>" + html.escape(self.summary()) + "</pre>"


def _differences(a: LedgerEntry, b: LedgerEntry) -> str:
    names = [f.name for f in dataclasses.fields(a) if f.name != "count" and getattr(a, f.name) != getattr(b, f.name)]
    return "fields " + ", ".join(names)


def resolve_ledger(ledger: PrivacyLedger | None, neighbouring: str | None) -> PrivacyLedger:
    """The ledger an operation charges: ``ledger``, or a new one without a budget under ``neighbouring``.

    Raises ``ValueError`` for something that is not a ledger, or a ``neighbouring``
    that contradicts the given ledger's relation.
    """
    if ledger is None:
        return PrivacyLedger(neighbouring=check_neighbouring(neighbouring or "replace"))
    if not isinstance(ledger, PrivacyLedger):
        raise ValueError(f"ledger must be a pmdp.PrivacyLedger or None, got {type(ledger).__name__}.")
    if neighbouring is not None and check_neighbouring(neighbouring) != ledger.neighbouring:
        raise ValueError(
            f"neighbouring={neighbouring!r} but the ledger uses {ledger.neighbouring!r}: a ledger composes releases "
            f"under one relation. Create it with that relation, pmdp.PrivacyLedger(budget=..., "
            f"neighbouring={neighbouring!r}), or drop neighbouring= to use the ledger's."
        )
    return ledger
