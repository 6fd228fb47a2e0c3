"""MWEM: a private synthetic distribution that answers a workload of counting queries.

Hardt, Ligett & McSherry (NIPS 2012), as in the slides: records live in a discretised
domain of D cells (every combination of the attributes' levels), their histogram is h,
and a workload holds m linear queries ``q ∈ [0, 1]^D`` (a count: ``q(h) = Σ_x q(x) h(x)``).
Starting from the uniform distribution A₀ scaled to n records, each of T rounds

1. **selects** the query the current synthetic data answers worst by the exponential
   mechanism (ε/2T) with score ``|q(A) − q(h)|``;
2. **measures** it with the Laplace mechanism (ε/2T): ``m = q(h) + Lap(2T/ε)``;
3. **updates** A by multiplicative weights, ``A(x) ∝ A(x) exp(q(x)(m − q(A))/(2n))``,
   cycling through all the measurements so far (``updates`` passes; post-processing).

Under replace-one neighbouring (n public) one record moves every count q(h), and every
score, by at most 1: both steps have sensitivity 1 and the T rounds compose to ε.
The synthetic distribution, records drawn from it, and the measurements are all
post-processing. The measurements are also observations: :func:`pymc_dp.observe_mwem`
fits a PyMC model of the records to them, the noise integrated out.

Workloads: :func:`marginal_workload` (every cell of every k-way marginal),
:func:`range_workload` (every interval of an ordered attribute); add them with ``+``.
:func:`laplace_workload` answers a whole workload with the Laplace mechanism instead,
the baseline MWEM beats on large workloads.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

from ..accounting.curator import curator_report
from ..accounting.entry import LedgerEntry
from ..accounting.validation import as_records, check_epsilon, numbers_entry_by_entry
from .exponential import exponential_mechanism
from .laplace import laplace_mechanism
from .logistic_regression import REPLACE_ONLY, ClippedFeaturesWarning
from .noise import _require_ledger

if TYPE_CHECKING:  # pragma: no cover
    from ..accounting import PrivacyLedger

__all__ = [
    "Domain", "Workload", "MWEMMeasurement", "MWEMResult", "mwem", "marginal_workload", "range_workload",
    "laplace_workload", "MAX_CELLS",
]

#: The largest domain (number of cells) MWEM keeps a dense histogram of.
MAX_CELLS = 2_000_000


@dataclass(frozen=True)
class Domain:
    """A discretised record domain: named attributes, each with levels 0 … size − 1.

    Build it from ``{name: size}`` (or from sizes alone; names are then ``a0, a1, …``).
    """

    names: tuple[str, ...]
    sizes: tuple[int, ...]

    @classmethod
    def of(cls, domain: Any) -> "Domain":
        if isinstance(domain, Domain):
            return domain
        if isinstance(domain, Mapping):
            names, sizes = tuple(str(k) for k in domain), tuple(domain.values())
        else:
            try:
                sizes = tuple(domain)
            except TypeError:
                raise ValueError(f"domain must be {{attribute: number of levels}} or a sequence of sizes, got {domain!r}.") from None
            names = tuple(f"a{i}" for i in range(len(sizes)))
        if not sizes:
            raise ValueError("domain must have at least one attribute.")
        for name, s in zip(names, sizes):
            if isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 1:
                raise ValueError(f"domain size of {name!r} must be a positive integer (its number of levels), got {s!r}.")
        out = cls(names, tuple(int(s) for s in sizes))
        if out.size > MAX_CELLS:
            raise ValueError(f"the domain has {out.size:,} cells (the product of {out.sizes}); MWEM keeps a dense "
                             f"histogram of at most {MAX_CELLS:,}. Use fewer levels or fewer attributes.")
        return out

    @property
    def size(self) -> int:
        """The number of cells D."""
        return int(np.prod(self.sizes, dtype=np.int64))

    def index(self, name: str | int) -> int:
        if isinstance(name, (int, np.integer)) and not isinstance(name, bool):
            if not 0 <= name < len(self.sizes):
                raise ValueError(f"attribute index {name} is outside 0 … {len(self.sizes) - 1}.")
            return int(name)
        if name not in self.names:
            raise ValueError(f"{name!r} is not an attribute of the domain {self.names}.")
        return self.names.index(name)

    def levels(self) -> np.ndarray:
        """(D, d): each cell's level of every attribute, in the cells' order (C order)."""
        return np.stack(np.unravel_index(np.arange(self.size), self.sizes), axis=1)

    def cells(self, records: Any) -> np.ndarray:
        """Each record's cell index (−1 for a malformed record).

        ``records`` is an (n, d) array of integer levels, or a DataFrame whose columns are
        selected by the domain's attribute names. Levels outside 0 … size − 1 (infinities
        included) are clipped into the domain; a record with a level that is not a whole
        number (NaN, fractional, text) is malformed and gets −1. Neither is refused: whether
        some record is malformed is data, so both are counted for the curator only.
        """
        values = self._level_values(records)
        malformed = (np.isnan(values) | (np.isfinite(values) & (values != np.round(values)))).any(axis=1)
        high = np.asarray(self.sizes) - 1
        outside = ((values < 0) | (values > high)).any(axis=1) & ~malformed
        if outside.any() or malformed.any():
            curator_report(f"{int(outside.sum())} record(s) had a level outside the domain (clipped into it) and "
                           f"{int(malformed.sum())} a level that is not a whole number (NaN, fractional or text; each "
                           "counts as spread evenly over the domain's cells); not released.",
                           ClippedFeaturesWarning, stacklevel=3)
        levels = np.clip(np.where(np.isnan(values), 0.0, values), 0, high).astype(np.int64)
        cells = np.ravel_multi_index(tuple(levels.T), self.sizes)
        return np.where(malformed, -1, cells)

    def _level_values(self, records: Any) -> np.ndarray:
        """(n, d) levels as floats, NaN where an entry is not a number (checked entry by entry: a dtype can follow one record)."""
        columns = getattr(records, "columns", None)
        if columns is not None:
            missing = [a for a in self.names if a not in list(columns)]
            if missing:
                raise ValueError(f"the records (a DataFrame) lack the domain's attribute(s) {missing}; its columns "
                                 f"are {list(columns)}. Name the domain's attributes after the columns.")
            records = records[list(self.names)]
        arr = as_records(records)
        if arr.ndim == 1 and len(self.sizes) == 1:
            arr = arr[:, None]
        if arr.ndim != 2 or arr.shape[1] != len(self.sizes):
            raise ValueError(f"records must be an (n, {len(self.sizes)}) array of levels, one column per attribute "
                             f"{self.names}; got shape {arr.shape}.")
        if arr.shape[0] < 1:
            raise ValueError("records must hold at least one record.")
        if arr.dtype.kind in "biuf":
            return arr.astype(float)
        return numbers_entry_by_entry(arr)

    def histogram(self, records: Any) -> np.ndarray:
        """The records' counts per cell, (D,); a malformed record adds 1/D to every cell (sums to n)."""
        cells = self.cells(records)
        malformed = int(np.sum(cells < 0))
        return np.bincount(cells[cells >= 0], minlength=self.size).astype(float) + malformed / self.size


