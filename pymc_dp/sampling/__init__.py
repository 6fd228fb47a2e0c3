"""``pmdp.sample``: the one entry point that picks a privacy route, samples and releases.

Routes (``method=``):

* ``"laplace"`` (:mod:`pymc_dp.sampling.laplace`): the observed records' sufficient
  statistics are privatised once; every draw after that is free post-processing.
* ``"ops"`` (:mod:`pymc_dp.sampling.ops`): a tempered posterior, one released draw per
  chain, each charged ε, valid for exact samples ("assumes convergence").
* ``"gibbs"`` (:mod:`pymc_dp.sampling.gibbs`): private step methods, every update
  charged as it runs; the whole chain is released, no convergence assumed.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..accounting import PrivacyLedger
from .gibbs import GibbsPlan, plan_gibbs, sample_gibbs
from .laplace import sample_laplace
from .ops import OPSPlan, plan_ops, sample_ops

__all__ = ["sample", "METHODS", "OPSPlan", "plan_ops", "GibbsPlan", "plan_gibbs"]

#: The privacy routes ``sample`` implements.
METHODS = ("laplace", "ops", "gibbs")


def sample(
    draws: int = 1000,
    *,
    epsilon: float | None = None,
    method: str = "laplace",
    bounds: Mapping[str, Mapping[str, Any]] | None = None,
    ledger: PrivacyLedger | None = None,
    epsilon_split: Mapping[str, float] | None = None,
    neighbouring: str | None = None,
    noise_rng: Any = None,
    noise_aware: bool | str = "auto",
    public: Sequence[str] = (),
    truncate: Mapping[str, Any] | None = None,
    loglik_clip: Sequence[float] | None = None,
    samples: int = 1,
    tempered: str = "likelihood",
    temperature: float | None = None,
    acceptance: str = "barker",
    delta: float = 0.0,
    model: Any = None,
    **pm_sample_kwargs: Any,
) -> Any:
    """Sample a PyMC model privately and return the released trace with its ledger.

    With ``method="laplace"`` (the default) there are two ways in:

    * **the privacy flag** — a model with ordinary observed variables and
      ``epsilon=``: every observed variable of a supported family is privatised
      (its sufficient statistics get Laplace noise once, ε split across variables),
      a record-free copy of the model is sampled (the user's model is not changed),
      and the trace is released;
    * **privatised statistics** — a model built with :func:`pymc_dp.observe_stats`
      (no ``epsilon``): it is sampled as it is, and the ledgers of the statistics it
      uses are attached.

    Either way the sampled model contains no records, so everything ``pm.sample``
    does — any step method, chains, draws, tuning — is post-processing and costs
    nothing beyond what the ledger shows; and its run time does not grow with N.

    With ``method="ops"`` (one posterior sample, [FGWC16] §2.2) the model keeps its
    records: the log-likelihood's sensitivity Δ to one record is proven from the
    declared truncation (``truncate=``, or priors such as ``pm.Uniform``), data
    bounds (``bounds=``) or log-likelihood clip (``loglik_clip=``)
    (:func:`pymc_dp.loglik_sensitivity`); the likelihood is tempered to
    T = max(1, 2Δ/ε) (:func:`pymc_dp.temper`); the tempered model is sampled with
    any PyMC sampler; and only ``samples`` draws per chain (default: the last) are
    released. **Each released draw costs ε** (2Δ when ε ≥ 2Δ and T = 1), so the run
    costs ``chains × samples × ε``, checked against the budget before sampling. The
    ledger entry says the guarantee *assumes convergence*: it holds for exact
    samples of the tempered posterior only.

    With ``method="gibbs"`` (private MCMC, [FGWC16] §4.1) every free variable whose
    conditional reads the data gets a private step — :class:`pymc_dp.PrivateGibbs`
    (exact conjugate updates; per-record latents in one scan, charged once by parallel
    composition) or :class:`pymc_dp.PrivateMetropolis` (Barker acceptance) — at one
    temperature T; each update costs 2Δ_l/T. The run's whole cost —
    (tune + draws) × chains draws, **tuning included** — is computed and checked
    against the budget before the first draw; given ``epsilon`` (the whole run's
    budget) the temperature that spends it is chosen. The ledger is then built from
    the per-draw sample stats ``dp_epsilon``/``dp_delta`` of every chain, and the whole
    chain is released: the guarantee **does not assume convergence**. If the run
    fails (any exception out of ``pm.sample``), the planned cost — the upper bound on
    the updates that ran — is recorded in ``ledger`` with the interruption noted, and
    the exception is re-raised.

    On failure the other routes charge what was spent and no more: ``"laplace"`` keeps
    the privatisation's entries (its noise was drawn before ``pm.sample`` ran), and
    ``"ops"`` records nothing (its spend is the released draws, and a failed run
    releases none).

    Parameters
    ----------
    draws
        Draws per chain, passed to ``pm.sample``.
    epsilon
        ``"laplace"``: total ε to spend privatising the model's observed variables
        (the privacy flag). ``"ops"``: ε per released posterior sample.
        ``"gibbs"``: the whole run's budget (T is chosen to spend it).
    method
        ``"laplace"`` (privatised sufficient statistics), ``"ops"`` (tempered
        posterior, one posterior sample per chain) or ``"gibbs"`` (private step
        methods, every update charged).
    bounds
        ``{observed variable: family bounds}`` for families with unbounded support,
        e.g. ``{"y": {"x": (0.0, 10.0)}}``; records outside are clipped to them.
    ledger
        Ledger to charge (and whose budget is checked before any noise is drawn or
        any draw is made).
    epsilon_split
        ``"laplace"``: weights splitting ε across observed variables (default: evenly).
    neighbouring
        ``"replace"`` (default) or ``"add_remove"``; defaults to the ledger's relation.
    noise_rng
        ``"laplace"``: ``None`` for secure noise (default); a seed or Generator for
        reproducible seeded noise. (``random_seed`` seeds the sampler only.)
    noise_aware
        ``"laplace"`` with the privacy flag: ``"auto"`` (default) models the noise for
        every observed variable whose family has a noise-aware likelihood (see
        :func:`pymc_dp.observe_stats`; N public) and plugs the statistics in for the
        others; ``True`` / ``False`` force one or the other.
    public
        ``"laplace"``: names of observed variables whose records are public
        (non-private auxiliary data): they are used as they are, not privatised, cost
        nothing, and sharpen the posterior ([WM10] Fig. 3b). With the privacy flag
        the declaration is recorded as an assumption in the ledger. A model built on
        privatised statistics may observe only public variables, each declared here.
    truncate
        ``"ops"``: ``{free variable: (lower, upper)}`` or ``{dirichlet: a0}`` applied
        with :func:`pymc_dp.truncate` before Δ is computed.
    loglik_clip
        ``"ops"``: ``(lower, upper)``: clip every record's log-likelihood term
        (:func:`pymc_dp.clip_loglik`), Δ = upper − lower per observed variable.
    samples
        ``"ops"``: draws released per chain (default 1), spread evenly over the chain
        and ending at its last draw; each costs ε.
    tempered
        ``"ops"``: ``"likelihood"`` (default; the prior stays as written) or
        ``"joint"`` ([FGWC16] eq. 14) — see :func:`pymc_dp.temper`.
    temperature
        ``"gibbs"``: T ≥ 1 of every private step, instead of ``epsilon``; the run's
        cost then follows and is checked against the ledger's budget.
    acceptance
        ``"gibbs"``: acceptance of :class:`pymc_dp.PrivateMetropolis` steps for
        non-conjugate variables: ``"barker"`` (default; pure ε) or ``"metropolis"``
        ((0, 1 − e^{−2Δ/T}) per step).
    delta
        ``"gibbs"`` with ``epsilon``: fit T so that the tightest valid accountant
        (RDP/PLD, ``"best"``) at this δ spends ``epsilon``; 0 (default) fits the pure
        basic total.
    model
        The model (default: the enclosing ``with`` block's).
    **pm_sample_kwargs
        Passed to ``pm.sample`` (``tune``, ``chains``, ``cores``, ``random_seed``,
        ``step``, ``progressbar``, ...).

    Returns
    -------
    xarray.DataTree or arviz.InferenceData
        What ``pm.sample`` returns on the installed PyMC (a ``DataTree`` on PyMC 6, an
        ``InferenceData`` on PyMC 5): the released trace (:func:`pymc_dp.release`) with its ledger
        (``pmdp.ledger(idata)``). ``"laplace"``: the posterior and the sampler's
        statistics (all functions of the privatised statistics only; wall-clock
        timings are left out). ``"ops"``: the released draws only (``samples`` per
        chain), no sampler statistics. Never observed or constant data,
        log-likelihood, or record-level coordinates.

    Raises
    ------
    ValueError
        For an unknown method, a missing ``epsilon`` when the model observes
        records, an observed variable of an unsupported family (named, with a
        pointer to ``method="ops"``), missing bounds, a model with no data, or
        (``"ops"``) a sensitivity that cannot be proven (the message says which
        truncation, bound or clip to declare).
    pymc_dp.BudgetExceededError
        If the ledger's budget cannot pay for the release; nothing is drawn then.
    Exception
        Whatever ``pm.sample`` raises, re-raised after the ledger has been charged
        as described above (``"gibbs"``: the planned cost, with the interruption
        noted; ``"laplace"``: the privatisation; ``"ops"``: nothing). A
        ``KeyboardInterrupt`` that PyMC catches is not an error: the partial trace
        is released and the planned cost charged.

    Examples
    --------
    >>> with pm.Model() as model:  # doctest: +SKIP
    ...     p = pm.Beta("p", 1, 1)
    ...     pm.Bernoulli("y", p=p, observed=records)
    ...     idata = pmdp.sample(epsilon=1.0, random_seed=1)
    ...     one = pmdp.sample(epsilon=1.0, method="ops", truncate={"p": (0.05, 0.95)}, chains=1)
    >>> print(pmdp.ledger(idata).summary())  # doctest: +SKIP
    """
    import pymc as pm

    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}.")
    for key in ("return_inferencedata", "trace"):
        if key in pm_sample_kwargs:
            raise ValueError(
                f"pmdp.sample always returns the released trace (InferenceData or DataTree); {key}= is not supported."
            )
    model = pm.modelcontext(model)
    gibbs_only = {"temperature": temperature is not None, "acceptance": acceptance != "barker", "delta": delta != 0.0}
    if method != "gibbs":
        misplaced = [k for k, given in gibbs_only.items() if given]
        if misplaced:
            raise ValueError(f"{', '.join(misplaced)} apply to method='gibbs' only.")
    ops_only = {"truncate": truncate, "loglik_clip": loglik_clip}
    if method == "laplace":
        misplaced = [k for k, v in ops_only.items() if v is not None]
        misplaced += ["samples"] if samples != 1 else []
        misplaced += ["tempered"] if tempered != "likelihood" else []
        if misplaced:
            raise ValueError(
                f"{', '.join(misplaced)} do not apply to method='laplace' (they shape tempered posteriors: "
                "method='ops', and truncate also method='gibbs')."
            )
        return sample_laplace(
            model, draws, epsilon=epsilon, bounds=bounds, ledger=ledger, epsilon_split=epsilon_split,
            neighbouring=neighbouring, noise_rng=noise_rng, noise_aware=noise_aware, public=public,
            pm_sample_kwargs=pm_sample_kwargs,
        )
    laplace_only = {"epsilon_split": epsilon_split is not None, "noise_rng": noise_rng is not None,
                    "noise_aware": noise_aware != "auto", "public": bool(public)}
    misplaced = [k for k, given in laplace_only.items() if given]
    if misplaced:
        raise ValueError(
            f"{', '.join(misplaced)} apply to method='laplace' only (a tempered posterior draws no noise of its own "
            "and uses every observed variable)."
        )
    if method == "gibbs":
        misplaced = (["loglik_clip"] if loglik_clip is not None else []) + (["samples"] if samples != 1 else [])
        misplaced += ["tempered"] if tempered != "likelihood" else []
        if misplaced:
            raise ValueError(
                f"{', '.join(misplaced)} apply to method='ops' only (private steps temper the likelihood of each "
                "conditional and release every draw)."
            )
        return sample_gibbs(
            model, draws, epsilon=epsilon, delta=delta, temperature=temperature, acceptance=acceptance, bounds=bounds,
            truncation=truncate, ledger=ledger, neighbouring=neighbouring, pm_sample_kwargs=pm_sample_kwargs,
        )
    return sample_ops(
        model, draws, epsilon=epsilon, samples=samples, bounds=bounds, truncation=truncate,
        loglik_clip=loglik_clip, part=tempered, ledger=ledger, neighbouring=neighbouring,
        pm_sample_kwargs=pm_sample_kwargs,
    )
