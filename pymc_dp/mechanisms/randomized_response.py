"""Randomised response: each record's answer is randomised on its own (local DP).

Theory (theory notes, section 2; Warner 1965): answering truthfully with
probability 1/2 and otherwise with a fair coin flip reports the truth with
probability 3/4 and a lie with probability 1/4, a ratio of 3: it is ln 3-DP.
In general, for k categories, reporting the truth with probability
``p = e^ε / (e^ε + k - 1)`` and otherwise one of the ``k - 1`` *other* categories
uniformly at random gives probability ratio ``p / ((1 - p)/(k - 1)) = e^ε``: ε-DP
for each respondent, whatever the others answer.

The raw answers are biased towards 1/k, but the true proportions are
recoverable: :func:`randomized_response_debias` inverts the known response matrix. The
mechanism's ε is exact and known, which also makes it a good unit-test mechanism
for accountants.
"""

from __future__ import annotations

import math
from fractions import Fraction
from numbers import Integral
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from ..accounting.validation import check_epsilon
from .noise import _check_touched, _require_ledger, resolve_noise_source

if TYPE_CHECKING:  # pragma: no cover
    from ..accounting import PrivacyLedger
    from .noise import NoiseSource

__all__ = ["randomized_response", "randomized_response_debias", "randomized_response_truth_probability"]

_LN3 = math.log(3)


def randomized_response_truth_probability(epsilon: float, num_categories: int = 2) -> float:
    """The probability ``p = e^ε / (e^ε + k - 1)`` of reporting the true category.

    Parameters
    ----------
    epsilon
        ε > 0.
    num_categories
        k ≥ 2 (2 for booleans).

    Returns
    -------
    float
        ``p`` as a double, rounded *down* if needed so that the exact ratio
        ``p (k - 1) / (1 - p)`` never exceeds ``e^ε`` (for ε = ln 3 and k = 2 it is
        exactly 0.75).

    Raises
    ------
    ValueError
        If ε is invalid, or so large that ``p`` rounds to 1 in double precision
        (ε above about 36 for k = 2), which would report the truth always; or so small
        that no double lies between 1/k and ``e^ε/(e^ε + k − 1)`` (ε below about 1e-16
        for most k ≥ 3), where a lie would be more likely than the truth.
    """
    eps = check_epsilon(epsilon, "epsilon")
    k = _check_k(num_categories, "num_categories")
    p = 1.0 / (1.0 + (k - 1) * math.exp(-eps))
    if not p < 1.0:
        raise ValueError(
            f"epsilon={eps:g} is too large for randomised response with {k} categories: the probability of "
            "the truth rounds to 1 in double precision, which is not private; use a smaller epsilon."
        )
    # A lower bound on e^ε: the libm exp is accurate to within one ulp, and e^ε ≥ 1.
    exp_lower = max(Fraction(math.nextafter(math.exp(eps), 0.0)), Fraction(1))
    while Fraction(p) * (k - 1) > exp_lower * (1 - Fraction(p)):
        p = math.nextafter(p, 0.0)
    # The ratio must also be ≥ 1 (p ≥ 1/k): below, a lie would be likelier than the truth and
    # the privacy loss |ln(p (k − 1)/(1 − p))| would exceed ε.
    if Fraction(p) * k < 1:
        raise ValueError(
            f"epsilon={eps:g} is too small for randomised response with {k} categories in double precision: "
            f"no probability of the truth lies between 1/{k} and e^ε/(e^ε + {k - 1}); use epsilon ≥ 1e-15."
        )
    return p


#: The most categories: category indices are int64, and k − 1 must be one too.
_MAX_CATEGORIES = 2**62


def _check_k(k: Any, name: str) -> int:
    if isinstance(k, bool) or not isinstance(k, (Integral, np.integer)) or not 2 <= int(k) <= _MAX_CATEGORIES:
        raise ValueError(f"{name} must be a whole number >= 2 (and at most 2**62), got {k!r}.")
    return int(k)


def _resolve_categories(categories: Any) -> tuple[int, list[Any] | None]:
    """(k, explicit category list or None). ``None`` means booleans (k = 2)."""
    if categories is None:
        return 2, None
    if isinstance(categories, (Integral, np.integer)) and not isinstance(categories, bool):
        return _check_k(categories, "categories"), None
    if isinstance(categories, (str, bytes)):
        raise ValueError("categories must be None (booleans), a number k >= 2, or a sequence of categories; got a string.")
    try:
        cats = list(categories)
    except TypeError:
        raise ValueError(f"categories must be None, an int k >= 2 or a sequence, got {categories!r}.") from None
    if len(cats) < 2:
        raise ValueError(f"categories must hold at least 2 categories, got {len(cats)}.")
    try:
        if len(set(cats)) != len(cats):
            raise ValueError("categories must be distinct.")
    except TypeError:
        raise ValueError("categories must be hashable (e.g. strings or numbers).") from None
    return len(cats), cats


