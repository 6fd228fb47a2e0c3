"""The one release path shared by the additive-noise mechanisms (Laplace, Gaussian, geometric)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Mapping

import numpy as np

from .noise import _restore_shape

#: A float release is refused if |value| + this many noise scales would overflow a double:
#: NumPy's Laplace draws never exceed ~37 scales, and Laplace or Gaussian noise beyond 40
#: scales has probability below e^-40.
_TAIL_SCALES = 40.0

if TYPE_CHECKING:  # pragma: no cover
    from ..accounting import PrivacyLedger
    from .noise import NoiseSource


def release_with_additive_noise(
    arr: np.ndarray,
    original: Any,
    *,
    mechanism: str,
    epsilon: float,
    delta: float,
    sensitivity: float,
    scale: float,
    event: Mapping[str, Any],
    details: Mapping[str, Any],
    ledger: "PrivacyLedger",
    source: "NoiseSource",
    touched: str,
    assumptions: tuple[str, ...] = (),
    add: Callable[[np.ndarray, float], np.ndarray],
    dtype: type,
    return_entry: bool = False,
) -> Any:
    """Charge ``ledger`` (budget reserved first), add the noise, restore the input's shape.

    Returns the noisy value, or ``(value, entry)`` with the recorded
    :class:`~pymc_dp.accounting.LedgerEntry` when ``return_entry``.

    A sensitivity of 0 draws nothing: the value is returned unchanged and the entry
    records the requested (ε, δ) with ``event=None`` and ``noise_source="none"``.
    """
    if sensitivity == 0:
        scale, event, noise_source = 0.0, None, "none"
    else:
        noise_source = source.name
    if dtype is float and arr.size:
        largest = float(np.max(np.abs(arr)))
        if largest + _TAIL_SCALES * scale > np.finfo(float).max:
            raise ValueError(
                f"value + noise would overflow double precision: |value| reaches {largest:g} and the noise scale "
                f"is {scale:g}; rescale the statistic (e.g. to other units) or use a larger epsilon."
            )
    with ledger.charge(
        mechanism=mechanism,
        epsilon=epsilon,
        delta=delta,
        touched=touched,
        noise_source=noise_source,
        assumptions=assumptions,
        event=event,
        details={"sensitivity": sensitivity, "scale": scale, **details, "size": int(arr.size)},
    ) as entry:
        noisy = arr.copy() if sensitivity == 0 else add(arr, scale)
    released = _restore_shape(np.asarray(noisy, dtype=dtype), original)
    return (released, entry) if return_entry else released
