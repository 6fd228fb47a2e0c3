"""Useful at ε = 1? GLMs through the privacy flag beside plain PyMC, at N ∈ {10³, 10⁴, 10⁵} and ε ∈ {0.1, 1, 10}.

Each family is written the gallery's way (coords and dims, ``pm.Data`` covariates, an intercept
plus ``X @ b`` through the family's usual link) with two covariates uniform on [−1, 1]; records
are drawn from the model at a fixed truth (slopes 0.5 and −0.3, intercept 1 on the link scale:
for the logistic, 0). Each cell is one data set and one release through
``pmdp.sample(epsilon=ε, bounds=...)`` with ``method="auto"`` (the route the chooser takes is
reported), beside plain ``pm.sample`` on the same records; 2 chains × (500 + 500) each.

A hierarchy — varying intercepts ``a[county_idx]`` by 20 groups, a shared slope — is run at
N ∈ {10⁴, 10⁵} the same way (``--hierarchy-cells``), and so are a Bernoulli's and a Poisson's
(``--glm-hierarchy-cells``: the measurements route).

The gallery's regressions (``tests/gallery_models.py``, at their own N of 150–300) are run the
same way at ε ∈ {1, 10}, declared with the ranges of their covariates and outcomes
(``BOUNDS_DECLARATIONS``) instead of the log-likelihood clips of the gallery table, which take
them to OPS; and again at N ∈ {10³, 10⁴, 10⁵} records drawn as the gallery draws them, at every ε
(``--gallery-sizes``).

Reported per cell: the route; the distance — the largest, over the coefficients, of
|released mean − plain mean| in plain posterior s.d. (the issue's bar is 3); the width — the
median ratio of released to plain posterior s.d.; whether every coefficient's plain mean lies
inside the released 95 % interval (honest); and both wall times (compilation included).
Coverage over many releases is a study of its own (``tests/test_glm_measurements.py``,
``make test-study``).

    python benchmarks/utility.py                              # results/utility.{json,md}
    python benchmarks/utility.py --families poisson --sizes 10000
    python benchmarks/utility.py --stored-only
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _runs import StoredRuns, write_results  # noqa: E402

sys.path.insert(0, str(HERE.parent / "tests"))
from glm_models import glm_model as model_of  # noqa: E402
import gallery_models as G  # noqa: E402

SIZES = (1_000, 10_000, 100_000)
EPSILONS = (0.1, 1.0, 10.0)
SLOPES = np.array([0.5, -0.3])
#: Family: (the outcome's declared range, how records are drawn from the linear predictor).
FAMILIES = {
    "normal": ((-3.0, 5.0), lambda eta, rng: rng.normal(eta, 0.7)),
    "bernoulli": (None, lambda eta, rng: rng.binomial(1, 1 / (1 + np.exp(-(eta - 1.0))))),
    "binomial": (None, lambda eta, rng: rng.binomial(10, 1 / (1 + np.exp(-(eta - 1.0))))),
    "poisson": ((0.0, 20.0), lambda eta, rng: rng.poisson(np.exp(eta))),
    "negative binomial": ((0.0, 30.0), lambda eta, rng: rng.negative_binomial(3.0, 3.0 / (3.0 + np.exp(eta)))),
    "gamma": ((0.01, 20.0), lambda eta, rng: np.clip(rng.gamma(2.0, np.exp(eta) / 2.0), 0.01, None)),
}


def _compare(private, plain, names) -> dict:
    """Distance (largest, plain s.d.), median width ratio and honesty over the parameters ``names``."""
    import pymc_dp as pmdp

    posterior = pmdp._compat.get_group(private, "posterior")
    distances, widths, honest = [], [], True
    for name in names:
        got = np.asarray(posterior[name]).reshape(-1, *posterior[name].shape[2:])
        ref = np.asarray(plain.posterior[name]).reshape(-1, *plain.posterior[name].shape[2:])
        mean, sd = ref.mean(0), ref.std(0)
        lo, hi = np.quantile(got, [0.025, 0.975], axis=0)
        distances += list(np.ravel(np.abs(got.mean(0) - mean) / sd))
        widths += list(np.ravel(got.std(0) / sd))
        honest &= bool(np.all((lo < mean) & (mean < hi)))
    return {"distance": float(max(distances)), "width": float(np.median(widths)), "honest": honest}


def _beside_plain(model, declarations: dict, epsilon: float, seed: int, names) -> dict:
    """One release through the privacy flag (``method="auto"``) and plain PyMC on the same model, compared."""
    import pymc as pm

    import pymc_dp as pmdp

    settings = dict(tune=500, chains=2, cores=1, progressbar=False, compute_convergence_checks=False)
    ledger = pmdp.PrivacyLedger()
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            private = pmdp.sample(500, epsilon=epsilon, model=model, ledger=ledger, random_seed=seed, **settings,
                                  **declarations)
        except ValueError as err:
            return {"refused": str(err).splitlines()[0][:160]}
    private_time = time.perf_counter() - start
    start = time.perf_counter()
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = pm.sample(500, random_seed=seed, **settings)
    return {"route": ledger.entries[0].details.get("route", "?"), **_compare(private, plain, names),
            "time": private_time, "plain_time": time.perf_counter() - start}


def cell(family: str, n: int, epsilon: float, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (n, 2))
    outcome, draw = FAMILIES[family]
    y = draw(1.0 + x @ SLOPES, rng)
    bounds = {"x": (-1.0, 1.0), **({"y": outcome} if outcome else {})}
    return _beside_plain(model_of(family, x, y), {"bounds": {"y": bounds}}, epsilon, seed, ("a", "b"))


#: The hierarchy of the issue: varying intercepts by 20 groups and a shared slope, records by group at random.
GROUPS = 20


def hierarchy_model(n: int, seed: int = 0) -> Any:
    """``a[county_idx] + b * x`` with ``a ~ Normal(mu_a, sigma_a)`` over 20 counties, coords and ``pm.Data``."""
    import pymc as pm

    rng = np.random.default_rng(seed)
    idx, x = rng.integers(0, GROUPS, n), rng.uniform(-1, 1, n)
    y = rng.normal(rng.normal(0, 1, GROUPS)[idx] + 0.5 * x, 1.0)
    with pm.Model(coords={"county": [f"c{g}" for g in range(GROUPS)]}) as model:
        county_idx, x_data = pm.Data("county_idx", idx), pm.Data("x", x)
        a = pm.Normal("a", pm.Normal("mu_a", 0, 2), pm.HalfNormal("sigma_a", 2), dims="county")
        pm.Normal("y", a[county_idx] + pm.Normal("b", 0, 2) * x_data, pm.HalfNormal("sigma", 2), observed=y)
    return model


def hierarchy_cell(n: int, epsilon: float, seed: int = 0) -> dict:
    bounds = {"y": {"x": (-1.0, 1.0), "y": (-6.0, 6.0)}}
    return _beside_plain(hierarchy_model(n, seed), {"bounds": bounds}, epsilon, seed, ("a", "b", "sigma"))


def glm_hierarchy_model(family: str, n: int, seed: int = 0) -> Any:
    """``a[county_idx] + b * x`` through a Bernoulli's logit or a Poisson's log link, ``a`` non-centred around
    ``mu_a`` over 20 counties (coords, ``pm.Data``), x uniform on [−1, 1], true slope 0.8."""
    import pymc as pm

    rng = np.random.default_rng(seed)
    idx, x = rng.integers(0, GROUPS, n), rng.uniform(-1, 1, n)
    eta = rng.normal(0.0, 0.5, GROUPS)[idx] + 0.8 * x
    y = rng.binomial(1, 1 / (1 + np.exp(-eta))) if family == "bernoulli" else np.minimum(rng.poisson(np.exp(eta)), 15)
    with pm.Model(coords={"county": [f"c{g}" for g in range(GROUPS)]}) as model:
        county_idx, x_data = pm.Data("county_idx", idx), pm.Data("x", x)
        mu_a, sigma_a = pm.Normal("mu_a", 0, 1), pm.HalfNormal("sigma_a", 1)
        a = pm.Deterministic("a", mu_a + sigma_a * pm.Normal("z", 0, 1, dims="county"), dims="county")
        eta_ = a[county_idx] + pm.Normal("b", 0, 1) * x_data
        if family == "bernoulli":
            pm.Bernoulli("y", logit_p=eta_, observed=y)
        else:
            pm.Poisson("y", pm.math.exp(eta_), observed=y)
    return model


def glm_hierarchy_cell(family: str, n: int, epsilon: float, seed: int = 0) -> dict:
    bounds = {"y": {"x": (-1.0, 1.0), **({"y": (0.0, 15.0)} if family == "poisson" else {})}}
    return _beside_plain(glm_hierarchy_model(family, n, seed), {"bounds": bounds}, epsilon, seed, ("a", "b"))


def gallery_cell(name: str, epsilon: float, seed: int = 0, n: int | None = None) -> dict:
    """One gallery regression through the privacy flag with its bounds, beside plain PyMC: at the gallery's own
    number of records, or at ``n`` records drawn the same way."""
    model = getattr(G, name)() if n is None else getattr(G, name)(n)
    records = int(np.shape(model.rvs_to_values[model.observed_RVs[0]].data)[0])
    names = [v.name for v in model.free_RVs]
    return {**_beside_plain(model, G.BOUNDS_DECLARATIONS[name], epsilon, seed, names), "records": records}


def table(rows: dict[str, dict], label: str = "family") -> str:
    lines = [f"| {label} | N | ε | route | distance (plain s.d.) | width (× plain) | plain mean in 95 % | time (plain) |",
             "|---|---:|---:|---|---:|---:|---|---:|"]
    for key, row in rows.items():
        family, n, eps = key.split("|")
        n = f"{int(n):,}" if n.isdigit() else f"{row.get('records', 0):,}"
        if "refused" in row:
            lines.append(f"| {family} | {n} | {eps} | refused: {row['refused']} | | | | |")
            continue
        lines.append(f"| {family} | {n} | {eps} | {row['route']} | {row['distance']:.2f} | {row['width']:.2f} | "
                     f"{'yes' if row['honest'] else 'no'} | {row['time']:.0f} s ({row['plain_time']:.0f} s) |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", nargs="*", default=list(FAMILIES))
    parser.add_argument("--sizes", nargs="*", type=int, default=list(SIZES))
    parser.add_argument("--epsilons", nargs="*", type=float, default=list(EPSILONS))
    parser.add_argument("--gallery", nargs="*", default=list(G.BOUNDS_DECLARATIONS))
    parser.add_argument("--gallery-epsilons", nargs="*", type=float, default=[1.0, 10.0])
    parser.add_argument("--gallery-sizes", nargs="*", type=int, default=list(SIZES),
                        help="the gallery's regressions again at these N, at every --epsilons")
    parser.add_argument("--hierarchy-cells", nargs="*", default=["10000|1", "100000|1", "100000|10"],
                        help="N|ε of the 20-group hierarchy")
    parser.add_argument("--glm-hierarchy-cells", nargs="*",
                        default=["bernoulli|10000|1", "bernoulli|100000|1", "poisson|10000|1", "poisson|100000|1"],
                        help="family|N|ε of the 20-group GLM hierarchy")
    parser.add_argument("--stored-only", action="store_true")
    args = parser.parse_args(argv)
    from threadpoolctl import threadpool_limits

    store = StoredRuns(HERE / "results" / "utility_runs.jsonl")

    def run(keys: dict[str, Any]) -> dict[str, dict]:
        """Each key's stored result, computing the missing ones unless --stored-only."""
        if args.stored_only:
            return {k: store.done[k] for k in keys if k in store.done}
        return {k: store.get(k, compute) for k, compute in keys.items()}

    with threadpool_limits(1):
        rows = run({f"{family}|{n}|{eps:g}": (lambda f=family, n=n, e=eps: cell(f, n, e))
                    for family in args.families for n in args.sizes for eps in args.epsilons})
        gallery = run({f"{name}|gallery N|{eps:g}": (lambda m=name, e=eps: gallery_cell(m, e))
                       for name in args.gallery for eps in args.gallery_epsilons})
        gallery_sized = run({f"{name}|{n}|{eps:g}": (lambda m=name, e=eps, n=n: gallery_cell(m, e, n=n))
                             for name in args.gallery for n in args.gallery_sizes for eps in args.epsilons})
        hierarchy = run({f"20 groups|{cell_key}": (lambda c=cell_key: hierarchy_cell(int(c.split("|")[0]),
                                                                                      float(c.split("|")[1])))
                         for cell_key in args.hierarchy_cells})
        glm_hierarchy = run({f"{c.split('|')[0]}, 20 groups|{c.split('|', 1)[1]}":
                             (lambda c=c: glm_hierarchy_cell(c.split("|")[0], int(c.split("|")[1]),
                                                              float(c.split("|")[2])))
                             for c in args.glm_hierarchy_cells})
    markdown = table(rows)
    if hierarchy:
        markdown += ("\n\nThe hierarchy (varying intercepts by 20 groups, a shared slope and σ; distance and width over "
                     "a, b and σ):\n\n" + table(hierarchy, "model"))
    if glm_hierarchy:
        markdown += ("\n\nGLM hierarchies (varying intercepts by 20 groups, non-centred, a shared slope; x uniform on "
                     "[−1, 1], declared so; distance and width over a and b):\n\n" + table(glm_hierarchy, "model"))
    if gallery:
        markdown += "\n\nThe gallery's regressions, declared with bounds:\n\n" + table(gallery, "model")
    if gallery_sized:
        markdown += ("\n\nThe same regressions at N records drawn as the gallery draws them (radon: 8 counties):\n\n"
                     + table(gallery_sized, "model"))
    write_results("utility", {"glm": rows, "gallery": gallery, "gallery by N": gallery_sized, "hierarchy": hierarchy,
                              "glm hierarchy": glm_hierarchy}, markdown)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
