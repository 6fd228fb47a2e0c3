"""The one shape every privacy route has: plan → reserve → run → record → release.

A route turns ``(model, draws, epsilon, options, ledger, pm.sample keywords)`` into a
:class:`RoutePlan` (``plan``: validate the whole request and price it, spending
nothing). :func:`execute` then does the rest the same way for every route:

1. **reserve** the planned entries on the ledger, under its lock
   (:meth:`pymc_dp.PrivacyLedger.reserve`): the budget check counts every other
   outstanding reservation, so two runs on one ledger cannot both pass it;
2. **run** the plan (``RoutePlan.run``): draw the noise, sample;
3. **record** what ran (``Reservation.commit``) — or, if the run failed, what the
   failure spent (``RoutePlan.spent_on_failure``: the noise already drawn, the
   updates that may have run) — and give back the rest of the reservation;
4. **release** through the one whitelist (:func:`pymc_dp.release`), which also
   refuses a trace holding a variable the user did not declare or whose shape
   depends on the data (:func:`pymc_dp.trace.check_released_variables`).

The checks every route shares before anything is spent live here too:
:func:`check_request` (observed dtypes, ``pm.sample`` keywords, steps built on another
model). Missing values are not refused: PyMC's imputation is undone first
(:func:`pymc_dp.model.missing.restore_missing`) and every route treats a NaN as a
malformed record.
"""

from __future__ import annotations

import inspect
import warnings
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from .._logs import quiet_logs
from ..accounting import LedgerEntry, PrivacyLedger
from ..accounting.validation import check_count, check_finite_array
from ..trace import imputed_variables, release
from .._evaluate import evaluate, evaluate_int

__all__ = [
    "RoutePlan", "Ran", "execute", "check_request", "check_initvals", "SEEDED_SAMPLER", "sampler_noise_source",
    "resolve_chains", "apply_loglik_clip", "public_names", "check_plan_keywords", "quiet_logs",
]

#: The assumption an MCMC route's entries carry when ``random_seed`` fixed the sampler's randomness.
SEEDED_SAMPLER = (
    "the sampler's randomness, which is the privacy randomness of this route, was seeded (random_seed=): the "
    "release is reproducible bit for bit by anyone who knows the seed and the data; for research and tests only"
)


@dataclass
class Ran:
    """What a run produced: the raw trace, the model it sampled, and what it spent.

    ``trace`` never leaves the curator as it is: :func:`execute` releases it through the
    whitelist, keeping the ``sample_stats`` named here (and their tuning-draw values
    when ``warmup_sample_stats``).
    """

    trace: Any
    model: Any
    spent: Sequence[LedgerEntry]
    sample_stats: Sequence[str] = ()
    warmup_sample_stats: bool = False


@dataclass
class RoutePlan(ABC):
    """A validated, priced request: nothing has been spent when one exists.

    Attributes
    ----------
    ledger
        The ledger the run charges.
    entries
        What the run may spend at most; reserved on the ledger before it runs.
    """

    ledger: PrivacyLedger
    entries: Sequence[LedgerEntry] = field(default_factory=tuple)
    #: Assumptions every entry the run spends is recorded with (e.g. group-level data read as public).
    assumptions: Sequence[str] = field(default_factory=tuple, kw_only=True)
    #: The route's name (``method=``), recorded in every entry the run spends that does not name it already.
    route_name: str | None = field(default=None, kw_only=True)
    #: Details every entry the run spends is recorded with (why the request was planned this way), its own first.
    ledger_details: Mapping[str, Any] = field(default_factory=dict, kw_only=True)

    @abstractmethod
    def run(self) -> Ran:
        """Do the work (draw noise, sample) and say what it spent."""

    def spent_on_failure(self, failure: BaseException) -> Sequence[LedgerEntry]:
        """What a run that raised ``failure`` spent (default: nothing)."""
        return ()

    @property
    def what(self) -> str:
        """How the run is named in a budget refusal."""
        return type(self).__name__

    @property
    def reads_records(self) -> bool:
        """Whether the run's sampler reads the records (False only where it samples a record-free model)."""
        return True


