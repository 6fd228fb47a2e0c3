"""Comparing PyMC models on a reusable holdout: each model's log predictive density per held-out record.

A model fitted on the training records (its posterior in ``idata``) scores a held-out
record r by its log pointwise predictive density ``log (1/S) Σ_s p(r | θ_s)`` over the S
posterior draws. :func:`log_predictive_score` turns a model into that per-record query
(the model's ``pm.Data`` inputs and its observed values replaced by a batch of records,
the model itself untouched), and :func:`compare_on_holdout` asks a
:class:`~pymc_dp.ReusableHoldout` for every model's mean score: the holdout clips each
record's score into its declared ``value_range`` and charges its ledger, and the ranking
stays honest however often the modeller comes back.

The score of record i must depend on record i alone. Structurally, the observed variable
must be elementwise (a univariate distribution, one value per record: no time series, no
multivariate likelihood), which is checked; that nothing in the model mixes the held-out
rows (standardising inside the model) is declared by building the holdout with
``batch=True``, and its ledger entries record that declaration.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np

from ..mechanisms.thresholdout import HoldoutAnswer, ReusableHoldout

__all__ = ["log_predictive_score", "compare_on_holdout", "HoldoutComparison"]


def _length(var: Any) -> int:
    """The leading length of a data container or constant (0 for a scalar)."""
    value = var.get_value() if hasattr(var, "get_value") else getattr(var, "data", None)
    value = np.asarray(value) if value is not None else np.zeros(0)
    return int(value.shape[0]) if value.ndim else 0


def _posterior_draws(idata: Any, names: list[str]) -> dict[str, np.ndarray]:
    from .. import _compat

    posterior = _compat.get_group(idata, "posterior")
    if posterior is None:
        raise ValueError("idata has no posterior group: pass the trace of the model fitted on the training records.")
    missing = [n for n in names if n not in posterior.data_vars]
    if missing:
        raise ValueError(f"idata's posterior lacks {missing}: pass the trace of this model (all its free variables).")
    out = {}
    for n in names:
        values = np.asarray(posterior[n].values)
        out[n] = values.reshape(-1, *values.shape[2:])
    return out


def log_predictive_score(
    model: Any, idata: Any, data: Callable[[np.ndarray], Mapping[str, Any]], *, observed: str | None = None,
    max_draws: int = 1000,
) -> Callable[[np.ndarray], np.ndarray]:
    """The query "log predictive density of each record" for a fitted PyMC model.

    Parameters
    ----------
    model
        The model, with its inputs in ``pm.Data`` containers (never modified).
    idata
        Its posterior, fitted on the training records.
    data
        A function from a batch of records (rows of the holdout array) to
        ``{name: values}``: new values for ``pm.Data`` containers and for the observed
        variable (by its name), one row per record.
    observed
        The observed variable scored (default: the model's only one).
    max_draws
        At most this many posterior draws are used (evenly thinned; default 1000).

    Returns
    -------
    callable
        ``score(records) -> (n,)`` log predictive densities, one per record.
    """
    import pymc as pm
    import pytensor
    import pytensor.tensor as pt
    from pymc.model.transform.conditioning import remove_value_transforms
    from pytensor.graph.replace import clone_replace

    if not callable(data):
        raise ValueError("data must be a function from a batch of records to {pm.Data name or observed name: values}.")
    if observed is None:
        if len(model.observed_RVs) != 1:
            raise ValueError(f"the model has {len(model.observed_RVs)} observed variables; name the one to score "
                             "with observed=.")
        observed = model.observed_RVs[0].name
    names = [v.name for v in model.observed_RVs]
    if observed not in names:
        raise ValueError(f"observed={observed!r} is not an observed variable of the model ({names}).")
    rv = model[observed]
    if getattr(rv.owner.op, "ndim_supp", None) != 0:
        raise ValueError(f"{observed!r} is not an elementwise (univariate) likelihood, so one record's score would "
                         "read other records; the reusable holdout scores models whose records are independent given "
                         "the parameters.")
    plain = remove_value_transforms(model)
    obs = plain[observed]
    free = [plain.rvs_to_values[v] for v in plain.free_RVs]
    obs_value = plain.rvs_to_values[obs]
    # The observed container (observed=pm.Data(...)), if any, is the observed values: one input, either name.
    alias = getattr(obs_value, "name", None) if getattr(obs_value, "name", None) in {v.name for v in plain.data_vars} \
        else None
    new_obs = pt.tensor(name=f"holdout_{observed}", shape=(None,) * obs.type.ndim, dtype=obs.type.dtype)
    logp = plain.replace_rvs_by_values([pm.logp(obs, new_obs)])[0]
    replaced = {}
    data_names = sorted(v.name for v in plain.data_vars if v.name != alias)
    for name in data_names:
        target = plain[name]
        replaced[target] = pt.tensor(name=f"holdout_{name}", shape=(None,) * target.type.ndim, dtype=target.type.dtype)
    graph = clone_replace(logp, replaced)
    fn = pytensor.function([*free, new_obs, *replaced.values()], graph, on_unused_input="ignore")
    records_in_fit = _length(obs_value)
    per_record = [n for n in data_names if _length(plain[n]) == records_in_fit and records_in_fit > 1]
    draws = _posterior_draws(idata, [v.name for v in plain.free_RVs])
    total = next(iter(draws.values())).shape[0] if draws else 1
    keep = np.unique(np.linspace(0, total - 1, min(total, int(max_draws))).astype(int))
    inputs = [observed, *data_names]

    def score(records: np.ndarray) -> np.ndarray:
        given = dict(data(records))
        if alias is not None and alias in given:
            given[observed] = given.pop(alias)
        unknown = sorted(set(given) - set(inputs))
        if unknown:
            raise ValueError(f"data returned {unknown}, which are neither pm.Data containers nor {observed!r}.")
        if observed not in given:
            raise ValueError(f"data must return the observed values {observed!r} of the records.")
        forgotten = [n for n in per_record if n not in given]
        if forgotten:
            raise ValueError(f"data must also return {forgotten}: pm.Data with one row per record (otherwise a "
                             "held-out record would be scored with a training record's values).")
        values = [np.asarray(given[observed], dtype=obs.type.dtype)]
        for n in data_names:
            value = given[n] if n in given else plain[n].get_value()
            values.append(np.asarray(value, dtype=plain[n].type.dtype))
        n_rec = values[0].shape[0]
        rows = np.empty((keep.size, n_rec))
        for k, s in enumerate(keep):
            rows[k] = np.asarray(fn(*(draws[v.name][s] for v in plain.free_RVs), *values), dtype=float).reshape(n_rec)
        top = rows.max(axis=0)
        return top + np.log(np.exp(rows - top).mean(axis=0))

    return score


@dataclass(frozen=True)
class HoldoutComparison:
    """The reusable holdout's answers for several models (mean log predictive density per record).

    Attributes
    ----------
    answers
        ``{model name: HoldoutAnswer}`` in the order given.
    """

    answers: Mapping[str, HoldoutAnswer]

    @property
    def best(self) -> str:
        """The model with the highest answered score."""
        return max(self.answers, key=lambda k: self.answers[k].value)

    def __str__(self) -> str:
        lines = ["model            holdout score   source"]
        for name, a in self.answers.items():
            lines.append(f"{name:<16} {a.value:>13.4f}   {'holdout (noisy)' if a.over_threshold else 'training'}")
        return "\n".join(lines)


def compare_on_holdout(
    holdout: ReusableHoldout, models: Mapping[str, tuple[Any, Any]], data: Callable[[np.ndarray], Mapping[str, Any]],
    *, observed: str | None = None, max_draws: int = 1000,
) -> HoldoutComparison:
    """Ask a reusable holdout for each model's mean log predictive density per record.

    Parameters
    ----------
    holdout
        A :class:`~pymc_dp.ReusableHoldout` built with ``training=`` records and
        ``batch=True``, its ``value_range`` the declared range of one record's log predictive
        density (e.g. ``(-10, 0)`` for discrete outcomes; scores outside are clipped).
    models
        ``{name: (model, idata)}``: each model and its posterior fitted on the training records.
    data, observed, max_draws
        As for :func:`log_predictive_score` (the same ``data`` for every model).

    Returns
    -------
    HoldoutComparison
        One :class:`~pymc_dp.HoldoutAnswer` per model (its ``.best``, and a printable table).
    """
    if not isinstance(holdout, ReusableHoldout):
        raise ValueError(f"holdout must be a pmdp.ReusableHoldout, got {type(holdout).__name__}.")
    if not holdout.batch:
        raise ValueError("compare_on_holdout scores all held-out records at once: build the holdout with batch=True "
                         "(its ledger entries then record that a model's score of a record reads that record alone).")
    if holdout.training is None:
        raise ValueError("compare_on_holdout needs the holdout built with training= records (each model's training "
                         "score is computed on them).")
    if not models:
        raise ValueError("models must name at least one (model, idata) pair.")
    scores = {name: log_predictive_score(m, idata, data, observed=observed, max_draws=max_draws)
              for name, (m, idata) in models.items()}
    # Before anything is spent: every score must work on a batch of another size than the fit's (the analyst's
    # own training records, one of them), or it would fail on every held-out record, silently (failures on
    # private records count as the lower end and are never reported).
    probe = holdout.training[:1]
    for name, score in scores.items():
        try:
            one = np.asarray(score(probe))
        except ValueError:
            raise
        except Exception as err:  # noqa: BLE001 - PyTensor's shape errors, on public records
            raise ValueError(
                f"model {name!r} cannot score a batch of records of another size than it was fitted to "
                f"({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}). Write its observed "
                "variable with a length that follows the data, e.g. shape=x.shape[0] or observed=pm.Data(...), and "
                "put every per-record input in pm.Data. Nothing was spent."
            ) from None
        if one.shape != (1,):
            raise ValueError(f"model {name!r} gave {one.shape} scores for one record; it must give one per record.")
    if holdout.remaining < len(models):
        raise ValueError(f"the holdout has {holdout.remaining} over-threshold answer(s) left and {len(models)} models "
                         "may each need one; compare fewer models or use a fresh holdout. Nothing was spent.")
    from ..accounting.entry import LedgerEntry
    from ..mechanisms.thresholdout import SEGMENT_MECHANISM

    worst = [LedgerEntry(SEGMENT_MECHANISM, holdout.epsilon_per_segment, count=len(models),
                         neighbouring=holdout.ledger.neighbouring)]
    with holdout.ledger.reserve(worst, what=f"comparing {len(models)} models on the reusable holdout"):
        pass  # the worst case (a new segment per model) fits the budget: the answers below will not be cut short
    return HoldoutComparison({name: holdout.query(score) for name, score in scores.items()})
