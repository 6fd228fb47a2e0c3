"""The Hellinger distance between Dirichlet (and Beta) distributions, computed in log space.

For Dirichlet distributions with parameters ``a`` and ``b`` (k ≥ 2 components)::

    H(Dir(a), Dir(b))² = 1 − BC,   BC = B((a + b)/2) / sqrt(B(a) B(b)),

``B`` the multivariate beta function, ``log B(a) = Σᵢ lnΓ(aᵢ) − lnΓ(Σᵢ aᵢ)`` and BC the
Bhattacharyya coefficient. Writing ``m = (a + b)/2`` and ``h = (a − b)/2``::

    log BC = Σᵢ D(mᵢ, hᵢ) − D(Σm, Σh),   D(m, h) = lnΓ(m) − ½ lnΓ(m + h) − ½ lnΓ(m − h),

and ``H = sqrt(−expm1(log BC))``. Each term ``D`` is a midpoint defect of the convex
function lnΓ (so ``D ≤ 0``, and ``log BC ≤ 0``).

Accuracy. Computed as written, ``D`` loses everything when ``h ≪ m``: at m = 10⁷ the
three lnΓ values are about 1.5·10⁸, so their difference carries an absolute error of
about 10⁻⁸ while ``D`` itself may be 10⁻¹⁵. For ``|h| ≤ m/10`` the defect is therefore
summed from its Taylor series in ``h``::

    D(m, h) = −Σ_{j≥1} h^{2j} ψ^{(2j−1)}(m) / (2j)!

(ψ^{(n)} the polygamma functions; the series converges for ``|h| < m``, the distance
to lnΓ's pole, and at ``|h| ≤ m/10`` its terms fall by a factor of at least 100 each,
so 10 terms reach double precision). Above ``m/10`` the direct form is accurate to a
few units in the last place of ``|D|``, which is then at least of order ``m/200``.
``expm1`` keeps ``H`` accurate when ``log BC`` is tiny.

When the two totals ``Σa`` and ``Σb`` are equal (two posteriors from the same number of
records, as for every candidate of the exponential-mechanism releases) the total term
vanishes and the result is accurate to about 10⁻¹² relative. When they differ,
``Σ D(mᵢ, hᵢ)`` and ``D(Σm, Σh)`` can be large and nearly cancel (``Beta(10⁷, 10⁻³)``
against ``Beta(2·10⁷, 10⁻³)``: both about −8·10⁵, their difference −6·10⁻⁵). Then the
stick-breaking form is used where its rounding error is smaller: ``Dir(a)`` is the law
of independent ``Beta(aᵢ, Σ_{l>i} a_l)`` fractions, so ``log BC`` is a sum of Beta
terms ``log B(mᵢ, Σ_{l>i} m_l) − ½ log B(aᵢ, Σ_{l>i} a_l) − ½ log B(bᵢ, Σ_{l>i} b_l)``,
and each ``log B(p, q) = lnΓ(s) − [lnΓ(l + s) − lnΓ(l)]`` (``s`` the smaller argument)
is evaluated without forming a large lnΓ value: the lnΓ(s) terms as a midpoint
defect, the bracket from its series ``Σ_j s^j ψ^{(j−1)}(l)/j!`` when ``s ≤ l/10``.
Against 60-digit ``mpmath`` (3 000 random pairs, k = 2 to 4, parameters log-uniform
from 10⁻³ to 10⁷, equal and unequal totals, near and far apart; tested), the error of
``H`` is below 10⁻⁹ relative where ``H > 10⁻⁶`` and below 10⁻¹⁴ absolute elsewhere.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import special

from ..accounting.validation import check_numeric_array

__all__ = ["hellinger", "log_bhattacharyya", "midpoint_defect"]

#: |h|/m at or below which the defect is summed from its Taylor series.
SERIES_RATIO = 0.1
#: Terms of that series: at |h|/m ≤ 0.1 term j+1 is below 10⁻² × term j, so 10 reach 10⁻²⁰.
SERIES_TERMS = 10
#: Largest total of Dirichlet parameters accepted.
MAX_PARAMETER = 1e150
#: Largest ratio between a component of a and the same component of b (or their totals) accepted.
MAX_RATIO = 2.0**50
#: Below this m the Taylor series is summed at m + 1 (see ``midpoint_defect``).
SMALL_M = 1e-3
#: Smallest argument m − |h| at which the defect is taken from Stirling's series.
STIRLING_FROM = 9.0
_EVEN_FACTORIALS = tuple(float(math.factorial(2 * j)) for j in range(1, SERIES_TERMS + 1))
_FACTORIALS = tuple(float(math.factorial(j)) for j in range(1, 2 * SERIES_TERMS))
#: B_{2r} / (2r (2r − 1)) for r = 2..7 (r = 1, 1/12, is summed in closed form).
_STIRLING = (-1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156)


def _stirling_defect(m: np.ndarray, h: np.ndarray) -> np.ndarray:
    """``D(m, h)`` from Stirling's series, for ``m − |h| ≥ 9``, with every cancellation done exactly.

    With ``u = h/m``, the ``(z − ½) ln z − z`` parts of the three lnΓ values combine to
    ``−½ [(m − ½) log1p(−u²) + 2h atanh(u)]`` (the ``ln m`` and linear terms cancel
    exactly), the 1/(12z) terms to ``−h² / (12 m (m² − h²))``, and the rest (``z ≥ 9``,
    truncation below 10⁻¹⁶ of the result) are summed as they are.
    """
    u = h / m
    out = -0.5 * ((m - 0.5) * np.log1p(-u * u) + 2.0 * h * np.arctanh(u))
    out -= (u * u / ((1.0 - u) * (1.0 + u))) / 12.0 / m  # = h²/(12 m (m² − h²)), without forming m³
    for r, coef in enumerate(_STIRLING, start=2):
        p = 1 - 2 * r
        out += coef * (m**p - 0.5 * (m + h) ** p - 0.5 * (m - h) ** p)
    return out


def midpoint_defect(m: Any, h: Any, plus: Any = None, minus: Any = None) -> np.ndarray:
    """``D(m, h) = lnΓ(m) − ½ lnΓ(m + h) − ½ lnΓ(m − h)`` (≤ 0), elementwise, for ``|h| < m``.

    Three regimes, each accurate to a few units in the last place of ``D``: Stirling's
    series with exact cancellations where ``m − |h| ≥ 9``; else the Taylor series in
    ``h`` where ``|h| ≤ m/10``; else the direct form (whose lnΓ values are then small).

    ``plus`` and ``minus``, if given, are m + h and m − h as the caller knows them (e.g. the
    two Dirichlet parameters themselves): computed from m and h, the smaller one is lost to
    rounding when it is below the last place of m (lnΓ(0) = ∞ where lnΓ(1e-17) ≈ 39).
    """
    m, h = np.broadcast_arrays(np.asarray(m, dtype=float), np.asarray(h, dtype=float))
    plus = np.broadcast_to(m + h if plus is None else np.asarray(plus, dtype=float), m.shape)
    minus = np.broadcast_to(m - h if minus is None else np.asarray(minus, dtype=float), m.shape)
    out = np.empty(m.shape)
    large = np.minimum(plus, minus) >= STIRLING_FROM
    near = ~large & (np.abs(h) <= SERIES_RATIO * m)
    far = ~large & ~near
    if np.any(large):
        out[large] = _stirling_defect(m[large], h[large])
    if np.any(far):
        out[far] = special.gammaln(m[far]) - 0.5 * special.gammaln(plus[far]) - 0.5 * special.gammaln(minus[far])
    if np.any(near):
        mn, hn = m[near], h[near]
        # Below 1e-3 the polygammas overflow (ψ⁽ⁿ⁾(m) ~ n!/m^{n+1}) while the powers of h
        # underflow: step up with lnΓ(x) = lnΓ(x + 1) − ln x, exactly
        # D(m, h) = D(m + 1, h) + ½ log1p(−(h/m)²), and sum the series at m + 1.
        small = mn < SMALL_M
        shift = np.where(small, 0.5 * np.log1p(-np.square(hn / mn)), 0.0)
        mn = np.where(small, mn + 1.0, mn)
        h2 = hn * hn
        power = np.ones_like(hn)
        total = np.zeros_like(hn)
        # Summed from the first term; each later term is < 1 % of the one before.
        for j in range(1, SERIES_TERMS + 1):
            power = power * h2
            total += power * special.polygamma(2 * j - 1, mn) / _EVEN_FACTORIALS[j - 1]
        out[near] = shift - total
    return out


def _defect_error_size(m: np.ndarray, h: np.ndarray, defect: np.ndarray) -> np.ndarray:
    """What bounds the rounding error of ``midpoint_defect`` (in units of the double epsilon)."""
    direct = (m - np.abs(h) < STIRLING_FROM) & (np.abs(h) > SERIES_RATIO * m)
    lngamma_size = np.abs(special.gammaln(m)) + np.abs(special.gammaln(m + np.abs(h)))
    return np.where(direct, lngamma_size, np.abs(defect))


def _check_parameters(x: Any, name: str) -> np.ndarray:
    try:
        # strings, booleans, None and complex values are refused, never converted
        arr = check_numeric_array(x, name, allow_bool=False).astype(float)
    except ValueError as err:
        if "double range" in str(err):  # an int beyond the double range
            raise ValueError(f"{name} must be finite and > 0 (Dirichlet parameters), got {x!r}.") from None
        raise TypeError(f"{name} must be an array of Dirichlet parameters (numbers): {err}") from None
    if arr.ndim == 0 or arr.shape[-1] < 2:
        raise ValueError(
            f"{name} must hold at least 2 Dirichlet parameters along its last axis (k = 2 is a Beta), got shape {arr.shape}."
        )
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"{name} must be finite and > 0 (Dirichlet parameters), got {arr!r}.")
    return arr


def log_bhattacharyya(a: Any, b: Any) -> np.ndarray:
    """``log BC(Dir(a), Dir(b))`` (≤ 0), over the last axis, broadcasting the others.

    ``BC = B((a + b)/2) / sqrt(B(a) B(b))``; ``H² = 1 − BC``. See the module docstring
    for the formula and its accuracy.
    """
    a = _check_parameters(a, "a")
    b = _check_parameters(b, "b")
    if a.shape[-1] != b.shape[-1]:
        raise ValueError(f"a and b must have the same number of components, got {a.shape[-1]} and {b.shape[-1]}.")
    _check_ratio(*np.broadcast_arrays(a, b))
    return _log_bc(a, b)


def _check_ratio(a: np.ndarray, b: np.ndarray) -> None:
    """Refuse totals above :data:`MAX_PARAMETER`, and components (or totals) of a and b more than :data:`MAX_RATIO` apart.

    The formulas work with m = (a + b)/2 and h = (a − b)/2, and m ± h must give a and b
    back: beyond a ratio of 2⁵², the smaller one is lost to rounding (and lnΓ(0) = ∞).
    Stirling's series squares m, which overflows above ~1e154.
    """
    with np.errstate(over="ignore"):  # an infinite total is refused just below
        totals = (a.sum(axis=-1), b.sum(axis=-1))
    for name, total in zip("ab", totals):
        if np.any(total > MAX_PARAMETER):
            raise ValueError(f"{name} has parameters summing to more than 1e150; the formulas square them (overflow).")
    pairs = ((a, b, "components"), (*totals, "totals"))
    for x, y, what in pairs:
        if np.any(np.maximum(x, y) > MAX_RATIO * np.minimum(x, y)):
            raise ValueError(
                f"a and b have {what} more than 2**50 times apart, beyond what this formula resolves in double "
                "precision (m ± h would lose the smaller parameter); such Dirichlets are almost disjoint."
            )


def _log_bc(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``log BC`` without argument checks (``a``, ``b`` positive, same last axis).

    Defect form ``Σᵢ D(mᵢ, hᵢ) − D(Σm, Σh)``; where the totals differ and the defects
    are large enough to cancel, the stick-breaking form (module docstring) is used
    instead if its rounding error bound is smaller.
    """
    a, b = np.broadcast_arrays(a, b)
    out_shape = a.shape[:-1]
    a, b = a.reshape(-1, a.shape[-1]), b.reshape(-1, b.shape[-1])
    m = 0.5 * (a + b)
    h = 0.5 * (a - b)
    log_bc = midpoint_defect(m, h, a, b).sum(axis=-1)
    total_h = h.sum(axis=-1)
    moved = total_h != 0  # equal totals (e.g. two posteriors from n records): no total term, no cancellation
    if np.any(moved):
        am, bm, mm, hm = a[moved], b[moved], m[moved], h[moved]
        total_m = mm.sum(axis=-1)
        defect_total = midpoint_defect(total_m, total_h[moved], am.sum(axis=-1), bm.sum(axis=-1))
        defect_form = log_bc[moved] - defect_total
        # Rounding error bounds (in units of the double epsilon) of the two forms.
        size = _defect_error_size(mm, hm, midpoint_defect(mm, hm, am, bm)).sum(axis=-1)
        size += _defect_error_size(total_m, total_h[moved], defect_total)
        stick_form, stick_size = _stick_breaking_log_bc(am, bm, mm)
        chosen = np.where(stick_size < size, stick_form, defect_form)
        # Its absolute error is at most a few units of the double epsilon times what it sums.
        # Where even that leaves log BC below log 2⁻⁶⁰, H is 1 to double precision; where it is
        # larger than 1e-3 and could put log BC anywhere near 0, no H can be given.
        err = 16 * np.finfo(float).eps * np.minimum(stick_size, size)
        chosen = np.where(chosen + err < -60 * math.log(2), -np.inf, chosen)
        if np.any((err > 1e-3) & np.isfinite(chosen)):
            raise ValueError(
                "the Hellinger distance of these Dirichlets cannot be computed accurately in double precision: "
                "the terms of log BC (each about the size of lnΓ of the parameters) cancel to below their rounding "
                "error. Such parameters (far apart, with totals of very different size) are outside the tested range."
            )
        log_bc[moved] = chosen
    return np.minimum(log_bc, 0.0).reshape(out_shape)


