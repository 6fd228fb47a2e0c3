"""Looking families up by name or by PyMC distribution."""

from __future__ import annotations

from typing import Any

from .base import Family, rv_op_name

__all__ = ["register", "get_family", "family_of_dist", "FAMILIES"]

#: Registered families by name.
FAMILIES: dict[str, type[Family]] = {}


def register(cls: type[Family]) -> type[Family]:
    """Register a family class under ``cls.name`` (usable as a decorator)."""
    FAMILIES[cls.name] = cls
    return cls


def get_family(family: str | Family, **family_args: Any) -> Family:
    """A family instance from a name (plus its arguments) or an instance."""
    if isinstance(family, Family):
        if family_args:
            raise ValueError("pass family arguments either to the family object or as keywords, not both.")
        return family
    if not isinstance(family, str) or family.lower() not in FAMILIES:
        raise ValueError(
            f"unknown family {family!r}; supported families: {sorted(FAMILIES)}. For other likelihoods use "
            "method='ops' (tempered posterior) once available, or privatise a statistic yourself with pymc_dp.mechanisms."
        )
    return FAMILIES[family.lower()](**family_args)


def family_of_dist(dist: Any) -> tuple[Family, dict[str, Any]]:
    """The family and parameters that a PyMC distribution stands for, or a ValueError."""
    op = rv_op_name(dist)
    for cls in FAMILIES.values():
        if op in cls.pymc_ops:
            return cls.from_dist(dist)
    supported = sorted({o for cls in FAMILIES.values() for o in cls.pymc_ops})
    raise ValueError(
        f"no Laplace-route family for a {op!r} likelihood (supported PyMC distributions: {supported})."
    )
