"""The exact tempered conditional updates behind :class:`~pymc_dp.PrivateGibbs`.

Two kinds of update, each an exact draw from the conditional of one free variable
given all the others, with the observed variables' likelihood raised to 1/T
(latent children are not tempered: only records are private):

:class:`ConjugateUpdate`
    A continuous variable with a conjugate prior and conjugate children:

    ============================  ==================================================
    prior (optionally truncated)  children (observed or latent)
    ============================  ==================================================
    Beta, or Uniform on [0, 1]    Bernoulli(p), Binomial(n, p)
    Gamma, or Uniform             Poisson(μ), Exponential(λ)
    Normal, or Uniform            Normal(μ, σ) with σ not depending on μ
    Dirichlet (optional floor)    Categorical(p), Multinomial(n, p)
    ============================  ==================================================

    The child's parameter must be the variable up to selection (``p``, ``p[z]``,
    broadcasting): then each child element reads one element of the variable and
    its sufficient statistic is added to that element's conditional.

:class:`LatentScan`
    A per-record discrete latent vector z (Categorical or Bernoulli) whose children
    are elementwise in z: its conditional factorises over records, so one scan draws
    every z_i exactly (optionally only a random subset of Q of them).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import conditionals
from ._graph import PointFunction, aligned_with, children, depends_on, dist_params, op_name, selection_of

__all__ = ["ConjugateUpdate", "LatentScan", "NotConjugateError", "is_per_record_latent"]


class NotConjugateError(ValueError):
    """The variable's conditional is not one :class:`PrivateGibbs` can draw exactly."""


_FAMILY_OF_PRIOR = {"BetaRV": "beta", "GammaRV": "gamma", "NormalRV": "normal", "DirichletRV": "dirichlet"}
#: child distribution → (conjugate family, index of the parameter the variable must be)
_CHILDREN = {
    "BernoulliRV": ("beta", 0),
    "BinomialRV": ("beta", 1),
    "PoissonRV": ("gamma", 0),
    "ExponentialRV": ("gamma", 0),
    "NormalRV": ("normal", 0),
    "CategoricalRV": ("dirichlet", 0),
    "MultinomialRV": ("dirichlet", 1),
}
_SUPPORTED = (
    "Beta/Gamma/Normal/Uniform priors (pm.Truncated or pmdp.truncate allowed) with Bernoulli, Binomial, Poisson, "
    "Exponential or Normal children, and Dirichlet priors with Categorical or Multinomial children"
)


def _prior_of(model: Any, rv: Any) -> tuple[str, list[Any], Any, Any, float]:
    """(family or "flat", prior parameters, lower, upper, Dirichlet floor) of a free variable."""
    import pytensor.tensor as pt

    from ..model.truncation import is_simplex_floor

    name = op_name(rv)
    lower, upper = pt.constant(-np.inf), pt.constant(np.inf)
    if name == "TruncatedRV":
        base = type(rv.owner.op.base_rv_op).__name__
        params, lower, upper = list(rv.owner.inputs[2:-2]), rv.owner.inputs[-2], rv.owner.inputs[-1]
        name = base
    elif name == "TruncatedNormalRV":  # what pm.Truncated makes of a Normal
        mu, sigma, lower, upper = dist_params(rv)
        params, name = [mu, sigma], "NormalRV"
    elif name == "UniformRV":
        lo, hi = dist_params(rv)
        return "flat", [], lo, hi, 0.0
    else:
        params = dist_params(rv)
    family = _FAMILY_OF_PRIOR.get(name)
    if family is None:
        raise NotConjugateError(f"{rv.name!r} has a {name.removesuffix('RV')} prior; PrivateGibbs supports {_SUPPORTED}.")
    if family == "gamma":  # PyMC's Gamma is (alpha, scale): use the rate
        params = [params[0], 1.0 / params[1]]
    transform = model.rvs_to_transforms.get(rv)
    floor = float(transform.floor) if is_simplex_floor(transform) else 0.0
    return family, list(params), lower, upper, floor


def _reciprocal_input(expr: Any) -> Any | None:
    """If ``expr`` is 1/x up to selection ops around it, x (else None)."""
    while op_name(expr) in ("DimShuffle", "SpecifyShape", "Reshape"):
        expr = expr.owner.inputs[0]
    if op_name(expr) == "Elemwise" and type(expr.owner.op.scalar_op).__name__ == "Reciprocal":
        return expr.owner.inputs[0]
    return None


