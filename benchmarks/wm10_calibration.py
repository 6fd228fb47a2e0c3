"""Calibration of inference from a logistic regression's noisy gradients ([WM10] §4.1), against the plug-in reading.

Repeated data sets of [WM10]'s SYNTH population (1 000 records, 4 features uniform on the
unit-volume cube, true weights (8, −6, 4, 2)); for each, one run of the noisy-gradient
heuristic (10 iterations) at ε, then two posteriors over the weights from the same
released measurements:

* **inference** — :func:`pymc_dp.logistic_from_gradients` (the noise and the unseen
  records integrated out);
* **plug-in** — the same model reading the measurements as exact gradient sums (the
  Laplace noise left out of the likelihood), the reading of a user who forgets the noise.

Reported: how often the central 90 % interval of each weight covers the true weight, over
``--datasets`` data sets × 4 weights (mean interval width beside it). A calibrated
posterior covers 90 %; with 100 data sets the coverage's standard error is about
√(0.9·0.1/400) ≈ 1.5 points if the 4 weights were independent, up to 3 points if not.

    python benchmarks/wm10_calibration.py                 # writes results/wm10_calibration.{json,md}
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _runs import StoredRuns  # noqa: E402

SAMPLING = dict(draws=500, tune=500, chains=1, cores=1, progressbar=False, compute_convergence_checks=False)
PRIOR_SIGMA = 10.0


def _interval_hits(draws: np.ndarray, truth: np.ndarray) -> tuple[list[bool], list[float]]:
    lo, hi = np.quantile(draws, [0.05, 0.95], axis=0)
    return [bool(a <= t <= b) for a, b, t in zip(lo, hi, truth)], [float(b - a) for a, b in zip(lo, hi)]


def one_dataset(eps: float, seed: int) -> dict:
    import pymc as pm

    import pymc_dp as pmdp
    from wm10_logistic import SYNTH_WEIGHTS, dataset

    data = dataset("SYNTH", 5000 + seed)
    run = pmdp.noisy_gradient_logistic(data["X"], data["y"], epsilon=eps, iterations=10, feature_l1_bound=data["l1"],
                                       learning_rate=data["learning_rate"], ledger=pmdp.PrivacyLedger(), rng=seed)
    out = {}
    for reading, released, noise in (("inference", run, "auto"),
                                     ("plug-in", dataclasses.replace(run, scale=1e-9), "gaussian")):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pmdp.logistic_from_gradients(released, data["design"], prior_sigma=PRIOR_SIGMA, noise=noise):
                trace = pm.sample(random_seed=seed, **SAMPLING)
        draws = trace.posterior["w"].values.reshape(-1, len(SYNTH_WEIGHTS))
        hits, widths = _interval_hits(draws, SYNTH_WEIGHTS)
        out[reading] = {"hits": hits, "widths": widths}
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=100)
    parser.add_argument("--epsilons", nargs="+", type=float, default=[1.0])
    args = parser.parse_args(argv)
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    runs = StoredRuns(out / "wm10_calibration_runs.jsonl")
    rows = []
    for eps in args.epsilons:
        results = []
        for seed in range(args.datasets):
            key = f"{eps:g} {seed}"
            results.append(runs.get(key, lambda: one_dataset(eps, seed), echo=False))  # noqa: B023
        for reading in ("inference", "plug-in"):
            hits = np.array([r[reading]["hits"] for r in results], dtype=float)
            widths = np.array([r[reading]["widths"] for r in results])
            rows.append({"epsilon": eps, "reading": reading, "datasets": len(results),
                         "coverage": float(hits.mean()), "per_weight": hits.mean(axis=0).tolist(),
                         "width": float(widths.mean())})
            print(rows[-1], flush=True)
    lines = ["| ε | reading | data sets | 90 % coverage | per weight | mean width |", "|---:|---|---:|---:|---|---:|"]
    for r in rows:
        lines.append(f"| {r['epsilon']:g} | {r['reading']} | {r['datasets']} | {r['coverage']:.3f} | "
                     + " / ".join(f"{c:.2f}" for c in r["per_weight"]) + f" | {r['width']:.2f} |")
    (out / "wm10_calibration.json").write_text(json.dumps(rows, indent=1))
    (out / "wm10_calibration.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
