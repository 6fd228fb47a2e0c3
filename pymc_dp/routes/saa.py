"""The subsample-and-aggregate route of ``pmdp.sample``: any model as written, charged once.

Subsample and aggregate (Nissim, Raskhodnikova & Smith 2007; Dwork & Roth §7.1;
slides 004) needs no analysis of the model at all:

1. **split** the records into ``k`` disjoint blocks (a record is the row of the
   observed variables together with every per-record array aligned with it:
   covariates, group indices, per-record parameters; blocks are drawn at random,
   or contiguous for a time series);
2. **fit** the model, as written, to each block with plain ``pm.sample`` and take each
   parameter's posterior mean: k estimates, each a function of its own block only;
3. **clip** every estimate into the parameter's declared range ``[lo, hi]``
   (``ranges=``; never read from the data);
4. **aggregate** privately: the mean of the k clipped estimates plus Laplace noise.
   Replacing one record changes one block, so one estimate, so the mean moves by at
   most ``(hi − lo)/k`` per coordinate: L1 sensitivity ``Σ (hi − lo)/k``, charged
   **once** by parallel composition (each block is a disjoint part of the data).

Why a noisy mean and not a private median: the mean's sensitivity falls as 1/k and
its noise is unbiased and Laplace with a known scale, so the released uncertainty
can include it exactly; a median would be more robust to a bad block but its
exponential-mechanism noise depends on the spread of the estimates and has no
closed form to propagate.

**Uncertainty.** With ``spread=True`` (default) half of ε releases the blocks'
second moment as well, so the between-block standard deviation s is known
privately; ``s/√k`` estimates the standard error of the aggregate (the blocks are
k independent fits on N/k records each, so for a regular model their spread is
about √k times the full-data posterior's). The released trace holds draws from a
normal approximation ``N(mean, s²/k + 2b²)`` (b: the Laplace scale of the mean):
post-processing of the two released numbers, costing nothing more. This is an
approximation, and the ledger says so: it is a point estimate with an honest error
bar, not a posterior — skew, multimodality and correlations between parameters are
not represented (each coordinate is approximated independently).

**Malformed records are not refused** (a refusal would say that some record is
malformed). A record with a NaN or infinite observed value, or whose log-likelihood is
not finite at the model's initial point (a value outside the likelihood's support: a
Poisson −1), is left out of its block's fit; a block whose fit fails anyway on its
records (PyMC's ``SamplingError``, a floating-point or linear-algebra error, an estimate
that is not finite) counts as the midpoint of the declared ranges.
Both are functions of one block alone, so one record still changes one clipped
estimate and the sensitivity holds; how many goes to the curator only.

Variables whose shape depends on the records (per-record latents) cannot be
aggregated and are not released. Only replace-one neighbouring is supported (N is
public; adding a record would move the block boundaries).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

import numpy as np
import xarray as xr

from .. import _compat
from ..accounting import LedgerEntry, PrivacyLedger, resolve_ledger
from ..accounting.curator import curator_report
from ..accounting.validation import check_epsilon, check_finite_number
from ..families.privatize import PUBLIC_N, ClippedRecordsWarning
from ..mechanisms.laplace import laplace_mechanism
from ..model._graph import data_leaves, describe_leaf, dim_lengths
from ..model.records import per_record_leaves
from ..trace import check_release_plan
from .base import Ran, RoutePlan, check_initvals, check_step_model
from .options import SAA
from .progress import ProgressLine
from .._evaluate import evaluate, evaluate_int

__all__ = ["plan_saa", "SAARun", "block_model", "MECHANISM", "NORMAL_APPROXIMATION"]

#: The ledger mechanism name of the aggregate.
MECHANISM = "subsample_and_aggregate"
#: The assumption of the released normal approximation.
NORMAL_APPROXIMATION = (
    "the released draws are a normal approximation built from the private block mean and spread (post-processing): "
    "N(mean, s²/k + noise variance) per coordinate, independent across coordinates; it assumes the k block estimates "
    "are roughly normal and that their spread reflects the full-data uncertainty (regular models, N/k records a block)"
)
#: ``pm.sample`` keywords the route handles itself rather than passing to each block's fit.
_OWN_KEYS = ("var_names", "random_seed", "idata_kwargs", "initvals", "progressbar")


# --------------------------------------------------------------------------- blocks of records


def _record_count(model: Any) -> int:
    from ..model.privatize_model import _observed_records

    counts = {int(np.shape(_observed_records(model, rv))[0]) for rv in model.observed_RVs}
    if len(counts) != 1:
        raise ValueError(
            f"method='saa' splits one table of records into blocks, but the observed variables have different numbers "
            f"of rows ({sorted(counts)}); give them one row per record each."
        )
    return counts.pop()


def _leaf_rows(var: Any) -> int | None:
    value = var.get_value(borrow=True) if hasattr(var, "get_value") else getattr(var, "data", None)
    shape = np.shape(value)
    return int(shape[0]) if shape else None


def _sliced(var: Any, rows: np.ndarray) -> Any:
    """The block's rows of a per-record array, as an input of the block's graph (see :func:`_block_input`)."""
    value = var.get_value(borrow=True) if hasattr(var, "get_value") else var.data
    return _block_input(np.asarray(np.asarray(value)[rows], dtype=var.type.dtype), static_shape=False)


def _block_input(value: np.ndarray, *, static_shape: bool) -> Any:
    """A block's own numbers (its rows, its record count) as an unnamed shared variable, not a constant.

    Every block's model is then the same graph over different inputs, so the machine code compiled for the first
    block is found in PyTensor's compile cache by the others (with constants, the numbers are part of the graph
    and every block compiled afresh: seconds to tens of seconds each). ``static_shape`` keeps the length of a
    size vector (the number of dimensions, the same for every block) known to the graph.
    """
    import pytensor

    return pytensor.shared(value, shape=value.shape if static_shape else None)


def _data_to_slice(model: Any, records: int) -> list[Any]:
    """Every data leaf of the model (observed values included), refusing those not one row per record."""
    public = dim_lengths(model)
    outputs = [*model.free_RVs, *model.observed_RVs, *model.potentials, *model.deterministics]
    values = [model.rvs_to_values[rv] for rv in model.observed_RVs]
    leaves = data_leaves([*outputs, *values], blockers=(), record_counts=[records], public=public)
    leaves += [v for v in values if v.owner is None and v not in leaves]
    aligned, unaligned = per_record_leaves(leaves, records)
    if unaligned:
        raise ValueError(
            "method='saa' gives each block its own rows of every per-record array, but "
            + ", ".join(describe_leaf(v) for v in unaligned)
            + f" is data without one row per record ({records} records): an aggregate over records or records "
            "sliced or transposed would reach every block. Pass per-record inputs with one row per record. "
            "Nothing was spent."
        )
    return aligned


def block_model(model: Any, rows: np.ndarray, leaves: Sequence[Any] | None = None) -> Any:
    """A copy of ``model`` on the records ``rows`` only: every per-record array, and every dim as long as the records, cut to them."""
    from pytensor.graph.fg import FunctionGraph
    from pytensor.graph.replace import clone_replace

    records = _record_count(model)
    leaves = _data_to_slice(model, records) if leaves is None else leaves
    fg, initvals = _compat.fgraph_of_model(model)
    names = {getattr(v, "name", None) for v in leaves}
    by_identity = {id(v) for v in leaves}
    replace: dict[Any, Any] = {}
    for var in fg.variables:
        if var.owner is None and (id(var) in by_identity or (var.name in names and var.name is not None)):
            if _leaf_rows(var) == records:
                replace[var] = _sliced(var, rows)
    replace.update(_record_sizes(fg, records, len(rows)))
    coords = dict(fg._coords)
    lengths = dict(fg._dim_lengths)
    for dim, length in list(lengths.items()):
        size = len(coords[dim]) if coords.get(dim) is not None else evaluate_int(length)
        if size == records:
            new = _block_input(np.asarray(len(rows), dtype=length.type.dtype), static_shape=True)
            replace[length] = new
            lengths[dim] = new
            if coords.get(dim) is not None:
                coords[dim] = tuple(np.asarray(coords[dim], dtype=object)[rows])
    outputs = clone_replace(list(fg.outputs), replace=replace, rebuild_strict=False)
    for old, new in zip(fg.outputs, outputs):  # PyMC 5 names model variables by their outputs' names
        new.name = old.name
    new_fg = FunctionGraph(outputs=outputs, clone=False)
    new_fg._coords, new_fg._dim_lengths = coords, lengths
    # The model's initial values (ordered cutpoints need theirs), a per-record latent's cut to the block's rows.
    initvals = {name: np.asarray(value)[rows] if np.ndim(value) and np.shape(value)[0] == records else value
                for name, value in initvals.items()}
    return _compat.model_of_fgraph(new_fg, initvals, order=getattr(fg, "_pmdp_order", ()))


def _block_seeds(seed: Any, k: int) -> list[Any]:
    if seed is None:
        return [None] * k
    if isinstance(seed, (list, tuple, np.ndarray)):
        seed = int(seed[0])
    if isinstance(seed, (np.random.Generator, np.random.RandomState)):
        return [seed] * k
    return [int(s.generate_state(1)[0]) for s in np.random.SeedSequence(seed).spawn(k)]


def _initvals_for(part: Any, initvals: Any, released: Mapping[str, Any]) -> Any:
    """The user's starting values for the parameters a block shares with the model (per-record ones dropped)."""
    if initvals is None:
        return None
    keep = lambda init: {k: v for k, v in init.items() if getattr(k, "name", k) in released}  # noqa: E731
    return keep(initvals) if isinstance(initvals, Mapping) else [keep(i) for i in initvals]