@dataclass(frozen=True)
class Workload:
    """Linear counting queries over a domain: each row of ``queries`` is q ∈ [0, 1]^D.

    Attributes
    ----------
    domain
        The domain the queries are over.
    queries
        (m, D) query vectors.
    labels
        A readable name per query (e.g. ``"sex=1, employed=0"``).
    """

    domain: Domain
    queries: np.ndarray
    labels: tuple[str, ...]

    def __post_init__(self) -> None:
        q = np.asarray(self.queries, dtype=float)
        if q.ndim != 2 or q.shape[1] != self.domain.size:
            raise ValueError(f"queries must be an (m, {self.domain.size}) array over the domain's cells, got {q.shape}.")
        if q.shape[0] < 1:
            raise ValueError("a workload needs at least one query.")
        if not np.all(np.isfinite(q)) or q.min() < 0 or q.max() > 1:
            raise ValueError("every query value must lie in [0, 1] (a count's weight per cell): sensitivity 1.")
        if len(self.labels) != q.shape[0]:
            raise ValueError(f"labels must name each of the {q.shape[0]} queries.")
        q.setflags(write=False)
        object.__setattr__(self, "queries", q)

    def __len__(self) -> int:
        return int(self.queries.shape[0])

    def __repr__(self) -> str:
        return f"Workload({len(self)} queries over {self.domain.size} cells, e.g. {self.labels[0]!r})"

    def __add__(self, other: "Workload") -> "Workload":
        if not isinstance(other, Workload) or other.domain != self.domain:
            raise ValueError("only workloads over the same domain can be added.")
        return Workload(self.domain, np.vstack([self.queries, other.queries]), self.labels + other.labels)

    def answer(self, histogram: np.ndarray) -> np.ndarray:
        """The queries' answers on a histogram (or a distribution scaled to n), (m,)."""
        return self.queries @ np.asarray(histogram, dtype=float)

    @property
    def l1_sensitivity(self) -> float:
        """How far one record replaced can move the whole answer vector in L1 (at most ``2 max_x Σ_q q(x)``)."""
        return 2.0 * float(self.queries.sum(axis=0).max())


