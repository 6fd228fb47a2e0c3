"""What linking PyTensor to a BLAS is worth, on the models pymc_dp samples.

PyTensor warns at import that it "could not link to a BLAS installation" when it finds
no system BLAS (a venv made by pip has none). `make` links the OpenBLAS wheel that
NumPy and SciPy ship (``scipy-openblas32``, tools/link_blas.py). This benchmark times
one log-density-and-gradient evaluation, the unit of NUTS's work, of three models:

* ``regression``: a linear regression ``y ~ Normal(X @ beta, sigma)`` on N records, p
  covariates (matrix-vector products: BLAS gemv);
* ``noise-aware normal``: the Laplace route's noise-aware model of a Normal with unknown
  mean and scale (what ``pmdp.sample(epsilon=...)`` samples);
* ``noise-aware regression``: the Laplace route's noise-aware linear regression (its
  privatised XᵀX and Xᵀy, a small Cholesky factorisation),

each under the linker the installed PyTensor uses by default (Numba on PyTensor 3, C on
PyTensor 2) and under the C linker with and without the BLAS link. Each configuration
runs in its own process (PyTensor reads its flags once, at import), with one BLAS thread.

    python benchmarks/blas.py [--output results/blas_py312.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

_WORKER = r"""
import json, sys, time, warnings
warnings.simplefilter("ignore")
import numpy as np, pymc as pm, pytensor
import pymc_dp as pmdp

mode = sys.argv[1] or None
rng = np.random.default_rng(0)


def evaluations_per_second(model, seconds=1.5):
    kwargs = {"mode": mode} if mode else {}
    f = model.logp_dlogp_function(ravel_inputs=True, **kwargs)
    f.set_extra_values({})
    x0 = np.concatenate([np.ravel(v) for v in model.initial_point().values()]).astype(float)
    f(x0)
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(100):
            f(x0)
        n += 100
    return (time.perf_counter() - start) / n * 1e6


def regression(n, p):
    X = rng.normal(size=(n, p)); y = X @ rng.normal(size=p) + rng.normal(size=n)
    with pm.Model() as m:
        beta = pm.Normal("beta", 0, 1, shape=p); s = pm.HalfNormal("s", 1)
        pm.Normal("y", X @ beta, s, observed=y)
    return m


def noise_aware_normal():
    x = rng.normal(1.0, 2.0, size=1000)
    stats = pmdp.privatize(x, "normal", 1.0, bounds={"x": (-10, 10)}, rng=1)
    with pm.Model() as m:
        mu = pm.Normal("mu", 0, 5); sigma = pm.HalfNormal("sigma", 5)
        pmdp.observe_stats("x", pm.Normal.dist(mu, sigma), stats, noise_aware=True)
    return m


def noise_aware_regression(p):
    X = rng.uniform(-1, 1, size=(1000, p)); y = np.clip(X @ rng.normal(size=p) + rng.normal(size=1000), -5, 5)
    stats = pmdp.privatize((X, y), "linear_regression", 1.0, n_features=p, bounds={"x": (-1, 1), "y": (-5, 5)}, rng=1)
    with pm.Model() as m:
        beta = pm.Normal("beta", 0, 2, shape=p); sigma = pm.HalfNormal("sigma", 2)
        x_mu = pm.Normal("x_mu", 0, 1, shape=p); x_sigma = pm.HalfNormal("x_sigma", 1, shape=p)
        params = {"beta": beta, "sigma": sigma, "x_mu": x_mu, "x_sigma": x_sigma}
        pmdp.observe_stats("y", params, stats, noise_aware=True)
    return m


rows = {}
for label, build in [("regression N=100 p=5", lambda: regression(100, 5)),
                     ("regression N=1000 p=10", lambda: regression(1000, 10)),
                     ("regression N=10000 p=50", lambda: regression(10000, 50)),
                     ("noise-aware normal", noise_aware_normal),
                     ("noise-aware regression p=3", lambda: noise_aware_regression(3))]:
    try:
        rows[label] = evaluations_per_second(build())
    except Exception as err:  # a model this PyTensor cannot build: say so in the table
        rows[label] = f"{type(err).__name__}: {err}"[:120]
print(json.dumps({"pytensor": pytensor.__version__, "ldflags": bool(pytensor.config.blas__ldflags), "us": rows}))
"""


def run(mode: str, link: bool) -> dict:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    if not link:
        # An explicit empty link wins over the venv's .pth (the user's flags always win).
        env["PYTENSOR_FLAGS"] = ",".join(filter(None, [env.get("PYTENSOR_FLAGS"), "blas__ldflags="]))
    out = subprocess.run([sys.executable, "-c", _WORKER, mode], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default=None, help="JSON file (default: results/blas_<python>.json)")
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    from _timing import environment, write_results

    configs = {"default linker": ("", True), "C, BLAS linked": ("CVM", True), "C, no BLAS": ("CVM", False)}
    results = {name: run(mode, link) for name, (mode, link) in configs.items()}
    labels = list(next(iter(results.values()))["us"])
    print(f"PyTensor {results['default linker']['pytensor']}: µs per log-density + gradient evaluation (one thread)")
    print(f"{'model':28s}" + "".join(f"{name:>18s}" for name in configs))
    for label in labels:
        cells = [results[name]["us"][label] for name in configs]
        print(f"{label:28s}" + "".join(f"{c:18.1f}" if isinstance(c, float) else f"{'error':>18s}" for c in cells))
    py = "py" + "".join(__import__("platform").python_version_tuple()[:2])
    output = Path(args.output) if args.output else HERE / "results" / f"blas_{py}.json"
    write_results(output, {"environment": environment(), "configs": results,
                           "when": time.strftime("%Y-%m-%d")})


if __name__ == "__main__":
    main()
