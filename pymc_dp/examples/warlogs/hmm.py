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
   (:func:`pymc_dp.examples.warlogs.ffbs.ffbs`), a blocked update that mixes much faster
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

:func:`gibbs_hmm_noise_aware` does not plug in: it keeps the true counts as latent
Poisson counts observed through the Laplace noise, sums them out in FFBS and draws them
exactly before the emission update. It removes the clamping bias (on the small preset
with Laplace(1) noise, naive Bayes's category distribution is 0.13 away from the truth
in L1 against the plug-in's 0.40) at about 25 times the plug-in's cost per iteration
(one core; benchmarks/warlogs_hmm.py): every marginal is a series of some 55 terms where
the plug-in has one product.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import numpy as np

from ._numba import require
from .ffbs import ffbs
from .laplace_counts import add_log_marginals, impute_counts
from .steps import (
    check_floor,
    clamped_counts,
    emission_log_draw,
    emission_statistics,
    log_dirichlet_sample,
    state_log_likelihood,
    transition_log_draw,
    truncated_dirichlet_update,
)

__all__ = ["HMMFit", "gibbs_hmm", "gibbs_hmm_noise_aware", "log_dirichlet_sample", "adjusted_rand_index"]


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


class _Draws:
    """The kept draws of a Gibbs run and its log-likelihood trace, filled iteration by iteration."""

    def __init__(self, iterations: int, burn_in: int, k: int, grid: tuple[int, int], sizes: Sequence[int]) -> None:
        kept = iterations - burn_in
        self.burn_in = burn_in
        self.states = np.empty((kept, *grid), dtype=np.int64)
        self.emissions = [np.empty((kept, k, size)) for size in sizes]
        self.transitions = np.empty((kept, k, k))
        self.initial = np.empty((kept, k))
        self.trace = np.empty(iterations)

    def record(
        self, it: int, log_likelihood: float, states: np.ndarray, log_theta: Sequence[np.ndarray], log_trans: np.ndarray, log_init: np.ndarray
    ) -> None:
        self.trace[it] = log_likelihood
        if it >= self.burn_in:
            i = it - self.burn_in
            self.states[i] = states
            for out, lt in zip(self.emissions, log_theta):
                out[i] = lt
            self.transitions[i] = log_trans
            self.initial[i] = log_init

    def fit(self) -> HMMFit:
        return HMMFit(self.states, self.emissions, self.transitions, self.initial, self.trace)


def _iterations(iterations: int, progressbar: bool, description: str) -> Iterable[int]:
    steps: Iterable[int] = range(iterations)
    if progressbar:
        from rich.progress import track  # PyMC's own progress bars use rich

        steps = track(steps, description=description, total=iterations)
    return steps


def _check_run(num_states: Any, iterations: Any, burn_in: Any, emission_prior: float, transition_prior: float) -> int:
    """K after checking the arguments every engine shares."""
    if isinstance(num_states, bool) or not isinstance(num_states, (int, np.integer)) or num_states < 1:
        raise ValueError(f"num_states must be a whole number >= 1, got {num_states!r}.")
    if not (isinstance(iterations, (int, np.integer)) and isinstance(burn_in, (int, np.integer)) and 0 <= burn_in < iterations):
        raise ValueError(f"need whole numbers 0 <= burn_in < iterations, got burn_in={burn_in!r}, iterations={iterations!r}.")
    if not (emission_prior > 0 and transition_prior > 0):
        raise ValueError("emission_prior and transition_prior must be > 0.")
    return int(num_states)


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
        sweeps (:func:`~pymc_dp.examples.warlogs.steps.truncated_dirichlet_update`).
    seed
        Seed or generator.
    progressbar
        Show a progress bar over the iterations.

    Returns
    -------
    HMMFit
    """
    n = _check_counts(counts)
    k = _check_run(num_states, iterations, burn_in, emission_prior, transition_prior)
    if not temperature >= 1:
        raise ValueError(f"temperature must be >= 1, got {temperature!r}.")
    if floors is not None:
        if len(floors) != len(n):
            raise ValueError(f"floors must give one floor 0 < a0 < 1/K_d per feature ({len(n)}), got {len(floors)}.")
        floors = [check_floor(f, c.shape[2], f"floors[{d}]") for d, (f, c) in enumerate(zip(floors, n))]
    rng = np.random.default_rng(seed)
    regions, months = n[0].shape[:2]
    states = rng.integers(0, k, size=(regions, months))
    draws = _Draws(iterations, burn_in, k, (regions, months), [c.shape[2] for c in n])
    theta = [np.full((k, c.shape[2]), 1.0 / c.shape[2]) for c in n]  # the truncated sweeps start inside the floors
    for it in _iterations(iterations, progressbar, f"HMM Gibbs (K = {k})"):
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
        draws.record(it, log_norm.sum(), states, log_theta, log_trans, log_init)
    return draws.fit()


def gibbs_hmm_noise_aware(
    noisy_counts: Sequence[np.ndarray],
    noise_scales: float | Sequence[float],
    num_states: int,
    iterations: int = 200,
    burn_in: int = 100,
    *,
    observed: np.ndarray | None = None,
    emission_prior: float = 1.0,
    transition_prior: float = 1.0,
    rate_prior: tuple[float, float] = (0.5, 1e-6),
    warm_start: int = 20,
    seed: int | np.random.Generator | None = 0,
    progressbar: bool = False,
) -> HMMFit:
    """Blocked Gibbs sampling of the HMM that knows its counts carry Laplace noise.

    The plug-in (:func:`gibbs_hmm` on the noisy counts) reads ``y = n + L`` as if it
    were ``n``. Here each true count is ``n[r, t, d, j] ~ Poisson(μ[r, t] θ[s, d, j])``
    (given the cell's total the same multinomial likelihood as :func:`gibbs_hmm`; ``μ``
    is a per-cell rate with a Gamma prior) and the release is ``y = n + Laplace(b_d)``.
    One iteration:

    1. transitions and initial probabilities from the state pairs (conjugate);
    2. states by FFBS with the true counts summed out: each cell's likelihood under
       state k is ``Π_{d,j} p(y | μ θ_{k,d,j})``
       (:func:`~pymc_dp.examples.warlogs.laplace_counts.add_log_marginals`);
    3. the true counts drawn exactly given the states
       (:func:`~pymc_dp.examples.warlogs.laplace_counts.impute_counts`);
    4. emissions ``θ_{k,d} ~ Dir(β + Σ_{s=k} n)`` and rates
       ``μ[r, t] ~ Gamma(a + Σ_{d,j} n, c + D)`` (conjugate).

    Everything reads only the release, so it is post-processing: no further privacy
    cost. With noise scales → 0 it is the exact-count sampler.

    Parameters
    ----------
    noisy_counts
        Per feature, the released ``(R, T, K_d)`` noisy counts (floats, possibly negative).
    noise_scales
        The Laplace scale b_d of each feature's release (one number for all), e.g.
        ``2/ε_d`` for :func:`~pymc_dp.examples.warlogs.privacy.privatize_counts`.
    num_states, iterations, burn_in, transition_prior, seed, progressbar
        As for :func:`gibbs_hmm`.
    emission_prior
        The symmetric Dirichlet concentration β of the emissions. The default is 1, not
        :func:`gibbs_hmm`'s 0.1: the Laplace likelihood of a count is bounded below
        (``p(y | λ → 0) ∝ e^{−|y|/b}``), so it cannot remove the spike a prior with
        β < 1 puts at θ = 0. With β = 0.1 the posterior keeps real mass at θ_j ≈ 10⁻¹⁵
        for values that were observed (about 90 noisy records of a category,
        b = 33), and the held-out records of those values are scored as impossible.
    observed
        ``(R, T)`` mask of the cells whose counts were released (default: all). Other
        cells carry no measurement; their states follow the Markov prior.
    rate_prior
        Shape a and rate c of the Gamma prior of every cell's rate μ.

    Returns
    -------
    HMMFit

    Raises
    ------
    ImportError
        If numba, the ``warlogs`` extra, is missing (the marginals and imputation are
        compiled; :func:`gibbs_hmm` runs without it).
    """
    require("gibbs_hmm_noise_aware")
    y = [np.asarray(c, dtype=float) for c in noisy_counts]
    if not y or any(c.ndim != 3 for c in y) or len({c.shape[:2] for c in y}) > 1:
        raise ValueError("noisy_counts must hold one (R, T, K_d) array per feature, all on one (R, T) grid.")
    if any(not np.isfinite(c).all() for c in y):
        raise ValueError("noisy_counts must be finite (no NaN or inf).")
    scales = np.broadcast_to(np.asarray(noise_scales, dtype=float), (len(y),))
    if not (np.isfinite(scales).all() and (scales > 0).all()):
        raise ValueError(f"noise_scales must be finite and > 0 (the Laplace scale of each release), got {noise_scales!r}.")
    k = _check_run(num_states, iterations, burn_in, emission_prior, transition_prior)
    shape, rate = (float(v) for v in rate_prior)
    if not (shape > 0 and rate > 0):
        raise ValueError(f"rate_prior must be a (shape, rate) pair of positive numbers, got {rate_prior!r}.")
    regions, months = y[0].shape[:2]
    seen = np.ones((regions, months), dtype=bool) if observed is None else np.asarray(observed, dtype=bool)
    if seen.shape != (regions, months):
        raise ValueError(f"observed must be an (R, T) = {(regions, months)} boolean mask, got shape {seen.shape}.")
    rng = np.random.default_rng(seed)
    if warm_start:
        start = gibbs_hmm([np.where(seen[..., None], c, 0.0) for c in y], k, warm_start, warm_start - 1, emission_prior=emission_prior, transition_prior=transition_prior, seed=rng)
        states, log_theta = start.states[-1], [e[-1] for e in start.log_emissions]
    else:
        states = rng.integers(0, k, size=(regions, months))
        log_theta = [np.full((k, c.shape[2]), -np.log(c.shape[2])) for c in y]
    log_mu = np.log(np.maximum(np.mean([c.sum(axis=2) for c in y], axis=0), 1.0))
    sizes = [c.shape[2] for c in y]
    draws = _Draws(iterations, burn_in, k, (regions, months), sizes)
    # The features side by side along the value axis: one compiled call per iteration, not one per feature.
    y_all = np.ascontiguousarray(np.concatenate(y, axis=2))
    inv_b = np.repeat(1.0 / scales, sizes)
    cuts = np.cumsum(sizes)[:-1]
    for it in _iterations(iterations, progressbar, f"noise-aware HMM Gibbs (K = {k})"):
        log_trans, log_init = transition_log_draw(rng, transition_prior, states, k)
        log_theta_all = np.concatenate(log_theta, axis=1)
        log_lik = np.zeros((regions, months, k))
        add_log_marginals(log_lik, y_all, log_mu, log_theta_all, inv_b, seen)
        states, log_norm = ffbs(log_lik, log_trans, log_init, rng)
        u = np.concatenate([rng.random(c.shape) for c in y], axis=2)
        true_all = impute_counts(y_all, log_mu, log_theta_all, states, inv_b, seen, u)
        log_theta = [emission_log_draw(rng, emission_prior, n, states, k) for n in np.split(true_all, cuts, axis=2)]
        mu = rng.gamma(shape + true_all.sum(axis=2), 1.0 / (rate + len(y)))
        log_mu = np.where(seen, np.log(np.maximum(mu, 1e-300)), log_mu)
        draws.record(it, log_norm.sum(), states, log_theta, log_trans, log_init)
    return draws.fit()


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
