"""Blocked Gibbs sampling of the war-logs hidden Markov model on (possibly noisy) feature counts.

Model ([FGWC16] §5; theory notes §9): one chain of K latent states per region, one step
per month; each record at (r, t) emits every feature d from state ``s[r, t]``::

    θ_{k,d} ~ Dir(β),   A_k ~ Dir(γ),   π ~ Dir(γ),
    s[r, 0] ~ π,   s[r, t] | s[r, t−1] ~ A_{s[r, t−1]},
    n[r, t, d, ·] | s ~ Multinomial-likelihood with probabilities θ_{s[r,t], d}.

The data enter only through the sufficient statistics ``n[r, t, d, j]``, so the cost of
an iteration does not depend on the number of records. One iteration:

1. emissions: ``θ_{k,d} ~ Dir(β + Σ_{(r,t): s=k} n[r, t, d, ·])`` (conjugate);
2. transitions and initial probabilities from the state-pair counts (conjugate);
3. states: forward filtering, backward sampling per region given θ, A, π
   (:func:`pymc_dp.step_methods.ffbs.ffbs`), a blocked update that mixes much faster
   than single-site updates. (The paper collapsed the transitions out and updated one
   state at a time; FFBS needs the transitions sampled, and the two do not combine
   exactly, so this sampler keeps them.)

Noisy counts (the Laplace route) are used in place of the exact ones (the plug-in
approach of the paper), clamped at 0 cell by cell: post-processing of the release. Both
updates must see the same clamped counts. Clamping inflates every rare category by the
noise's positive part, but it does so for every state alike; feeding the emission update
unbiased sums (clamped only after summing) while FFBS sees clamped cells makes the
spurious counts fall on categories the states' emissions call nearly impossible, and
the regimes are lost (adjusted Rand index 0.9 → 0 on the small preset with
Laplace(2) noise). Leaving negative counts in FFBS's likelihood fails the same way:
a negative count on a category a state almost never emits rewards that state.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from ...step_methods.ffbs import ffbs
from ...step_methods.hmm import (
    clamped_counts,
    emission_log_draw,
    emission_statistics,
    log_dirichlet_sample,
    state_log_likelihood,
    transition_log_draw,
    truncated_dirichlet_update,
)

__all__ = ["HMMFit", "gibbs_hmm", "log_dirichlet_sample", "adjusted_rand_index"]


@dataclass
class HMMFit:
    """The kept draws of :func:`gibbs_hmm` (after burn-in).

    Attributes
    ----------
    states
        ``(draws, R, T)`` sampled state sequences.
    log_emissions
        Per feature, ``(draws, K, K_d)`` log emission probabilities.
    log_transitions
        ``(draws, K, K)`` log transition probabilities.
    log_initial
        ``(draws, K)`` log initial-state probabilities.
    log_likelihood
        ``(iterations,)`` ``log p(counts | θ, A, π)`` at every iteration, burn-in
        included (a convergence trace).
    """

    states: np.ndarray
    log_emissions: list[np.ndarray]
    log_transitions: np.ndarray
    log_initial: np.ndarray
    log_likelihood: np.ndarray

    def state_occupancy(self) -> np.ndarray:
        """``(draws, K)`` fraction of region-months in each state, per draw."""
        k = self.log_transitions.shape[-1]
        flat = self.states.reshape(self.states.shape[0], -1)
        return np.stack([(flat == j).mean(axis=1) for j in range(k)], axis=1)


def _check_counts(counts: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Each feature's counts checked and clamped at 0 cell by cell, all on one (regions, months) grid."""
    out = [clamped_counts(c, f"counts[{d}]") for d, c in enumerate(counts)]
    if not out:
        raise ValueError("counts must hold at least one feature.")
    grids = {c.shape[:2] for c in out}
    if len(grids) > 1:
        raise ValueError(f"every feature's counts must share one (regions, months) grid, got {sorted(grids)}.")
    return out