def _encode(value: Any, categories: Any, name: str = "value") -> tuple[np.ndarray, int, Callable[[np.ndarray], Any]]:
    """Category indices of ``value``, k, and a function mapping indices back to values."""
    k, cats = _resolve_categories(categories)
    scalar = np.ndim(value) == 0
    python_scalar = scalar and isinstance(value, (bool, int, str))

    def finish(out: Any) -> Any:
        if scalar:
            out = out.reshape(())[()]
            if python_scalar and hasattr(out, "item"):
                out = out.item()
        return out

    if categories is None:
        arr = np.asarray(value)
        if arr.dtype.kind != "b":
            raise ValueError(
                f"{name} must be booleans when categories is None, got dtype {arr.dtype}; "
                "pass categories=k for values in range(k), or categories=[...] for named categories."
            )
        return arr.astype(np.int64), k, lambda idx: finish(idx.astype(bool))
    if cats is None:
        arr = np.asarray(value)
        if arr.dtype.kind not in "iu":
            raise ValueError(f"{name} must be integers in range({k}) when categories={k}, got dtype {arr.dtype}.")
        if arr.size and (arr.min() < 0 or arr.max() >= k):
            raise ValueError(f"{name} must lie in range({k}), got entries from {arr.min()} to {arr.max()}.")
        return arr.astype(np.int64), k, lambda idx: finish(idx)
    lookup = {c: i for i, c in enumerate(cats)}
    flat = [value] if scalar else np.asarray(value, dtype=object).ravel().tolist()
    try:
        idx_list = [lookup[v] for v in flat]
    except (KeyError, TypeError):
        bad = next(v for v in flat if not _member(v, lookup))
        raise ValueError(f"{name} holds {bad!r}, which is not one of the categories {cats!r}.") from None
    shape = () if scalar else np.shape(value)
    idx = np.asarray(idx_list, dtype=np.int64).reshape(shape)
    cat_arr = np.asarray(cats)
    if cat_arr.shape != (k,):
        cat_arr = np.empty(k, dtype=object)
        cat_arr[:] = cats

    def decode(out: np.ndarray) -> Any:
        if scalar:
            return cats[int(out.reshape(())[()])]
        return cat_arr[out]

    return idx, k, decode


def _member(v: Any, lookup: dict) -> bool:
    try:
        return v in lookup
    except TypeError:
        return False


