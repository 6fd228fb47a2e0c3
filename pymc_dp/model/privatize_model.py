"""``privatize_model``: replace a model's observed records by privatised statistics.

The user's model is never mutated. Its graph is copied (PyMC's model
``FunctionGraph`` representation), each observed variable of a supported family is
removed together with its data, and a ``pm.Potential`` holding the family's
log-likelihood of the privatised statistics takes its place. The result contains no
record data at all, so sampling it — any sampler, chains, draws — is
post-processing of the privatised statistics, and its cost does not grow with N.
"""

from __future__ import annotations

import re
import warnings
from functools import partial
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .._compat import model_var, model_var_parts, fgraph_of_model, model_of_fgraph, warn_at_caller
from .._logs import reads_records
from ..accounting import LedgerEntry, PrivacyLedger, resolve_ledger
from ..accounting.validation import (
    check_delta,
    check_epsilon,
    check_finite_number,
    check_mapping,
    check_model_bounds,
    check_noise_scale,
)
from ..families import PrivateStatistics, family_of_dist
from ..families._latent_count import record_count_name
from ..families.privatize import ClippedRecordsWarning, noise_for, prepare_statistics, release_statistics
from ..families.grouped import GroupedPrepared, GroupedStatistics, release_grouped, with_weights_of
from ..accounting.curator import curator_report
from ._graph import PUBLIC_DATA, RECORD_DIMS, ancestors, group_level_data, record_dims
from ._graph import DroppedDeterministicWarning, data_leaves, describe_leaf, dim_lengths, n_is_private, number_of_records_private
from .covariate_model import COVARIATE_ASSUMPTION, covariate_parameters
from .latent_variables import NEW_COORDS_TAG, LatentsByGroup, new_deterministic, new_free_variable
from .group_index import (GroupIndex, _index_values, group_index_of, observed_group_view, stack_group_outputs,
                          sum_of_group_terms)
from .regression import linear_regression_of
from .observe import _register, noise_mixing_name, statistics_loglik
from .._evaluate import evaluate

__all__ = [
    "privatize_model", "plan_privatization", "PrivatizationPlan", "PrivatisedModel", "split_epsilon",
    "rebuild_with_likelihoods", "latent_normal_rv",
]


@dataclass(frozen=True)
class PrivatisedModel:
    """A copy of a model whose observed records were replaced by privatised statistics.

    Attributes
    ----------
    model
        The new ``pm.Model``: same free variables, priors and (data-free)
        Deterministics; one ``pm.Potential`` named ``"<variable>_stats"`` per
        privatised observed variable; no observed variables, no data containers.
    statistics
        ``{observed variable name: PrivateStatistics}``.
    ledger
        The ledger that was charged.
    dropped
        Deterministics that depended on the records and were left out, with why.
    noise_aware
        ``{observed variable name: whether its likelihood models the noise}``.
    """

    model: Any
    statistics: Mapping[str, PrivateStatistics]
    ledger: PrivacyLedger = field(repr=False)
    dropped: Mapping[str, str] = field(default_factory=dict)
    noise_aware: Mapping[str, bool] = field(default_factory=dict)


def split_epsilon(epsilon: float, names: list[str], weights: Mapping[str, float] | None = None) -> dict[str, float]:
    """Split a total ε across observed variables: evenly, or proportionally to ``weights``.

    ``weights`` maps every name to a positive number (e.g. ``{"y": 3, "z": 1}`` gives
    y three quarters of ε). Raises ``ValueError`` for missing, unknown or
    non-positive weights.
    """
    eps = check_epsilon(epsilon)
    if weights is None:
        return {n: eps / len(names) for n in names}
    weights = check_mapping(
        weights, "epsilon_split", shape="{observed variable: weight}", example="epsilon_split={'y': 3, 'z': 1}"
    )
    unknown = sorted(set(weights) - set(names))
    missing = sorted(set(names) - set(weights))
    if unknown or missing:
        raise ValueError(
            f"epsilon_split must give a weight to each observed variable {names}; "
            f"missing {missing}, unknown {unknown}."
        )
    for k, w in weights.items():  # strings and booleans are refused, never converted
        weights[k] = check_finite_number(w, f"epsilon_split[{k!r}]")
        if not weights[k] > 0:
            raise ValueError(f"epsilon_split[{k!r}] must be a positive number, got {w!r}.")
    total = sum(weights.values())
    if not np.isfinite(total):  # weights near the double range: scaled to at most 1 first
        top = max(weights.values())
        weights = {k: w / top for k, w in weights.items()}
        total = sum(weights.values())
    return {n: eps * weights[n] / total for n in names}


def _observed_records(model: Any, rv: Any) -> np.ndarray:
    value = model.rvs_to_values[rv]
    if hasattr(value, "get_value"):
        return np.asarray(value.get_value(borrow=True))
    if hasattr(value, "data"):
        return np.asarray(value.data)
    try:  # a graph of data containers (e.g. a shape check around a pm.Data)
        return evaluate(value)
    except Exception as err:  # pragma: no cover - exotic observed values
        raise ValueError(f"cannot read the observed data of {rv.name!r}: {err}") from None


def _plan(model: Any, bounds: Mapping[str, Any], neighbouring: str, public: frozenset[str],
          budgets: Mapping[str, tuple[float, float]], pool: bool = True) -> dict[str, Any]:
    """Recognise every private observed variable and prepare its exact statistics (no spending).

    ``pool``: a hierarchy's groups may pool the sums only shared parameters read (not for a plug-in likelihood).

    ``budgets`` gives each variable's (ε, δ) share: with δ > 0 a release that gains from Gaussian
    noise is prepared for it (:func:`~pymc_dp.families.privatize.noise_for`).
    """
    plans = {}
    unsupported = []
    for rv in model.observed_RVs:
        if rv.name in public:
            continue
        records = _observed_records(model, rv)
        n_records = int(np.shape(records)[0]) if np.ndim(records) else 1
        try:
            groups = group_index_of(rv.owner.inputs[2:], n_records, model.free_RVs, model)
        except ValueError as err:
            unsupported.append(f"{rv.name!r}: {err}")
            continue
        if groups is not None:
            plans[rv.name] = _prepare_grouped(model, rv, records, n_records, groups, bounds.get(rv.name), neighbouring,
                                              budgets[rv.name], pool)
            continue
        prepared = _prepare_variable(model, rv, rv.name, records, n_records, bounds.get(rv.name), neighbouring,
                                     budgets[rv.name], unsupported)
        if prepared is not None:
            plans[rv.name] = prepared
    if unsupported:
        raise ValueError(
            "cannot privatise these observed variables with method='laplace': "
            + "; ".join(u.rstrip(".") for u in unsupported)
            + ". The Laplace route needs an exponential family whose parameters are shared by all records (or by "
            "the records of each group, a[group_idx]), or a linear regression; for these likelihoods use "
            "method='ops' or 'gibbs' with loglik_clip=(lower, upper), or method='saa'."
        )
    unknown = sorted(set(bounds) - set(plans))
    if unknown:
        raise ValueError(f"bounds names {unknown}, which are not observed variables of the model ({sorted(plans)}).")
    return plans


