"""One recorded spend of privacy budget, and the cost type the ledger returns."""

from __future__ import annotations

import json
import uuid
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any, Mapping, NamedTuple

from .events import validate_event
from .integrity import content_digest
from .validation import check_count, check_delta, check_epsilon, check_neighbouring

__all__ = ["LedgerEntry", "PrivacyCost", "NOISE_SOURCES"]

#: Where the randomness of a spend came from. ``"secure"``: OpenDP's exact,
#: floating-point-safe samplers; ``"seeded"``: a NumPy generator (reproducible, for
#: research and tests); ``"sampler"``: the MCMC sampler's own generator (private
#: step methods, tempered posteriors); ``"none"``: no noise drawn by pymc_dp.
NOISE_SOURCES = ("secure", "seeded", "sampler", "none")

#: The key under which :meth:`LedgerEntry.to_dict` writes the entry's content digest.
DIGEST_KEY = "digest"


class PrivacyCost(NamedTuple):
    """A total privacy cost: the composed mechanism is (epsilon, delta)-DP."""

    epsilon: float
    delta: float


def _now() -> str:
    """Today, UTC, as an ISO-8601 time at midnight: an entry is dated, not timed.

    A finer time is a timing channel: an entry written before a private run and a trace
    (or the next entry) written after it would give how long the run took, which depends
    on the data through the posterior's geometry.
    """
    return datetime.now(timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0).isoformat()


def _new_id() -> str:
    return uuid.uuid4().hex


