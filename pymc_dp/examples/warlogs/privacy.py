"""Privatising the war-logs feature counts once (the Laplace route of [FGWC16] §5).

Each record contributes one indicator vector per feature to ``n[r, t, d, ·]``; replacing
a record changes at most two entries of each feature's count tensor by one, so each
tensor has L1 sensitivity 2 under replace-one neighbouring. The Laplace mechanism with
scale 2/ε_d on every entry of feature d's tensor is ε_d-DP; the five releases compose
to Σ_d ε_d. The region-month grid (which cells exist) and the feature sizes are public.
Everything computed from the noisy counts afterwards — any number of Gibbs iterations,
chains, priors or values of K — is post-processing and costs nothing more.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ...accounting import LedgerEntry, PrivacyLedger
from ...accounting.validation import check_epsilon
from ...mechanisms import laplace_mechanism
from ...mechanisms.noise import _scale_for
from .data import FEATURES

__all__ = ["COUNT_SENSITIVITY", "privatize_counts"]

#: L1 sensitivity of one feature's count tensor under replace-one neighbouring.
COUNT_SENSITIVITY = 2.0


def privatize_counts(
    counts: Sequence[np.ndarray],
    epsilon_per_feature: float | Sequence[float],
    *,
    ledger: PrivacyLedger,
    rng: Any = None,
) -> list[np.ndarray]:
    """Release every feature's count tensor with Laplace noise, charging ``ledger`` once per feature.

    Parameters
    ----------
    counts
        Per feature, the exact ``(R, T, K_d)`` counts (:func:`~pymc_dp.examples.warlogs.data.feature_counts`).
    epsilon_per_feature
        ε_d for each feature (one number for all; the paper used 1 per feature, 5 in all).
    ledger
        The ledger to charge. The whole spend (Σ_d ε_d) is checked against its budget
        before any noise is drawn, so a refusal leaves nothing half-spent.
    rng
        ``None`` for OpenDP's secure noise (the default), or a seed/generator for seeded noise.

    Returns
    -------
    list of numpy.ndarray
        The noisy counts (floats, possibly negative), same shapes.
    """
    if len(counts) != len(FEATURES):
        raise ValueError(f"counts must hold the {len(FEATURES)} features {FEATURES}, got {len(counts)} arrays.")
    eps = np.broadcast_to(np.asarray(epsilon_per_feature, dtype=float), (len(FEATURES),))
    eps = [check_epsilon(float(e), "epsilon_per_feature") for e in eps]
    arrays = []
    for d, c in enumerate(counts):
        arr = np.asarray(c)
        if arr.ndim != 3 or not np.issubdtype(arr.dtype, np.integer) or (arr < 0).any():
            raise ValueError(f"counts[{d}] ({FEATURES[d]}) must be a (regions, months, K_d) array of non-negative integer counts.")
        arrays.append(arr)
    if not isinstance(ledger, PrivacyLedger):
        raise ValueError("ledger is required: pass ledger=pmdp.PrivacyLedger(...) to record the five releases.")
    planned = [
        LedgerEntry(
            "laplace",
            e,
            event={"type": "laplace", "noise_multiplier": _scale_for(COUNT_SENSITIVITY, e) / COUNT_SENSITIVITY},
            neighbouring=ledger.neighbouring,
        )
        for e in eps
    ]
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        rng = np.random.default_rng(rng)  # one stream, so the five features get independent noise
    with ledger.spend_planned(planned, what="the five war-log feature counts") as scratch:
        return [
            laplace_mechanism(
                arr.astype(float),
                epsilon=e,
                sensitivity=COUNT_SENSITIVITY,
                ledger=scratch,
                rng=rng,
                touched=f"warlogs:{name} counts",
                assumptions=("the region-month grid and the number of feature values are public",),
            )
            for arr, e, name in zip(arrays, eps, FEATURES)
        ]
