"""Private release of a whole Dirichlet (or Beta) posterior, close in Hellinger distance.

Model: k ≥ 2 categories, prior ``Dir(α)``, n records with counts ``x`` (``Σx = n``,
n public), posterior ``Dir(α + x)``. Each mechanism releases a Dirichlet ``Dir(α + c)``
that should be close to the posterior in Hellinger distance ``H`` (theory notes §8,
[H-DIST]). Neighbouring data sets replace one record: ``x′ = x − eᵢ + eⱼ``.

The mechanisms (``mechanism=``):

* ``"lsdim"`` (ε-DP): Laplace(k/ε) on each of the first k − 1 counts, floored and
  clamped to [0, n]; the last count is n minus the others, clamped.
* ``"lshist"`` (ε-DP): the same with scale k′/ε, k′ = 1 for k = 2 and 2 otherwise.
* ``"ehd"`` (ε-DP): exponential mechanism over the candidates
  ``R_α = {α + c : Σc = n}``, utility −H(posterior, candidate), global sensitivity GS.
* ``"ehds"`` (ε-DP for γ ≤ 1): the same, ``P ∝ exp(−ε H / (4 S(x)))`` with the
  γ-smooth bound S(x).
* ``"ehdl"`` (**NOT private**): the same, ``P ∝ exp(−ε H / (2 LS(x)))`` with the
  data's own local sensitivity; a benchmark only.

Sensitivities (all exact: closed forms over tables, no sampling)
-----------------------------------------------------------------
Moving one record from category i to j changes two components by one, and the
totals stay equal, so (module :mod:`~pymc_dp.mechanisms.hellinger_distance`)::

    log BC(α + x, α + x − eᵢ + eⱼ) = Uᵢ(xᵢ − 1) + Uⱼ(xⱼ),
    U_l(c) = D(α_l + c + ½, ½) = lnΓ(α_l + c + ½) − ½ lnΓ(α_l + c) − ½ lnΓ(α_l + c + 1),

the midpoint defect of lnΓ over one step. ``U_l(c) < 0`` increases with c (its size is
half the second difference of lnΓ, whose second derivative ψ′ decreases), so the
nearer a component is to zero, the further one record moves the posterior.

* **Local sensitivity** ``LS(x) = max_{x′ ~ x} H(post(x), post(x′))
  = sqrt(−expm1(min_{i ≠ j, xᵢ ≥ 1} [Uᵢ(xᵢ − 1) + Uⱼ(xⱼ)]))``.
* **Global sensitivity** of the utility ``u(x, r) = −H(post(x), r)``:
  ``GS = max_{x ~ x′} max_r |H(post(x), r) − H(post(x′), r)| = max_{x ~ x′} H(post(x), post(x′))``
  (≤ by the triangle inequality, = at ``r = post(x′)``, which is a candidate). With
  U increasing, for k ≥ 3 the maximum is at ``xᵢ = 1, xⱼ = 0`` (the other n − 1 records
  elsewhere): ``GS = sqrt(−expm1(min_{i≠j} [Uᵢ(0) + Uⱼ(0)]))``; for k = 2,
  ``xⱼ = n − xᵢ`` and the minimum over ``xᵢ ∈ 1..n`` is taken over the table.
* **Smooth sensitivity** ``S(x) = max_{x′ ∈ R} 1 / (1/LS(x′) + γ d(x, x′))``,
  ``d(x, x′) = ½‖x − x′‖₁`` (records that must change), by enumeration of R with LS
  from the table. ``1/S`` is γ-Lipschitz in d and ``S ≥ LS``.

Why each is ε-DP. EHD: the exponent moves by at most ε/2 between neighbours and so
does the log normaliser. EHDS: ``|H(x, r)/S(x) − H(x′, r)/S(x′)| ≤ H·|1/S(x) − 1/S(x′)| +
|H(x, r) − H(x′, r)|/S(x′) ≤ γ + 1`` (H ≤ 1, ``|H(x, r) − H(x′, r)| ≤ H(x, x′) ≤ LS(x′) ≤ S(x′)``),
so the exponent ``εH/(4S)`` moves by at most ε(1 + γ)/4 and the privacy loss is at most
ε(1 + γ)/2 ≤ ε for γ ≤ 1. LSDim/LSHist: post-processing of the Laplace mechanism on the
first k − 1 counts, whose L1 sensitivity is 1 (k = 2) or 2 (k ≥ 3). EHDL uses the local
sensitivity of the data itself as its scale, which is data-dependent and not private.
The test suite checks every private one by the exact privacy loss between neighbours.

Cost. The exponential-mechanism releases score every candidate (vectorised, in blocks
of 2²⁰, log space) and sample by a two-stage Gumbel-max (a block with probability ∝ its
total weight, then a candidate in it), so memory stays bounded; see the docs for the
largest (n, k) each handles in a second.
"""

