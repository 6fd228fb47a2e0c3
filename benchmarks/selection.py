"""Nothing declared against a declared range: what choosing the ranges privately costs.

For each model, N and ε, over a few data sets: plain PyMC on the raw records (the reference), then
``pmdp.sample(epsilon=ε)`` twice — with the ranges declared as an informed user would (``hand``) and with
nothing declared (``chosen``: the ranges chosen privately on a share of the same ε,
:mod:`pymc_dp.routes.selection`). Reported: the root mean square, over data sets and parameters, of the
distance between each private posterior mean and plain PyMC's, in plain posterior s.d.; their ratio
(chosen / hand; the issue's bar is 1.5); the ledger's total (must be ε) and the share the choice took.

    python benchmarks/selection.py                 # 3 data sets a cell: results/selection.{json,md}
    python benchmarks/selection.py --datasets 5
    python benchmarks/selection.py --gallery       # the twelve gallery models: results/selection_gallery.{json,md}

``--gallery`` runs the twelve models of ``tests/gallery_models.py`` as written, at their own sizes, at ε = 1 and 10:
hand-declared both ways the docs offer (``DECLARATIONS``: a log-likelihood clip; ``BOUNDS_DECLARATIONS``: data
ranges), the better of the two kept as "hand", against nothing declared; the distance is root-mean-square over the
releases (seeds) and the coordinates of every parameter whose shape does not depend on the records, in plain
posterior s.d.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Callable

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

SIZES = (1_000, 10_000)
EPSILONS = (1.0, 10.0)
SAMPLING = dict(draws=500, tune=500, chains=2, progressbar=False, nuts_sampler="pymc")


def _normal(rng: np.random.Generator, n: int) -> tuple[Callable, dict, list[str]]:
    y = rng.normal(50.0, 10.0, n)

    def build():
        import pymc as pm

        with pm.Model() as m:
            mu, sigma = pm.Normal("mu", 0.0, 100.0), pm.HalfNormal("sigma", 50.0)
            pm.Normal("y", mu, sigma, observed=y)
        return m

    return build, {"y": {"x": (0.0, 100.0)}}, ["mu", "sigma"]


def _counts(rng: np.random.Generator, n: int) -> tuple[Callable, dict, list[str]]:
    c = rng.poisson(3.0, n)

    def build():
        import pymc as pm

        with pm.Model() as m:
            pm.Poisson("c", pm.Gamma("lam", 2.0, 1.0), observed=c)
        return m

    return build, {"c": {"upper": 15}}, ["lam"]


def _linear(rng: np.random.Generator, n: int) -> tuple[Callable, dict, list[str]]:
    x = rng.normal(0.0, 1.0, n)
    y = 1.0 + 2.0 * x + rng.normal(0.0, 1.0, n)

    def build():
        import pymc as pm

        with pm.Model() as m:
            a, b = pm.Normal("a", 0.0, 10.0), pm.Normal("b", 0.0, 10.0)
            pm.Normal("y", a + b * x, pm.HalfNormal("sigma", 5.0), observed=y)
        return m

    return build, {"y": {"x": (-4.0, 4.0), "y": (-10.0, 12.0)}}, ["a", "b", "sigma"]


def _logistic(rng: np.random.Generator, n: int) -> tuple[Callable, dict, list[str]]:
    x = rng.normal(0.0, 1.0, n)
    y = rng.random(n) < 1.0 / (1.0 + np.exp(-(0.5 + 1.0 * x)))

    def build():
        import pymc as pm

        with pm.Model() as m:
            a, b = pm.Normal("a", 0.0, 2.5), pm.Normal("b", 0.0, 2.5)
            pm.Bernoulli("y", logit_p=a + b * x, observed=y.astype(int))
        return m

    return build, {"y": {"x": (-4.0, 4.0)}}, ["a", "b"]


def _poisson_glm(rng: np.random.Generator, n: int) -> tuple[Callable, dict, list[str]]:
    x = rng.normal(0.0, 1.0, n)
    y = rng.poisson(np.exp(0.5 + 0.3 * x))

    def build():
        import pymc as pm

        with pm.Model() as m:
            a, b = pm.Normal("a", 0.0, 2.0), pm.Normal("b", 0.0, 1.0)
            pm.Poisson("y", pm.math.exp(a + b * x), observed=y)
        return m

    return build, {"y": {"x": (-4.0, 4.0), "y": (0.0, 20.0)}}, ["a", "b"]


MODELS = {"normal": _normal, "poisson counts": _counts, "linear regression": _linear, "logistic": _logistic,
          "poisson regression": _poisson_glm}


def _means(trace: Any, names: list[str]) -> tuple[np.ndarray, np.ndarray]:
    post = trace.posterior
    return (np.array([float(post[v].mean()) for v in names]), np.array([float(post[v].std()) for v in names]))


def run_cell(model: str, n: int, epsilon: float, datasets: int) -> dict[str, Any]:
    import pymc as pm

    import pymc_dp as pmdp

    hand_d, chosen_d, shares, totals, times = [], [], [], [], []
    for i in range(datasets):
        build, bounds, names = MODELS[model](np.random.default_rng([n, i]), n)
        plain_mean, plain_sd = _means(pm.sample(model=build(), random_seed=i, **SAMPLING), names)
        hand = pmdp.sample(model=build(), epsilon=epsilon, bounds=bounds, noise_rng=i, random_seed=i, **SAMPLING)
        t = time.perf_counter()
        chosen = pmdp.sample(model=build(), epsilon=epsilon, noise_rng=i, random_seed=i, **SAMPLING)
        times.append(time.perf_counter() - t)
        hand_d.append((_means(hand, names)[0] - plain_mean) / plain_sd)
        chosen_d.append((_means(chosen, names)[0] - plain_mean) / plain_sd)
        ledger = pmdp.ledger(chosen)
        shares.append(sum(e.epsilon for e in ledger.entries if "selection" in e.details) / epsilon)
        totals.append(ledger.total().epsilon)
    rms = lambda d: float(np.sqrt(np.mean(np.square(d))))  # noqa: E731
    return {"model": model, "N": n, "epsilon": epsilon, "datasets": datasets, "hand": rms(hand_d),
            "chosen": rms(chosen_d), "ratio": rms(chosen_d) / max(rms(hand_d), 1e-12),
            "share": float(np.mean(shares)), "total epsilon": float(np.max(totals)),
            "seconds (chosen)": float(np.mean(times))}


def _gallery_distance(release: Callable[[int], Any], reference: dict, names: list[str], seeds: int) -> float:
    from gallery import scalar_means

    squares = []
    for seed in range(1, seeds + 1):
        private = scalar_means(release(seed), names)
        squares += [((float(private[k].mean()) - float(v.mean())) / float(v.std())) ** 2 for k, v in reference.items()]
    return float(np.sqrt(np.mean(squares)))


def run_gallery(name: str, seeds: int) -> list[dict[str, Any]]:
    """One gallery model at ε = 1 and 10: hand-declared (the better of its two declarations) against nothing."""
    import gallery_models as G
    import pymc as pm
    from gallery import SAMPLE as GALLERY_SAMPLE, scalar_means, shared_parameters

    import pymc_dp as pmdp

    SAMPLE = {**GALLERY_SAMPLE, "nuts_sampler": "pymc"}  # nutpie where installed: its compile would dominate
    names = shared_parameters(G.MODELS[name]())
    reference = scalar_means(pm.sample(model=G.MODELS[name](), random_seed=0, **SAMPLE), names)
    rows = []
    for eps in EPSILONS:
        ways = {"loglik_clip": G.DECLARATIONS[name], "bounds": G.BOUNDS_DECLARATIONS.get(name)}
        hand = {}
        for way, declared in ways.items():
            if declared is None:
                continue
            try:
                hand[way] = _gallery_distance(lambda s: pmdp.sample(model=G.MODELS[name](), epsilon=eps, random_seed=s,
                                                                    **SAMPLE, **declared), reference, names, seeds)
            except ValueError as err:
                hand[way] = f"refused: {str(err)[:80]}"
        chosen_trace: list = []

        def chosen(seed: int) -> Any:
            chosen_trace[:] = [pmdp.sample(model=G.MODELS[name](), epsilon=eps, random_seed=seed, **SAMPLE)]
            return chosen_trace[0]

        t = time.perf_counter()
        distance = _gallery_distance(chosen, reference, names, seeds)
        seconds = (time.perf_counter() - t) / seeds
        ledger = pmdp.ledger(chosen_trace[0])
        numbers = [d for d in hand.values() if isinstance(d, float)]
        best = min(numbers) if numbers else float("nan")
        rows.append({"model": name, "epsilon": eps, "seeds": seeds, "hand": hand, "best hand": best,
                     "chosen": distance, "ratio": distance / best if numbers else None,
                     "route": next((e.details.get("route") for e in ledger.entries if e.details.get("route")), None),
                     "chosen for": sorted({e.details["chosen for"] for e in ledger.entries if "chosen for" in
                                           e.details}),
                     "share": sum(e.epsilon for e in ledger.entries if "selection" in e.details) / eps,
                     "total epsilon": ledger.total().epsilon, "seconds (chosen)": seconds})
    return rows


def _write_gallery(rows: list[dict[str, Any]], names: list[str] | None) -> None:
    """results/selection_gallery.{json,md}; a subset of the models is merged into the rows already there."""
    out = HERE / "results"
    path = out / "selection_gallery.json"
    if names:
        kept = [r for r in (json.loads(path.read_text()) if path.exists() else []) if r["model"] not in names]
        rows = kept + rows
    path.write_text(json.dumps(rows, indent=1))
    lines = ["| model | ε | route (nothing declared) | chosen | best hand (plain s.d.) | nothing declared | ratio | "
             "share of ε | ledger total |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "failed" in r:
            lines.append(f"| {r['model']} | {r['epsilon']:g} | failed: {r['failed']} | | | | | | |")
            continue
        ratio = f"{r['ratio']:.2f}" if r["ratio"] is not None else "-"
        lines.append(f"| {r['model']} | {r['epsilon']:g} | {r['route']} | {', '.join(r['chosen for']) or '-'} | "
                     f"{r['best hand']:.2f} | {r['chosen']:.2f} | {ratio} | {r['share']:.2f} | "
                     f"{r['total epsilon']:.3g} |")
    (out / "selection_gallery.md").write_text("\n".join(lines) + "\n")


def gallery_main(seeds: int, names: list[str] | None = None) -> None:
    import gallery_models as G

    rows: list[dict[str, Any]] = []
    for name in names or G.MODELS:
        try:
            new = run_gallery(name, seeds)
        except Exception as err:  # noqa: BLE001 - a benchmark records the failure and goes on
            new = [{"model": name, "epsilon": eps, "failed": f"{type(err).__name__}: {str(err)[:120]}"}
                   for eps in EPSILONS]
        for row in new:
            rows.append(row)
            print(json.dumps(row), flush=True)
        _write_gallery(rows, [r["model"] for r in rows] if names else None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=3)
    parser.add_argument("--models", nargs="*", default=list(MODELS))
    parser.add_argument("--gallery", action="store_true", help="the twelve gallery models instead")
    parser.add_argument("--seeds", type=int, default=4, help="releases per cell of --gallery")
    parser.add_argument("--gallery-models", nargs="*", default=None, help="some of the gallery's models")
    args = parser.parse_args()
    logging.getLogger("pymc").setLevel(logging.ERROR)
    warnings.simplefilter("ignore")
    if args.gallery:
        sys.path.insert(0, str(HERE.parent / "tests"))
        gallery_main(args.seeds, args.gallery_models)
        return
    rows = []
    for model in args.models:
        for n in SIZES:
            for eps in EPSILONS:
                row = run_cell(model, n, eps, args.datasets)
                rows.append(row)
                print(json.dumps(row), flush=True)
    out = HERE / "results"
    (out / "selection.json").write_text(json.dumps(rows, indent=1))
    lines = ["| model | N | ε | hand (plain s.d.) | chosen (plain s.d.) | chosen / hand | share of ε | ledger total |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['N']:,} | {r['epsilon']:g} | {r['hand']:.2f} | {r['chosen']:.2f} | "
                     f"{r['ratio']:.2f} | {r['share']:.2f} | {r['total epsilon']:.3g} |")
    (out / "selection.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
