"""Benchmark of the war-logs HMM: 200 Gibbs iterations with K = 10 on the Iraq-like preset.

The issue's target: 200 Gibbs iterations of the Laplace route with K = 10 on the
Iraq-like preset (≈ 390,000 records, 5 regions × 72 months) in under 60 s on a 2-core
machine, with the non-private run beside it in the same run. Timed, median of
``--repeat`` runs (default 3), wall and CPU clocks:

* ``count``: generating the records and counting ``n[r, t, d, j]`` (the only step that
  touches every record; vectorised with ``bincount``);
* ``privatise``: the five Laplace releases with OpenDP's secure noise (17,280 noisy counts);
* ``pymc_laplace`` / ``pymc_nonprivate``: ``pm.sample`` with the HMM Gibbs steps
  (FFBS states compiled with numba, conjugate Dirichlet emissions, transitions), 100
  burn-in + 100 kept iterations, one chain, on the noisy / exact counts, model
  construction and compilation included;
* ``engine_laplace`` / ``engine_nonprivate``: the same 200 iterations in the NumPy
  engine (:func:`pymc_dp.examples.warlogs.hmm.gibbs_hmm`), without PyMC's bookkeeping;
* ``engine_noise_aware``: the same release fitted by
  :func:`pymc_dp.examples.warlogs.hmm.gibbs_hmm_noise_aware` (the true counts summed
  out in FFBS and imputed), on one core like every other row;
  ``engine_noise_aware_2threads``: the same on both cores (numba's parallel loops over
  the region-months). On a machine where another process holds a core, the second
  thread makes it slower, not faster: its threads wait for each other.

Every row is warm: the numba kernels are compiled (or loaded from numba's on-disk
cache) by one short call before any timing. That call's wall time is reported
separately as ``first_call`` (seconds; a few seconds with a cold cache, well under
one second with a warm one). BLAS runs on one thread throughout; numba's thread
count is set per row.

The sampling cost does not depend on the number of records: the counts are the data.
Results are printed and written as JSON to ``--output`` (default
``benchmarks/results/warlogs_hmm.json``). Run ``python benchmarks/warlogs_hmm.py``.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

from _timing import environment, write_results
from threadpoolctl import threadpool_limits

ROOT = Path(__file__).resolve().parent
DEFAULT_OUTPUT = ROOT / "results" / "warlogs_hmm.json"


def _timed(fn: Callable[[], Any], repeat: int) -> dict[str, float]:
    walls, cpus = [], []
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return {"median_wall": round(statistics.median(walls), 3), "median_cpu": round(statistics.median(cpus), 3), "runs": repeat}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--states", type=int, default=10)
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    args = parser.parse_args(argv)
    logging.getLogger("pymc").setLevel(logging.ERROR)

    import numba

    import pymc_dp as pmdp
    from pymc_dp.examples.warlogs import data, hmm, model, privacy

    k, iters = args.states, args.iterations
    logs = data.generate("iraq", seed=0)
    counts = data.feature_counts(logs)
    noisy = privacy.privatize_counts(counts, 1.0, ledger=pmdp.PrivacyLedger(), rng=0)
    cores = numba.config.NUMBA_NUM_THREADS
    numba.set_num_threads(1)
    hmm.gibbs_hmm(counts, k, 4, 2)  # compile (or load from numba's disk cache) the kernels once
    start = time.perf_counter()
    hmm.gibbs_hmm_noise_aware(noisy, 2.0, k, 2, 1)
    first_call = round(time.perf_counter() - start, 3)
    jobs = {  # name: (numba threads, job)
        "count": (1, lambda: data.feature_counts(data.generate("iraq", seed=0))),
        "privatise": (1, lambda: privacy.privatize_counts(counts, 1.0, ledger=pmdp.PrivacyLedger())),
        "pymc_laplace": (1, lambda: model.fit_hmm(noisy, k, draws=iters - iters // 2, tune=iters // 2, random_seed=1)),
        "pymc_nonprivate": (1, lambda: model.fit_hmm(counts, k, draws=iters - iters // 2, tune=iters // 2, random_seed=1)),
        "engine_laplace": (1, lambda: hmm.gibbs_hmm(noisy, k, iters, iters // 2, seed=1)),
        "engine_nonprivate": (1, lambda: hmm.gibbs_hmm(counts, k, iters, iters // 2, seed=1)),
        "engine_noise_aware": (1, lambda: hmm.gibbs_hmm_noise_aware(noisy, 2.0, k, iters, iters // 2, seed=1)),
        "engine_noise_aware_2threads": (min(2, cores), lambda: hmm.gibbs_hmm_noise_aware(noisy, 2.0, k, iters, iters // 2, seed=1)),
    }
    rows = {}
    with threadpool_limits(1, user_api="blas"):
        for name, (threads, fn) in jobs.items():
            numba.set_num_threads(threads)
            rows[name] = {**_timed(fn, args.repeat), "numba_threads": threads}
            print(f"{name:28} {rows[name]['median_wall']:8.2f} s wall  {rows[name]['median_cpu']:8.2f} s CPU", flush=True)
    result = {
        **environment(),
        "argv": sys.argv[1:] if argv is None else list(argv),
        "config": {"preset": "iraq", "records": logs.num_records, "states": k, "iterations": iters, "burn_in": iters // 2},
        "target": "pymc_laplace under 60 s",
        "first_call": {"engine_noise_aware": first_call},
        "rows": rows,
    }
    write_results(args.output, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