from __future__ import annotations

from functools import lru_cache
from math import comb
from typing import TYPE_CHECKING, Any, Iterator, NamedTuple

import numpy as np
from scipy import special

from ..accounting import LedgerEntry, PrivacyLedger
from ..accounting.ledger import resolve_ledger
from ..accounting.validation import CONVERT_EXPLICITLY, check_epsilon, check_numeric_array, describe_non_number
from ._compositions import BLOCK_ROWS, composition_blocks, compositions, num_compositions
from .hellinger_distance import hellinger_from_log_bc, midpoint_defect
from .noise import _check_touched, _scale_for, resolve_noise_source

if TYPE_CHECKING:  # pragma: no cover
    from .noise import NoiseSource

__all__ = [
    "MECHANISMS",
    "PRIVATE_MECHANISMS",
    "MAX_CANDIDATES",
    "PosteriorRelease",
    "OutputDistribution",
    "release_posterior",
    "output_distribution",
    "privacy_loss",
    "neighbours",
    "global_sensitivity",
    "local_sensitivity",
    "smooth_sensitivity",
    "laplace_scale",
]

#: Every mechanism name, in the order of the theory notes.
MECHANISMS = ("lsdim", "lshist", "ehd", "ehds", "ehdl")
#: The differentially private ones (EHDL is a non-private benchmark).
PRIVATE_MECHANISMS = ("lsdim", "lshist", "ehd", "ehds")
#: The most candidates (or, for ``output_distribution`` of lsdim/lshist, outputs) enumerated.
MAX_CANDIDATES = 50_000_000

_NOT_PRIVATE = (
    "EHDL is NOT differentially private: its scale is the local sensitivity of the data itself. "
    "It exists as an accuracy benchmark only."
)


class PosteriorRelease(NamedTuple):
    """What :func:`release_posterior` returns.

    Attributes
    ----------
    alpha
        The released Dirichlet parameters ``α + c`` (float array of length k).
    entry
        The ledger entry that paid for it, or ``None`` for the non-private EHDL.
    """

    alpha: np.ndarray
    entry: LedgerEntry | None


class OutputDistribution(NamedTuple):
    """The exact distribution of a mechanism's output for one data set.

    Attributes
    ----------
    alphas
        Every possible released Dirichlet, one per row (``(m, k)``), in an order that
        depends only on the prior, n and the mechanism, never on the data: two data
        sets' distributions are aligned row by row.
    log_probabilities
        ``log P(output)`` for each row (accurate far into the tails).
    """

    alphas: np.ndarray
    log_probabilities: np.ndarray

    @property
    def probabilities(self) -> np.ndarray:
        """``P(output)`` for each row (sums to 1)."""
        return np.exp(self.log_probabilities)


# --------------------------------------------------------------------------- arguments


def _check_mechanism(mechanism: Any) -> str:
    if not isinstance(mechanism, str) or mechanism.lower() not in MECHANISMS:
        raise ValueError(f"mechanism must be one of {MECHANISMS}, got {mechanism!r}.")
    return mechanism.lower()