def _prepare_variable(model: Any, rv: Any, name: str, records: np.ndarray, n_records: int, var_bounds: Any,
                      neighbouring: str, budget: tuple[float, float], unsupported: list[str],
                      rows: np.ndarray | None = None, part: str | None = None) -> Any:
    """The prepared statistics of one likelihood whose parameters all its records share (``rows`` of the records).

    ``rv`` is the observed variable ``name`` (or the view of it for the group ``part``: :mod:`.group_index`);
    where its family is not one the route knows, the reason is appended to ``unsupported`` and None returned.
    """
    not_regression: list[str] = []
    predictor = linear_regression_of(rv, n_records, model.free_RVs, dim_lengths(model), not_regression)
    if predictor is not None:
        if neighbouring == "add_remove" and rows is None:  # N is private: refusals are made on no records
            _prepare_regression(name, predictor, records, var_bounds, neighbouring, budget,
                                np.zeros(n_records, dtype=bool), part)
        return _prepare_regression(name, predictor, records, var_bounds, neighbouring, budget, rows, part)
    try:
        family, params = family_of_dist(rv)
    except ValueError as err:
        reason = str(err)
        if neighbouring == "add_remove":  # N (or a group's size) is private: no shape in the refusal's words
            reason = re.sub(r"static shape \([^)]*\)", "a shape that follows the records", reason)
        not_regression = [w for w in not_regression if not w.startswith("no term multiplies")]
        if not_regression:  # a Normal whose mean was nearly a regression: say which term was not
            reason = f"read as a linear regression, {'; '.join(not_regression)}".replace("bounds={'y': ",
                                                                                           f"bounds={{{name!r}: ")
        unsupported.append(f"{name!r}: {reason}")
        return None
    leaves = data_leaves(
        list(params.values()), blockers=model.free_RVs, record_counts=[n_records], public=dim_lengths(model)
    )
    if leaves:
        raise ValueError(
            f"observed variable {name!r} has a parameter that depends on data "
            f"({', '.join(describe_leaf(v) for v in leaves)}), e.g. a per-record mean in a GLM. "
            "The Laplace route needs one set of parameters for all records, or a linear regression "
            "(pm.Normal with mu = intercept + X @ beta and one sigma), which it recognises, or parameters "
            "indexed by one group index (a[group_idx]). For this likelihood use method='ops' or 'gibbs' with "
            "loglik_clip=(lower, upper), or method='saa'."
        )
    if neighbouring == "add_remove" and rows is None:  # N is private: refusals are made on no records (below)
        _prepare_family(family, name, records, np.zeros(n_records, dtype=bool), var_bounds, neighbouring, budget,
                        part)
    return _prepare_family(family, name, records, rows, var_bounds, neighbouring, budget, part)


def _prepare_family(family: Any, name: str, records: np.ndarray, rows: np.ndarray | None, var_bounds: Any,
                    neighbouring: str, budget: tuple[float, float], part: str | None) -> Any:
    """:func:`prepare_statistics` of ``records`` (its ``rows``) for ``family``, refusals named after the variable."""
    try:
        noise = noise_for(family, var_bounds, neighbouring, *budget)
        return prepare_statistics(
            records if rows is None else records[rows], family, bounds=var_bounds, neighbouring=neighbouring,
            name=name if part is None else f"{name}[{part}]", noise=noise, delta=budget[1],
        )
    except ValueError as err:
        msg = str(err).replace("declare bounds=", f"declare bounds={{{name!r}: ...}} with ")
        if family.bounds_example:  # the example as the privacy flag takes it: nested under the variable's name
            msg = msg.replace(f"bounds={family.bounds_example}", f"bounds={{{name!r}: {family.bounds_example}}}")
        raise type(err)(f"observed variable {name!r}: {msg}") from None


def _prepare_grouped(model: Any, rv: Any, records: np.ndarray, n_records: int, groups: GroupIndex, var_bounds: Any,
                     neighbouring: str, budget: tuple[float, float], pool: bool = True) -> GroupedPrepared:
    """Every group's statistics, each prepared under add/remove (:mod:`pymc_dp.families.grouped`).

    With ``pool`` (a noise-aware likelihood will read them), coordinates only shared parameters read are
    released once, summed over the groups (:func:`_poolable`).

    A negative index counts from the end, as NumPy's and PyMC's indexing does (−1: the last group); a
    record whose index names no group (outside −G..G−1, where PyMC itself would fail) is left out and
    counted for the curator only. Every refusal is first made on no records at all, so that none
    depends on the size of a group.
    """
    index = np.asarray(_index_values(groups.leaf, n_records))
    index = np.where((index < 0) & (index >= -groups.size), index + groups.size, index)  # a[-1]: the last group
    parts, unsupported = [], []
    labels = tuple(groups.label(g) for g in range(groups.size))
    for g in range(groups.size):
        try:
            view = observed_group_view(rv, n_records, g)
        except ValueError as err:
            raise ValueError(f"observed variable {rv.name!r}: {err}. Nothing was spent.") from None
        if g == 0:  # refusals made on no records, so that none can depend on a group's size (private)
            _prepare_variable(model, view, rv.name, records, n_records, var_bounds, "add_remove", (budget[0], 0.0),
                              [], rows=np.zeros(n_records, dtype=bool), part=labels[g])
        part = _prepare_variable(model, view, rv.name, records, n_records, var_bounds, "add_remove",
                                 (budget[0], 0.0), unsupported, rows=index == g, part=labels[g])
        if part is None:
            raise ValueError(
                f"observed variable {rv.name!r} is indexed by group ({groups.dim or 'a per-record index'}), but the "
                f"likelihood of one group's records is not one the Laplace route knows: {unsupported[0].rstrip('.')}. "
                "Within a group its parameters must be shared by the group's records (rate[idx], mu[idx], sigma) or "
                "form a linear regression (pm.Normal with mu = a[idx] + X @ beta); a GLM's per-record covariates "
                "(logit_p = a[idx] + b * x) are not read here: method='measurements' reads such a hierarchy (with "
                "the covariates' bounds). Or use method='ops' or 'gibbs' with loglik_clip=(lower, upper), or "
                "method='saa'. Nothing was spent."
            )
        parts.append(part if budget[1] == 0.0 else replace(part, offered_delta=budget[1]))
    dropped = int(np.sum((index < 0) | (index >= groups.size)))
    if dropped:
        curator_report(f"{rv.name}: {dropped} of {n_records} record(s) have a group index outside "
                       f"{-groups.size}..{groups.size - 1} "
                       "and were left out (this count is for you, the curator; it is not released).",
                       ClippedRecordsWarning, stacklevel=4)
    pooled = _poolable(model, rv, n_records, parts) if pool else ()
    if pooled:  # ε moves towards each group's own sums: the pooled ones run over all the groups' records
        design = parts[0].family.pooled_release_design(parts[0].bounds, pooled, len(parts))
        parts = [with_weights_of(p, design) for p in parts]
    return GroupedPrepared(parts=tuple(parts), labels=labels, dim=groups.dim, neighbouring=neighbouring, name=rv.name,
                           dropped=dropped, pooled=pooled)


