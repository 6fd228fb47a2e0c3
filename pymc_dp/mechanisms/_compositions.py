"""Count vectors with a fixed total: the candidate set of the posterior-release mechanisms.

A data set of n records over k categories is summarised by its count vector
``c ∈ ℕᵏ`` with ``Σc = n``; there are ``C(n + k − 1, k − 1)`` of them. They are
generated in lexicographic order, in blocks of bounded size, with NumPy only (no
Python loop over count vectors): a block is the expansion of a run of prefixes
``(c₁, …, c_{k−2})``, each completed by every ``c_{k−1} ∈ 0..n − Σprefix`` and
``c_k = n − Σ``.
"""

from __future__ import annotations

from math import comb
from typing import Iterator

import numpy as np

__all__ = ["num_compositions", "compositions", "composition_blocks"]

#: Rows per block: 2²⁰ count vectors (8 MiB per category as int64).
BLOCK_ROWS = 1 << 20


def num_compositions(n: int, k: int) -> int:
    """``C(n + k − 1, k − 1)``: the number of count vectors of k categories summing to n."""
    return comb(n + k - 1, k - 1)


def _expand(prefixes: np.ndarray, n: int) -> np.ndarray:
    """Append every next coordinate ``0..n − Σprefix`` to each prefix row (lexicographic order)."""
    reps = n - prefixes.sum(axis=1) + 1
    rows = np.repeat(prefixes, reps, axis=0)
    starts = np.repeat(np.cumsum(reps) - reps, reps)
    nxt = np.arange(rows.shape[0], dtype=np.int64) - starts
    return np.hstack([rows, nxt[:, None]])


def _prefixes(n: int, length: int) -> np.ndarray:
    """All vectors of ``length`` non-negative integers with sum ≤ n, in lexicographic order."""
    out = np.zeros((1, 0), dtype=np.int64)
    for _ in range(length):
        out = _expand(out, n)
    return out


def _complete(rows: np.ndarray, n: int) -> np.ndarray:
    return np.hstack([rows, (n - rows.sum(axis=1))[:, None]])


def composition_blocks(n: int, k: int, max_rows: int = BLOCK_ROWS) -> Iterator[np.ndarray]:
    """Yield every count vector of k categories summing to n, as int64 blocks of at most ``max_rows`` rows.

    The prefix table (count vectors of the first k − 2 categories) is held in memory;
    it is smaller than the whole set by a factor of about ``(n + k)/(k − 1)``.
    A single prefix whose completions exceed ``max_rows`` (only when ``n + 1 > max_rows``)
    is yielded in pieces.
    """
    if k < 2:
        raise ValueError(f"k must be at least 2, got {k}.")
    prefixes = _prefixes(n, k - 2)
    sizes = n - prefixes.sum(axis=1) + 1
    ends = np.cumsum(sizes)
    start = 0
    done = 0
    while start < prefixes.shape[0]:
        # The largest run of prefixes whose completions fit (at least one prefix).
        stop = max(int(np.searchsorted(ends, done + max_rows, side="right")), start + 1)
        rows = _complete(_expand(prefixes[start:stop], n), n)
        for lo in range(0, rows.shape[0], max_rows):
            yield rows[lo : lo + max_rows]
        done = int(ends[stop - 1])
        start = stop


def compositions(n: int, k: int) -> np.ndarray:
    """All count vectors of k categories summing to n, shape ``(C(n + k − 1, k − 1), k)``, lexicographic."""
    return np.vstack(list(composition_blocks(n, k, max_rows=max(1, num_compositions(n, k)))))
