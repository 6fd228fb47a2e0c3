"""Benchmark of the Dirichlet-posterior releases: the wall time of one ``pmdp.release_posterior`` call.

For each mechanism (LSDim, LSHist, EHD, EHDS, all ε-DP, and EHDL, which is NOT
private and runs only with ``allow_nonprivate=True``), each number of categories k
and each number of records n of the grid::

    k = 2: n ∈ {10³, 10⁴, 10⁵, 3·10⁵, 10⁶}
    k = 3: n ∈ {300, 600, 1000, 1500}
    k = 4: n ∈ {50, 100, 150, 200}

one call on balanced counts (as equal as possible), prior ``Dir(1, …, 1)``, ε = 1::

    pmdp.release_posterior(counts, prior=1.0, epsilon=1.0, mechanism=m, rng=rng,
                           allow_nonprivate=(m == "ehdl"))

is timed with two noise sources: **seeded** (``rng=np.random.default_rng(0)``, a fresh
generator per run) and **secure** (``rng=None``: OpenDP's exact samplers, Laplace for
LSDim/LSHist, Gumbel report-noisy-max for the exponential mechanisms). The exponential
mechanisms score all ``C(n + k − 1, k − 1)`` candidate posteriors (10⁶ + 1 at k = 2,
n = 10⁶; 1 127 251 at k = 3, n = 1500; 1 373 701 at k = 4, n = 200); EHDS also computes
the exact smooth sensitivity over all of them.

What is timed: the whole call, wall clock (``time.perf_counter``), median of
``--repeat`` runs (default 3). Before every run the module's caches are cleared
(``hellinger_mechanisms._step_defects`` and ``_all_local_sensitivities``), so each
time includes computing the sensitivities, and garbage is collected. OpenDP's built
measurements stay cached per scale (about 0.1 ms each to build), and one untimed
warm-up call per noise source imports OpenDP and the library first. One BLAS thread
(threadpoolctl), as in the other benchmarks. A (mechanism, k, noise) whose run takes
longer than ``--limit`` seconds (default 20) is not repeated and the larger n of its
grid are skipped (marked as such).

Secure times vary more between runs than seeded ones (CPU time tracks wall time, so
this is not the machine's load): OpenDP's exact Gumbel sampler takes about 1 µs per
candidate, on the candidates of the block the first stage of the two-stage Gumbel-max
picks, so a run that picks the short last block is much faster (k = 3, n = 1500:
0.15 s against 0.93 and 1.07 s), and its time also varies with the noise drawn. A
median of 3 within about 30 % of 1 s may fall on either side on another run.

Results are printed (a time table, then for each mechanism and k the largest n of the
grid whose median is under 1 s, seeded and secure) and written as JSON to
``--output`` (default ``benchmarks/results/hellinger_release.json``). Nothing is
asserted. About 2.5 minutes on a 2-core machine (155 s, with another process busy).

Run with ``python benchmarks/hellinger_release.py`` (``--help`` for the options).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from math import comb
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from _timing import environment, write_results

RESULTS = Path(__file__).resolve().parent / "results"
GRID = {2: (1_000, 10_000, 100_000, 300_000, 1_000_000), 3: (300, 600, 1000, 1500), 4: (50, 100, 150, 200)}
MECHANISMS = ("lsdim", "lshist", "ehd", "ehds", "ehdl")
NOISES = ("seeded", "secure")
EPSILON = 1.0
PRIOR = 1.0
BUDGET = 1.0  # seconds: the "largest n under 1 s" summary


def balanced(n: int, k: int) -> np.ndarray:
    counts = np.full(k, n // k, dtype=np.int64)
    counts[: n - int(counts.sum())] += 1
    return counts


def run_once(counts: np.ndarray, mechanism: str, noise: str) -> tuple[float, float, list[float]]:
    """One release with cold sensitivity caches: (wall s, CPU s, released alpha)."""
    import pymc_dp as pmdp
    from pymc_dp.mechanisms import hellinger_mechanisms as hm

    hm._step_defects.cache_clear()
    hm._all_local_sensitivities.cache_clear()
    gc.collect()
    rng = np.random.default_rng(0) if noise == "seeded" else None
    cpu0, wall0 = time.process_time(), time.perf_counter()
    release = pmdp.release_posterior(counts, prior=PRIOR, epsilon=EPSILON, mechanism=mechanism, rng=rng,
                                     allow_nonprivate=(mechanism == "ehdl"))
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    return wall, cpu, [float(a) for a in release.alpha]


def seconds(t: float | None) -> str:
    if t is None:
        return "skipped"
    return f"{t * 1e3:.1f} ms" if t < 1 else f"{t:.2f} s"


def format_times(rows: list[dict[str, Any]]) -> str:
    """Median wall time per (k, n) and mechanism, "seeded / secure"."""
    by = {(r["k"], r["n"], r["mechanism"], r["noise"]): r for r in rows}
    head = ("k", "n", "candidates", *MECHANISMS)
    body = []
    for k, ns in GRID.items():
        for n in ns:
            cells = [str(k), f"{n:,}", f"{comb(n + k - 1, k - 1):,}"]
            for m in MECHANISMS:
                cells.append(" / ".join(seconds(by[(k, n, m, noise)]["median_wall"]) for noise in NOISES))
            body.append(tuple(cells))
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(head)]

    def line(cells: tuple[str, ...]) -> str:
        return "  ".join(c.rjust(w) for c, w in zip(cells, widths))

    return "\n".join([line(head), "  ".join("-" * w for w in widths), *(line(b) for b in body)])


def largest_under(rows: list[dict[str, Any]], budget: float = BUDGET) -> list[dict[str, Any]]:
    """For each mechanism, k and noise: the largest n of the grid whose median wall time is under ``budget``."""
    out = []
    for m in MECHANISMS:
        for k, ns in GRID.items():
            entry: dict[str, Any] = {"mechanism": m, "k": k}
            for noise in NOISES:
                mine = [r for r in rows if (r["mechanism"], r["k"], r["noise"]) == (m, k, noise)]
                times = {r["n"]: r["median_wall"] for r in mine}
                under = [n for n in ns if times.get(n) is not None and times[n] < budget]
                best = max(under) if under else None
                entry[noise] = best
                # Whether every smaller n of the grid was also under the budget (times monotone in n).
                entry[f"{noise}_monotone"] = best is None or all(
                    times.get(n) is not None and times[n] < budget for n in ns if n <= best)
                entry[f"{noise}_whole_grid"] = best == max(ns)
            out.append(entry)
    return out


def format_largest(entries: list[dict[str, Any]]) -> str:
    head = ("mechanism", "k", "grid", "seeded: largest n < 1 s", "secure: largest n < 1 s")
    body = []
    for e in entries:
        cells = [e["mechanism"] + (" (not private)" if e["mechanism"] == "ehdl" else ""), str(e["k"]),
                 ", ".join(f"{n:,}" for n in GRID[e["k"]])]
        for noise in NOISES:
            n = e[noise]
            text = "none" if n is None else f"{n:,}" + (" (whole grid)" if e[f"{noise}_whole_grid"] else "")
            cells.append(text + ("" if e[f"{noise}_monotone"] else " *"))
        body.append(tuple(cells))
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(head)]

    def line(cells: tuple[str, ...]) -> str:
        return "  ".join(c.ljust(w) if i < 3 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))

    return "\n".join([line(head), "  ".join("-" * w for w in widths), *(line(b) for b in body)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per case (median reported)")
    parser.add_argument("--limit", type=float, default=20.0,
                        help="a run slower than this (s) is not repeated and larger n are skipped")
    parser.add_argument("--output", type=Path, default=RESULTS / "hellinger_release.json", help="JSON results file")
    args = parser.parse_args(argv)

    import pymc_dp as pmdp

    threadpool_limits(1)
    start = time.perf_counter()
    for noise in NOISES:  # untimed warm-up: imports OpenDP, fills NumPy/SciPy's lazy state
        for m in MECHANISMS:
            run_once(balanced(20, 3), m, noise)

    rows: list[dict[str, Any]] = []
    for k, ns in GRID.items():
        for m in MECHANISMS:
            for noise in NOISES:
                skip = False
                for n in ns:
                    row: dict[str, Any] = {"mechanism": m, "private": m != "ehdl", "k": k, "n": n, "noise": noise,
                                           "candidates": comb(n + k - 1, k - 1), "counts": balanced(n, k).tolist()}
                    if skip:
                        row.update({"skipped": True, "median_wall": None, "median_cpu": None, "runs_wall": [],
                                    "runs_cpu": []})
                        rows.append(row)
                        continue
                    runs = []
                    for _ in range(max(1, args.repeat)):
                        runs.append(run_once(balanced(n, k), m, noise))
                        if runs[-1][0] > args.limit:
                            skip = True
                            break
                    row.update({
                        "skipped": False,
                        "median_wall": statistics.median(r[0] for r in runs),
                        "median_cpu": statistics.median(r[1] for r in runs),
                        "runs_wall": [r[0] for r in runs],
                        "runs_cpu": [r[1] for r in runs],
                        "released_alpha": [r[2] for r in runs],
                    })
                    if noise == "seeded":
                        row["reproducible"] = all(r[2] == runs[0][2] for r in runs)
                    rows.append(row)
                    print(f"k = {k}, n = {n:>9,}, {m:6s} {noise:6s}: {seconds(row['median_wall'])}",
                          file=sys.stderr, flush=True)
    elapsed = time.perf_counter() - start

    largest = largest_under(rows)
    print(f"pmdp.release_posterior, one call on balanced counts, prior 1, ε = {EPSILON:g}: median wall time of "
          f"{args.repeat} runs with cold sensitivity caches (seeded / secure noise); pymc_dp {pmdp.__version__}, "
          "one BLAS thread")
    print()
    print(format_times(rows))
    print()
    print("Largest n of the grid with a median under 1 s (ehdl is NOT private; * = some smaller n was slower):")
    print()
    print(format_largest(largest))
    if any(not r.get("reproducible", True) for r in rows):
        print("WARNING: some seeded releases differed between runs.")
    print(f"total: {elapsed:.0f} s")
    result = {
        "benchmark": "hellinger_release",
        **environment(),
        "argv": sys.argv[1:] if argv is None else list(argv),
        "config": {"grid": {str(k): list(v) for k, v in GRID.items()}, "mechanisms": list(MECHANISMS),
                   "noises": {"seeded": "rng=np.random.default_rng(0), fresh per run", "secure": "rng=None (OpenDP)"},
                   "epsilon": EPSILON, "prior": PRIOR, "counts": "balanced", "repeat": args.repeat,
                   "limit_seconds": args.limit, "caches_cleared": ["_step_defects", "_all_local_sensitivities"]},
        "times": {"median_wall": "median wall s of one release_posterior call",
                  "median_cpu": "median process CPU s of the same calls"},
        "rows": rows,
        "largest_n_under_1s": largest,
        "seconds": {"total": round(elapsed, 1)},
    }
    write_results(args.output, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
