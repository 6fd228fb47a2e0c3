"""Timing helpers shared by the benchmarks (run as scripts from this folder)."""

from __future__ import annotations

import os
import platform
import time
from typing import Any

__all__ = ["LoopClock", "environment", "write_results"]


def environment() -> dict[str, Any]:
    """Versions and machine facts recorded with every benchmark result (one BLAS thread)."""
    import numpy as np
    import pymc as pm
    import pytensor

    import pymc_dp as pmdp

    return {
        "versions": {
            "python": platform.python_version(),
            "pymc": pm.__version__,
            "pytensor": pytensor.__version__,
            "numpy": np.__version__,
            "pymc_dp": pmdp.__version__,
        },
        "machine": {"platform": platform.platform(), "processor": platform.machine(), "cpu_count": os.cpu_count(),
                    "blas_threads": 1},
    }


def write_results(path: Any, result: dict[str, Any]) -> None:
    """Write a benchmark's result dict as JSON to ``path`` (folders created) and say where."""
    import json
    from pathlib import Path

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=1) + "\n")
    print(f"results: {path}")


class LoopClock:
    """A ``pm.sample`` callback: the (CPU, wall) clocks after the first and after the latest draw."""

    def __init__(self) -> None:
        self.first: tuple[float, float] | None = None
        self.last: tuple[float, float] | None = None
        self.calls = 0

    def __call__(self, trace: Any, draw: Any) -> None:
        now = (time.process_time(), time.perf_counter())
        if self.first is None:
            self.first = now
        self.last = now
        self.calls += 1
