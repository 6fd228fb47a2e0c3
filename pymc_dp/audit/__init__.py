"""Checks a careful reviewer runs on a DP library, as a library: empirical privacy audits and leak scans.

* :func:`audit` — run a randomised function many times on two neighbouring inputs
  and return a Clopper–Pearson lower confidence bound on its privacy loss; a bound
  above the claimed ε is a failed audit (:mod:`pymc_dp.audit.auditor`).
* :data:`TARGETS`, :func:`run_audits` — every mechanism and private step of pymc_dp
  with a deliberately broken twin that must fail; ``pymc-dp audit`` prints the table
  (:mod:`pymc_dp.audit.targets`).
* :func:`scan_for_leaks` — search a released trace (every group, variable,
  coordinate and attribute) for the private records and for exact statistics of
  them (:mod:`pymc_dp.audit.leaks`); :func:`scan_folder` does the same for every
  file of a folder of artefacts (report text, JSON, saved traces).

This package sits beside ``examples`` and ``cli`` in the layering: it imports the
mechanisms, models and step methods it audits; nothing below imports it.
"""

from .auditor import AuditResult, audit, clopper_pearson, repeated
from .leaks import Leak, LeakReport, PrivacyLeakError, scan_folder, scan_for_leaks
from .targets import TARGETS, AuditTarget, format_audit_table, run_audits, run_target

__all__ = [
    "AuditResult",
    "AuditTarget",
    "Leak",
    "LeakReport",
    "PrivacyLeakError",
    "TARGETS",
    "audit",
    "clopper_pearson",
    "format_audit_table",
    "repeated",
    "run_audits",
    "run_target",
    "scan_folder",
    "scan_for_leaks",
]