def _poolable(model: Any, rv: Any, n_records: int, parts: Sequence[Any]) -> tuple[int, ...]:
    """The coordinates a hierarchy's groups may release once, summed (:mod:`pymc_dp.families.grouped`), or ().

    A linear regression with an intercept column whose other coefficients and σ are the same graph in every
    group's view (``a[idx] + X @ beta``, one ``beta``, one ``sigma``): the products of x and y enter only through
    them. Read from the model's graph (public), never from the records.
    """
    from pytensor.graph.basic import equal_computations

    from ..families._pooled_groups import pooled_coordinates

    if len(parts) < 2:
        return ()
    pooled = pooled_coordinates(parts[0].family, parts[0].bounds)
    if not pooled:
        return ()
    predictors = [linear_regression_of(observed_group_view(rv, n_records, g), n_records, model.free_RVs,
                                       dim_lengths(model)) for g in (0, 1)]
    if any(p is None or not p.has_intercept for p in predictors):
        return ()
    shared = [[p.slopes, p.sigma] for p in predictors]
    return pooled if equal_computations(shared[0], shared[1]) else ()


def _prepare_regression(name: str, predictor: Any, y: np.ndarray, var_bounds: Any, neighbouring: str,
                        budget: tuple[float, float], rows: np.ndarray | None = None, part: str | None = None) -> Any:
    """The linear_regression statistics of a recognised regression: records [X (, 1), y], bounds with (1, 1)
    for the intercept column; only ``rows`` of them where given (one group's)."""
    from ..families.linear_regression import LinearRegression

    d = predictor.covariates
    if var_bounds is not None and not isinstance(var_bounds, Mapping):
        raise ValueError(f"bounds[{name!r}] must be a dict, e.g. {{'x': (lo, hi), 'y': (lo, hi)}}, got {var_bounds!r}.")
    given = dict(var_bounds or {})
    if "x" not in given or "y" not in given:
        raise ValueError(
            f"observed variable {name!r} is a linear regression on {d} covariate(s): the Laplace route privatises "
            f"XᵀX, Xᵀy and yᵀy and needs the range of every covariate and of the outcome. Declare "
            f"bounds={{{name!r}: {{'x': (lo, hi), 'y': (lo, hi)}}}} (x: one pair for all covariates, or arrays of "
            f"{d}); records outside are clipped. Nothing was spent."
        )
    shape = (f"'x' is one (lo, hi) pair for every covariate, e.g. (-3.0, 3.0), or a pair of arrays (lows, highs) "
             f"with one value per covariate, e.g. ({[-3.0] * d}, {[3.0] * d}) for {d} covariate(s)")
    try:
        lows, highs = (np.broadcast_to(np.asarray(v, dtype=float), (d,)) for v in _pair(given["x"], name))
    except (TypeError, ValueError):
        raise ValueError(f"bounds[{name!r}]['x'] = {given['x']!r} cannot be read: {shape}. Nothing was spent.") from None
    flat = [j for j in range(d) if lows[j] == highs[j]]
    if flat:
        raise ValueError(
            f"bounds[{name!r}]['x'] = {given['x']!r} gives covariate(s) {flat} a zero-width range [lo, lo]: the "
            f"covariates would be constants. {shape}. Nothing was spent."
        )
    if predictor.has_intercept:
        lo, hi = lows, highs
        given["x"] = (np.r_[lo, 1.0], np.r_[hi, 1.0])
    family = LinearRegression(n_features=predictor.design.shape[1])
    records = np.column_stack([predictor.design, np.asarray(y, dtype=float).reshape(-1)])
    if rows is not None:
        records = records[rows]
    try:
        noise = noise_for(family, given, neighbouring, *budget)
        return prepare_statistics(records, family, bounds=given, neighbouring=neighbouring,
                                  name=name if part is None else f"{name}[{part}]", noise=noise, delta=budget[1])
    except ValueError as err:
        raise type(err)(f"observed variable {name!r} (a linear regression): {err}") from None


def _pair(value: Any, name: str) -> tuple[Any, Any]:
    try:
        lo, hi = value
    except (TypeError, ValueError):
        raise ValueError(f"bounds[{name!r}]['x'] must be a (lo, hi) pair, got {value!r}.") from None
    return lo, hi


def _statistics_likelihoods(
    stats: Mapping[str, PrivateStatistics], noise_aware: Mapping[str, bool],
) -> dict[str, Callable[..., Any]]:
    """One likelihood builder per privatised observed variable (see :func:`rebuild_with_likelihoods`)."""
    import pytensor.tensor as pt

    def build_one(name: str, s: PrivateStatistics, rv: Any, rows: int, free: list, sizes: list,
                  new_outputs: list, aware: bool, release_name: str | None = None) -> Any:
        if s.family.name == "linear_regression":
            predictor = linear_regression_of(rv, rows, free, sizes)
            params = {"beta": predictor.coefficients, "sigma": predictor.sigma}
            if aware:  # its likelihood needs a model of the covariates
                params.update(covariate_parameters(name, s.family, s.bounds, new_outputs, predictor.columns))
        else:
            _, params = s.family.from_dist(rv)
        make_mixing = partial(_noise_mixing_rv, noise_mixing_name(name), new_outputs, s.names)
        make_count = partial(_record_count_rv, record_count_name(name), new_outputs)
        return statistics_loglik(s, params, aware, make_mixing, release_name or name, make_count)

    def build(name: str, node: Any, free: list, sizes: list, new_outputs: list) -> Any:
        s = stats[name]
        grouped = isinstance(s, GroupedStatistics)
        value = _observed_value(node.inputs[1]) if grouped or s.family.name == "linear_regression" else None
        rows = int(np.shape(value)[0]) if np.ndim(value) else 1
        if grouped:  # one likelihood per group, each on its own part of the release, its latents one row of each
            latents = LatentsByGroup(new_outputs, len(s.parts), s.dim or group_dim_name(name),
                                     None if s.dim else s.labels)
            if s.pooled and noise_aware[name]:
                # the covariates' spread is read only through the pooled sums: one covariance for all groups
                latents.shared = frozenset({f"{name}_x_scale", f"{name}_x_mixing"})
                return _pooled_likelihood(name, s, node, rows, free, sizes, latents)
            terms = []
            for g, part in enumerate(together(s.parts)):
                latents.group = g
                terms.append(build_one(name, part, observed_group_view(node.inputs[0], rows, g), rows, free, sizes,
                                       latents, noise_aware[name], group_release_name(name, g)))
            latents.finish()
            return sum_of_group_terms(terms)
        return build_one(name, s, node.inputs[0], rows, free, sizes, new_outputs, noise_aware[name])

    return {name: partial(build, name) for name in stats}