def _record_sizes(fg: Any, records: int, size: int) -> dict[Any, Any]:
    """Integer constants that size the observed variables by the record count (a RandomVariable's ``size``, a
    time series' ``steps``), mapped to the same with ``size`` records."""
    from pymc.model.fgraph import ModelObservedRV, ModelFreeRV
    from pytensor.graph.basic import Constant
    from pytensor.tensor.random.op import RandomVariable

    from ..model._graph import ancestors

    free = [n.outputs[0] for n in fg.apply_nodes if isinstance(n.op, ModelFreeRV)]
    free_rvs = [n.inputs[0] for n in fg.apply_nodes if isinstance(n.op, ModelFreeRV)]
    from pymc.distributions.timeseries import RandomWalkRV

    sizing, offset = [], 0
    for node in [n for n in fg.apply_nodes if isinstance(n.op, ModelObservedRV)]:
        rv = node.inputs[0]
        if isinstance(rv.owner.op, RandomVariable):
            sizing.append(rv.owner.inputs[1])
        else:
            sizing += [i for i in rv.owner.inputs if getattr(i.type, "ndim", None) == 0 and "int" in str(i.dtype)]
            # component distributions (a mixture's, a time series' innovations) carry sizes of their own
            sizing += [v.owner.inputs[1] for v in ancestors(list(rv.owner.inputs), blockers=[*free, *free_rvs])
                       if v.owner is not None and isinstance(v.owner.op, RandomVariable)]
            if isinstance(rv.owner.op, RandomWalkRV):
                offset = 1  # a random walk's steps: one fewer than its points
    out = {}
    for var in ancestors(sizing, blockers=[*free, *free_rvs]):
        if isinstance(var, Constant) and "int" in str(getattr(var, "dtype", "")) and np.ndim(var.data) <= 1 and np.size(var.data):
            value = np.atleast_1d(var.data)
            for shift in {0, offset}:
                if int(value[0]) == records - shift:
                    new = value.copy()
                    new[0] = size - shift
                    out[var] = _block_input(new.reshape(np.shape(var.data)).astype(var.dtype), static_shape=True)
    return out


