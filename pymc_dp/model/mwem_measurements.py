"""Fitting a PyMC model to MWEM's measurements: the released counts as observations.

Each MWEM round released ``m_t = q_t(h) + Lap(b)``, a count of the records over the cells
``q_t`` selects (:func:`pymc_dp.mwem`). Given a model's cell probabilities ``p(θ)`` over the
domain, the counts ``q_t(h)`` are sums over n records of a bounded function of one record
(its cell's weight in each measured query): exactly what :func:`pymc_dp.observe_bounded_sum`
infers from, with the records and the noise integrated out and the domain enumerated in
full (so the moments are exact). The selection step is not modelled: which queries were
measured is treated as fixed (conditioning on it; a common approximation that leaves the
measured values' likelihood exact).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..mechanisms.bounded_sum import BoundedSumRelease
from ..mechanisms.mwem import MWEMResult
from .bounded_sum_measurements import observe_bounded_sum

__all__ = ["observe_mwem"]


def observe_mwem(name: str, result: MWEMResult, cell_probabilities: Any, *, noise: str = "auto",
                 model: Any = None) -> Any:
    """Condition a PyMC model on the counts MWEM measured.

    Parameters
    ----------
    name
        Name of the observed variable.
    result
        What :func:`pymc_dp.mwem` released.
    cell_probabilities
        A PyMC/PyTensor vector of length D: the model's probability of each cell of the
        domain, in the domain's (C) order — e.g. ``pm.Dirichlet("p", np.ones(D))``, or a
        product of per-attribute probabilities. ``result.domain.levels()`` gives each
        cell's levels to build it from.
    noise, model
        As for :func:`pymc_dp.observe_bounded_sum`.

    Returns
    -------
    TensorVariable
        The observed variable of the measurements.
    """
    import pymc as pm

    if not isinstance(result, MWEMResult):
        raise ValueError(f"result must be what pmdp.mwem returned, got {type(result).__name__}.")
    queries = result.measured_queries  # (T, D)
    scales = {m.scale for m in result.measurements}
    if len(scales) != 1:  # pragma: no cover - mwem measures every round at one scale
        raise ValueError("the measurements have different noise scales.")
    release = BoundedSumRelease(result.measurement_values(), result.n_records, float(queries.shape[0]),
                                scales.pop(), result.entries[-1])

    def f(cells: np.ndarray) -> np.ndarray:
        return queries[:, np.asarray(cells, dtype=np.int64).reshape(-1)].T

    record = pm.Categorical.dist(p=cell_probabilities)
    return observe_bounded_sum(name, release, f, record, np.arange(result.domain.size), noise=noise, model=model,
                               finite_domain=True)