def group_release_name(name: str, group: int) -> str:
    """The name under which group ``group``'s released numbers enter the record-free model (``<y>_group<g>``, by the
    group's position, which is public): every group's shared inputs are named apart, so that nutpie's compiled model
    of one release serves the next (:mod:`pymc_dp.routes.nutpie_cache` caches only uniquely named inputs)."""
    return f"{name}_group{group}"


def _pooled_likelihood(name: str, s: GroupedStatistics, node: Any, rows: int, free: list, sizes: list,
                       latents: LatentsByGroup) -> Any:
    """The noise-aware likelihood of a hierarchy with pooled coordinates (:mod:`pymc_dp.families._pooled_groups`).

    Each group gets its latent count, its covariate model and (where the noise is not moment-matched) mixing
    variables for its own sums, as rows of variables shared by the groups; the pooled sums get mixing
    variables of their own, ``<y>_noise_mixing_pooled``.
    """
    from ..families._latent_count import LatentCount, noise_moment_matched
    from ..families._noise_aware import RELEASE_NAME
    from ..families._pooled_groups import group_share_terms, pooled_sums_logp

    parts = together(s.parts)
    names = parts[0].names
    sums = [n for j, n in enumerate(names[:-1]) if j not in s.pooled]
    matched = noise_moment_matched(parts[0])
    token = RELEASE_NAME.set(f"released_statistics_{name}")
    try:
        terms = []
        for g, part in enumerate(parts):
            latents.group = g
            RELEASE_NAME.set(f"released_statistics_{group_release_name(name, g)}")
            predictor = linear_regression_of(observed_group_view(node.inputs[0], rows, g), rows, free, sizes)
            params = {"beta": predictor.coefficients, "sigma": predictor.sigma,
                      **covariate_parameters(name, part.family, part.bounds, latents, predictor.columns)}
            mixing = None if matched else _noise_mixing_rv(noise_mixing_name(name), latents, sums, len(sums))
            latent = LatentCount(part)
            count_free, count = _record_count_rv(record_count_name(name), latents, latent)
            logp, mean, cov = group_share_terms(part, params, count, s.pooled, mixing)
            terms.append([logp + latent.log_prior(count_free), mean, cov])  # + N_g's flat prior, written in v
        latents.finish()
        logps, means, covs = stack_group_outputs(terms)
        pooled_names = [names[j] for j in s.pooled]
        mixing = None if matched else _noise_mixing_rv(f"{noise_mixing_name(name)}_pooled", latents.new_outputs,
                                                        pooled_names, len(pooled_names))
        RELEASE_NAME.set(f"released_statistics_{name}_pooled")
        return logps.sum() + pooled_sums_logp(s.pooled_released, float(parts[0].scale), means, covs, mixing)
    finally:
        RELEASE_NAME.reset(token)


def together(parts: Sequence[PrivateStatistics]) -> list[PrivateStatistics]:
    """A hierarchy's groups with one noise form: moment-matched wherever the release has that form.

    Each group's latent variables are rows of variables shared by all groups (:class:`LatentsByGroup`), so
    the groups must ask for the same ones: a large group and a small one would otherwise differ. They take the
    moment-matched likelihood (:func:`~pymc_dp.families._latent_count.moment_matching_applies`) even where the
    noise dominates a group's sums, as it does in small groups: the exact scale mixture gives every group's sums
    mixing variables whose funnels, over tens of groups, left NUTS at 0.3–0.6 ms a gradient for hundreds of
    seconds (the 20-group regression at N = 10⁴; the radon gallery's small counties), while the matched form keeps
    the noise's variance, so an estimate linear in the release has its sampling spread: 90 % intervals covered
    0.91 of 150 (30 releases of three groups of 500 records at ε = 1, five parameters), as at 10,000 a group.
    """
    from ..families._latent_count import moment_matching_applies

    matched = all(moment_matching_applies(p) for p in parts)
    return [replace(p, moment_matched=matched) for p in parts]


def group_dim_name(name: str) -> str:
    """The dim of a hierarchy's latent variables when its group index has none of the model's: ``y_group``."""
    return f"{name}_group"


def _rebuild_without_records(
    model: Any,
    stats: Mapping[str, PrivateStatistics],
    record_counts: list[int],
    noise_aware: Mapping[str, bool],
    public: frozenset[str] = frozenset(),
) -> tuple[Any, dict[str, str]]:
    return rebuild_with_likelihoods(model, _statistics_likelihoods(stats, noise_aware), record_counts, public)


