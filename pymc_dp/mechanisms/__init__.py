"""Differentially private mechanisms, each charging a :class:`~pymc_dp.accounting.PrivacyLedger`.

======================================= ============================================ ========================
function                                releases                                     guarantee
======================================= ============================================ ========================
:func:`laplace_mechanism`               real vector + Laplace(Δ₁/ε) noise            ε-DP
:func:`gaussian_mechanism`              real vector + N(0, σ²), analytic σ           (ε, δ)-DP
:func:`geometric_mechanism`             integer vector + discrete Laplace noise      ε-DP
:func:`exponential_mechanism`           one of finitely many candidates              ε-DP
:func:`randomized_response`             each answer randomised on its own            ε-DP (local)
:func:`release_posterior`               a whole Dirichlet posterior (LSDim, LSHist,  ε-DP (EHDL: not private)
                                        EHD, EHDS; EHDL as a non-private benchmark)
:func:`noisy_gradient_logistic`         every noisy gradient sum of T rounds of      ε-DP
                                        logistic-regression gradient ascent
:func:`output_perturbation_logistic`    regularised logistic weights + noise         ε-DP
:func:`objective_perturbation_logistic` weights minimising a noise-perturbed         ε-DP
                                        objective
:class:`PrivateLogisticRegression`      either perturbation, as a classifier with    ε-DP per fit
                                        scikit-learn's API and an intercept
:func:`noisy_second_moment`             Σ x xᵀ of norm-bounded records + noise       (ε, δ)-DP or ε-DP
:func:`noisy_bounded_sum`               Σ f(r) for your own f, ‖f(r)‖₁ ≤ B declared   ε-DP
:func:`suggest_bounds`                  each column's range: a private end each side  ε-DP
                                        over a public grid (exponential mechanism)
======================================= ============================================ ========================

Common conventions (theory: the project's notes, sections 1-3, and [FGWC16]):

* Every mechanism needs ``ledger=``: there is no way to release without recording.
  It validates every argument first (a :class:`ValueError` naming the argument),
  then asks the ledger to charge the spend; if the budget cannot afford it,
  :class:`~pymc_dp.accounting.BudgetExceededError` is raised *before* any noise
  is drawn and nothing is recorded. Otherwise one entry per release is recorded
  (one for most; :func:`suggest_bounds` one per end, all reserved first), with
  the mechanism, (ε, δ), noise source, sensitivity and scale, and an ``event``
  descriptor for the tight accountants.
* Sensitivities are computed under the ledger's neighbouring relation
  (``"replace"`` by default; a histogram has L1 sensitivity 2 under replace-one
  and 1 under add/remove).
* Noise is secure (OpenDP's exact samplers) unless ``rng=`` is a seed or a NumPy
  generator: textbook floating-point samplers leak (Mironov 2012); see
  :mod:`pymc_dp.mechanisms.noise`.
"""

from .exponential import exponential_mechanism, exponential_mechanism_probabilities
from .gaussian import analytic_gaussian_sigma, gaussian_mechanism
from .hellinger_distance import hellinger
from .hellinger_mechanisms import release_posterior
from .geometric import discrete_laplace_mechanism, geometric_mechanism
from .laplace import laplace_mechanism
from .logistic_regression import (
    NoisyGradientRun,
    PerturbedWeights,
    noisy_gradient_logistic,
    objective_perturbation_logistic,
    output_perturbation_logistic,
)
from .logistic_estimator import PrivateLogisticRegression
from .second_moment import SecondMomentRelease, noisy_second_moment
from .bounded_sum import BoundedSumRelease, noisy_bounded_sum
from .private_bounds import PrivateBounds, suggest_bounds
from .noise import NoiseSource, SecureNoise, SeededNoise, resolve_noise_source
from .randomized_response import (
    randomized_response,
    randomized_response_debias,
    randomized_response_truth_probability,
)

__all__ = [
    "NoiseSource",
    "SecureNoise",
    "SeededNoise",
    "resolve_noise_source",
    "laplace_mechanism",
    "gaussian_mechanism",
    "analytic_gaussian_sigma",
    "geometric_mechanism",
    "discrete_laplace_mechanism",
    "exponential_mechanism",
    "exponential_mechanism_probabilities",
    "randomized_response",
    "randomized_response_debias",
    "randomized_response_truth_probability",
    "hellinger",
    "release_posterior",
    "NoisyGradientRun",
    "noisy_gradient_logistic",
    "PerturbedWeights",
    "output_perturbation_logistic",
    "objective_perturbation_logistic",
    "PrivateLogisticRegression",
    "SecondMomentRelease",
    "noisy_second_moment",
    "BoundedSumRelease",
    "noisy_bounded_sum",
    "PrivateBounds",
    "suggest_bounds",
]