def _check_counts(counts: Any) -> np.ndarray:
    try:
        arr = np.asarray(counts)
    except Exception:  # noqa: BLE001 - anything NumPy cannot read
        raise TypeError(f"counts must be an array of category counts, got {type(counts).__name__}.") from None
    if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        raise TypeError(f"counts must be integers (one count per category), got dtype {arr.dtype}.")
    if arr.ndim != 1 or arr.size < 2:
        raise ValueError(f"counts must be a 1-D array of at least 2 category counts (k = 2 is Beta-Binomial), got shape {arr.shape}.")
    if np.issubdtype(arr.dtype, np.floating):
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            raise ValueError(f"counts must be whole numbers of records, got {arr!r}.")
        if np.any(np.abs(arr.astype(float)) > 2**53):  # as float64: 2**53 overflows a float16
            raise ValueError("counts above 2**53 cannot be represented exactly; they overflow the count type.")
    out = arr.astype(np.int64)
    if np.any(out < 0):
        raise ValueError(f"counts must be >= 0, got {arr!r}.")
    total = int(sum(int(c) for c in out))  # Python ints: no silent int64 overflow
    if total > 2**53:
        raise ValueError(f"the counts sum to {total}, beyond what a float posterior parameter holds exactly (2**53).")
    if total == 0:
        raise ValueError(
            "counts sum to 0: with no records there is nothing to release (the posterior is the prior, "
            "public already)."
        )
    return out


def _check_prior(prior: Any, k: int) -> np.ndarray:
    try:
        # strings, booleans, None and complex values are refused, never converted
        arr = check_numeric_array(prior, "prior", allow_bool=False).astype(float)
    except ValueError as err:
        if "double range" in str(err):  # an int beyond the double range
            raise ValueError(f"prior parameters must be finite and > 0, got {prior!r}.") from None
        raise TypeError(f"prior must be the Dirichlet prior's parameters (numbers): {err}") from None
    if arr.ndim == 0:
        arr = np.full(k, float(arr))
    if arr.shape != (k,):
        raise ValueError(f"prior must have one parameter per category (shape ({k},)) or be a scalar, got shape {arr.shape}.")
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"prior parameters must be finite and > 0, got {arr!r}.")
    return arr


def _check_gamma(gamma: Any) -> float:
    if describe_non_number(gamma) is not None:  # strings and booleans are refused, never converted
        raise TypeError(f"gamma must be a number in (0, 1], got {describe_non_number(gamma)}. {CONVERT_EXPLICITLY}")
    try:
        g = float(gamma)
    except OverflowError:  # an int beyond the double range
        g = np.inf
    except (TypeError, ValueError):
        raise TypeError(f"gamma must be a number in (0, 1], got {gamma!r}.") from None
    if not (np.isfinite(g) and 0 < g <= 1):
        raise ValueError(
            f"gamma must be in (0, 1], got {gamma!r}: EHDS's proof bounds the privacy loss by ε(1 + γ)/2, "
            "which is ε only for γ <= 1 (γ = 1 is the usual choice)."
        )
    return g


def _check_candidates(n: int, k: int, what: str) -> None:
    count = num_compositions(n, k)
    if count > MAX_CANDIDATES:
        raise ValueError(
            f"{what} would enumerate {count:,} count vectors (n = {n}, k = {k}), more than {MAX_CANDIDATES:,}: "
            "the exponential-mechanism releases score every candidate posterior. Use mechanism='lshist' "
            "(cost independent of n) for data this size."
        )


# --------------------------------------------------------------------------- sensitivities


@lru_cache(maxsize=16)
def _step_defects(prior: tuple[float, ...], n: int) -> np.ndarray:
    """``U[l, c] = D(α_l + c + ½, ½)`` for c = 0..n−1: log BC of one record added to / removed from category l."""
    a = np.asarray(prior)[:, None] + np.arange(n)[None, :]
    table = midpoint_defect(a + 0.5, np.full(a.shape, 0.5), a + 1.0, a)
    table.setflags(write=False)
    return table


def _min_move_log_bc(rows: np.ndarray, table: np.ndarray) -> np.ndarray:
    """``min_{i≠j, xᵢ ≥ 1} Uᵢ(xᵢ − 1) + Uⱼ(xⱼ)`` for each count vector (row); +inf if none moves."""
    k = rows.shape[1]
    n = table.shape[1]
    cols = np.arange(k)
    take = np.where(rows >= 1, table[cols, np.clip(rows - 1, 0, n - 1)], np.inf)  # remove one from i
    give = np.where(rows <= n - 1, table[cols, np.clip(rows, 0, n - 1)], np.inf)  # add one to j
    best = np.full(rows.shape[0], np.inf)
    for i in range(k):
        for j in range(k):
            if i != j:
                np.minimum(best, take[:, i] + give[:, j], out=best)
    return best


