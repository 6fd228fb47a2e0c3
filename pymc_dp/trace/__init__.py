"""Privacy ledgers on traces, and the released (whitelisted) trace.

* :func:`attach_ledger` stores a :class:`~pymc_dp.accounting.PrivacyLedger` on an
  trace (JSON attribute plus a per-chain ``privacy`` group);
* :func:`ledger` reads it back (``pmdp.ledger(idata)``), combining the ledgers of
  traces concatenated along ``chain`` (:func:`concat`, on either trace type);
* :func:`release` builds the object that may leave the curator from a whitelist;
* :func:`plot_ledger` draws the cumulative ε of a private MCMC run per chain;
* :func:`resample_weighted` turns weighted particles (``method="ais"``) into an equally
  weighted trace, for free.

Everything that depends on the trace container type (``xarray.DataTree`` with
PyMC 6 / ArviZ 1, ``arviz.InferenceData`` with PyMC 5) lives in ``pymc_dp._compat``.
"""

from .ledger_io import MissingLedgerError, attach_ledger, concat, ledger
from .plot import cumulative_epsilon, plot_ledger
from .weights import resample_weighted
from .release import (
    RELEASED_ATTRS,
    check_release_plan,
    check_released_variables,
    data_dependent_deterministics,
    imputed_variables,
    release,
)

__all__ = [
    "attach_ledger",
    "ledger",
    "concat",
    "release",
    "MissingLedgerError",
    "data_dependent_deterministics",
    "imputed_variables",
    "check_release_plan",
    "check_released_variables",
    "RELEASED_ATTRS",
    "cumulative_epsilon",
    "plot_ledger",
    "resample_weighted",
]
