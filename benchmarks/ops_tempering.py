"""Benchmark of OPS tempering: how much slower is a tempered model to sample?

``pmdp.temper(model, T)`` returns a copy of the model with one extra
``pm.Potential`` ("dp_tempering") equal to ``(1/T − 1) × Σ logp(observed)``, so that
the model's log-density becomes ``log p(θ) + log p(X | θ) / T``. This benchmark
samples the same model untempered and tempered, with the same sampler, ``draws``,
``tune``, ``chains``, ``cores=1`` and ``random_seed``, and reports the ratio of the
times, tempered / untempered.

Models (N = 10,000 records each, drawn from a seeded numpy generator):

* **beta-Bernoulli**: ``p ~ Beta(1, 1)`` truncated to (0.05, 0.95) with
  ``pmdp.truncate``, ``y ~ Bernoulli(p)`` (true p = 0.3). Δ = (logit 0.95 − logit
  0.05) / 2; its gradient is cheap (PyTensor folds the data into a few constants);
* **Poisson log-rate**: ``log_rate ~ Uniform(-3, 3)``,
  ``c ~ Poisson(exp(log_rate))`` (true rate e), Δ proven with the data bound
  ``c ≤ 50``. Its log-density and gradient loop over the N records: more work per
  evaluation, so per-evaluation overhead shows.

T is the OPS temperature for ε = 1 (per sample): ``T = max(1, 2Δ/ε)`` from
``pmdp.loglik_sensitivity(model, ...).temperature(1.0)``. Each model is sampled
with NUTS (``pm.sample``'s default) and with ``step=pm.Metropolis()``, the step
created inside the context of the model being sampled.

What is timed, per run:

* **whole call**: ``pm.sample(draws, tune=tune, chains=2, cores=1, random_seed=seed,
  progressbar=False, compute_convergence_checks=False, discard_tuned_samples=False,
  callback=clock)`` (for Metropolis also the ``pm.Metropolis()`` construction):
  building the step method, which rewrites and compiles the log-density (and
  gradient) function, initial points, NUTS initialisation, the sampling loop, and
  packaging the InferenceData. ``discard_tuned_samples=False`` only keeps the tuning
  draws in the result (to count gradient evaluations) and ``clock`` only reads the
  clocks after each draw; neither changes the sampling.
* **sampling loop**: the draws alone (tuning + draws, every chain), from the end of
  the first draw to the end of the last one as ``clock`` sees them: no compilation,
  no packaging.

Both are measured as process CPU time (``time.process_time``; sampling runs in this
process, ``cores=1``) and as wall-clock time. The target and the table use CPU time:
on a shared machine another process's load stretches the wall-clock time of
identical runs (up to 2× apart) much more than this process's CPU time, which is
what tempering changes. Wall-clock ratios are shown too, and everything is in the
JSON. Runs of a second or two still vary by ±20 % in CPU time on a busy machine:
use ``--repeat 9`` or more for a firm verdict near the threshold.

Before any timing, every (model, sampler, tempered or not) combination runs once
untimed with 20 tuning steps and 20 draws, on the same model object: imports are
done and PyTensor's compilation cache holds every compiled module, so the whole
call times a warm compile (graph rewriting and linking, not C compilation), as a
user's second run would. Then ``--repeat`` rounds are run, each round timing every
combination once (interleaved, so that drifts in machine load hit all alike; the
untempered run goes first in even rounds and second in odd ones); medians are
reported. Garbage is collected before every run, so that no run pays for the
previous run's garbage. One BLAS thread (threadpoolctl), as in the test suite.

Why the overhead should be small: the Potential holds the same log-likelihood
subgraph as the observed variable's own term, and PyTensor's merge rewrite
computes identical subgraphs once; what remains is one multiply by ``(1/T − 1)``
and one add. The log-density function (all Metropolis evaluates) should thus cost
the same per call. Where it may not be small:

* the gradient (NUTS) is built symbolically *before* the rewrites, from two
  separate copies of the log-likelihood whose upstream gradients differ (1 and
  1/T − 1). When the per-record gradient passes through a ``switch`` (a support
  check, as in the Poisson log-density) the constant stays inside it and the two
  reverse-mode passes over the records are not merged: the compiled gradient
  then reduces over the records twice as often. When PyTensor folds the data
  into constants (the Bernoulli gradient here) nothing per record is left to
  duplicate;
* compiling: the rewrites run on the graph before merging, which is larger, so
  building the step method takes longer (part of the whole call);
* geometry: the tempered posterior is about √T times wider, which changes NUTS's
  number of leapfrog steps per draw (either way) and Metropolis's tuned scale.

So the table also gives, for NUTS, the number of gradient evaluations (leapfrog
steps, tuning included) and the CPU time per gradient evaluation (the loop's CPU
time over that number), and below it the node counts of the compiled log-density
(``model.compile_logp()``), gradient (``compile_dlogp``) and joint NUTS
(``logp_dlogp_function``) graphs.

Target (exit status 1 if missed): for every (model, sampler), tempered /
untempered ≤ 1.25 for the median CPU time of the whole call and for that of the
sampling loop.

Results are printed as a Markdown table and written as JSON to ``--output``
(default ``benchmarks/results/ops_tempering.json``): versions, machine,
configuration, raw times, medians, ratios, gradient-evaluation and node counts.

Run with ``python benchmarks/ops_tempering.py`` (``--help`` for the options).
"""