def _local_sensitivities(rows: np.ndarray, prior: np.ndarray, n: int) -> np.ndarray:
    return hellinger_from_log_bc(_min_move_log_bc(rows, _step_defects(tuple(prior), n)))


def local_sensitivity(counts: Any, prior: Any) -> float:
    """``LS(x) = max_{x′ ~ x} H(Dir(α + x), Dir(α + x′))``, exactly (formula in the module docstring).

    Data-dependent: computing it is not private, and :func:`release_posterior` never records it.
    """
    x = _check_counts(counts)
    a = _check_prior(prior, x.size)
    return float(_local_sensitivities(x[None, :], a, int(x.sum()))[0])


def global_sensitivity(prior: Any, n: int, k: int | None = None) -> float:
    """EHD's utility sensitivity ``GS = max_{x ~ x′} H(Dir(α + x), Dir(α + x′))`` over all data sets of n records.

    ``prior`` lists one parameter per category; a single number is a symmetric prior
    and then needs ``k``, the number of categories.

    Public (a function of the prior and n only). Exact: for k ≥ 3,
    ``sqrt(−expm1(min_{i≠j} Uᵢ(0) + Uⱼ(0)))``; for k = 2 the minimum of
    ``U₀(c − 1) + U₁(n − c)`` and ``U₁(c − 1) + U₀(n − c)`` over c = 1..n (module docstring).
    """
    n = _check_n(n)
    a = np.asarray(prior, dtype=float)
    if a.ndim == 0 and k is None:
        raise ValueError("a scalar prior needs k, the number of categories: global_sensitivity(1.0, n, k=3).")
    a = _check_prior(a, int(k) if k is not None else a.size)
    table = _step_defects(tuple(a), n)
    k = a.size
    if k == 2:
        c = np.arange(1, n + 1)
        best = min(np.min(table[0, c - 1] + table[1, n - c]), np.min(table[1, c - 1] + table[0, n - c]))
    else:
        first = table[:, 0]
        best = min(first[i] + first[j] for i in range(k) for j in range(k) if i != j)
    return float(hellinger_from_log_bc(best))


def _check_n(n: Any) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive whole number of records, got {n!r}.")
    return int(n)


@lru_cache(maxsize=4)
def _all_local_sensitivities(prior: tuple[float, ...], n: int) -> np.ndarray:
    """LS of every candidate count vector, in enumeration order (cached: it does not depend on the data)."""
    a = np.asarray(prior)
    out = np.concatenate([_local_sensitivities(rows, a, n) for rows in composition_blocks(n, a.size)])
    out.setflags(write=False)
    return out


def _cacheable(n: int, k: int) -> bool:
    return num_compositions(n, k) <= 4 * BLOCK_ROWS


def smooth_sensitivity(counts: Any, prior: Any, gamma: float = 1.0) -> float:
    """EHDS's ``S(x) = max_{x′} 1 / (1/LS(x′) + γ d(x, x′))``, exactly, over every data set x′ of n records.

    ``d(x, x′) = ½‖x − x′‖₁`` is the number of records that must change. Data-dependent
    (never recorded by :func:`release_posterior`).
    """
    x = _check_counts(counts)
    a = _check_prior(prior, x.size)
    g = _check_gamma(gamma)
    n = int(x.sum())
    _check_candidates(n, x.size, "the smooth sensitivity")
    return _smooth_sensitivity(x, a, n, g)


def _smooth_sensitivity(x: np.ndarray, prior: np.ndarray, n: int, gamma: float) -> float:
    k = x.size
    best = 0.0
    if _cacheable(n, k):
        ls_all = _all_local_sensitivities(tuple(prior), n)
        offset = 0
        for rows in composition_blocks(n, k):
            ls = ls_all[offset : offset + rows.shape[0]]
            offset += rows.shape[0]
            best = max(best, _smooth_block(rows, ls, x, gamma))
    else:
        for rows in composition_blocks(n, k):
            best = max(best, _smooth_block(rows, _local_sensitivities(rows, prior, n), x, gamma))
    return best


