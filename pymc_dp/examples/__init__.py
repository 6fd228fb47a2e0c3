"""Runnable end-to-end examples of private analyses with pymc_dp.

* :mod:`pymc_dp.examples.warlogs`: the case study, a private HMM of war-log records
  (``pymc-dp demo``, ``pymc-dp bench heldout``).
* :mod:`pymc_dp.examples.beta_bernoulli`: one Laplace-noised count, a noise-aware
  PyMC model of it, the released trace and its ledger (``pymc-dp demo --example beta-bernoulli``).
* :mod:`pymc_dp.examples.fig2`: [FGWC16] Fig. 2's Laplace curve — the error
  of one sample from the Laplace-privatised beta-Bernoulli posterior against N
  (``python -m pymc_dp.examples.fig2``).

Each example module is importable on its own; importing this package does not
import PyMC.
"""

from __future__ import annotations

from typing import Any

__all__ = ["run_demo"]


def run_demo(*args: Any, **kwargs: Any) -> dict[str, Any]:
    """Run the beta-Bernoulli demo; see :func:`pymc_dp.examples.beta_bernoulli.run_demo`."""
    from .beta_bernoulli import run_demo as _run

    return _run(*args, **kwargs)
