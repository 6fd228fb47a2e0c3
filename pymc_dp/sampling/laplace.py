"""The Laplace route of ``pmdp.sample``: privatise the observed records once, then sample for free.

The spend is the privatisation: each observed variable's statistics get their
Laplace noise (through :func:`pymc_dp.privatize_model`), and each release is
recorded in the ledger as its noise is drawn. ``pm.sample`` afterwards reads only
those noisy statistics. So if ``pm.sample`` later raises, the entries stay: the
noise was drawn and the statistics exist (the sampler may have exposed functions of
them, e.g. in an error message) -- their cost is spent whether or not a trace comes
back. Sampling failures cost nothing more, because sampling never reads the records.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from .. import _compat
from ..accounting import PrivacyLedger
from ..model import privatize_model, statistics_of
from ..trace import release

__all__ = ["sample_laplace"]


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


def sample_laplace(
    model: Any,
    draws: int,
    *,
    epsilon: float | None,
    bounds: Mapping[str, Mapping[str, Any]] | None,
    ledger: PrivacyLedger | None,
    epsilon_split: Mapping[str, float] | None,
    neighbouring: str | None,
    noise_rng: Any,
    noise_aware: bool | str,
    public: Sequence[str],
    pm_sample_kwargs: Mapping[str, Any],
) -> Any:
    """``pmdp.sample(method="laplace")``: see :func:`pymc_dp.sample`."""
    import pymc as pm

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

    # The privatisation entries are already in the ledger; a failure below leaves them
    # there (the noise was drawn) and charges nothing more (module docstring).
    idata = pm.sample(draws, model=sampled_model, **pm_sample_kwargs)
    stats = _compat.get_group(idata, "sample_stats")
    kept_stats = tuple(s for s in stats.data_vars if not s.startswith(_TIMING_STATS)) if stats is not None else ()
    return release(idata, ledger=ledger, model=sampled_model, sample_stats=kept_stats)


# Wall-clock statistics say nothing about the posterior; they are left out of every
# release as a matter of course (timing is a classic side channel).
_TIMING_STATS = ("perf_counter", "process_time")
