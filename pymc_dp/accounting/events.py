"""Machine-readable descriptions of mechanisms, and their translation for dp-accounting.

A ledger entry may carry an ``event``: a small JSON dict naming the mechanism and its
noise parameters. The basic and advanced methods need only (ε, δ); the tight
accountants (Rényi DP and privacy-loss distributions, both computed by Google's
``dp-accounting``) need the event to do better than the worst case of an
(ε, δ)-DP mechanism.

Event types (``noise_multiplier`` = noise scale / sensitivity, as in dp-accounting):

- ``{"type": "laplace", "noise_multiplier": b/Δ₁}``: Laplace noise of scale b,
  L1 sensitivity Δ₁.
- ``{"type": "gaussian", "noise_multiplier": σ/Δ₂}``: Gaussian noise of standard
  deviation σ, L2 sensitivity Δ₂.
- ``{"type": "discrete_laplace", "noise_parameter": a, "sensitivity": Δ}``: integer
  noise with pmf ∝ exp(−a|k|), integer sensitivity Δ.
- ``{"type": "randomized_response", "noise_parameter": p, "num_buckets": k}``: with
  probability 1 − p the true bucket, else a uniform one of the k buckets.
- ``{"type": "poisson_sampled", "sampling_probability": q, "event": {...}}``: the
  inner event run on a Poisson sample of the records (add/remove relation).
- ``{"type": "sampled_without_replacement", "source_dataset_size": n,
  "sample_size": m, "event": {...}}``: the inner event run on m of the n records
  drawn without replacement (replace relation).
- ``{"type": "random_scan", "epsilon": ε, "probability": q}``: an ε-DP update of
  one record's latent that runs with probability q (a random scan of Q of N
  per-record latents, q = Q/N), *revealing whether it ran* (replace relation). Pure
  ε is not amplified, but the pair of output laws is dominated by
  ``(1 − q)·⊥ + q·RR_ε(0)`` vs ``(1 − q)·⊥ + q·RR_ε(1)`` — randomised response with a
  common, disjoint "not updated" outcome — so δ(ε′) = q·δ_ε(ε′) for every ε′ ≥ 0
  (Balle, Barthe & Gaboardi 2018, Thm 2). Its Rényi curve is
  ``log(1 − q + q (e^{αε} + e^{(1−α)ε}) / (1 + e^ε)) / (α − 1)`` and its PLD is
  built from the two three-point laws.

The neighbouring relation of an event is the one of its ledger entry: a
``noise_multiplier`` is relative to the sensitivity computed under that relation,
so for additive-noise events the worst-case pair of output distributions is the
same shift whichever relation produced Δ.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from typing import Any, Mapping

import numpy as np

from .amplification import amplified_epsilon
from .validation import check_count, check_epsilon, check_probability

__all__ = ["validate_event", "event_epsilon", "gaussian_delta", "event_key", "check_entry_consistency"]

_REQUIRED = {
    "laplace": ("noise_multiplier",),
    "gaussian": ("noise_multiplier",),
    "discrete_laplace": ("noise_parameter", "sensitivity"),
    "randomized_response": ("noise_parameter", "num_buckets"),
    "poisson_sampled": ("sampling_probability", "event"),
    "sampled_without_replacement": ("source_dataset_size", "sample_size", "event"),
    "random_scan": ("epsilon", "probability"),
}


def validate_event(event: Mapping[str, Any]) -> dict[str, Any]:
    """Check an event description and return it as a plain dict.

    Raises
    ------
    ValueError
        For an unknown type, a missing or extra field, or an out-of-range parameter.
    """
    if not isinstance(event, Mapping) and callable(getattr(event, "to_dict", None)):  # a typed DpEvent
        event = event.to_dict()
    if not isinstance(event, Mapping) or "type" not in event:
        raise ValueError(f"event must be a dict with a 'type' key, got {event!r}.")
    kind = event["type"]
    if kind not in _REQUIRED:
        raise ValueError(f"unknown event type {kind!r}; known types: {sorted(_REQUIRED)}. Use event=None for a generic (ε, δ) spend.")
    fields = set(event) - {"type"}
    if fields != set(_REQUIRED[kind]):
        raise ValueError(f"event of type {kind!r} needs exactly the fields {_REQUIRED[kind]}, got {sorted(fields)}.")
    out: dict[str, Any] = {"type": kind}
    if kind in ("laplace", "gaussian"):
        out["noise_multiplier"] = check_epsilon(event["noise_multiplier"], "event noise_multiplier")
    elif kind == "discrete_laplace":
        out["noise_parameter"] = check_epsilon(event["noise_parameter"], "event noise_parameter")
        out["sensitivity"] = check_count(event["sensitivity"], "event sensitivity")
    elif kind == "randomized_response":
        out["noise_parameter"] = check_probability(event["noise_parameter"], "event noise_parameter")
        out["num_buckets"] = check_count(event["num_buckets"], "event num_buckets")
        if out["num_buckets"] < 2:
            raise ValueError("event num_buckets must be >= 2 for randomised response.")
    elif kind == "random_scan":
        out["epsilon"] = check_epsilon(event["epsilon"], "event epsilon")
        out["probability"] = check_probability(event["probability"], "event probability")
    elif kind == "poisson_sampled":
        out["sampling_probability"] = check_probability(event["sampling_probability"], "event sampling_probability")
        out["event"] = validate_event(event["event"])
    else:
        n = check_count(event["source_dataset_size"], "event source_dataset_size")
        m = check_count(event["sample_size"], "event sample_size")
        if m > n:
            raise ValueError(f"event sample_size ({m}) cannot exceed source_dataset_size ({n}).")
        out.update(source_dataset_size=n, sample_size=m, event=validate_event(event["event"]))
    return out


def event_key(event: Mapping[str, Any] | None) -> str:
    """A canonical string for an event (equal events, equal keys)."""
    return json.dumps(event, sort_keys=True)


def event_epsilon(event: Mapping[str, Any]) -> float | None:
    """The pure ε of one run of the event, or ``None`` if it is not pure ε-DP (Gaussian)."""
    kind = event["type"]
    if kind == "laplace":
        return 1.0 / event["noise_multiplier"]
    if kind == "discrete_laplace":
        return event["noise_parameter"] * event["sensitivity"]
    if kind == "random_scan":
        return event["epsilon"]
    if kind == "randomized_response":
        # ln((1 - p + p/k) / (p/k)) = ln(1 + k(1 - p)/p), in log space: p/k may underflow
        p, k = event["noise_parameter"], event["num_buckets"]
        if p == 1.0:
            return 0.0
        return float(np.logaddexp(0.0, math.log(k) + math.log1p(-p) - math.log(p)))
    if kind == "poisson_sampled":
        inner = event_epsilon(event["event"])
        return None if inner is None else amplified_epsilon(inner, event["sampling_probability"])
    if kind == "sampled_without_replacement":
        inner = event_epsilon(event["event"])
        q = event["sample_size"] / event["source_dataset_size"]
        return None if inner is None else amplified_epsilon(inner, q)
    return None  # gaussian


def gaussian_delta(noise_multiplier: float, epsilon: float) -> float:
    """Exact δ(ε) of the Gaussian mechanism with σ/Δ₂ = ``noise_multiplier`` (Balle & Wang 2018, Thm 8)."""
    from scipy.stats import norm  # imported here: scipy.stats costs ~0.5 s at import

    s = noise_multiplier
    # e^ε Φ(b) as exp(ε + log Φ(b)): e^ε alone overflows for ε > 709, the product is at most Φ(a) ≤ 1
    tail = math.exp(min(epsilon + float(norm.logcdf(-1 / (2 * s) - epsilon * s)), 0.0))
    return float(norm.cdf(1 / (2 * s) - epsilon * s) - tail)


def check_entry_consistency(epsilon: float, delta: float, event: Mapping[str, Any] | None) -> None:
    """Refuse an entry whose (ε, δ) understates what its event implies.

    The basic method trusts (ε, δ) and the tight methods trust the event; they must
    tell the same story, or the totals would disagree.
    """
    if event is None:
        return
    implied = event_epsilon(event)
    if implied is not None:
        if epsilon < implied * (1 - 1e-9):
            raise ValueError(
                f"epsilon={epsilon:g} understates the event {event!r}, which is {implied:.12g}-DP; "
                "record the event's true ε."
            )
        return
    if event["type"] == "gaussian":
        if delta <= 0:
            raise ValueError("a Gaussian event needs delta > 0 in its entry.")
        exact = gaussian_delta(event["noise_multiplier"], epsilon)
        if exact > delta * (1 + 1e-6) + 1e-15:
            raise ValueError(
                f"(epsilon={epsilon:g}, delta={delta:g}) understates the Gaussian event {event!r}: at that ε its δ is {exact:.3g}."
            )
    # sampled Gaussian: its (ε, δ) is checked by the accountant that composes it.


# --------------------------------------------------------------------------- dp-accounting


def _nr(name: str):
    import dp_accounting

    return getattr(dp_accounting.NeighboringRelation, name)


def _to_dp_event(event: Mapping[str, Any]):
    import dp_accounting as dpa

    kind = event["type"]
    if kind == "laplace":
        return dpa.LaplaceDpEvent(event["noise_multiplier"])
    if kind == "gaussian":
        return dpa.GaussianDpEvent(event["noise_multiplier"])
    if kind == "discrete_laplace":
        return dpa.dp_event.DiscreteLaplaceDpEvent(event["noise_parameter"], event["sensitivity"])
    if kind == "randomized_response":
        return dpa.RandomizedResponseDpEvent(event["noise_parameter"], event["num_buckets"])
    if kind == "poisson_sampled":
        return dpa.PoissonSampledDpEvent(event["sampling_probability"], _to_dp_event(event["event"]))
    return dpa.SampledWithoutReplacementDpEvent(
        event["source_dataset_size"], event["sample_size"], _to_dp_event(event["event"])
    )


#: Noise multipliers (σ/Δ₂, b/Δ₁) outside this range are not handed to dp-accounting, whose
#: RDP and PLD code overflows or divides by zero near the ends of the double range; such
#: events are composed from their entry's (ε, δ) like an unknown event (sound, looser).
DP_ACCOUNTING_NOISE_RANGE = (1e-6, 1e6)


def _within_dp_accounting_range(event: Mapping[str, Any]) -> bool:
    """Whether every noise multiplier in ``event`` (and its inner events) lies in :data:`DP_ACCOUNTING_NOISE_RANGE`."""
    lo, hi = DP_ACCOUNTING_NOISE_RANGE
    if "noise_multiplier" in event and not lo <= event["noise_multiplier"] <= hi:
        return False
    return "event" not in event or _within_dp_accounting_range(event["event"])


def _accountant_relation(event: Mapping[str, Any], neighbouring: str) -> str | None:
    """The dp-accounting relation under which ``event`` means what our entry means, or None.

    Additive-noise events carry a noise multiplier relative to the sensitivity under
    the entry's own relation, so dp-accounting's ADD_OR_REMOVE_ONE (a shift by the
    sensitivity) describes them under either of ours. Randomised response and
    sampling without replacement are defined record-by-record under replacement;
    Poisson sampling under add/remove.
    """
    kind = event["type"]
    if not _within_dp_accounting_range(event):
        return None
    if kind in ("laplace", "gaussian", "discrete_laplace"):
        return "ADD_OR_REMOVE_ONE"
    if kind in ("randomized_response", "sampled_without_replacement", "random_scan"):
        return "REPLACE_ONE" if neighbouring == "replace" else None
    if kind == "poisson_sampled":
        return "ADD_OR_REMOVE_ONE" if neighbouring == "add_remove" else None
    return None  # pragma: no cover


def rdp_orders() -> np.ndarray:
    """The Rényi orders at which curves are evaluated (dp-accounting's defaults)."""
    from dp_accounting.rdp.rdp_privacy_accountant import DEFAULT_RDP_ORDERS

    return np.asarray(DEFAULT_RDP_ORDERS, dtype=float)


def pure_dp_rdp_curve(epsilon: float) -> np.ndarray:
    """RDP curve implied by pure ε-DP: min(ε, α ε²/2) (Mironov 2017 Prop. 3; Bun & Steinke 2016 Prop. 1.4)."""
    a = rdp_orders()
    return np.minimum(epsilon, a * (epsilon * epsilon) / 2)  # ε * ε: ε**2 raises OverflowError for huge ε


def random_scan_rdp(epsilon: float, q: float, orders: np.ndarray) -> np.ndarray:
    """Rényi divergence of the ``random_scan`` pair at each order α > 1 (see the module docstring)."""
    a = np.asarray(orders, dtype=float)
    log_ratio = np.logaddexp(a * epsilon, (1 - a) * epsilon) - np.logaddexp(0.0, epsilon)  # log(1 + e^ε) without overflow
    inner = np.logaddexp(np.log1p(-q) if q < 1 else -np.inf, np.log(q) + log_ratio)
    return inner / (a - 1)


def _random_scan_pld(epsilon: float, q: float, discretization: float):
    from dp_accounting.pld import privacy_loss_distribution as PLD

    log_norm = float(np.logaddexp(0.0, epsilon))  # log(1 + e^ε) without overflow
    yes = math.log(q) + epsilon - log_norm
    no = math.log(q) - log_norm
    upper = {"updated+": yes, "updated-": no}
    lower = {"updated+": no, "updated-": yes}
    if q < 1:
        upper["not updated"] = lower["not updated"] = math.log1p(-q)
    return PLD.from_two_probability_mass_functions(lower, upper, value_discretization_interval=discretization)


@lru_cache(maxsize=4096)
def _rdp_curve_cached(key: str, neighbouring: str, pure_epsilon: float | None) -> tuple[float, ...] | None:
    event = json.loads(key)
    curve = None
    if event is not None and event["type"] == "random_scan":
        if _accountant_relation(event, neighbouring) is not None:
            curve = random_scan_rdp(event["epsilon"], event["probability"], rdp_orders())
    elif event is not None:
        relation = _accountant_relation(event, neighbouring)
        if relation is not None:
            from dp_accounting import rdp

            acc = rdp.RdpAccountant(rdp_orders(), neighboring_relation=_nr(relation))
            dp_event = _to_dp_event(event)
            if acc.supports(dp_event):
                acc.compose(dp_event)
                curve = np.asarray(acc._rdp, dtype=float)  # the accountant's own curve
    if pure_epsilon is not None:
        generic = pure_dp_rdp_curve(pure_epsilon)
        curve = generic if curve is None else np.minimum(curve, generic)
    return None if curve is None else tuple(curve.tolist())


def rdp_curve(event: Mapping[str, Any] | None, epsilon: float, delta: float, neighbouring: str) -> np.ndarray | None:
    """The RDP curve of one run of an entry's mechanism, or ``None`` if none is known.

    dp-accounting computes it for the events it supports; any pure ε-DP entry also
    has the generic bound min(ε, αε²/2), and the smaller of the two is used.
    An (ε, δ > 0) entry with no supported event has no RDP curve.
    """
    pure = epsilon if delta == 0 else None
    curve = _rdp_curve_cached(event_key(event), neighbouring, pure)
    return None if curve is None else np.asarray(curve)


def pld(event: Mapping[str, Any] | None, epsilon: float, delta: float, neighbouring: str, *, discretization: float = 1e-4):
    """The privacy-loss distribution of one run of an entry's mechanism (dp-accounting).

    Falls back to the PLD that dominates every (ε, δ)-DP mechanism when the event is
    unknown or not supported under this relation, so this never fails.
    """
    from dp_accounting.pld import common
    from dp_accounting.pld import privacy_loss_distribution as PLD

    if event is not None and _accountant_relation(event, neighbouring) is not None:
        kind = event["type"]
        if kind == "laplace":
            return PLD.from_laplace_mechanism(event["noise_multiplier"], value_discretization_interval=discretization)
        if kind == "gaussian":
            return PLD.from_gaussian_mechanism(event["noise_multiplier"], value_discretization_interval=discretization)
        if kind == "discrete_laplace":
            return PLD.from_discrete_laplace_mechanism(
                event["noise_parameter"], sensitivity=event["sensitivity"], value_discretization_interval=discretization
            )
        if kind == "randomized_response":
            return PLD.from_randomized_response(
                event["noise_parameter"], event["num_buckets"], value_discretization_interval=discretization,
                neighboring_relation=_nr("REPLACE_ONE"),
            )
        if kind == "random_scan":
            return _random_scan_pld(event["epsilon"], event["probability"], discretization)
        if kind == "poisson_sampled" and event["event"]["type"] in ("laplace", "gaussian"):
            inner, q = event["event"], event["sampling_probability"]
            make = PLD.from_laplace_mechanism if inner["type"] == "laplace" else PLD.from_gaussian_mechanism
            return make(inner["noise_multiplier"], value_discretization_interval=discretization, sampling_prob=q)
    return PLD.from_privacy_parameters(common.DifferentialPrivacyParameters(epsilon, delta), value_discretization_interval=discretization)
