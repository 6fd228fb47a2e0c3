"""Privacy accounting: the ledger, budgets, composition and subsampling amplification.

Pure Python on top of NumPy/SciPy and Google's ``dp-accounting``; no PyMC import.
"""

from .budget import COMPOSITION_METHODS, Budget, BudgetExceededError
from .curator import curator_reports
from .entry import NOISE_SOURCES, LedgerEntry, PrivacyCost
from .event_types import DpEvent, GaussianEvent, LaplaceEvent
from .ledger import PrivacyLedger, resolve_ledger
from .reservation import LedgerOwnershipError, Reservation
from .subsampling import amplified_epsilon, amplify_by_subsampling
from .validation import NEIGHBOURING_RELATIONS, Neighbouring

__all__ = [
    "Budget",
    "BudgetExceededError",
    "COMPOSITION_METHODS",
    "DpEvent",
    "GaussianEvent",
    "LaplaceEvent",
    "LedgerEntry",
    "LedgerOwnershipError",
    "NEIGHBOURING_RELATIONS",
    "NOISE_SOURCES",
    "Neighbouring",
    "PrivacyCost",
    "PrivacyLedger",
    "Reservation",
    "amplified_epsilon",
    "amplify_by_subsampling",
    "curator_reports",
    "resolve_ledger",
]
