"""Guarantees that follow from the shape of the code, checked so that they stay true."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pymc_dp
from pymc_dp.routes import METHODS, sample
from pymc_dp.routes.base import RoutePlan

PACKAGE = Path(pymc_dp.__file__).parent


def test_sample_is_a_short_dispatcher():
    assert len(inspect.getsource(sample).splitlines()) < 60


def test_no_module_outside_accounting_touches_the_ledgers_private_state():
    private = re.compile(r"\b\w*ledger\w*\._[a-z]\w*|\._(?:entries|index|append|validate|basic_cache|reservations)\b")
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if path.parent.name == "accounting":
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if private.search(line):
                offenders.append(f"{path.relative_to(PACKAGE)}:{n}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


def test_every_route_is_a_plan_executed_the_same_way():
    from pymc_dp.routes import PLANNERS

    assert set(PLANNERS) == set(METHODS) == {"laplace", "measurements", "ops", "gibbs", "saa", "ais"}
    for planner in PLANNERS.values():
        assert inspect.signature(planner).return_annotation not in (inspect.Signature.empty, None)
    plans = {cls.__name__ for cls in RoutePlan.__subclasses__()}
    assert {"LaplacePlan", "OPSRun", "GibbsRun", "SAARun", "ChosenRoute"} <= plans


def test_only_the_command_line_imports_the_examples():
    """The examples (the war-logs case study and its samplers among them) sit on top of the library: no upward imports."""
    upward = re.compile(r"^\s*(?:from|import)\s+(?:pymc_dp\.examples|\.+examples)\b")
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        relative = path.relative_to(PACKAGE)
        if relative.parts[0] == "examples" or relative == Path("cli.py"):
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if upward.search(line):
                offenders.append(f"{relative}:{n}: {line.strip()}")
    assert not offenders, "\n".join(offenders)
