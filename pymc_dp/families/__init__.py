"""Likelihood families of the Laplace route, and ``privatize``.

One module per family; each knows its sufficient statistic, its sensitivity, its
projection, its likelihood as a function of the statistic and the PyMC
distributions it stands for (see :mod:`pymc_dp.families.base`). Every
:class:`Family` subclass defined in a module of this package is registered under
its ``name`` when the package is imported: adding a family is adding one module.
"""

import importlib
import pkgutil

from .base import Family
from .bernoulli import Bernoulli
from .binomial import Binomial
from .categorical import Categorical
from .exponential import Exponential
from .gamma import Gamma
from .linear_regression import LinearRegression
from .multinomial import Multinomial
from .normal import Normal
from .poisson import Poisson
from .privatize import ClippedRecordsWarning, DegenerateReleaseWarning, privatize
from .registry import FAMILIES, family_of_dist, get_family, register
from .statistics import PrivateStatistics

_INFRASTRUCTURE = {"base", "registry", "statistics", "privatize"}  # modules that define no family


def _discover() -> None:
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_") or info.name in _INFRASTRUCTURE:
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        for obj in vars(module).values():
            if isinstance(obj, type) and issubclass(obj, Family) and "name" in vars(obj) and obj.__module__ == module.__name__:
                register(obj)


_discover()

__all__ = [
    "Bernoulli",
    "Binomial",
    "Categorical",
    "ClippedRecordsWarning",
    "DegenerateReleaseWarning",
    "Exponential",
    "FAMILIES",
    "Family",
    "Gamma",
    "LinearRegression",
    "Multinomial",
    "Normal",
    "Poisson",
    "PrivateStatistics",
    "family_of_dist",
    "get_family",
    "privatize",
    "register",
]