def check_plan_keywords(plan: RoutePlan, keywords: Mapping[str, Any]) -> None:
    """Refuse, before anything is spent, keywords that would hand the curator's internals to user code.

    Where the sampled density reads the records: ``callback=`` (it sees every draw, tuning
    draws too, and the sampler's statistics: more than the route pays for) and
    ``compile_kwargs`` beyond a named mode and a gradient backend (a ``Mode`` object such
    as ``MonitorMode`` runs user code on every intermediate value).
    """
    if not plan.reads_records:
        return
    if keywords.get("callback") is not None:
        raise ValueError(
            f"callback= cannot run on this route ({plan.what}): PyMC would call it with every draw and the sampler's "
            "statistics of a density that reads the records, of which only the released draws are paid for. "
            "Leave it out; nothing was spent."
        )
    compile_kwargs = dict(keywords.get("compile_kwargs") or {})
    mode, backend = compile_kwargs.pop("mode", None), compile_kwargs.pop("gradient_backend", None)
    from pytensor.compile.mode import predefined_modes

    named = {*predefined_modes, "FAST_RUN"}
    if compile_kwargs or (mode is not None and not (isinstance(mode, str) and mode.upper() in named)) or (
            backend is not None and not isinstance(backend, str)):
        raise ValueError(
            f"compile_kwargs on this route ({plan.what}) may only name a compilation mode (mode= one of "
            f"{sorted(named)}) and a gradient_backend: a Mode object or other pytensor.function options can run user "
            "code on every intermediate value of a density that reads the records. Nothing was spent."
        )


def _recorded(entries: Sequence[LedgerEntry], plan: RoutePlan) -> list[LedgerEntry]:
    """The entries a run spent as the ledger records them: with the plan's assumptions and its route's name."""
    from dataclasses import replace

    new = tuple(plan.assumptions)
    out = [replace(e, assumptions=(*e.assumptions, *(a for a in new if a not in e.assumptions))) if new else e
           for e in entries]
    if plan.route_name:
        out = [e if "route" in e.details else replace(e, details={"route": plan.route_name, **e.details}) for e in out]
    if plan.ledger_details:
        out = [replace(e, details={**plan.ledger_details, **e.details}) for e in out]
    return out


def _spent_note(spent: Sequence[LedgerEntry]) -> str:
    """What a failed run cost, said with its error (the ledger records it)."""
    if not spent:
        return "pymc_dp: nothing was spent (the reservation was given back)."
    total = sum(e.epsilon * e.count for e in spent)
    return (f"pymc_dp: the run spent ε = {total:.4g} before it failed ({len(spent)} ledger entr"
            f"{'y' if len(spent) == 1 else 'ies'}, recorded); the rest of the reservation was given back.")


def execute(plan: RoutePlan) -> Any:
    """Reserve the plan's cost, run it, record what it spent, and release the trace.

    If the run raises, what it spent (``plan.spent_on_failure``) is recorded, the rest
    of the reservation is given back, and the exception propagates.
    """
    from ..model._graph import number_of_records_private

    private_n = plan.ledger.neighbouring == "add_remove"  # N private: no check compares a size with it
    with plan.ledger.reserve(list(plan.entries), what=plan.what) as reservation:
        try:
            with quiet_logs(plan.reads_records), number_of_records_private(private_n):
                ran = plan.run()
        except BaseException as failure:
            spent = _recorded(plan.spent_on_failure(failure), plan)
            if spent:
                reservation.commit(spent)
            if isinstance(failure, Exception):
                failure.add_note(_spent_note(spent))
            raise
        reservation.commit(_recorded(ran.spent, plan))
    with number_of_records_private(private_n):
        return release(
            ran.trace, ledger=plan.ledger, model=ran.model, sample_stats=tuple(ran.sample_stats),
            warmup_sample_stats=ran.warmup_sample_stats,
        )


# ---------------------------------------------------------------------------- shared checks

#: ``pm.sample`` keywords no route accepts, and why.
_REFUSED = {
    "trace": "pmdp.sample always returns the released trace (InferenceData or DataTree)",
    "return_inferencedata": "pmdp.sample always returns the released trace (InferenceData or DataTree)",
    "model": "pass the model as pmdp.sample(model=...)",
}


def _step_keywords() -> set[str]:
    """Keywords ``pm.sample`` hands on to its step methods (``target_accept=``, ``nuts={...}``, ...)."""
    import pymc as pm

    names: set[str] = set()
    for cls in (pm.NUTS, pm.HamiltonianMC, pm.Metropolis, pm.Slice, pm.DEMetropolisZ, pm.BinaryGibbsMetropolis,
                pm.CategoricalGibbsMetropolis):
        names |= {p for p in inspect.signature(cls.__init__).parameters if p not in ("self", "vars", "model")}
        names.add(cls.__name__.lower())
    from pymc.step_methods.hmc.base_hmc import BaseHMC

    names |= {p for p in inspect.signature(BaseHMC.__init__).parameters if p not in ("self", "vars", "model")}
    names |= {"nuts", "metropolis", "slice", "hamiltonianmc", "demetropolisz"}
    return names - {"kwargs", "args"}