@dataclass(frozen=True)
class LedgerEntry:
    """One privacy spend, possibly repeated ``count`` times.

    Parameters
    ----------
    mechanism
        What ran, e.g. ``"laplace"``, ``"gaussian"``, ``"exponential"``,
        ``"private_gibbs_update"``.
    epsilon, delta
        The guarantee of ONE run of the mechanism: it is (epsilon, delta)-DP under
        ``neighbouring``.
    count
        How many times the identical mechanism ran on the same data (a million MCMC
        steps are one entry with ``count=1_000_000``). Composition treats them as
        ``count`` separate events.
    touched
        What it touched: a variable or statistic name, e.g. ``"y:sum"``.
    neighbouring
        ``"replace"`` (bounded DP) or ``"add_remove"`` (unbounded DP).
    noise_source
        One of :data:`NOISE_SOURCES`.
    assumptions
        Conditions the guarantee rests on, e.g. ``("assumes convergence",)``.
    parallel_group
        Entries sharing a group label act on *disjoint* subsets of the records
        and compose in parallel (the group costs the max, not the sum).
    event
        A machine-readable description of the mechanism for the tight accountants
        (see :mod:`pymc_dp.accounting.events`); ``None`` means a generic
        (epsilon, delta) event.
    details
        Free-form JSON-serialisable facts (sensitivity, scale, temperature, ...).
    id, timestamp
        A unique id (hex) and an ISO-8601 UTC time; filled in automatically.
    """

    mechanism: str
    epsilon: float
    delta: float = 0.0
    count: int = 1
    touched: str = ""
    neighbouring: str = "replace"
    noise_source: str = "none"
    assumptions: tuple[str, ...] = ()
    parallel_group: str | None = None
    event: Mapping[str, Any] | None = None
    details: Mapping[str, Any] = field(default_factory=dict)
    id: str = field(default_factory=_new_id)
    timestamp: str = field(default_factory=_now)

    def __post_init__(self) -> None:
        if not isinstance(self.mechanism, str) or not self.mechanism:
            raise ValueError(f"mechanism must be a non-empty string, got {self.mechanism!r}.")
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon, allow_zero=True))
        object.__setattr__(self, "delta", check_delta(self.delta))
        object.__setattr__(self, "count", check_count(self.count))
        object.__setattr__(self, "neighbouring", check_neighbouring(self.neighbouring))
        if self.noise_source not in NOISE_SOURCES:
            raise ValueError(f"noise_source must be one of {NOISE_SOURCES}, got {self.noise_source!r}.")
        if not isinstance(self.touched, str):
            raise ValueError(f"touched must be a string naming what was touched (e.g. 'y:sum'), got {self.touched!r}.")
        if isinstance(self.assumptions, str):
            raise ValueError("assumptions must be a sequence of strings, e.g. ('assumes convergence',), not a string.")
        object.__setattr__(self, "assumptions", tuple(str(a) for a in self.assumptions))
        if self.parallel_group is not None:
            object.__setattr__(self, "parallel_group", str(self.parallel_group))
        if self.event is not None:
            object.__setattr__(self, "event", validate_event(self.event))
        details = _plain(dict(self.details or {}))
        try:  # refuse now what could not be saved later: a ledger must always serialise
            json.dumps(details, allow_nan=False)
        except (TypeError, ValueError) as err:
            raise ValueError(f"details must be JSON-serialisable with finite numbers: {err}") from None
        object.__setattr__(self, "details", details)

    @property
    def basic_cost(self) -> PrivacyCost:
        """The cost of all ``count`` runs under basic composition."""
        return PrivacyCost(self.count * self.epsilon, min(1.0, self.count * self.delta))

    @property
    def typed_event(self) -> Any:
        """The event as a frozen, typed :class:`~pymc_dp.accounting.event_types.DpEvent` (None without one)."""
        from .event_types import DpEvent

        return None if self.event is None else DpEvent.from_dict(self.event)

    def _content(self) -> dict[str, Any]:
        """Every field as plain JSON data (what the digest covers)."""
        d = asdict(self)
        d["assumptions"] = list(self.assumptions)
        d["event"] = None if self.event is None else _plain(self.event)
        d["details"] = _plain(self.details)
        return d

    @property
    def digest(self) -> str:
        """The content digest: SHA-256 (hex) over the canonical JSON of every field.

        Computed from the fields each time, so it always describes the entry as it is
        (see :mod:`pymc_dp.accounting.integrity` for the canonical form). Two entries
        have the same digest exactly when all their fields are equal.
        """
        return content_digest(self._content())

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict that :meth:`from_dict` turns back into an equal entry.

        Returns
        -------
        dict
            Every field, plus ``"digest"``: the entry's content digest
            (:attr:`digest`), which :meth:`from_dict` checks.
        """
        d = self._content()
        d[DIGEST_KEY] = content_digest(d)
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, require_digest: bool = False) -> "LedgerEntry":
        """Rebuild an entry from :meth:`to_dict` output (unknown keys are an error).

        Parameters
        ----------
        data
            The fields of an entry, and optionally its ``"digest"``.
        require_digest
            Refuse data without a digest (entries written before digests existed
            have none; a ledger of format version 2 requires them).

        Returns
        -------
        LedgerEntry

        Raises
        ------
        ValueError
            For an unknown or invalid field, a missing digest when one is required,
            or a digest that does not match the fields: the entry was altered after
            it was written.
        """
        known = set(cls.__dataclass_fields__) | {DIGEST_KEY}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown ledger entry field(s) {sorted(unknown)}; was this written by a newer pymc_dp?")
        kwargs = dict(data)
        stored = kwargs.pop(DIGEST_KEY, None)
        kwargs["assumptions"] = tuple(kwargs.get("assumptions", ()))
        entry = cls(**kwargs)
        if stored is None:
            if require_digest:
                raise ValueError(f"ledger entry {entry.id} has no content digest; it cannot be verified.")
        elif stored != entry.digest:
            raise ValueError(
                f"ledger entry {entry.id} was altered after it was written: its content digest does not match "
                "its fields. Do not trust this ledger; read the original file."
            )
        return entry


def _plain(value: Any) -> Any:
    """Convert mappings/sequences/NumPy scalars into plain JSON types."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "item") and callable(value.item) and getattr(value, "shape", None) == ():
        return value.item()
    if hasattr(value, "tolist"):
        return value.tolist()
    return value
