"""Private step methods: PyMC steps whose every update is charged as it runs.

* :class:`PrivateGibbs` — exact tempered conjugate updates (and per-record latent
  scans, charged by parallel composition), ε_l = 2Δ_l/T per update;
* :class:`PrivateMetropolis` — random-walk steps with Barker acceptance
  (pure ε = 2Δ/T) or Metropolis acceptance ((0, 1 − e^{−2Δ/T}) per step).

Both emit their cost per draw as the sample stats ``dp_epsilon`` and ``dp_delta``
(tuning draws included); ``pmdp.sample(method="gibbs")`` builds the ledger from them.

Also here, for models of count data (the war-logs case study): :mod:`.hmm` (Gibbs steps
for HMMs over per-step counts), :mod:`.ffbs` (compiled forward filtering, backward
sampling) and :mod:`.laplace_counts` (Poisson counts observed through Laplace noise).
"""

from ._updates import NotConjugateError
from .base import DP_STATS, PrivateStep, UpdateCost
from .gibbs import PrivateGibbs
from .metropolis import PrivateMetropolis

__all__ = ["DP_STATS", "NotConjugateError", "PrivateGibbs", "PrivateMetropolis", "PrivateStep", "UpdateCost"]