def _smooth_block(rows: np.ndarray, ls: np.ndarray, x: np.ndarray, gamma: float) -> float:
    d = 0.5 * np.abs(rows - x[None, :]).sum(axis=1)
    with np.errstate(divide="ignore"):
        return float(np.max(1.0 / (1.0 / ls + gamma * d)))


# --------------------------------------------------------------------------- scores and scales


def laplace_scale(mechanism: str, k: int, epsilon: float) -> float:
    """The Laplace scale of ``lsdim`` (k/ε) or ``lshist`` (k′/ε, k′ = 1 if k = 2 else 2), rounded up."""
    mech = _check_mechanism(mechanism)
    eps = check_epsilon(epsilon, "epsilon")
    if mech == "lsdim":
        return _scale_for(float(k), eps)
    if mech == "lshist":
        return _scale_for(1.0 if k == 2 else 2.0, eps)
    raise ValueError(f"laplace_scale is for 'lsdim' and 'lshist', not {mech!r}.")


def _l1_sensitivity(k: int) -> float:
    """L1 sensitivity of the first k − 1 counts under replace-one: 1 for k = 2, else 2."""
    return 1.0 if k == 2 else 2.0


def _exponential_scale(mech: str, x: np.ndarray, prior: np.ndarray, epsilon: float, gamma: float) -> float:
    """b with ``P(r) ∝ exp(−H(post, r) / b)``: 2GS/ε (ehd), 4S(x)/ε (ehds), 2LS(x)/ε (ehdl)."""
    n = int(x.sum())
    if mech == "ehd":
        return _scale_for(2.0 * global_sensitivity(prior, n), epsilon)
    if mech == "ehds":
        return _scale_for(4.0 * _smooth_sensitivity(x, prior, n, gamma), epsilon)
    return _scale_for(2.0 * float(_local_sensitivities(x[None, :], prior, n)[0]), epsilon)