def rebuild_with_likelihoods(
    model: Any,
    likelihoods: Mapping[str, Callable[..., Any]],
    record_counts: list[int],
    public: frozenset[str] = frozenset(),
) -> tuple[Any, dict[str, str]]:
    """A copy of ``model`` whose private observed variables are replaced by likelihood potentials.

    ``likelihoods[name](node, free, sizes, new_outputs)`` builds the log-likelihood term
    ``"<name>_stats"`` from the observed variable's node in the model's FunctionGraph
    form, its free variables there, the dims' lengths, and ``new_outputs`` (where a
    builder queues the latent variables it creates). Deterministics of the records are
    dropped (returned with why), as are data containers nothing uses any more; data
    still left anywhere is refused. ``public`` observed variables stay as they are.
    """
    import pytensor.tensor as pt
    from pymc.model.fgraph import (
        ModelDeterministic,
        ModelFreeRV,
        ModelNamed,
        ModelObservedRV,
        ModelVar,
    )

    try:
        fg, initvals = fgraph_of_model(model)
    except NotImplementedError as err:  # e.g. custom initial values
        raise ValueError(
            f"this model cannot be copied for privatisation ({err}); build it on pmdp.privatize + "
            "pmdp.observe_stats instead."
        ) from None
    declared_sizes = list(getattr(fg, "_dim_lengths", {}).values())  # the lengths of the model's dims: not data
    free_outputs = [n.outputs[0] for n in fg.apply_nodes if isinstance(n.op, ModelFreeRV)]
    all_observed = [n for n in fg.apply_nodes if isinstance(n.op, ModelObservedRV)]
    observed_nodes = [n for n in all_observed if n.outputs[0].name not in public]
    observed_outputs = {n.outputs[0] for n in observed_nodes}
    # Public records stay as they are; the walks for private data stop at them.
    public_outputs = [n.outputs[0] for n in all_observed if n.outputs[0].name in public]
    # Data containers declared public (e.g. a prior's pm.Data), and those of group dims (public as the dims
    # are, see group_level_data): the walks stop at them too.
    group_level = {v.name for v in group_level_data(model)}
    group_outputs = [n.outputs[0] for n in fg.apply_nodes if isinstance(n.op, ModelNamed) and n.outputs[0].name in group_level]
    public_outputs += [n.outputs[0] for n in fg.apply_nodes
                       if isinstance(n.op, ModelNamed) and n.outputs[0].name in set(public) | group_level]
    # The likelihood terms of the statistics, built now (they need the observed variables'
    # parameters) and added only after the record check below, which is about the user's
    # model: the statistics themselves are private outputs, not records.
    new_outputs: list[Any] = []  # latent variables and the likelihood potentials
    for node in observed_nodes:
        name = node.outputs[0].name
        # the walks for data in a likelihood stop at group-level containers too (public as the dims are: a pm.Data
        # of the county dim in a group's intercept); one declared public= is refused below if the likelihood reads it
        loglik = pt.as_tensor(likelihoods[name](node, free_outputs + group_outputs, declared_sizes, new_outputs))
        new_outputs.append(model_var("potential", loglik, f"{name}_stats"))

    # What the private likelihoods read (their data containers are private even if a public one reads them too).
    read_by_private = set(ancestors([n.outputs[0] for n in observed_nodes], blockers=free_outputs))
    misdeclared = sorted(o.name for o in public_outputs if o.owner is not None and isinstance(o.owner.op, ModelNamed)
                         and o.name in public and o in read_by_private)
    if misdeclared:
        raise ValueError(
            f"public names the data container(s) {misdeclared}, which the private observed variable(s) "
            f"{sorted(n.outputs[0].name for n in observed_nodes)} read: they hold the private records (or are computed "
            "with them), so they cannot be declared public. Leave them out of public=; nothing was spent."
        )
    _refuse_shared_records(observed_nodes, all_observed, public, free_outputs, record_counts, declared_sizes)
    # Deterministics of the records cannot stay: drop them and say so.
    dropped: dict[str, str] = {}
    for node in list(fg.apply_nodes):
        if isinstance(node.op, ModelDeterministic):
            anc = set(ancestors([node.inputs[0]]))
            if anc & observed_outputs or data_leaves(
                [node.inputs[0]], blockers=public_outputs, record_counts=record_counts, public=declared_sizes
            ):
                dropped[node.outputs[0].name] = "depends on the observed records"
    for node in list(fg.apply_nodes):
        if isinstance(node.op, ModelDeterministic) and node.outputs[0].name in dropped:
            fg.remove_node(node)
    for node in observed_nodes:
        if node in fg.apply_nodes:
            fg.remove_node(node)
    # Data containers nothing uses any more (clients left behind by the removed likelihoods do not count).
    for node in list(fg.apply_nodes):
        if isinstance(node.op, ModelNamed):
            others = [o for o in fg.outputs if o is not node.outputs[0]] + new_outputs
            if node.outputs[0] not in set(ancestors(others)):
                fg.remove_node(node)

    leaves = data_leaves(
        _private_reach(fg, public_outputs, new_outputs, read_by_private), blockers=public_outputs, record_counts=record_counts,
        public=declared_sizes,
    )
    if leaves:
        raise ValueError(
            "the model uses data outside its observed variables ("
            + ", ".join(describe_leaf(v) for v in leaves)
            + "), e.g. a pm.Data container or a record-length array in a prior or a Potential; pymc_dp cannot "
            "prove such a model private. "
            "Make those inputs public constants, declare them public=[...] if their values are public (not computed "
            "from the records), or privatise them too." + (_N_PRIVATE_NOTE if n_is_private() else "")
        )
    users_dims = set(getattr(fg, "_coords", {})) | set(getattr(fg, "_dim_lengths", {}))
    users_names = {o.name for o in fg.outputs if o.name}
    clash = sorted(o.name for o in new_outputs if o.name in users_names)
    if clash:
        raise ValueError(
            f"the record-free model adds {clash[0]!r} (a latent variable or likelihood term of the privatised "
            "statistics), but the model already has a variable of that name; rename yours (nothing was spent)."
        )
    for out in new_outputs:
        fg.add_output(out, import_missing=True)
        for dim, labels in getattr(out.tag, NEW_COORDS_TAG, {}).items():  # a new variable's own (public) coords
            if dim in users_dims:
                raise ValueError(
                    f"the record-free model adds a dim {dim!r} (for {out.name!r}), but the model already has a dim of "
                    "that name; rename yours (nothing was spent)."
                )
            fg._coords = {**getattr(fg, "_coords", {}), dim: labels}
            fg._dim_lengths = {**getattr(fg, "_dim_lengths", {}), dim: pt.constant(len(labels))}
    model_vars = [out.owner for out in fg.outputs if out.owner is not None and isinstance(out.owner.op, ModelVar)]
    used_dims = {d for node in model_vars for d in model_var_parts(node).dims}
    fg._coords = {k: v for k, v in fg._coords.items() if k in used_dims}
    fg._dim_lengths = {k: v for k, v in fg._dim_lengths.items() if k in used_dims}
    copy = model_of_fgraph(fg, initvals)
    setattr(copy, PUBLIC_DATA, frozenset(public))  # what release() may treat as public sizes
    setattr(copy, RECORD_DIMS, record_dims(model))  # whose labels release() does not copy
    return copy, dropped


#: How the checks differ under add/remove, where the number of records is private.
_N_PRIVATE_NOTE = (
    " Under add/remove neighbouring N is private, so no length is compared with it: a constant array of 10 or "
    "more entries is taken for records whatever its length (put public values in pm.Data('name', values, "
    "dims=...) and name it in public=[...]), and a pm.Data container with dims is group-level data only when "
    "every observed variable names its records' dim (dims=...)."
)


def _refuse_shared_records(observed_nodes: list, all_observed: list, public: frozenset[str], free: list,
                           record_counts: list[int], sizes: list) -> None:
    """Refuse a public observed variable that reads the private records: data (a NumPy array as well as a
    ``pm.Data`` container) that a private likelihood also reads. The public variable stays in the record-free model
    as it is, so whatever data it reads is released with it, unnoised."""
    from ..model.regression import leaf_value

    def leaves(outputs: list) -> list[Any]:
        return data_leaves(outputs, blockers=free, record_counts=record_counts, public=sizes)

    private = [leaf_value(v) for v in leaves([n.outputs[0] for n in observed_nodes])]
    for node in all_observed:
        name = node.outputs[0].name
        if name not in public:
            continue
        for leaf in leaves([node.inputs[0]]):  # its distribution's inputs (its own records are public)
            value = leaf_value(leaf)
            if value is not None and any(p is not None and p.shape == value.shape and np.array_equal(p, value)
                                         for p in private):
                what = "an array of the records" if n_is_private() else describe_leaf(leaf)  # no length under add/remove
                raise ValueError(
                    f"the public observed variable {name!r} reads data a private likelihood reads too ({what}): kept in the record-free model as it is, it would release those records "
                    "unnoised. Give it its own public data (its own pm.Data rows), or leave it out of public=; "
                    "nothing was spent."
                )


