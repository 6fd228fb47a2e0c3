"""The privacy flag on twelve PyMC example-gallery models, as written: route, accuracy and time.

For each model of ``tests/gallery_models.py`` (written as the gallery writes them) and its
declarations, ``pmdp.sample(epsilon=ε, **declarations)`` with ``method="auto"`` at ε = 1 and
ε = 100, beside plain ``pm.sample`` on the raw records. Accuracy: for every scalar coordinate
of every free variable whose shape does not depend on the records, the distance between the
released mean and plain PyMC's posterior mean in plain posterior standard deviations,
root-mean-square over three releases (seeds 1–3: one release is one noisy draw of the
error); the table shows the largest coordinate. Every route runs with its defaults (OPS:
as many exact posterior samples as ε buys, at least one per chain).

    python benchmarks/gallery.py            # writes benchmarks/results/gallery.json and .md
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

SAMPLE = dict(draws=500, tune=500, chains=2, cores=1, progressbar=False, compute_convergence_checks=False)


def scalar_means(trace, names):
    from pymc_dp import _compat

    post = _compat.get_group(trace, "posterior")
    out = {}
    for name in names:
        if name not in post:
            continue
        values = np.asarray(post[name].values)
        flat = values.reshape(values.shape[0] * values.shape[1], -1)
        for i in range(flat.shape[1]):
            out[f"{name}[{i}]"] = flat[:, i]
    return out


def shared_parameters(model):
    """Free variables whose shape does not depend on the records (per-record latents excluded)."""
    from pymc_dp.routes.saa import _record_count

    n = _record_count(model)
    return [rv.name for rv in model.free_RVs if n not in tuple(int(s) for s in rv.shape.eval())]


def run_model(name, epsilons=(1.0, 100.0), seeds=(1, 2, 3)):
    import pymc as pm

    import gallery_models as G
    import pymc_dp as pmdp

    row = {"model": name}
    model = G.MODELS[name]()
    names = shared_parameters(model)
    t0 = time.perf_counter()
    with model:
        plain = pm.sample(random_seed=seeds[0], **SAMPLE)
    row["plain_seconds"] = time.perf_counter() - t0
    reference = scalar_means(plain, names)
    for eps in epsilons:
        declared = dict(G.DECLARATIONS[name])
        distances, seconds = [], []
        try:
            for seed in seeds:
                t0 = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    released = pmdp.sample(epsilon=eps, model=G.MODELS[name](), random_seed=seed, **SAMPLE, **declared)
                seconds.append(time.perf_counter() - t0)
                private = scalar_means(released, names)
                distances.append({k: (float(private[k].mean()) - float(v.mean())) / float(v.std())
                                  for k, v in reference.items()})
        except Exception as err:  # noqa: BLE001 - a benchmark records the failure
            row[f"eps{eps:g}"] = {"outcome": f"{type(err).__name__}: {str(err)[:200]}"}
            continue
        rms = {k: float(np.sqrt(np.mean([d[k] ** 2 for d in distances]))) for k in reference}
        entry = pmdp.ledger(released).entries[0]
        row[f"eps{eps:g}"] = {
            "outcome": "ran",
            "route": entry.details.get("route"),
            "epsilon_spent": pmdp.ledger(released).total().epsilon,
            "temperature": entry.details.get("temperature"),
            "released_draws": entry.count if entry.details.get("route") == "ops" else None,
            "max_distance_sd": max(rms.values()),
            "distance_sd": rms,
            "seconds": float(np.median(seconds)),
        }
    return row


def table(rows):
    lines = [
        "| model | route | ε = 1: max distance (sd) | ε = 100: max distance (sd) | ε = 100: T, draws | time ε = 100 / plain |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        a, b = r.get("eps1", {}), r.get("eps100", {})
        route = b.get("route") or a.get("route") or "refused"
        fmt = lambda x: f"{x['max_distance_sd']:.2f}" if x.get("outcome") == "ran" else x.get("outcome", "-")[:40]  # noqa: E731
        ratio = f"{b['seconds'] / r['plain_seconds']:.1f}×" if b.get("outcome") == "ran" else "-"
        shape = f"{b['temperature']:.3g}, {b['released_draws']}" if b.get("released_draws") else "-"
        lines.append(f"| {r['model']} | {route} | {fmt(a)} | {fmt(b)} | {shape} | {ratio} |")
    return "\n".join(lines)


def main():
    import gallery_models as G

    rows = []
    for name in G.MODELS:
        rows.append(run_model(name))
        print(name, {k: (v.get("route"), round(v.get("max_distance_sd", float("nan")), 2)) for k, v in rows[-1].items()
                     if k.startswith("eps")}, flush=True)
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    (out / "gallery.json").write_text(json.dumps(rows, indent=1, default=float))
    (out / "gallery.md").write_text(table(rows) + "\n")
    print(table(rows))


if __name__ == "__main__":
    main()