def marginal_workload(domain: Any, way: int = 2, attributes: Sequence[str] | None = None) -> Workload:
    """Every cell of every ``way``-way marginal (over ``attributes``, default all), as counting queries."""
    dom = Domain.of(domain)
    names = list(dom.names) if attributes is None else [dom.names[dom.index(a)] for a in attributes]
    if isinstance(way, bool) or not isinstance(way, (int, np.integer)) or not 1 <= way <= len(names):
        raise ValueError(f"way must be an integer from 1 to the number of attributes ({len(names)}), got {way!r}.")
    levels = dom.levels()
    rows, labels = [], []
    for combo in itertools.combinations(names, way):
        idx = [dom.index(a) for a in combo]
        for values in itertools.product(*(range(dom.sizes[i]) for i in idx)):
            rows.append(np.all(levels[:, idx] == np.asarray(values), axis=1))
            labels.append(", ".join(f"{a}={v}" for a, v in zip(combo, values)))
    return Workload(dom, np.asarray(rows, dtype=float), tuple(labels))


def range_workload(domain: Any, attribute: str) -> Workload:
    """Every interval ``lo ≤ attribute ≤ hi`` of an ordered attribute (others free), as counting queries."""
    dom = Domain.of(domain)
    i = dom.index(attribute)
    col = dom.levels()[:, i]
    rows, labels = [], []
    for lo in range(dom.sizes[i]):
        for hi in range(lo, dom.sizes[i]):
            rows.append((col >= lo) & (col <= hi))
            labels.append(f"{dom.names[i]} in [{lo}, {hi}]")
    return Workload(dom, np.asarray(rows, dtype=float), tuple(labels))


@dataclass(frozen=True)
class MWEMMeasurement:
    """One round's released measurement: which query, its noisy answer, the Laplace scale."""

    query: int
    label: str
    value: float
    scale: float