def _private_reach(fg: Any, public_outputs: list[Any], new_outputs: list[Any], read_by_private: set) -> list[Any]:
    """The outputs to search for data: all but the public records and the data containers only they read.

    A public survey written gallery-style (``pm.Data("X_survey", ...)`` feeding a public observed
    variable) keeps its container in the model; it is as public as the survey's records. A
    container the private likelihoods read (``read_by_private``) stays private, whoever else reads it.
    """
    from pymc.model.fgraph import ModelNamed

    def container(out: Any) -> bool:
        return out.owner is not None and isinstance(out.owner.op, ModelNamed)

    others = [o for o in fg.outputs if o not in public_outputs]
    read_publicly = set(ancestors(public_outputs))
    read_privately = set(ancestors([o for o in others if not container(o)] + list(new_outputs))) | read_by_private
    return [o for o in others if not (container(o) and o in read_publicly and o not in read_privately)]


def latent_normal_rv(name: str, new_outputs: list[Any], size: int) -> Any:
    """A free standard-normal vector ``name`` in FunctionGraph form, queued in ``new_outputs``."""
    import pymc as pm

    return new_free_variable(name, pm.Normal.dist(0.0, 1.0, shape=size), new_outputs)


def _record_count_rv(name: str, new_outputs: list[Any], latent: Any) -> tuple[Any, Any]:
    """The latent number of records of an add/remove release (see :mod:`pymc_dp.families._latent_count`).

    A flat free variable v (``latent.free_name(name)``) and the Deterministic ``<name>``, N = ``latent.count(v)``;
    returns (v, N).
    """
    import pymc as pm

    free = new_free_variable(latent.free_name(name), pm.Flat.dist(), new_outputs)
    count = latent.count(free)
    new_deterministic(count, name, new_outputs)
    return free, count


def _noise_mixing_rv(name: str, new_outputs: list[Any], labels: Sequence[str], size: int) -> Any:
    """A free Exponential(1) vector ``name`` (log-transformed) in FunctionGraph form, queued in ``new_outputs``.

    Its dim ``<name>_statistic`` is labelled by the released statistics' names (public) when there is one
    mixing variable per released number, or per released sum when N is released after them (add/remove).
    """
    import pymc as pm
    from pymc.distributions.transforms import log

    dims, labels = ((f"{name}_statistic",), tuple(labels)[:size]) if len(labels) in (size, size + 1) else ((), None)
    return new_free_variable(name, pm.Exponential.dist(1.0, shape=size), new_outputs, transform=log, dims=dims,
                             labels=labels)


@reads_records
def privatize_model(
    model: Any = None,
    epsilon: float | None = None,
    *,
    bounds: Mapping[str, Mapping[str, Any]] | None = None,
    ledger: PrivacyLedger | None = None,
    epsilon_split: Mapping[str, float] | None = None,
    neighbouring: str | None = None,
    rng: Any = None,
    noise_aware: bool | str = "auto",
    public: Sequence[str] = (),
    delta: float | None = 0.0,
) -> PrivatisedModel:
    """Privatise every observed variable of ``model`` and return a record-free copy.

    Each observed variable must have a likelihood of a supported family
    (:mod:`pymc_dp.families`) whose parameters are the same for every record. All
    observed data are checked and their statistics computed first; the budget is
    checked for the whole spend; only then is noise drawn. A failure at any point
    spends nothing.

    Parameters
    ----------
    model
        The ``pm.Model`` (default: the enclosing ``with`` block's). Not modified.
    epsilon
        The total ε, split across the observed variables (see ``epsilon_split``).
    bounds
        ``{observed variable name: family bounds}``, e.g.
        ``{"y": {"x": (0.0, 10.0)}}`` for a Normal, ``{"counts": {"upper": 50}}``
        for a Poisson. Needed for families with unbounded support.
    ledger
        The ledger to charge (default: a new one without a budget).
    epsilon_split
        Weights ``{name: w}`` splitting ε across observed variables (default: evenly).
    neighbouring
        ``"replace"`` or ``"add_remove"``; defaults to the ledger's relation (or
        ``"replace"``).
    rng
        ``None`` for secure noise, or a seed / Generator for seeded noise.
    noise_aware
        ``"auto"`` (default): the noise-aware likelihood (the true statistic summed
        out against the known noise) for each variable whose family has one (every
        built-in family; under add/remove with N a latent variable ``<y>_n_records``),
        the plug-in likelihood otherwise; ``True``: noise-aware
        for every variable (an error where unavailable); ``False``: plug-in.
    public
        Names of observed variables whose records are *public* (non-private
        auxiliary data, [WM10] Fig. 3b): they stay in the model as ordinary observed
        variables, are not privatised and cost nothing; also ``pm.Data`` containers
        whose values are public (a prior's hyperparameters; data of public records
        need not be named). Declaring them public is the analyst's claim; every
        ledger entry of this call records it as an assumption.
    delta
        The δ the call may spend, split across the observed variables as ε is (default 0:
        pure ε-DP). A release that adds less noise with Gaussian noise at its (ε, δ) share
        — a regression with enough covariates (at ε = 1: two at δ = 1e-5, three at δ = 1e-6) — gets the analytic Gaussian mechanism
        (:func:`pymc_dp.privatize`); every other release stays pure ε-DP.

    Returns
    -------
    PrivatisedModel
    """
    import pymc as pm

    ledger = resolve_ledger(ledger, neighbouring)
    with number_of_records_private(ledger.neighbouring == "add_remove"):  # no check may compare a size with N
        plan = plan_privatization(
            pm.modelcontext(model), epsilon, bounds=bounds, neighbouring=ledger.neighbouring,
            epsilon_split=epsilon_split, noise_aware=noise_aware, public=public, delta=delta,
        )
        with ledger.spend_planned(plan.entries(), what="privatising the model's observed variables") as scratch:
            private = plan.release(scratch, rng)
    return replace(private, ledger=ledger, statistics={k: _with_ledger(v, ledger) for k, v in private.statistics.items()})


def _with_ledger(stats: PrivateStatistics | GroupedStatistics, ledger: PrivacyLedger) -> Any:
    """``stats`` (every group's part of a grouped release) pointing at ``ledger``."""
    if isinstance(stats, GroupedStatistics):
        return replace(stats, parts=tuple(replace(p, ledger=ledger) for p in stats.parts))
    return replace(stats, ledger=ledger)


