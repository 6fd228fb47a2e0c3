"""Gibbs steps for hidden Markov models whose observations enter as per-step count vectors.

The model (see :func:`pymc_dp.examples.warlogs.model.hmm_model`): K latent states per
chain (one chain per region, one step per month), emission probabilities
``θ_d ~ Dir(β)`` per state and feature d, transitions ``A_k ~ Dir(γ)``, initial
probabilities ``π ~ Dir(γ)``, and the data only through counts ``n[r, t, d, j]`` (exact,
or a public noisy release). Three blocked updates, each exact:

* :class:`HMMStatesFFBS`: all state sequences by forward filtering, backward sampling;
* :class:`DirichletCountsGibbs`: one feature's emission probabilities,
  ``θ_{k,d} ~ Dir(β + Σ_{(r,t): s=k} n[r, t, d, ·] / T)`` (or, with a floor a₀, a
  truncated-Dirichlet sweep that leaves that conditional restricted to ``θ ≥ a₀``
  invariant);
* :class:`HMMTransitionsGibbs`: transitions and initial probabilities from the state pairs.

The update kernels are plain functions (:func:`emission_log_draw`,
:func:`transition_log_draw`, :func:`state_log_likelihood`) shared with the NumPy engine
of the case study. ``T`` is a temperature for tempered (OPS) posteriors (1: the
posterior itself); OPS also truncates the emissions at a floor a₀, and the emission
update is then one sweep of :func:`truncated_dirichlet_update` from the current value
(a valid MCMC update, not an exact draw). The Dirichlet variables must be declared with ``default_transform=None``:
these steps write probabilities, not unconstrained values.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from pymc.step_methods.compound import BlockedStep, Competence

from .ffbs import ffbs

__all__ = [
    "HMMStatesFFBS",
    "DirichletCountsGibbs",
    "HMMTransitionsGibbs",
    "log_dirichlet_sample",
    "emission_log_draw",
    "emission_statistics",
    "transition_log_draw",
    "state_log_likelihood",
    "truncated_dirichlet_update",
    "check_floor",
    "clamped_counts",
]


def log_dirichlet_sample(rng: np.random.Generator, concentration: np.ndarray) -> np.ndarray:
    """``log θ`` for ``θ ~ Dir(concentration)`` along the last axis, accurate for tiny concentrations.

    ``G ~ Gamma(a)`` is drawn as ``G′ · U^{1/a}`` with ``G′ ~ Gamma(a + 1)``, in logs,
    so a concentration of 10⁻³ gives a very negative log-probability, never −inf.
    """
    a = np.asarray(concentration, dtype=float)
    log_g = np.log(rng.gamma(a + 1.0)) + np.log(rng.random(a.shape)) / a
    return log_g - np.logaddexp.reduce(log_g, axis=-1, keepdims=True)


def _onehot(states: np.ndarray, k: int) -> np.ndarray:
    return np.eye(k)[np.asarray(states, dtype=np.int64)]


def emission_log_draw(
    rng: np.random.Generator, prior: float, counts: np.ndarray, states: np.ndarray, k: int, temperature: float = 1.0
) -> np.ndarray:
    """``(K, K_d)`` log emission probabilities from ``Dir(β + Σ_{s=k} n / T)``, one row per state."""
    return log_dirichlet_sample(rng, prior + emission_statistics(counts, states, k) / temperature)


def emission_statistics(counts: np.ndarray, states: np.ndarray, k: int) -> np.ndarray:
    """``(K, K_d)``: ``Σ_{(r,t): s=k} n[r, t, ·]`` (the counts are clamped at 0 already)."""
    return np.einsum("rtk,rtj->kj", _onehot(states, k), counts)


def transition_log_draw(
    rng: np.random.Generator, prior: float, states: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """``(log A, log π)`` from their Dirichlet conditionals given the state sequences."""
    onehot = _onehot(states, k)
    pairs = np.einsum("rti,rtj->ij", onehot[:, :-1], onehot[:, 1:])
    return log_dirichlet_sample(rng, prior + pairs), log_dirichlet_sample(rng, prior + onehot[:, 0].sum(axis=0))


def _slice_beta(
    rng: np.random.Generator, a: np.ndarray, b: np.ndarray, lo: np.ndarray, hi: np.ndarray, current: np.ndarray
) -> np.ndarray:
    """One slice-sampling update of ``u ~ Beta(a, b)`` restricted to ``[lo, hi]``, from ``current`` (vectorised).

    The support is bounded, so no stepping out is needed: the interval shrinks towards
    ``current`` until a point inside the slice is found (Neal 2003, §4.2.2). The update
    leaves the truncated Beta invariant however far into its tail the interval lies.
    """

    def logdens(u: np.ndarray, aa: np.ndarray, bb: np.ndarray) -> np.ndarray:
        return (aa - 1.0) * np.log(u) + (bb - 1.0) * np.log1p(-u)

    level = logdens(current, a, b) - rng.exponential(size=current.shape)
    left, right = lo.copy(), hi.copy()
    out = current.copy()
    todo = np.arange(current.size)
    for _ in range(200):  # each try at least halves the interval in expectation; 200 is never reached in practice
        u = left[todo] + rng.random(todo.size) * (right[todo] - left[todo])
        ok = logdens(u, a[todo], b[todo]) > level[todo]
        out[todo[ok]] = u[ok]
        below = u < current[todo]
        left[todo[~ok & below]] = u[~ok & below]
        right[todo[~ok & ~below]] = u[~ok & ~below]
        todo = todo[~ok]
        if todo.size == 0:
            break
    return out


def truncated_dirichlet_update(
    rng: np.random.Generator, current: np.ndarray, concentration: np.ndarray, floor: float
) -> np.ndarray:
    """One sweep leaving ``Dir(concentration)`` restricted to ``θ_j ≥ floor`` invariant (rows of the last axis).

    For each component j < K_d − 1 in turn, the pair (θ_j, θ_last) is redrawn with
    its sum s fixed: ``θ_j / s ~ Beta(α_j, α_last)`` restricted so that both stay
    ≥ floor (a slice-sampling update). This is the sequential truncated-Beta scheme
    for truncated Dirichlets, run as a Markov update: it needs no mass in the bulk,
    so floors deep in the tail of a concentrated posterior are no problem.
    """
    theta = np.array(current, dtype=float, copy=True).reshape(-1, current.shape[-1])
    alpha = np.broadcast_to(np.asarray(concentration, dtype=float), current.shape).reshape(theta.shape)
    if np.any(theta < floor * (1 - 1e-9)):
        raise ValueError(f"the current value must satisfy the floor θ >= {floor:g}.")
    last = theta.shape[1] - 1
    for j in range(last):
        total = theta[:, j] + theta[:, last]
        lo, hi = floor / total, 1.0 - floor / total
        u0 = np.clip(theta[:, j] / total, lo, hi)
        u = _slice_beta(rng, alpha[:, j], alpha[:, last], lo, hi, u0)
        theta[:, j] = np.maximum(u * total, floor)
        theta[:, last] = np.maximum(total - theta[:, j], floor)
    return theta.reshape(current.shape)


def check_floor(floor: Any, size: int, name: str = "floor") -> float:
    """``floor`` as a float after checking ``0 < a₀ < 1/K_d`` (``size`` is K_d ≥ 2).

    Raises
    ------
    ValueError
        Naming ``name``, if the floor is not a real number strictly between 0 and
        ``1/K_d`` (at ``1/K_d`` the truncation leaves only the uniform vector).
    """
    if isinstance(floor, bool):
        raise ValueError(f"{name} must be a number 0 < a0 < 1/K_d, got {floor!r}.")
    try:
        value = float(floor)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number 0 < a0 < 1/K_d, got {floor!r}.") from None
    if size < 2:
        raise ValueError(f"{name}: a floor needs at least 2 categories, the emission has K_d = {size}.")
    if not 0.0 < value < 1.0 / size:
        raise ValueError(f"{name} must satisfy 0 < a0 < 1/K_d = {1.0 / size:.6g} (K_d = {size}), got {floor!r}.")
    return value


def state_log_likelihood(counts: Sequence[np.ndarray], log_emissions: Sequence[np.ndarray], temperature: float = 1.0) -> np.ndarray:
    """``(R, T, K)``: ``Σ_d Σ_j n[r, t, d, j] log θ_{k,d,j} / T``."""
    return sum(np.einsum("rtj,kj->rtk", c, lt) for c, lt in zip(counts, log_emissions)) / temperature


def _probabilities(log_p: np.ndarray) -> np.ndarray:
    """``exp(log p)`` floored at the smallest normal double, so that no stored probability is 0 (log 0 = −inf)."""
    return np.maximum(np.exp(log_p), np.finfo(float).tiny)


def clamped_counts(counts: Any, name: str = "counts") -> np.ndarray:
    """Counts as floats, clamped at 0 cell by cell (a noisy release; see :mod:`pymc_dp.examples.warlogs.hmm`)."""
    arr = np.asarray(counts, dtype=float)
    if arr.ndim != 3 or not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be a finite (regions, months, K_d) array of counts, got shape {arr.shape}.")
    return np.maximum(arr, 0.0)


class _HMMStep(BlockedStep):
    """Shared set-up: the model, value names, temperature and generator.

    Every step returns exactly one stats dict, as PyMC's step-method contract asks
    (its progress bar and ``CompoundStep`` zip the stats against the steps): the
    temperature the update ran at, a public constant.
    """

    stats_dtypes_shapes = {"temperature": (np.float64, [])}

    def __init__(self, vars: Sequence[Any], model: Any, temperature: float, rng: Any) -> None:
        import pymc as pm

        self.model = pm.modelcontext(model)
        self.vars = [self.model.rvs_to_values.get(v, v) for v in vars]
        for v in self.vars:
            rv = self.model.values_to_rvs[v]
            if self.model.rvs_to_transforms.get(rv) is not None:
                raise ValueError(
                    f"{rv.name!r} has a transform; declare it with default_transform=None so that this Gibbs step can "
                    "write its value directly."
                )
        if not temperature >= 1:
            raise ValueError(f"temperature must be >= 1, got {temperature!r}.")
        self.temperature = float(temperature)
        self.rng = np.random.default_rng(rng)

    def _stats(self) -> list[dict[str, Any]]:
        return [{"temperature": self.temperature}]

    def _name(self, rv: Any) -> str:
        return self.model.rvs_to_values[self.model[rv] if isinstance(rv, str) else rv].name

    @staticmethod
    def competence(var: Any, has_grad: bool) -> Competence:
        return Competence.INCOMPATIBLE  # assigned explicitly, never automatically


class HMMStatesFFBS(_HMMStep):
    """All state sequences ``states`` (an ``(R, T)`` integer variable) by FFBS.

    Parameters
    ----------
    states
        The state variable.
    counts
        Per feature, the ``(R, T, K_d)`` counts (exact or a noisy release).
    emissions
        Per feature, the ``(K, K_d)`` emission-probability variable (``default_transform=None``).
    transitions, initial
        The ``(K, K)`` and ``(K,)`` probability variables (``default_transform=None``).
    temperature
        T ≥ 1; the counts' log-likelihood is divided by T.
    """

    def __init__(
        self,
        states: Any,
        counts: Sequence[np.ndarray],
        emissions: Sequence[Any],
        transitions: Any,
        initial: Any,
        *,
        temperature: float = 1.0,
        model: Any = None,
        rng: Any = None,
    ) -> None:
        super().__init__([states], model, temperature, rng)
        self.counts = [clamped_counts(c, f"counts[{d}]") for d, c in enumerate(counts)]
        if len(self.counts) != len(emissions):
            raise ValueError("give one emission variable per feature's counts.")
        self.emission_names = [self._name(e) for e in emissions]
        self.transition_name, self.initial_name = self._name(transitions), self._name(initial)

    def step(self, point: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], list[dict[str, Any]]]:
        log_theta = [np.log(point[n]) for n in self.emission_names]
        log_lik = state_log_likelihood(self.counts, log_theta, self.temperature)
        states, _ = ffbs(log_lik, np.log(point[self.transition_name]), np.log(point[self.initial_name]), self.rng)
        new = dict(point)
        new[self.vars[0].name] = states.astype(point[self.vars[0].name].dtype)
        return new, self._stats()


class DirichletCountsGibbs(_HMMStep):
    """One feature's ``(K, K_d)`` emission probabilities from their Dirichlet conditional.

    Parameters
    ----------
    emission
        The ``(K, K_d)`` variable (``default_transform=None``), prior ``Dir(prior)`` per row.
    counts
        That feature's ``(R, T, K_d)`` counts.
    states
        The ``(R, T)`` state variable.
    prior
        The symmetric Dirichlet concentration β of the emission variable.
    temperature
        T ≥ 1: the counts enter divided by T.
    floor
        ``None`` (default): the exact Dirichlet draw above. A number a₀ with
        ``0 < a₀ < 1/K_d``: the emission probabilities are restricted to ``θ ≥ a₀``
        (OPS's truncation), and each step is one sweep of
        :func:`truncated_dirichlet_update` from the current value, which leaves the
        truncated conditional invariant. The model must then put no mass outside the
        truncation (e.g. :func:`~pymc_dp.examples.warlogs.model.hmm_model` with
        ``floors=``) and the sampler must start inside it.
    model, rng
        The model (default: the enclosing context) and a seed or generator
        (``pm.sample`` replaces it with its own per-chain generator).

    Raises
    ------
    ValueError
        If ``floor`` is not a number in ``(0, 1/K_d)``, or ``emission`` has a transform.
    """

    def __init__(
        self,
        emission: Any,
        counts: np.ndarray,
        states: Any,
        prior: float,
        *,
        temperature: float = 1.0,
        floor: float | None = None,
        model: Any = None,
        rng: Any = None,
    ) -> None:
        super().__init__([emission], model, temperature, rng)
        self.counts = clamped_counts(counts, "counts")
        self.states_name = self._name(states)
        self.prior = float(prior)
        shape = self.model.initial_point()[self.vars[0].name].shape
        self.k = int(shape[0])
        self.floor = None if floor is None else check_floor(floor, int(shape[-1]), "floor")

    def step(self, point: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], list[dict[str, Any]]]:
        new = dict(point)
        name = self.vars[0].name
        if self.floor is None:
            log_theta = emission_log_draw(self.rng, self.prior, self.counts, point[self.states_name], self.k, self.temperature)
            new[name] = _probabilities(log_theta)
        else:
            concentration = self.prior + emission_statistics(self.counts, point[self.states_name], self.k) / self.temperature
            new[name] = truncated_dirichlet_update(self.rng, np.asarray(point[name], dtype=float), concentration, self.floor)
        return new, self._stats()


class HMMTransitionsGibbs(_HMMStep):
    """Transitions ``(K, K)`` and initial probabilities ``(K,)`` from the state sequences (no data read)."""

    def __init__(
        self,
        transitions: Any,
        initial: Any,
        states: Any,
        prior: float,
        *,
        model: Any = None,
        rng: Any = None,
    ) -> None:
        super().__init__([transitions, initial], model, 1.0, rng)
        self.states_name = self._name(states)
        self.prior = float(prior)
        self.k = int(self.model.initial_point()[self.vars[1].name].shape[0])

    def step(self, point: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], list[dict[str, Any]]]:
        log_a, log_pi = transition_log_draw(self.rng, self.prior, point[self.states_name], self.k)
        new = dict(point)
        new[self.vars[0].name] = _probabilities(log_a)
        new[self.vars[1].name] = _probabilities(log_pi)
        return new, self._stats()
