"""The reusable holdout (Thresholdout; Dwork, Feldman, Hardt, Pitassi, Reingold & Roth, NIPS 2015).

An analyst who checks models on a holdout set again and again, choosing the next model
by what the holdout said, overfits the holdout: its estimates stop being estimates.
Thresholdout answers each query φ (a bounded function of one record) by comparing the
analyst's own training estimate ``a = E_train[φ]`` with the holdout's ``h = E_hold[φ]``:

* draw ``γ ~ Lap(2σ)``, set ``T̂ = T + γ`` (once per *segment*);
* for each query draw ``η ~ Lap(4σ)``; if ``|a − h| > T̂ + η`` the training estimate
  is off: answer ``h + ξ``, ``ξ ~ Lap(σ)``, and start a new segment (new ``γ``),
  using one unit of the budget B; otherwise answer ``a`` itself.

Privacy ([DFHPRR15], Thm 23; Dwork & Roth 2014, §3.6, AboveThreshold). With values in
``[lo, hi]`` and n holdout records (public: replace-one neighbouring), one record moves
``h`` (and ``|a − h|``, ``a`` being fixed) by at most ``Δ = (hi − lo)/n``. A segment —
the threshold draw, every comparison in it and the one noisy answer that ends it — is
the sparse vector technique with noise ``2σ = 2Δ/ε₁`` and ``4σ = 4Δ/ε₁`` (ε₁ = Δ/σ)
followed by a Laplace answer of scale ``σ = Δ/ε₂`` (ε₂ = Δ/σ): **ε = 2Δ/σ per segment**,
and at most B segments: ``2B(hi − lo)/(σ n)`` in all. Queries answered below the
threshold cost nothing more.

This module charges each segment when it *opens*, before its first query touches the
holdout: the ledger then never lags what was released, and the budget is checked first.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from ..accounting.curator import curator_report
from ..accounting.validation import as_records, check_finite_array
from ._quiet import quietly
from .logistic_regression import REPLACE_ONLY, ClippedFeaturesWarning, _positive
from .noise import _require_ledger, resolve_noise_source

if TYPE_CHECKING:  # pragma: no cover
    from ..accounting import PrivacyLedger

__all__ = ["ReusableHoldout", "HoldoutAnswer", "HoldoutExhaustedError", "SEGMENT_MECHANISM"]

#: The ledger mechanism name of one Thresholdout segment.
SEGMENT_MECHANISM = "thresholdout"
#: The assumption a batch query (``batch=True``) adds to the ledger entry of its segment.
BATCH_ROWWISE = (
    "the analyst declared that each batch query maps every holdout record to a value that depends on that record "
    "alone (batch=True)"
)


class HoldoutExhaustedError(RuntimeError):
    """The reusable holdout has given all the over-threshold answers its budget allows."""


@dataclass(frozen=True)
class HoldoutAnswer:
    """One answer of :meth:`ReusableHoldout.query`.

    Attributes
    ----------
    value
        The answer: the training estimate when it agreed with the holdout (within the noisy
        threshold), else the holdout estimate plus Laplace noise.
    over_threshold
        Whether the holdout disagreed (the answer is the noisy holdout estimate). A function
        of the released answer and the analyst's own training estimate: nothing more.
    training
        The analyst's training estimate ``a`` the holdout was compared with.
    """

    value: float
    over_threshold: bool
    training: float

    def __float__(self) -> float:
        return float(self.value)


def _range(value_range: Any) -> tuple[float, float]:
    try:
        lo, hi = (float(v) for v in value_range)
    except (TypeError, ValueError):
        raise ValueError(f"value_range must be (lower, upper), two finite numbers, got {value_range!r}.") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f"value_range must be (lower, upper) with lower < upper, both finite, got {value_range!r}.")
    return lo, hi


class ReusableHoldout:
    """A holdout set that stays valid under adaptive reuse: Thresholdout, charged per segment.

    Parameters
    ----------
    holdout
        The holdout records, one per row (private). A DataFrame becomes its values.
    training
        The analyst's training records (optional; not private here). When given,
        :meth:`query` computes the training estimate of φ itself; otherwise pass it.
    threshold
        T, the gap between training and holdout estimates that counts as overfitting,
        in the units of φ (Dwork et al. use 0.04 for accuracies in [0, 1]).
    sigma
        σ, the noise rate (threshold noise Lap(2σ), comparison noise Lap(4σ), answer
        noise Lap(σ)), in the units of φ (Dwork et al.: 0.01).
    budget
        B, the number of over-threshold answers (segments) allowed. The ledger is charged
        ``2(hi − lo)/(σ n)`` for each segment opened; B segments cost at most
        ``2B(hi − lo)/(σ n)``.
    value_range
        ``(lo, hi)``: φ's values are clipped into it (counted for the curator only). The
        sensitivity of a holdout mean is ``(hi − lo)/n``. Default (0, 1).
    ledger
        The :class:`~pymc_dp.PrivacyLedger` to charge (replace-one neighbouring: n is public).
    rng
        ``None`` (default) for OpenDP's secure Laplace sampler; a seed or a NumPy
        generator for reproducible seeded noise (research and tests only).
    batch
        ``False`` (default): every query φ is called on one record at a time, so each
        value depends on its record alone by construction. ``True``: φ is called once on
        all the records (much faster); you declare that it treats each row on its own (no
        standardising across rows), and every ledger entry records that declaration.

    Examples
    --------
    >>> ledger = pmdp.PrivacyLedger()                                     # doctest: +SKIP
    >>> holdout = pmdp.ReusableHoldout(X_hold, training=X_train, threshold=0.04, sigma=0.01,
    ...                                budget=100, ledger=ledger, batch=True)  # doctest: +SKIP
    >>> holdout.query(lambda rec: rec[:, 0] * rec[:, -1]).value          # doctest: +SKIP
    """

    def __init__(
        self, holdout: Any, *, training: Any = None, threshold: float, sigma: float, budget: int,
        value_range: Any = (0.0, 1.0), ledger: "PrivacyLedger", rng: Any = None, batch: bool = False,
    ) -> None:
        records = as_records(holdout)
        if records.ndim < 1 or records.shape[0] < 1:
            raise ValueError(f"holdout must hold at least one record (one per row), got shape {records.shape}.")
        self._holdout = records
        self._training = None if training is None else np.asarray(training)
        if self._training is not None and (self._training.ndim < 1 or self._training.shape[0] < 1):
            raise ValueError("training must hold at least one record (one per row), or be left out.")
        self.threshold = _positive(threshold, "threshold")
        self.sigma = _positive(sigma, "sigma")
        if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or budget < 1:
            raise ValueError(f"budget must be a positive integer (over-threshold answers allowed), got {budget!r}.")
        self.budget = int(budget)
        self.value_range = _range(value_range)
        self.ledger = _require_ledger(ledger)
        if self.ledger.neighbouring != "replace":
            raise ValueError("ReusableHoldout needs replace-one neighbouring (the holdout size n is public: the "
                             f"sensitivity of a mean is (hi - lo)/n); the ledger uses {self.ledger.neighbouring!r}.")
        self._source = resolve_noise_source(rng)
        if not isinstance(batch, bool):
            raise ValueError(f"batch must be True or False, got {batch!r}.")
        self.batch = batch
        self.n = int(records.shape[0])
        self.sensitivity = (self.value_range[1] - self.value_range[0]) / self.n
        self.epsilon_per_segment = 2.0 * self.sensitivity / self.sigma
        self._segments = 0
        self._over = 0
        self._queries = 0
        self._noisy_threshold: float | None = None

    # ------------------------------------------------------------------ state (functions of the answers only)

    @property
    def queries(self) -> int:
        """How many queries were answered."""
        return self._queries

    @property
    def over_threshold(self) -> int:
        """How many answers were over the threshold (noisy holdout estimates)."""
        return self._over

    @property
    def training(self) -> np.ndarray | None:
        """The analyst's training records given as ``training=`` (not private here), or ``None``."""
        return self._training

    @property
    def remaining(self) -> int:
        """Over-threshold answers left in the budget B."""
        return self.budget - self._over

    @property
    def max_epsilon(self) -> float:
        """What the holdout costs if every segment of B is opened: ``2B(hi − lo)/(σ n)``."""
        return self.budget * self.epsilon_per_segment

    def __repr__(self) -> str:
        return (f"ReusableHoldout(n={self.n}, threshold={self.threshold:g}, sigma={self.sigma:g}, budget={self.budget}, "
                f"{self._queries} queries answered, {self._over} over the threshold, ε = "
                f"{self._segments * self.epsilon_per_segment:.6g} charged of at most {self.max_epsilon:.6g})")

    # ------------------------------------------------------------------ queries

    def _values(self, phi: Callable[[np.ndarray], Any], records: np.ndarray, what: str) -> np.ndarray:
        """φ of every record, clipped into the value range (non-finite values count as the lower end).

        On the training records (the analyst's own) φ's errors propagate as they are. On the holdout
        nothing of φ's run does: whether φ fails, its messages, its warnings and anything it prints
        depend on the private records, so φ runs there silenced (:func:`~pymc_dp.mechanisms._quiet.quietly`)
        and a record on which φ raises, is NaN or gives no single number counts as the lower end of
        the range (counted for the curator only); ±inf are clipped to the ends. Run φ on training
        records first to debug it.
        """
        if not callable(phi):
            raise ValueError(f"phi must be a function of a batch of records returning one value per record, got {phi!r}.")
        private = what == "holdout"
        with quietly() if private else contextlib.nullcontext():
            values = self._evaluate(phi, records, private)
        lo, hi = self.value_range
        bad = np.isnan(values)
        outside = (values < lo) | (values > hi)
        if bad.any() or outside.any():
            curator_report(f"phi was outside value_range on {int(outside.sum())} and failed or was NaN on "
                           f"{int(bad.sum())} of the {what} records; clipped (failures to the lower end). Not released.",
                           ClippedFeaturesWarning, stacklevel=4)
        values[bad] = lo
        return np.clip(values, lo, hi)

    def _evaluate(self, phi: Callable[[np.ndarray], Any], records: np.ndarray, private: bool) -> np.ndarray:
        """φ of every record (NaN where it failed on a private record)."""
        n = records.shape[0]
        values = None
        if self.batch:
            try:
                values = np.asarray(phi(records), dtype=float).reshape(-1)
            except BaseException:  # noqa: BLE001 - on private records any exit is data (SystemExit included)
                if not private:
                    raise
            if values is not None and values.size != n:
                if not private:
                    raise ValueError(f"phi returned {values.size} value(s) for a batch of {n} records: it must return "
                                     "one value per record.")
                values = None
        if values is None:  # one record at a time (also when a batch call failed on the holdout)
            values = np.full(n, np.nan)
            for i in range(n):
                try:
                    one = np.asarray(phi(records[i:i + 1]), dtype=float).reshape(-1)
                except BaseException:  # noqa: BLE001 - any exit on a private record is data
                    if not private:
                        raise
                    continue
                if one.size != 1:
                    if not private:
                        raise ValueError(f"phi must return one value per record; for one record it returned {one.size}.")
                    continue
                values[i] = one[0]
        return values

    def _open_segment(self) -> None:
        """Charge a new segment (budget checked first), then draw its noisy threshold."""
        assumptions = (REPLACE_ONLY, BATCH_ROWWISE) if self.batch else (REPLACE_ONLY,)
        with self.ledger.charge(
            SEGMENT_MECHANISM, epsilon=self.epsilon_per_segment, delta=0.0, count=1,
            touched=f"reusable holdout ({self.n} records): segment {self._segments + 1} of at most {self.budget}",
            noise_source=self._source.name, assumptions=assumptions, parallel_group=None, event=None,
            details={"threshold": self.threshold, "sigma": self.sigma, "sensitivity": self.sensitivity,
                     "value_range": list(self.value_range), "segment": self._segments + 1, "budget": self.budget,
                     "noise": "threshold Lap(2σ), comparisons Lap(4σ), answer Lap(σ)"},
        ):
            gamma = float(self._source.laplace(2.0 * self.sigma, 1)[0])
        self._segments += 1
        self._noisy_threshold = self.threshold + gamma

    def query(self, phi: Callable[[np.ndarray], Any], *, training_value: float | None = None) -> HoldoutAnswer:
        """Answer E[φ] on the holdout, the Thresholdout way.

        Parameters
        ----------
        phi
            A function from a batch of records to one value per record, in ``value_range``
            (clipped into it). It is called on one record at a time (each value then depends
            on its record alone by construction), or once on all of them if the holdout was
            built with ``batch=True``.
        training_value
            The analyst's training estimate of E[φ]; computed from ``training`` when that was
            given (then leave this out).

        Returns
        -------
        HoldoutAnswer
            The answer, whether it was over the threshold, and the training estimate.

        Raises
        ------
        HoldoutExhaustedError
            When B over-threshold answers have been given: the holdout answers no more.
        pymc_dp.BudgetExceededError
            When the ledger cannot pay for a new segment (nothing is drawn then).
        """
        if self._over >= self.budget:
            raise HoldoutExhaustedError(
                f"the reusable holdout has given all {self.budget} over-threshold answers of its budget "
                f"(ε = {self.max_epsilon:.6g} spent in all); it answers no more queries. Use a fresh holdout.")
        if training_value is None:
            if self._training is None:
                raise ValueError("give training_value= (your training estimate of E[phi]), or build the holdout "
                                 "with training= records.")
            a = float(np.mean(self._values(phi, self._training, "training")))
        else:
            if self._training is not None:
                raise ValueError("this holdout computes the training estimate from its training= records; leave "
                                 "training_value out.")
            a = float(check_finite_array(training_value, "training_value", fix="a finite number"))
        if self._noisy_threshold is None:
            self._open_segment()  # charged (budget checked) before φ touches the holdout
        values = self._values(phi, self._holdout, "holdout")
        self._queries += 1
        h = float(np.mean(values))
        eta = float(self._source.laplace(4.0 * self.sigma, 1)[0])
        if abs(a - h) > self._noisy_threshold + eta:
            xi = float(self._source.laplace(self.sigma, 1)[0])
            self._over += 1
            self._noisy_threshold = None  # the next query opens (and pays for) a new segment
            return HoldoutAnswer(h + xi, True, a)
        return HoldoutAnswer(a, False, a)
