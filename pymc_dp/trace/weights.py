"""Weighted particles (``method="ais"``) as an equally weighted trace ArviZ can summarise.

ArviZ's summaries and plots treat every draw alike; a trace of importance-weighted
particles needs its weights. The weights ``pmdp.sample(method="ais")`` releases are
already private (Laplace-noised), so resampling the particles by them is
post-processing: free, and the ledger is carried over unchanged.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _compat
from .ledger_io import attach_ledger, ledger

__all__ = ["resample_weighted"]


def resample_weighted(trace: Any, draws: int | None = None, random_seed: Any = None) -> Any:
    """An equally weighted trace: ``draws`` particles resampled by the released weights (free).

    Parameters
    ----------
    trace
        A trace released by ``pmdp.sample(method="ais", weights="laplace")``: one chain of
        particles and their weights in ``sample_stats["weight"]``.
    draws
        How many draws to resample (default: as many as there are particles).
    random_seed
        Seed or NumPy generator of the resampling.

    Returns
    -------
    xarray.DataTree or arviz.InferenceData
        The resampled posterior (one chain) with the same ledger; ``az.summary`` then reads
        it as it reads any trace.
    """
    posterior = _compat.get_group(trace, "posterior")
    stats = _compat.get_group(trace, "sample_stats")
    if posterior is None or stats is None or "weight" not in stats.data_vars:
        raise ValueError("the trace has no released weights (sample_stats['weight']): pass the trace of "
                         "pmdp.sample(method='ais', weights='laplace').")
    if posterior.sizes.get("chain", 1) != 1:
        raise ValueError("resample_weighted expects one chain of weighted particles, as method='ais' releases.")
    w = np.asarray(stats["weight"].values, dtype=float).reshape(-1)
    if w.size != posterior.sizes["draw"] or not np.all(np.isfinite(w)) or w.min() < 0 or w.sum() <= 0:
        raise ValueError("sample_stats['weight'] must hold one non-negative, finite weight per particle.")
    n = w.size if draws is None else int(draws)
    if n < 1:
        raise ValueError(f"draws must be a positive integer, got {draws!r}.")
    picks = np.random.default_rng(random_seed).choice(w.size, size=n, p=w / w.sum())
    resampled = posterior.isel(draw=picks).assign_coords(draw=np.arange(n))
    out = _compat.new_trace({"posterior": resampled}, like=trace)
    return attach_ledger(out, ledger(trace))