class _ChildTerm:
    """One child's contribution to a conjugate conditional: value, element map, and extras."""

    def __init__(self, model: Any, rv: Any, child: Any, weight: float) -> None:
        import pytensor.tensor as pt
        from pytensor.graph.replace import graph_replace

        name = op_name(child)
        if name not in _CHILDREN:
            raise NotConjugateError(
                f"{rv.name!r} has the child {child.name!r} ({name.removesuffix('RV')}), which has no conjugate update; "
                f"PrivateGibbs supports {_SUPPORTED}. Update {rv.name!r} with pmdp.PrivateMetropolis instead."
            )
        self.family, position = _CHILDREN[name]
        self.kind = name.removesuffix("RV").lower()
        self.name = child.name
        self.weight = float(weight)
        params = dist_params(child)
        target = params[position]
        for i, p in enumerate(params):
            if i != position and depends_on([p], rv, model):
                raise NotConjugateError(
                    f"the {self.kind} child {child.name!r} uses {rv.name!r} in a parameter other than the one "
                    "conjugate to it; update it with pmdp.PrivateMetropolis."
                )
        self.reciprocal = self.kind == "exponential"
        if self.reciprocal:
            inner = _reciprocal_input(target)
            if inner is None:
                raise NotConjugateError(f"the exponential child {child.name!r} must have rate {rv.name!r} itself.")
            target = inner
        if not selection_of(target, rv, model):
            raise NotConjugateError(
                f"the {self.kind} child {child.name!r} uses a function of {rv.name!r}, not {rv.name!r} itself (or an "
                f"indexed element of it); update {rv.name!r} with pmdp.PrivateMetropolis."
            )
        index_input = pt.tensor("dp_index", dtype="float64", shape=(None,) * rv.type.ndim)
        mapped = graph_replace([target], {rv: index_input}, strict=False)[0]
        extras = [params[0]] if self.kind in ("binomial", "multinomial") else []
        extras += [params[1]] if self.kind == "normal" else []
        from ..model._graph import ancestors

        free = set(model.free_RVs)
        reads_free = free & set(ancestors([mapped, *extras], blockers=list(free)))
        #: An observed child whose element map and extras are constant contributes the same
        #: statistics at every draw: they are computed once.
        self.static = child in model.observed_RVs and not reads_free
        self._fn = PointFunction(model, [child, mapped, *extras], extra_inputs=[index_input])

    def evaluate(self, point: dict[str, np.ndarray], shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, list]:
        """(values, flat element index of the variable per value, extras broadcast to values)."""
        index = np.arange(1, int(np.prod(shape, dtype=int)) + 1, dtype=float).reshape(shape)
        value, mapped, *extras = self._fn(point, index)
        if self.reciprocal:
            mapped = 1.0 / mapped
        flat = np.rint(mapped).astype(np.int64) - 1
        if self.family == "dirichlet":
            k = shape[-1]
            rows = flat[..., 0] // k
            batch = value.shape if self.kind == "categorical" else value.shape[:-1]
            return value, np.broadcast_to(rows, batch), [np.broadcast_to(e, batch) for e in extras]
        return value, np.broadcast_to(flat, value.shape), [np.broadcast_to(e, value.shape) for e in extras]


