"""Benchmark of the private step methods: the cost of one draw of PrivateGibbs and PrivateMetropolis.

Two workloads, each sampled with ``pm.sample(draws, tune=0, step=..., chains=1,
cores=1, random_seed=seed, progressbar=False, compute_convergence_checks=False)``:

1. **beta-Bernoulli**, N ∈ {10³, 10⁴, 10⁵} records drawn from Bernoulli(0.3)::

       p ~ Beta(2, 2),  y ~ Bernoulli(p)  (observed),  tm = pmdp.truncate(model, {"p": (0.05, 0.95)})

   and, inside ``with tm:``, ``pmdp.PrivateGibbs(["p"], temperature=4.0)`` (an exact
   tempered conjugate draw per step) or ``pmdp.PrivateMetropolis(["p"],
   temperature=4.0)`` (one Barker random-walk step, which evaluates the
   log-likelihood of every record twice), ``draws=2000``.

2. **per-record latent scan**: a two-component Normal mixture with one assignment
   per record, N ∈ {10³, 10⁴, 5·10⁴}, records from 0.4·N(−2, 1) + 0.6·N(2, 1)
   clipped into [−5, 5]::

       w ~ Dirichlet(1, 1),  mu ~ Normal(0, 3) truncated to [−5, 5] (shape 2),
       z ~ Categorical(w) (shape N),  x ~ Normal(mu[z], 1)  (observed)

   with three steps ``pmdp.PrivateGibbs([v], temperature=50.0, bounds={"x": {"x":
   (-5, 5)}})`` for v in z, mu, w (z is drawn by one vectorised scan over the
   records), ``draws=200``, ``initvals={"mu": [-1, 1]}``. Its cost per draw should be
   about linear in N; the table also gives it per record.

What is timed, per run (a fresh step object per run, on a model built beforehand):

* **per draw**: the sampling loop alone, from the end of the first draw to the end
  of the last one as a ``pm.sample`` callback sees them, divided by ``draws − 1``
  (no step construction, no initial point, no packaging of the InferenceData);
* **whole call**: constructing the step(s) (proving the sensitivity, compiling their
  functions) plus the whole ``pm.sample`` call.

Both as process CPU time (sampling runs in this process; the table uses it, being
less sensitive to other processes' load than wall-clock time) and as wall-clock
time (in the JSON). Every (workload, step, N) first runs once untimed with
``--warmup-draws`` draws on the same model, so that imports and PyTensor's
compilation cache are warm; then ``--repeat`` rounds time every case once each
(interleaved) and the median is reported. Garbage is collected before every run;
one BLAS thread (threadpoolctl), as in the test suite.

The JSON also records each step's charged cost per draw, ``step.cost.epsilon`` and
``step.cost.delta`` (fixed numbers, known before sampling: 2Δ/T per update), and a
posterior summary of the last run (a sanity check, not a result: with T = 50 the
latent assignments read the records only weakly, so both mixture means sit near the
overall mean of the data).

Results are printed as a table and written as JSON to ``--output`` (default
``benchmarks/results/private_mcmc.json``). Nothing else is asserted. About a minute
with the defaults on a 2-core machine.

Run with ``python benchmarks/private_mcmc.py`` (``--help`` for the options).
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Callable

import numpy as np
from threadpoolctl import threadpool_limits

from _timing import LoopClock, environment, write_results

RESULTS = Path(__file__).resolve().parent / "results"
TRUE_P = 0.3
TRUNCATION = {"p": (0.05, 0.95)}
BB_TEMPERATURE = 4.0
MIX_TEMPERATURE = 50.0
MIX_WEIGHT, MIX_MEANS, CLIP = 0.4, (-2.0, 2.0), (-5.0, 5.0)
MIX_BOUNDS = {"x": {"x": CLIP}}
MIX_VARS = ("z", "mu", "w")
TIMES = ("loop_cpu", "loop_wall", "whole_cpu", "whole_wall")


# ----------------------------------------------------------------------------- models


def beta_bernoulli(n: int, seed: int) -> Any:
    """The truncated beta-Bernoulli model on ``n`` Bernoulli(0.3) records."""
    import pymc as pm

    import pymc_dp as pmdp

    records = np.random.default_rng([seed, n]).binomial(1, TRUE_P, size=n)
    with pm.Model() as model:
        p = pm.Beta("p", 2.0, 2.0)
        pm.Bernoulli("y", p, observed=records)
    return pmdp.truncate(model, TRUNCATION)


def mixture(n: int, seed: int) -> tuple[Any, int]:
    """The two-component Normal mixture with per-record assignments; also how many records were clipped."""
    import pymc as pm

    rng = np.random.default_rng([seed, n])
    first = rng.random(n) < MIX_WEIGHT
    raw = np.where(first, rng.normal(MIX_MEANS[0], 1.0, n), rng.normal(MIX_MEANS[1], 1.0, n))
    x = np.clip(raw, *CLIP)
    with pm.Model() as m:
        w = pm.Dirichlet("w", np.ones(2))
        mu = pm.Truncated("mu", pm.Normal.dist(0, 3), lower=CLIP[0], upper=CLIP[1], shape=2)
        z = pm.Categorical("z", w, shape=n)
        pm.Normal("x", mu[z], 1.0, observed=x)
    return m, int(np.sum(raw != x))


def gibbs_p() -> list[Any]:
    import pymc_dp as pmdp

    return [pmdp.PrivateGibbs(["p"], temperature=BB_TEMPERATURE)]


def metropolis_p() -> list[Any]:
    import pymc_dp as pmdp

    return [pmdp.PrivateMetropolis(["p"], temperature=BB_TEMPERATURE)]


def mixture_steps() -> list[Any]:
    import pymc_dp as pmdp

    return [pmdp.PrivateGibbs([v], temperature=MIX_TEMPERATURE, bounds=MIX_BOUNDS) for v in MIX_VARS]


# ----------------------------------------------------------------------------- timing


def run(model: Any, make_steps: Callable[[], list[Any]], draws: int, seed: int,
        initvals: dict[str, Any] | None) -> dict[str, Any]:
    """Build the step(s) and sample once: per-draw and whole-call times, costs, a posterior summary."""
    import pymc as pm

    clock = LoopClock()
    gc.collect()
    with model:
        cpu0, wall0 = time.process_time(), time.perf_counter()
        steps = make_steps()
        cpu1, wall1 = time.process_time(), time.perf_counter()
        idata = pm.sample(
            draws=draws, tune=0, step=steps, chains=1, cores=1, random_seed=seed, initvals=initvals,
            progressbar=False, compute_convergence_checks=False, callback=clock,
        )
        cpu2, wall2 = time.process_time(), time.perf_counter()
    assert clock.first is not None and clock.last is not None and clock.calls == draws
    intervals = max(1, draws - 1)
    out: dict[str, Any] = {
        "loop_cpu": clock.last[0] - clock.first[0],
        "loop_wall": clock.last[1] - clock.first[1],
        "whole_cpu": cpu2 - cpu0,
        "whole_wall": wall2 - wall0,
        "build_cpu": cpu1 - cpu0,
        "build_wall": wall1 - wall0,
    }
    out["us_per_draw_cpu"] = 1e6 * out["loop_cpu"] / intervals
    out["us_per_draw_wall"] = 1e6 * out["loop_wall"] / intervals
    out["cost"] = [
        {"step": type(s).__name__, "touched": s.cost.touched, "mechanism": s.cost.mechanism,
         "epsilon": float(s.cost.epsilon), "delta": float(s.cost.delta), "temperature": float(s.cost.temperature),
         "sensitivity": {k: float(v) for k, v in s.cost.sensitivity.items()}}
        for s in steps
    ]
    post = idata.posterior
    summary: dict[str, Any] = {}
    for name in ("p", "mu", "w"):
        if name in post:
            values = post[name].values.reshape(post[name].shape[0] * post[name].shape[1], -1)
            summary[name] = {"mean": values.mean(axis=0).round(4).tolist(), "sd": values.std(axis=0).round(4).tolist()}
    if "accepted" in idata.sample_stats:
        summary["acceptance_rate"] = float(idata.sample_stats["accepted"].mean())
    out["posterior"] = summary
    return out


# ----------------------------------------------------------------------------- output


def format_table(rows: list[dict[str, Any]]) -> str:
    head = ("workload", "step", "N", "µs/draw (CPU)", "µs/draw/record", "whole call, s (CPU)",
            "ε per draw", "δ per draw", "runs, µs/draw")
    body = []
    for r in rows:
        body.append((
            r["workload"], r["label"], f"{r['n']:,}", f"{r['us_per_draw_cpu']:,.1f}",
            f"{r['us_per_draw_per_record_cpu']:.4f}", f"{r['median']['whole_cpu']:.2f}",
            f"{r['epsilon_per_draw']:.4g}", f"{r['delta_per_draw']:.3g}",
            ", ".join(f"{x:,.0f}" for x in r["runs_us_per_draw_cpu"]),
        ))
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(head)]
    right = {2, 3, 4, 5, 6, 7}
    def line(cells: tuple[str, ...]) -> str:
        return "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))
    return "\n".join([line(head), "  ".join("-" * w for w in widths), *(line(b) for b in body)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bb-n", type=int, nargs="+", default=[1_000, 10_000, 100_000],
                        help="records of the beta-Bernoulli runs")
    parser.add_argument("--mix-n", type=int, nargs="+", default=[1_000, 10_000, 50_000],
                        help="records of the mixture (latent scan) runs")
    parser.add_argument("--bb-draws", type=int, default=2000)
    parser.add_argument("--mix-draws", type=int, default=200)
    parser.add_argument("--warmup-draws", type=int, default=20, help="draws of the untimed warm-up run of each case")
    parser.add_argument("--seed", type=int, default=0, help="seed of the data and of every pm.sample call")
    parser.add_argument("--repeat", type=int, default=3, help="interleaved timed rounds (medians reported)")
    parser.add_argument("--output", type=Path, default=RESULTS / "private_mcmc.json", help="JSON results file")
    args = parser.parse_args(argv)

    warnings.filterwarnings("ignore", message=".*could not link to a BLAS.*")  # said once at import
    warnings.filterwarnings("ignore", message=".*The effect of Potentials on other parameters.*")
    import pymc as pm
    import pytensor

    logging.getLogger("pymc").setLevel(logging.ERROR)  # no per-run sampler chatter
    threadpool_limits(1)
    start = time.perf_counter()

    cases: list[dict[str, Any]] = []
    for n in args.bb_n:
        model = beta_bernoulli(n, args.seed)
        cases.append({"workload": "beta-Bernoulli", "label": "PrivateGibbs", "n": n, "model": model,
                      "steps": gibbs_p, "draws": args.bb_draws, "initvals": None})
        cases.append({"workload": "beta-Bernoulli", "label": "PrivateMetropolis", "n": n, "model": model,
                      "steps": metropolis_p, "draws": args.bb_draws, "initvals": None})
    clipped: dict[int, int] = {}
    for n in args.mix_n:
        model, clipped[n] = mixture(n, args.seed)
        cases.append({"workload": "mixture scan", "label": "PrivateGibbs z, mu, w", "n": n, "model": model,
                      "steps": mixture_steps, "draws": args.mix_draws, "initvals": {"mu": np.array([-1.0, 1.0])}})

    for case in cases:  # untimed warm-up
        run(case["model"], case["steps"], args.warmup_draws, args.seed, case["initvals"])
    for _ in range(max(1, args.repeat)):
        for case in cases:
            case.setdefault("runs", []).append(
                run(case["model"], case["steps"], case["draws"], args.seed, case["initvals"]))
    elapsed_timing = time.perf_counter() - start

    rows: list[dict[str, Any]] = []
    for case in cases:
        runs = case["runs"]
        last = runs[-1]
        median = {m: statistics.median(r[m] for r in runs) for m in (*TIMES, "build_cpu", "build_wall")}
        us = statistics.median(r["us_per_draw_cpu"] for r in runs)
        rows.append({
            "workload": case["workload"], "label": case["label"], "n": case["n"], "draws": case["draws"],
            "us_per_draw_cpu": us,
            "us_per_draw_wall": statistics.median(r["us_per_draw_wall"] for r in runs),
            "us_per_draw_per_record_cpu": us / case["n"],
            "runs_us_per_draw_cpu": [r["us_per_draw_cpu"] for r in runs],
            "seconds": {m: [r[m] for r in runs] for m in (*TIMES, "build_cpu", "build_wall")},
            "median": median,
            "epsilon_per_draw": sum(c["epsilon"] for c in last["cost"]),
            "delta_per_draw": sum(c["delta"] for c in last["cost"]),
            "cost": last["cost"],
            "posterior": last["posterior"],
            "reproducible": all(r["posterior"] == last["posterior"] for r in runs),
        })

    print(
        f"Private step methods, cost per draw; chains=1, cores=1, tune=0, seed={args.seed}, median of "
        f"{args.repeat}; beta-Bernoulli: T = {BB_TEMPERATURE:g}, draws={args.bb_draws}; mixture: "
        f"T = {MIX_TEMPERATURE:g}, draws={args.mix_draws}; one BLAS thread; PyMC {pm.__version__}, "
        f"PyTensor {pytensor.__version__}"
    )
    print()
    print(format_table(rows))
    print()
    print("µs/draw: CPU time of the sampling loop / (draws − 1); whole call: step construction + pm.sample.")
    print("ε, δ per draw: Σ step.cost.epsilon / delta over the run's steps, per step:")
    seen = set()
    for r in rows:
        key = (r["workload"], r["label"])
        if key in seen:
            continue
        seen.add(key)
        print(f"  {r['workload']}, {r['label']}: " + "; ".join(
            f"{c['step']}({c['touched']}) ε = {c['epsilon']:.6g}, δ = {c['delta']:.3g}, "
            f"Δ = {', '.join(f'{v:.6g}' for v in c['sensitivity'].values())}" for c in r["cost"]))
    mix = [r for r in rows if r["workload"] == "mixture scan"]
    scan_fit: dict[str, float] | None = None
    if len(mix) >= 2:
        lo, hi = mix[0], mix[-1]
        slope, intercept = np.polyfit([r["n"] for r in mix], [r["us_per_draw_cpu"] for r in mix], 1)
        scan_fit = {"us_per_record": float(slope), "us_fixed": float(intercept)}
        sizes = ", ".join(f"{r['n']:,}" for r in mix)
        print(f"mixture scan, µs/draw ≈ {intercept:,.0f} + {slope:.3f} × N (least squares over N = "
              f"{sizes}); per-record cost N = {hi['n']:,} / N = {lo['n']:,}: "
              f"{hi['us_per_draw_per_record_cpu'] / lo['us_per_draw_per_record_cpu']:.2f}× "
              f"(1 = proportional to N); records clipped: {clipped}")
    print("Posterior (last run; a sanity check):")
    for r in rows:
        print(f"  {r['workload']}, {r['label']}, N = {r['n']:,}: {json.dumps(r['posterior'])}"
              + ("" if r["reproducible"] else "  (NOT identical across repeats)"))

    total = time.perf_counter() - start
    print(f"total: {total:.0f} s")
    result = {
        "benchmark": "private_mcmc",
        **environment(),
        "argv": sys.argv[1:] if argv is None else list(argv),
        "config": {"bb_n": args.bb_n, "mix_n": args.mix_n, "bb_draws": args.bb_draws, "mix_draws": args.mix_draws,
                   "tune": 0, "chains": 1, "cores": 1, "seed": args.seed, "repeat": args.repeat,
                   "warmup_draws": args.warmup_draws, "true_p": TRUE_P, "truncation": {"p": list(TRUNCATION["p"])},
                   "bb_temperature": BB_TEMPERATURE, "mix_temperature": MIX_TEMPERATURE,
                   "mix_weight_first": MIX_WEIGHT, "mix_means": list(MIX_MEANS), "mix_bounds": {"x": list(CLIP)},
                   "mix_initvals": {"mu": [-1.0, 1.0]}, "mix_clipped_records": clipped},
        "times": {"us_per_draw_cpu": "median over runs of CPU µs of the sampling loop / (draws - 1)",
                  "us_per_draw_wall": "the same in wall-clock µs",
                  "us_per_draw_per_record_cpu": "us_per_draw_cpu / N",
                  "loop_cpu": "process CPU s from the first to the last draw",
                  "loop_wall": "wall s from the first to the last draw",
                  "whole_cpu": "process CPU s of step construction + pm.sample",
                  "whole_wall": "wall s of step construction + pm.sample",
                  "build_cpu": "process CPU s of step construction", "build_wall": "wall s of step construction"},
        "rows": rows,
        "mixture_scan_fit": scan_fit,
        "seconds": {"timing": round(elapsed_timing, 1), "total": round(total, 1)},
    }
    write_results(args.output, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
