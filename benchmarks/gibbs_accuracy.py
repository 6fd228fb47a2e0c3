"""How private Gibbs's accuracy grows with ε, by basic and by tight accounting.

The gallery's logistic regression (``tests/gallery_models.py``: 300 records, two
covariates and an intercept) with ``loglik_clip=(-6, 0)`` (Δ = 6 per update), one chain
of 200 tuning + 200 draws (so 400 charged draws, each updating the intercept and the
coefficients), at ε = 1, 10, 100, 1000: the temperature the route fits with
``delta=0`` (basic composition) and by default (the tightest accountant at δ = 10⁻⁶),
and the distance of the released posterior mean from plain PyMC's in plain posterior
standard deviations (root-mean-square over three runs, the largest coordinate).

    python benchmarks/gibbs_accuracy.py      # writes benchmarks/results/gibbs_accuracy.{json,md}
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE))

RUN = dict(tune=200, chains=1, cores=1, progressbar=False)
EPSILONS = (1.0, 10.0, 100.0, 1000.0)
SEEDS = (1, 2, 3)


def _t(temperature: float) -> str:
    return f"{temperature:,.0f}" if temperature >= 100 else f"{temperature:.1f}"


def main() -> None:
    import pymc as pm

    import gallery_models as G
    import pymc_dp as pmdp
    from gallery import SAMPLE, scalar_means

    names = ["intercept", "beta"]
    with G.logistic_regression():
        plain = pm.sample(random_seed=1, **SAMPLE)
    reference = scalar_means(plain, names)
    rows = []
    for eps in EPSILONS:
        row = {"epsilon": eps}
        for label, extra in (("basic", {"delta": 0.0}), ("tight", {})):
            distances, temperature, spent = [], None, None
            for seed in SEEDS:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    trace = pmdp.sample(200, method="gibbs", epsilon=eps, loglik_clip=(-6.0, 0.0),
                                        model=G.logistic_regression(), random_seed=seed, **RUN, **extra)
                ledger = pmdp.ledger(trace)
                temperature = ledger.entries[0].details["temperature"]
                spent = ledger.spent.epsilon
                ours = scalar_means(trace, names)
                distances.append({k: (ours[k].mean() - v.mean()) / v.std() for k, v in reference.items()})
            rms = {k: float(np.sqrt(np.mean([d[k] ** 2 for d in distances]))) for k in reference}
            row[label] = {"temperature": temperature, "spent": spent, "max_distance_sd": max(rms.values())}
        rows.append(row)
        print(row, flush=True)
    out = HERE / "results"
    (out / "gibbs_accuracy.json").write_text(json.dumps(rows, indent=1))
    write_table(rows)


def write_table(rows: list[dict]) -> None:
    """``results/gibbs_accuracy.md`` from the rows (``python -c`` can redo it from the JSON)."""
    lines = ["| ε | T, basic (`delta=0`) | distance | T, tight (default, δ = 10⁻⁶) | distance |",
             "|---:|---:|---:|---:|---:|"]
    for r in rows:
        b, t = r["basic"], r["tight"]
        lines.append(f"| {r['epsilon']:,g} | {_t(b['temperature'])} | {b['max_distance_sd']:.1f} | "
                     f"{_t(t['temperature'])} | {t['max_distance_sd']:.1f} |")
    (HERE / "results" / "gibbs_accuracy.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