from __future__ import annotations

import argparse
import gc
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
TRUE_LOG_RATE = 1.0
TRUNCATION = {"p": (0.05, 0.95)}
POISSON_BOUNDS = {"c": {"upper": 50}}
RATIO_TARGET = 1.25
SAMPLERS = ("NUTS", "Metropolis")
WARM_DRAWS = 20
TIMES = ("whole_cpu", "whole_wall", "loop_cpu", "loop_wall", "loop_wall_pymc")


def beta_bernoulli(n: int, rng: np.random.Generator) -> tuple[Any, Any]:
    """The truncated beta-Bernoulli model and its sensitivity report."""
    import pymc as pm
    import pymc_dp as pmdp

    y = rng.binomial(1, TRUE_P, size=n)
    with pm.Model() as model:
        p = pm.Beta("p", 1.0, 1.0)
        pm.Bernoulli("y", p, observed=y)
    model = pmdp.truncate(model, TRUNCATION)
    return model, pmdp.loglik_sensitivity(model)


def poisson_log_rate(n: int, rng: np.random.Generator) -> tuple[Any, Any]:
    """The Poisson model with a log-rate and its sensitivity report (counts bounded by 50)."""
    import pymc as pm
    import pymc_dp as pmdp

    counts = rng.poisson(np.exp(TRUE_LOG_RATE), size=n)
    if counts.max() > POISSON_BOUNDS["c"]["upper"]:  # pragma: no cover - not with these parameters
        raise RuntimeError("a simulated count exceeds the declared bound")
    with pm.Model() as model:
        log_rate = pm.Uniform("log_rate", -3.0, 3.0)
        pm.Poisson("c", pm.math.exp(log_rate), observed=counts)
    return model, pmdp.loglik_sensitivity(model, bounds=POISSON_BOUNDS)


MODELS: dict[str, tuple[str, str, Callable[[int, np.random.Generator], tuple[Any, Any]]]] = {
    "beta_bernoulli": ("beta-Bernoulli", "p", beta_bernoulli),
    "poisson": ("Poisson log-rate", "log_rate", poisson_log_rate),
}


def run(model: Any, sampler: str, args: argparse.Namespace, draws: int, tune: int) -> dict[str, Any]:
    """One ``pm.sample`` call: whole-call and sampling-loop times, gradient evaluations, posterior summary."""
    import pymc as pm

    clock = LoopClock()
    gc.collect()  # start every run with no garbage from the previous one to collect
    with model:
        cpu0, wall0 = time.process_time(), time.perf_counter()
        step = pm.Metropolis() if sampler == "Metropolis" else None
        idata = pm.sample(
            draws, tune=tune, chains=args.chains, cores=1, step=step, random_seed=args.seed,
            progressbar=False, compute_convergence_checks=False, discard_tuned_samples=False, callback=clock,
        )
        cpu1, wall1 = time.process_time(), time.perf_counter()
    assert clock.first is not None and clock.last is not None and clock.calls == args.chains * (draws + tune)
    out: dict[str, Any] = {
        "whole_cpu": cpu1 - cpu0,
        "whole_wall": wall1 - wall0,
        "loop_cpu": clock.last[0] - clock.first[0],
        "loop_wall": clock.last[1] - clock.first[1],
        "loop_wall_pymc": float(idata.posterior.attrs["sampling_time"]),
    }
    if sampler == "NUTS":
        out["grad_evals"] = int(idata.warmup_sample_stats["n_steps"].sum() + idata.sample_stats["n_steps"].sum())
    name = next(iter(idata.posterior.data_vars))
    values = idata.posterior[name].values
    out["posterior"] = {"var": name, "mean": float(values.mean()), "sd": float(values.std())}
    return out


