"""A private second-moment matrix of norm-bounded records, for principal components ([WM10] §4.2).

:func:`noisy_second_moment` releases the upper triangle (diagonal included) of
``S = Σ_i x_i x_iᵀ`` with noise, the records' rows projected onto ‖x‖₂ ≤ ``norm_bound`` R
(counted, with a warning to the curator). Replacing one record changes S by
``x xᵀ − x′ x′ᵀ``:

* its Frobenius norm is at most √2·R² (‖x xᵀ − x′x′ᵀ‖²_F = ‖x‖⁴ + ‖x′‖⁴ − 2(x·x′)²), and the
  upper triangle's L2 norm is at most that — the **Gaussian** mechanism's sensitivity,
  the same in every dimension d;
* the upper triangle's L1 norm is at most (‖x‖₁² + ‖x‖₂²)/2 per record, ≤ (d + 1)R²/2, so
  (d + 1)R² under replace-one — the **Laplace** mechanism's sensitivity, growing with d.

So the analytic Gaussian mechanism (``mechanism="gaussian"``, the default; (ε, δ)-DP) adds
noise whose scale does not grow with the dimension, and the noise-aware likelihood of
:func:`pymc_dp.pca_from_second_moment` is then exactly Normal given the CLT. The Laplace
mechanism (pure ε-DP) is there for a pure guarantee, at a noise scale about (d + 1)/√2 times
larger per entry.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..accounting.validation import check_finite_array
from .gaussian import gaussian_mechanism
from .laplace import laplace_mechanism
from .logistic_regression import REPLACE_ONLY, _positive, project_rows
from .noise import _require_ledger

if TYPE_CHECKING:  # pragma: no cover
    from ..accounting import LedgerEntry, PrivacyLedger

__all__ = ["SecondMomentRelease", "noisy_second_moment", "upper_triangle"]


def upper_triangle(d: int) -> tuple[np.ndarray, np.ndarray]:
    """Row and column indices of the upper triangle of a d × d matrix, diagonal included (row-major)."""
    return np.triu_indices(d)


@dataclass(frozen=True)
class SecondMomentRelease:
    """What :func:`noisy_second_moment` released.

    Attributes
    ----------
    values
        The noisy upper triangle of Σ x xᵀ, in :func:`upper_triangle` order.
    dimension
        d.
    n_records
        N (public).
    norm_bound
        R, the declared bound on ‖x‖₂.
    mechanism
        ``"gaussian"`` or ``"laplace"``.
    noise_sd
        The noise's standard deviation on every entry (σ, or √2·b).
    entry
        The ledger entry recorded.
    """

    values: np.ndarray
    dimension: int
    n_records: int
    norm_bound: float
    mechanism: str
    noise_sd: float
    entry: "LedgerEntry" = field(repr=False)

    def matrix(self) -> np.ndarray:
        """The noisy S as a symmetric d × d matrix (post-processing)."""
        out = np.zeros((self.dimension, self.dimension))
        rows, cols = upper_triangle(self.dimension)
        out[rows, cols] = self.values
        out[cols, rows] = self.values
        return out


def noisy_second_moment(
    X: Any, *, epsilon: float, norm_bound: float, delta: float = 1e-6, mechanism: str = "gaussian",
    ledger: "PrivacyLedger", rng: Any = None, assumptions: "tuple[str, ...]" = (),
) -> SecondMomentRelease:
    """Release Σ x xᵀ of norm-bounded records with Gaussian (default) or Laplace noise.

    Parameters
    ----------
    X
        (N, d) records; rows with ‖x‖₂ > ``norm_bound`` are projected onto the ball (counted,
        with a warning; the count is not released).
    epsilon, delta
        The guarantee: (ε, δ) for ``"gaussian"`` (analytic Gaussian mechanism), ε for
        ``"laplace"`` (``delta`` ignored).
    norm_bound
        R, the declared bound on ‖x‖₂ (required).
    mechanism
        ``"gaussian"`` (L2 sensitivity √2·R², independent of d) or ``"laplace"`` (L1
        sensitivity (d + 1)R²). Module docstring: why Gaussian is the default.
    ledger, rng
        The ledger to charge (replace-one neighbouring: N is public) and the noise source
        (``None``: OpenDP's secure samplers).
    assumptions
        Further assumptions the ledger entry records (``"laplace"`` only).
    """
    if mechanism not in ("gaussian", "laplace"):
        raise ValueError(f"mechanism must be 'gaussian' or 'laplace', got {mechanism!r}.")
    if assumptions and mechanism != "laplace":
        raise ValueError("assumptions= is recorded by the Laplace variant only: pass mechanism='laplace'.")
    bound = _positive(norm_bound, "norm_bound")
    ledger = _require_ledger(ledger)
    if ledger.neighbouring != "replace":
        raise ValueError(f"noisy_second_moment needs replace-one neighbouring (N public); the ledger uses "
                         f"{ledger.neighbouring!r}.")
    X = check_finite_array(X, "X")
    if X.ndim != 2 or X.shape[0] < 1 or X.shape[1] < 1:
        raise ValueError(f"X must be a 2-D array of records × coordinates, got shape {X.shape}.")
    X = project_rows(X, bound, "l2")
    n, d = X.shape
    rows, cols = upper_triangle(d)
    exact = (X.T @ X)[rows, cols]
    touched = f"second moment Σxxᵀ ({d}×{d}, upper triangle)"
    if mechanism == "gaussian":
        sensitivity = math.sqrt(2.0) * bound**2
        values, entry = gaussian_mechanism(exact, epsilon=epsilon, delta=delta, sensitivity=sensitivity, ledger=ledger,
                                           rng=rng, touched=touched, return_entry=True)
        sd = float(entry.details["scale"])
    else:
        sensitivity = (d + 1) * bound**2
        values, entry = laplace_mechanism(exact, epsilon=epsilon, sensitivity=sensitivity, ledger=ledger, rng=rng,
                                          touched=touched, assumptions=(REPLACE_ONLY, *assumptions), return_entry=True)
        sd = math.sqrt(2.0) * sensitivity / float(epsilon)
    values = np.asarray(values, dtype=float)
    values.setflags(write=False)
    return SecondMomentRelease(values, d, n, bound, mechanism, sd, entry)