class ConjugateUpdate:
    """Exact draw of a continuous variable from its tempered conjugate conditional."""

    def __init__(self, model: Any, rv: Any, temperature: float) -> None:
        self.name = rv.name
        self.family, prior, lower, upper, self.floor = _prior_of(model, rv)
        observed = set(model.observed_RVs)
        self.terms = [
            _ChildTerm(model, rv, child, 1.0 / temperature if child in observed else 1.0)
            for child in children(model, rv)
        ]
        families = {t.family for t in self.terms}
        if self.family == "flat":
            if len(families) > 1:
                raise NotConjugateError(f"the children of {rv.name!r} need different conjugate families {sorted(families)}.")
            self.family = families.pop() if families else "flat"
            if self.family == "dirichlet":
                raise NotConjugateError(f"{rv.name!r}: a Uniform prior cannot be a probability vector.")
        elif families - {self.family}:
            bad = next(t for t in self.terms if t.family != self.family)
            raise NotConjugateError(
                f"{rv.name!r} has a {self.family} prior but the {bad.kind} child {bad.name!r}, which is not conjugate "
                f"to it; PrivateGibbs supports {_SUPPORTED}. Update {rv.name!r} with pmdp.PrivateMetropolis instead."
            )
        self._cache: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}
        self._prior = PointFunction(model, [*prior, lower, upper])
        self._value = PointFunction(model, [rv])
        transform = model.rvs_to_transforms.get(rv)
        self.value_name = model.rvs_to_values[rv].name
        self._forward = None
        if transform is not None:
            import pytensor.tensor as pt

            x = pt.tensor("dp_new", dtype=rv.dtype, shape=(None,) * rv.type.ndim)
            self._forward = PointFunction(model, [transform.forward(x, *rv.owner.inputs)], extra_inputs=[x])

    # ------------------------------------------------------------------ statistics
    def _statistics(self, point: dict[str, np.ndarray], shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        """Two accumulators per element of the variable (Dirichlet: counts per row and category)."""
        first = second = None
        for i, term in enumerate(self.terms):
            key = (i, shape)
            if term.static and key in self._cache:
                a, b = self._cache[key]
            else:
                a, b = self._term_statistics(term, point, shape)
                if term.static:
                    self._cache[key] = (a, b)
            first = a if first is None else first + a
            second = b if second is None else second + b
        if first is None:
            size = int(np.prod(shape, dtype=int))
            k = shape[-1] if self.family == "dirichlet" else 1
            return (np.zeros((size // k, k)), np.zeros(0)) if self.family == "dirichlet" else (np.zeros(size), np.zeros(size))
        return first, second

    def _term_statistics(self, term: _ChildTerm, point: dict[str, np.ndarray], shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        size = int(np.prod(shape, dtype=int))
        if self.family == "dirichlet":
            k = shape[-1]
            counts = np.zeros((size // k, k))
            value, rows, extras = term.evaluate(point, shape)
            if term.kind == "categorical":
                np.add.at(counts, (rows.ravel(), value.astype(np.int64).ravel()), term.weight)
            else:
                np.add.at(counts, rows.ravel(), term.weight * value.reshape(-1, k))
            return counts, np.zeros(0)
        value, index, extras = term.evaluate(point, shape)
        idx, w, y = index.ravel(), term.weight, value.astype(float).ravel()
        if term.kind == "bernoulli":
            a, b = w * y, w * (1.0 - y)
        elif term.kind == "binomial":
            a, b = w * y, w * (extras[0].ravel() - y)
        elif term.kind == "poisson":
            a, b = w * y, np.full_like(y, w)
        elif term.kind == "exponential":
            a, b = np.full_like(y, w), w * y
        else:  # normal: precision and precision-weighted sum
            prec = w / extras[0].astype(float).ravel() ** 2
            a, b = prec, prec * y
        return np.bincount(idx, weights=a, minlength=size), np.bincount(idx, weights=b, minlength=size)

    # ------------------------------------------------------------------ the draw
    def draw(self, point: dict[str, np.ndarray], rng: np.random.Generator) -> dict[str, np.ndarray]:
        """A new point with this variable drawn from its tempered conditional."""
        current = self._value(point)[0]
        shape = current.shape
        *prior, lower, upper = self._prior(point)
        first, second = self._statistics(point, shape)
        lo = np.broadcast_to(lower, shape).ravel()
        hi = np.broadcast_to(upper, shape).ravel()
        if self.family == "dirichlet":
            alpha = np.broadcast_to(prior[0], shape).reshape(first.shape) + first
            new = conditionals.floored_dirichlet(alpha, self.floor, rng).reshape(shape)
        else:
            prior = [np.broadcast_to(p, shape).ravel() for p in prior] if prior else []
            new = self._continuous(prior, first, second, lo, hi, rng).reshape(shape)
        out = dict(point)
        out[self.value_name] = (
            new.astype(current.dtype) if self._forward is None else self._forward(point, new.astype(current.dtype))[0]
        )
        return out

    def _continuous(self, prior, first, second, lo, hi, rng) -> np.ndarray:
        family, flat = self.family, not prior
        if family == "beta":
            a, b = (1.0, 1.0) if flat else prior
            return conditionals.truncated_beta(a + first, b + second, lo, hi, rng)
        if family == "gamma":
            shape, rate = (1.0, 0.0) if flat else prior
            return conditionals.truncated_gamma(shape + first, rate + second, lo, hi, rng)
        if family == "normal":
            if flat:
                prec, lin = first, second
            else:
                mu0, sd0 = prior
                prec, lin = 1.0 / sd0**2 + first, mu0 / sd0**2 + second
            safe = np.where(prec > 0, prec, 1.0)
            drawn = conditionals.truncated_normal(lin / safe, 1.0 / np.sqrt(safe), lo, hi, rng)
            # Where the conditional has no precision (flat prior, no data) it is uniform on the
            # bounds; elsewhere the uniform draw is unused, so infinite bounds are replaced there
            # (numpy refuses an infinite range) without changing how many draws are consumed.
            usable = (prec <= 0) & np.isfinite(lo) & np.isfinite(hi)
            flat_draw = rng.uniform(np.where(usable, lo, 0.0), np.where(usable, hi, 1.0))
            return np.where(prec > 0, drawn, flat_draw)
        return rng.uniform(lo, hi)  # flat prior, no children: the prior itself


# ---------------------------------------------------------------------------- per-record latents


def is_per_record_latent(model: Any, rv: Any) -> bool:
    """A discrete (Categorical or Bernoulli) free vector: candidate for a :class:`LatentScan`."""
    return op_name(rv) in ("CategoricalRV", "BernoulliRV") and rv.type.ndim == 1 and rv in model.free_RVs


class LatentScan:
    """Exact draw of a per-record discrete latent vector z: all records (a scan) or a random ``subset`` of them."""

    def __init__(self, model: Any, rv: Any, temperature: float, subset: int | None = None) -> None:
        import pytensor.tensor as pt
        from pytensor.graph.replace import graph_replace

        if not is_per_record_latent(model, rv):
            raise NotConjugateError(f"{rv.name!r} is not a per-record Categorical or Bernoulli vector.")
        self.name = rv.name
        self.value_name = model.rvs_to_values[rv].name
        self.subset = subset
        kids = children(model, rv)
        point = model.initial_point()
        n = int(np.size(point[self.value_name]))
        shapes = PointFunction(model, [c.shape for c in kids])(point) if kids else []
        for child, shape in zip(kids, shapes):
            if tuple(shape) != (n,):
                raise NotConjugateError(
                    f"the child {child.name!r} of the per-record latent {rv.name!r} has shape {tuple(shape)}; "
                    f"one value per record (shape ({n},)) is needed for an exact scan."
                )
            if not all(aligned_with(p, rv, model) for p in child.owner.inputs[2:]):
                raise NotConjugateError(
                    f"the child {child.name!r} does not read {rv.name!r} record by record (element i of its "
                    f"parameters must depend on {rv.name}[i] only, e.g. mu[{rv.name}])."
                )
        if op_name(rv) == "BernoulliRV":
            self.support = 2
        else:
            self.support = int(PointFunction(model, [dist_params(rv)[0].shape[-1]])(point)[0])
        observed = set(model.observed_RVs)
        self.weights = np.array([1.0] + [1.0 / temperature if c in observed else 1.0 for c in kids])
        logps = model.logp(vars=[rv, *kids], sum=False, jacobian=False)
        value = model.rvs_to_values[rv]
        z = pt.tensor("dp_latent", dtype=value.dtype, shape=(None,))
        terms = graph_replace(logps, {value: z}, strict=False)
        self._terms = PointFunction(model, terms, extra_inputs=[z])
        self.records = n

    def draw(self, point: dict[str, np.ndarray], rng: np.random.Generator) -> dict[str, np.ndarray]:
        current = np.asarray(point[self.value_name])
        logits = np.empty((self.support, self.records))
        for k in range(self.support):
            terms = self._terms(point, np.full(self.records, k, dtype=current.dtype))
            logits[k] = sum(w * np.broadcast_to(t, (self.records,)) for w, t in zip(self.weights, terms))
        new = current.copy()
        if self.subset is None:
            new[:] = conditionals.categorical_from_logits(logits, rng)
        else:
            chosen = rng.choice(self.records, size=self.subset, replace=False)
            new[chosen] = conditionals.categorical_from_logits(logits[:, chosen], rng)
        out = dict(point)
        out[self.value_name] = new
        return out