def check_pm_sample_keywords(keywords: Mapping[str, Any]) -> None:
    """Refuse, before anything is spent, keywords ``pm.sample`` would reject or that break the release."""
    from pymc.sampling.mcmc import sample as pm_sample

    for key, why in _REFUSED.items():
        if key in keywords:
            raise ValueError(f"{key}= is not supported: {why}.")
    known = set(inspect.signature(pm_sample).parameters) | _step_keywords()
    unknown = sorted(k for k in keywords if k not in known)
    if unknown:
        raise ValueError(
            f"unknown keyword(s) {unknown}: pmdp.sample passes its other keywords to pm.sample, which does not take "
            "them (nothing was spent). Check the spelling against pm.sample's signature."
        )


def _observed_value(model: Any, rv: Any) -> Any:
    value = model.rvs_to_values.get(rv)
    for read in ("get_value", "data"):
        if hasattr(value, read):
            got = getattr(value, read)
            return np.ma.asarray(got(borrow=True) if read == "get_value" else got)
    return None


def check_observed_dtypes(model: Any) -> None:
    """Refuse observed data that are not numbers (text, objects), before anything is spent.

    The refusal depends on the declared dtype of a whole column, never on a record's
    value. Missing values are not refused (that would say some are missing): the model
    reaches the routes through :func:`pymc_dp.model.missing.restore_missing`, which undoes
    PyMC's imputation, and each route treats a NaN as a malformed record.
    """
    for rv in model.observed_RVs:
        value = _observed_value(model, rv)
        if value is not None and value.dtype.kind not in "biufc":
            raise ValueError(
                f"the observed data of {rv.name!r} must be numbers, got dtype {value.dtype}; pymc_dp does not "
                "convert text or objects to numbers: convert them explicitly (e.g. np.asarray(y, dtype=float)) "
                "once you have checked them. Nothing was spent."
            )
    imputed = imputed_variables(model)
    if imputed:  # pragma: no cover - restore_missing undid every imputation (or said why it cannot)
        raise ValueError(f"the model still holds PyMC's imputation of missing values ({sorted(imputed)}); pass it "
                         "through pmdp.sample, which undoes it. Nothing was spent.")


def check_step_model(keywords: Mapping[str, Any], sampled_is_copy: bool, method: str, how: str) -> None:
    """Refuse ``step=`` instances when the route samples a copy of the user's model (they are bound to it)."""
    if keywords.get("step") is not None and sampled_is_copy:
        raise ValueError(
            f"step= was built on your model, but method={method!r} samples a copy of it ({how}), so the step "
            "cannot run there; nothing was spent. Leave step= out (PyMC assigns steps to the copy), or " + {
                "laplace": "privatise first (pmdp.privatize_model), build the steps inside `with private.model:` and "
                "call pmdp.sample(model=private.model, step=...)",
                "measurements": "pass step keywords (e.g. target_accept=) instead",
                "ops": "pass nuts_sampler= / step keywords (e.g. target_accept=) instead",
                "gibbs": "truncate the model yourself (pmdp.truncate), keep its records inside the bounds, build the "
                "steps on that model and pass it without truncate=",
                "saa": "pass step keywords (e.g. target_accept=) instead: each block is fitted by pm.sample",
            }[method] + "."
        )


def check_observed_values(model: Any) -> None:
    """Refuse observed values computed from the data by an operation that mixes records (e.g. ``y - y.mean()``).

    Every route reads record i as row i of the observed value; a value built across
    rows would let one record move every row. Values that are data containers or
    constants, or row-by-row expressions of them, pass.
    """
    from ..model._graph import data_leaves, dim_lengths
    from ..model.records import RecordLocalityError, check_terms_record_local, per_record_leaves

    for rv in model.observed_RVs:
        value = model.rvs_to_values.get(rv)
        if value is None or value.owner is None:
            continue
        records = evaluate_int(value.shape[0]) if value.type.ndim else 1
        leaves = data_leaves([value], record_counts=[records], public=dim_lengths(model))
        aligned, other = per_record_leaves(leaves, records)
        try:
            if other:
                raise RecordLocalityError("data without one row per record enters them")
            check_terms_record_local(value, aligned, (), "replace")
        except RecordLocalityError as err:
            raise ValueError(
                f"the observed values of {rv.name!r} are computed from the data across records ({err}): record i "
                "must be row i of what is observed. Compute them before the model, row by row. Nothing was spent."
            ) from None


