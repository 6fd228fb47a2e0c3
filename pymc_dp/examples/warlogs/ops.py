"""The OPS route of the war-logs HMM ([FGWC16] §5), sampled by ``pm.sample``.

"One posterior sample" (theory notes §4): a draw from the posterior with the
likelihood raised to ``1/T`` is ``2Δ/T``-DP when Δ bounds how much one record can
change the log-likelihood. In the HMM a record at region-month (r, t) contributes
``Σ_d log θ_{s[r,t], d, x_d}``; truncating every emission probability at a floor
``a₀_d = 1/(M K_d)`` (M the floor multiplier) keeps each term in
``[log a₀_d, log(1 − (K_d − 1) a₀_d)]``, so replacing one record changes the
log-likelihood by at most

.. math::

    Δ = \\sum_d \\log\\frac{1 - (K_d - 1)\\,a_{0,d}}{a_{0,d}}

(19.19 for M = 10 and the five war-logs features). The route (:func:`fit_ops`)

1. computes the floors, Δ and ``T = max(1, 2Δ/ε)`` (:func:`ops_temperature`);
2. builds one ledger entry, ``chains`` released draws of ``2Δ/T`` each, and checks it
   against the ledger's budget before anything runs;
3. samples the tempered, truncated model (:func:`~pymc_dp.examples.warlogs.model.hmm_model`
   with ``temperature=`` and ``floors=``) with ``pm.sample`` and the HMM Gibbs steps,
   the emissions updated by truncated-Dirichlet sweeps;
4. records the entry, and releases the final draw of each chain only, through the
   whitelist of :func:`pymc_dp.trace.release`.

The guarantee is for exact samples of the tempered posterior: it assumes the chains
have converged (:data:`pymc_dp.routes.ops.CONVERGENCE_ASSUMPTION`). The rest of the
chains, the sampler statistics and the counts stay with the curator.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ...accounting import LedgerEntry, PrivacyLedger
from ...accounting.validation import check_epsilon
from ...routes.ops import CONVERGENCE_ASSUMPTION, MECHANISM
from .data import FEATURE_SIZES, FEATURES

__all__ = ["ops_temperature", "fit_ops", "PUBLIC_GRID_ASSUMPTION"]

#: The neighbouring relation and public facts the sensitivity Δ is derived under.
PUBLIC_GRID_ASSUMPTION = "replace-one neighbouring; the region-month grid and feature sizes are public"


def ops_temperature(epsilon: float, multiplier: float = 10.0, sizes: Sequence[int] = FEATURE_SIZES) -> dict[str, Any]:
    """OPS's floors, sensitivity and temperature for total ε.

    Parameters
    ----------
    epsilon
        The ε of one released posterior sample (> 0).
    multiplier
        M > 1: the floors are ``a₀_d = 1/(M K_d)``.
    sizes
        The feature sizes K_d (default: the five war-logs features).

    Returns
    -------
    dict
        ``"floors"`` (list, one ``a₀_d`` per feature), ``"sensitivity"`` (Δ, the
        sum over features of ``log((1 − (K_d − 1) a₀_d) / a₀_d)``) and
        ``"temperature"`` (``T = max(1, 2Δ/ε)``).

    Raises
    ------
    ValueError
        If ε is not > 0 or M is not > 1.
    """
    if not epsilon > 0 or not multiplier > 1:
        raise ValueError("epsilon must be > 0 and the floor multiplier M > 1.")
    floors = [1.0 / (multiplier * k) for k in sizes]
    delta = sum(math.log((1.0 - (k - 1) * a) / a) for k, a in zip(sizes, floors))
    return {"floors": floors, "sensitivity": delta, "temperature": max(1.0, 2.0 * delta / epsilon)}


def _whole(value: Any, name: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{name} must be a whole number >= {low}, got {value!r}.")
    return int(value)


def fit_ops(
    counts: Sequence[np.ndarray],
    num_states: int,
    epsilon: float,
    *,
    ledger: PrivacyLedger,
    multiplier: float = 10.0,
    draws: int = 100,
    tune: int = 100,
    chains: int = 1,
    emission_prior: float = 0.1,
    transition_prior: float = 1.0,
    random_seed: int | None = 0,
    progressbar: bool = False,
) -> Any:
    """Fit the war-logs HMM by OPS and release the final draw of each chain.

    Parameters
    ----------
    counts
        Per feature, the EXACT ``(R, T, K_d)`` counts
        (:func:`~pymc_dp.examples.warlogs.data.feature_counts`); they never leave
        this function.
    num_states
        K, the number of HMM states.
    epsilon
        ε of each released draw: the likelihood is tempered to ``T = max(1, 2Δ/ε)``
        (:func:`ops_temperature`), so each draw costs ``2Δ/T`` (ε, or less when ε ≥ 2Δ).
    ledger
        The :class:`~pymc_dp.accounting.PrivacyLedger` to charge (required; its
        neighbouring relation must be ``"replace"``). The whole cost, ``chains``
        draws of ``2Δ/T``, is checked against its budget before sampling starts and
        recorded only once sampling has succeeded: if sampling raises, nothing is
        released and nothing is recorded (OPS spends budget only through the draws
        it releases; the chains are the curator's in every run).
    multiplier
        M > 1: the emission floors are ``a₀_d = 1/(M K_d)``.
    draws, tune
        Iterations per chain after and during burn-in (``tune`` are discarded); only
        the last of the ``draws`` is released.
    chains
        Chains, run one after the other (``cores=1``); each releases one draw.
    emission_prior, transition_prior
        Symmetric Dirichlet concentrations β and γ (public choices).
    random_seed
        Seed for ``pm.sample`` (the step methods' generators are seeded from it).
    progressbar
        Show PyMC's progress bar.

    Returns
    -------
    xarray.DataTree or arviz.InferenceData
        The release: a ``posterior`` group holding ``theta_<feature>``,
        ``transitions``, ``initial`` and ``states`` at the final draw of each chain
        (``draw`` dimension of length 1), and the ledger (``privacy`` group and
        ``attrs["pymc_dp_ledger"]``). No sampler statistics, no counts.

    Raises
    ------
    ValueError
        For a bad ε, a missing ledger, a ledger under ``add_remove`` neighbouring,
        bad counts or sampler settings.
    BudgetExceededError
        If the release does not fit the ledger's budget (nothing is sampled or recorded).

    Notes
    -----
    The guarantee holds for exact samples of the tempered, truncated posterior: the
    ledger entry carries :data:`~pymc_dp.routes.ops.CONVERGENCE_ASSUMPTION`. The
    emission floors restrict the model (the truncation is part of the released
    posterior); ``multiplier`` trades the tail the model can express against Δ.

    Examples
    --------
    >>> from pymc_dp.accounting import Budget, PrivacyLedger
    >>> from pymc_dp.examples.warlogs import data
    >>> counts = data.feature_counts(data.generate("small", seed=0))
    >>> ledger = PrivacyLedger(budget=Budget(epsilon=2.0))
    >>> released = fit_ops(counts, 2, 1.0, ledger=ledger, draws=20, tune=20)  # doctest: +SKIP
    """
    from ...trace import release
    from .steps import clamped_counts
    from .model import fit_hmm

    eps = check_epsilon(epsilon)
    if not isinstance(ledger, PrivacyLedger):
        raise ValueError(
            "ledger is required: pass ledger=pmdp.PrivacyLedger(...) to record the released posterior draws, "
            f"got {type(ledger).__name__}."
        )
    if ledger.neighbouring != "replace":
        raise ValueError(
            f"the OPS sensitivity of the war-logs HMM is derived under replace-one neighbouring; this ledger uses "
            f"{ledger.neighbouring!r}. Use PrivacyLedger(neighbouring='replace')."
        )
    if not multiplier > 1:
        raise ValueError(f"multiplier must be > 1 (floors a0 = 1/(M K_d) < 1/K_d), got {multiplier!r}.")
    num_states = _whole(num_states, "num_states", 1)
    chains = _whole(chains, "chains", 1)
    draws = _whole(draws, "draws", 1)
    tune = _whole(tune, "tune", 0)
    arrays = [clamped_counts(c, f"counts[{d}]") for d, c in enumerate(counts)]
    if len(arrays) != len(FEATURES):
        raise ValueError(f"counts must hold the {len(FEATURES)} features {FEATURES}, got {len(arrays)} arrays.")
    sizes = [c.shape[2] for c in arrays]
    ops = ops_temperature(eps, multiplier, sizes)
    floors, delta, temperature = ops["floors"], ops["sensitivity"], ops["temperature"]
    per_draw = 2.0 * delta / temperature

    entry = LedgerEntry(
        mechanism=MECHANISM,
        epsilon=per_draw,
        count=chains,
        touched="warlogs: feature counts (HMM likelihood, " + ", ".join(FEATURES) + ")",
        neighbouring=ledger.neighbouring,
        noise_source="sampler",
        assumptions=(
            CONVERGENCE_ASSUMPTION,
            PUBLIC_GRID_ASSUMPTION,
            f"the emissions are truncated at a0 = 1/(M K_d) with M = {multiplier:g} (θ >= a0 bounds one record's "
            f"log-likelihood change by Δ = {delta:.6g})",
        ),
        details={
            "sensitivity": delta,
            "floors": dict(zip(FEATURES, floors)),
            "temperature": temperature,
            "epsilon_requested": eps,
            "multiplier": float(multiplier),
            "chains": chains,
            "samples_per_chain": 1,
            "num_states": num_states,
            "draws": draws,
            "tune": tune,
        },
    )
    ledger.check(entry)  # refuse before anything runs

    idata = fit_hmm(
        arrays, num_states, draws=draws, tune=tune, chains=chains, emission_prior=emission_prior,
        transition_prior=transition_prior, temperature=temperature, floors=floors,
        random_seed=random_seed, progressbar=progressbar,
    )
    # The spend is the release of the final draws, so it is recorded here, once they
    # exist: a run that raises above releases nothing and charges nothing (the chains
    # read the records in every run, successful or not, and are never released).
    final = idata.isel(draw=[-1])
    ledger.record(entry)
    free = [f"theta_{name}" for name in FEATURES] + ["transitions", "initial", "states"]
    return release(final, ledger=ledger, var_names=free, sample_stats=())
