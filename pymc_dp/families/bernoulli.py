"""Bernoulli records: x ∈ {0, 1}, one success probability p — a Binomial with one trial.

Statistics ([FGWC16] §5, [H-DIST] LSHist): under ``"replace"`` N is public and the
number of successes alone (sensitivity 1) carries everything (failures = N − it);
under ``"add_remove"`` both counts are released, and a record added or removed
changes exactly one of them by 1 (sensitivity 1). Everything but the PyMC
distribution it stands for is :class:`~pymc_dp.families.Binomial`'s with
``n_trials=1``.
"""

from __future__ import annotations

from typing import Any

from ._params import scalar_param
from .base import dist_params, rv_op_name
from .binomial import Binomial

__all__ = ["Bernoulli"]


class Bernoulli(Binomial):
    """Bernoulli likelihood (a Binomial with ``n_trials=1``); conjugate prior Beta(a, b)."""

    name = "bernoulli"
    pymc_ops = ("bernoulli",)

    def __init__(self, **family_args: Any) -> None:
        if family_args:
            raise ValueError(f"family 'bernoulli' takes no arguments, got {sorted(family_args)}.")
        super().__init__(n_trials=1)

    def family_args(self) -> dict[str, Any]:
        return {}

    @classmethod
    def from_dist(cls, dist: Any) -> tuple["Bernoulli", dict[str, Any]]:
        """``pm.Bernoulli.dist(p=p)`` → ``(Bernoulli(), {"p": p})``; a per-record p is refused."""
        if rv_op_name(dist) not in cls.pymc_ops:
            raise ValueError(f"expected a Bernoulli distribution, got {rv_op_name(dist)!r}.")
        (p,) = dist_params(dist)
        return cls(), {"p": scalar_param(p, "p", "bernoulli")}