def gibbs_hmm(
    counts: Sequence[np.ndarray],
    num_states: int,
    iterations: int = 200,
    burn_in: int = 100,
    *,
    emission_prior: float = 0.1,
    transition_prior: float = 1.0,
    temperature: float = 1.0,
    floors: Sequence[float] | None = None,
    seed: int | np.random.Generator | None = 0,
    progressbar: bool = False,
) -> HMMFit:
    """Blocked Gibbs sampling of the HMM (FFBS states, conjugate emissions and transitions).

    Parameters
    ----------
    counts
        Per feature d, the ``(R, T, K_d)`` counts ``n[r, t, d, j]`` (exact, or noisy
        releases, used as they are; see the module docstring).
    num_states
        K ≥ 1; K = 1 is naive Bayes (one emission distribution for every region-month).
    iterations, burn_in
        Total iterations and how many of the first are discarded (0 ≤ burn_in < iterations).
    emission_prior, transition_prior
        Symmetric Dirichlet concentrations β and γ (> 0).
    temperature
        T ≥ 1: the counts' likelihood is raised to 1/T (the tempered posterior of OPS).
    floors
        Per feature, a floor a₀ with every emission probability restricted to θ ≥ a₀
        (OPS's truncation); the emissions are then updated by truncated-Dirichlet
        sweeps (:func:`~pymc_dp.step_methods.hmm.truncated_dirichlet_update`).
    seed
        Seed or generator.
    progressbar
        Show a progress bar over the iterations.

    Returns
    -------
    HMMFit
    """
    n = _check_counts(counts)
    if isinstance(num_states, bool) or not isinstance(num_states, (int, np.integer)) or num_states < 1:
        raise ValueError(f"num_states must be a whole number >= 1, got {num_states!r}.")
    if not (isinstance(iterations, (int, np.integer)) and isinstance(burn_in, (int, np.integer)) and 0 <= burn_in < iterations):
        raise ValueError(f"need whole numbers 0 <= burn_in < iterations, got burn_in={burn_in!r}, iterations={iterations!r}.")
    if not (emission_prior > 0 and transition_prior > 0):
        raise ValueError("emission_prior and transition_prior must be > 0.")
    if not temperature >= 1:
        raise ValueError(f"temperature must be >= 1, got {temperature!r}.")
    if floors is not None:
        floors = [float(f) for f in floors]
        if len(floors) != len(n) or any(not 0 < f < 1 / c.shape[2] for f, c in zip(floors, n)):
            raise ValueError("floors must give one floor 0 < a0 < 1/K_d per feature.")
    k = int(num_states)
    rng = np.random.default_rng(seed)
    regions, months = n[0].shape[:2]
    states = rng.integers(0, k, size=(regions, months))
    kept = iterations - burn_in
    out_states = np.empty((kept, regions, months), dtype=np.int64)
    out_emissions = [np.empty((kept, k, c.shape[2])) for c in n]
    out_trans = np.empty((kept, k, k))
    out_init = np.empty((kept, k))
    trace = np.empty(iterations)
    theta = [np.full((k, c.shape[2]), 1.0 / c.shape[2]) for c in n]  # the truncated sweeps start inside the floors
    steps: Iterable[int] = range(iterations)
    if progressbar:
        from rich.progress import track  # PyMC's own progress bars use rich

        steps = track(steps, description=f"HMM Gibbs (K = {k})", total=iterations)
    for it in steps:
        if floors is None:
            log_theta = [emission_log_draw(rng, emission_prior, c, states, k, temperature) for c in n]
        else:
            theta = [
                truncated_dirichlet_update(rng, th, emission_prior + emission_statistics(c, states, k) / temperature, f)
                for th, c, f in zip(theta, n, floors)
            ]
            log_theta = [np.log(th) for th in theta]
        log_trans, log_init = transition_log_draw(rng, transition_prior, states, k)
        log_lik = state_log_likelihood(n, log_theta, temperature)
        states, log_norm = ffbs(log_lik, log_trans, log_init, rng)
        trace[it] = log_norm.sum()
        if it >= burn_in:
            i = it - burn_in
            out_states[i] = states
            for d, lt in enumerate(log_theta):
                out_emissions[d][i] = lt
            out_trans[i] = log_trans
            out_init[i] = log_init
    return HMMFit(out_states, out_emissions, out_trans, out_init, trace)


def adjusted_rand_index(labels_a: np.ndarray, labels_b: np.ndarray) -> float:
    """The adjusted Rand index between two labellings (1: identical partitions up to renaming; ≈ 0: chance)."""
    a = np.asarray(labels_a).ravel()
    b = np.asarray(labels_b).ravel()
    if a.shape != b.shape or a.size < 2:
        raise ValueError("labels_a and labels_b must have the same number (>= 2) of labels.")
    _, ai = np.unique(a, return_inverse=True)
    _, bi = np.unique(b, return_inverse=True)
    table = np.zeros((ai.max() + 1, bi.max() + 1))
    np.add.at(table, (ai, bi), 1)

    def pairs(x: np.ndarray) -> float:
        return float((x * (x - 1) / 2).sum())

    index = pairs(table)
    rows, cols = pairs(table.sum(axis=1)), pairs(table.sum(axis=0))
    expected = rows * cols / pairs(np.array([a.size]))
    best = (rows + cols) / 2
    if best == expected:
        return 1.0
    return (index - expected) / (best - expected)
