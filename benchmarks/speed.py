"""Privacy at the speed of plain PyMC: every route's cost beside plain ``pm.sample``, in one process.

The model is the one a user writes first: a Normal with unknown mean and standard
deviation, ``mu ~ Normal(0, 10)``, ``sigma ~ HalfNormal(5)``, ``y ~ Normal(mu, sigma)``
(records in the declared bounds ±10), 2 chains × (500 tune + 500 draws), ``cores=1``,
once with PyMC's NUTS and, where nutpie is installed, once more with nutpie (rows ending
in ``_nutpie``: PyMC 6's default sampler wherever nutpie is installed). Rows:

* ``plain``: ``pm.sample`` on the raw records (N = 10³ warm, best of ``--repeat``; 10⁵
  and 10⁶ once: its cost is linear in N);
* ``plugin``: ``pmdp.sample(epsilon=1, noise_aware=False)``;
* ``default``: ``pmdp.sample(epsilon=1)`` — the noise-aware likelihood a user gets;
* ``record_free``: ``pm.sample`` of the privatised (record-free) model alone, warm —
  what ``pmdp.sample`` does after privatising; ``default − record_free`` is the
  per-call overhead (validation, privatisation, model rewrite, ledger, release);
* ``privatize``: ``pmdp.privatize`` of 10⁶ records alone;
* ``default_first``: the first call of the process (PyTensor's, or nutpie's, compilation);
  with nutpie a compiled model is reused by later releases of the same model
  (``pymc_dp.routes.nutpie_cache``), while ``plain`` ``pm.sample`` compiles every call;
* ``warlogs_plugin`` / ``warlogs_noise_aware``: the war-logs HMM engine, K = 10 states,
  200 iterations, on one Laplace release (plug-in counts / counts summed out).

Every private run is a new release (OpenDP's secure noise), as for a user: the timings
include whatever a new release costs (no compile cache keyed on the numbers). "Warm"
means an untimed call of the same kind ran first in the process, as it would in a
session; the first call of a process pays PyTensor's and numba's compilation once
(reported as ``default_first``).

The ratios the targets speak of are computed and printed; results go to
``benchmarks/results/speed.json`` and a Markdown table to ``speed.md``. Run with
``python benchmarks/speed.py`` (``make bench`` runs it and prints the table).
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Callable

import numpy as np
from _timing import environment, write_results
from laplace_route import make_model as normal_model  # the same Normal model (unknown mu and sigma)

from pymc_dp.routes.nutpie_cache import reusing_compiled_models

ROOT = Path(__file__).resolve().parent
RESULTS = ROOT / "results"
BOUNDS = {"y": {"x": (-10.0, 10.0)}}
# Every row names its sampler: PyMC's own NUTS, and nutpie where it is installed (rows ending
# in _nutpie; PyMC 6 picks it by default there, for pm.sample and pmdp.sample alike).
SAMPLE = {"tune": 500, "chains": 2, "cores": 1, "progressbar": False, "nuts_sampler": "pymc"}
DRAWS = 500

#: name: (numerator, denominator, comparison, target)
TARGETS = {
    "default / plugin, N = 10³": ("default_1e3", "plugin_1e3", "<=", 1.5),
    "default / plain, N = 10³": ("default_1e3", "plain_1e3", "<=", 2.0),
    "plain / default, N = 10⁶": ("plain_1e6", "default_1e6", ">=", 20.0),
    "overhead: default − record_free, N = 10³ (s)": ("default_1e3", "record_free_1e3", "diff<=", 0.3),
    "warlogs noise-aware / plug-in, K = 10": ("warlogs_noise_aware", "warlogs_plugin", "<=", 3.0),
}


def best_of(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="timed runs of each small row (best used)")
    parser.add_argument("--large", type=int, default=1_000_000, help="the large N")
    parser.add_argument("--skip-warlogs", action="store_true")
    parser.add_argument("--output", type=Path, default=RESULTS / "speed.json")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    logging.getLogger("pymc").setLevel(logging.ERROR)
    import pymc as pm

    import pymc_dp as pmdp

    rng = np.random.default_rng(0)
    records = {n: rng.normal(1.0, 1.5, n) for n in (1_000, 100_000, args.large)}
    seed = iter(range(1, 10_000))

    def private(n: int, **options: Any) -> Callable[[], Any]:
        return lambda: pmdp.sample(DRAWS, model=normal_model(records[n]), epsilon=1.0, bounds=BOUNDS,
                                   random_seed=next(seed), **{**SAMPLE, **options})

    def plain(n: int, sampler: str) -> Callable[[], Any]:
        return lambda: pm.sample(DRAWS, model=normal_model(records[n]), random_seed=next(seed),
                                 **{**SAMPLE, "nuts_sampler": sampler})

    rows: dict[str, float] = {}

    def row(name: str, fn: Callable[[], Any], repeat: int) -> None:
        rows[name] = round(best_of(fn, repeat), 3)
        print(f"{name:28} {rows[name]:8.2f} s", flush=True)

    samplers = ["pymc"] + (["nutpie"] if importlib.util.find_spec("nutpie") is not None else [])
    for sampler in samplers:
        tag = "" if sampler == "pymc" else "_nutpie"
        first = private(1_000, nuts_sampler=sampler)
        if sampler == "pymc":
            row("default_first", first, 1)  # the first call of the process: compilation included
        else:
            row("default_first_nutpie", first, 1)  # nutpie's compilation, once per model structure
            private(1_000, nuts_sampler=sampler, noise_aware=False)()
        plain(1_000, sampler)()  # warm-up of plain PyMC
        row(f"plain_1e3{tag}", plain(1_000, sampler), args.repeat)
        row(f"plugin_1e3{tag}", private(1_000, noise_aware=False, nuts_sampler=sampler), args.repeat)
        row(f"default_1e3{tag}", private(1_000, nuts_sampler=sampler), args.repeat)
        released = pmdp.privatize_model(normal_model(records[1_000]), 1.0, bounds=BOUNDS).model

        def record_free(sampler: str = sampler, released: Any = released) -> Any:
            with reusing_compiled_models():  # warm: nutpie compiled this model's graph above
                return pm.sample(DRAWS, model=released, random_seed=next(seed), **{**SAMPLE, "nuts_sampler": sampler})

        row(f"record_free_1e3{tag}", record_free, args.repeat)
        private(args.large, nuts_sampler=sampler)()  # a new N is a new graph (the count is in it): compiled once
        private(args.large, noise_aware=False, nuts_sampler=sampler)()
        row(f"default_1e6{tag}", private(args.large, nuts_sampler=sampler), 2)
        row(f"plugin_1e6{tag}", private(args.large, noise_aware=False, nuts_sampler=sampler), 2)
        if sampler == "pymc":
            row("privatize_1e6", lambda: pmdp.privatize(records[args.large], "normal", 1.0,
                                                        bounds={"x": (-10.0, 10.0)}), 3)
            row("plain_1e5", plain(100_000, sampler), 1)
        row(f"plain_1e6{tag}", plain(args.large, sampler), 1)
    if not args.skip_warlogs:
        warlogs_rows(row, args.repeat)

    ratios = {}
    for sampler in samplers:
        tag = "" if sampler == "pymc" else "_nutpie"
        for label, (num, den, how, target) in TARGETS.items():
            num, den = (name if name.startswith("warlogs") else name + tag for name in (num, den))
            if num not in rows or den not in rows or (tag and num.startswith("warlogs")):
                continue
            value = rows[num] - rows[den] if how == "diff<=" else rows[num] / rows[den]
            ok = value <= target if how in ("<=", "diff<=") else value >= target
            ratios[label if num.startswith("warlogs") else f"{label} [{sampler}]"] = {"value": round(value, 3), "target": f"{how.removeprefix('diff')} {target:g}",
                                              "met": ok}
    write_results(args.output, {**environment(), "argv": sys.argv[1:] if argv is None else list(argv),
                                "config": {"draws": DRAWS, **SAMPLE, "epsilon": 1.0, "bounds": BOUNDS["y"]["x"]},
                                "rows": rows, "ratios": ratios})
    table = markdown(rows, ratios)
    args.output.with_suffix(".md").write_text(table)
    print(table)
    return 0 if all(r["met"] for r in ratios.values()) else 1


def warlogs_rows(row: Callable[..., None], repeat: int) -> None:
    """The war-logs engine on one release: plug-in counts against the noise-aware sampler (K = 10, 200 iterations)."""
    import pymc_dp as pmdp
    from pymc_dp.examples.warlogs import data, hmm, privacy

    counts = data.feature_counts(data.generate("iraq", seed=0))
    noisy = privacy.privatize_counts(counts, 1.0, ledger=pmdp.PrivacyLedger(), rng=0)
    hmm.gibbs_hmm(noisy, 10, 4, 2)  # compile (cached on disk afterwards)
    hmm.gibbs_hmm_noise_aware(noisy, 2.0, 10, 2, 1)
    row("warlogs_plugin", lambda: hmm.gibbs_hmm(noisy, 10, 200, 100, seed=1), repeat)
    row("warlogs_noise_aware", lambda: hmm.gibbs_hmm_noise_aware(noisy, 2.0, 10, 200, 100, seed=1), repeat)


def markdown(rows: dict[str, float], ratios: dict[str, dict[str, Any]]) -> str:
    lines = ["| run | seconds |", "|---|---|"]
    lines += [f"| {name} | {seconds:.2f} |" for name, seconds in rows.items()]
    lines += ["", "| ratio | measured | target | met |", "|---|---|---|---|"]
    lines += [f"| {k} | {v['value']:.2f} | {v['target']} | {'yes' if v['met'] else 'NO'} |" for k, v in ratios.items()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
