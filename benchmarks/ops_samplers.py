"""Which NUTS the record-reading routes should use: PyMC's or nutpie, end to end per call.

The ops route samples a tempered copy of the user's model and the saa route one model per
block of records. Both models hold the records, so each call (each block) is a new graph:
nutpie compiles it every time, while PyMC's NUTS reuses PyTensor's compiled pieces. This
times ``pmdp.sample`` on a Poisson GLM with coords and ``pm.Data`` (N = 300, ε = 10,
2 chains × (300 + 300), ``cores=1``) with each sampler, twice (the second pass warm), and
writes ``results/ops_samplers.json``. The routes default to PyMC's NUTS because of it;
``nuts_sampler="nutpie"`` is still taken when asked.

Run with ``python benchmarks/ops_samplers.py`` (needs nutpie: the ``bench`` extra).
"""

from __future__ import annotations

import logging
import time
import warnings
from pathlib import Path

import numpy as np
from _timing import environment, write_results

RESULTS = Path(__file__).resolve().parent / "results"
N = 300
ROUTES = {"ops": {"loglik_clip": (-8.0, 0.0)}, "saa": {"ranges": {"a": (-2.0, 2.0), "b": (-2.0, 2.0)}, "blocks": 6}}


def poisson_glm(x: np.ndarray, y: np.ndarray):
    import pymc as pm

    with pm.Model(coords={"obs": np.arange(x.size)}) as model:
        covariate = pm.Data("x", x, dims="obs")
        a = pm.Normal("a", 0, 1)
        b = pm.Normal("b", 0, 1)
        pm.Poisson("y", pm.math.exp(a + b * covariate), observed=y, dims="obs")
    return model


def main() -> int:
    warnings.filterwarnings("ignore")
    logging.getLogger("pymc").setLevel(logging.ERROR)
    import pymc_dp as pmdp

    rng = np.random.default_rng(0)
    x = rng.normal(size=N)
    y = rng.poisson(np.exp(0.3 + 0.5 * x))
    rows: dict[str, float] = {}
    for run in ("cold", "warm"):
        for sampler in ("pymc", "nutpie"):
            for method, options in ROUTES.items():
                t0 = time.perf_counter()
                pmdp.sample(300, tune=300, chains=2, cores=1, model=poisson_glm(x, y), epsilon=10.0, method=method,
                            progressbar=False, nuts_sampler=sampler, random_seed=1, **options)
                rows[f"{method}_{sampler}_{run}"] = round(time.perf_counter() - t0, 2)
                print(f"{method:4} {sampler:7} {run}: {rows[f'{method}_{sampler}_{run}']:6.2f} s", flush=True)
    ratios = {m: round(rows[f"{m}_nutpie_warm"] / rows[f"{m}_pymc_warm"], 2) for m in ROUTES}
    print("nutpie / PyMC's NUTS (warm):", ratios)
    write_results(RESULTS / "ops_samplers.json", {**environment(), "rows": rows, "nutpie_over_pymc_warm": ratios})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