def node_counts(model: Any) -> dict[str, int]:
    """Apply nodes of the compiled log-density, gradient, and joint (NUTS) functions."""
    return {
        "logp": len(model.compile_logp().f.maker.fgraph.apply_nodes),
        "dlogp": len(model.compile_dlogp().f.maker.fgraph.apply_nodes),
        "logp_dlogp": len(model.logp_dlogp_function(ravel_inputs=True)._pytensor_function.maker.fgraph.apply_nodes),
    }


def markdown_table(rows: list[dict[str, Any]]) -> str:
    head = (
        "| model | sampler | T | whole call, CPU s (untempered / tempered) | ratio "
        "| sampling loop, CPU s (untempered / tempered) | ratio | wall-clock ratio (whole / loop) "
        "| gradient evals (untempered / tempered) | CPU µs per gradient eval (untempered / tempered) | ratio |"
    )
    lines = [head, "|" + "---|" * head.count(" | ") + "---|"]
    for r in rows:
        u, t = r["untempered"], r["tempered"]
        if r["sampler"] == "NUTS":
            grads = f"{u['grad_evals']:,} / {t['grad_evals']:,}"
            per = f"{u['us_per_grad']:.0f} / {t['us_per_grad']:.0f}"
            per_ratio = f"{r['ratio']['per_grad']:.2f}"
        else:
            grads = per = per_ratio = "–"
        lines.append(
            f"| {r['label']} | {r['sampler']} | {r['temperature']:.4g} "
            f"| {u['median']['whole_cpu']:.2f} / {t['median']['whole_cpu']:.2f} | **{r['ratio']['whole_cpu']:.2f}** "
            f"| {u['median']['loop_cpu']:.2f} / {t['median']['loop_cpu']:.2f} | **{r['ratio']['loop_cpu']:.2f}** "
            f"| {r['ratio']['whole_wall']:.2f} / {r['ratio']['loop_wall']:.2f} "
            f"| {grads} | {per} | {per_ratio} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000, help="records per model")
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--epsilon", type=float, default=1.0, help="ε per sample that sets T = max(1, 2Δ/ε)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the data and of every pm.sample call")
    parser.add_argument("--repeat", type=int, default=3, help="interleaved timed rounds (medians reported)")
    parser.add_argument("--models", nargs="+", choices=list(MODELS), default=list(MODELS))
    parser.add_argument("--output", type=Path, default=RESULTS / "ops_tempering.json", help="JSON results file")
    args = parser.parse_args(argv)

    warnings.filterwarnings("ignore", message=".*could not link to a BLAS.*")  # said once at import
    warnings.filterwarnings("ignore", message=".*The effect of Potentials on other parameters.*")
    # PyMC's Metropolis "accept" statistic is exp(log acceptance ratio), unclipped: it
    # overflows on the first steps out of the initial point. A statistic only.
    warnings.filterwarnings("ignore", message="overflow encountered in exp", category=RuntimeWarning,
                            module="pymc.step_methods.metropolis")
    import pymc as pm
    import pytensor

    import pymc_dp as pmdp

    logging.getLogger("pymc").setLevel(logging.ERROR)  # no per-run sampler chatter
    threadpool_limits(1)
    start = time.perf_counter()

    # Build every model pair, then warm up every combination (untimed).
    cases: list[dict[str, Any]] = []
    for key in args.models:
        label, var, build = MODELS[key]
        model, sens = build(args.n, np.random.default_rng(args.seed))
        temperature = sens.temperature(args.epsilon)
        pair = {"untempered": model, "tempered": pmdp.temper(model, temperature)}
        for sampler in SAMPLERS:
            cases.append({"key": key, "label": label, "var": var, "sampler": sampler, "delta": sens.total,
                          "temperature": temperature, "models": pair, "runs": {"untempered": [], "tempered": []}})
    for case in cases:
        for arm in ("untempered", "tempered"):
            run(case["models"][arm], case["sampler"], args, draws=WARM_DRAWS, tune=WARM_DRAWS)

    for k in range(max(1, args.repeat)):
        arms = ("untempered", "tempered") if k % 2 == 0 else ("tempered", "untempered")
        for case in cases:
            for arm in arms:
                case["runs"][arm].append(run(case["models"][arm], case["sampler"], args, args.draws, args.tune))
    elapsed_timing = time.perf_counter() - start

    rows: list[dict[str, Any]] = []
    for case in cases:
        row: dict[str, Any] = {k: case[k] for k in ("key", "label", "sampler", "delta", "temperature")}
        for arm in ("untempered", "tempered"):
            runs = case["runs"][arm]
            summary: dict[str, Any] = {
                "seconds": {m: [r[m] for r in runs] for m in TIMES},
                "median": {m: statistics.median(r[m] for r in runs) for m in TIMES},
                "posterior": runs[-1]["posterior"],
            }
            if case["sampler"] == "NUTS":
                summary["grad_evals_per_run"] = [r["grad_evals"] for r in runs]
                summary["grad_evals"] = runs[-1]["grad_evals"]
                summary["us_per_grad"] = 1e6 * summary["median"]["loop_cpu"] / summary["grad_evals"]
            row[arm] = summary
        u, t = row["untempered"], row["tempered"]
        row["ratio"] = {m: t["median"][m] / u["median"][m] for m in TIMES}
        if case["sampler"] == "NUTS":
            row["ratio"]["per_grad"] = t["us_per_grad"] / u["us_per_grad"]
        row["ok"] = row["ratio"]["whole_cpu"] <= RATIO_TARGET and row["ratio"]["loop_cpu"] <= RATIO_TARGET
        rows.append(row)

    nodes: dict[str, dict[str, dict[str, int]]] = {}
    for case in cases:
        if case["key"] not in nodes:
            nodes[case["key"]] = {arm: node_counts(m) for arm, m in case["models"].items()}

    print(
        f"OPS tempering overhead; N = {args.n:,} records, draws={args.draws}, tune={args.tune}, "
        f"chains={args.chains}, cores=1, seed={args.seed}, ε = {args.epsilon:g} per sample, "
        f"median of {args.repeat}; one BLAS thread; PyMC {pm.__version__}, PyTensor {pytensor.__version__}"
    )
    print()
    print(markdown_table(rows))
    print()
    print("Posterior (last run, untempered → tempered; the tempered sd should be about √T times wider):")
    for r in rows:
        u, t = r["untempered"]["posterior"], r["tempered"]["posterior"]
        print(f"  {r['label']}, {r['sampler']}: {u['var']} mean {u['mean']:.4f} → {t['mean']:.4f}, "
              f"sd {u['sd']:.4f} → {t['sd']:.4f} (×{t['sd'] / u['sd']:.2f}; √T = {np.sqrt(r['temperature']):.2f})")
    print("Apply nodes of the compiled functions, untempered → tempered:")
    for key, counts in nodes.items():
        print(f"  {MODELS[key][0]}: " + ", ".join(
            f"{fn} {counts['untempered'][fn]} → {counts['tempered'][fn]}" for fn in counts["untempered"]))
    for r in rows:
        print(f"{r['label']}, {r['sampler']}: tempered / untempered CPU time = {r['ratio']['whole_cpu']:.2f} "
              f"(whole call), {r['ratio']['loop_cpu']:.2f} (sampling loop)  "
              f"(target ≤ {RATIO_TARGET:g}: {'ok' if r['ok'] else 'MISSED'})")

    total = time.perf_counter() - start
    print(f"total: {total:.0f} s")
    result = {
        "benchmark": "ops_tempering",
        **environment(),
        "argv": sys.argv[1:] if argv is None else list(argv),
        "config": {"n": args.n, "draws": args.draws, "tune": args.tune, "chains": args.chains, "cores": 1,
                   "epsilon": args.epsilon, "seed": args.seed, "repeat": args.repeat, "warmup_draws": WARM_DRAWS,
                   "warmup_tune": WARM_DRAWS, "models": args.models, "samplers": list(SAMPLERS),
                   "truncation": {"p": list(TRUNCATION["p"])}, "poisson_bounds": POISSON_BOUNDS},
        "target": {"ratio_max": RATIO_TARGET, "applies_to": ["whole_cpu", "loop_cpu"]},
        "times": {"whole_cpu": "process CPU s of the whole call", "whole_wall": "wall s of the whole call",
                  "loop_cpu": "process CPU s from the first to the last draw",
                  "loop_wall": "wall s from the first to the last draw",
                  "loop_wall_pymc": "PyMC's own sampling_time (wall s of the draw loop)"},
        "rows": rows,
        "node_counts": nodes,
        "seconds": {"timing": round(elapsed_timing, 1), "total": round(total, 1)},
        "ok": all(r["ok"] for r in rows),
    }
    write_results(args.output, result)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
