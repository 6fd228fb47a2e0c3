"""[WM10] Fig. 3: (a) information against total ε whatever the schedule; (b) a few public records go a long way.

**(a) Schedules on CM2.** The noisy-gradient heuristic's one real tuning knob is how it splits ε:
many cheap, noisy iterations or a few accurate ones. Each schedule here fixes the ε of one
measurement (0.01, 0.025, 0.05, 0.1) and runs T of them; inference is then run on *prefixes*
of the run (:meth:`pymc_dp.NoisyGradientRun.prefix`: the first t measurements, which cost
t × ε per measurement — a post-processing, nothing new is spent), so each schedule traces a
path of error against the total ε consumed. [WM10]'s finding: the paths of inference lie
on one curve (information depends on the total ε, not on how it was spent) while the
heuristic's own last iterate depends on the schedule. Objective perturbation at the same
total ε marks where the classic one-shot mechanism stands ([WM10]'s 'X' was Chaudhuri &
Monteleoni's output).

**(b) Public records on SYNTH** (ε = 0.1 and 1, 10 iterations): k ∈ {0, 5, 10, 25, 50, 100}
public records drawn from the same distribution join the model as ordinary observed data
(``logistic_from_gradients(public=...)``); beside it, the same prior given only the k public
records, to show the private measurements still carry information the public ones lack.

Errors are on a fresh test set of the data set's size; inference is read as in
``wm10_logistic.py`` ("predictive": the posterior predictive classifier; "inference":
[WM10]'s expected error of a posterior draw). Data, learning rates and NUTS settings are
those of ``wm10_logistic.py``.

    python benchmarks/wm10_fig3.py                  # both panels, 5 runs each (≈ 30 min on one core)
    python benchmarks/wm10_fig3.py --panels b --runs 2   # a quick look
    python benchmarks/wm10_fig3.py --table-only     # tables and figure from the stored runs

Writes ``results/wm10_fig3.{json,md,png}``; every inference is appended to
``results/wm10_fig3_runs.jsonl`` as it finishes, so an interrupted run resumes.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _runs import StoredRuns  # noqa: E402
from wm10_logistic import SAMPLING, SYNTH_WEIGHTS, _error, _predictive_error, dataset  # noqa: E402

#: (ε per measurement, iterations T, prefixes t at which inference runs): totals on a common grid.
SCHEDULES = {
    0.01: (20, (5, 10, 20)),
    0.025: (20, (2, 4, 8, 20)),
    0.05: (10, (1, 2, 4, 10)),
    0.1: (10, (1, 2, 5, 10)),
}
#: The total ε of the objective-perturbation reference points in panel (a).
REFERENCE_EPSILONS = (0.05, 0.1, 0.2, 0.5, 1.0)
PUBLIC_COUNTS = (0, 5, 10, 25, 50, 100)
PUBLIC_EPSILONS, PUBLIC_ITERATIONS = (0.1, 1.0), 10
PRIOR_SIGMA = 10.0


def _sample(model, seed: int) -> np.ndarray:
    import pymc as pm

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with model:
            trace = pm.sample(random_seed=seed, **SAMPLING)
    return trace.posterior["w"].values.reshape(-1, trace.posterior["w"].shape[-1])[::4]


def _readings(X, y, draws) -> dict:

    return {"predictive": _predictive_error(X, y, draws),
            "inference": float(np.mean([_error(X, y, w) for w in draws]))}


def schedule_run(eps_step: float, seed: int) -> dict:
    """One CM2 data set, one run of the schedule, inference on each prefix; errors per prefix."""
    import pymc_dp as pmdp

    data = dataset("CM2", 1000 + seed)
    T, prefixes = SCHEDULES[eps_step]
    run = pmdp.noisy_gradient_logistic(data["X"], data["y"], epsilon=eps_step * T, iterations=T,
                                       feature_l1_bound=data["l1"], learning_rate=data["learning_rate"],
                                       ledger=pmdp.PrivacyLedger(), rng=seed)
    out = {}
    for t in prefixes:
        head = run.prefix(t)
        draws = _sample(pmdp.logistic_from_gradients(head, data["design"], prior_sigma=PRIOR_SIGMA), seed)
        out[str(t)] = {"total_epsilon": head.epsilon, "heuristic": _error(data["X_test"], data["y_test"], head.final_weights),
                       **_readings(data["X_test"], data["y_test"], draws)}
    return out


def reference_run(seed: int) -> dict:
    """Objective perturbation and the non-private optimum on the same CM2 data set."""
    import pymc_dp as pmdp
    from pymc_dp.mechanisms.logistic_regression import _fit_regularised, _scaled

    data = dataset("CM2", 1000 + seed)
    out = {}
    for eps in REFERENCE_EPSILONS:
        w = pmdp.objective_perturbation_logistic(data["X"], data["y"], epsilon=eps, feature_l2_bound=data["l2"],
                                                 regularisation=0.01, ledger=pmdp.PrivacyLedger(), rng=seed).weights
        out[f"{eps:g}"] = _error(data["X_test"], data["y_test"], w)
    Xs, s = _scaled(data["X"], data["y"], data["l2"])
    out["non-private"] = _error(data["X_test"], data["y_test"], _fit_regularised(Xs, s, 1e-6))
    return out


def public_run(eps: float, k: int, seed: int) -> dict:
    """SYNTH at ε with k public records: inference from both, and from the public records alone."""
    import pymc as pm

    import pymc_dp as pmdp

    data = dataset("SYNTH", 1000 + seed)
    rng = np.random.default_rng(5000 + seed)
    X_pub = rng.uniform(-0.5, 0.5, (k, data["X"].shape[1]))
    y_pub = rng.binomial(1, 1 / (1 + np.exp(-X_pub @ SYNTH_WEIGHTS)))
    run = pmdp.noisy_gradient_logistic(data["X"], data["y"], epsilon=eps, iterations=PUBLIC_ITERATIONS,
                                       feature_l1_bound=data["l1"], learning_rate=data["learning_rate"],
                                       ledger=pmdp.PrivacyLedger(), rng=seed)
    model = pmdp.logistic_from_gradients(run, data["design"], prior_sigma=PRIOR_SIGMA,
                                         public=(X_pub, y_pub) if k else None)
    out = {"with measurements": _readings(data["X_test"], data["y_test"], _sample(model, seed)),
           "heuristic": _error(data["X_test"], data["y_test"], run.final_weights)}
    with pm.Model() as alone:
        w = pm.Normal("w", 0.0, PRIOR_SIGMA, shape=data["X"].shape[1])
        if k:
            pm.Bernoulli("public", logit_p=pm.math.dot(X_pub, w), observed=y_pub)
    out["public only"] = _readings(data["X_test"], data["y_test"], _sample(alone, seed))
    return out


def _stats(values) -> tuple[float, float]:
    values = 100 * np.asarray(values, dtype=float)
    return float(values.mean()), float(values.std())


def tables(done: dict) -> tuple[dict, list[str]]:
    """Mean ± s.d. (per cent) over the stored runs, per point of each panel."""
    summary: dict = {"a": [], "reference": {}, "b": []}
    lines = ["### (a) CM2: error against total ε, per schedule (ε per measurement)", "",
             "| ε/measurement | t | total ε | runs | heuristic | inference | predictive |", "|---:|---:|---:|---:|---:|---:|---:|"]
    for eps_step, (_, prefixes) in SCHEDULES.items():
        runs = [v for k, v in done.items() if k.startswith(f"a {eps_step:g} ")]
        for t in prefixes:
            if not runs:
                continue
            point = {"epsilon_per_measurement": eps_step, "t": t, "total_epsilon": runs[0][str(t)]["total_epsilon"],
                     "runs": len(runs)}
            for reading in ("heuristic", "inference", "predictive"):
                point[reading] = _stats([r[str(t)][reading] for r in runs])
            summary["a"].append(point)
            lines.append(f"| {eps_step:g} | {t} | {point['total_epsilon']:.3g} | {len(runs)} | "
                         + " | ".join(f"{point[m][0]:.1f} ± {point[m][1]:.1f}" for m in ("heuristic", "inference", "predictive")) + " |")
    references = [v for k, v in done.items() if k.startswith("reference ")]
    if references:
        lines += ["", "| total ε | objective perturbation (runs: %d) |" % len(references), "|---:|---:|"]
        for key in [f"{e:g}" for e in REFERENCE_EPSILONS] + ["non-private"]:
            summary["reference"][key] = _stats([r[key] for r in references])
            lines.append(f"| {key} | {summary['reference'][key][0]:.1f} ± {summary['reference'][key][1]:.1f} |")
    lines += ["", "### (b) SYNTH: error against public records", "",
              "| ε | public records | runs | measurements + public (predictive) | measurements + public (inference) | "
              "public only (predictive) | heuristic |", "|---:|---:|---:|---:|---:|---:|---:|"]
    for eps, k in [(e, k) for e in PUBLIC_EPSILONS for k in PUBLIC_COUNTS]:
        runs = [v for key, v in done.items() if key.startswith(f"b {eps:g} {k} ")]
        if not runs:
            continue
        point = {"epsilon": eps, "public": k, "runs": len(runs),
                 "predictive": _stats([r["with measurements"]["predictive"] for r in runs]),
                 "inference": _stats([r["with measurements"]["inference"] for r in runs]),
                 "public only": _stats([r["public only"]["predictive"] for r in runs]),
                 "heuristic": _stats([r["heuristic"] for r in runs])}
        summary["b"].append(point)
        lines.append(f"| {eps:g} | {k} | {len(runs)} | " + " | ".join(
            f"{point[m][0]:.1f} ± {point[m][1]:.1f}" for m in ("predictive", "inference", "public only", "heuristic")) + " |")
    return summary, lines


def figure(summary: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    colours = plt.cm.viridis(np.linspace(0, 0.85, len(SCHEDULES)))
    for colour, eps_step in zip(colours, SCHEDULES):
        points = [p for p in summary["a"] if p["epsilon_per_measurement"] == eps_step]
        if not points:
            continue
        x = [p["total_epsilon"] for p in points]
        left.plot(x, [p["predictive"][0] for p in points], "o-", color=colour, label=f"inference, ε/step {eps_step:g}")
        left.plot(x, [p["heuristic"][0] for p in points], "s--", color=colour, alpha=0.6, markersize=4)
    reference = summary["reference"]
    if reference:
        eps = [e for e in REFERENCE_EPSILONS if f"{e:g}" in reference]
        left.plot(eps, [reference[f"{e:g}"][0] for e in eps], "kx", markersize=9, label="objective perturbation")
        left.axhline(reference["non-private"][0], color="grey", lw=1, label="non-private")
    left.plot([], [], "s--", color="grey", alpha=0.6, markersize=4, label="heuristic's iterate (dashed)")
    left.set_xscale("log")
    left.set_xlabel("total ε consumed")
    left.set_ylabel("test error (%)")
    left.set_title("(a) CM2: schedules against total ε")
    left.legend(fontsize=7)
    for shade, eps in zip(("C0", "C2"), PUBLIC_EPSILONS):
        points = [p for p in summary["b"] if p["epsilon"] == eps]
        if not points:
            continue
        k = np.array([p["public"] for p in points])
        x = np.where(k == 0, 1, k)  # k = 0 drawn at 1 on the log axis
        mean = np.array([p["predictive"][0] for p in points])
        sd = np.array([p["predictive"][1] for p in points])
        right.plot(x, mean, "o-", color=shade, label=f"measurements (ε = {eps:g}) + public")
        right.fill_between(x, mean - sd, mean + sd, color=shade, alpha=0.15)
        right.axhline(points[0]["heuristic"][0], color=shade, ls="--", lw=1, label=f"heuristic (ε = {eps:g})")
    alone = {p["public"]: p["public only"][0] for p in summary["b"]}
    if alone:
        k = np.array(sorted(alone))
        right.plot(np.where(k == 0, 1, k), [alone[v] for v in k], "^:", color="k", label="public records only")
    right.set_xscale("log")
    right.set_xticks([max(k, 1) for k in PUBLIC_COUNTS], [str(k) for k in PUBLIC_COUNTS])
    right.set_xlabel("public records added (0 drawn at 1)")
    right.set_ylabel("test error (%)")
    right.set_title("(b) SYNTH: adding public records")
    right.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--panels", nargs="+", default=["a", "b"], choices=["a", "b"])
    parser.add_argument("--table-only", action="store_true", help="only rewrite tables and figure from the stored runs")
    args = parser.parse_args(argv)
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    runs = StoredRuns(out / "wm10_fig3_runs.jsonl")
    jobs = []
    for seed in [] if args.table_only else range(args.runs):
        if "a" in args.panels:
            jobs += [(f"reference {seed}", reference_run, (seed,))]
            jobs += [(f"a {eps:g} {seed}", schedule_run, (eps, seed)) for eps in SCHEDULES]
        if "b" in args.panels:
            jobs += [(f"b {eps:g} {k} {seed}", public_run, (eps, k, seed)) for eps in PUBLIC_EPSILONS for k in PUBLIC_COUNTS]
    for key, job, job_args in jobs:
        runs.get(key, lambda: job(*job_args))  # noqa: B023 - called at once
    done = runs.done
    summary, lines = tables(done)
    (out / "wm10_fig3.json").write_text(json.dumps(summary, indent=1))
    (out / "wm10_fig3.md").write_text("\n".join(lines) + "\n")
    figure(summary, out / "wm10_fig3.png")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