@dataclass(frozen=True)
class PrivatizationPlan:
    """A validated privatisation of a model, priced and rehearsed; nothing drawn yet.

    Built by :func:`plan_privatization`. :meth:`entries` is what :meth:`release` will
    charge; the record-free model was already built once on data-free placeholder
    statistics, so every refusal the rebuild can make happens before any spend.
    """

    model: Any
    prepared: Mapping[str, Any]
    shares: Mapping[str, float]
    noise_aware: Mapping[str, bool]
    public: frozenset[str]
    neighbouring: str

    def entries(self) -> list[LedgerEntry]:
        """The releases :meth:`release` makes (Laplace, or discrete Laplace for counts), one per private observed variable."""
        return [
            LedgerEntry(p.mechanism(self.shares[n]), self.shares[n], delta=p.delta, event=p.release_event(self.shares[n]),
                        neighbouring=self.neighbouring)
            for n, p in self.prepared.items()
        ]

    def release(self, ledger: PrivacyLedger, rng: Any = None) -> PrivatisedModel:
        """Draw the noise (charging ``ledger``) and build the record-free model."""
        declared = (public_assumption(sorted(self.public)),) if self.public else ()
        stats = {
            name: (release_grouped if isinstance(p, GroupedPrepared) else release_statistics)(
                p, self.shares[name], ledger=ledger, rng=rng,
                assumptions=declared + _likelihood_note(name, self.noise_aware[name], p.family, p.bounds,
                                                        p.dim if isinstance(p, GroupedPrepared) else False))
            for name, p in self.prepared.items()
        }
        new_model, dropped = _rebuild_without_records(
            self.model, stats, [p.n for p in self.prepared.values()], self.noise_aware, self.public
        )
        if dropped:
            warn_at_caller("privatize_model left out Deterministic(s) of the records: " + ", ".join(sorted(dropped)),
                           UserWarning)
        for s in stats.values():
            for part in (s.parts if isinstance(s, GroupedStatistics) else (s,)):
                _register(new_model, part)
        _warn_degenerate_plug_in(self.model, stats, self.noise_aware)
        return PrivatisedModel(model=new_model, statistics=stats, ledger=ledger, dropped=dropped,
                               noise_aware=self.noise_aware)


def _warn_degenerate_plug_in(model: Any, stats: Mapping[str, PrivateStatistics], noise_aware: Mapping[str, bool]) -> None:
    """Warn where a plug-in likelihood of the released statistics collapses an unknown σ to 0.

    Read from released values only, so the warning is post-processing and may be shown.
    """
    from ..families import DegenerateReleaseWarning

    for name, st in stats.items():
        if noise_aware[name] or isinstance(st, GroupedStatistics):
            continue
        why = st.family.plug_in_degeneracy(np.asarray(st.values, dtype=float), float(st.n))
        if why is None:
            continue
        sigma = model[name].owner.inputs[-1]  # a Normal's (or a recognised regression's) σ
        if not any(v in set(model.free_RVs) for v in ancestors([sigma])):
            continue  # a known σ: nothing to collapse
        warnings.warn(
            f"{name!r}: {why}. The plug-in likelihood then grows without bound as σ → 0, so σ's posterior "
            "collapses there and the other parameters' posteriors are over-confident. Nothing more was spent. "
            "Use a larger epsilon or more records, or the noise-aware likelihood (noise_aware='auto', the "
            "default, or True).",
            DegenerateReleaseWarning,
            stacklevel=4,
        )


def _likelihood_note(name: str, noise_aware: bool, family: Any = None, bounds: Any = None,
                     group_dim: str | None | bool = False) -> tuple[str, ...]:
    """What the ledger says of the likelihood (a public choice: family, relation, bounds and the caller's flag).

    A plug-in likelihood reads the release as exact; a noise-aware regression models its covariates (by
    group, with ``group_dim`` given: None for a group index without a dim).
    """
    if noise_aware:
        if family is not None and family.name == "linear_regression":
            lo, hi = family.box(bounds)
            mixing = f", {name}_x_mixing" if int(np.sum(lo[:-1] != hi[:-1])) > 1 else ""
            note = COVARIATE_ASSUMPTION.format(name=name, mixing=mixing)
            if group_dim is not False:
                note += f", in each group (their first dim, {group_dim or group_dim_name(name)!r})"
            return (note,)
        return ()
    return (f"plug-in likelihood for {name!r}: the released statistics are read as if exact (the posterior "
            "ignores the noise, and is over-confident where the noise is comparable to the statistics)",)


def plan_privatization(
    model: Any,
    epsilon: float | None,
    *,
    bounds: Mapping[str, Mapping[str, Any]] | None = None,
    neighbouring: str = "replace",
    epsilon_split: Mapping[str, float] | None = None,
    noise_aware: bool | str = "auto",
    public: Sequence[str] = (),
    delta: float = 0.0,
) -> PrivatizationPlan:
    """Validate a privatisation of ``model`` completely and price it, spending nothing.

    Every check :func:`privatize_model` makes happens here: the families, the
    bounds, the statistics, the noise-aware choice, and the record-free rebuild itself
    (run once on placeholder statistics that read no records, so a model the rebuild
    refuses — e.g. a ``pm.Data`` container in a prior — is refused before any noise is
    drawn). See :func:`privatize_model` for the arguments. PyMC's imputation of missing
    values is undone first (:func:`pymc_dp.model.missing.restore_missing`): a missing
    value is a malformed record, replaced by its family's default record.
    """
    from .missing import restore_missing

    if epsilon is None:
        raise ValueError("pass epsilon=, the total privacy budget to spend on the model's observed data.")
    eps = check_epsilon(epsilon)
    model = restore_missing(model)
    public_names = _check_public(model, public)
    if not [rv for rv in model.observed_RVs if rv.name not in public_names]:
        raise ValueError(
            "the model has no private observed variables: there are no records to privatise"
            + (" (every observed variable was declared public; sample it with pm.sample)." if public_names else ".")
        )
    bounds = check_model_bounds(bounds)  # {observed variable: {parameter: (lower, upper)}}, or a ValueError
    total_delta = 0.0 if delta is None else check_delta(delta)
    shares = split_epsilon(eps, [rv.name for rv in model.observed_RVs if rv.name not in public_names], epsilon_split)
    budgets = {name: (share, total_delta * share / eps) for name, share in shares.items()}  # δ split as ε is
    prepared = _plan(model, dict(bounds or {}), neighbouring, public_names, budgets, pool=noise_aware is not False)
    aware = {name: _use_noise_aware(noise_aware, p.family, name) for name, p in prepared.items()}
    # pooled sums over groups are read by the noise-aware likelihood only: the plug-in releases every group's own
    prepared = {name: replace(p, pooled=()) if isinstance(p, GroupedPrepared) and not aware[name] else p
                for name, p in prepared.items()}
    plan = PrivatizationPlan(
        model=model, prepared=prepared, shares=shares, noise_aware=aware, public=public_names, neighbouring=neighbouring,
    )
    for name, p in prepared.items():
        check_noise_scale(p.sensitivity, plan.shares[name], declared=f"bounds of {name!r} ({p.family.name} family)")
    _rebuild_without_records(  # the rehearsal: placeholders, no records, result discarded
        model, {n: _placeholder(p, plan.shares[n]) for n, p in prepared.items()},
        [p.n for p in prepared.values()], aware, public_names,
    )
    return plan


