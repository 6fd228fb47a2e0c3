"""Privacy amplification by subsampling: the one formula, with no other import of the package.

Kept apart so that :mod:`~pymc_dp.accounting.events` (which prices subsampled events)
and :mod:`~pymc_dp.accounting.subsampling` (which builds subsampled entries) share it
without importing each other: entry → events → amplification, subsampling → entry.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["amplified_epsilon"]


def amplified_epsilon(epsilon: float, q: float) -> float:
    """ε of an ε-DP mechanism run on a random fraction ``q`` of the records: ln(1 + q(e^ε − 1)).

    Li, Qardaji & Su (2012); tight for Poisson sampling under add/remove and for
    sampling without replacement under replacement (Balle, Barthe & Gaboardi 2018).
    """
    if epsilon > 700.0:  # e^ε overflows: log(1 - q + q e^ε) in log space (no cancellation for such ε)
        return float(np.logaddexp(math.log1p(-q) if q < 1 else -math.inf, math.log(q) + epsilon))
    return math.log1p(q * math.expm1(epsilon))
