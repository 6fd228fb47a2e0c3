"""Bayesian linear regression: records (x, y), x ∈ ℝᵈ, y ∈ ℝ, y | x ~ Normal(xᵀβ, σ²).

``log p(y | X, β, σ) = −(yᵀy − 2βᵀXᵀy + βᵀXᵀXβ) / (2σ²) − N log σ + const``: the
records enter only through ``XᵀX`` (its upper triangle, d(d+1)/2 values), ``Xᵀy``
(d values), ``yᵀy`` and N. Together these are the upper triangle of the augmented
scatter matrix ``ZᵀZ``, z = (x₁, …, x_d, y), so each released coordinate is a sum of
one product ``z_a z_b`` over the records.

**Records.** One row per record, ``[x₁, …, x_d, y]``: a 2-D array (NumPy, pandas,
Dask) whose *last column is y*, with ``n_features = d`` given as a family argument
(required). :meth:`LinearRegression.stack` builds it from separate ``X`` and ``y``
(NumPy, pandas or Dask; ``pmdp.privatize(LinearRegression.stack(X, y),
"linear_regression", n_features=d, ...)``). :meth:`~LinearRegression.records` also
reads a ``(X, y)`` tuple, but ``privatize`` converts its data to one array before it
reaches the family, so pass the stacked array to ``privatize``.

**Bounds.** ``bounds={"x": (lo, hi), "y": (lo_y, hi_y)}``: the x bounds are scalars
(the same for every feature) or arrays of length d (per feature); ``lo = hi`` is
allowed for a constant column (e.g. an intercept column of ones: its products then
contribute no sensitivity). Records outside the box are clipped to it (and counted
in a :class:`~pymc_dp.families.ClippedRecordsWarning`); a row with a NaN or ±inf entry is
replaced by the box's midpoint row (:meth:`~pymc_dp.families.Family.repair`; counted for
the curator, never refused).

**Sensitivity** (L1), with ``z_a ∈ [l_a, h_a]`` and ``M_a = max(|l_a|, |h_a|)``:

* ``"replace"``: ``‖s(z) − s(z′)‖₁ = Σ_{a≤b} |z_a z_b − z′_a z′_b|`` is bounded by the
  sum over the released coordinates of the *range* of ``z_a z_b`` over the box:
  **Δ = Σ_{i≤j≤d} R(x_i x_j) + Σ_i R(x_i y) + R(y²)**, where for a ≠ b
  ``R(z_a z_b) = max − min of {l_a l_b, l_a h_b, h_a l_b, h_a h_b}`` and
  ``R(z_a²) = max(l_a², h_a²) − (0 if l_a ≤ 0 ≤ h_a else min(l_a², h_a²))``.
  It is attained (it is the exact maximum) when no interval has ``l_a < 0 < h_a``:
  then z = all endpoints nearest 0 and z′ = all farthest give every coordinate its
  full range at once. When some interval contains 0 in its interior it is a valid
  upper bound but not attained (for d = 2 on [−1, 1]³ a grid search finds 6 against
  the bound 9); the exact maximum of this indefinite quadratic over a box has no
  closed form in general.
* ``"add_remove"``: ``‖s(z)‖₁ = Σ_{a≤b} |z_a z_b| + 1`` is largest at ``|z_a| = M_a``:
  **Δ = Σ_{i≤j} M_i M_j + M_y Σ_i M_i + M_y² + 1** (exact).

**Projection** (:meth:`~LinearRegression.project`): XᵀX onto the PSD cone
(:func:`~pymc_dp.families.base.project_to_psd`); Xᵀy unchanged except that a
component outside the range of the projected XᵀX (possible only when that is
singular) is removed; ``yᵀy ≥ max(0, Xᵀyᵀ (XᵀX)⁺ Xᵀy)`` so that the residual sum of
squares ``min_β (yᵀy − 2βᵀXᵀy + βᵀXᵀXβ)`` is ≥ 0. Together: the augmented matrix
``ZᵀZ`` is PSD, as the scatter matrix of real data is. N̂ = max(N, 1) under
add/remove. Eigenvalues of XᵀX below ``max(d·10⁻⁹·λ_max, 10⁻¹²·N̂·Σ M_i²)`` count
as zero (rounding; the second term, relative to the largest XᵀX the box allows,
keeps (XᵀX)⁺ finite), so valid statistics whose XᵀX has a condition number beyond
~10⁹ are not kept exactly.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from ..accounting.validation import check_count, check_finite_array
from ._arrays import as_array
from ._regression_importance import coordinate_importance
from .base import Family, check_bound_pair, declared_bounds, project_to_psd, statistic_length
from ._params import relation
from .release_design import ReleaseDesign

#: The most features accepted: the family releases d(d+1)/2 + d + 1 noisy numbers
#: (about 500,000 at d = 1,000), and builds that many products per record.
MAX_FEATURES = 1_000

__all__ = ["LinearRegression"]


def _range_of_product(la: float, ha: float, lb: float, hb: float) -> float:
    corners = (la * lb, la * hb, ha * lb, ha * hb)
    return max(corners) - min(corners)


def _range_of_square(lo: float, hi: float) -> float:
    top = max(lo * lo, hi * hi)
    bottom = 0.0 if lo <= 0.0 <= hi else min(lo * lo, hi * hi)
    return top - bottom


class LinearRegression(Family):
    """Linear regression y = Xβ + Normal(0, σ²) noise, from privatised XᵀX, Xᵀy, yᵀy.

    Used through ``pmdp.observe_stats(name, {"beta": beta, "sigma": sigma}, stats)``
    (no single PyMC distribution stands for it). Conjugate priors
    (:meth:`conjugate_posterior`): Normal on β with σ known, or
    Normal-Inverse-Gamma on (β, σ²).

    Parameters
    ----------
    n_features
        d, the number of columns of X (required; include an intercept column of ones
        yourself if you want one).
    """

    name = "linear_regression"
    pymc_ops = ()
    bound_keys = ("x", "y")
    tuple_records = True
    bounds_example = "{'x': (-1.0, 1.0), 'y': (-5.0, 5.0)}"

    def __init__(self, n_features: int | None = None, **family_args: Any) -> None:
        if family_args:
            raise ValueError(f"family 'linear_regression' takes only n_features=d, got {sorted(family_args)}.")
        if n_features is None:
            raise ValueError(
                "family 'linear_regression' needs n_features=d, the number of columns of X (the records are "
                "rows [x_1, ..., x_d, y])."
            )
        d = check_count(n_features, "n_features")
        if d > MAX_FEATURES:
            raise ValueError(
                f"n_features={d} is more than the {MAX_FEATURES:,} supported: the family releases d(d+1)/2 + d + 1 "
                "noisy numbers. Reduce the features first (e.g. select or project them)."
            )
        self.n_features: int = d
        d = self.n_features
        # Coordinates of the statistic, as pairs (a, b) of columns of z = (x_1..x_d, y):
        # the upper triangle of XᵀX (row-major, as np.triu_indices), then Xᵀy, then yᵀy.
        self._pairs: list[tuple[int, int]] = (
            [(i, j) for i in range(d) for j in range(i, d)] + [(i, d) for i in range(d)] + [(d, d)]
        )

    def family_args(self) -> dict[str, Any]:
        return {"n_features": self.n_features}

    @property
    def n_xtx(self) -> int:
        """Number of released coordinates of XᵀX: d(d+1)/2."""
        return self.n_features * (self.n_features + 1) // 2

    # ------------------------------------------------------------------ data side
    @staticmethod
    def stack(X: Any, y: Any) -> Any:
        """One 2-D record array ``[X | y]`` from X (N×d or length-N for d = 1) and y (length N).

        NumPy, pandas and Dask inputs work (Dask stays lazy).
        """
        X, y = as_array(X, "X"), as_array(y, "y")
        if X.ndim == 1:
            X = X[:, None]
        if X.ndim != 2 or y.ndim != 1:
            raise ValueError(f"X must be 2-D (N × d) and y 1-D, got shapes {X.shape} and {y.shape}.")
        if X.shape[0] != y.shape[0]:
            raise ValueError(f"X and y must have the same number of records, got {X.shape[0]} and {y.shape[0]}.")
        return np.concatenate([X, y[:, None]], axis=1)

    def records(self, x: Any) -> Any:
        """Records as one 2-D array ``[X | y]`` (N × (d+1)): from such an array, or from a ``(X, y)`` tuple."""
        if isinstance(x, tuple):
            if len(x) != 2:
                raise ValueError(f"a tuple of records must be (X, y), got {len(x)} items.")
            x = self.stack(*x)
        d = self.n_features
        if x.ndim != 2 or x.shape[1] != d + 1:
            raise ValueError(
                f"family 'linear_regression' with n_features={d} expects records as a 2-D array with {d + 1} "
                f"columns [x_1, ..., x_{d}, y] (the last column is y), got shape {x.shape}. "
                "Build it with LinearRegression.stack(X, y)."
            )
        return x

    def box(self, bounds: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper bounds of z = (x_1, ..., x_d, y), each of length d + 1.

        Raises
        ------
        ValueError
            If ``bounds["x"]`` is not a ``(lo, hi)`` pair of scalars or length-d arrays
            of finite numbers with lo ≤ hi, or ``bounds["y"]`` is not a finite pair
            with lo < hi.
        """
        d = self.n_features
        pair = bounds["x"]
        shape_error = ValueError(
            f"bounds['x'] must be a (lower, upper) pair of numbers or of length-{d} arrays (one per feature), "
            f"e.g. bounds={self.bounds_example}; got {pair!r}."
        )
        if isinstance(pair, (str, bytes, Mapping)):
            raise shape_error
        try:
            lo_x, hi_x = pair
        except (TypeError, ValueError):
            raise shape_error from None
        # strings, booleans, NaN and ±inf are refused here, naming the end
        lo_x = check_finite_array(lo_x, "bounds['x'] lower", allow_bool=False)
        hi_x = check_finite_array(hi_x, "bounds['x'] upper", allow_bool=False)
        try:
            lo_x = np.broadcast_to(lo_x, (d,)).copy()
            hi_x = np.broadcast_to(hi_x, (d,)).copy()
        except ValueError:
            raise shape_error from None
        if np.any(lo_x > hi_x):
            bad = ", ".join(f"covariate {j}: {lo_x[j]:g} > {hi_x[j]:g}" for j in np.flatnonzero(lo_x > hi_x))
            raise ValueError(f"bounds['x'] must be (lower, upper) with lower ≤ upper for every covariate; reversed for "
                             f"{bad}. Swap them.")
        lo_y, hi_y = check_bound_pair(bounds, "y")
        return np.append(lo_x, lo_y), np.append(hi_x, hi_y)

    def check_bounds(self, bounds: Mapping[str, Any] | None) -> dict[str, Any]:
        """``{"x": (lo, hi), "y": (lo, hi)}`` (see the module docstring); a missing or bad bound is a ValueError."""
        checked = super().check_bounds(bounds)
        self.box(checked)
        return checked

    def default_record(self, bounds: Mapping[str, Any]) -> np.ndarray:
        """The midpoint row of the box ``(x_1, …, x_d, y)``: what a row with a NaN or infinite entry is replaced by."""
        lo, hi = self.box(bounds)
        return lo / 2 + hi / 2

    def clip(self, x: Any, bounds: Mapping[str, Any]) -> tuple[Any, Any]:
        lo, hi = self.box(bounds)
        return np.clip(x, lo, hi), ((x < lo) | (x > hi)).any(axis=1)

    def statistic_names(self, neighbouring: str) -> tuple[str, ...]:
        d = self.n_features
        names = [f"xtx[{a},{b}]" if b < d else (f"xty[{a}]" if a < d else "yty") for a, b in self._pairs]
        return tuple(names) + (("n",) if relation(neighbouring) == "add_remove" else ())

    def record_statistics(self, x: Any, neighbouring: str) -> Any:
        cols = [x[:, a] * x[:, b] for a, b in self._pairs]
        if relation(neighbouring) == "add_remove":
            cols.append(np.ones_like(x[:, 0]))
        return np.stack(cols, axis=1)

    def sensitivity(self, bounds: Mapping[str, Any], neighbouring: str) -> float:
        """Sum of the ranges of the released products (replace), or of their largest magnitudes + 1 (add/remove).

        See the module docstring for the derivation and when the replace bound is exact.
        """
        lo, hi = self.box(bounds)
        big = np.maximum(np.abs(lo), np.abs(hi))
        declared = f"{declared_bounds('x', lo[:-1], hi[:-1])} and {declared_bounds('y', lo[-1], hi[-1])}"
        largest = f"|x| up to {float(big[:-1].max()):g}, |y| up to {float(big[-1]):g}"
        with np.errstate(over="ignore", invalid="ignore"):
            if relation(neighbouring) == "replace":
                total = float(
                    sum(
                        _range_of_square(lo[a], hi[a]) if a == b else _range_of_product(lo[a], hi[a], lo[b], hi[b])
                        for a, b in self._pairs
                    )
                )
                return self.finite_sensitivity(total, f"the sum of the ranges of the products z_a·z_b ({largest})", declared)
            total = float(sum(big[a] * big[b] for a, b in self._pairs) + 1.0)
        return self.finite_sensitivity(total, f"Σ M_a·M_b + 1 over the products z_a·z_b ({largest})", declared)

    def release_design(self, bounds: Mapping[str, Any], neighbouring: str) -> ReleaseDesign:
        """With an intercept column (a feature with lower = upper ≠ 0), under replace: the products of centred columns.

        Every other column a of z = (x, y) is centred on its box's midpoint c_a, and the released
        coordinates are ``Σ (z_a − c_a)(z_b − c_b)``: linear in the statistics, since
        ``Σ z_a = Σ k·z_a / k`` is itself a released product with the constant column k. The
        centred products range over far less (for ages in [18, 80]: 31² = 961 instead of
        80² − 18² = 6,076; for age × log-wage, 87 instead of 410). ε is divided between
        them by weights ``w_j ∝ (R_j v_j)^(−1/3)`` — the minimiser of ``(Σ w_j R_j)² Σ 1/(w_j² v_j)``
        for the separable sensitivity ``Δ_w = Σ w_j R_j`` (R_j the range of coordinate j;
        :mod:`.release_design`), with ``1/v_j`` the coordinate's importance to the parameters: the
        summed widening of the intercept, each slope and σ² that its noise causes, by the delta method at
        a public reference on the box (:mod:`._regression_importance`), plus, for the products of two
        covariates and the count (XᵀX and N, which the estimates divide by), the coordinate's own
        noise-to-sampling variance ratio. The constant column's own product N·k² is public: it gets a
        weight so large that its noise is negligible.

        Under add/remove (N private, released as the last coordinate) see
        :meth:`_add_remove_design`. Without a constant column (no intercept, or one outside the
        features) the statistics are released as they are.
        """
        return self._centred_design(bounds, neighbouring, "laplace") or super().release_design(bounds, neighbouring)

    def gaussian_release_design(self, bounds: Mapping[str, Any], neighbouring: str) -> ReleaseDesign | None:
        """The same centred products weighted for Gaussian noise, with an intercept column; else None.

        Each released coordinate moves by at most its (weighted) range ``w_j R_j`` (under add/remove
        ``w_j M_j``, and N by ``w_N``), so the weighted vector's L2 sensitivity is at most
        ``Δ₂ = √(Σ_j (w_j R_j)²)``; the weights ``w_j ∝ (R_j² v_j)^(−1/4)`` minimise
        ``Δ₂² Σ_j 1/(w_j² v_j)`` (equality in Cauchy–Schwarz). With k covariates there are about
        k²/2 products, and L1/L2 grows like their square root: Gaussian noise adds less than
        Laplace with enough of them: at ε = 1 from two covariates at δ = 10⁻⁵, from three at δ = 10⁻⁶, on unit
        boxes (:func:`~pymc_dp.families.release_design.preferred_noise` decides). The v_j are each coordinate's
        1/importance to the parameters, as for Laplace noise (:meth:`release_design`).
        """
        return self._centred_design(bounds, neighbouring, "gaussian")

    def _centred_design(self, bounds: Mapping[str, Any], neighbouring: str, noise: str) -> ReleaseDesign | None:
        """The centred design for ``noise`` under either relation, or None without a constant column."""
        lo, hi = self.box(bounds)
        constant = np.flatnonzero((lo[:-1] == hi[:-1]) & (lo[:-1] != 0.0))
        if constant.size == 0:
            return None
        if relation(neighbouring) != "replace":
            return self._add_remove_design(bounds, lo, hi, int(constant[0]), noise)
        self.sensitivity(bounds, neighbouring)  # the same refusal of bounds too wide for float64
        one = int(constant[0])
        k = float(lo[one])
        fixed = lo == hi
        centre = np.where(fixed, 0.0, lo / 2 + hi / 2)
        index = {pair: j for j, pair in enumerate(self._pairs)}
        size = len(self._pairs)
        transform, offset = np.zeros((size, size)), np.zeros(size)

        def add_sum(row: int, column: int, factor: float) -> None:
            """Add ``factor · Σ z_column`` to coordinate ``row``: a constant N·z if the column is fixed, else S_(one, column)/k."""
            if fixed[column]:
                offset[row] += factor * lo[column]
            else:
                transform[row, index[tuple(sorted((one, column)))]] += factor / k

        for j, (a, b) in enumerate(self._pairs):
            transform[j, j] += 1.0  # Σ (z_a − c_a)(z_b − c_b) = Σ z_a z_b − c_b Σ z_a − c_a Σ z_b + N c_a c_b
            add_sum(j, a, -centre[b])
            add_sum(j, b, -centre[a])
            offset[j] += centre[a] * centre[b]
        low, high = lo - centre, hi - centre
        ranges = np.array([_range_of_square(low[a], high[a]) if a == b else _range_of_product(low[a], high[a], low[b], high[b])
                           for a, b in self._pairs])
        with np.errstate(over="ignore", invalid="ignore"):  # overflow is refused by .checked() below, from the bounds
            spread = np.where(fixed, lo * lo, (high - low) ** 2 / 12.0)  # E z² of a fixed column, Var z of a uniform one
        with np.errstate(over="ignore", invalid="ignore"):
            variances = np.array([(4.0 / 45.0) * ((high[a] - low[a]) / 2) ** 4 if a == b and not fixed[a]
                                  else spread[a] * spread[b] for a, b in self._pairs])
        weighting, measure = _importance_weighting(self._pairs, one, high - low, fixed, variances, constant=k)
        weights, delta, how = _divide_epsilon(ranges, weighting, noise, rounding=1.0, measure=measure)
        moving = ranges > 0
        names = self.statistic_names(neighbouring)
        description = (
            f"columns centred on their bounds' midpoints ({self._midpoints(fixed, centre, lo, hi)}); {how} {delta:.6g}"
            + ("; shares of ε " + ", ".join(f"{names[j]} {weights[j] * ranges[j] / delta:.3f}" for j in np.flatnonzero(moving))
               if noise == "laplace" else "")
            + "; " + ", ".join(names[j] for j in np.flatnonzero(~moving))
            + " (N times a constant: public, no sensitivity) weighted 1e8, so their noise is negligible"
        )
        return ReleaseDesign(transform, offset, weights, delta, description, shift=centre, noise=noise,
                             reference_variances=variances, objective_variances=weighting).checked(
            f"{declared_bounds('x', lo[:-1], hi[:-1])} and {declared_bounds('y', lo[-1], hi[-1])}"
        )

    def _midpoints(self, fixed: np.ndarray, centre: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> str:
        """Each column with its declared range and midpoint, for the ledger: ``x_1 in [0, 10] at 5, …, y in …``."""
        names = [f"x_{j + 1}" for j in range(self.n_features)] + ["y"]
        return ", ".join(f"{names[a]} = {lo[a]:.6g} (constant, not centred)" if fixed[a]
                         else f"{names[a]} in [{lo[a]:.6g}, {hi[a]:.6g}] at {centre[a]:.6g}" for a in range(centre.size))

    def pooled_release_design(self, bounds: Mapping[str, Any], pooled: Sequence[int], groups: int) -> ReleaseDesign:
        """The add/remove design of one group of a hierarchy whose ``pooled`` coordinates are released summed over
        ``groups`` groups (:mod:`pymc_dp.families.grouped`).

        A pooled sum runs over about G times as many records as a group's own sums, so its reference variance is
        G·v_j, and its importance to the shared slopes and σ² is 1/G of a group's own product (one noise, where
        each group's own products carry one each: :mod:`._regression_importance`): its weight is ``G^(−1/3)``
        of the unpooled one, and ε moves towards each group's own sums and count.
        """
        lo, hi = self.box(bounds)
        constant = np.flatnonzero((lo[:-1] == hi[:-1]) & (lo[:-1] != 0.0))
        scale = np.ones(len(self._pairs) + 1)
        scale[list(pooled)] = float(groups)
        return self._add_remove_design(bounds, lo, hi, int(constant[0]), variance_scale=scale)

    def _add_remove_design(self, bounds: Mapping[str, Any], lo: np.ndarray, hi: np.ndarray, one: int,
                           noise: str = "laplace", variance_scale: np.ndarray | None = None) -> ReleaseDesign:
        """Add/remove with a constant column k: the products of the centred columns and N, ε divided.

        The released coordinates are ``Σ (z_a − c_a)(z_b − c_b)`` for every product but the
        constant column's own, and N (the last statistic). That one, ``Σ k² = N k²``, says
        nothing N does not: it is released as ``Σ k² − k² N``, always 0 (no sensitivity, weight
        10⁸), and recovered from the released N. Everything is linear in the statistics, N
        included, so the design has no offset and is undone without N. One record added or
        removed moves coordinate j by at most ``M_j = max|z_a − c_a|·max|z_b − c_b|`` and N by 1,
        all at the same corner of the box: ``Δ_w = Σ_j w_j M_j + w_N`` exactly. Weights
        ``∝ (M_j v_j)^(−1/3)`` as under replace, 1/v_j each coordinate's importance to the parameters, the
        count's included (its noise moves a group's intercept by its offset from y's centre over the group's
        count, and σ²). The
        reference variances kept for the noise's form are the sums' for records uniform on the box and 1/4.25
        for the count (the Normal's; :func:`~pymc_dp.families.release_design.centred_add_remove_design`).
        """
        self.sensitivity(bounds, "add_remove")  # the same refusal of bounds too wide for float64
        k = float(lo[one])
        fixed = lo == hi
        centre = np.where(fixed, 0.0, lo / 2 + hi / 2)
        index = {pair: j for j, pair in enumerate(self._pairs)}
        size, count = len(self._pairs) + 1, len(self._pairs)
        shift_map = np.zeros((size, size))  # S ↦ Σ s(z − c), N being the last statistic

        def add_sum(row: int, column: int, factor: float) -> None:
            if fixed[column]:
                shift_map[row, count] += factor * lo[column]  # Σ z = N·z for a fixed column
            else:
                shift_map[row, index[tuple(sorted((one, column)))]] += factor / k

        for j, (a, b) in enumerate(self._pairs):
            shift_map[j, j] += 1.0
            add_sum(j, a, -centre[b])
            add_sum(j, b, -centre[a])
            shift_map[j, count] += centre[a] * centre[b]
        shift_map[count, count] = 1.0
        own = index[(one, one)]
        mix = np.eye(size)
        mix[own, count] = -k * k  # Σ k² − k² N = 0
        low, high = lo - centre, hi - centre
        reach = np.maximum(np.abs(low), np.abs(high))
        largest = np.array([reach[a] * reach[b] for a, b in self._pairs] + [1.0])
        largest[own] = 0.0
        with np.errstate(over="ignore", invalid="ignore"):
            spread = np.where(fixed, lo * lo, (high - low) ** 2 / 12.0)
            variances = np.array([(4.0 / 45.0) * ((high[a] - low[a]) / 2) ** 4 if a == b and not fixed[a]
                                  else spread[a] * spread[b] for a, b in self._pairs] + [1.0 / 4.25])
        moving = largest > 0
        names = self.statistic_names("add_remove")
        pooled = ""
        if variance_scale is not None:  # sums pooled over groups: their sampling variance grows with the groups
            variances = variances * variance_scale
            summed = [names[j] for j in np.flatnonzero(variance_scale != 1.0)]
            pooled = (f"; {', '.join(summed)} summed over {float(variance_scale.max()):g} groups, their reference "
                      "variances multiplied by the number of groups")
        # one record's whole row moves every coordinate at once, by at most its largest magnitude (rounded up by a
        # relative 1e-12: the centred products are computed in floating point)
        weighting, measure = _importance_weighting(self._pairs, one, high - low, fixed, variances, variance_scale,
                                                   count=True, constant=k)
        weights, delta, how = _divide_epsilon(largest, weighting, noise, rounding=1.0 + 1e-12, measure=measure)
        description = (
            f"columns centred on their bounds' midpoints ({self._midpoints(fixed, centre, lo, hi)}), N released "
            f"with their products; {names[own]} released as {names[own]} − {k * k:g}·N (always 0, weighted 1e8){pooled}; "
            f"{how.replace('range', 'largest magnitude')} {delta:.6g}"
            + ("; shares of ε " + ", ".join(f"{names[j]} {weights[j] * largest[j] / delta:.3f}" for j in np.flatnonzero(moving))
               if noise == "laplace" else "")
        )
        return ReleaseDesign(mix @ shift_map, np.zeros(size), weights, delta, description, shift=centre,
                             mix=mix, noise=noise, reference_variances=variances, objective_variances=weighting,
                             zero_coordinates=(own,)).checked(
            f"{declared_bounds('x', lo[:-1], hi[:-1])} and {declared_bounds('y', lo[-1], hi[-1])}")

    def project(self, noisy: np.ndarray, n: int | None, bounds: Mapping[str, Any], neighbouring: str) -> np.ndarray:
        """XᵀX onto the PSD cone, Xᵀy into its range, yᵀy ≥ Xᵀyᵀ(XᵀX)⁺Xᵀy ≥ 0; N̂ ≥ 1.

        Always valid (the augmented scatter matrix is PSD up to rounding); the
        identity on valid statistics up to rounding.
        """
        out = np.array(noisy, dtype=float, copy=True).ravel()
        if relation(neighbouring) == "add_remove":
            out[-1] = max(out[-1], 1.0)
            count = out[-1]
        else:
            count = float(n)  # type: ignore[arg-type]
        lo, hi = self.box(bounds)
        big_x = np.maximum(np.abs(lo), np.abs(hi))[:-1]
        xtx, xty, yty = self.unpack(out)
        xtx = project_to_psd(xtx)
        w, v = np.linalg.eigh(xtx)
        # Eigenvalues this small are zero up to rounding: relative to the largest one
        # (the projection is accurate to ~1e-16 of it) and to the largest XᵀX of N̂
        # records in the box (N̂ Σ M_i²), which also keeps (XᵀX)⁺ finite.
        tol = max(self.n_features * 1e-9 * float(w.max(initial=0.0)), 1e-12 * count * float(big_x @ big_x))
        keep = w > tol
        if not keep.all():  # XᵀX of lower rank: drop Xᵀy's part that no β can explain
            w = np.where(keep, w, 0.0)
            xtx = (v * w) @ v.T
            xty = v[:, keep] @ (v[:, keep].T @ xty)
        coef = v[:, keep].T @ xty
        with np.errstate(over="ignore"):  # coef · (coef / w): coef² alone overflows first
            floor = float(np.sum(coef * (coef / w[keep]))) if keep.any() else 0.0
        # a floor beyond the double range (huge noise) is held at the largest double
        yty = min(max(float(yty), floor, 0.0), float(np.finfo(float).max))
        d, m = self.n_features, self.n_xtx
        iu = np.triu_indices(d)
        out[:m] = xtx[iu]
        out[m : m + d] = xty
        out[m + d] = yty
        return out

    def plug_in_degeneracy(self, values: np.ndarray, n: float) -> str | None:
        """yᵀy at its floor Xᵀyᵀ(XᵀX)⁺Xᵀy: no residual left, and σ's plug-in posterior collapses."""
        xtx, xty, yty = self.unpack(np.asarray(values, dtype=float))
        explained = float(xty @ np.linalg.pinv(xtx, hermitian=True) @ xty)
        if yty - explained > 1e-9 * max(abs(yty), np.finfo(float).tiny):
            return None
        return ("the released yᵀy leaves no residual sum of squares (the noise pushed it to its floor, what the "
                "released XᵀX and Xᵀy explain)")

    def n_from_statistics(self, values: np.ndarray, neighbouring: str) -> float:
        """N̂ = the released count (the last coordinate) under add/remove."""
        if relation(neighbouring) != "add_remove":
            return super().n_from_statistics(values, neighbouring)
        return float(values[-1])

    def unpack(self, values: Any) -> tuple[Any, Any, Any]:
        """``(XᵀX, Xᵀy, yᵀy)`` from a statistics vector: a symmetric d×d matrix, a length-d vector, a scalar.

        Works on NumPy arrays and on PyTensor vectors (giving PyTensor expressions).
        A trailing N (add/remove) is ignored.
        """
        d, m = self.n_features, self.n_xtx
        iu = np.triu_indices(d)
        if isinstance(values, (np.ndarray, list, tuple)):
            values = np.asarray(values, dtype=float)
            upper = np.zeros((d, d))
            upper[iu] = values[:m]
            xtx = upper + upper.T - np.diag(np.diag(upper))
            return xtx, values[m : m + d].copy(), float(values[m + d])
        import pytensor.tensor as pt

        values = pt.as_tensor_variable(values)
        upper = pt.set_subtensor(pt.zeros((d, d))[iu], values[:m])
        xtx = upper + upper.T - pt.diag(pt.diag(upper))
        return xtx, values[m : m + d], values[m + d]

    # ------------------------------------------------------------------ model side
    def loglik(self, values: Any, n: Any, params: Mapping[str, Any]) -> Any:
        """``−(yᵀy − 2βᵀXᵀy + βᵀXᵀXβ) / (2σ²) − N log σ``, ``params = {"beta": β, "sigma": σ}``.

        β is a length-d vector (a scalar when d = 1); σ a scalar (a model variable or
        a known constant).
        """
        import pytensor.tensor as pt

        d, m = self.n_features, self.n_xtx
        k = statistic_length(values)
        base = m + d + 1
        if k not in (base, base + 1):
            raise ValueError(f"{self!r} expects {base} or {base + 1} statistics, got {k}.")
        values = pt.as_tensor_variable(values)
        count = values[base] if k == base + 1 else n
        beta = self._vector_param(params, "beta")
        sigma = params["sigma"]
        iu0, iu1 = np.triu_indices(d)
        weights = np.where(iu0 == iu1, 1.0, 2.0)
        quad = pt.sum(weights * values[:m] * beta[iu0] * beta[iu1])
        cross = pt.dot(values[m : m + d], beta)
        yty = values[m + d]
        return -(yty - 2.0 * cross + quad) / (2.0 * sigma * sigma) - count * pt.log(sigma)

    def _vector_param(self, params: Mapping[str, Any], key: str) -> Any:
        """``params[key]`` as a length-d PyTensor vector (a scalar is accepted when d = 1)."""
        import pytensor.tensor as pt

        d = self.n_features
        value = pt.cast(pt.as_tensor_variable(params[key]), "float64")
        if value.ndim == 0 and d == 1:
            value = value.reshape((1,))
        if value.ndim != 1 or value.type.shape[0] not in (None, d):
            raise ValueError(
                f"params[{key!r}] must be a vector of length n_features={d} (one value per column of X), "
                f"got static shape {value.type.shape}."
            )
        return value

    supports_noise_aware = True
    releases_count = True

    def record_moments(self, params: Mapping[str, Any], bounds: Mapping[str, Any] | None = None,
                       shift: Any = None) -> tuple[Any, Any]:
        """Moments of one record's products ``z_a z_b``, z = (x, y), under a Gaussian model of x.

        The released statistics are sums of products of x *and* y, so their
        distribution depends on how x is distributed, which a regression does not
        model. The noise-aware likelihood therefore needs a model of x (as in
        Bernstein & Sheldon 2019): ``params`` must also hold ``"x_mu"`` (the mean of x,
        length d) and either ``"x_sigma"`` (per-feature standard deviations,
        independent features) or ``"x_cov"`` (a d×d covariance) — model variables with
        priors, or constants. An intercept column of ones is ``x_mu = 1, x_sigma = 0``.

        Then z is Gaussian with mean ``(μₓ, βᵀμₓ)`` and covariance
        ``[[Σₓ, Σₓβ], [βᵀΣₓ, βᵀΣₓβ + σ²]]``, and the products' moments follow from
        Isserlis' theorem (:func:`~pymc_dp.families._noise_aware.gaussian_product_moments`).
        Records are modelled unclipped: accurate when few fall outside ``bounds``. With
        ``shift`` (a vector c over z), the moments of the products of ``z − c``.

        Raises
        ------
        ValueError
            Without ``x_mu`` and one of ``x_sigma`` / ``x_cov``.
        """
        import pytensor.tensor as pt

        from ._noise_aware import gaussian_product_moments

        d = self.n_features
        if "x_mu" not in params or not ({"x_sigma", "x_cov"} & set(params)):
            raise ValueError(
                "the noise-aware linear_regression likelihood needs a model of x: add 'x_mu' (mean of each "
                "feature) and 'x_sigma' (their standard deviations) or 'x_cov' (their covariance) to the "
                "parameters, e.g. {'beta': beta, 'sigma': sigma, 'x_mu': x_mu, 'x_sigma': x_sigma}; or use "
                "noise_aware=False."
            )
        beta = self._vector_param(params, "beta")
        x_mu = self._vector_param(params, "x_mu")
        if "x_cov" in params:
            x_cov = pt.cast(pt.as_tensor_variable(params["x_cov"]), "float64")
            if x_cov.ndim != 2:
                raise ValueError(f"params['x_cov'] must be a {d}×{d} matrix, got {x_cov.ndim} dimension(s).")
        else:
            x_cov = pt.diag(self._vector_param(params, "x_sigma") ** 2)
        sigma = pt.cast(pt.as_tensor_variable(params["sigma"]), "float64")
        cross = pt.dot(x_cov, beta)
        mean = pt.concatenate([x_mu, pt.dot(beta, x_mu)[None]])
        top = pt.concatenate([x_cov, cross[:, None]], axis=1)
        bottom = pt.concatenate([cross, (pt.dot(beta, cross) + sigma**2)[None]])[None, :]
        cov = pt.concatenate([top, bottom], axis=0)
        if shift is not None:  # the moments of the products of z − c: the mean moves, the covariance does not
            mean = mean - shift
        return gaussian_product_moments(mean, cov, self._pairs)

    def shifted_record_moments(self, params: Mapping[str, Any], bounds: Mapping[str, Any] | None, shift: Any) -> Any:
        """The moments of the products of the centred columns z − c (c = 0 on the constant column)."""
        return self.record_moments(params, bounds, shift=shift)

    @classmethod
    def from_dist(cls, dist: Any) -> tuple["LinearRegression", dict[str, Any]]:
        """Always a ValueError: no single PyMC distribution stands for this family."""
        raise ValueError(
            "the linear_regression family stands for no single PyMC distribution: use "
            "pmdp.observe_stats(name, {'beta': beta, 'sigma': sigma}, stats) with the statistics from "
            "pmdp.privatize(records, 'linear_regression', n_features=d, bounds=...)."
        )

    def conjugate_posterior(
        self,
        values: np.ndarray,
        n: float,
        *,
        mu0: Any = 0.0,
        precision0: Any = 1.0,
        sigma: float | None = None,
        alpha0: float = 1.0,
        beta0: float = 1.0,
    ) -> dict[str, Any]:
        """Conjugate update from the statistics.

        Known σ (``sigma=σ``): prior β ~ Normal(mu0, Λ0⁻¹), Λ0 = ``precision0`` (a
        scalar times the identity, or a d×d matrix) ⇒ β ~ Normal(``mean``, ``cov``)
        with ``Λ = Λ0 + XᵀX/σ²`` and ``mean = Λ⁻¹(Λ0 mu0 + Xᵀy/σ²)``.
        Returns ``{"mean", "cov"}``.

        Unknown σ (``sigma=None``): Normal-Inverse-Gamma prior ``σ² ~ InvGamma(alpha0,
        beta0)`` (shape, scale), ``β | σ² ~ Normal(mu0, σ² Λ0⁻¹)`` ⇒ the same form with
        ``Λ = Λ0 + XᵀX``, ``mean = Λ⁻¹(Λ0 mu0 + Xᵀy)``, ``alpha = alpha0 + N/2``,
        ``beta = beta0 + (yᵀy + mu0ᵀΛ0 mu0 − meanᵀΛ mean)/2``.
        Returns ``{"mean", "precision", "alpha", "beta"}``.
        """
        d = self.n_features
        xtx, xty, yty = self.unpack(np.asarray(values, dtype=float))
        mu0 = np.broadcast_to(np.asarray(mu0, dtype=float), (d,))
        prec0 = np.asarray(precision0, dtype=float)
        prec0 = prec0 * np.eye(d) if prec0.ndim == 0 else prec0
        if sigma is not None:
            prec = prec0 + xtx / sigma**2
            cov = np.linalg.inv(prec)
            return {"mean": cov @ (prec0 @ mu0 + xty / sigma**2), "cov": cov}
        prec = prec0 + xtx
        mean = np.linalg.solve(prec, prec0 @ mu0 + xty)
        return {
            "mean": mean,
            "precision": prec,
            "alpha": alpha0 + float(n) / 2.0,
            "beta": beta0 + 0.5 * (yty + float(mu0 @ prec0 @ mu0) - float(mean @ prec @ mean)),
        }


def _importance_weighting(pairs: Sequence[tuple[int, int]], one: int, widths: np.ndarray, fixed: np.ndarray,
                          variances: np.ndarray, groups: np.ndarray | None = None,
                          count: bool = False, constant: float = 1.0) -> tuple[np.ndarray, str]:
    """The v_j that :func:`_divide_epsilon` weighs the coordinates by, and their name for the ledger: 1/c_j, c_j the
    coordinate's importance to the parameters (:mod:`._regression_importance`), or the reference variances where
    that is not defined (another constant column beside the intercept's)."""
    with np.errstate(over="ignore", invalid="ignore"):
        importance = coordinate_importance(pairs, one, widths / 2.0, fixed, groups, count, constant)
    if importance is None:
        return variances, "variance"
    # The estimates divide by XᵀX and by N: their noise must also stay small beside their own spread, or the estimates
    # leave the delta method's reach (five covariates' noisy XᵀX near singular; a hierarchy's latent counts near 0 at
    # 125 records a group, eps = 0.1): those coordinates keep their per-coordinate term (the count's 1/4.25) too
    y = len(widths) - 1
    inverted = np.array([one not in pair and y not in pair for pair in pairs] + [True] * (importance.size - len(pairs)))
    with np.errstate(divide="ignore", over="ignore"):
        importance = np.where(inverted, importance + 1.0 / variances, importance)
        return np.where(importance > 0, 1.0 / importance, variances), "1/importance to the parameters"


def _divide_epsilon(ranges: np.ndarray, variances: np.ndarray, noise: str, rounding: float,
                    measure: str = "variance") -> tuple[np.ndarray, float, str]:
    """Weights for the centred products and the weighted vector's sensitivity, for Laplace or Gaussian noise.

    ``ranges`` are how far one record moves each coordinate (0: a public coordinate, weighted 10⁸
    so that its noise is negligible), ``variances`` the reference variances v_j. Laplace: weights
    ``∝ (R_j v_j)^(−1/3)`` and the L1 sensitivity ``Σ w_j R_j``; Gaussian: ``∝ (R_j² v_j)^(−1/4)``
    and the L2 bound ``√(Σ (w_j R_j)²)`` (each minimises its sensitivity² × Σ 1/(w_j² v_j)).
    Returns the weights, the sensitivity times ``rounding``, and the words for the ledger.
    """
    moving = ranges > 0
    weights = np.ones(ranges.size)
    power, exponent = (1.0, 3.0) if noise == "laplace" else (2.0, 4.0)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):  # in logs: R·v overflows for wide boxes
        log_weights = -(power * np.log(ranges[moving]) + np.log(variances[moving])) / exponent
    weights[moving] = np.exp(log_weights - log_weights.max())
    weights[~moving] = 1e8
    moved = weights[moving] * ranges[moving]
    if noise == "laplace":
        return weights, float(np.sum(moved)) * rounding, f"weights ∝ (range × {measure})^(−1/3), weighted sensitivity"
    return (weights, float(np.sqrt(np.sum(moved * moved))) * rounding,
            f"for Gaussian noise: weights ∝ (range² × {measure})^(−1/4), weighted L2 sensitivity")
