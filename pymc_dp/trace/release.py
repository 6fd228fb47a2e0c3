"""Build the trace that may leave the curator, from a whitelist.

``pm.sample`` output carries the private data in many places: the
``observed_data`` and ``constant_data`` groups, per-record ``log_likelihood``,
Deterministics of the data, coordinate values (record ids), data-dependent sampler
statistics (``lp``, ``energy``, ``step_size``, ...) and timing attributes.
:func:`release` never deletes what it knows to be bad; it copies what it knows to
be safe into a new object and nothing else.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import xarray as xr

from ..accounting import PrivacyLedger
from .. import _compat
from ..model._graph import PUBLIC_DATA, DroppedDeterministicWarning, ancestors, group_level_data, number_of_records_private, record_dims
from .ledger_io import LEDGER_ATTR, PRIVACY_GROUP, VERSION_ATTR, _attach, _pymc_dp_version

__all__ = [
    "release", "data_dependent_deterministics", "imputed_variables", "check_released_variables", "check_release_plan",
    "RELEASED_ATTRS", "public_containers", "group_level_assumption",
]

#: Attributes copied into a released trace (top level and per group); everything else
#: is dropped. ``created_at`` is released as the date the trace was built (its day,
#: not its time: with the ledger's dated entries a time would give how long the run
#: took), one value for every group.
#: ``sampling_time`` and ``tuning_steps`` are NOT released: how long sampling took
#: depends on the data-dependent posterior geometry.
RELEASED_ATTRS = ("arviz_version", "inference_library", "inference_library_version", "created_at")


def _ancestors(graphs: Sequence[Any], blockers: Sequence[Any]) -> Iterable[Any]:
    """The graphs' ancestors, the leaves of inner graphs (``OpFromGraph``, ``Scan``) included: a Deterministic
    computed by an inner graph that closes over data reads that data."""
    return ancestors(graphs, blockers=blockers)


def data_dependent_deterministics(model: Any) -> dict[str, str]:
    """The Deterministics of ``model`` whose value depends on data, and why.

    The graph of every Deterministic is walked back (``pytensor`` ancestors) and the
    walk stops at free random variables: their posterior draws are the released
    quantity, so a Deterministic that is a function of free variables only is
    post-processing of them. A Deterministic is data-dependent if the walk reaches

    * an observed random variable, or its observed value;
    * a ``pm.Data`` container, or any other shared variable that is not a random
      generator (shared variables are how data enters a model) nor one holding numbers
      already released (privatised statistics, tagged by :func:`pymc_dp._compat.mark_released`);
    * a constant array with more than one element: NumPy data passed straight into
      a model becomes such a constant and cannot be told apart from a covariate.
      This is conservative: a Deterministic built with a literal vector such as
      ``pt.as_tensor([0.0, 1.0])`` is also refused.

    A statistic computed in NumPy *before* it enters the model and folded into a
    scalar constant (e.g. ``p * y.mean()``) cannot be detected by any graph walk;
    never build Deterministics that way.

    Parameters
    ----------
    model
        A ``pymc.Model``.

    Returns
    -------
    dict
        ``{name: reason}`` for each data-dependent Deterministic.
    """
    from pytensor.compile.sharedvalue import SharedVariable
    from pytensor.graph.basic import Constant
    from pytensor.tensor.random.type import RandomType

    markers: dict[Any, str] = {}
    for rv in model.observed_RVs:
        markers[rv] = f"the observed variable {rv.name!r}"
        value = model.rvs_to_values.get(rv)
        if value is not None:
            markers[value] = f"the observed data of {rv.name!r}"
    public = public_containers(model)
    for dv in getattr(model, "data_vars", []):
        if dv not in public:
            markers[dv] = f"the pm.Data container {dv.name!r}"

    blockers = list(model.free_RVs)
    out: dict[str, str] = {}
    for det in model.deterministics:
        structure = _index_structure(model, det, blockers)
        for var in _ancestors([det], blockers):
            if var in public or var in structure:
                continue
            if var in markers:
                reason = markers[var]
            elif (isinstance(var, SharedVariable) and not isinstance(var.type, RandomType)
                  and not _compat.is_released(var)):  # released statistics are already private
                reason = f"the shared variable {var.name or var!s} (shared variables carry data)"
            elif isinstance(var, Constant) and np.size(getattr(var, "data", None)) > 1:
                reason = (
                    f"a constant array of shape {np.shape(var.data)} (NumPy data passed into the model "
                    "becomes such a constant; values of the groups declared as pm.Data(name, values, dims=<the "
                    "group dim>) are read as public group-level data, and a Deterministic of them is kept)"
                )
            else:
                continue
            out[det.name] = reason
            break
    return out


def public_containers(model: Any) -> set[Any]:
    """The ``pm.Data`` containers every route reads as public: declared (``public=``) or group-level.

    Group-level data (:func:`~pymc_dp.model._graph.group_level_data`, dims none as long as
    the records nor along them) is a covariate of the groups, public like the dims; the
    routes record it in the ledger as an assumption (:func:`group_level_assumption`).
    """
    along = record_dims(model)
    dims_of = getattr(model, "named_vars_to_dims", {})
    declared = set(getattr(model, PUBLIC_DATA, ()))
    out = {v for v in getattr(model, "data_vars", []) if v.name in declared}
    out |= {v for v in group_level_data(model) if not set(dims_of.get(v.name) or ()) & along}
    return out


def group_level_assumption(model: Any) -> tuple[str, ...]:
    """The ledger assumption naming the group-level containers read as public (none: empty)."""
    dims_of = getattr(model, "named_vars_to_dims", {})
    found = [v for v in group_level_data(model) if v.name not in set(getattr(model, PUBLIC_DATA, ()))]
    if not found:
        return ()
    listed = ", ".join(f"{v.name!r} (dims {', '.join(dims_of.get(v.name) or ())})" for v in found)
    return (f"pm.Data {listed} read as public group-level data (not one row per record): used as given, "
            "not privatised; values computed from the records would make this guarantee wrong",)


def imputed_variables(model: Any) -> dict[str, str]:
    """The free variables PyMC created to impute missing observations: ``{free variable: observed variable}``.

    Observed data with NaN (or a masked array) makes PyMC split the variable ``y`` into
    an observed ``y_observed``, a free ``y_unobserved`` with one entry per missing
    record, and a Deterministic ``y`` joining them. The free variable's shape is the
    number of missing records: releasing it, or anything of its shape, releases that
    count, which no ε covers.
    """
    observed = {rv.name for rv in model.observed_RVs}
    deterministics = {d.name for d in model.deterministics}
    out = {}
    for rv in model.free_RVs:
        base = rv.name[: -len("_unobserved")] if rv.name.endswith("_unobserved") else None
        if base and f"{base}_observed" in observed and base in deterministics:
            out[rv.name] = f"{base}_observed"
    return out


#: Operations whose inputs after the first (after the second for the ``Inc`` ones) are indices.
_INDEXING = {"Subtensor": 1, "AdvancedSubtensor": 1, "AdvancedSubtensor1": 1, "IncSubtensor": 2,
             "AdvancedIncSubtensor": 2, "AdvancedIncSubtensor1": 2}


def _index_structure(model: Any, det: Any, blockers: Sequence[Any]) -> set[Any]:
    """Integer constants that index parameters in ``det``'s graph and do not look like records: the packing of a
    ``LKJCholeskyCov`` factor (its ``tril`` indices), a reordering of a parameter vector. A per-record group
    index (as long as the records, or long enough to be records when N is private) stays data."""
    from pytensor.graph.basic import Constant

    from ..model._graph import data_leaves

    found = set()
    for var in _ancestors([det], blockers):
        node = var.owner
        first = _INDEXING.get(type(node.op).__name__) if node is not None else None
        if first is None:
            continue
        for index in node.inputs[first:]:
            if isinstance(index, Constant) and str(getattr(index, "dtype", "")).startswith(("int", "uint")):
                found.add(index)
    records = set(data_leaves(list(found), record_counts=_record_counts(model))) if found else set()
    return found - records


def _record_counts(model: Any) -> set[int]:
    counts = set()
    for rv in model.observed_RVs:
        shape = tuple(getattr(model.rvs_to_values.get(rv), "type", rv.type).shape or ())
        if shape and shape[0] is not None:
            counts.add(int(shape[0]))
    return counts


def _shape_reads_data(model: Any, var: Any, public: Sequence[str] = ()) -> str | None:
    """Why ``var``'s shape is a function of data (a ``pm.Data`` container, observed values), or None."""
    from pytensor.compile.sharedvalue import SharedVariable
    from pytensor.tensor.random.type import RandomType

    observed_values = {model.rvs_to_values.get(rv) for rv in model.observed_RVs} | set(model.observed_RVs)
    # The length of a dim declared with coords (a shared scalar on PyMC 6) is a size the
    # model declares, not data; a dim whose length follows a data container is not a leaf.
    declared = {v for v in getattr(model, "dim_lengths", {}).values() if getattr(v, "owner", None) is None}
    declared |= set(group_level_data(model))  # pm.Data with group dims: public, as its dims are
    public = set(public) | set(getattr(model, PUBLIC_DATA, ()))  # containers declared public (public=)
    declared |= {v for v in getattr(model, "data_vars", []) if v.name in public}
    for leaf in _ancestors([var.shape], blockers=[]):
        if leaf in declared:
            continue
        if leaf in observed_values:
            return f"the observed data of {leaf.name!r}"
        if isinstance(leaf, SharedVariable) and not isinstance(leaf.type, RandomType) and not _compat.is_released(leaf):
            return f"the data container {leaf.name!r}"
    return None


