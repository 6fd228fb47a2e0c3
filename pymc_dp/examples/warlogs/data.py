"""Synthetic war-log records with the published structure, and the per-cell feature counts.

The real field reports of [FGWC16] §5 are not available, so this module generates
records with their structure (theory notes §9):

* regions (one HMM chain each), 72 monthly steps from January 2004 to December 2009;
* five discrete features per record: ``type`` (coarse), ``category`` (fine, nested in
  the type) and three casualty indicators (friendly/host nation, civilian, enemy),
  already binarised and merged as in the paper's preprocessing;
* a latent regime per region and month that switches over time (a sticky Markov
  chain per region), each regime with its own distribution of every feature (naive
  Bayes emissions).

Two presets are sized like the paper's data sets: ``"iraq"`` (≈ 390,000 records, median
≈ 1,000 per region-month) and ``"afghanistan"`` (≈ 75,000 records, ≈ 60 per
region-month, more in later years). :func:`load_records` reads a user's own CSV with
the same columns. :func:`feature_counts` builds the sufficient statistics
``n[r, t, d, j]``: the number of records at region r and month t whose feature d takes
value j.

Everything is vectorised: generating the Iraq-like preset (390,000 records) takes well
under a second.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np

__all__ = [
    "FEATURES",
    "FEATURE_SIZES",
    "CATEGORIES_PER_TYPE",
    "MONTHS",
    "PRESETS",
    "Preset",
    "WarLogs",
    "generate",
    "load_records",
    "feature_counts",
    "describe",
    "month_labels",
]

#: The five features of a record, in the order of the count tensor's feature axis.
FEATURES = ("type", "category", "friendly_casualty", "civilian_casualty", "enemy_casualty")
#: Coarse incident types (as in the published logs' ``type`` field).
TYPES = (
    "Enemy Action",
    "Explosive Hazard",
    "Friendly Action",
    "Non-Combat Event",
    "Criminal Event",
    "Suspicious Incident",
    "Threat Report",
    "Other",
)
#: Fine categories per type: ``category`` takes ``len(TYPES) * CATEGORIES_PER_TYPE`` values,
#: category ``c`` belonging to type ``c // CATEGORIES_PER_TYPE``.
CATEGORIES_PER_TYPE = 6
#: Number of values of each feature (K_d).
FEATURE_SIZES = (len(TYPES), len(TYPES) * CATEGORIES_PER_TYPE, 2, 2, 2)
#: 72 monthly steps, 2004-01 to 2009-12.
MONTHS = 72
_CSV_COLUMNS = ("region", "month", *FEATURES)


def month_labels() -> list[str]:
    """``["2004-01", …, "2009-12"]``: the label of each monthly step."""
    return [f"{2004 + t // 12}-{t % 12 + 1:02d}" for t in range(MONTHS)]


@dataclass(frozen=True)
class Preset:
    """The size and shape of a synthetic data set.

    Attributes
    ----------
    regions
        Region codes (one HMM chain each).
    total_records
        Expected number of records.
    growth
        Log-linear trend of the monthly volume over the 72 months (0: flat; a positive
        value skews the records towards later years).
    volume_spread
        Standard deviation of the log-normal variation of each region-month's volume.
    """

    regions: tuple[str, ...]
    total_records: int
    growth: float
    volume_spread: float


#: ``"iraq"``: 5 regions, ≈ 390,000 records, median ≈ 1,000 per region-month (980–1,000
#: over seeds 0–2), flat over time. ``"afghanistan"``: 6 regions, ≈ 75,000 records, median
#: ≈ 60 per region-month (55–61), growing about 90-fold from 2004 to 2009. ``"small"``: 3 regions, ≈ 6,000 records, for tutorials.
PRESETS: dict[str, Preset] = {
    "iraq": Preset(("MND-N", "MND-C", "MND-B", "MND-SE", "MNF-W"), 390_000, 0.0, 0.35),
    "afghanistan": Preset(("RC-EAST", "RC-SOUTH", "RC-WEST", "RC-NORTH", "RC-CAPITAL", "RC-SW"), 75_000, 4.5, 0.7),
    "small": Preset(("NORTH", "CENTRE", "SOUTH"), 6_000, 0.5, 0.3),
}


@dataclass
class WarLogs:
    """A set of records, with the true regimes when it was generated.

    Attributes
    ----------
    region, month
        Per record: region index (into ``regions``) and month index (0–71).
    features
        Per record, an ``(N, 5)`` int array of feature values in the order of :data:`FEATURES`.
    regions
        Region codes.
    true_states
        ``(R, 72)`` regime of each region-month (``None`` for loaded data).
    emissions
        Per feature, the ``(K_true, K_d)`` true emission probabilities (``None`` for loaded data).
    """

    region: np.ndarray
    month: np.ndarray
    features: np.ndarray
    regions: tuple[str, ...]
    true_states: np.ndarray | None = None
    emissions: list[np.ndarray] | None = field(default=None, repr=False)

    @property
    def num_records(self) -> int:
        """N, the number of records."""
        return int(self.region.size)

    def records_per_cell(self) -> np.ndarray:
        """``(R, 72)`` number of records of each region-month."""
        out = np.zeros((len(self.regions), MONTHS), dtype=np.int64)
        np.add.at(out, (self.region, self.month), 1)
        return out

    def to_frame(self) -> Any:
        """The records as a pandas DataFrame with the CSV columns (region code, month label, features)."""
        import pandas as pd

        labels = np.asarray(month_labels())
        data = {"region": np.asarray(self.regions)[self.region], "month": labels[self.month]}
        for d, name in enumerate(FEATURES):
            data[name] = self.features[:, d]
        return pd.DataFrame(data)

    def to_csv(self, path: str | Path) -> None:
        """Write the records as a CSV that :func:`load_records` reads back."""
        self.to_frame().to_csv(path, index=False)


def _sticky_chain(rng: np.random.Generator, num_regions: int, num_states: int, stay: float) -> np.ndarray:
    """One Markov chain of regimes per region over 72 months; every chain starts in regime 0.

    With two regimes and ``stay`` ≈ 0.97 each chain switches a couple of times over six years.
    """
    states = np.zeros((num_regions, MONTHS), dtype=np.int64)
    switch = rng.random((num_regions, MONTHS)) > stay
    jump = rng.integers(1, max(num_states, 2), size=(num_regions, MONTHS))
    for t in range(1, MONTHS):  # 72 steps, vectorised over regions
        states[:, t] = np.where(switch[:, t], (states[:, t - 1] + jump[:, t]) % num_states, states[:, t - 1])
    return states


def _emissions(rng: np.random.Generator, num_states: int, separation: float) -> list[np.ndarray]:
    """Per feature, ``(num_states, K_d)`` emission probabilities; ``separation`` > 0 makes regimes differ more.

    Types get a Dirichlet(1/separation) profile per regime; each category's probability
    is its type's times a within-type Dirichlet share (shared across regimes except
    for a regime-specific tilt); each casualty indicator has a regime-specific rate.
    """
    k_type = len(TYPES)
    conc = 1.0 / max(separation, 1e-3)
    types = rng.dirichlet(np.full(k_type, conc), size=num_states)
    within = rng.dirichlet(np.ones(CATEGORIES_PER_TYPE), size=(num_states, k_type))
    category = (types[:, :, None] * within).reshape(num_states, -1)
    base = np.array([0.05, 0.04, 0.12])
    spread = np.exp(rng.normal(0.0, 0.8 * separation, size=(num_states, 3)))
    rates = np.clip(base * spread, 0.005, 0.9)
    casualty = [np.stack([1 - rates[:, i], rates[:, i]], axis=1) for i in range(3)]
    return [types, category, *casualty]


def _volumes(rng: np.random.Generator, preset: Preset) -> np.ndarray:
    """``(R, 72)`` records per region-month: a log-linear trend times log-normal noise, Poisson-drawn."""
    r = len(preset.regions)
    trend = np.exp(preset.growth * np.linspace(0.0, 1.0, MONTHS))
    region_scale = np.exp(rng.normal(0.0, 0.25, size=r))
    shape = region_scale[:, None] * trend[None, :] * np.exp(rng.normal(0.0, preset.volume_spread, size=(r, MONTHS)))
    mean = shape * preset.total_records / shape.sum()
    return rng.poisson(mean)


def _sample_categorical(rng: np.random.Generator, probs: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """One draw per entry of ``rows`` from ``probs[rows]`` (inverse CDF, vectorised)."""
    cdf = np.cumsum(probs, axis=1)
    cdf[:, -1] = 1.0
    u = rng.random(rows.size)
    return (u[:, None] > cdf[rows]).sum(axis=1).astype(np.int64)


def generate(
    preset: str | Preset = "iraq",
    *,
    num_states: int = 2,
    stay: float = 0.97,
    separation: float = 1.0,
    seed: int | np.random.Generator | None = 0,
) -> WarLogs:
    """Generate synthetic war-log records with the published structure.

    Parameters
    ----------
    preset
        ``"iraq"``, ``"afghanistan"``, ``"small"`` (see :data:`PRESETS`) or a :class:`Preset`.
    num_states
        Number of true regimes (≥ 1; 1 is a naive-Bayes world with no switches).
    stay
        Probability that a region keeps its regime from one month to the next, in [0, 1].
    separation
        How different the regimes' feature distributions are (> 0; 1 is clearly distinct).
    seed
        Seed or generator for reproducible data.

    Returns
    -------
    WarLogs
        The records, with their true regimes and emission probabilities.

    Raises
    ------
    ValueError
        For an unknown preset or an argument out of range.
    """
    if isinstance(preset, str):
        if preset not in PRESETS:
            raise ValueError(f"preset must be one of {tuple(PRESETS)} or a Preset, got {preset!r}.")
        spec = PRESETS[preset]
    elif isinstance(preset, Preset):
        spec = preset
    else:
        raise ValueError(f"preset must be one of {tuple(PRESETS)} or a Preset, got {preset!r}.")
    if isinstance(num_states, bool) or not isinstance(num_states, (int, np.integer)) or num_states < 1:
        raise ValueError(f"num_states must be a whole number >= 1, got {num_states!r}.")
    if not 0.0 <= float(stay) <= 1.0:
        raise ValueError(f"stay must be a probability in [0, 1], got {stay!r}.")
    if not float(separation) > 0:
        raise ValueError(f"separation must be > 0, got {separation!r}.")
    rng = np.random.default_rng(seed)
    states = _sticky_chain(rng, len(spec.regions), int(num_states), float(stay))
    emissions = _emissions(rng, int(num_states), float(separation))
    volumes = _volumes(rng, spec)
    cells = np.arange(volumes.size)
    cell = np.repeat(cells, volumes.ravel())
    region, month = np.divmod(cell, MONTHS)
    state = states.ravel()[cell]
    features = np.empty((cell.size, len(FEATURES)), dtype=np.int64)
    features[:, 0] = _sample_categorical(rng, emissions[0], state)
    # A category is drawn within its record's type: P(category | type, state).
    within = emissions[1].reshape(int(num_states), len(TYPES), CATEGORIES_PER_TYPE)
    within = within / within.sum(axis=2, keepdims=True)
    flat = within.reshape(-1, CATEGORIES_PER_TYPE)
    features[:, 1] = features[:, 0] * CATEGORIES_PER_TYPE + _sample_categorical(rng, flat, state * len(TYPES) + features[:, 0])
    for d in range(2, len(FEATURES)):
        features[:, d] = _sample_categorical(rng, emissions[d], state)
    return WarLogs(region, month, features, tuple(spec.regions), states, emissions)


def load_records(path: str | Path, *, regions: tuple[str, ...] | None = None) -> WarLogs:
    """Read records from a CSV with the columns ``region, month, type, category, friendly_casualty, civilian_casualty, enemy_casualty``.

    ``month`` is ``YYYY-MM`` between 2004-01 and 2009-12; ``type`` and ``category``
    are integer codes (``0 ≤ type < 8``, ``0 ≤ category < 48``, the category's type
    being ``category // 6``); casualty indicators are 0 or 1 (a count > 0 is
    binarised, as in the paper's preprocessing). ``regions`` fixes the region order
    (default: sorted codes).

    Raises
    ------
    ValueError
        For a missing column, a month outside 2004–2009, or a value outside its
        feature's range (the message names the column and the first bad row).
    """
    import pandas as pd

    frame = pd.read_csv(path)
    missing = [c for c in _CSV_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"{path}: missing column(s) {missing}; expected {list(_CSV_COLUMNS)}.")
    labels = {label: t for t, label in enumerate(month_labels())}
    month = frame["month"].astype(str).map(labels)
    if month.isna().any():
        row = int(np.flatnonzero(month.isna().to_numpy())[0])
        raise ValueError(f"{path}: month {frame['month'].iloc[row]!r} (row {row}) is not YYYY-MM in 2004-01..2009-12.")
    codes = tuple(sorted(frame["region"].astype(str).unique())) if regions is None else tuple(regions)
    index = {code: i for i, code in enumerate(codes)}
    region = frame["region"].astype(str).map(index)
    if region.isna().any():
        row = int(np.flatnonzero(region.isna().to_numpy())[0])
        raise ValueError(f"{path}: region {frame['region'].iloc[row]!r} (row {row}) is not in regions={codes}.")
    features = np.empty((len(frame), len(FEATURES)), dtype=np.int64)
    for d, name in enumerate(FEATURES):
        values = pd.to_numeric(frame[name], errors="coerce").to_numpy()
        if d >= 2:
            values = np.where(values > 0, 1, values)  # casualty counts → indicators
        bad = ~np.isfinite(values) | (values < 0) | (values >= FEATURE_SIZES[d]) | (values != np.round(values))
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"{path}: column {name!r} row {row} is {frame[name].iloc[row]!r}; it must be an integer in "
                f"0..{FEATURE_SIZES[d] - 1}."
            )
        features[:, d] = values.astype(np.int64)
    inconsistent = features[:, 1] // CATEGORIES_PER_TYPE != features[:, 0]
    if inconsistent.any():
        row = int(np.flatnonzero(inconsistent)[0])
        raise ValueError(f"{path}: row {row} has category {features[row, 1]} outside its type {features[row, 0]}.")
    return WarLogs(region.to_numpy(np.int64), month.to_numpy(np.int64), features, codes)


def feature_counts(logs: WarLogs) -> list[np.ndarray]:
    """The sufficient statistics: per feature d, the ``(R, 72, K_d)`` counts ``n[r, t, d, j]``.

    A replaced record changes one indicator vector per feature, so each feature's
    count tensor has L1 sensitivity 2 under replace-one.
    """
    r = len(logs.regions)
    out = []
    for d, size in enumerate(FEATURE_SIZES):
        flat = (logs.region * MONTHS + logs.month) * size + logs.features[:, d]
        out.append(np.bincount(flat, minlength=r * MONTHS * size).reshape(r, MONTHS, size))
    return out


def describe(logs: WarLogs) -> Mapping[str, Any]:
    """Size facts: records, regions, median and quartiles of records per region-month, share by year."""
    cells = logs.records_per_cell()
    by_year = cells.reshape(len(logs.regions), 6, 12).sum(axis=(0, 2))
    return {
        "records": logs.num_records,
        "regions": len(logs.regions),
        "median_per_cell": float(np.median(cells)),
        "quartiles_per_cell": tuple(float(q) for q in np.quantile(cells, [0.25, 0.75])),
        "share_by_year": {2004 + i: round(float(v / cells.sum()), 3) for i, v in enumerate(by_year)},
    }