def _log_gamma_shift(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``lnΓ(x + y) − lnΓ(x)``, from its Taylor series ``Σ_j y^j ψ^{(j−1)}(x) / j!`` where ``y ≤ x/10``."""
    out = special.gammaln(x + y) - special.gammaln(x)
    near = y <= SERIES_RATIO * x
    if np.any(near):
        xn, yn = x[near], y[near]
        # Below SMALL_M the polygammas overflow: step up with lnΓ(x) = lnΓ(x + 1) − ln x, i.e.
        # shift(x, y) = shift(x + 1, y) − log1p(y/x), and sum the series at x + 1.
        small = xn < SMALL_M
        total = np.where(small, -np.log1p(yn / xn), 0.0)
        xn = np.where(small, xn + 1.0, xn)
        power = np.ones_like(yn)
        for j in range(1, 2 * SERIES_TERMS):  # term j+1 / term j ≤ y/x ≤ 0.1
            with np.errstate(over="ignore", invalid="ignore"):
                power = power * yn
                polygamma = special.polygamma(j - 1, xn)
                term = power * polygamma / _FACTORIALS[j - 1]
            lost = ~np.isfinite(term)  # y^j overflows for y beyond ~1e16 (the term itself is small): in logs
            if np.any(lost):
                with np.errstate(divide="ignore"):
                    log_term = j * np.log(yn[lost]) + np.log(np.abs(polygamma[lost])) - math.lgamma(j + 1)
                term[lost] = np.sign(polygamma[lost]) * np.exp(log_term)
            total += term
        out[near] = total
    return out


def _stick_breaking_log_bc(a: np.ndarray, b: np.ndarray, m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``log BC`` as a sum of Beta terms, and the size of what it sums (its rounding error bound).

    ``Dir(a)`` is the law of independent ``Beta(aᵢ, Σ_{l>i} a_l)`` stick-breaking
    fractions, so ``log BC = Σ_{i<k} [log B(mᵢ, Σ_{l>i} m_l) − ½ log B(aᵢ, …) − ½ log B(bᵢ, …)]``.
    Each ``log B(p, q)`` is written ``lnΓ(s) − [lnΓ(l + s) − lnΓ(l)]`` with ``s`` the
    smaller argument (chosen on ``m``, the same role for ``a`` and ``b``): the lnΓ(s)
    terms form a midpoint defect, and the bracket is summed from its series when
    ``s ≤ l/10``, so no large lnΓ value is ever formed.
    """

    def rest(x: np.ndarray) -> np.ndarray:
        return np.cumsum(x[..., ::-1], axis=-1)[..., ::-1][..., 1:]

    head = slice(None, -1)
    first_small = m[..., head] <= rest(m)

    def split(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        p, q = x[..., head], rest(x)
        return np.where(first_small, p, q), np.where(first_small, q, p)

    (sm, lm), (sa, la), (sb, lb) = split(m), split(a), split(b)
    small_defect = midpoint_defect(sm, 0.5 * (sa - sb), sa, sb)
    shift_m, shift_a, shift_b = _log_gamma_shift(lm, sm), _log_gamma_shift(la, sa), _log_gamma_shift(lb, sb)
    value = (small_defect - (shift_m - 0.5 * shift_a - 0.5 * shift_b)).sum(axis=-1)
    size = (np.abs(small_defect) + np.abs(shift_m) + np.abs(shift_a) + np.abs(shift_b)).sum(axis=-1)
    return value, size


def hellinger_from_log_bc(log_bc: Any) -> np.ndarray:
    """``H = sqrt(−expm1(log BC))``: the Hellinger distance from a log Bhattacharyya coefficient."""
    return np.sqrt(0.0 - np.expm1(np.minimum(np.asarray(log_bc, dtype=float), 0.0)))  # 0.0 − …: never −0.0


def hellinger(a: Any, b: Any) -> Any:
    """Hellinger distance between ``Dir(a)`` and ``Dir(b)`` (a Beta when k = 2), in [0, 1].

    Parameters
    ----------
    a, b
        Dirichlet parameters along the last axis (k ≥ 2 components, each finite and
        > 0); other axes broadcast, so one call scores many candidates against one
        posterior.

    Returns
    -------
    float or numpy.ndarray
        ``H = sqrt(1 − B((a + b)/2) / sqrt(B(a) B(b)))``, a float for 1-D inputs.

    Raises
    ------
    ValueError
        For fewer than 2 components, different numbers of components, a parameter
        that is not finite and > 0, parameters summing to more than 10¹⁵⁰, or a
        component (or total) of ``a`` more than 2⁵⁰ times that of ``b`` or less than
        2⁻⁵⁰ times it (beyond double precision here).
    TypeError
        For something that is not an array of numbers.

    Notes
    -----
    Computed in log space from midpoint defects of lnΓ, with their Taylor series
    where the two parameters are close, so that it is accurate for parameters from
    10⁻³ to 10⁷ (against 60-digit arithmetic: relative error below 10⁻⁹ where
    H > 10⁻⁶, absolute below 10⁻¹⁴ elsewhere; tested); see
    :mod:`pymc_dp.mechanisms.hellinger_distance`.

    Examples
    --------
    >>> round(float(hellinger([2, 3], [2, 3])), 12)
    0.0
    >>> round(float(hellinger([1, 1], [2, 1])), 6)  # Beta(1, 1) vs Beta(2, 1)
    0.239146
    """
    out = hellinger_from_log_bc(log_bhattacharyya(a, b))
    return float(out) if out.ndim == 0 else out