def check_released_variables(model: Any, names: Sequence[str], dim_lengths: Mapping[str, tuple[int, ...]],
                             neighbouring: str = "replace", public: Sequence[str] = ()) -> None:
    """Refuse to release a variable that reveals a data-dependent size.

    The released trace may hold only variables the user declared that do not read
    the records, and no dimension whose length depends on the data. Refused:

    * variables PyMC created to impute missing values (:func:`imputed_variables`);
    * variables whose shape is computed from data (a ``pm.Data`` container, observed
      values), unless every such dimension has the length of an observed variable's
      records, N, and N is public (``neighbouring="replace"``);
    * under ``neighbouring="add_remove"`` (N is private), any variable along an observed
      variable's first dim (by name). No length is compared with N there: a refusal that
      followed N would tell it to whoever varies the length. A length the analyst's own
      code computes from the records (``shape=len(y)``) is the analyst's release of N,
      which no check can see without telling N itself; name the records' dim instead.

    Parameters
    ----------
    model
        The model that produced the trace.
    names
        The posterior variables to be released.
    dim_lengths
        ``{name: shape without chain and draw}`` of each.
    neighbouring
        The ledger's neighbouring relation.
    public
        ``pm.Data`` containers the analyst declared public (``public=`` of the routes).

    Raises
    ------
    ValueError
        Naming the variable and why its size is private.
    """
    with number_of_records_private(neighbouring == "add_remove"):  # N private: no size is compared with it
        _check_released_variables(model, names, dim_lengths, neighbouring, public)


