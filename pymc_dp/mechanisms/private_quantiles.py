"""A private quantile over a public grid: the exponential mechanism on the records' ranks, choosing a grid cell.

For a level q in (0, 1), public candidates c_1 < … < c_G and f(c) = (1 − q) · #{x < c} − q · #{x ≥ c} (zero
where c splits the records q : 1 − q, non-decreasing in c), each cell [c_i, c_{i+1}) scores

    u_i = −max(0, f(c_i), −f(c_{i+1})),

zero for the cell where f changes sign (the quantile's) and minus how far f is from 0 elsewhere. One record
added or removed moves one of the two counts by one (f by at most max(q, 1 − q)); one record replaced moves one
count down and another up, or one count by one (f by at most (1 − q) + q = 1). So the sensitivity is 1 under
either neighbouring relation (a bound: max(q, 1 − q) under add/remove) and the choice, drawn with probability
∝ exp(ε u / 2), is ε-DP.

Cells far from the records all score about −q N (or −(1 − q) N), so a central level is found
accurately: with G candidates the chosen one's rank misses q N by more than 2 ln(G / β) / ε with probability at
most β. An extreme level is not — near q = 0.01 the far candidates score −0.01 N, too close to the best at
small N ε, which is why :func:`pymc_dp.mechanisms.suggest_bounds` reaches the tails from the quartiles
(fences) rather than aiming at them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .exponential import _gumbel_scale

if TYPE_CHECKING:  # pragma: no cover
    from .noise import NoiseSource

__all__ = ["cell_scores", "private_quantile_cell", "QUANTILE_SENSITIVITY"]

#: The scores' sensitivity under replace-one and under add/remove (see the module docstring).
QUANTILE_SENSITIVITY = 1.0


def _balance(ordered: np.ndarray, points: np.ndarray, q: float) -> np.ndarray:
    """f(c) = (1 − q) #{x < c} − q #{x ≥ c}: non-decreasing in c, moved by at most 1 by one record (either
    relation)."""
    below = np.searchsorted(ordered, points, side="left")
    return (1.0 - q) * below - q * (len(ordered) - below)


def cell_scores(ordered: np.ndarray, candidates: np.ndarray, q: float) -> np.ndarray:
    """The score of each cell [c_i, c_{i+1}) between consecutive candidates: −max(0, f(c_i), −f(c_{i+1})), zero
    for the cells where f changes sign (the level-q quantile's cell), and minus how far f is from 0 elsewhere.

    On a coarse grid no candidate may lie inside the records (N(1100, 10) on the grid 0, ±10ᵏ by eighths of a
    decade: its neighbours are 1000 and 1333), and then every candidate below the records scores the same as
    1000, every one above the same as 1333: a choice among candidates is uniform over a whole side. A cell scores
    by where the quantile lies, so the cell (1000, 1333) is the only one scoring 0. Sensitivity 1, as f's."""
    f = _balance(ordered, candidates, float(q))
    return -np.maximum(0.0, np.maximum(f[:-1], -f[1:]))


def private_quantile_cell(ordered: np.ndarray, candidates: np.ndarray, q: float, epsilon: float,
                          source: "NoiseSource") -> int:
    """The index i of the cell [c_i, c_{i+1}) chosen for level ``q`` at ``epsilon`` (:func:`cell_scores`, the
    exponential mechanism by report-noisy-max). The caller records the ledger entry."""
    scale = _gumbel_scale(float(epsilon), QUANTILE_SENSITIVITY, False)
    return int(source.gumbel_argmax(cell_scores(ordered, candidates, float(q)), scale))
