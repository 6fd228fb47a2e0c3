"""Dwork et al. (2015), Fig. 2: adaptive feature selection through the plain and the reusable holdout.

n = 10 000 records in each of training, holdout and fresh sets, d = 10 000 N(0, 1) features,
a ±1 label; "no signal" and "20 informative features" (shift 6/√n towards the label).
Thresholdout: T = 4/√n, σ = 1/√n (their 0.04 and 0.01), correlations clipped to ±4.
Averaged over ``--runs`` seeds. The same study is ``pymc-dp bench holdout``.

    python benchmarks/thresholdout_fig2.py              # 10 runs per setting (≈ 10 min on one core)
    python benchmarks/thresholdout_fig2.py --runs 2 --records 5000 --features 5000   # a quick look

Writes ``results/thresholdout_fig2.{json,md,png}``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from pymc_dp.examples import thresholdout

HERE = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--features", type=int, default=10_000)
    args = parser.parse_args(argv)
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    results = thresholdout.run_study(args.records, args.features, runs=args.runs)
    text = thresholdout.format_table(results)
    meta = (f"n = {args.records}, d = {args.features}, {args.runs} runs per setting; reusable: mean ± s.e. (the JSON "
            "and the plot hold every k from 10 to 500).\n\n")
    (out / "thresholdout_fig2.md").write_text(meta + text + "\n")
    (out / "thresholdout_fig2.json").write_text(json.dumps(results, indent=1) + "\n")
    thresholdout.plot_curves(results, out / "thresholdout_fig2.png")
    print(meta + text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
