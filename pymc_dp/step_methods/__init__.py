"""Private step methods: PyMC steps whose every update is charged as it runs.

* :class:`PrivateGibbs` — exact tempered conjugate updates (and per-record latent
  scans, charged by parallel composition), ε_l = 2Δ_l/T per update;
* :class:`PrivateMetropolis` — random-walk steps with Barker acceptance
  (pure ε = 2Δ/T) or Metropolis acceptance ((0, 1 − e^{−2Δ/T}) per step).

Both emit their cost per draw as the sample stats ``dp_epsilon`` and ``dp_delta``
(tuning draws included); ``pmdp.sample(method="gibbs")`` builds the ledger from them.

The war-logs case study's samplers (Gibbs steps for HMMs over per-step counts, FFBS,
Poisson counts seen through Laplace noise) are not private steps and serve that study
only: they live with it, in :mod:`pymc_dp.examples.warlogs.steps`,
:mod:`~pymc_dp.examples.warlogs.ffbs` and :mod:`~pymc_dp.examples.warlogs.laplace_counts`.
"""

from ._updates import NotConjugateError
from .base import DP_STATS, PrivateStep, UpdateCost
from .gibbs import PrivateGibbs
from .metropolis import PrivateMetropolis

__all__ = ["DP_STATS", "NotConjugateError", "PrivateGibbs", "PrivateMetropolis", "PrivateStep", "UpdateCost"]