def randomized_response(
    value: Any,
    *,
    epsilon: float = _LN3,
    ledger: "PrivacyLedger",
    categories: int | Sequence[Any] | None = None,
    rng: "None | int | np.random.Generator | NoiseSource" = None,
    touched: str = "",
    return_entry: bool = False,
) -> Any:
    """Randomise each answer in ``value`` independently (ε-DP for every respondent).

    Parameters
    ----------
    value
        One answer per record. With ``categories=None``: booleans (a ``bool`` or a
        boolean array). With ``categories=k``: integers in ``range(k)``. With
        ``categories=[c0, c1, ...]``: elements of that list.
    epsilon
        ε > 0; default ``ln 3``, for booleans exactly "tell the truth with
        probability 1/2, otherwise flip a fair coin" (truth with probability 3/4).
    ledger
        The :class:`~pymc_dp.accounting.PrivacyLedger` to charge. Required.
    categories
        ``None`` for booleans, an ``int`` k ≥ 2, or a sequence of k ≥ 2 distinct
        categories.
    rng
        ``None`` (default) for OpenDP's exact randomised response, an ``int`` seed or
        :class:`numpy.random.Generator` for reproducible seeded noise (the same ``int`` gives the same
        draw on every call; reuse one ``Generator`` for independent draws), or a
        :class:`~pymc_dp.mechanisms.NoiseSource`.
    touched
        What the release touched, e.g. ``"smoker"``; stored in the ledger entry.

    return_entry
        Also return the :class:`~pymc_dp.accounting.LedgerEntry` this release
        recorded, as ``(value, entry)``.
    Returns
    -------
    object
        The randomised answers, with the shape and kind of ``value`` (booleans,
        integers, or categories; a scalar for a scalar).

    Raises
    ------
    ValueError
        For an invalid argument (the message names it), including ``ledger=None``.
    pymc_dp.accounting.BudgetExceededError
        If the ledger's budget cannot afford ε; nothing is drawn or recorded then.

    Notes
    -----
    Each answer is the truth with probability ``p = e^ε/(e^ε + k - 1)``
    (:func:`randomized_response_truth_probability`) and otherwise a uniformly chosen
    *other* category. Every record is answered once and each answer depends on
    that record only, so replacing one record changes one answer's distribution by
    a factor of at most e^ε: the whole vector is ε-DP under replace-one, and one
    ledger entry with that ε is recorded (there is no sensitivity to declare).

    Under ``neighbouring="add_remove"`` the number of answers N is itself released
    exactly; the entry then lists the assumption that N is public.

    The entry has ``mechanism="randomized_response"``, ``delta=0`` and
    ``event={"type": "randomized_response", "noise_parameter": k(1 - p)/(k - 1),
    "num_buckets": k}``, dp-accounting's convention (with probability
    1 - noise_parameter the true bucket, otherwise a uniform one of all k);
    ``noise_parameter = k/(e^ε + k - 1)``.
    """
    eps = check_epsilon(epsilon, "epsilon")
    idx, k, decode = _encode(value, categories)
    touched = _check_touched(touched)
    ledger = _require_ledger(ledger)
    source = resolve_noise_source(rng)
    p = randomized_response_truth_probability(eps, k)

    assumptions: tuple[str, ...] = ()
    if getattr(ledger, "neighbouring", "replace") == "add_remove":
        assumptions = (
            "the number of answers N is public: randomised response hides each answer, not whether a record is present",
        )
    event = {"type": "randomized_response", "noise_parameter": k * (1.0 - p) / (k - 1), "num_buckets": k}
    details = {
        "sensitivity": 1,
        "scale": None,
        "truth_probability": p,
        "num_categories": k,
        "num_records": int(idx.size),
        "note": "sensitivity 1: one record changes only its own answer",
    }
    with ledger.charge(
        mechanism="randomized_response",
        epsilon=eps,
        delta=0.0,
        count=1,
        touched=touched,
        noise_source=source.name,
        assumptions=assumptions,
        parallel_group=None,
        event=event,
        details=details,
    ) as entry:
        out = source.randomized_response(idx, k, p)
    released = decode(np.asarray(out, dtype=np.int64))
    return (released, entry) if return_entry else released


def randomized_response_debias(
    responses: Any,
    *,
    epsilon: float = _LN3,
    categories: int | Sequence[Any] | None = None,
) -> Any:
    """Unbiased estimate of the true proportion(s) from randomised answers.

    Parameters
    ----------
    responses
        The output of :func:`randomized_response` (any shape; all entries are used).
    epsilon
        The ε the answers were randomised with.
    categories
        The same ``categories`` as passed to :func:`randomized_response`.

    Returns
    -------
    float or numpy.ndarray
        For booleans: the estimated proportion of ``True``. Otherwise a length-k array
        of estimated proportions in category order (it sums to 1).

    Notes
    -----
    With truth probability ``p`` and ``q = (1 - p)/(k - 1)`` for each other category,
    an observed frequency ``f_j`` has expectation ``q + (p - q) π_j``, so
    ``π̂_j = (f_j - q)/(p - q)`` is unbiased. For booleans (k = 2, ``q = 1 - p``) this is
    ``(f - (1 - p)) / (2p - 1)``. The estimate can fall outside [0, 1] for small
    samples; it is deliberately not clipped (clipping would bias it). Its variance
    is ``f_j (1 - f_j) / (N (p - q)²)`` for a sample of N answers.

    Raises
    ------
    ValueError
        For invalid ε or categories, an answer outside the categories, or no answers.
    """
    eps = check_epsilon(epsilon, "epsilon")
    idx, k, _ = _encode(responses, categories, "responses")
    if idx.size == 0:
        raise ValueError("responses must hold at least one answer.")
    p = randomized_response_truth_probability(eps, k)
    q = (1.0 - p) / (k - 1)
    if not p > q:
        raise ValueError(
            f"epsilon={eps:g} is so small that the answers carry no information in double precision "
            "(the truth is exactly as likely as each lie); there is nothing to debias."
        )
    freq = np.bincount(idx.ravel(), minlength=k) / idx.size
    est = (freq - q) / (p - q)
    if categories is None:
        return float(est[1])
    return est
