"""The war-logs case study ([FGWC16] §5): a private hidden Markov model of field reports.

* :mod:`~pymc_dp.examples.warlogs.data`: synthetic records with the published structure
  (Iraq- and Afghanistan-like presets), a CSV loader, and the feature counts ``n[r, t, d, j]``;
* :mod:`~pymc_dp.examples.warlogs.privacy`: the Laplace route's one-time release of the counts;
* :mod:`~pymc_dp.examples.warlogs.model`: the HMM as a PyMC model sampled by ``pm.sample``
  with the HMM Gibbs steps of :mod:`~pymc_dp.examples.warlogs.steps`;
* :mod:`~pymc_dp.examples.warlogs.steps`: those steps and the update kernels they share
  with the NumPy engine; :mod:`~pymc_dp.examples.warlogs.ffbs`: forward filtering,
  backward sampling of the state sequences; :mod:`~pymc_dp.examples.warlogs.laplace_counts`:
  Poisson counts seen through Laplace noise (exact marginals and imputation);
* :mod:`~pymc_dp.examples.warlogs.ops`: the OPS route sampled by ``pm.sample``
  (:func:`fit_ops`: tempered, truncated posterior; the final draw of each chain released,
  charged to a ledger; :func:`ops_temperature`: its floors, sensitivity and temperature);
* :mod:`~pymc_dp.examples.warlogs.hmm`: the same sampler as a NumPy engine (non-private,
  Laplace and OPS routes), for studies that fit many models;
* :mod:`~pymc_dp.examples.warlogs.heldout`: the held-out experiment (``pymc-dp bench heldout``);
* :mod:`~pymc_dp.examples.warlogs.demo`: ``pymc-dp demo`` and its report folder.
"""

from .ops import fit_ops, ops_temperature

__all__ = ["fit_ops", "ops_temperature"]
