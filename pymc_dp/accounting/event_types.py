"""Typed, frozen privacy events: what a mechanism did, in a form the accountants read.

Modelled on dp-accounting's ``DpEvent`` classes. A ledger entry stores its event as the
plain JSON dict of :mod:`~pymc_dp.accounting.events` (that is what is saved and
digested); these classes are the typed way to build and read one:

>>> LaplaceEvent(noise_multiplier=2.0).to_dict()
{'type': 'laplace', 'noise_multiplier': 2.0}
>>> DpEvent.from_dict({"type": "gaussian", "noise_multiplier": 1.5})
GaussianEvent(noise_multiplier=1.5)

Every constructor validates its fields as :func:`~pymc_dp.accounting.events.validate_event`
does, and ``LedgerEntry(event=...)`` takes either form.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Mapping

from .events import validate_event

__all__ = [
    "DpEvent",
    "LaplaceEvent",
    "GaussianEvent",
    "DiscreteLaplaceEvent",
    "RandomizedResponseEvent",
    "PoissonSampledEvent",
    "SampledWithoutReplacementEvent",
    "RandomScanEvent",
]


@dataclasses.dataclass(frozen=True)
class DpEvent:
    """Base of the typed events; ``type`` is the JSON type name."""

    type: ClassVar[str] = ""

    def __post_init__(self) -> None:
        self.to_dict()  # validates every field, or raises ValueError naming it

    def to_dict(self) -> dict[str, Any]:
        """The validated JSON dict stored in a ledger entry."""
        out: dict[str, Any] = {"type": self.type}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            out[f.name] = value.to_dict() if isinstance(value, DpEvent) else value
        return validate_event(out)

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> "DpEvent":
        """The typed event of a JSON event dict (validated)."""
        checked = validate_event(data)
        cls = _BY_TYPE[checked["type"]]
        fields = {k: (DpEvent.from_dict(v) if k == "event" else v) for k, v in checked.items() if k != "type"}
        return cls(**fields)


@dataclasses.dataclass(frozen=True)
class LaplaceEvent(DpEvent):
    """Laplace noise of scale ``noise_multiplier`` × the L1 sensitivity."""

    type: ClassVar[str] = "laplace"
    noise_multiplier: float


@dataclasses.dataclass(frozen=True)
class GaussianEvent(DpEvent):
    """Gaussian noise of standard deviation ``noise_multiplier`` × the L2 sensitivity."""

    type: ClassVar[str] = "gaussian"
    noise_multiplier: float


@dataclasses.dataclass(frozen=True)
class DiscreteLaplaceEvent(DpEvent):
    """Integer noise with pmf ∝ exp(−``noise_parameter`` |k|), integer ``sensitivity``."""

    type: ClassVar[str] = "discrete_laplace"
    noise_parameter: float
    sensitivity: int


@dataclasses.dataclass(frozen=True)
class RandomizedResponseEvent(DpEvent):
    """The true bucket with probability 1 − ``noise_parameter``, else a uniform one of ``num_buckets``."""

    type: ClassVar[str] = "randomized_response"
    noise_parameter: float
    num_buckets: int


@dataclasses.dataclass(frozen=True)
class PoissonSampledEvent(DpEvent):
    """``event`` run on a Poisson sample (rate ``sampling_probability``) of the records."""

    type: ClassVar[str] = "poisson_sampled"
    sampling_probability: float
    event: DpEvent


@dataclasses.dataclass(frozen=True)
class SampledWithoutReplacementEvent(DpEvent):
    """``event`` run on ``sample_size`` of ``source_dataset_size`` records drawn without replacement."""

    type: ClassVar[str] = "sampled_without_replacement"
    source_dataset_size: int
    sample_size: int
    event: DpEvent


@dataclasses.dataclass(frozen=True)
class RandomScanEvent(DpEvent):
    """An ``epsilon``-DP update of one record's latent run with ``probability`` (revealing whether it ran)."""

    type: ClassVar[str] = "random_scan"
    epsilon: float
    probability: float


_BY_TYPE: dict[str, type[DpEvent]] = {
    cls.type: cls
    for cls in (
        LaplaceEvent, GaussianEvent, DiscreteLaplaceEvent, RandomizedResponseEvent, PoissonSampledEvent,
        SampledWithoutReplacementEvent, RandomScanEvent,
    )
}