def _defect_tables(x: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """``T[l, c] = D(α_l + (x_l + c)/2, (x_l − c)/2)`` for c = 0..n: component l's term of ``log BC(post, α + c)``.

    Posterior and candidates have the same total, so ``log BC`` has no total term and
    is ``Σ_l T[l, c_l]``: k tables of n + 1 values serve every candidate.
    """
    n = int(x.sum())
    c = np.arange(n + 1)[None, :]
    return midpoint_defect(
        prior[:, None] + 0.5 * (x[:, None] + c), 0.5 * (x[:, None] - c), prior[:, None] + x[:, None], prior[:, None] + c
    )


def _candidate_distances(rows: np.ndarray, tables: np.ndarray) -> np.ndarray:
    """``H(Dir(α + x), Dir(α + c))`` for each candidate row c, from :func:`_defect_tables`."""
    log_bc = np.zeros(rows.shape[0])
    for l in range(rows.shape[1]):
        log_bc += tables[l, rows[:, l]]
    return hellinger_from_log_bc(log_bc)


#: Log weights below this are 0 in double precision either way; held at it (not −inf, which
#: the noisy max refuses) when −H/b overflows for a tiny scale b. The exact posterior is a
#: candidate with H = 0, so some score is always 0 and the floor never decides anything.
_SCORE_FLOOR = -1e300


def _candidate_scores(x: np.ndarray, prior: np.ndarray, scale: float) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """``(rows, −H/b)`` per block of candidates."""
    tables = _defect_tables(x, prior)
    for rows in composition_blocks(int(x.sum()), x.size):
        with np.errstate(over="ignore"):
            scores = -_candidate_distances(rows, tables) / scale
        yield rows, np.maximum(scores, _SCORE_FLOOR)


# --------------------------------------------------------------------------- output distributions


def _floor_laplace_log_pmf(value: np.ndarray, out: np.ndarray, n: int, scale: float) -> np.ndarray:
    """``log P(clamp(⌊value + Laplace(scale)⌋, 0, n) = out)``, elementwise, in closed form."""
    value = np.asarray(value, dtype=float)
    out = np.asarray(out, dtype=float)
    log_half = np.log(0.5)
    log_cell = log_half + np.log(-np.expm1(-1.0 / scale))  # P(L ∈ [t, t + 1)) = ½ e^{−t/b}(1 − e^{−1/b}), t ≥ 0
    above = np.where(out >= value, log_cell - (out - value) / scale, log_half + np.log(-np.expm1(-1.0 / scale)) + (out + 1 - value) / scale)
    # out = 0 collects P(value + L < 1); out = n collects P(value + L ≥ n).
    low = np.where(value >= 1, log_half + (1 - value) / scale, np.log1p(-0.5 * np.exp(-np.maximum(1 - value, 0) / scale)))
    high = log_half - (n - value) / scale
    result = np.where(out == 0, low, np.where(out == n, high, above))
    if n == 0:  # pragma: no cover - n >= 1 is checked
        result = np.zeros_like(result)
    return result


def _laplace_output_distribution(x: np.ndarray, prior: np.ndarray, scale: float) -> OutputDistribution:
    k = x.size
    n = int(x.sum())
    size = (n + 1) ** (k - 1)
    if size > MAX_CANDIDATES:
        raise ValueError(
            f"the output distribution has {size:,} outputs (n = {n}, k = {k}), more than {MAX_CANDIDATES:,}; "
            "it cannot be enumerated."
        )
    grid = np.arange(n + 1)
    per = [_floor_laplace_log_pmf(np.full(n + 1, x[i]), grid, n, scale) for i in range(k - 1)]
    mesh = np.stack(np.meshgrid(*([grid] * (k - 1)), indexing="ij"), axis=-1).reshape(-1, k - 1)
    logp = np.zeros(mesh.shape[0])
    for i in range(k - 1):
        logp += per[i][mesh[:, i]]
    last = np.clip(n - mesh.sum(axis=1), 0, n)
    alphas = prior[None, :] + np.hstack([mesh, last[:, None]])
    return OutputDistribution(alphas, logp)


def _exponential_output_distribution(x: np.ndarray, prior: np.ndarray, scale: float) -> OutputDistribution:
    n = int(x.sum())
    rows = compositions(n, x.size)
    scores = -_candidate_distances(rows, _defect_tables(x, prior)) / scale
    return OutputDistribution(prior[None, :] + rows, scores - special.logsumexp(scores))


def output_distribution(
    counts: Any,
    prior: Any,
    epsilon: float,
    mechanism: str = "lshist",
    *,
    gamma: float = 1.0,
) -> OutputDistribution:
    """The exact probability of every output of ``mechanism`` on the data ``counts``.

    No noise is drawn and nothing is charged: this is for accuracy tables (the exact
    distribution of the Hellinger error) and for the actual privacy loss between
    neighbouring data sets (:func:`privacy_loss`). It reads the data, so its result is
    not a release.

    Parameters
    ----------
    counts, prior, epsilon, mechanism, gamma
        As for :func:`release_posterior`. ``"ehdl"`` is allowed here (its output
        distribution is what shows it is not private).

    Returns
    -------
    OutputDistribution
        ``alphas`` (every possible released Dirichlet, one per row, in a data-independent
        order) and ``log_probabilities``. For ``lsdim``/``lshist`` the outputs are the
        ``(n + 1)^(k − 1)`` values of the first k − 1 released counts (the last one
        follows); for the exponential mechanisms, the ``C(n + k − 1, k − 1)`` candidates.
    """
    mech = _check_mechanism(mechanism)
    x = _check_counts(counts)
    a = _check_prior(prior, x.size)
    eps = check_epsilon(epsilon, "epsilon")
    g = _check_gamma(gamma)
    if mech in ("lsdim", "lshist"):
        return _laplace_output_distribution(x, a, laplace_scale(mech, x.size, eps))
    _check_candidates(int(x.sum()), x.size, f"mechanism={mech!r}")
    return _exponential_output_distribution(x, a, _exponential_scale(mech, x, a, eps, g))


def neighbours(counts: Any) -> np.ndarray:
    """Every count vector one replaced record away from ``counts``: ``x − eᵢ + eⱼ``, i ≠ j, xᵢ ≥ 1 (one per row)."""
    x = _check_counts(counts)
    k = x.size
    out = [x - np.eye(k, dtype=np.int64)[i] + np.eye(k, dtype=np.int64)[j] for i in range(k) for j in range(k) if i != j and x[i] >= 1]
    return np.asarray(out, dtype=np.int64)


def privacy_loss(
    counts: Any,
    other: Any,
    prior: Any,
    epsilon: float,
    mechanism: str,
    *,
    gamma: float = 1.0,
) -> float:
    """The actual privacy loss ``max_out |log P(out | x) − log P(out | x′)|`` between two data sets.

    Computed from the two exact output distributions (:func:`output_distribution`).
    For neighbouring data sets (one record replaced) an ε-DP mechanism gives at most ε.
    """
    x, y = _check_counts(counts), _check_counts(other)
    if x.size != y.size or x.sum() != y.sum():
        raise ValueError("counts and other must have the same number of categories and of records (n is public).")
    p = output_distribution(x, prior, epsilon, mechanism, gamma=gamma)
    q = output_distribution(y, prior, epsilon, mechanism, gamma=gamma)
    return float(np.max(np.abs(p.log_probabilities - q.log_probabilities)))


# --------------------------------------------------------------------------- release


def _sample_exponential(x: np.ndarray, prior: np.ndarray, scale: float, source: "NoiseSource") -> np.ndarray:
    """One candidate count vector with ``P(c) ∝ exp(−H(post, α + c) / scale)``: two-stage Gumbel-max over blocks."""
    blocks = list(_candidate_scores(x, prior, scale))
    if len(blocks) == 1:
        rows, scores = blocks[0]
    else:
        # P(block) ∝ Σ_{r ∈ block} exp(s_r): a block's log total weight, in the units of the scores.
        weights = np.array([special.logsumexp(s) for _, s in blocks])
        rows, scores = blocks[source.gumbel_argmax(weights, 1.0)]
    return rows[source.gumbel_argmax(scores, 1.0)]


def _sample_laplace(x: np.ndarray, scale: float, source: "NoiseSource") -> np.ndarray:
    n = int(x.sum())
    noisy = source.add_laplace(x[:-1].astype(float), scale)
    first = np.clip(np.floor(noisy), 0, n).astype(np.int64)
    last = np.clip(n - first.sum(), 0, n)
    return np.append(first, last)


def release_posterior(
    counts: Any,
    prior: Any,
    epsilon: float,
    mechanism: str = "lshist",
    *,
    ledger: PrivacyLedger | None = None,
    rng: "None | int | np.random.Generator | NoiseSource" = None,
    gamma: float = 1.0,
    allow_nonprivate: bool = False,
    touched: str = "counts",
) -> PosteriorRelease:
    """Release a Dirichlet posterior ``Dir(α + c)`` close in Hellinger distance to ``Dir(α + counts)``, ε-DP.

    Parameters
    ----------
    counts
        The data: one count per category (k ≥ 2; k = 2 is Beta-Binomial), whole
        numbers ≥ 0, at least one record. Their total n is treated as public.
    prior
        The Dirichlet prior ``α`` (k positive numbers, or one number for a symmetric prior).
    epsilon
        ε > 0 spent by the release.
    mechanism
        ``"lshist"`` (default), ``"lsdim"``, ``"ehd"``, ``"ehds"`` or ``"ehdl"`` (not
        private); see :mod:`pymc_dp.mechanisms.hellinger_mechanisms`.
    ledger
        The :class:`~pymc_dp.accounting.PrivacyLedger` to charge (budget checked before
        any noise is drawn); ``None`` records the entry in a new ledger, returned in
        the result's ``entry``. Must be ``None`` for ``"ehdl"``.
    rng
        ``None`` (default) for OpenDP's exact samplers (Laplace noise; Gumbel
        report-noisy-max for the exponential mechanisms), an ``int`` seed or a
        :class:`numpy.random.Generator` for reproducible seeded noise (not for
        publication), or a :class:`~pymc_dp.mechanisms.NoiseSource`.
    gamma
        EHDS's smoothness γ ∈ (0, 1]; ε-DP needs γ ≤ 1 (module docstring). Ignored by
        the other mechanisms.
    allow_nonprivate
        Must be ``True`` to run ``"ehdl"``, which is **not** differentially private
        (its scale is the data's own local sensitivity): a benchmark of what the
        exponential mechanism could do if that were free. Its release is recorded
        nowhere, ``entry`` is ``None``, and it must never be published.
    touched
        What the release touched; stored in the ledger entry.

    Returns
    -------
    PosteriorRelease
        ``alpha`` (the released Dirichlet parameters) and ``entry`` (the ledger entry;
        ``None`` for EHDL).

    Raises
    ------
    ValueError
        For an invalid argument (the message names it); ``"ehdl"`` without
        ``allow_nonprivate=True`` or with a ledger; a candidate set too large to enumerate.
    TypeError
        For counts or a prior that are not numbers.
    pymc_dp.accounting.BudgetExceededError
        If the ledger cannot afford ε; nothing is drawn or recorded then.

    Notes
    -----
    The ledger entry has ``mechanism="posterior_release:<name>"``, ``delta=0``, and
    ``details`` with n, k, the prior and the public scale where there is one (LSDim,
    LSHist: the Laplace scale, with a ``laplace`` event for the tight accountants;
    EHD: GS and its scale). EHDS's smooth sensitivity and scale depend on the data
    and are not recorded.

    Examples
    --------
    >>> import pymc_dp as pmdp
    >>> release = pmdp.release_posterior([30, 70], prior=[1, 1], epsilon=1.0, mechanism="lshist", rng=0)
    >>> release.alpha.shape, release.entry.epsilon
    ((2,), 1.0)
    """
    mech = _check_mechanism(mechanism)
    x = _check_counts(counts)
    a = _check_prior(prior, x.size)
    eps = check_epsilon(epsilon, "epsilon")
    g = _check_gamma(gamma)
    touched = _check_touched(touched)
    if not isinstance(allow_nonprivate, (bool, np.bool_)):
        raise ValueError(f"allow_nonprivate must be True or False, got {allow_nonprivate!r}.")
    source = resolve_noise_source(rng)
    n, k = int(x.sum()), x.size
    if mech == "ehdl":
        if not allow_nonprivate:
            raise ValueError(f"{_NOT_PRIVATE} Pass allow_nonprivate=True to run it anyway, for comparison.")
        if ledger is not None:
            raise ValueError(
                f"{_NOT_PRIVATE} A privacy ledger cannot account for it: call without ledger= (nothing is recorded)."
            )
        _check_candidates(n, k, "mechanism='ehdl'")
        c = _sample_exponential(x, a, _exponential_scale(mech, x, a, eps, g), source)
        return PosteriorRelease(a + c, None)
    led = resolve_ledger(ledger, None)
    details: dict[str, Any] = {"n": n, "k": k, "prior": [float(v) for v in a]}
    event = None
    if mech in ("lsdim", "lshist"):
        scale = laplace_scale(mech, k, eps)
        sens = _l1_sensitivity(k)
        details.update({"scale": scale, "l1_sensitivity": sens})
        event = {"type": "laplace", "noise_multiplier": scale / sens}
    else:
        _check_candidates(n, k, f"mechanism={mech!r}")
        details["num_candidates"] = comb(n + k - 1, k - 1)
        if mech == "ehd":
            gs = global_sensitivity(a, n)
            details.update({"global_sensitivity": gs, "scale": _scale_for(2.0 * gs, eps)})
        else:
            details["gamma"] = g
    with led.charge(
        mechanism=f"posterior_release:{mech}",
        epsilon=eps,
        delta=0.0,
        count=1,
        touched=touched,
        noise_source=source.name,
        assumptions=("n (the number of records) is public",),
        parallel_group=None,
        event=event,
        details=details,
    ) as entry:
        if mech in ("lsdim", "lshist"):
            c = _sample_laplace(x, details["scale"], source)
        else:
            c = _sample_exponential(x, a, _exponential_scale(mech, x, a, eps, g), source)
    return PosteriorRelease(a + c, entry)
