"""Where the randomness of a mechanism comes from: secure (OpenDP) or seeded (NumPy).

Every mechanism in :mod:`pymc_dp.mechanisms` draws its noise through a
:class:`NoiseSource`, and every ledger entry records which kind was used
(``noise_source="secure"`` or ``"seeded"``).

Why secure is the default
-------------------------
Textbook samplers run in double precision are *not* differentially private.
Mironov (CCS 2012, "On significance of the least significant bits for differential
privacy") showed that Laplace noise drawn as ``-b * sign(U) * log(1 - 2|U|)`` in
doubles reaches only a sparse, input-dependent set of floating-point values, so
``x + noise`` can reveal ``x`` exactly from the low-order bits. The same kind of
attack applies to naive Gaussian, Gumbel and Bernoulli samplers built on
floating-point uniforms. :class:`SecureNoise` therefore uses the OpenDP library's
samplers, which are exact: they sample discrete distributions with exact
(big-integer / rational) arithmetic from a cryptographically secure random source,
and OpenDP's proofs cover the rounding of the input and of the output (see the
theory notes, section 2, "Floating point").

:class:`SeededNoise` uses a NumPy :class:`numpy.random.Generator`. It is
reproducible (the same seed gives the same output), which is what research code
and tests need, but it is neither cryptographically secure nor floating-point
safe: never publish a release made with it.

Choosing a source
-----------------
Every mechanism takes ``rng=``, interpreted by :func:`~pymc_dp.mechanisms.resolve_noise_source`:

* ``None`` (default): :class:`SecureNoise`;
* an ``int`` seed or a :class:`numpy.random.Generator`: :class:`SeededNoise`;
* a :class:`NoiseSource` instance: used as it is.

An ``int`` seed starts a *fresh* generator on every call, so two calls with the same
integer draw the same noise (reproducible, but the noise of repeated releases is then
identical, not independent). To draw a stream of independent releases, create one
``numpy.random.default_rng(seed)`` and pass that generator to every call.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from fractions import Fraction
from functools import lru_cache
from numbers import Integral
from typing import Any, Sequence

import numpy as np

__all__ = ["NoiseSource", "SecureNoise", "SeededNoise", "resolve_noise_source"]

Size = int | tuple[int, ...]


def _shape(size: Size) -> tuple[int, ...]:
    if isinstance(size, (Integral, np.integer)) and not isinstance(size, bool):
        shape: tuple[int, ...] = (int(size),)
    else:
        try:
            shape = tuple(int(s) for s in size)  # type: ignore[union-attr]
        except TypeError:
            raise ValueError(f"size must be an int or a tuple of ints, got {size!r}.") from None
    if any(s < 0 for s in shape):
        raise ValueError(f"size must not be negative, got {size!r}.")
    return shape


def _check_scale(scale: float, name: str = "scale") -> float:
    s = float(scale)
    if not (math.isfinite(s) and s > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {scale!r}.")
    return s


class NoiseSource(ABC):
    """The randomness a mechanism draws from.

    Subclasses implement the samplers below; the ``add_*`` methods release
    ``value + noise`` and by default simply add a fresh sample, which a secure
    source overrides so that the addition itself is done exactly.

    Attributes
    ----------
    name
        ``"secure"`` or ``"seeded"``: recorded as the ``noise_source`` of every ledger
        entry made with this source.
    """

    name: str = "abstract"

    # ------------------------------------------------------------------ samplers
    @abstractmethod
    def laplace(self, scale: float, size: Size) -> np.ndarray:
        """I.i.d. Laplace(0, ``scale``) samples (density ∝ ``exp(-|x|/scale)``) as a float array of shape ``size``."""

    @abstractmethod
    def gaussian(self, sigma: float, size: Size) -> np.ndarray:
        """I.i.d. Normal(0, ``sigma``²) samples as a float array of shape ``size``."""

    @abstractmethod
    def discrete_laplace(self, scale: float, size: Size) -> np.ndarray:
        """I.i.d. discrete Laplace samples on the integers, pmf ∝ ``exp(-|k|/scale)``, as an int64 array."""

    @abstractmethod
    def gumbel_argmax(self, scores: Sequence[float] | np.ndarray, scale: float) -> int:
        """Index of the largest ``scores[i] + G_i`` with ``G_i`` i.i.d. Gumbel(0, ``scale``).

        This is the exponential mechanism: index ``i`` is returned with probability
        ∝ exp(scores[i] / scale).
        """

    @abstractmethod
    def randomized_response(self, indices: np.ndarray, num_categories: int, truth_probability: float) -> np.ndarray:
        """Randomised response on category indices in ``range(num_categories)``.

        Each entry is kept with probability ``truth_probability`` and otherwise
        replaced by one of the *other* ``num_categories - 1`` categories chosen
        uniformly. Returns an int64 array of the same shape.
        """

    # --------------------------------------------------------- value + noise
    def add_laplace(self, value: np.ndarray, scale: float) -> np.ndarray:
        """``value + Laplace(scale)`` noise, elementwise (float array, same shape)."""
        value = np.asarray(value, dtype=float)
        return value + self.laplace(scale, value.shape)

    def add_gaussian(self, value: np.ndarray, sigma: float) -> np.ndarray:
        """``value + Normal(0, sigma²)`` noise, elementwise (float array, same shape)."""
        value = np.asarray(value, dtype=float)
        return value + self.gaussian(sigma, value.shape)

    def add_discrete_laplace(self, value: np.ndarray, scale: float) -> np.ndarray:
        """``value + discrete Laplace(scale)`` noise for an integer array (int64, same shape)."""
        value = np.asarray(value, dtype=np.int64)
        return value + self.discrete_laplace(scale, value.shape)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


# =========================================================================== secure


@lru_cache(maxsize=1)
def _opendp():
    import opendp.prelude as dp

    dp.enable_features("contrib")
    return dp


# Building a measurement costs ~0.1 ms; mechanisms are usually called with a handful
# of scales, so the built measurements are cached per (kind, scale).
@lru_cache(maxsize=512)
def _float_laplace(scale: float):
    dp = _opendp()
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l1_distance(T=float)
    return dp.m.make_laplace(*space, scale=scale)


@lru_cache(maxsize=512)
def _float_gaussian(sigma: float):
    dp = _opendp()
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l2_distance(T=float)
    return dp.m.make_gaussian(*space, scale=sigma)


@lru_cache(maxsize=512)
def _int_laplace(scale: float):
    dp = _opendp()
    space = dp.vector_domain(dp.atom_domain(T="i64")), dp.l1_distance(T="i64")
    return dp.m.make_laplace(*space, scale=scale)


@lru_cache(maxsize=512)
def _gumbel_max(scale: float):
    dp = _opendp()
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.linf_distance(T=float)
    # In OpenDP 0.16 ``make_noisy_max`` adds Gumbel noise when the output measure is
    # zCDP and exponential noise (permute-and-flip) when it is MaxDivergence. Only the
    # Gumbel version samples exactly the exponential mechanism's distribution, so we
    # ask for that one; OpenDP's own zCDP map is not used (pymc_dp accounts the
    # release itself as the pure ε-DP exponential mechanism).
    return dp.m.make_noisy_max(*space, dp.zero_concentrated_divergence(), scale=scale)


@lru_cache(maxsize=512)
def _rr_bool(prob: float):
    return _opendp().m.make_randomized_response_bool(prob)


@lru_cache(maxsize=512)
def _rr_categorical(num_categories: int, prob: float):
    return _opendp().m.make_randomized_response(list(range(num_categories)), prob, T="i64")


_INT64_MAX = np.iinfo(np.int64).max


class SecureNoise(NoiseSource):
    """Exact, floating-point-safe noise from OpenDP (the default of every mechanism).

    OpenDP's samplers draw from a cryptographically secure source and are exact:
    continuous Laplace and Gaussian noise are sampled as discrete Laplace / discrete
    Gaussian noise on a fine power-of-two lattice with exact integer arithmetic
    (Canonne, Kamath & Steinke 2020), and report-noisy-max compares Gumbel samples
    exactly. This closes the floating-point attack of Mironov (2012), which breaks
    textbook samplers in doubles.

    The ``add_*`` methods pass the *value itself* through OpenDP (OpenDP rounds the
    input onto its lattice, adds exact lattice noise and rounds the exact result to
    the nearest double), so the whole release is covered by OpenDP's proof rather
    than ending with a floating-point addition done here. The plain samplers
    (:meth:`laplace` etc.) release noise added to zeros, for tests and diagnostics.

    Measured cost (OpenDP 0.16, one core): about 20-30 µs per Laplace sample,
    about 60 µs per Gaussian sample, about 10 µs per integer sample, and about
    0.1 ms per randomised-response answer or noisy-max call, against well under
    0.1 µs per sample for :class:`SeededNoise`.
    """

    name = "secure"

    # --- samplers
    def laplace(self, scale: float, size: Size) -> np.ndarray:
        return self.add_laplace(np.zeros(_shape(size)), scale)

    def gaussian(self, sigma: float, size: Size) -> np.ndarray:
        return self.add_gaussian(np.zeros(_shape(size)), sigma)

    def discrete_laplace(self, scale: float, size: Size) -> np.ndarray:
        return self.add_discrete_laplace(np.zeros(_shape(size), dtype=np.int64), scale)

    def gumbel_argmax(self, scores: Sequence[float] | np.ndarray, scale: float) -> int:
        scores = np.asarray(scores, dtype=float).ravel()
        if scores.size == 0:
            raise ValueError("scores must not be empty.")
        if not np.all(np.isfinite(scores)):
            raise ValueError("scores must be finite.")
        return int(_gumbel_max(_check_scale(scale))(scores.tolist()))

    def randomized_response(self, indices: np.ndarray, num_categories: int, truth_probability: float) -> np.ndarray:
        idx = np.asarray(indices, dtype=np.int64)
        k = int(num_categories)
        p = float(truth_probability)
        if k == 2:
            meas = _rr_bool(p)
            out = [int(meas(bool(i))) for i in idx.ravel().tolist()]
        else:
            meas = _rr_categorical(k, p)
            out = [int(meas(int(i))) for i in idx.ravel().tolist()]
        return np.asarray(out, dtype=np.int64).reshape(idx.shape)

    # --- value + noise, done inside OpenDP
    def add_laplace(self, value: np.ndarray, scale: float) -> np.ndarray:
        value = np.asarray(value, dtype=float)
        if value.size == 0:
            return value.copy()
        out = _float_laplace(_check_scale(scale))(value.ravel().tolist())
        return np.asarray(out, dtype=float).reshape(value.shape)

    def add_gaussian(self, value: np.ndarray, sigma: float) -> np.ndarray:
        value = np.asarray(value, dtype=float)
        if value.size == 0:
            return value.copy()
        out = _float_gaussian(_check_scale(sigma, "sigma"))(value.ravel().tolist())
        return np.asarray(out, dtype=float).reshape(value.shape)

    def add_discrete_laplace(self, value: np.ndarray, scale: float) -> np.ndarray:
        value = np.asarray(value, dtype=np.int64)
        if value.size == 0:
            return value.copy()
        # OpenDP saturates at the i64 limits rather than wrapping around.
        out = _int_laplace(_check_scale(scale))(value.ravel().tolist())
        return np.asarray(out, dtype=np.int64).reshape(value.shape)


# =========================================================================== seeded

#: Above this discrete Laplace scale, :class:`SeededNoise` does not use NumPy's geometric
#: sampler (which saturates at int64's maximum); see ``SeededNoise._huge_discrete_laplace``.
#: Below it, draws stay below ~2**46, so value + noise cannot overflow for |value| ≤ 2**62.
_GEOMETRIC_MAX_SCALE = 2.0**40


def _saturate_int64(x: np.ndarray) -> np.ndarray:
    """Whole-number floats (or ±inf) as int64, values beyond its range clamped to its limits."""
    x = np.asarray(x, dtype=float)
    out = np.empty(x.shape, dtype=np.int64)
    high, low = x >= 2.0**63, x < -(2.0**63)
    mid = ~(high | low)
    out[mid] = x[mid].astype(np.int64)
    out[high] = np.iinfo(np.int64).max
    out[low] = np.iinfo(np.int64).min
    return out


class SeededNoise(NoiseSource):
    """Reproducible noise from a NumPy generator: for research and tests, not for release.

    Parameters
    ----------
    rng
        A :class:`numpy.random.Generator`, or an ``int`` seed for
        :func:`numpy.random.default_rng`.

    Notes
    -----
    The samplers are NumPy's floating-point ones, which are vulnerable to the
    attack of Mironov (2012) described in :mod:`pymc_dp.mechanisms.noise`; ledger
    entries made with this source say ``noise_source="seeded"`` so that such
    releases can be recognised. The same seed gives the same output.
    """

    name = "seeded"

    def __init__(self, rng: np.random.Generator | int) -> None:
        if isinstance(rng, np.random.Generator):
            self.rng = rng
        elif isinstance(rng, (Integral, np.integer)) and not isinstance(rng, bool):
            self.rng = np.random.default_rng(int(rng))
        else:
            raise ValueError(f"rng must be a numpy.random.Generator or an int seed, got {rng!r}.")

    def __repr__(self) -> str:
        return f"SeededNoise({self.rng!r})"

    def laplace(self, scale: float, size: Size) -> np.ndarray:
        return self.rng.laplace(0.0, _check_scale(scale), _shape(size))

    def gaussian(self, sigma: float, size: Size) -> np.ndarray:
        return self.rng.normal(0.0, _check_scale(sigma, "sigma"), _shape(size))

    def discrete_laplace(self, scale: float, size: Size) -> np.ndarray:
        # The difference of two i.i.d. geometric variables on {0, 1, ...} with
        # P(G = g) = (1 - q) q^g, q = exp(-1/scale), has pmf ∝ q^|k|.
        shape = _shape(size)
        if _check_scale(scale) > _GEOMETRIC_MAX_SCALE:
            return _saturate_int64(self._huge_discrete_laplace(scale, shape))
        p = -math.expm1(-1.0 / scale)  # success probability 1 - q
        g1 = self.rng.geometric(p, shape).astype(np.int64)
        g2 = self.rng.geometric(p, shape).astype(np.int64)
        return g1 - g2

    def _huge_discrete_laplace(self, scale: float, shape: tuple[int, ...]) -> np.ndarray:
        """Discrete Laplace noise for scales beyond :data:`_GEOMETRIC_MAX_SCALE`, as floats (possibly ±inf).

        NumPy's geometric sampler saturates at int64's maximum for success probabilities
        below about 1e-19, so the difference of two draws would be 0 (no noise at all).
        Instead: 0 with probability (1 - q)/(1 + q) = tanh(1/(2 scale)), otherwise a random
        sign times 1 + G, G = ⌊scale · E⌋ with E ~ Exponential(1) (P(G ≥ g) = q^g).
        """
        zero = self.rng.random(shape) < math.tanh(0.5 / scale)
        sign = np.where(self.rng.random(shape) < 0.5, -1.0, 1.0)
        with np.errstate(over="ignore"):
            magnitude = 1.0 + np.floor(scale * self.rng.standard_exponential(shape))
        return np.where(zero, 0.0, sign * magnitude)

    def add_discrete_laplace(self, value: np.ndarray, scale: float) -> np.ndarray:
        """``value + noise``, saturating at the int64 limits (as OpenDP does) when the noise is that large."""
        value = np.asarray(value, dtype=np.int64)
        if _check_scale(scale) > _GEOMETRIC_MAX_SCALE:
            # noise of this size dwarfs the rounding of value + noise to a double
            return _saturate_int64(value.astype(float) + self._huge_discrete_laplace(scale, value.shape))
        return value + self.discrete_laplace(scale, value.shape)

    def gumbel_argmax(self, scores: Sequence[float] | np.ndarray, scale: float) -> int:
        scores = np.asarray(scores, dtype=float).ravel()
        if scores.size == 0:
            raise ValueError("scores must not be empty.")
        if not np.all(np.isfinite(scores)):
            raise ValueError("scores must be finite.")
        # Subtracting the maximum keeps the sum well scaled for scores like 1e6 (a score more than
        # the double range below the maximum becomes -inf, which is never chosen, as it should not be).
        with np.errstate(over="ignore"):
            shifted = scores - scores.max()
            return int(np.argmax(shifted + self.rng.gumbel(0.0, _check_scale(scale), scores.size)))

    def randomized_response(self, indices: np.ndarray, num_categories: int, truth_probability: float) -> np.ndarray:
        idx = np.asarray(indices, dtype=np.int64)
        k = int(num_categories)
        keep = self.rng.random(idx.shape) < float(truth_probability)
        other = self.rng.integers(0, k - 1, size=idx.shape, dtype=np.int64)
        other = other + (other >= idx)  # uniform over the k - 1 categories != idx
        return np.where(keep, idx, other).astype(np.int64)


# =========================================================================== resolution


def resolve_noise_source(rng: Any = None) -> NoiseSource:
    """Turn a mechanism's ``rng`` argument into a :class:`NoiseSource`.

    Parameters
    ----------
    rng
        ``None`` (default) for :class:`SecureNoise`, OpenDP's exact samplers: the
        only choice fit for a release, because floating-point samplers leak
        (Mironov 2012). An ``int`` seed or a :class:`numpy.random.Generator` for
        :class:`SeededNoise` (reproducible, recorded as ``"seeded"``); an ``int``
        makes a fresh generator each time, so pass one ``Generator`` to several
        calls to get independent draws. A :class:`NoiseSource` is returned unchanged.

    Returns
    -------
    NoiseSource

    Raises
    ------
    ValueError
        For anything else (the message names ``rng``).
    """
    if rng is None:
        return SecureNoise()
    if isinstance(rng, NoiseSource):
        return rng
    if isinstance(rng, np.random.Generator) or (isinstance(rng, (Integral, np.integer)) and not isinstance(rng, bool)):
        return SeededNoise(rng)
    raise ValueError(
        f"rng must be None (secure OpenDP noise, the default), an int seed or a numpy.random.Generator "
        f"(reproducible seeded noise), or a NoiseSource; got {type(rng).__name__}: {rng!r}."
    )


# =========================================================================== helpers shared by the mechanisms


def _require_ledger(ledger: Any) -> Any:
    """Return ``ledger`` after checking one was passed (every release must be recorded)."""
    if ledger is None:
        raise ValueError(
            "ledger is required: every release spends privacy budget and must be recorded; "
            "pass ledger=pmdp.PrivacyLedger()."
        )
    if not callable(getattr(ledger, "charge", None)):
        raise ValueError(
            f"ledger must be a pymc_dp PrivacyLedger (an object with a charge() method), got "
            f"{type(ledger).__name__}; pass ledger=pmdp.PrivacyLedger()."
        )
    return ledger


def _check_touched(touched: Any) -> str:
    if not isinstance(touched, str):
        raise ValueError(f"touched must be a string naming what the release touched (e.g. 'y:sum'), got {touched!r}.")
    return touched


def _scale_for(numerator: float, epsilon: float) -> float:
    """The smallest double ``b`` with ``numerator / b <= epsilon`` in exact arithmetic.

    ``numerator / epsilon`` rounded to a double may be one ulp too small, which would
    make the mechanism very slightly more than ``epsilon``-DP; this rounds up instead.
    """
    b = numerator / epsilon
    if not math.isfinite(b):
        raise ValueError(
            f"the noise scale {numerator:g} / epsilon = {numerator:g} / {epsilon:g} overflows double precision; "
            "use a larger epsilon or a smaller sensitivity (rescale the statistic)."
        )
    while Fraction(numerator) > Fraction(epsilon) * Fraction(b):
        b = math.nextafter(b, math.inf)
    return b


def _restore_shape(result: np.ndarray, original: Any) -> Any:
    """A 0-d result for a scalar input becomes a scalar; otherwise the array."""
    if np.ndim(original) == 0:
        out = result.reshape(())[()]
        # Python scalars give Python scalars; NumPy scalars and 0-d arrays give NumPy scalars.
        return out.item() if type(original) in (int, float, bool) else out
    return result