def check_request(model: Any, draws: Any, keywords: Mapping[str, Any]) -> None:
    """The checks every route makes before it plans: keywords, sampling arguments, observed dtypes and values.

    ``model`` is the one the routes plan on, with PyMC's imputation of missing values
    undone (:func:`pymc_dp.model.missing.restore_missing`).
    """
    check_pm_sample_keywords(keywords)
    check_sampling_arguments(draws, keywords)
    check_observed_dtypes(model)
    check_observed_values(model)


#: ``init=`` methods ``pm.sample`` knows.
INIT_METHODS = (
    "auto", "adapt_diag", "jitter+adapt_diag", "jitter+adapt_diag_grad", "advi+adapt_diag", "advi", "advi_map",
    "map", "jitter+map", "adapt_full", "jitter+adapt_full",
)


def _whole(value: Any, name: str, minimum: int) -> None:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}; nothing was spent.")
    check_count(value, name, minimum=minimum)


def check_sampling_arguments(draws: Any, keywords: Mapping[str, Any]) -> None:
    """Refuse, before anything is spent, sampling arguments ``pm.sample`` would fail on after the spend."""
    _whole(draws, "draws", 1)
    for name, minimum in (("tune", 0), ("chains", 1), ("cores", 1), ("blas_cores", 1), ("n_init", 1),
                          ("jitter_max_retries", 0)):
        if keywords.get(name) is not None:
            _whole(keywords[name], name, minimum)
    init = keywords.get("init")
    if init is not None and init not in INIT_METHODS:
        raise ValueError(f"init must be one of {INIT_METHODS}, got {init!r}; nothing was spent.")
    seed = keywords.get("random_seed")
    if seed is not None and not isinstance(seed, (np.random.Generator, np.random.SeedSequence, np.random.RandomState)):
        seeds = list(seed) if isinstance(seed, (list, tuple, np.ndarray)) else [seed]
        if not all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) and x >= 0 for x in seeds):
            raise ValueError(
                f"random_seed must be a non-negative integer, a sequence of them (one per chain) or a NumPy "
                f"Generator, got {seed!r}; nothing was spent."
            )
    initvals = keywords.get("initvals")
    chains = keywords.get("chains")
    if isinstance(initvals, (list, tuple)) and chains is not None and len(initvals) != chains:
        raise ValueError(
            f"initvals is a list of {len(initvals)} starting points but chains={chains}: give one per chain (or one "
            "mapping for all); nothing was spent."
        )
    _check_trace_keywords(keywords)
    _check_step_settings(keywords)
    _check_compile_keywords(keywords)
    for name in ("nuts_sampler",):
        sampler = keywords.get(name)
        if sampler not in (None, "pymc"):
            import importlib.util

            module = {"numpyro": "numpyro", "blackjax": "blackjax", "nutpie": "nutpie"}.get(sampler)
            if module is None or importlib.util.find_spec(module) is None:
                raise ValueError(
                    f"nuts_sampler={sampler!r} is not available here (install {module or 'it'}, or leave "
                    "nuts_sampler out); nothing was spent."
                )


def _check_trace_keywords(keywords: Mapping[str, Any]) -> None:
    """``var_names`` and ``idata_kwargs``, which ``pm.sample`` reads only after the draws (after the spend)."""
    var_names = keywords.get("var_names")
    if isinstance(var_names, str):
        raise ValueError(f"var_names must be a list of variable names (e.g. [{var_names!r}]), not a string; "
                         "nothing was spent.")
    if var_names is not None and not (
        isinstance(var_names, (list, tuple)) and all(isinstance(name, str) for name in var_names)
    ):
        raise ValueError(f"var_names must be a list of variable names, got {var_names!r}; nothing was spent.")
    idata_kwargs = keywords.get("idata_kwargs")
    if idata_kwargs is None:
        return
    from pymc.backends.arviz import to_inference_data

    known = sorted(set(inspect.signature(to_inference_data).parameters) - {"trace", "model"})
    if not isinstance(idata_kwargs, Mapping):
        raise ValueError(f"idata_kwargs must be a dict of keywords of pm.to_inference_data ({', '.join(known)}), "
                         f"got {idata_kwargs!r}; nothing was spent.")
    unknown = sorted(map(str, set(idata_kwargs) - set(known)))
    if unknown:
        raise ValueError(f"idata_kwargs has keyword(s) {unknown} that pm.to_inference_data does not take (it takes "
                         f"{', '.join(known)}); nothing was spent.")
    relabel = sorted(k for k in ("coords", "dims") if idata_kwargs.get(k) is not None)
    if relabel:
        raise ValueError(f"idata_kwargs {relabel} are not taken: the released trace's coords and dims are the "
                         "model's. Declare them on the model (pm.Model(coords=...), dims=...); nothing was spent.")