def _check_released_variables(model: Any, names: Sequence[str], dim_lengths: Mapping[str, tuple[int, ...]],
                              neighbouring: str, public: Sequence[str]) -> None:
    imputed = imputed_variables(model)
    counts = _record_counts(model)
    by_name = {v.name: v for v in [*model.free_RVs, *model.deterministics]}
    for name in names:
        shape = tuple(dim_lengths.get(name, ()))
        if name in imputed:
            raise ValueError(
                f"cannot release {name!r}: PyMC created it to impute the missing values of {imputed[name]!r}, one entry "
                "per missing record, so its shape tells how many records are missing. Drop the incomplete records "
                "before building the model."
            )
        var = by_name.get(name)
        reason = _shape_reads_data(model, var, public) if var is not None else None
        if reason and not (neighbouring == "replace" and shape and all(n in counts for n in shape)):
            shown = "" if neighbouring == "add_remove" else f" {shape}"  # under add/remove a shape may be N
            raise ValueError(
                f"cannot release {name!r}: its shape{shown} is computed from {reason}, so it is a function of the "
                "private data. Give it a public size (a literal, or coords declared from public values)."
            )
        # Under add/remove N is private: a variable along the records' dim (by name: comparing its length with N
        # would itself tell N to whoever varies that length) is refused, without its shape.
        along = set(getattr(model, "named_vars_to_dims", {}).get(name) or ()) & record_dims(model)
        if neighbouring == "add_remove" and along:
            raise ValueError(
                f"cannot release {name!r}: it runs along the records' dim {sorted(along)[0]!r}, and under add_remove "
                "neighbouring the number of records is private. Use neighbouring='replace' (N public) or leave such "
                "variables out of the release."
            )