def malformed_records(model: Any, records: int) -> np.ndarray:
    """Per-record mask of the records a block's fit leaves out: a NaN or infinite observed value, or a
    log-likelihood term that is not finite at the model's (public) initial point — a value outside the
    likelihood's support. Each is a function of that record's row alone (and public things)."""
    from ..model.privatize_model import _observed_records

    bad = np.zeros(records, dtype=bool)
    for rv in model.observed_RVs:
        values = np.asarray(_observed_records(model, rv))
        if values.dtype.kind in "fc" and values.ndim and values.shape[0] == records:
            bad |= ~np.isfinite(values.reshape(records, -1)).all(axis=1)
    try:
        terms = model.compile_fn(model.logp(vars=list(model.observed_RVs), sum=False), inputs=model.value_vars,
                                 on_unused_input="ignore", mode="FAST_COMPILE")(model.initial_point())
    except Exception:  # noqa: BLE001 - the check is an accuracy aid: without it a failing block counts as its midpoint
        return bad
    for term in terms:
        term = np.asarray(term)
        if term.ndim and term.shape[0] == records:
            bad |= ~np.isfinite(term.reshape(records, -1)).all(axis=1)
    return bad


def _blocks(records: int, k: int, contiguous: bool, rng: np.random.Generator) -> list[np.ndarray]:
    order = np.arange(records) if contiguous else rng.permutation(records)
    return [np.sort(part) for part in np.array_split(order, k)]


