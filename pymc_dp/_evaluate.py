"""Evaluate a small public graph (a shape, a declared constant) without compiling it.

``Variable.eval()`` compiles with PyTensor's default mode: Numba under PyTensor 3 and C under
PyTensor 2, which costs 0.4–4 s per new graph on a machine whose compile cache is empty (a
user's first run, every CI run), for a graph that is evaluated once. The graphs read here —
shapes, ``pm.Data`` containers, declared constants — are a handful of nodes, so PyTensor's
``FAST_COMPILE`` mode (Python implementations, constant folding and shape inference kept;
about 0.03 s) is the right tool. The module imports nothing from ``pymc_dp``: every layer may
use it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["evaluate", "evaluate_int"]


def evaluate(variable: Any) -> np.ndarray:
    """The value of a graph with no inputs (shared variables and constants only), as an array."""
    import pytensor

    return np.asarray(pytensor.function([], variable, mode="FAST_COMPILE", on_unused_input="ignore")())


def evaluate_int(variable: Any) -> int:
    """The value of a scalar integer graph with no inputs (a length, a count)."""
    return int(evaluate(variable))