def check_release_plan(model: Any, var_names: Any = None, neighbouring: str = "replace",
                       public: Sequence[str] = ()) -> list[str]:
    """Before anything is spent: refuse a run whose trace :func:`release` would refuse.

    Checks ``var_names`` (each a free variable or a Deterministic that does not read
    the records) and the sizes of everything that would be released
    (:func:`check_released_variables`, with shapes computed from the model, so that a
    variable as long as the records is refused under add/remove neighbouring here, not
    after the run was paid for).

    Parameters
    ----------
    model
        The model the run samples, with its observed records (the record counts come
        from it).
    var_names
        The names the run will release, or None for every free variable and every
        Deterministic that does not read the records.
    neighbouring
        The ledger's relation.
    public
        Names declared public (``public=``): data containers among them do not make a size private.

    Returns
    -------
    list of str
        The names that will be released.
    """
    import pytensor

    safe, dependent = _safe_posterior_names(model)
    if var_names is None:
        names = safe
    else:
        names = [var_names] if isinstance(var_names, str) else list(dict.fromkeys(var_names))
        if not names:
            raise ValueError("var_names is empty: nothing would be released. Leave it out to release every free "
                             "variable, or name some; nothing was spent.")
        _check_requested(names, safe, dependent)
    if names:
        variables = [model[n] for n in names]
        shapes = pytensor.function([], [v.shape for v in variables], on_unused_input="ignore", mode="FAST_COMPILE")()
        sizes = {n: tuple(int(x) for x in shape) for n, shape in zip(names, shapes)}
        check_released_variables(model, names, sizes, neighbouring, public)
    return names


def _check_requested(names: Sequence[str], safe: Sequence[str], dependent: Mapping[str, str]) -> None:
    for n in names:
        if n in dependent:
            raise ValueError(
                f"cannot release {n!r}: it is a Deterministic that depends on {dependent[n]}, so its "
                "posterior draws are a function of the private data, not only of the privatised "
                "posterior. Release the free variables and recompute it from public inputs."
            )
        if n not in safe:
            raise ValueError(
                f"cannot release {n!r}: it is neither a free random variable nor a Deterministic of "
                "the given model, so it cannot be checked for dependence on the data."
            )


def _safe_posterior_names(model: Any) -> tuple[list[str], dict[str, str]]:
    dependent = data_dependent_deterministics(model)
    names = [rv.name for rv in model.free_RVs]
    names += [d.name for d in model.deterministics if d.name not in dependent]
    return names, dependent


def _resolve_model(model: Any) -> Any:
    if model is not None:
        return model
    try:
        import pymc as pm

        return pm.Model.get_context(error_if_none=False)
    except Exception:  # pragma: no cover - very old/new PyMC without get_context
        return None


def _clean_attrs(attrs: dict[str, Any], created_at: Any) -> dict[str, Any]:
    out = {k: attrs[k] for k in RELEASED_ATTRS if k in attrs and k != "created_at"}
    if created_at is not None:
        out["created_at"] = str(created_at)[:10]  # the date: a finer time dates the end of the run
    out[VERSION_ATTR] = _pymc_dp_version()
    return out


