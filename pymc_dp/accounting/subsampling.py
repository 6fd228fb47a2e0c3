"""Privacy amplification by subsampling: the helper that makes the right ledger entry."""

from __future__ import annotations

from dataclasses import replace

from .amplification import amplified_epsilon
from .entry import LedgerEntry
from .validation import check_count, check_probability

__all__ = ["amplify_by_subsampling", "amplified_epsilon"]


def amplify_by_subsampling(
    base: LedgerEntry,
    *,
    sampling_probability: float | None = None,
    sample_size: int | None = None,
    population_size: int | None = None,
) -> LedgerEntry:
    """The entry for running ``base``'s mechanism on a random subsample of the records.

    Which subsampling is sound depends on the neighbouring relation of ``base``:

    * ``"replace"`` (N public): sample ``sample_size`` of the ``population_size``
      records uniformly *without replacement*;
    * ``"add_remove"``: keep each record independently with probability
      ``sampling_probability`` (Poisson sampling).

    The returned entry (a new id, mechanism ``"subsampled <mechanism>"``) has
    ε′ = ln(1 + q(e^ε − 1)) and δ′ = qδ, and wraps ``base.event`` so that the
    tight accountants can do better where dp-accounting supports the pair.
    Record it with :meth:`PrivacyLedger.record`.

    Raises
    ------
    ValueError
        If the arguments do not match the relation (e.g. a Poisson rate under
        ``"replace"``), or are out of range.
    """
    if not isinstance(base, LedgerEntry):
        raise ValueError(f"base must be a LedgerEntry, got {type(base).__name__}.")
    if base.neighbouring == "replace":
        if sampling_probability is not None or sample_size is None or population_size is None:
            raise ValueError(
                "under neighbouring='replace' subsampling must be without replacement: pass sample_size= and "
                "population_size= (Poisson sampling changes N, which replace-one assumes public)."
            )
        n = check_count(population_size, "population_size")
        m = check_count(sample_size, "sample_size")
        if m > n:
            raise ValueError(f"sample_size ({m}) cannot exceed population_size ({n}).")
        q = m / n
        event = None if base.event is None else {
            "type": "sampled_without_replacement", "source_dataset_size": n, "sample_size": m, "event": dict(base.event)
        }
        scheme = {"scheme": "without_replacement", "sample_size": m, "population_size": n}
    else:
        if sampling_probability is None or sample_size is not None or population_size is not None:
            raise ValueError("under neighbouring='add_remove' subsampling must be Poisson: pass sampling_probability= only.")
        q = check_probability(sampling_probability, "sampling_probability")
        event = None if base.event is None else {
            "type": "poisson_sampled", "sampling_probability": q, "event": dict(base.event)
        }
        scheme = {"scheme": "poisson", "sampling_probability": q}
    details = dict(base.details)
    details["subsampling"] = {**scheme, "base_epsilon": base.epsilon, "base_delta": base.delta}
    return replace(
        base,
        mechanism=f"subsampled {base.mechanism}",
        epsilon=amplified_epsilon(base.epsilon, q),
        delta=q * base.delta,
        event=event,
        details=details,
        id=LedgerEntry.__dataclass_fields__["id"].default_factory(),
        timestamp=LedgerEntry.__dataclass_fields__["timestamp"].default_factory(),
    )
