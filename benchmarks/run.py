"""Benchmarks of the privacy ledger (run with `make bench` or `python benchmarks/run.py`).

Times what the accounting costs a long private MCMC run:

1. 10^6 identical step events recorded as one entry (``count``), and the same
   10^6 events charged one draw at a time with ``ledger.repeat``;
2. 10^4 distinct entries spent one by one against a budget, then composed.

Prints a table of wall-clock times; nothing is asserted (timings belong here, not
in the test suite).
"""

from __future__ import annotations

import argparse
import time
from contextlib import contextmanager

import numpy as np

from pymc_dp.accounting import Budget, PrivacyLedger

ROWS: list[tuple[str, float]] = []


@contextmanager
def timed(label: str):
    t0 = time.perf_counter()
    yield
    ROWS.append((label, time.perf_counter() - t0))


def laplace_event(eps: float) -> dict:
    return {"type": "laplace", "noise_multiplier": 1.0 / eps}


def identical_steps(n: int, per_draw: int) -> None:
    ledger = PrivacyLedger(budget=Budget(epsilon=1e9))
    with timed(f"record {n:,} identical steps as one entry"):
        ledger.spend("private_step", 1e-3, count=n, event=laplace_event(1e-3))
    for method in ("basic", "advanced", "rdp", "pld"):
        with timed(f"  total({method!r}) of those {n:,} steps"):
            ledger.total(method, 1e-6)
    ledger = PrivacyLedger(budget=Budget(epsilon=1e9))
    entry = ledger.spend("private_step", 1e-3)
    with timed(f"charge {per_draw:,} steps one draw at a time (repeat)"):
        for _ in range(per_draw - 1):
            ledger.repeat(entry.id)
    assert ledger.entries[0].count == per_draw


def distinct_entries(n: int, pld_n: int) -> None:
    rng = np.random.default_rng(0)
    eps = rng.uniform(1e-4, 1e-2, size=n)
    ledger = PrivacyLedger(budget=Budget(epsilon=1e9))
    with timed(f"spend {n:,} distinct entries against a basic budget"):
        for e in eps:
            ledger.spend("laplace", float(e), event=laplace_event(float(e)))
    for method in ("basic", "advanced", "rdp"):
        with timed(f"  total({method!r}) of {n:,} distinct entries"):
            ledger.total(method, 1e-6)
    small = PrivacyLedger()
    for e in eps[:pld_n]:
        small.spend("laplace", float(e), event=laplace_event(float(e)))
    with timed(f"  total('pld') of {pld_n:,} distinct entries"):
        small.total("pld", 1e-6)
    with timed(f"  to_json + from_json of {n:,} entries"):
        PrivacyLedger.from_json(ledger.to_json())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1_000_000)
    parser.add_argument("--per-draw", type=int, default=1_000_000)
    parser.add_argument("--distinct", type=int, default=10_000)
    parser.add_argument("--pld-distinct", type=int, default=200)
    args = parser.parse_args()
    identical_steps(args.steps, args.per_draw)
    distinct_entries(args.distinct, args.pld_distinct)
    width = max(len(label) for label, _ in ROWS)
    print(f"{'benchmark'.ljust(width)}  seconds")
    for label, sec in ROWS:
        print(f"{label.ljust(width)}  {sec:9.4f}")


if __name__ == "__main__":
    main()