def _check_compile_keywords(keywords: Mapping[str, Any]) -> None:
    """``callback`` and ``compile_kwargs``, which ``pm.sample`` uses only once the draws start."""
    callback = keywords.get("callback")
    if callback is not None and not callable(callback):
        raise ValueError(f"callback must be a function callback(trace=..., draw=...), got {callback!r}; "
                         "nothing was spent.")
    compile_kwargs = keywords.get("compile_kwargs")
    if compile_kwargs is None:
        return
    import pytensor

    known = set(inspect.signature(pytensor.function).parameters) - {"inputs", "outputs"}
    if not isinstance(compile_kwargs, Mapping) or set(compile_kwargs) - known:
        raise ValueError(f"compile_kwargs must be a dict of pytensor.function keywords ({', '.join(sorted(known))}), "
                         f"got {compile_kwargs!r}; nothing was spent.")
    if compile_kwargs.get("mode") is not None:
        from pytensor.compile.mode import get_mode

        try:
            get_mode(compile_kwargs["mode"])
        except Exception as err:  # noqa: BLE001 - PyTensor raises several kinds for an unknown mode
            raise ValueError(f"compile_kwargs['mode'] is not a PyTensor mode ({err}); nothing was spent.") from None


#: The step-method settings ``pm.sample`` takes as ``<method>={...}``.
_STEP_SETTINGS = ("nuts", "hamiltonianmc", "metropolis", "slice", "demetropolisz", "binarygibbsmetropolis",
                  "categoricalgibbsmetropolis")


def _check_step_settings(keywords: Mapping[str, Any]) -> None:
    """Step settings ``pm.sample`` would accept and then fail on (or silently ignore) once the draws start."""
    import pytensor

    settings: list[tuple[str | None, Mapping[str, Any]]] = [(None, keywords)]
    known = _step_keywords() | set(inspect.signature(pytensor.function).parameters)
    for method in _STEP_SETTINGS:
        given = keywords.get(method)
        if given is None:
            continue
        if not isinstance(given, Mapping):
            raise ValueError(f"{method}= must be a dict of {method} settings (e.g. {{'target_accept': 0.9}}), "
                             f"got {given!r}; nothing was spent.")
        unknown = sorted(map(str, set(given) - known))
        if unknown:
            raise ValueError(f"{method}= has setting(s) {unknown} no PyMC step method takes (a misspelling?); "
                             "nothing was spent.")
        settings.append((method, given))
    for method, given in settings:
        where = (lambda name: name) if method is None else (lambda name, m=method: f"{m}['{name}']")
        accept = given.get("target_accept")
        if accept is not None and not (_is_real(accept) and 0 < accept < 1):
            raise ValueError(f"{where('target_accept')} must be a number strictly between 0 and 1, got {accept!r}; "
                             "nothing was spent.")
        for name in ("max_treedepth", "early_max_treedepth"):
            if given.get(name) is not None:
                _whole(given[name], where(name), 1)
        scale = given.get("step_scale")
        if scale is not None and not (_is_real(scale) and 0 < scale < np.inf):
            raise ValueError(f"{where('step_scale')} must be a positive number, got {scale!r}; nothing was spent.")