def _placeholder(prepared: Any, epsilon: float) -> PrivateStatistics | GroupedStatistics:
    """Statistics of the right family and shape whose values read no record (zeros, projected)."""
    if isinstance(prepared, GroupedPrepared):
        return GroupedStatistics(parts=tuple(_placeholder(p, prepared.part_epsilon(epsilon, p)) for p in prepared.parts),
                                 labels=prepared.labels, dim=prepared.dim, name=prepared.name, pooled=prepared.pooled,
                                 pooled_released=np.zeros(len(prepared.pooled)) if prepared.pooled else None)
    fam = prepared.family
    public_n = prepared.n if prepared.neighbouring == "replace" else None
    zeros = np.zeros(np.shape(np.atleast_1d(prepared.exact)))
    values = np.asarray(fam.project(zeros, public_n, prepared.bounds, prepared.neighbouring), dtype=float)
    return PrivateStatistics(
        family=fam, names=prepared.names, values=values, noisy=zeros, n=float(public_n or 1.0), epsilon=epsilon,
        sensitivity=prepared.sensitivity, scale=prepared.sensitivity / epsilon, neighbouring=prepared.neighbouring,
        bounds=prepared.bounds, entry_id="rehearsal", noise_source="none", ledger=PrivacyLedger(neighbouring=prepared.neighbouring),
        mechanism=prepared.mechanism(epsilon), design=prepared.design,
        released=None if prepared.exact_released is None else np.zeros(np.size(prepared.exact_released)),
    )


def public_assumption(names: Sequence[str]) -> str:
    """The ledger assumption recording which observed variables (or data containers) were declared public."""
    return f"data of {', '.join(map(repr, names))} declared public by the analyst: used as they are, not privatised"


def _check_public(model: Any, public: Any) -> frozenset[str]:
    """``public`` as a set of names of observed variables or data containers, or a ValueError naming the bad ones."""
    if isinstance(public, str):
        public = (public,)
    try:
        names = frozenset(public)
    except TypeError:
        raise ValueError(f"public must be a list of observed variable names, got {public!r}.") from None
    observed = {rv.name for rv in model.observed_RVs}
    containers = {v.name for v in model.data_vars}
    unknown = sorted(n for n in names if n not in observed | containers)
    if unknown:
        raise ValueError(
            f"public names {unknown}, which are neither observed variables (observed: {sorted(observed)}) nor data "
            f"containers (pm.Data: {sorted(containers)}) of the model."
        )
    _refuse_copies(model, names)
    return names


def rebuild_one_likelihood(model: Any, name: str, likelihood: Callable[..., Any], rows: int,
                           public: frozenset[str]) -> Any:
    """:func:`rebuild_with_likelihoods` for one observed variable, warning of the Deterministics it left out."""
    copy, dropped = rebuild_with_likelihoods(model, {name: likelihood}, [rows], public)
    if dropped:
        warnings.warn("the private copy of the model left out Deterministic(s) of the records: "
                      + ", ".join(sorted(dropped)), DroppedDeterministicWarning, stacklevel=4)
    return copy


def single_private_observed(model: Any, public: Any, what: str) -> tuple[frozenset[str], Any, np.ndarray]:
    """The public names, the one private observed variable and its records (flat), for a route that privatises
    exactly one (``what`` names it in the refusal)."""
    public_names = _check_public(model, public)
    private = [rv for rv in model.observed_RVs if rv.name not in public_names]
    if len(private) != 1:
        raise ValueError(
            f"the {what} privatise one observed variable, the model has {len(private)} private ones "
            f"({[rv.name for rv in private]}); declare the others public=[...] or use another route."
        )
    rv = private[0]
    return public_names, rv, np.asarray(_observed_records(model, rv), dtype=float).reshape(-1)


def _refuse_copies(model: Any, public: frozenset[str]) -> None:
    """Refuse a public observed variable whose records are those of a private one (a mislabelled copy)."""
    private = [rv for rv in model.observed_RVs if rv.name not in public]
    for rv in model.observed_RVs:
        if rv.name not in public:
            continue
        records = _observed_records(model, rv)
        for other in private:
            theirs = _observed_records(model, other)
            if records.shape == theirs.shape and np.array_equal(records, theirs, equal_nan=True):
                raise ValueError(
                    f"the records of {rv.name!r}, declared public, are those of the private observed variable "
                    f"{other.name!r}: a public variable must hold other (public) records. Nothing was spent."
                )


def _observed_value(value: Any) -> np.ndarray:
    """The observed value in the model's graph form: a constant, a data container, or an expression of one."""
    from pymc.model.fgraph import ModelVar

    while value.owner is not None and isinstance(value.owner.op, ModelVar):  # pm.Data's wrapper
        value = value.owner.inputs[0]
    if hasattr(value, "get_value"):
        return np.asarray(value.get_value(borrow=True))
    if hasattr(value, "data"):
        return np.asarray(value.data)
    return evaluate(value)  # e.g. pm.Data(..., dims=...) seen through a shape check


class PlugInLikelihoodWarning(UserWarning):
    """A privatised observed variable got the plug-in likelihood because no noise-aware one applies."""


def _use_noise_aware(setting: bool | str, family: Any, name: str) -> bool:
    """Decide, before anything is spent, which likelihood each observed variable gets."""
    available = family.supports_noise_aware
    if setting == "auto":
        if not available:
            warn_at_caller(
                f"observed variable {name!r} gets the plug-in likelihood (the noisy statistics taken as exact: "
                f"the {family.name} family has no noise-aware one); its intervals leave out the noise and can be "
                "over-confident at small N·ε. The ledger entry says so. Pass noise_aware=False to choose it and "
                "silence this.",
                PlugInLikelihoodWarning,
            )
        return available
    if setting is True and not available:
        raise ValueError(
            f"observed variable {name!r}: no noise-aware likelihood for the {family.name} family; use "
            "noise_aware='auto' or False (nothing was spent)."
        )
    if isinstance(setting, bool):
        return setting
    raise ValueError(f"noise_aware must be 'auto', True or False, got {setting!r} (nothing was spent).")
