"""Tempering and log-likelihood clipping: model transforms for tempered posteriors (OPS).

* :func:`temper` returns a copy of a model whose density is
  ``p(θ) · p(X | θ)^{1/T}`` (``part="likelihood"``, the default) or
  ``(p(θ) p(X | θ))^{1/T}`` (``part="joint"``, [FGWC16] eq. 14). Both are the
  exponential mechanism with utility log p(X | θ) (base measure the prior, resp.
  Lebesgue) and the same privacy for the same T; likelihood-only keeps the prior
  as the analyst wrote it.
* :func:`clip_loglik` (from :mod:`pymc_dp.model.loglik_clip`) returns a copy in which
  every record's log-likelihood terms are clipped into ``[lower, upper]`` ([WM10] §2).

Both keep the observed variables observed (the tempering is a ``pm.Potential``
adding ``(1/T − 1)`` times the log-likelihood; a clipped variable keeps its
distribution with a clipped log-density), so every PyMC sampler works
on the result. The user's model is never modified.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from ..accounting.curator import curator_report
from .._compat import model_var, model_var_parts, fgraph_of_model, model_of_fgraph
from ..accounting.validation import check_epsilon
from ._graph import random_variables_in
from .loglik_clip import clip_loglik, loglik_clip_of

__all__ = ["temper", "clip_loglik", "loglik_clip_of", "clip_records", "records_outside_bounds", "TEMPERING_POTENTIAL"]

#: Name of the potential :func:`temper` adds.
TEMPERING_POTENTIAL = "dp_tempering"


def temper(model: Any = None, temperature: float = 1.0, *, part: str = "likelihood") -> Any:
    """A copy of ``model`` whose log-density is tempered by ``1/temperature``.

    Parameters
    ----------
    model
        The ``pm.Model`` (default: the enclosing ``with`` block's). Not modified.
    temperature
        T ≥ 1. T = 1 returns an unchanged copy.
    part
        ``"likelihood"`` (default): ``log p(θ) + log p(X | θ) / T``; ``"joint"``:
        ``(log p(θ) + log p(X | θ)) / T`` ([FGWC16] eq. 14; Potentials of the model
        count as prior and are tempered too). Jacobians of the value transforms are
        never tempered: the tempered density is of the parameters themselves.

    Returns
    -------
    pymc.Model
        The tempered copy, with one extra ``pm.Potential`` named
        :data:`TEMPERING_POTENTIAL` holding ``(1/T − 1) ×`` the tempered part.

    Raises
    ------
    ValueError
        For T < 1 or not finite, an unknown ``part``, a model without observed
        variables, or one whose density holds random variables (a potential built with
        ``pm.logp`` of a model variable whose clones PyMC cannot replace by values).
    """
    import pymc as pm
    model = pm.modelcontext(model)
    t = check_epsilon(temperature, "temperature")
    if t < 1.0:
        raise ValueError(
            f"temperature must be ≥ 1, got {t:g}: T < 1 would sharpen the posterior (and cost more privacy than "
            "an exact posterior sample)."
        )
    if part not in ("likelihood", "joint"):
        raise ValueError(f"part must be 'likelihood' or 'joint', got {part!r}.")
    if not model.observed_RVs:
        raise ValueError("the model has no observed variables: there is no likelihood to temper.")
    if TEMPERING_POTENTIAL in model.named_vars:
        raise ValueError(f"the model is already tempered (it has a variable named {TEMPERING_POTENTIAL!r}).")
    tempered = model_of_fgraph(*fgraph_of_model(model))
    if t == 1.0:
        return tempered
    # The model's own logp, not pm.logp(rv, value): for a symbolic distribution (a random walk,
    # a mixture) pm.logp lifts clones of the parents' random variables into the graph, which the
    # model then cannot replace by their values, so the potential would draw them afresh at every
    # evaluation (a random density). Model.logp replaces every random variable by its value.
    part_vars = list(tempered.observed_RVs)
    if part == "joint":
        part_vars += [*tempered.free_RVs, *tempered.potentials]
    tempered_part = tempered.logp(vars=part_vars, jacobian=False, sum=True)
    with tempered:
        pm.Potential(TEMPERING_POTENTIAL, (1.0 / t - 1.0) * tempered_part)
    left = random_variables_in([tempered.logp()])
    if left:
        raise ValueError(
            f"the tempered log density still holds random variables ({', '.join(left)}), so it would be "
            "random at every evaluation and no privacy proof holds for it. A pm.Potential of the model "
            "probably uses pm.logp of a model variable; build it from model.logp(vars=[...]) or with "
            "model.replace_rvs_by_values first."
        )
    return tempered


def _clipped_values(
    model: Any, families: Mapping[str, tuple[Any, Mapping[str, Any]]]
) -> tuple[dict[str, np.ndarray], dict[str, int], dict[str, int]]:
    """The observed records repaired and clipped into their bounds (only variables with records changed), the
    numbers clipped and the numbers of malformed records replaced.

    A malformed record (NaN, infinite, outside the family's support) is replaced by the family's default record
    (:meth:`~pymc_dp.families.Family.repair`), never refused: see there why the sensitivity still holds.
    """
    from .privatize_model import _observed_records

    new_values: dict[str, np.ndarray] = {}
    clipped: dict[str, int] = {}
    replaced: dict[str, int] = {}
    for rv in model.observed_RVs:
        if rv.name not in families:
            continue
        family, bounds = families[rv.name]
        records = np.asarray(_observed_records(model, rv))
        flat = records.reshape(records.shape[0], -1) if records.ndim > 1 else records
        values, malformed = family.repair(flat.astype(float), bounds)
        mask = np.zeros(flat.shape[0], dtype=bool)
        if bounds:
            values, mask = family.clip(values, bounds)
        count, bad = int(np.asarray(mask).sum()), int(np.asarray(malformed).sum())
        if count:
            clipped[rv.name] = count
        if bad:
            replaced[rv.name] = bad
        if count or bad:
            new_values[rv.name] = np.asarray(values, dtype=records.dtype).reshape(records.shape)
    return new_values, clipped, replaced


def records_outside_bounds(model: Any, families: Mapping[str, tuple[Any, Mapping[str, Any]]]) -> dict[str, int]:
    """``{observed variable: number of records outside its declared bounds or malformed}`` (only variables with some)."""
    _, clipped, replaced = _clipped_values(model, families)
    return {n: clipped.get(n, 0) + replaced.get(n, 0) for n in {**clipped, **replaced}}


def clip_records(model: Any, families: Mapping[str, tuple[Any, Mapping[str, Any]]]) -> tuple[Any, dict[str, int]]:
    """A copy of ``model`` whose observed records are repaired and clipped into their declared bounds.

    ``families`` maps observed variable names to ``(family, checked bounds)``. A malformed
    record (NaN, infinite, outside the family's support: a Poisson −1, a Bernoulli 0.5) is
    replaced by the family's default record inside the bounds
    (:meth:`~pymc_dp.families.Family.repair`), never refused (a refusal would say that some
    record is malformed); records outside the bounds are clipped. Both are counted and
    reported to the curator only (:class:`~pymc_dp.families.ClippedRecordsWarning` inside
    :func:`~pymc_dp.curator_reports`). Returns the copy and the numbers clipped.
    """
    import pytensor.tensor as pt
    from pymc.model.fgraph import ModelObservedRV

    from ..families import ClippedRecordsWarning

    new_values, clipped, replaced = _clipped_values(model, families)
    if clipped:
        curator_report(
            "records outside the declared bounds were clipped to them: "
            + ", ".join(f"{n!r}: {c}" for n, c in clipped.items()),
            ClippedRecordsWarning,
            stacklevel=3,
        )
    if replaced:
        curator_report(
            "records that were NaN, infinite or outside the support of their likelihood were replaced by its default "
            "record: " + ", ".join(f"{n!r}: {c}" for n, c in replaced.items()) + " (not released)",
            ClippedRecordsWarning,
            stacklevel=3,
        )
    if not new_values:
        return model, clipped
    fg, initvals = fgraph_of_model(model)
    for node in [n for n in fg.apply_nodes if isinstance(n.op, ModelObservedRV)]:
        name = node.outputs[0].name
        if name in new_values:
            parts = model_var_parts(node)
            value = pt.constant(new_values[name], dtype=parts.value.dtype)
            observed = model_var("observed", parts.var, name, value=value, dims=parts.dims)
            fg.replace(node.outputs[0], observed, import_missing=True)
    return model_of_fgraph(fg, initvals), clipped
