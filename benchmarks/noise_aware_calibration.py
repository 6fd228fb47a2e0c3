"""Calibration of noise-aware vs plug-in posteriors (beta-Bernoulli, Normal, 1-D regression).

Runs one study per invocation (they take minutes: every Normal and regression data
set is a NUTS fit of the noise-aware model) and saves its rows to
``benchmarks/results/calibration_<study>.json``; ``--plot`` combines every saved
study into ``docs/_static/noise_aware_calibration.png`` and prints the table.

    python benchmarks/noise_aware_calibration.py --study beta_bernoulli   # seconds
    python benchmarks/noise_aware_calibration.py --study normal           # ~35 min, 1 core
    python benchmarks/noise_aware_calibration.py --study regression       # ~40 min, 1 core
    python benchmarks/noise_aware_calibration.py --plot
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import time
from pathlib import Path

from threadpoolctl import threadpool_limits

from pymc_dp.examples.noise_aware_calibration import STUDIES, format_table, plot_coverage, run_study

ROOT = Path(__file__).resolve().parent
RESULTS = ROOT / "results"
FIGURE = ROOT.parent / "docs" / "_static" / "noise_aware_calibration.png"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--study", choices=STUDIES)
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--plot", action="store_true", help="combine the saved studies into the docs figure")
    args = parser.parse_args()
    logging.getLogger("pymc").setLevel(logging.ERROR)
    # One BLAS thread: the noise-aware likelihood factorises a 2×2 or 3×3 matrix per
    # evaluation, and OpenBLAS threads spinning on 2 busy cores slow that 10–100×.
    threadpool_limits(1)
    RESULTS.mkdir(exist_ok=True)
    if args.study:
        start = time.perf_counter()
        rows = run_study(args.study, args.repeats, args.seed)
        for row in rows:
            row["seconds"] = round(time.perf_counter() - start, 1)
        (RESULTS / f"calibration_{args.study}.json").write_text(json.dumps(rows, indent=1) + "\n")
        print(format_table(rows))
        print(f"{args.study}: {time.perf_counter() - start:.0f} s")
    if args.plot:
        rows = [r for s in STUDIES if (RESULTS / f"calibration_{s}.json").exists()
                for r in json.loads((RESULTS / f"calibration_{s}.json").read_text())]
        FIGURE.parent.mkdir(exist_ok=True)
        plot_coverage(rows, str(FIGURE))
        se = math.sqrt(0.9 * 0.1 / max(r["repeats"] for r in rows))
        print(f"Coverage of 90% intervals (s.e. ≈ {se:.3f}); figure: {FIGURE}")
        print(format_table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
