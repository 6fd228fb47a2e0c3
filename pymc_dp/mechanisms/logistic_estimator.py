"""A private logistic-regression classifier with scikit-learn's shape.

:class:`PrivateLogisticRegression` wraps :func:`~pymc_dp.objective_perturbation_logistic`
and :func:`~pymc_dp.output_perturbation_logistic` (Chaudhuri, Monteleoni & Sarwate 2011)
in an estimator that a user of scikit-learn or diffprivlib knows how to drive::

    clf = pmdp.PrivateLogisticRegression(epsilon=1.0, feature_l2_bound=5.0, ledger=ledger)
    clf.fit(X_train, y_train)          # charges ε to the ledger, once
    clf.predict(X_test), clf.predict_proba(X_test), clf.coef_, clf.intercept_

scikit-learn is not needed (nor imported): the class only mimics its API (``fit``,
``predict``, ``predict_proba``, ``predict_log_proba``, ``decision_function``, ``score``,
``get_params``/``set_params``; ``coef_`` of shape (1, d), ``intercept_`` of shape (1,),
``classes_``, ``n_features_in_``), so it can sit in a scikit-learn pipeline.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ..accounting.validation import as_records, check_epsilon, check_finite_array
from .logistic_regression import (
    PerturbedWeights,
    _positive,
    check_logistic_records,
    objective_perturbation_logistic,
    output_perturbation_logistic,
)
from .noise import _require_ledger, resolve_noise_source

if TYPE_CHECKING:  # pragma: no cover
    from ..accounting import LedgerEntry, PrivacyLedger

__all__ = ["PrivateLogisticRegression", "NotFittedError"]

_MECHANISMS = {"objective": objective_perturbation_logistic, "output": output_perturbation_logistic}


class NotFittedError(ValueError, AttributeError):
    """A prediction was asked of a :class:`PrivateLogisticRegression` before ``fit`` (as scikit-learn's, a
    ``ValueError`` and an ``AttributeError``)."""


class PrivateLogisticRegression:
    """ε-differentially private L2-regularised logistic regression, as a scikit-learn-style classifier.

    ``fit(X, y)`` releases the minimiser of

        (1/N) Σᵢ log(1 + exp(−sᵢ (coef · xᵢ + intercept))) + (λ/2) (R² ‖coef‖² + (R/a)² intercept²),

    with sᵢ = 2yᵢ − 1, a the intercept column's constant and R = √(B² + a²) (R = B and no
    intercept without one): λ is the regularisation of the weights of the rows
    ``[x, a] / R``, which lie on the unit ball, as in the functions. With the default a = B
    the penalty is λ (B² ‖coef‖² + intercept²). Privacy comes from objective perturbation
    (default: a random linear term in that objective, CMS 2011 Alg. 2, with the extra ridge
    at small ε described in
    :func:`~pymc_dp.mechanisms.logistic_regression.objective_perturbation_ridge`) or output
    perturbation (noise added to its minimiser, Alg. 1). Everything after ``fit`` —
    ``predict``, ``predict_proba``, ``decision_function``, ``coef_`` — is post-processing
    of that one release and costs nothing more.

    Parameters
    ----------
    epsilon
        ε of each fit (> 0).
    feature_l2_bound
        B, the declared bound on the Euclidean norm ‖x‖₂ of a feature row (the columns of
        ``X``, without the intercept). A property of the feature domain chosen without
        looking at the records (e.g. √d·r for d features each in [−r, r]). Rows above it
        are projected onto the ball of radius B and counted, to the curator only (a
        :class:`~pymc_dp.mechanisms.logistic_regression.ClippedFeaturesWarning`).
    mechanism
        ``"objective"`` (default; less noisy in CMS 2011's experiments and ours) or
        ``"output"``.
    regularisation
        λ > 0 (default 0.01) of the mechanisms, on rows rescaled to the unit ball; larger
        is less noisy and more biased toward 0. Objective perturbation raises it where ε is
        small for N·λ (see above; the ledger entry's details record the extra ridge).
    fit_intercept
        Add an intercept (default ``True``). The intercept column is a public constant a
        (``intercept_scaling``) appended inside ``fit``: each row becomes ``[x, a]``, whose L2
        norm is at most R = √(B² + a²), the bound the mechanism is given; the intercept
        reported is a times the last weight. With ``False`` the bound is B.
    intercept_scaling
        a, the constant of the intercept column (scikit-learn's name for it). ``None``
        (default) takes a = B, so R = √2·B: the fit is then unchanged when X and B are
        rescaled together, and the intercept is penalised like the weight of a feature at
        the bound. ``1.0`` is diffprivlib's choice (R = √(B² + 1)): it penalises the
        intercept more heavily the larger B is, and the coefficients less.
    ledger
        The :class:`~pymc_dp.PrivacyLedger` every fit charges (required; replace-one
        neighbouring: N is public).
    rng
        ``None`` (default): OpenDP's secure samplers. An ``int`` seed or a
        ``numpy.random.Generator`` for reproducible noise (research and tests only): the
        estimator turns it into one noise source when built, so successive fits draw
        independent noise.

    Attributes
    ----------
    coef_
        (1, d) weights in the units of ``X``.
    intercept_
        (1,) the intercept (0 when ``fit_intercept=False``).
    classes_
        ``array([0, 1])``: labels must be 0 or 1 (booleans accepted).
    n_features_in_
        d, the number of columns of ``X`` at fit.
    release_
        The :class:`~pymc_dp.PerturbedWeights` the mechanism released (weights on ``[x, a]``).
    entry_
        The ledger entry of the last fit (its ``details`` hold the noise scale and, for
        objective perturbation, ``epsilon_prime`` and ``extra_ridge``).

    Notes
    -----
    *Each call of* ``fit`` *is a new release and a new charge of ε* to the ledger, never a
    free refit: fitting twice on the same records spends 2ε (sequential composition), and
    the second fit replaces the first's weights. The budget is checked, and every argument
    and the records' shapes validated, before any noise is drawn; a refused fit (a bad
    setting or shape, a budget that cannot afford ε) charges nothing and leaves a fitted
    estimator as it was. A malformed record (a label other than 0/1, a NaN, infinite or
    non-numeric feature) is never refused — a refusal would say that some record is
    malformed — but counts as the default record x = 0, y = 0, as in the functions (the
    count for the curator only). ``predict`` and the others, which read the analyst's own
    rows, refuse NaN features. ``score`` on the
    private training records is itself a statistic of the records, not covered by the
    ledger: score on held-out or public data.
    """

    def __init__(
        self, *, epsilon: float, feature_l2_bound: float, mechanism: str = "objective",
        regularisation: float = 0.01, fit_intercept: bool = True, intercept_scaling: float | None = None,
        ledger: "PrivacyLedger", rng: Any = None,
    ) -> None:
        self.epsilon = epsilon
        self.feature_l2_bound = feature_l2_bound
        self.mechanism = mechanism
        self.regularisation = regularisation
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.ledger = ledger
        self.rng = rng
        self._check_settings()
        self._noise = resolve_noise_source(rng)

    # ------------------------------------------------------------------ parameters

    _PARAMS = ("epsilon", "feature_l2_bound", "mechanism", "regularisation", "fit_intercept", "intercept_scaling",
               "ledger", "rng")

    def _check_settings(self) -> None:
        check_epsilon(self.epsilon, "epsilon")
        _positive(self.feature_l2_bound, "feature_l2_bound")
        _positive(self.regularisation, "regularisation")
        if self.mechanism not in _MECHANISMS:
            raise ValueError(f"mechanism must be 'objective' or 'output', got {self.mechanism!r}.")
        if not isinstance(self.fit_intercept, (bool, np.bool_)):
            raise ValueError(f"fit_intercept must be True or False, got {self.fit_intercept!r}.")
        if self.intercept_scaling is not None:
            _positive(self.intercept_scaling, "intercept_scaling")
        ledger = _require_ledger(self.ledger)
        if ledger.neighbouring != "replace":
            raise ValueError(
                "PrivateLogisticRegression needs a ledger with replace-one neighbouring (N is public: the "
                f"mechanisms' regularisation uses it); the ledger uses {ledger.neighbouring!r}."
            )
        resolve_noise_source(self.rng)  # refuses a bad rng now, not at fit

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor's arguments (scikit-learn's ``get_params``)."""
        return {name: getattr(self, name) for name in self._PARAMS}

    def set_params(self, **params: Any) -> "PrivateLogisticRegression":
        """Set constructor arguments (scikit-learn's ``set_params``); validated at once. A new ``rng`` restarts the
        noise source."""
        unknown = sorted(set(params) - set(self._PARAMS))
        if unknown:
            raise ValueError(f"PrivateLogisticRegression has no parameter(s) {unknown}; it takes {list(self._PARAMS)}.")
        old = self.get_params()
        for name, value in params.items():
            setattr(self, name, value)
        try:
            self._check_settings()
        except Exception:
            for name, value in old.items():
                setattr(self, name, value)
            raise
        if "rng" in params:
            self._noise = resolve_noise_source(self.rng)
        return self

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={getattr(self, k)!r}" for k in ("epsilon", "feature_l2_bound", "mechanism",
                                                                 "regularisation", "fit_intercept"))
        return f"PrivateLogisticRegression({shown})"

    # ------------------------------------------------------------------ fitting

    def fit(self, X: Any, y: Any) -> "PrivateLogisticRegression":
        """Release private weights for the records ``(X, y)``, charging ε to the ledger once; returns ``self``.

        ``X`` is (N, d), ``y`` holds N labels 0 or 1; a record with a NaN, infinite or
        non-numeric feature or another label counts as the default record x = 0, y = 0
        (counted for the curator only, never refused). Every fit is a new charge (see the
        class notes); nothing is charged when the fit is refused (shapes, settings, budget).
        """
        self._check_settings()
        features = as_records(X)  # malformed entries are repaired below, never refused (threat model)
        if features.ndim != 2:
            raise ValueError(
                f"X must be a 2-D array of records × features, got shape {features.shape}; reshape a single "
                "feature with X.reshape(-1, 1)."
            )
        bound = float(self.feature_l2_bound)
        # Validate the labels and project rows onto ‖x‖₂ ≤ B *before* the constant joins them,
        # so that every row's intercept column is exactly a.
        features, labels = check_logistic_records(features, y, bound, "l2", bound_name="feature_l2_bound")
        n, d = features.shape
        constant = bound if self.intercept_scaling is None else float(self.intercept_scaling)
        if self.fit_intercept:
            design = np.column_stack([features, np.full(n, constant)])
            design_bound = math.hypot(bound, constant)
        else:
            design, design_bound = features, bound
        release: PerturbedWeights = _MECHANISMS[self.mechanism](
            design, labels, epsilon=self.epsilon, feature_l2_bound=design_bound,
            regularisation=self.regularisation, ledger=self.ledger, rng=self._noise,
        )
        w = np.asarray(release.weights, dtype=float)
        self.coef_ = w[:d].reshape(1, d).copy()
        self.intercept_ = np.array([w[d] * constant if self.fit_intercept else 0.0])
        self.classes_ = np.array([0, 1])
        self.n_features_in_ = d
        self.release_ = release
        self.entry_: "LedgerEntry" = release.entry
        return self

    # ------------------------------------------------------------------ prediction (post-processing)

    def _check_fitted(self) -> None:
        if not hasattr(self, "coef_"):
            raise NotFittedError(
                "This PrivateLogisticRegression is not fitted yet: call fit(X, y) first (it charges the ledger)."
            )

    def _rows(self, X: Any) -> np.ndarray:
        self._check_fitted()
        rows = check_finite_array(X, "X", fix="predictions need finite features: drop or impute them first.")
        if rows.ndim != 2 or rows.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X must be a 2-D array with the {self.n_features_in_} feature column(s) seen at fit, got shape "
                f"{rows.shape}."
            )
        return rows

    def decision_function(self, X: Any) -> np.ndarray:
        """(n,) the log-odds ``X @ coef_[0] + intercept_[0]`` of label 1."""
        return self._rows(X) @ self.coef_[0] + self.intercept_[0]

    def predict_proba(self, X: Any) -> np.ndarray:
        """(n, 2): the probabilities of labels 0 and 1 (columns in the order of ``classes_``)."""
        p = 0.5 * (1.0 + np.tanh(0.5 * self.decision_function(X)))
        return np.column_stack([1.0 - p, p])

    def predict_log_proba(self, X: Any) -> np.ndarray:
        """(n, 2): the log of :meth:`predict_proba`, computed stably."""
        z = self.decision_function(X)
        return np.column_stack([-np.logaddexp(0.0, z), -np.logaddexp(0.0, -z)])

    def predict(self, X: Any) -> np.ndarray:
        """(n,) labels 0 or 1: 1 where the decision function is positive (probability above ½)."""
        positive = self.decision_function(X) > 0  # checks the fit first
        return self.classes_[positive.astype(int)]

    def score(self, X: Any, y: Any) -> float:
        """Mean accuracy of :meth:`predict` on ``(X, y)``. Not private on the training records (see the notes)."""
        labels = np.asarray(y)
        rows = self._rows(X)
        if labels.shape != (rows.shape[0],):
            raise ValueError(f"y must hold one label per row of X ({rows.shape[0]}), got shape {labels.shape}.")
        return float(np.mean(self.predict(rows) == labels))
