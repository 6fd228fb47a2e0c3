"""The privacy ledger: every spend, checked against the budget before it happens."""

from __future__ import annotations

import copy
import json
from contextlib import contextmanager
from typing import Any, Iterable, Iterator, Mapping, Sequence

from .budget import Budget, BudgetExceededError
from .composition import basic, compose
from .entry import LedgerEntry, PrivacyCost
from .events import check_entry_consistency
from .validation import MAX_COUNT, check_count, check_neighbouring

__all__ = ["PrivacyLedger", "resolve_ledger"]

_FORMAT = "pymc_dp.ledger"
_VERSION = 1


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

    # ------------------------------------------------------------------ reading
    @property
    def entries(self) -> tuple[LedgerEntry, ...]:
        """All entries, oldest first."""
        return tuple(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[LedgerEntry]:
        return iter(tuple(self._entries))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PrivacyLedger):
            return NotImplemented
        return (
            self._entries == other._entries
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
            (epsilon, delta)-DP.
        """
        if method == "basic":
            if self._basic_cache is None:
                self._basic_cache = basic(self._entries)
            return self._basic_cache
        return compose(self._entries, method, delta, self.neighbouring)

    @property
    def spent(self) -> PrivacyCost:
        """The total under the budget's method (basic when there is no budget)."""
        if self.budget is None:
            return self.total()
        return self.total(self.budget.method, self.budget.delta if self.budget.method != "basic" else None)

    def remaining(self) -> PrivacyCost | None:
        """Budget left under its method (``None`` without a budget). Exact for ``basic``;
        for the tight methods it is the headroom of the total, not a promise that one more
        spend of that size fits (their composition is not additive)."""
        if self.budget is None:
            return None
        s = self.spent
        return PrivacyCost(max(0.0, self.budget.epsilon - s.epsilon), max(0.0, self.budget.delta - s.delta))

    # ------------------------------------------------------------------ spending
    def _make_entry(self, mechanism: str, epsilon: float, delta: float, **kwargs: Any) -> LedgerEntry:
        kwargs.setdefault("neighbouring", self.neighbouring)
        return LedgerEntry(mechanism=mechanism, epsilon=epsilon, delta=delta, **kwargs)

    def _candidate_total(self, entries: Sequence[LedgerEntry]) -> PrivacyCost:
        assert self.budget is not None
        method = self.budget.method
        if method == "basic":
            return basic(entries)
        return compose(entries, method, self.budget.delta, self.neighbouring)

    def _validate(self, entry: LedgerEntry) -> None:
        if not isinstance(entry, LedgerEntry):
            raise ValueError(f"expected a LedgerEntry, got {type(entry).__name__}.")
        if entry.neighbouring != self.neighbouring:
            raise ValueError(
                f"entry is stated under neighbouring={entry.neighbouring!r} but this ledger uses "
                f"{self.neighbouring!r}; recompute the sensitivity under the ledger's relation."
            )
        if entry.id in self._index:
            raise ValueError(f"entry {entry.id} is already in this ledger.")
        check_entry_consistency(entry.epsilon, entry.delta, entry.event)

    def _fast_basic_candidate(self, entry: LedgerEntry) -> PrivacyCost | None:
        if entry.parallel_group is not None or self._basic_cache is None:
            return None
        cur = self._basic_cache
        add = entry.basic_cost
        return PrivacyCost(cur.epsilon + add.epsilon, min(1.0, cur.delta + add.delta))

    def check(self, entry: LedgerEntry) -> None:
        """Raise :class:`BudgetExceededError` if recording ``entry`` would exceed the budget.

        Also raises ``ValueError`` for an entry this ledger cannot hold. Changes nothing.
        """
        self._validate(entry)
        self._check_budget(entry, f"{entry.mechanism!r} on {entry.touched or 'the data'}")

    def check_all(self, entries: Sequence[LedgerEntry]) -> None:
        """Raise :class:`BudgetExceededError` unless *all* of ``entries`` fit together.

        For an operation that spends several times (e.g. privatising every observed
        variable of a model): check the whole before the first spend, so a refusal
        leaves nothing half-spent. Changes nothing.
        """
        entries = list(entries)
        for e in entries:
            self._validate(e)
        if self.budget is None or not entries:
            return
        total = self._candidate_total([*self._entries, *entries])
        if not self.budget.allows(total):
            requested = basic(entries)
            raise BudgetExceededError(self.budget, self.spent, requested, total, f"{len(entries)} spends together")

    def _check_budget(self, entry: LedgerEntry, what: str) -> None:
        if self.budget is None:
            return
        total = self._fast_basic_candidate(entry) if self.budget.method == "basic" else None
        if total is None:
            total = self._candidate_total([*self._entries, entry])
        if not self.budget.allows(total):
            spent = self.spent
            requested = entry.basic_cost
            raise BudgetExceededError(self.budget, spent, requested, total, what)

    def record(self, entry: LedgerEntry) -> LedgerEntry:
        """Check ``entry`` against the budget and append it; return it.

        Use this for entries built elsewhere (e.g. by
        :func:`~pymc_dp.accounting.amplify_by_subsampling`).
        """
        self.check(entry)
        self._append(entry)
        return entry

    def _append(self, entry: LedgerEntry) -> None:
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

        The budget is checked first: if it would be exceeded,
        :class:`BudgetExceededError` is raised and nothing is recorded. See
        :class:`LedgerEntry` for the meaning of each argument.
        """
        entry = self._make_entry(
            mechanism, epsilon, delta, count=count, touched=touched, noise_source=noise_source,
            assumptions=tuple(assumptions), parallel_group=parallel_group, event=event, details=details or {},
        )
        return self.record(entry)

    @contextmanager
    def charge(self, mechanism: str, epsilon: float, delta: float = 0.0, **kwargs: Any) -> Iterator[LedgerEntry]:
        """Context manager for a mechanism that draws noise: check, run, then record.

        The budget is checked on entry (raising :class:`BudgetExceededError` before
        the body runs, so no noise is drawn); the entry is recorded only if the body
        finishes without an exception, so a failed draw spends nothing. Keyword
        arguments are those of :meth:`spend`.

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
        self.check(entry)
        yield entry
        self.record(entry)

    def repeat(self, entry_id: str, count: int = 1) -> LedgerEntry:
        """Add ``count`` more runs to an existing entry (budget checked first); return the updated entry.

        This is the cheap way to charge a step method as it runs: the ledger keeps
        one entry whose count grows (about a microsecond per call with a basic budget).
        """
        if type(count) is not int or count < 1:
            count = check_count(count)
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
            total = PrivacyCost(cache.epsilon + count * old.epsilon, min(1.0, cache.delta + count * old.delta))
        if self.budget is not None:
            if not (fast and self.budget.method == "basic"):
                candidate = list(self._entries)
                candidate[i] = new
                total = self._candidate_total(candidate)
            if not self.budget.allows(total):
                extra = PrivacyCost(count * old.epsilon, min(1.0, count * old.delta))
                raise BudgetExceededError(self.budget, self.spent, extra, total, f"{count} more run(s) of {old.mechanism!r}")
        self._entries[i] = new
        self._basic_cache = total if fast else None
        return new

    # ------------------------------------------------------------------ combining
    @classmethod
    def combine(cls, ledgers: Iterable["PrivacyLedger"], budget: Budget | None = None) -> "PrivacyLedger":
        """One ledger holding the union of the entries of ``ledgers``.

        Entries with the same id are the same spend and are kept once (the one with
        the larger count, if a later copy was extended by :meth:`repeat`). All
        ledgers must use the same neighbouring relation. The result has ``budget``
        (default: none) and is not checked against it.
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
            for e in lg._entries:
                j = out._index.get(e.id)
                if j is None:
                    out._index[e.id] = len(out._entries)
                    out._entries.append(e)
                elif e.count > out._entries[j].count:
                    out._entries[j] = e
        out._basic_cache = None
        return out

    # ------------------------------------------------------------------ serialising
    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict (see :meth:`to_json`)."""
        budget = None if self.budget is None else {
            "epsilon": self.budget.epsilon, "delta": self.budget.delta, "method": self.budget.method
        }
        return {
            "format": _FORMAT,
            "version": _VERSION,
            "neighbouring": self.neighbouring,
            "budget": budget,
            "entries": [e.to_dict() for e in self._entries],
        }

    def to_json(self, **json_kwargs: Any) -> str:
        """Serialise the whole ledger (budget, relation, every field of every entry)."""
        return json.dumps(self.to_dict(), allow_nan=False, **json_kwargs)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "PrivacyLedger":
        """Rebuild a ledger from :meth:`to_dict` output.

        Every entry is checked as :meth:`record` checks it (its relation is the ledger's,
        its (ε, δ) does not understate its event, its id is new); the budget is not
        applied (as for :meth:`combine`: the file is a record of what was spent).
        """
        if not isinstance(data, Mapping) or data.get("format") != _FORMAT:
            raise ValueError("not a pymc_dp ledger (missing format marker).")
        if data.get("version") != _VERSION:
            raise ValueError(f"unsupported ledger version {data.get('version')!r}; this pymc_dp reads version {_VERSION}.")
        missing = sorted({"neighbouring", "entries"} - set(data))
        if missing:
            raise ValueError(f"ledger data is missing the field(s) {missing}.")
        b = data.get("budget")
        if b is not None and not isinstance(b, Mapping):
            raise ValueError(f"ledger budget must be an object with epsilon, delta and method, got {b!r}.")
        if not isinstance(data["entries"], list):
            raise ValueError(f"ledger entries must be a list, got {type(data['entries']).__name__}.")
        out = cls(budget=None if b is None else Budget(**b), neighbouring=data["neighbouring"])
        for d in data["entries"]:
            if not isinstance(d, Mapping):
                raise ValueError(f"a ledger entry must be an object of fields, got {d!r}.")
            e = LedgerEntry.from_dict(d)
            if e.id in out._index:
                raise ValueError(f"duplicate ledger entry id {e.id}.")
            out._validate(e)
            out._index[e.id] = len(out._entries)
            out._entries.append(e)
        out._basic_cache = None
        return out

    @classmethod
    def from_json(cls, text: str) -> "PrivacyLedger":
        """Rebuild a ledger from :meth:`to_json` output; ``from_json(l.to_json()) == l``."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise ValueError(f"ledger JSON is malformed: {err}") from None
        return cls.from_dict(data)

    # ------------------------------------------------------------------ display
    def summary(self, method: str = "basic", delta: float | None = None) -> str:
        """A readable table of the entries and the totals."""
        from .summary import format_summary

        return format_summary(self, method=method, delta=delta)

    def _repr_html_(self) -> str:  # pragma: no cover - notebook display
        import html

        return "<pre>" + html.escape(self.summary()) + "</pre>"


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
        raise ValueError(f"neighbouring={neighbouring!r} but the ledger uses {ledger.neighbouring!r}.")
    return ledger
