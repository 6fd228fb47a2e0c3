"""``pmdp.sample``: the one entry point that privatises, samples and releases."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from .accounting import PrivacyLedger
from .model import privatize_model, statistics_of
from .trace import release

__all__ = ["sample", "METHODS"]

#: The privacy routes ``sample`` implements.
METHODS = ("laplace",)


def _ledger_of_statistics(model: Any, ledger: PrivacyLedger | None) -> PrivacyLedger:
    used = statistics_of(model)
    if ledger is not None:
        missing = [s for s in used if s.entry_id not in {e.id for e in ledger.entries}]
        if missing:
            return PrivacyLedger.combine([ledger, *(s.ledger for s in missing)], budget=ledger.budget)
        return ledger
    if not used:
        raise ValueError(
            "the model observes neither records nor privatised statistics: pass a model with observed "
            "variables and epsilon=, or use pmdp.observe_stats with the output of pmdp.privatize."
        )
    ledgers = {id(s.ledger): s.ledger for s in used}
    if len(ledgers) == 1:
        return next(iter(ledgers.values()))
    return PrivacyLedger.combine(ledgers.values())


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
    model: Any = None,
    **pm_sample_kwargs: Any,
) -> Any:
    """Sample a PyMC model privately and return the released trace with its ledger.

    Two ways in:

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

    Parameters
    ----------
    draws
        Draws per chain, passed to ``pm.sample``.
    epsilon
        Total ε to spend privatising the model's observed variables (the privacy flag).
    method
        ``"laplace"``: privatised sufficient statistics (the only route so far).
    bounds
        ``{observed variable: family bounds}`` for families with unbounded support,
        e.g. ``{"y": {"x": (0.0, 10.0)}}``.
    ledger
        Ledger to charge (and whose budget is checked before any noise is drawn).
    epsilon_split
        Weights splitting ε across observed variables (default: evenly).
    neighbouring
        ``"replace"`` (default) or ``"add_remove"``; defaults to the ledger's relation.
    noise_rng
        ``None`` for secure noise (default); a seed or Generator for reproducible
        seeded noise. (``random_seed`` seeds the sampler only.)
    noise_aware
        With the privacy flag: ``"auto"`` (default) models the noise for every
        observed variable whose family has a noise-aware likelihood (see
        :func:`pymc_dp.observe_stats`; N public) and plugs the statistics in for the others;
        ``True`` / ``False`` force one or the other (see :func:`pymc_dp.observe_stats`).
    public
        Names of observed variables whose records are public (non-private auxiliary
        data): they are used as they are, not privatised, cost nothing, and sharpen
        the posterior ([WM10] Fig. 3b). With the privacy flag the declaration is
        recorded as an assumption in the ledger. A model built on privatised
        statistics may observe only public variables, each declared here.
    model
        The model (default: the enclosing ``with`` block's).
    **pm_sample_kwargs
        Passed to ``pm.sample`` (``tune``, ``chains``, ``cores``, ``random_seed``,
        ``step``, ``progressbar``, ...).

    Returns
    -------
    arviz.InferenceData
        The released trace (:func:`pymc_dp.release`): the posterior, the sampler's
        statistics (all functions of the privatised statistics only; wall-clock
        timings are left out) and the ledger
        (``pmdp.ledger(idata)``). No observed or constant data, no log-likelihood,
        no record-level coordinates.

    Raises
    ------
    ValueError
        For an unknown method, a missing ``epsilon`` when the model observes
        records, an observed variable of an unsupported family (named, with a
        pointer to ``method="ops"``), missing bounds, or a model with no data.
    pymc_dp.BudgetExceededError
        If the ledger's budget cannot pay ``epsilon``; nothing is drawn then.

    Examples
    --------
    >>> with pm.Model() as model:  # doctest: +SKIP
    ...     p = pm.Beta("p", 1, 1)
    ...     pm.Bernoulli("y", p=p, observed=records)
    ...     idata = pmdp.sample(epsilon=1.0, random_seed=1)
    >>> print(pmdp.ledger(idata).summary())  # doctest: +SKIP
    """
    import pymc as pm

    if method not in METHODS:
        raise ValueError(
            f"method must be one of {METHODS}, got {method!r}. ('ops' — a tempered posterior — and 'gibbs' — "
            "private step methods — are not part of this version.)"
        )
    for key in ("return_inferencedata", "trace"):
        if key in pm_sample_kwargs:
            raise ValueError(f"pmdp.sample always returns a released InferenceData; {key}= is not supported.")
    model = pm.modelcontext(model)
    public_names = (public,) if isinstance(public, str) else tuple(public)
    unknown = sorted(set(public_names) - {rv.name for rv in model.observed_RVs})
    if unknown:
        raise ValueError(f"public names {unknown}, which are not observed variables of the model.")
    private_names = [rv.name for rv in model.observed_RVs if rv.name not in public_names]
    if private_names:
        if epsilon is None:
            raise ValueError(
                f"the model observes records ({', '.join(map(repr, private_names))}); pass epsilon= to privatise "
                "them (the privacy flag), declare them public=[...] if they are not private, or build the model "
                "on pmdp.privatize + pmdp.observe_stats."
            )
        private = privatize_model(
            model, epsilon, bounds=bounds, ledger=ledger, epsilon_split=epsilon_split,
            neighbouring=neighbouring, rng=noise_rng, noise_aware=noise_aware, public=public_names,
        )
        sampled_model, ledger = private.model, private.ledger
    else:
        if epsilon is not None or bounds is not None or epsilon_split is not None:
            raise ValueError(
                "the model has no observed records to privatise, so epsilon/bounds/epsilon_split do not apply; "
                "its privatised statistics were paid for when pmdp.privatize ran."
            )
        sampled_model = model
        ledger = _ledger_of_statistics(model, ledger)

    idata = pm.sample(draws, model=sampled_model, **pm_sample_kwargs)
    stats = idata.sample_stats if "sample_stats" in idata.groups() else None
    kept_stats = tuple(s for s in stats.data_vars if not s.startswith(_TIMING_STATS)) if stats is not None else ()
    return release(idata, ledger=ledger, model=sampled_model, sample_stats=kept_stats)


# Wall-clock statistics say nothing about the posterior; they are left out of every
# release as a matter of course (timing is a classic side channel).
_TIMING_STATS = ("perf_counter", "process_time")
