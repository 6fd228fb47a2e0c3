"""Benchmark of the Laplace route: sampling cost does not grow with N.

A Normal model with unknown mean and standard deviation,

    mu ~ Normal(0, 10),  sigma ~ HalfNormal(5),  y ~ Normal(mu, sigma)  (observed: N records),

is sampled three ways in one process, with the same ``draws``, ``tune``, ``chains``,
``cores=1`` and sampler seed:

1. privately on N = 10^3 records: ``pmdp.sample(epsilon=..., bounds={"y": {"x": (-10, 10)}})``
   (privatise the sufficient statistics (Σy, Σy²) once, then NUTS on a record-free
   copy of the model);
2. the same on N = 10^6 records;
3. plain ``pm.sample`` on the 10^6 raw records (the non-private baseline).

Each time covers the call only (``pmdp.sample``, which includes privatising, or
``pm.sample``); the records are generated and the model is built beforehand, the
same way for every run. An untimed warm-up (both kinds, on another, smaller data
set) runs first, so that imports and PyTensor's generic compiled code are equally
warm for every timed run.

Every private run is a *new release*, as it would be for a user: by default its
noise comes from OpenDP's secure sampler, so no two runs see the same statistics.
That matters for the timing: the privatised statistics enter the sampled model as
constants, so each new release compiles its logp/gradient afresh (about a second,
more than the sampling itself). With ``--seeded-noise`` the noise is seeded
instead (the printed posterior means are then reproducible), but a second
invocation finds those exact models in PyTensor's on-disk compilation cache and its
private runs skip the compile. The private runs are cheap, so each N is run
``--repeat`` times, interleaved (small, large, small, large, ...) so that drifts in
machine load hit both alike, and the median is used.

Targets (exit status 1 if either is missed):

* speed-up: plain ``pm.sample`` on 10^6 records takes at least 10× as long as the
  private run on 10^6 records;
* flat in N: the private run on 10^6 records takes at most 1.5× as long as the
  private run on 10^3 records.

Run with ``python benchmarks/laplace_route.py`` (``--help`` for the options).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from typing import Any

import numpy as np

# Data well inside the bounds (6 sd from the nearer one): nothing is clipped.
TRUE_MU, TRUE_SIGMA = 1.0, 1.5
BOUNDS = {"y": {"x": (-10.0, 10.0)}}
SPEEDUP_TARGET = 10.0
GROWTH_TARGET = 1.5


def make_model(records: np.ndarray) -> Any:
    import pymc as pm

    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 10.0)
        sigma = pm.HalfNormal("sigma", 5.0)
        pm.Normal("y", mu, sigma, observed=records)
    return model


def posterior_means(idata: Any) -> tuple[float, float]:
    post = idata.posterior
    return float(post["mu"].mean()), float(post["sigma"].mean())


def run_private(model: Any, args: argparse.Namespace, draws: int, tune: int, noise: Any) -> tuple[float, Any]:
    import pymc_dp as pmdp

    t0 = time.perf_counter()
    idata = pmdp.sample(
        draws, epsilon=args.epsilon, bounds=BOUNDS, noise_rng=noise, model=model,
        tune=tune, chains=args.chains, cores=1, random_seed=args.seed, progressbar=False,
    )
    return time.perf_counter() - t0, idata


def run_plain(model: Any, args: argparse.Namespace, draws: int, tune: int) -> tuple[float, Any]:
    import pymc as pm

    t0 = time.perf_counter()
    idata = pm.sample(
        draws, model=model, tune=tune, chains=args.chains, cores=1, random_seed=args.seed, progressbar=False,
    )
    return time.perf_counter() - t0, idata


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-small", type=int, default=1_000)
    parser.add_argument("--n-large", type=int, default=1_000_000)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=5, help="timed private runs per N, each a new release (median used)")
    parser.add_argument("--seeded-noise", action="store_true",
                        help="seeded instead of secure noise: reproducible summaries, but a warm compile cache on reruns")
    args = parser.parse_args(argv)

    import logging

    warnings.filterwarnings("ignore", message=".*could not link to a BLAS.*")  # said once at import
    warnings.filterwarnings("ignore", message=".*The effect of Potentials on other parameters.*")
    import pymc as pm

    logging.getLogger("pymc").setLevel(logging.ERROR)  # no per-run sampler chatter

    rng = np.random.default_rng(args.seed)
    sizes = (args.n_small, args.n_large)
    records = {n: rng.normal(TRUE_MU, TRUE_SIGMA, size=n) for n in sizes}
    models = {n: make_model(x) for n, x in records.items()}

    # Untimed warm-up on another data set: imports and generic compiled code.
    warm = make_model(np.random.default_rng(args.seed + 1).normal(TRUE_MU, TRUE_SIGMA, size=500))
    run_private(warm, args, draws=20, tune=20, noise=None)
    run_plain(warm, args, draws=20, tune=20)

    times: dict[int, list[float]] = {n: [] for n in sizes}
    last: dict[int, Any] = {}
    for k in range(max(1, args.repeat)):
        for n in sizes:  # interleaved; each run a new release with its own noise
            noise = np.random.default_rng([args.seed, n, k]) if args.seeded_noise else None
            seconds, last[n] = run_private(models[n], args, args.draws, args.tune, noise=noise)
            times[n].append(seconds)
    plain_time, plain_idata = run_plain(models[args.n_large], args, args.draws, args.tune)

    private_time = {n: statistics.median(t) for n, t in times.items()}
    rows: list[tuple[str, float, str, tuple[float, float]]] = [
        (f"privatise + pmdp.sample, N = {n:,}", private_time[n], "runs " + ", ".join(f"{t:.2f}" for t in times[n]),
         posterior_means(last[n]))
        for n in sizes
    ]
    rows.append((f"plain pm.sample, N = {args.n_large:,} raw records", plain_time, "one run",
                 posterior_means(plain_idata)))

    print(
        f"Normal model (unknown mu, sigma); draws={args.draws}, tune={args.tune}, chains={args.chains}, cores=1, "
        f"seed={args.seed}; private runs: epsilon={args.epsilon}, bounds={BOUNDS['y']}, "
        f"{'seeded' if args.seeded_noise else 'secure'} noise, median of {args.repeat}; "
        f"PyMC {pm.__version__}"
    )
    width = max(len(r[0]) for r in rows)
    print(f"{'run'.ljust(width)}  {'seconds':>8}  {'mean mu':>8}  {'mean sigma':>10}  notes")
    for label, seconds, detail, (mu, sigma) in rows:
        print(f"{label.ljust(width)}  {seconds:8.2f}  {mu:8.4f}  {sigma:10.4f}  {detail}")
    print(f"(true mu = {TRUE_MU}, sigma = {TRUE_SIGMA})")

    speedup = plain_time / private_time[args.n_large]
    growth = private_time[args.n_large] / private_time[args.n_small]
    ok_speed, ok_growth = speedup >= SPEEDUP_TARGET, growth <= GROWTH_TARGET
    print(
        f"speed-up, plain / private at N = {args.n_large:,}: {speedup:6.1f}x  "
        f"(target >= {SPEEDUP_TARGET:g}x: {'ok' if ok_speed else 'MISSED'})"
    )
    print(
        f"growth, private N = {args.n_large:,} / N = {args.n_small:,}: {growth:6.2f}x  "
        f"(target <= {GROWTH_TARGET:g}x: {'ok' if ok_growth else 'MISSED'})"
    )
    return 0 if ok_speed and ok_growth else 1


if __name__ == "__main__":
    sys.exit(main())