@dataclass(frozen=True)
class MWEMResult:
    """What :func:`mwem` released.

    Attributes
    ----------
    distribution
        (D,) the synthetic distribution over the domain's cells (sums to 1).
    n_records
        n (public: replace-one neighbouring).
    workload
        The workload the rounds chose from.
    measurements
        One :class:`MWEMMeasurement` per round.
    entries
        The ledger entries recorded (an exponential and a Laplace one per round).
    """

    distribution: np.ndarray
    n_records: int
    workload: Workload
    measurements: tuple[MWEMMeasurement, ...]
    entries: tuple[LedgerEntry, ...] = field(repr=False)

    @property
    def domain(self) -> Domain:
        return self.workload.domain

    def __repr__(self) -> str:
        eps = sum(e.epsilon * e.count for e in self.entries)
        return (f"MWEMResult({len(self.measurements)} measurements, n = {self.n_records}, {self.domain.size} cells, "
                f"workload of {len(self.workload)} queries, ε = {eps:.6g})")

    @property
    def histogram(self) -> np.ndarray:
        """The synthetic counts, ``n × distribution``."""
        return self.n_records * self.distribution

    def answers(self, workload: Workload | None = None) -> np.ndarray:
        """The synthetic data's answers to ``workload`` (default: the one it was fitted to)."""
        return (workload or self.workload).answer(self.histogram)

    def sample(self, size: int | None = None, rng: Any = None) -> np.ndarray:
        """Synthetic records, (size, d) levels, drawn from the distribution (default size: n)."""
        size = self.n_records if size is None else int(size)
        cells = np.random.default_rng(rng).choice(self.domain.size, size=size, p=self.distribution)
        return np.stack(np.unravel_index(cells, self.domain.sizes), axis=1)

    @property
    def measured_queries(self) -> np.ndarray:
        """(T, D): the query vector each round measured."""
        return self.workload.queries[[m.query for m in self.measurements]]

    def measurement_values(self) -> np.ndarray:
        """(T,): the noisy answers."""
        return np.array([m.value for m in self.measurements])


def _multiplicative_weights(log_a: np.ndarray, queries: np.ndarray, values: np.ndarray, n: int, passes: int) -> np.ndarray:
    """MW passes over every measurement so far; works on log A (A sums to n)."""
    for _ in range(passes):
        for q, m in zip(queries, values):
            a = np.exp(log_a)
            log_a = log_a + q * (m - q @ a) / (2.0 * n)
            log_a -= np.logaddexp.reduce(log_a) - math.log(n)
    return log_a


