"""Empirical privacy auditing: a lower confidence bound on a mechanism's privacy loss.

A mechanism M is (ε, δ)-DP if ``P(M(X) ∈ S) ≤ e^ε P(M(X′) ∈ S) + δ`` for every
pair of neighbouring inputs and every output event S. Turned around, any event S
with probabilities p = P(M(X) ∈ S) and p′ = P(M(X′) ∈ S) proves

    ε ≥ ln((p − δ) / p′).

The auditor runs M many times on X and on X′, estimates p and p′, and replaces
them by Clopper–Pearson bounds (a lower bound on p, an upper bound on p′, each at
level (1 − confidence)/2) so that the resulting ε̂ is a *lower confidence bound*
on the true privacy loss: with probability at least ``confidence`` the mechanism's
true ε is at least ε̂. An ε̂ above the claimed ε is therefore evidence, at that
confidence, that the claim is wrong: a failed audit.

The event is chosen on a held-out part of the runs (a *selection* half) among a
family of candidates — every output value and every tail for discrete outputs;
histogram bins on quantiles of the held-out draws, their tails and any atoms for
continuous outputs — and the bound is computed on the other half only, so choosing
the best of many events does not bias it (one event is tested, no multiple-testing
correction is needed).

An audit can only show a claim is *wrong*, never that it is right: a passing audit
means no event the auditor looked at contradicts the claim. Its power is shown by
auditing a deliberately broken variant of each mechanism (noise scale halved),
which must fail: see :mod:`pymc_dp.audit.targets` and ``pymc-dp audit``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
from scipy import stats

__all__ = ["AuditResult", "audit", "clopper_pearson", "repeated"]

#: ``mechanism(data, size, rng) -> outputs`` with ``size`` runs along the first axis.
Mechanism = Callable[[Any, int, np.random.Generator], Any]

EVENT_FAMILIES = ("auto", "exact", "bins")


@dataclass(frozen=True)
class AuditResult:
    """The outcome of one audit.

    Attributes
    ----------
    name
        What was audited.
    claimed_epsilon, claimed_delta
        The guarantee the mechanism claims.
    epsilon_lower
        Lower confidence bound on the privacy loss (≥ 0; 0 when no event shows any loss).
    epsilon_estimate
        The point estimate ``ln((p̂ − δ)/p̂′)`` on the chosen event and the evaluation runs.
    event
        The chosen event, readable (e.g. ``"output > 0.731 (X over X′)"``).
    runs
        Runs of the mechanism on each of the two inputs (selection and evaluation together).
    confidence
        The confidence level of ``epsilon_lower``.
    """

    name: str
    claimed_epsilon: float
    claimed_delta: float
    epsilon_lower: float
    epsilon_estimate: float
    event: str
    runs: int
    confidence: float

    @property
    def passed(self) -> bool:
        """True unless the audited lower bound exceeds the claimed ε (a failed audit)."""
        return self.epsilon_lower <= self.claimed_epsilon

    def __str__(self) -> str:
        verdict = "passed" if self.passed else "FAILED"
        return (
            f"{self.name}: claimed ε = {self.claimed_epsilon:.4g} (δ = {self.claimed_delta:.2g}), audited ε ≥ "
            f"{self.epsilon_lower:.4f} at {self.confidence:.0%} over {self.runs} runs per input [{verdict}; event "
            f"{self.event}]"
        )


def clopper_pearson(successes: Any, trials: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """One-sided Clopper–Pearson bounds, each at level ``alpha``: ``(lower, upper)``.

    ``P(p < lower) ≤ alpha`` and ``P(p > upper) ≤ alpha`` for ``successes ~ Binomial(trials, p)``.
    """
    k = np.asarray(successes, dtype=float)
    if trials < 1:
        raise ValueError(f"trials must be a positive integer, got {trials!r}.")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha!r}.")
    with np.errstate(invalid="ignore"):
        lower = np.where(k > 0, stats.beta.ppf(alpha, k, trials - k + 1), 0.0)
        upper = np.where(k < trials, stats.beta.ppf(1.0 - alpha, k + 1, trials - k), 1.0)
    return lower, upper


def repeated(single: Callable[[Any, np.random.Generator], Any]) -> Mechanism:
    """Turn a one-run function ``single(data, rng)`` into the batched form :func:`audit` calls."""

    def batched(data: Any, size: int, rng: np.random.Generator) -> np.ndarray:
        return np.asarray([single(data, rng) for _ in range(size)])

    return batched


# ---------------------------------------------------------------------------- argument checks


def _positive_int(value: Any, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer ≥ {minimum}, got {value!r}.")
    return int(value)


def _check_claim(epsilon: Any, delta: Any) -> tuple[float, float]:
    try:
        eps, dlt = float(epsilon), float(delta)
    except (TypeError, ValueError):
        raise TypeError(f"epsilon and delta must be real numbers, got {epsilon!r} and {delta!r}.") from None
    if not (math.isfinite(eps) and eps >= 0):
        raise ValueError(f"epsilon (the claimed ε) must be finite and ≥ 0, got {epsilon!r}.")
    if not (math.isfinite(dlt) and 0 <= dlt < 1):
        raise ValueError(f"delta (the claimed δ) must lie in [0, 1), got {delta!r}.")
    return eps, dlt


def _outputs(mechanism: Mechanism, data: Any, size: int, rng: np.random.Generator, which: str) -> np.ndarray:
    out = np.asarray(mechanism(data, size, rng))
    if out.ndim == 0 or out.shape[0] != size:
        raise ValueError(
            f"the mechanism returned shape {out.shape} on {which}; it must return {size} runs along the first axis "
            "(wrap a one-run function with pymc_dp.audit.repeated)."
        )
    return out.reshape(size, -1)


# ---------------------------------------------------------------------------- events


@dataclass(frozen=True)
class _Cells:
    """A partition of the output space into cells, and how to read each cell."""

    index: Callable[[np.ndarray], np.ndarray]  # outputs (n, d) -> cell index (n,)
    count: int
    labels: Callable[[int], str]
    ordered: bool  # cells are ordered by value: tails are events too
    upper_end: Callable[[int], str]  # a prefix ending at cell c is "output ≤ upper_end(c)"


def _ordered_cells(cuts: np.ndarray, is_atom: np.ndarray) -> _Cells:
    """Cells of the real line: each cut point on its own (odd cells), and the open intervals between them (even)."""

    def index(out: np.ndarray) -> np.ndarray:
        v = out[:, 0].astype(float)
        pos = np.searchsorted(cuts, v)  # cuts[pos - 1] < v <= cuts[pos]
        on_cut = (pos < len(cuts)) & (cuts[np.minimum(pos, len(cuts) - 1)] == v)
        return np.where(on_cut, 2 * pos + 1, 2 * pos)

    def label(c: int) -> str:
        k = c // 2
        if c % 2:
            return f"output = {cuts[k]:.6g}" + ("" if is_atom[k] else " (a bin edge)")
        lo = f"{cuts[k - 1]:.6g}" if k > 0 else "-inf"
        hi = f"{cuts[k]:.6g}" if k < len(cuts) else "inf"
        return f"{lo} < output < {hi}"

    def upper_end(c: int) -> str:
        k = c // 2
        return f"{cuts[k]:.6g}" if c % 2 or k < len(cuts) else "inf"

    return _Cells(index, 2 * len(cuts) + 1, label, True, upper_end)


def _distinct(selection: np.ndarray) -> np.ndarray:
    """The distinct outputs, one per row (a 1-D sort for scalar outputs: much faster than ``axis=0``)."""
    if selection.shape[1] == 1:
        return np.unique(selection[:, 0])[:, None]
    return np.unique(selection, axis=0)


def _exact_cells(selection: np.ndarray) -> _Cells:
    values = _distinct(selection)
    if values.shape[1] == 1 and np.issubdtype(values.dtype, np.number) and not np.iscomplexobj(values):
        flat = values[:, 0].astype(float)
        return _ordered_cells(flat, np.ones(len(flat), dtype=bool))
    lookup = {tuple(v): i for i, v in enumerate(values.tolist())}

    def index(out: np.ndarray) -> np.ndarray:  # an output unseen in the selection runs gets the last cell
        return np.fromiter((lookup.get(tuple(r), len(values)) for r in out.tolist()), dtype=int, count=len(out))

    def label(c: int) -> str:
        return f"output = {values[c].tolist()}" if c < len(values) else "an output unseen in the selection runs"

    return _Cells(index, len(values) + 1, label, False, label)


def _binned_cells(selection: np.ndarray, bins: int) -> _Cells:
    if selection.shape[1] != 1:
        raise ValueError(
            f"histogram events need one number per run; the mechanism returns {selection.shape[1]}. Return a scalar "
            "summary (e.g. the coordinate the neighbours differ in) or use events='exact' for discrete outputs."
        )
    y = selection[:, 0].astype(float)
    values, counts = np.unique(y, return_counts=True)
    atoms = values[counts >= max(2, 0.005 * len(y))]  # repeated values: a point mass (e.g. a rejected move)
    rest = y[~np.isin(y, atoms)]  # bins share out the continuous part only
    edges = np.quantile(rest, np.linspace(0, 1, bins + 1)[1:-1]) if rest.size else np.empty(0)
    cuts = np.unique(np.concatenate([edges, atoms]))
    return _ordered_cells(cuts, np.isin(cuts, atoms))


def _choose_cells(selection: np.ndarray, events: str, bins: int) -> _Cells:
    if events == "auto":
        discrete = not np.issubdtype(selection.dtype, np.floating) or len(_distinct(selection)) <= max(
            100, len(selection) // 100
        )
        events = "exact" if discrete else "bins"
    return _exact_cells(selection) if events == "exact" else _binned_cells(selection, bins)


def _event_counts(cells: _Cells, counts: np.ndarray) -> tuple[np.ndarray, list[Callable[[], str]]]:
    """Counts of every candidate event (rows) from per-cell counts, and a label for each."""
    rows = [counts]
    labels: list[Callable[[], str]] = [lambda c=c: cells.labels(c) for c in range(cells.count)]
    if cells.ordered:
        prefix = np.cumsum(counts)[:-1]
        suffix = counts.sum() - prefix
        rows += [prefix, suffix]
        labels += [lambda c=c: f"output ≤ {cells.upper_end(c)}" if c % 2 else f"output < {cells.upper_end(c)}"
                   for c in range(cells.count - 1)]
        labels += [lambda c=c: f"output > {cells.upper_end(c)}" if c % 2 else f"output ≥ {cells.upper_end(c)}"
                   for c in range(cells.count - 1)]
    else:
        rows.append(counts.sum() - counts)
        labels += [lambda c=c: f"not {cells.labels(c)}" for c in range(cells.count)]
    return np.concatenate(rows), labels


def _loss_bounds(k_x: np.ndarray, k_y: np.ndarray, n: int, delta: float, alpha: float) -> np.ndarray:
    """Lower confidence bounds on ln((p_x − δ)/p_y) for each event."""
    p_x, _ = clopper_pearson(k_x, n, alpha / 2)
    _, p_y = clopper_pearson(k_y, n, alpha / 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(p_x > delta, np.log(np.maximum(p_x - delta, 1e-300)) - np.log(p_y), -np.inf)


# ---------------------------------------------------------------------------- the audit


def audit(
    mechanism: Mechanism,
    data: Any,
    neighbour: Any,
    *,
    epsilon: float,
    delta: float = 0.0,
    runs: int = 100_000,
    events: str = "auto",
    bins: int = 50,
    confidence: float = 0.99,
    selection: float = 0.5,
    seed: int = 0,
    name: str = "mechanism",
) -> AuditResult:
    """Audit a randomised function's privacy claim on one pair of neighbouring inputs.

    Parameters
    ----------
    mechanism
        ``mechanism(data, size, rng)`` returning ``size`` independent runs along the
        first axis (scalars, or vectors for ``events="exact"``). Use
        :func:`repeated` to wrap a one-run function. ``rng`` is a NumPy generator
        the function may use (mechanisms with secure noise ignore it).
    data, neighbour
        Two neighbouring inputs X and X′ (under the relation the claim is made for).
    epsilon, delta
        The claimed guarantee.
    runs
        Runs on each input; ``selection`` of them choose the event, the rest bound it.
    events
        ``"exact"``: every output value and (for ordered scalars) every tail —
        for discrete mechanisms. ``"bins"``: ``bins`` histogram bins at quantiles of
        the selection runs, their tails and any repeated values (atoms) — for
        continuous ones. ``"auto"`` (default): ``"exact"`` when the outputs are
        integers or take few distinct values.
    bins
        Number of histogram bins for ``"bins"``.
    confidence
        Confidence of the lower bound (default 0.99: a correct mechanism fails its
        audit with probability at most 1 %).
    selection
        Fraction of the runs used to choose the event.
    seed
        Seeds the generator passed to ``mechanism`` (the two inputs get independent streams).
    name
        Label for the result.

    Returns
    -------
    AuditResult
        ``epsilon_lower`` (≥ 0) is the lower confidence bound; ``passed`` is False
        when it exceeds ``epsilon``.

    Raises
    ------
    ValueError
        For a bad claim, run count, event family, confidence or selection fraction,
        or a mechanism that does not return ``size`` runs.

    Examples
    --------
    >>> import numpy as np
    >>> def coin(bit, size, rng):  # randomised response: truthful with probability 3/4
    ...     keep = rng.random(size) < 0.75
    ...     return np.where(keep, bit, 1 - bit)
    >>> result = audit(coin, 1, 0, epsilon=np.log(3), runs=200_000, events="exact")
    >>> result.passed, round(result.epsilon_lower, 1)
    (True, 1.1)
    """
    eps, dlt = _check_claim(epsilon, delta)
    runs = _positive_int(runs, "runs", 100)
    bins = _positive_int(bins, "bins", 2)
    if events not in EVENT_FAMILIES:
        raise ValueError(f"events must be one of {EVENT_FAMILIES}, got {events!r}.")
    if not 0.5 <= float(confidence) < 1.0:
        raise ValueError(f"confidence must lie in [0.5, 1), got {confidence!r}.")
    if not 0.0 < float(selection) < 1.0:
        raise ValueError(f"selection must lie in (0, 1), got {selection!r}.")
    if not callable(mechanism):
        raise TypeError(f"mechanism must be callable as mechanism(data, size, rng), got {type(mechanism).__name__}.")
    alpha = 1.0 - float(confidence)
    rng_x, rng_y = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2))
    out_x = _outputs(mechanism, data, runs, rng_x, "data")
    out_y = _outputs(mechanism, neighbour, runs, rng_y, "neighbour")

    m = max(1, min(runs - 1, int(round(selection * runs))))
    cells = _choose_cells(np.concatenate([out_x[:m], out_y[:m]]), events, bins)

    def event_counts(out: np.ndarray) -> tuple[np.ndarray, list[Callable[[], str]]]:
        return _event_counts(cells, np.bincount(cells.index(out), minlength=cells.count))

    (sel_x, labels), (sel_y, _) = event_counts(out_x[:m]), event_counts(out_y[:m])
    forward = _loss_bounds(sel_x, sel_y, m, dlt, alpha)
    backward = _loss_bounds(sel_y, sel_x, m, dlt, alpha)
    best_f, best_b = int(np.argmax(forward)), int(np.argmax(backward))
    swap = backward[best_b] > forward[best_f]
    best = best_b if swap else best_f

    (ev_x, _), (ev_y, _) = event_counts(out_x[m:]), event_counts(out_y[m:])
    k_x, k_y = (ev_y[best], ev_x[best]) if swap else (ev_x[best], ev_y[best])
    n = runs - m
    lower = float(_loss_bounds(np.array([k_x]), np.array([k_y]), n, dlt, alpha)[0])
    with np.errstate(divide="ignore"):
        estimate = math.log(max(k_x / n - dlt, 1e-300)) - math.log(k_y / n) if k_y > 0 else math.inf
    direction = "X′ over X" if swap else "X over X′"
    return AuditResult(
        name=name, claimed_epsilon=eps, claimed_delta=dlt, epsilon_lower=max(0.0, lower),
        epsilon_estimate=estimate if k_x / n > dlt else 0.0, event=f"{labels[best]()} ({direction})", runs=runs,
        confidence=float(confidence),
    )