def _select(ds: xr.Dataset, names: Sequence[str], created_at: Any, renumber: Sequence[str] = ()) -> xr.Dataset:
    """A new Dataset of ``names`` only, with copied values, no variable attrs, and only
    the index coordinates of the dimensions those variables use; those of ``renumber`` (the
    records' dims: their labels are often identifiers, data) become 0, 1, 2, …"""
    data_vars = {}
    dims: dict[str, None] = {}
    for name in names:
        da = ds[name]
        data_vars[name] = (da.dims, np.array(da.values, copy=True))
        dims.update(dict.fromkeys(da.dims))
    coords = {d: (d, np.arange(ds.sizes[d]) if d in renumber else np.array(ds[d].values, copy=True))
              for d in dims if d in ds.coords}
    return xr.Dataset(data_vars, coords=coords, attrs=_clean_attrs(dict(ds.attrs), created_at))


def release(
    idata: Any,
    *,
    ledger: PrivacyLedger | None = None,
    var_names: Sequence[str] | None = None,
    model: Any = None,
    sample_stats: Sequence[str] = ("dp_epsilon", "dp_delta"),
    keep_prior: bool = False,
    warmup_sample_stats: bool = False,
) -> Any:
    """Build the trace that may leave the curator, copying only whitelisted content.

    The result is a NEW object holding only:

    * ``posterior``: the variables of ``var_names`` if given; with a ``model``, only
      free random variables and Deterministics that do not depend on data (see
      :func:`data_dependent_deterministics`); otherwise every posterior variable.
    * ``sample_stats``: only the statistics named in ``sample_stats`` that exist
      (by default the per-draw privacy cost ``dp_epsilon``/``dp_delta``).
    * ``privacy`` group and ``attrs["pymc_dp_ledger"]``: the ledger already attached
      to ``idata`` combined with ``ledger`` (if any; see :func:`attach_ledger`).
    * ``warmup_sample_stats``: only if ``warmup_sample_stats=True``, restricted to the
      same statistics (the per-draw cost of the tuning draws, for a private MCMC run
      that charged them).
    * ``prior``: only if ``keep_prior=True``, restricted to the same variables.
    * attrs: only :data:`RELEASED_ATTRS` plus ``pymc_dp_version`` (``created_at`` set
      to the date of the posterior's in every group); variable attrs are dropped.
    * coordinates: only those of dimensions used by a kept variable (unused
      coordinates such as record ids are dropped). Coordinates of a kept variable's
      dimensions ARE released: if a kept free variable is indexed by records (a
      per-record latent), its record ids go out with it.

    Never copied: ``observed_data``, ``constant_data``, ``log_likelihood``,
    ``posterior_predictive``, ``predictions`` (and their constant data),
    ``prior_predictive``, every other ``warmup_*`` group, any other group, and sampler
    statistics such as NUTS ``lp``, ``energy``, ``step_size``, ``tree_depth``,
    ``acceptance_rate``, timing statistics: all are functions of the data-dependent
    density. Listing one of those in ``sample_stats`` releases it: that is the
    caller's explicit decision, and it is not covered by the ledger unless the
    caller charged for it. The coordinate labels of the records' dims (each observed
    variable's first dim, given ``model``) are not copied either: a released variable
    along them is labelled 0, 1, 2, … (labels such as patient identifiers are data).

    Parameters
    ----------
    idata
        The trace from ``pm.sample`` (``arviz.InferenceData``; ``xarray.DataTree``
        with ArviZ >= 1). Not modified.
    ledger
        The privacy ledger to attach (combined by entry id with any ledger already
        attached to ``idata``).
    var_names
        Posterior variables to release. With a model, each must be a free variable or
        a data-independent Deterministic.
    model
        The ``pymc.Model`` that produced ``idata``; defaults to the model of the
        enclosing ``with`` block, if any. Without a model, posterior variables cannot
        be checked for data dependence: a warning is emitted when ``var_names`` is
        not given either, and every posterior variable is released.
    sample_stats
        Names of the sample statistics to keep; missing names are skipped.
    warmup_sample_stats
        Also release the tuning draws' statistics named in ``sample_stats`` (never
        the tuning draws themselves).
    keep_prior
        Also release the ``prior`` group (same variable whitelist). The prior may
        itself depend on data (priors scaled by a ``pm.Data`` container, an
        empirical-Bayes prior, Deterministics the model check could not see), and
        it is not charged to the ledger: keep it only if you know it does not.

    Returns
    -------
    xarray.DataTree or arviz.InferenceData
        The releasable trace, of the type of ``idata``.

    Raises
    ------
    ValueError
        If ``idata`` has no posterior, a requested variable does not exist, or a
        requested variable is data-dependent under ``model`` (the message says why).
    """
    if ledger is not None and not isinstance(ledger, PrivacyLedger):
        raise TypeError(f"ledger must be a pymc_dp PrivacyLedger or None, got {type(ledger).__name__}.")
    posterior = _compat.get_group(idata, "posterior")
    if posterior is None:
        raise ValueError("release() needs a trace with a posterior group; this one has none.")
    model = _resolve_model(model)

    if var_names is not None:
        if isinstance(var_names, str):
            var_names = [var_names]
        names = list(dict.fromkeys(var_names))
        missing = [n for n in names if n not in posterior.data_vars]
        if missing:
            raise ValueError(f"variable(s) {missing} are not in the posterior; it has {list(posterior.data_vars)}.")
    else:
        names = None

    if model is not None:
        safe, dependent = _safe_posterior_names(model)
        if names is not None:
            _check_requested(names, safe, dependent)
        else:
            names = [n for n in safe if n in posterior.data_vars]
            dropped = [n for n in dependent if n in posterior.data_vars]
            if dropped:
                warnings.warn(
                    "release() dropped data-dependent Deterministic(s) "
                    + ", ".join(f"{n!r} ({dependent[n]})" for n in dropped),
                    DroppedDeterministicWarning,
                    stacklevel=2,
                )
    elif names is None:
        names = list(posterior.data_vars)
        warnings.warn(
            "release() got neither model= nor var_names=, so it cannot check posterior variables for "
            "dependence on the data; all of them are released. Pass model= to drop Deterministics of data.",
            UserWarning,
            stacklevel=2,
        )

    if model is not None:
        sizes = {n: tuple(posterior[n].shape[2:]) for n in names}
        check_released_variables(model, names, sizes, getattr(ledger, "neighbouring", "replace"))
    created_at = posterior.attrs.get("created_at")
    along_records = tuple(record_dims(model)) if model is not None else ()
    groups: dict[str, xr.Dataset] = {"posterior": _select(posterior, names, created_at, along_records)}

    if isinstance(sample_stats, str):
        sample_stats = [sample_stats]
    for group, wanted in (("sample_stats", True), ("warmup_sample_stats", warmup_sample_stats)):
        stats = _compat.get_group(idata, group) if wanted else None
        if stats is not None:
            kept = [s for s in dict.fromkeys(sample_stats) if s in stats.data_vars]
            if kept:
                groups[group] = _select(stats, kept, created_at)

    if keep_prior:
        prior = _compat.get_group(idata, "prior")
        if prior is not None:
            prior_names = [n for n in names if n in prior.data_vars]
            if prior_names:
                groups["prior"] = _select(prior, prior_names, created_at, along_records)

    # Carry over an already attached ledger (its JSON only), then rebuild the privacy
    # group and attr from it plus ``ledger``.
    old_privacy = _compat.get_group(idata, PRIVACY_GROUP)
    if old_privacy is not None and "ledger" in old_privacy.data_vars and "chain" in old_privacy["ledger"].dims:
        groups[PRIVACY_GROUP] = _select(old_privacy, ["ledger"], created_at)
    attrs = _clean_attrs(_compat.get_attrs(idata), created_at)
    old_attr = _compat.get_attrs(idata).get(LEDGER_ATTR)
    if old_attr is not None:
        attrs[LEDGER_ATTR] = old_attr

    out = _compat.new_trace(groups, attrs, like=idata)
    return _attach(out, ledger)
