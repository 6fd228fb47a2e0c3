"""Private AIS beside private Gibbs at equal total ε ([FGWC16] supplement).

Two models with known posteriors:

* **Beta–Bernoulli**: 500 records, p = 0.3, p truncated to [0.01, 0.99] (Δ = log 99 = 4.6);
* **Normal mean**: 100 records of N(1.2, 1) in [−5, 5], μ ~ N(0, 2²) truncated to [−4, 4], σ = 1
  (Δ = 10 × 8 / 2 = 40).

For each total ε (composed at δ = 10⁻⁶ by the tightest accountant, as both routes do by
default) and each of ``--runs`` seeds:

* ``method="ais"``: 200 particles, 20 geometric stages, 2 Barker steps each, a quarter of ε
  on the Laplace-noised weights; the estimate is the weighted mean;
* ``method="gibbs"``: one chain of 100 tuning + 200 kept draws at the temperature that
  spends ε; the estimate is the chain's mean.

The error is ``|estimate − true posterior mean|`` in units of the true posterior s.d.
Writes ``results/ais_vs_gibbs.{json,md,png}`` (runs appended to ``ais_vs_gibbs_runs.jsonl``).

    python benchmarks/ais_vs_gibbs.py            # 10 runs per point (≈ 10 min on one core)
    python benchmarks/ais_vs_gibbs.py --runs 2   # a quick look
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _runs import StoredRuns  # noqa: E402

EPSILONS = (1.0, 10.0, 100.0, 1000.0, 10000.0)
PARTICLES, STAGES, DRAWS, TUNE = 200, 20, 200, 100


def _model(name: str):
    import pymc as pm

    if name == "beta-bernoulli":
        y = (np.random.default_rng(0).uniform(size=500) < 0.3).astype(int)
        with pm.Model() as model:
            p = pm.Beta("p", 1, 1)
            pm.Bernoulli("y", p=p, observed=y)
        k, n = int(y.sum()), len(y)
        a, b = 1 + k, 1 + n - k
        truth = (a / (a + b), math.sqrt(a * b / ((a + b) ** 2 * (a + b + 1))))
        return model, "p", {"truncate": {"p": (0.01, 0.99)}}, truth
    x = np.clip(np.random.default_rng(1).normal(1.2, 1.0, 100), -5, 5)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 2.0)
        pm.Normal("x", mu, 1.0, observed=x)
    s2 = 1.0 / (1 / 4 + len(x))
    return model, "mu", {"truncate": {"mu": (-4, 4)}, "bounds": {"x": {"x": (-5, 5)}}}, (s2 * x.sum(), math.sqrt(s2))


def run_one(model_name: str, method: str, epsilon: float, seed: int) -> dict:
    import pymc_dp as pmdp

    model, var, declared, (mean, sd) = _model(model_name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if method == "ais":
            idata = pmdp.sample(PARTICLES, method="ais", epsilon=epsilon, stages=STAGES, model=model, random_seed=seed,
                                progressbar=False, noise_rng=seed, **declared)
            x = idata.posterior[var].values.ravel()
            w = idata.sample_stats["weight"].values.ravel()
            estimate = float(np.average(x, weights=w))
            beta = pmdp.ledger(idata).entries[-2].details["inverse_temperature"]
        else:
            idata = pmdp.sample(DRAWS, method="gibbs", epsilon=epsilon, tune=TUNE, chains=1, model=model,
                                random_seed=seed, progressbar=False, compute_convergence_checks=False, **declared)
            estimate = float(idata.posterior[var].values.mean())
            beta = 1.0 / pmdp.ledger(idata).entries[0].details["temperature"]
    spent = pmdp.ledger(idata).total("best", delta=1e-6).epsilon
    return {"model": model_name, "method": method, "epsilon": epsilon, "seed": seed,
            "error_sd": abs(estimate - mean) / sd, "final_beta": beta, "spent": spent}


def summarize(rows: list[dict]) -> list[dict]:
    out = []
    for model in ("beta-bernoulli", "normal"):
        for eps in EPSILONS:
            row = {"model": model, "epsilon": eps}
            for method in ("ais", "gibbs"):
                errs = [r["error_sd"] for r in rows if r["model"] == model and r["method"] == method
                        and r["epsilon"] == eps]
                betas = [r["final_beta"] for r in rows if r["model"] == model and r["method"] == method
                         and r["epsilon"] == eps]
                row[method] = (float(np.mean(errs)), float(np.std(errs) / max(1, math.sqrt(len(errs)))), len(errs),
                               float(np.mean(betas)) if betas else float("nan"))
            out.append(row)
    return out


def table(summary: list[dict]) -> str:
    lines = ["| model | ε | AIS error (sd) | Gibbs error (sd) | AIS final β | Gibbs β | runs | winner |",
             "|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in summary:
        (ea, sa, na, ba), (eg, sg, ng, bg) = r["ais"], r["gibbs"]
        if not na or not ng:
            continue
        winner = "AIS" if ea + 2 * sa < eg - 2 * sg else ("Gibbs" if eg + 2 * sg < ea - 2 * sa else "tie")
        lines.append(f"| {r['model']} | {r['epsilon']:g} | {ea:.2f} ± {sa:.2f} | {eg:.2f} ± {sg:.2f} | {ba:.3g} | "
                     f"{bg:.3g} | {min(na, ng)} | {winner} |")
    return "\n".join(lines)


def plot(summary: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6), sharey=True)
    for ax, model in zip(axes, ("beta-bernoulli", "normal")):
        rows = [r for r in summary if r["model"] == model and r["ais"][2] and r["gibbs"][2]]
        eps = [r["epsilon"] for r in rows]
        for method, style in (("ais", "o-"), ("gibbs", "s--")):
            m = np.array([r[method][0] for r in rows])
            s = np.array([r[method][1] for r in rows])
            ax.errorbar(eps, m, yerr=2 * s, fmt=style, capsize=3, label={"ais": "private AIS", "gibbs": "private Gibbs"}[method])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(model)
        ax.set_xlabel("total ε (δ = 1e-6)")
    axes[0].set_ylabel("|estimate − posterior mean| / posterior sd")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--table-only", action="store_true")
    args = parser.parse_args(argv)
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    store = StoredRuns(out / "ais_vs_gibbs_runs.jsonl")
    if not args.table_only:
        for model in ("beta-bernoulli", "normal"):
            for eps in EPSILONS:
                for method in ("ais", "gibbs"):
                    for seed in range(args.runs):
                        store.get(f"{model}/{method}/{eps:g}/{seed}",
                                  lambda: run_one(model, method, eps, seed))  # noqa: B023 - called at once
    summary = summarize(list(store.done.values()))
    text = table(summary)
    (out / "ais_vs_gibbs.md").write_text(text + "\n")
    (out / "ais_vs_gibbs.json").write_text(json.dumps(summary, indent=1) + "\n")
    plot(summary, out / "ais_vs_gibbs.png")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
