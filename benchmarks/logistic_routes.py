"""A logistic regression through the two routes that take it: measurements (noisy gradients) and OPS (a clip).

The gallery's logistic regression (``tests/gallery_models.py``: an intercept, two standard
normal covariates, coords and dims, ``pm.Data``) at N = 300 (the gallery's size) and
N = 3 000, at ε = 1, 10, 100, released two ways on the same records:

* ``measurements`` — ``bounds={"y": {"x": (-4, 4)}}`` (|x| > 4 has probability 6·10⁻⁵ for a
  standard normal covariate; rows beyond are clipped); the default 20 % of ε measures the
  covariates' moments;
* ``ops`` — ``loglik_clip=(-6, 0)``, the gallery's declaration (Δ = 6), default ``samples``.

Accuracy: the largest distance, over the three coefficients, between the released posterior
mean and plain PyMC's, in plain posterior standard deviations (root-mean-square over three
releases, seeds 1 and 2); and the released posterior's s.d. over plain PyMC's (mean over the
coefficients and releases), which says how much uncertainty each release reports.

    python benchmarks/logistic_routes.py     # writes benchmarks/results/logistic_routes.{json,md}
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE))

SAMPLE = dict(tune=500, chains=2, cores=1, progressbar=False, compute_convergence_checks=False)
ROUTES = {"measurements": {"bounds": {"y": {"x": (-4.0, 4.0)}}}, "ops": {"loglik_clip": (-6.0, 0.0)}}
EPSILONS = (1.0, 10.0, 100.0)
SIZES = (300, 3000)
SEEDS = (1, 2)


def _coefficients(trace) -> np.ndarray:
    from pymc_dp import _compat

    post = _compat.get_group(trace, "posterior")
    values = [np.asarray(post["intercept"].values)[..., None], np.asarray(post["beta"].values)]
    return np.concatenate(values, axis=-1).reshape(-1, 3)


def main() -> None:
    import pymc as pm

    import gallery_models as G
    import pymc_dp as pmdp

    rows = []
    for n in SIZES:
        model = G.logistic_regression(n)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with model:
                plain = _coefficients(pm.sample(1000, random_seed=0, **SAMPLE))
        mean, sd = plain.mean(0), plain.std(0)
        for eps in EPSILONS:
            for route, declared in ROUTES.items():
                distances, ratios, seconds = [], [], []
                for seed in SEEDS:
                    start = time.perf_counter()
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        trace = pmdp.sample(1000, epsilon=eps, model=model, method=route, random_seed=seed,
                                            **declared, **SAMPLE)
                    seconds.append(time.perf_counter() - start)
                    draws = _coefficients(trace)
                    distances.append(np.abs(draws.mean(0) - mean) / sd)
                    ratios.append(draws.std(0) / sd if len(draws) > 1 else np.full(3, np.nan))
                rms = np.sqrt(np.mean(np.square(distances), axis=0))
                row = {"N": n, "epsilon": eps, "route": route, "distance": float(rms.max()),
                       "sd_ratio": float(np.nanmean(ratios)), "seconds": float(np.mean(seconds))}
                rows.append(row)
                print(row, flush=True)
    lines = ["| N | ε | route | distance (plain sd) | released sd / plain sd | time (s) |",
             "|---:|---:|---|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['N']:,} | {r['epsilon']:g} | {r['route']} | {r['distance']:.2f} | {r['sd_ratio']:.2f} | "
                     f"{r['seconds']:.1f} |")
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    (out / "logistic_routes.json").write_text(json.dumps(rows, indent=1))
    (out / "logistic_routes.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