def mwem(
    records: Any, *, domain: Any, workload: Workload, epsilon: float, rounds: int, ledger: "PrivacyLedger",
    rng: Any = None, updates: int = 20,
) -> MWEMResult:
    """Release a synthetic distribution over ``domain`` fitted to ``workload`` by MWEM (ε-DP).

    Parameters
    ----------
    records
        (n, d) integer levels, one column per attribute of ``domain``, or a DataFrame (its
        columns selected by the attribute names). Levels outside the domain are clipped; a
        record with a NaN, fractional or text level counts as spread evenly over the cells
        (1/D each). Neither is refused (that would say some record is malformed): both are
        counted for the curator only.
    domain
        ``{attribute: number of levels}`` or a :class:`Domain`.
    workload
        The counting queries (:func:`marginal_workload`, :func:`range_workload`, or your own).
    epsilon
        The total ε: each round spends ε/2T selecting and ε/2T measuring.
    rounds
        T, the number of queries measured (T ≤ the number of queries).
    ledger
        The ledger to charge (replace-one neighbouring: n is public). The whole run is
        reserved before the first draw.
    rng
        ``None`` for secure noise (OpenDP's Laplace and Gumbel samplers); a seed or NumPy
        generator for seeded noise (research and tests only).
    updates
        Multiplicative-weights passes over all measurements after each round (default 20;
        post-processing, free).

    Returns
    -------
    MWEMResult
        The synthetic distribution, the measurements and the ledger entries.
    """
    eps = check_epsilon(epsilon, "epsilon")
    ledger = _require_ledger(ledger)
    if ledger.neighbouring != "replace":
        raise ValueError("mwem needs replace-one neighbouring (n is public: the synthetic data has n records); the "
                         f"ledger uses {ledger.neighbouring!r}.")
    dom = Domain.of(domain)
    if not isinstance(workload, Workload):
        raise ValueError("workload must be a pmdp Workload (marginal_workload, range_workload, or Workload(...)).")
    if workload.domain != dom:
        raise ValueError(f"the workload is over the domain {workload.domain.names} {workload.domain.sizes}, not "
                         f"{dom.names} {dom.sizes}.")
    if isinstance(rounds, bool) or not isinstance(rounds, (int, np.integer)) or not 1 <= rounds <= len(workload):
        raise ValueError(f"rounds must be an integer from 1 to the workload's {len(workload)} queries, got {rounds!r}.")
    if isinstance(updates, bool) or not isinstance(updates, (int, np.integer)) or updates < 1:
        raise ValueError(f"updates must be a positive integer, got {updates!r}.")
    T = int(rounds)
    hist = dom.histogram(records)
    n = int(round(hist.sum()))  # the number of records (public): malformed ones add 1/D to each cell
    true = workload.answer(hist)
    share = eps / (2 * T)
    source = rng if rng is None or not isinstance(rng, (int, np.integer)) else np.random.default_rng(rng)
    noise = "secure" if rng is None else "seeded"
    plan = [LedgerEntry("exponential", share, count=T, neighbouring="replace", noise_source=noise),
            LedgerEntry("laplace", share, count=T, neighbouring="replace", noise_source=noise)]
    log_a = np.full(dom.size, math.log(n) - math.log(dom.size))
    chosen: list[int] = []
    measured: list[MWEMMeasurement] = []
    with ledger.spend_planned(plan, what=f"MWEM ({T} rounds over {len(workload)} queries)") as scratch:
        for t in range(T):
            current = workload.answer(np.exp(log_a))
            i = int(exponential_mechanism(
                np.arange(len(workload)), np.abs(current - true), epsilon=share, sensitivity=1.0, ledger=scratch,
                rng=source, touched=f"MWEM round {t + 1}: the worst-answered of {len(workload)} queries",
            ))
            value = float(laplace_mechanism(
                float(true[i]), epsilon=share, sensitivity=1.0, ledger=scratch, rng=source,
                touched=f"MWEM round {t + 1}: count {workload.labels[i]}", assumptions=(REPLACE_ONLY,),
            ))
            chosen.append(i)
            measured.append(MWEMMeasurement(i, workload.labels[i], value, 1.0 / share))
            log_a = _multiplicative_weights(log_a, workload.queries[chosen], np.array([m.value for m in measured]), n,
                                            int(updates))
        entries = tuple(scratch.entries)
    dist = np.exp(log_a - np.logaddexp.reduce(log_a))
    dist.setflags(write=False)
    return MWEMResult(dist, n, workload, tuple(measured), entries)


def laplace_workload(
    records: Any, *, workload: Workload, epsilon: float, ledger: "PrivacyLedger", rng: Any = None,
) -> np.ndarray:
    """Answer every query of ``workload`` with the Laplace mechanism at once (ε-DP): MWEM's baseline.

    The scale is the workload's L1 sensitivity over ε (``2 max_x Σ_q q(x)`` under replace-one:
    for k-way marginals, 2 per marginal; half that under add/remove).
    """
    if not isinstance(workload, Workload):
        raise ValueError("workload must be a pmdp Workload.")
    ledger = _require_ledger(ledger)
    hist = workload.domain.histogram(records)
    # Replace-one moves a record between two cells; add/remove changes one cell's count.
    sensitivity = workload.l1_sensitivity if ledger.neighbouring == "replace" else workload.l1_sensitivity / 2
    return np.asarray(laplace_mechanism(
        workload.answer(hist), epsilon=epsilon, sensitivity=sensitivity, ledger=ledger, rng=rng,
        touched=f"{len(workload)} counting queries", assumptions=(REPLACE_ONLY,),
    ), dtype=float)