def _is_real(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def check_initvals(model: Any, initvals: Any) -> None:
    """Refuse ``initvals`` that name no free variable of ``model`` or lie outside its prior's support.

    ``model`` is the one the route samples (truncated on the MCMC routes), so a start
    outside a truncation is refused too; nothing has been spent when this runs.
    """
    if initvals is None:
        return
    from pymc.initial_point import make_initial_point_fn

    free = {rv.name: rv for rv in model.free_RVs}
    for init in [initvals] if isinstance(initvals, Mapping) else list(initvals):
        if init is None:
            continue
        if not isinstance(init, Mapping):
            raise ValueError(f"initvals must be a mapping {{free variable: value}} (or one per chain), got {init!r}.")
        names = [getattr(k, "name", k) for k in init]
        unknown = sorted(str(n) for n in names if n not in free)
        if unknown:
            raise ValueError(
                f"initvals name {unknown}, which are not free variables of the model sampled ({sorted(free)}); "
                "nothing was spent."
            )
        for key, value in zip(names, init.values()):
            if not isinstance(value, str):
                arr = check_finite_array(value, f"initvals[{key!r}]", allow_bool=False,
                                         fix="give a finite starting value (or leave it out); nothing was spent.")
                shape = tuple(int(n) for n in evaluate(free[key].shape))
                if arr.shape not in ((), shape):
                    raise ValueError(
                        f"initvals[{key!r}] has shape {arr.shape}, but {key!r} has shape {shape}; nothing was spent."
                    )
        try:
            point = make_initial_point_fn(model=model, overrides=dict(zip(names, init.values())), jitter_rvs=set())(0)
            logps = model.compile_fn(
                inputs=model.value_vars, outs=[model.logp([free[n]], sum=True) for n in names], on_unused_input="ignore",
                mode="FAST_COMPILE",  # evaluated once: compiling it would cost seconds on a cold cache
            )(point)
        except Exception as err:  # noqa: BLE001 - whatever PyMC says of a bad start, said before any spend
            raise ValueError(f"initvals {dict(init)!r} cannot start the sampler: {err}; nothing was spent.") from None
        outside = [n for n, lp in zip(names, logps) if not np.isfinite(lp)]
        if outside:
            raise ValueError(
                f"initvals put {outside} outside the support of their prior (or truncation) in the model sampled; "
                "nothing was spent. Start inside the support."
            )


def sampler_noise_source(keywords: Mapping[str, Any]) -> tuple[str, tuple[str, ...]]:
    """``("seeded", (SEEDED_SAMPLER,))`` when ``random_seed`` fixes an MCMC route's randomness, with a warning.

    On the ops and gibbs routes the privacy randomness is the sampler's: a fixed seed
    makes the release reproducible bit for bit, so the ledger says so. Without a seed
    PyMC draws one from the operating system, and it is not recorded anywhere.
    """
    if keywords.get("random_seed") is None:
        return "sampler", ()
    warnings.warn(
        "random_seed= fixes the sampler's randomness, which is this route's privacy randomness: the release is "
        "reproducible from the seed and the data, and the ledger records it as seeded. Leave random_seed out for a "
        "release (PyMC then draws the seed from the operating system).",
        UserWarning,
        stacklevel=4,
    )
    return "seeded", (SEEDED_SAMPLER,)


def public_names(public: Any) -> tuple[str, ...]:
    """The ``public=`` option as a tuple of names, or a ValueError (a name or a list of names)."""
    if not isinstance(public, (str, list, tuple, set, frozenset)):
        raise ValueError(f"public must be the name of an observed variable or a list of names, got {public!r}.")
    return (public,) if isinstance(public, str) else tuple(public)


def apply_loglik_clip(model: Any, loglik_clip: Any) -> Any:
    """``model`` with its log-likelihood terms clipped to the declared ``(lower, upper)`` (unchanged for None)."""
    if loglik_clip is None:
        return model
    from ..model import clip_loglik

    if isinstance(loglik_clip, (str, bytes, Mapping)):
        raise ValueError(f"loglik_clip must be a (lower, upper) pair of numbers, got {loglik_clip!r}.")
    try:
        lower, upper = loglik_clip
    except (TypeError, ValueError):
        raise ValueError(f"loglik_clip must be a (lower, upper) pair of numbers, got {loglik_clip!r}.") from None
    return clip_loglik(model, lower, upper)


def resolve_chains(pm_sample_kwargs: Mapping[str, Any]) -> int:
    """The number of chains ``pm.sample`` will run (its own default rule, so the cost is known up front)."""
    chains = pm_sample_kwargs.get("chains")
    if chains is None:
        cores = pm_sample_kwargs.get("cores")
        if cores is None:
            try:
                from pymc.sampling.mcmc import _cpu_count

                cores = min(4, _cpu_count())
            except ImportError:  # pragma: no cover - a PyMC without the helper
                import os

                cores = min(4, os.cpu_count() or 1)
        chains = max(2, int(cores))
    if isinstance(chains, bool) or not isinstance(chains, (int, np.integer)) or chains < 1:
        raise ValueError(f"chains must be a positive integer, got {chains!r}.")
    return int(chains)
