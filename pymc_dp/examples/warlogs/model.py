"""The war-logs HMM as a PyMC model, sampled by ``pm.sample`` with the project's Gibbs steps.

:func:`hmm_model` builds the model of :mod:`pymc_dp.step_methods.hmm` on given counts
(exact, or the noisy release of the Laplace route); :func:`fit_hmm` samples it with
:class:`~pymc_dp.step_methods.hmm.HMMStatesFFBS`,
:class:`~pymc_dp.step_methods.hmm.DirichletCountsGibbs` (one per feature) and
:class:`~pymc_dp.step_methods.hmm.HMMTransitionsGibbs` inside ``pm.sample``, so the
result is an ordinary ``InferenceData`` that ArviZ reads.

The counts are graph constants, not ``pm.Data``: nothing of them is written to the
trace. On the Laplace route they are the public noisy release, so the whole trace is
post-processing of it.
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
) -> Any:
    """The HMM over region-month feature counts as a ``pm.Model``.

    Variables: ``theta_<feature>`` (``(K, K_d)``, Dirichlet rows), ``transitions``
    (``(K, K)``), ``initial`` (``(K,)``), all with ``default_transform=None``, and ``states``
    (``(R, T)`` integers). The Markov prior of the states and the counts' likelihood
    (divided by ``temperature``) are ``pm.Potential`` terms, so ``model.logp()`` is the
    joint log density.
    """
    import pymc as pm
    import pytensor.tensor as pt

    from ...step_methods.hmm import clamped_counts

    k = int(num_states)
    if k < 1:
        raise ValueError(f"num_states must be >= 1, got {num_states!r}.")
    arrays = [clamped_counts(c, f"counts[{d}]") for d, c in enumerate(counts)]
    if len(arrays) != len(features):
        raise ValueError(f"give one count tensor per feature ({len(features)}), got {len(arrays)}.")
    regions, months = arrays[0].shape[:2]
    with pm.Model() as model:
        thetas = [
            pm.Dirichlet(f"theta_{name}", a=np.full((k, c.shape[2]), emission_prior), default_transform=None)
            for name, c in zip(features, arrays)
        ]
        trans = pm.Dirichlet("transitions", a=np.full((k, k), transition_prior), default_transform=None)
        init = pm.Dirichlet("initial", a=np.full(k, transition_prior), default_transform=None)
        states = pm.Categorical("states", p=np.full(k, 1.0 / k), shape=(regions, months))
        # The uniform Categorical above is cancelled and replaced by the Markov prior.
        markov = pt.log(init)[states[:, 0]] + pt.log(trans)[states[:, :-1], states[:, 1:]].sum(axis=1)
        pm.Potential("markov_prior", markov.sum() + regions * months * np.log(k))
        loglik = sum((pt.as_tensor_variable(c) * pt.log(th)[states]).sum() for c, th in zip(arrays, thetas))
        pm.Potential("counts_loglik", loglik / float(temperature))
    return model


def hmm_steps(
    model: Any,
    counts: Sequence[np.ndarray],
    *,
    emission_prior: float = 0.1,
    transition_prior: float = 1.0,
    features: Sequence[str] = FEATURES,
    temperature: float = 1.0,
) -> list[Any]:
    """The blocked Gibbs steps for :func:`hmm_model`: FFBS states, one Dirichlet step per feature, transitions."""
    from ...step_methods.hmm import DirichletCountsGibbs, HMMStatesFFBS, HMMTransitionsGibbs

    emissions = [model[f"theta_{name}"] for name in features]
    return [
        HMMStatesFFBS(model["states"], counts, emissions, model["transitions"], model["initial"], temperature=temperature, model=model),
        *[
            DirichletCountsGibbs(e, c, model["states"], emission_prior, temperature=temperature, model=model)
            for e, c in zip(emissions, counts)
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
    random_seed: int | None = 0,
    progressbar: bool = False,
) -> Any:
    """Sample :func:`hmm_model` with ``pm.sample`` and the Gibbs steps; returns the ``InferenceData``.

    ``tune`` iterations are burn-in (discarded); the paper ran 200 iterations, 100 of them burn-in.
    """
    import pymc as pm

    model = hmm_model(counts, num_states, emission_prior=emission_prior, transition_prior=transition_prior)
    with model:
        steps = hmm_steps(model, counts, emission_prior=emission_prior, transition_prior=transition_prior)
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
