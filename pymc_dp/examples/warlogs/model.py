"""The war-logs HMM as a PyMC model, sampled by ``pm.sample`` with the project's Gibbs steps.

:func:`hmm_model` builds the model of :mod:`pymc_dp.examples.warlogs.steps` on given counts
(exact, or the noisy release of the Laplace route); :func:`fit_hmm` samples it with
:class:`~pymc_dp.examples.warlogs.steps.HMMStatesFFBS`,
:class:`~pymc_dp.examples.warlogs.steps.DirichletCountsGibbs` (one per feature) and
:class:`~pymc_dp.examples.warlogs.steps.HMMTransitionsGibbs` inside ``pm.sample``, so the
result is an ordinary PyMC trace (a ``DataTree`` on PyMC 6) that ArviZ reads.

The counts are graph constants, not ``pm.Data``: nothing of them is written to the
trace. On the Laplace route they are the public noisy release, so the whole trace is
post-processing of it. On the OPS route (:func:`pymc_dp.examples.warlogs.ops.fit_ops`)
they are the exact counts, the likelihood is tempered (``temperature=``) and the
emissions truncated at per-feature floors (``floors=``).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .data import FEATURES

__all__ = ["hmm_model", "hmm_steps", "fit_hmm"]


def hmm_model(
    counts: Sequence[np.ndarray],
    num_states: int,
    *,
    emission_prior: float = 0.1,
    transition_prior: float = 1.0,
    features: Sequence[str] = FEATURES,
    temperature: float = 1.0,
    floors: Sequence[float] | None = None,
) -> Any:
    """The HMM over region-month feature counts as a ``pm.Model``.

    Variables: ``theta_<feature>`` (``(K, K_d)``, Dirichlet rows), ``transitions``
    (``(K, K)``), ``initial`` (``(K,)``), all with ``default_transform=None``, and ``states``
    (``(R, T)`` integers). The Markov prior of the states and the counts' likelihood
    (divided by ``temperature``) are ``pm.Potential`` terms, so ``model.logp()`` is the
    joint log density (up to constants).

    Parameters
    ----------
    counts
        Per feature, the ``(R, T, K_d)`` counts (exact or a noisy release; clamped at 0).
    num_states
        K ≥ 1.
    emission_prior, transition_prior
        Symmetric Dirichlet concentrations β and γ.
    features
        The feature names (one per count tensor), used in the variable names.
    temperature
        T ≥ 1: the counts' log-likelihood is divided by T.
    floors
        ``None`` (default), or one floor a₀ per feature with ``0 < a₀ < 1/K_d``: the
        emission probabilities are truncated to ``θ ≥ a₀``. A ``pm.Potential``
        ``truncation_<feature>`` makes the joint density −inf outside the truncation
        (the truncated Dirichlet's normaliser is a constant and is left out), and the
        emissions start at the uniform rows ``1/K_d``, inside every floor.

    Returns
    -------
    pymc.Model

    Raises
    ------
    ValueError
        For bad counts, ``num_states``, temperature or floors (the message names the
        argument).
    """
    import pymc as pm
    import pytensor.tensor as pt

    from .steps import clamped_counts

    k = int(num_states)
    if k < 1:
        raise ValueError(f"num_states must be >= 1, got {num_states!r}.")
    if not temperature >= 1:
        raise ValueError(f"temperature must be >= 1, got {temperature!r}.")
    arrays = [clamped_counts(c, f"counts[{d}]") for d, c in enumerate(counts)]
    if len(arrays) != len(features):
        raise ValueError(f"give one count tensor per feature ({len(features)}), got {len(arrays)}.")
    floor_values = _check_floors(floors, arrays)
    regions, months = arrays[0].shape[:2]
    with pm.Model() as model:
        thetas = [
            pm.Dirichlet(
                f"theta_{name}",
                a=np.full((k, c.shape[2]), emission_prior),
                default_transform=None,
                initval=None if floor_values is None else np.full((k, c.shape[2]), 1.0 / c.shape[2]),
            )
            for name, c in zip(features, arrays)
        ]
        if floor_values is not None:
            for name, th, a0 in zip(features, thetas, floor_values):
                pm.Potential(f"truncation_{name}", pt.switch(pt.all(pt.ge(th, a0)), 0.0, -np.inf))
        trans = pm.Dirichlet("transitions", a=np.full((k, k), transition_prior), default_transform=None)
        init = pm.Dirichlet("initial", a=np.full(k, transition_prior), default_transform=None)
        states = pm.Categorical("states", p=np.full(k, 1.0 / k), shape=(regions, months))
        # The uniform Categorical above is cancelled and replaced by the Markov prior.
        markov = pt.log(init)[states[:, 0]] + pt.log(trans)[states[:, :-1], states[:, 1:]].sum(axis=1)
        pm.Potential("markov_prior", markov.sum() + regions * months * np.log(k))
        loglik = sum((pt.as_tensor_variable(c) * pt.log(th)[states]).sum() for c, th in zip(arrays, thetas))
        pm.Potential("counts_loglik", loglik / float(temperature))
    return model


def _check_floors(floors: Sequence[float] | None, arrays: Sequence[np.ndarray]) -> list[float] | None:
    """One checked floor per feature (``0 < a₀ < 1/K_d``), or ``None``."""
    from .steps import check_floor

    if floors is None:
        return None
    if isinstance(floors, (str, bytes)) or not hasattr(floors, "__len__"):
        raise ValueError(f"floors must be a sequence of one floor per feature ({len(arrays)}), got {floors!r}.")
    values = list(floors)
    if len(values) != len(arrays):
        raise ValueError(f"floors must give one floor per feature ({len(arrays)}), got {len(values)}.")
    return [check_floor(f, c.shape[2], f"floors[{d}]") for d, (f, c) in enumerate(zip(values, arrays))]


def hmm_steps(
    model: Any,
    counts: Sequence[np.ndarray],
    *,
    emission_prior: float = 0.1,
    transition_prior: float = 1.0,
    features: Sequence[str] = FEATURES,
    temperature: float = 1.0,
    floors: Sequence[float] | None = None,
) -> list[Any]:
    """The blocked Gibbs steps for :func:`hmm_model`: FFBS states, one Dirichlet step per feature, transitions.

    Parameters
    ----------
    model
        The model built by :func:`hmm_model` (with the same ``features``, ``temperature``
        and ``floors``).
    counts
        The same counts the model was built on.
    emission_prior, transition_prior, features, temperature
        As in :func:`hmm_model`.
    floors
        As in :func:`hmm_model`: with floors, each emission step is a truncated-Dirichlet
        sweep (:class:`~pymc_dp.examples.warlogs.steps.DirichletCountsGibbs` with ``floor=``).

    Returns
    -------
    list
        The step methods, for ``pm.sample(step=...)``.
    """
    from .steps import DirichletCountsGibbs, HMMStatesFFBS, HMMTransitionsGibbs, clamped_counts

    emissions = [model[f"theta_{name}"] for name in features]
    arrays = [clamped_counts(c, f"counts[{d}]") for d, c in enumerate(counts)]
    if len(arrays) != len(emissions):
        raise ValueError(f"give one count tensor per feature ({len(emissions)}), got {len(arrays)}.")
    floor_values = _check_floors(floors, arrays) or [None] * len(arrays)
    return [
        HMMStatesFFBS(model["states"], arrays, emissions, model["transitions"], model["initial"], temperature=temperature, model=model),
        *[
            DirichletCountsGibbs(e, c, model["states"], emission_prior, temperature=temperature, floor=a0, model=model)
            for e, c, a0 in zip(emissions, arrays, floor_values)
        ],
        HMMTransitionsGibbs(model["transitions"], model["initial"], model["states"], transition_prior, model=model),
    ]


def fit_hmm(
    counts: Sequence[np.ndarray],
    num_states: int,
    *,
    draws: int = 100,
    tune: int = 100,
    chains: int = 1,
    emission_prior: float = 0.1,
    transition_prior: float = 1.0,
    temperature: float = 1.0,
    floors: Sequence[float] | None = None,
    random_seed: int | None = 0,
    progressbar: bool = False,
) -> Any:
    """Sample :func:`hmm_model` with ``pm.sample`` and the Gibbs steps; returns the trace.

    Parameters
    ----------
    counts, num_states
        As in :func:`hmm_model`.
    draws, tune, chains
        Kept draws and burn-in iterations per chain (the burn-in is discarded; the paper
        ran 200 iterations, 100 of them burn-in), and the number of chains (run one
        after the other).
    emission_prior, transition_prior, temperature, floors
        As in :func:`hmm_model`.
    random_seed
        Seed for ``pm.sample`` (which seeds every step method per chain).
    progressbar
        Show PyMC's progress bar.

    Returns
    -------
    xarray.DataTree or arviz.InferenceData
        The whole run as ``pm.sample`` returns it. It is not a release: on the OPS
        route, use :func:`~pymc_dp.examples.warlogs.ops.fit_ops`, which releases only
        the final draw of each chain.
    """
    import pymc as pm

    model = hmm_model(
        counts, num_states, emission_prior=emission_prior, transition_prior=transition_prior,
        temperature=temperature, floors=floors,
    )
    with model:
        steps = hmm_steps(
            model, counts, emission_prior=emission_prior, transition_prior=transition_prior,
            temperature=temperature, floors=floors,
        )
        return pm.sample(
            draws,
            tune=tune,
            chains=chains,
            cores=1,
            step=steps,
            random_seed=random_seed,
            progressbar=progressbar,
            compute_convergence_checks=False,
        )