# --------------------------------------------------------------------------- the plan


def _is_time_series(model: Any) -> bool:
    from pymc.distributions.timeseries import AutoRegressiveRV, RandomWalkRV

    return any(isinstance(rv.owner.op, (AutoRegressiveRV, RandomWalkRV)) for rv in model.observed_RVs)


def _ranges(options: SAA, model: Any, names: Sequence[str]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    given = dict(options.ranges or {})
    unknown = sorted(set(given) - set(names))
    if unknown:
        raise ValueError(
            f"ranges name {unknown}, which are not parameters this route releases ({sorted(names)}; per-record "
            "latents cannot be aggregated)."
        )
    missing = [n for n in names if n not in given]
    if missing:
        raise ValueError(
            f"method='saa' clips every block's estimate into a declared range, and none is declared for {missing}: "
            "pass ranges={" + ", ".join(f"{n!r}: (lower, upper)" for n in missing) + "} (ranges of the parameters "
            "you would accept, chosen before seeing the data), or var_names= to release fewer. Nothing was spent."
        )
    out = {}
    for name in names:
        spec = given[name]
        try:
            lo, hi = spec
        except (TypeError, ValueError):
            raise ValueError(f"ranges[{name!r}] must be a (lower, upper) pair, got {spec!r}.") from None
        shape = tuple(int(s) for s in evaluate(model[name].shape))
        lo_a = np.broadcast_to(np.asarray(lo, dtype=float), shape).copy()
        hi_a = np.broadcast_to(np.asarray(hi, dtype=float), shape).copy()
        for v in (*lo_a.ravel(), *hi_a.ravel()):
            check_finite_number(v, f"ranges[{name!r}]", hint=" An infinite end leaves the sensitivity unbounded.")
        if np.any(lo_a >= hi_a):
            raise ValueError(f"ranges[{name!r}] needs lower < upper, got {spec!r}.")
        out[name] = (lo_a, hi_a)
    return out


@dataclass
class SAARun(RoutePlan):
    """``pmdp.sample(method="saa")``, validated and priced."""

    model: Any = None
    draws: int = 1000
    blocks: int = 10
    ranges: Mapping[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    leaves: Sequence[Any] = ()
    contiguous: bool = False
    spread: bool = True
    noise_rng: Any = None
    pm_kwargs: Mapping[str, Any] = field(default_factory=dict)
    epsilon: float = 1.0
    _spent: list[LedgerEntry] = field(default_factory=list)

    @property
    def what(self) -> str:
        return f"a subsample-and-aggregate estimate over {self.blocks} blocks (method='saa')"

    def _fit_blocks(self) -> dict[str, np.ndarray]:
        # The partition is data-independent: its randomness protects nothing, it only
        # keeps sorted records (by group, by time) from making the blocks unlike each other.
        seed = self.noise_rng if isinstance(self.noise_rng, (int, np.integer, np.random.Generator)) else None
        partition = _blocks(_record_count(self.model), self.blocks, self.contiguous, np.random.default_rng(seed))
        estimates: dict[str, list[np.ndarray]] = {name: [] for name in self.ranges}
        kwargs = {k: v for k, v in self.pm_kwargs.items() if k not in _OWN_KEYS}
        kwargs.setdefault("cores", 1)
        kwargs["compute_convergence_checks"] = False
        # PyMC's NUTS unless asked: every block is a new model, which nutpie would compile afresh
        kwargs["nuts_sampler"] = kwargs.get("nuts_sampler") or "pymc"
        seeds = _block_seeds(self.pm_kwargs.get("random_seed"), len(partition))
        bar = ProgressLine("subsample and aggregate", len(partition), self.pm_kwargs.get("progressbar", True),
                           unit="blocks fitted")
        left_out = malformed_records(self.model, _record_count(self.model))
        middle = {name: (lo + hi) / 2 for name, (lo, hi) in self.ranges.items()}
        failed: list[str] = []
        for b, rows in enumerate(partition):
            try:
                estimate = self._fit_block(rows[~left_out[rows]], seeds[b], kwargs, failed)
            except Exception as err:  # noqa: BLE001 - said without its message, which can quote the records
                raise RuntimeError(
                    f"method='saa': fitting a block of records failed with {type(err).__name__} (neither the block "
                    "nor the message is named: either could tell something of the records). A keyword pm.sample rejects, or a model "
                    "that cannot be sampled at all, fails alike on every block; try pm.sample on the model first."
                ) from None
            bar.advance()
            for name in self.ranges:
                value = middle[name] if estimate is None else estimate[name]
                estimates[name].append(value)
        if left_out.any() or failed:
            curator_report(
                f"subsample and aggregate: {int(left_out.sum())} record(s) with a NaN, infinite or impossible value "
                f"were left out of their block's fit, and {len(failed)} block fit(s) failed "
                f"({', '.join(sorted(set(failed))) or 'none'}) and count as the midpoint of the ranges (not released).",
                ClippedRecordsWarning, stacklevel=4,
            )
        return {name: np.stack(values) for name, values in estimates.items()}

    def _fit_block(self, rows: np.ndarray, seed: Any, kwargs: Mapping[str, Any], failed: list[str]) -> dict | None:
        """The block's posterior means, or None (and the failure's type noted) if its fit fails on its records: a
        function of the block alone either way, so whether it fails is never said outside the curator's report.

        Failures the records can cause are caught (PyMC's ``SamplingError`` — a start where the log density is not
        finite —, floating-point and linear-algebra errors); anything else (a keyword ``pm.sample`` rejects, an
        interruption) fails alike on every block and propagates.
        """
        import pymc as pm
        from pymc.exceptions import SamplingError

        if rows.size == 0:
            failed.append("no well-formed record")
            return None
        try:
            part = block_model(self.model, rows, self.leaves)
            initvals = _initvals_for(part, self.pm_kwargs.get("initvals"), self.ranges)
            trace = pm.sample(self.draws, model=part, random_seed=seed, initvals=initvals, progressbar=False,
                              **kwargs)
        except (SamplingError, ArithmeticError, np.linalg.LinAlgError) as err:  # caused by the block's records
            failed.append(type(err).__name__)
            return None
        posterior = _compat.get_group(trace, "posterior")
        out = {name: np.asarray(posterior[name].mean(("chain", "draw")).values, dtype=float) for name in self.ranges}
        if not all(np.all(np.isfinite(v)) for v in out.values()):
            failed.append("estimate not finite")
            return None
        return out

    def run(self) -> Ran:
        estimates = self._fit_blocks()
        k = self.blocks
        clipped = {n: np.clip(e, *self.ranges[n]) for n, e in estimates.items()}
        widths = {n: hi - lo for n, (lo, hi) in self.ranges.items()}
        eps_mean = self.epsilon / 2 if self.spread else self.epsilon
        flat_mean = np.concatenate([clipped[n].mean(axis=0).ravel() for n in self.ranges])
        l1 = float(sum(w.sum() for w in widths.values())) / k
        ledger = PrivacyLedger(neighbouring="replace")
        noisy_mean, entry = laplace_mechanism(
            flat_mean, epsilon=eps_mean, sensitivity=l1, ledger=ledger, rng=self.noise_rng,
            touched=f"{', '.join(self.ranges)}: mean of {k} block estimates", assumptions=self._assumptions(),
            return_entry=True,
        )
        self._spent.append(self._named(entry, "mean"))
        variance = np.zeros_like(flat_mean)
        if self.spread:
            squares = {n: c**2 for n, c in clipped.items()}
            square_widths = np.concatenate([
                (np.maximum(lo**2, hi**2) - np.where((lo < 0) & (hi > 0), 0.0, np.minimum(lo**2, hi**2))).ravel()
                for lo, hi in self.ranges.values()
            ])
            flat_square = np.concatenate([squares[n].mean(axis=0).ravel() for n in self.ranges])
            noisy_square, entry = laplace_mechanism(
                flat_square, epsilon=self.epsilon / 2, sensitivity=float(square_widths.sum()) / k, ledger=ledger,
                rng=self.noise_rng, touched=f"{', '.join(self.ranges)}: mean square of {k} block estimates",
                assumptions=self._assumptions(), return_entry=True,
            )
            self._spent.append(self._named(entry, "mean square"))
            variance = np.maximum(noisy_square - noisy_mean**2, 0.0) * k / max(k - 1, 1) / k
        noise_variance = 2.0 * (l1 / eps_mean) ** 2
        if self.spread:
            _warn_if_noise_dominates(list(self.ranges), [c[0].size for c in self.ranges.values()], variance,
                                     noise_variance)
        trace = self._approximation(noisy_mean, np.sqrt(variance + noise_variance))
        return Ran(trace, self.model, list(self._spent))

    def spent_on_failure(self, failure: BaseException) -> list[LedgerEntry]:
        return list(self._spent)

    def _named(self, entry: LedgerEntry, what: str) -> LedgerEntry:
        details = {
            **entry.details, "route": "saa", "blocks": self.blocks, "aggregate": what,
            "ranges": {n: [lo.tolist(), hi.tolist()] for n, (lo, hi) in self.ranges.items()},
        }
        assumptions = (*entry.assumptions, NORMAL_APPROXIMATION) if what == "mean" else entry.assumptions
        return replace(entry, mechanism=MECHANISM, details=details, assumptions=assumptions)

    def _assumptions(self) -> tuple[str, ...]:
        return (
            f"parallel composition: the records were split into {self.blocks} disjoint blocks and one record changes "
            "one block's estimate, clipped into the declared range",
            PUBLIC_N,
        )

    def _approximation(self, mean: np.ndarray, sd: np.ndarray) -> Any:
        from scipy.stats import truncnorm

        chains = int(self.pm_kwargs.get("chains") or 1)
        rng = np.random.default_rng()
        variables, start = {}, 0
        for name, (lo, hi) in self.ranges.items():
            size = lo.size
            m = np.clip(mean[start:start + size].reshape(lo.shape), lo, hi)
            s = sd[start:start + size].reshape(lo.shape)
            # Truncated to the declared range: the estimates were clipped into it.
            draws = truncnorm.rvs((lo - m) / s, (hi - m) / s, loc=m, scale=s,
                                  size=(chains, self.draws, *lo.shape), random_state=rng)
            if _is_ordered(self.model, name):  # ordered cutpoints stay ordered in every draw (post-processing)
                draws = np.sort(draws, axis=-1)
            dims = ["chain", "draw", *(self.model.named_vars_to_dims.get(name) or [f"{name}_dim_{i}" for i in range(lo.ndim)])]
            variables[name] = (dims, draws)
            start += size
        coords = {"chain": np.arange(chains), "draw": np.arange(self.draws)}
        for dims, _ in variables.values():
            for dim in dims[2:]:
                if dim in self.model.coords and self.model.coords[dim] is not None:
                    coords[dim] = list(self.model.coords[dim])
        return _compat.new_trace({"posterior": xr.Dataset(variables, coords=coords)})


#: A warning when the aggregate's noise s.d. exceeds this many times the blocks' released standard error.
NOISE_DOMINATES = 3.0


def _warn_if_noise_dominates(names: Sequence[str], sizes: Sequence[int], variance: np.ndarray,
                             noise_variance: float) -> None:
    """Warn, from released numbers only (post-processing, free), when the noise of the aggregate is several times
    the blocks' own standard error: the released error bar is then mostly noise, and a range narrowed to what
    one would accept, more blocks or more ε would buy a real answer."""
    import warnings

    from ..families.privatize import DegenerateReleaseWarning

    noise_sd, bounds = math.sqrt(noise_variance), np.cumsum([0, *sizes])
    swamped = [n for n, a, b in zip(names, bounds[:-1], bounds[1:])
               if noise_sd > NOISE_DOMINATES * float(np.sqrt(variance[a:b]).max())]
    if swamped:
        warnings.warn(
            f"method='saa': the aggregate of {', '.join(map(repr, swamped))} is noise-dominated: the Laplace noise "
            f"s.d. {noise_sd:.3g} is more than {NOISE_DOMINATES:g} times the blocks' released standard error "
            "(read from the release, at no cost). Its error bar is honest but mostly noise; narrower ranges, more "
            "blocks or more ε would give an answer.",
            DegenerateReleaseWarning, stacklevel=5,
        )


def _is_ordered(model: Any, name: str) -> bool:
    """Whether the variable's transform orders it (``transforms.ordered``, alone or in a chain)."""
    transform = model.rvs_to_transforms.get(model[name])
    parts = getattr(transform, "transform_list", None) or [transform]
    return any(type(t).__name__ == "Ordered" for t in parts)


def _probe_block(model: Any, rows: np.ndarray, leaves: Sequence[Any]) -> Any:
    """A block model built and evaluated once before anything is spent: a model whose sizes cannot be cut to
    a block (a size fixed by a number rather than by the data or a dim) is refused here, not mid-run."""
    import logging

    quiet = [logging.getLogger(name) for name in ("pytensor", "pytensor.graph.rewriting.basic")]
    levels = [logger.level for logger in quiet]
    try:
        for logger in quiet:  # PyTensor logs failed rewrites with the constants in them: the records
            logger.setLevel(logging.CRITICAL)
        part = block_model(model, rows, leaves)
        value = part.compile_logp(mode="FAST_COMPILE")(part.initial_point())  # evaluated once
    except Exception as err:  # noqa: BLE001 - whatever PyTensor says of a model it cannot cut, said before any spend
        raise ValueError(
            f"method='saa' could not fit this model to a block of {len(rows)} records (PyTensor raised "
            f"{type(err).__name__}; its message is not repeated, as it can quote the records). Every size that follows the number of records must come from the observed data or "
            "from a dim declared in coords (shape=N written as a number, and some time-series and mixture "
            "likelihoods, cannot be cut). Nothing was spent."
        ) from None
    finally:
        for logger, level in zip(quiet, levels):
            logger.setLevel(level)
    return part


#: The aggregate is refused when its noise s.d. reaches this share of a coordinate's declared range.
SWAMPED = 0.5


def _check_noise_leaves_an_answer(ranges: Mapping[str, tuple[np.ndarray, np.ndarray]], k: int, eps_mean: float) -> None:
    """Refuse, before spending, an aggregate whose Laplace noise would swamp it: from public numbers only (the
    declared ranges, the blocks, ε), the noise s.d. √2·(Σ widths / k)/ε of the mean against each coordinate's
    range. At half a range or more the release says little beyond the range itself."""
    widths = {n: (hi - lo).ravel() for n, (lo, hi) in ranges.items()}
    l1 = float(sum(w.sum() for w in widths.values())) / k
    sd = math.sqrt(2.0) * l1 / eps_mean
    swamped = {n: float(w.min()) for n, w in widths.items() if sd >= SWAMPED * float(w.min())}
    if swamped:
        raise ValueError(
            f"method='saa' would release noise, not an answer: the mean of {k} clipped block estimates has L1 "
            f"sensitivity Σ(range widths)/k = {l1:.3g}, so its Laplace noise at ε = {eps_mean:.3g} (the mean's share of "
            f"epsilon; with spread=True the other half releases the blocks' spread) has s.d. {sd:.3g}, "
            f"at least {SWAMPED:g} × the declared range of {', '.join(f'{n!r} (width {w:.3g})' for n, w in swamped.items())}. "
            "Narrow the ranges to what you would accept, release fewer parameters (var_names=), use more blocks "
            "(blocks=; N/k records each must still fit the model), spread=False, or a larger epsilon. Nothing was spent."
        )


def _released_names(model: Any, parts: Any, var_names: Any) -> list[str]:
    """Free variables whose shape does not depend on the records (the same in a block as in the model)."""
    same = [
        rv.name for rv in model.free_RVs
        if tuple(evaluate(rv.shape)) == tuple(evaluate(parts[rv.name].shape))
    ]
    if var_names is None:
        return same
    names = [var_names] if isinstance(var_names, str) else list(var_names)
    bad = sorted(set(names) - set(same))
    if bad:
        raise ValueError(
            f"var_names {bad} cannot be released by method='saa': only parameters whose shape does not depend on the "
            f"records can be aggregated across blocks ({same})."
        )
    return names


def plan_saa(
    model: Any, draws: int, epsilon: float | None, options: SAA, ledger: PrivacyLedger | None,
    neighbouring: str | None, pm_kwargs: Mapping[str, Any],
) -> SAARun:
    """Validate ``pmdp.sample(method="saa")`` completely and price it (see :func:`pymc_dp.sample`)."""
    if epsilon is None:
        raise ValueError("method='saa' needs epsilon=: the total ε of the aggregate (parallel composition over blocks).")
    eps = check_epsilon(epsilon)
    if not model.observed_RVs:
        raise ValueError("method='saa' needs a model with observed records; this one has none.")
    ledger = resolve_ledger(ledger, neighbouring)
    if ledger.neighbouring != "replace":
        raise ValueError(
            "method='saa' supports neighbouring='replace' only (N public): adding or removing a record moves the "
            "block boundaries, so it would change more than one block."
        )
    check_step_model(pm_kwargs, True, "saa", "one copy per block of records")
    records = _record_count(model)
    k = options.blocks
    if k is None:
        k = max(2, min(int(round(math.sqrt(records))), records // 10))
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 2:
        raise ValueError(f"blocks must be an integer >= 2, got {options.blocks!r}.")
    if records < 2 * k:
        raise ValueError(
            f"method='saa' with blocks={k} needs at least two records a block; the model has {records} records. "
            "Use fewer blocks (and expect little accuracy from so few records)."
        )
    leaves = _data_to_slice(model, records)
    contiguous = options.partition == "contiguous" or (options.partition == "auto" and _is_time_series(model))
    if options.partition not in ("auto", "random", "contiguous"):
        raise ValueError(f"partition must be 'auto', 'random' or 'contiguous', got {options.partition!r}.")
    probe = _probe_block(model, np.arange(records // k), leaves)
    check_release_plan(model, pm_kwargs.get("var_names"), ledger.neighbouring)
    check_initvals(model, pm_kwargs.get("initvals"))
    names = _released_names(model, probe, pm_kwargs.get("var_names"))
    ranges = _ranges(options, model, names)
    _check_noise_leaves_an_answer(ranges, int(k), eps / (2 if options.spread else 1))
    halves = 2 if options.spread else 1
    entries = [
        LedgerEntry("laplace", eps / halves, touched=f"{', '.join(names)}: block estimates", neighbouring="replace",
                    noise_source="secure" if options.noise_rng is None else "seeded")
        for _ in range(halves)
    ]
    return SAARun(
        ledger=ledger, entries=entries, model=model, draws=draws, blocks=int(k), ranges=ranges, leaves=leaves,
        contiguous=contiguous, spread=bool(options.spread), noise_rng=options.noise_rng, pm_kwargs=dict(pm_kwargs),
        epsilon=eps,
    )
