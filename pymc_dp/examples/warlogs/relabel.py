"""Relabelling HMM chains to one another, so that their states can be compared.

An HMM's state labels are arbitrary: two chains that find the same regimes name them
differently, so a state-indexed quantity (state 3's share, its emission
probabilities) means different things in different chains and its R-hat says nothing.
Within a chain the Gibbs sampler keeps its labels once the chain settles, so one
permutation per chain suffices: :func:`reference_permutations` matches each chain's
states to chain 0's by the assignment that best overlaps their allocations (which
region-months each state holds), and :func:`relabel` applies it. A chain that switched
labels during its kept draws is not repaired: its relabelled quantities jump within
the chain, and their R-hat flags it.

Everything here reads only the released ``states`` draws (and state-indexed draws
such as the emission probabilities): it is post-processing of the release.
"""

from __future__ import annotations

import numpy as np

__all__ = ["allocation", "reference_permutations", "relabel", "common_states", "modal_agreement"]


def allocation(states: np.ndarray, num_states: int) -> np.ndarray:
    """Each chain's share of draws that put each region-month in each state.

    ``(chain, draw, R, T)`` integer states → ``(chain, K, R, T)`` fractions.
    """
    return np.stack([(states == k).mean(axis=1) for k in range(num_states)], axis=1)


def _overlaps(alloc: np.ndarray) -> np.ndarray:
    """``(chain, K, K)``: how much chain 0's state ``j`` and chain ``c``'s state ``k`` share region-months."""
    return np.einsum("jrt,ckrt->cjk", alloc[0], alloc)


def reference_permutations(alloc: np.ndarray) -> np.ndarray:
    """The labels that match each chain's states to chain 0's: ``(chain, K)`` integers.

    Row ``c`` gives, for each state ``j`` of chain 0, the state of chain ``c`` that
    plays its part: the permutation maximising the total overlap of the matched
    allocations (a linear assignment). Row 0 is the identity. States no chain uses
    are matched arbitrarily; :func:`common_states` leaves them out.

    Parameters
    ----------
    alloc
        ``(chain, K, R, T)``, from :func:`allocation`.
    """
    from scipy.optimize import linear_sum_assignment

    return np.stack([linear_sum_assignment(overlap, maximize=True)[1] for overlap in _overlaps(alloc)])


def relabel(values: np.ndarray, perms: np.ndarray, axis: int = 2) -> np.ndarray:
    """State-indexed ``values`` (``(chain, draw, K, ...)``: states on ``axis``) in chain 0's labels.

    ``perms`` comes from :func:`reference_permutations`.
    """
    return np.stack([np.take(v, p, axis=axis - 1) for v, p in zip(values, perms)])


def common_states(alloc: np.ndarray, perms: np.ndarray) -> np.ndarray:
    """Chain 0's states whose matched state in every chain shares region-months with it.

    These are the states whose relabelled draws are comparable across chains; a state
    that only some chains use (or that two chains place on different region-months) is
    left out.
    """
    matched = np.take_along_axis(_overlaps(alloc), perms[:, :, None], axis=2)[:, :, 0]  # (chain, K)
    return np.flatnonzero(np.all(matched > 0, axis=0))


def modal_agreement(alloc: np.ndarray, perms: np.ndarray) -> float:
    """The smallest share, over chains, of region-months whose relabelled modal state is chain 0's.

    1.0: after relabelling, every chain puts every region-month in the same most
    frequent state as chain 0.
    """
    modal = relabel(alloc, perms, axis=1).argmax(axis=1)  # (chain, R, T) in chain 0's labels
    return float(min((m == modal[0]).mean() for m in modal))
