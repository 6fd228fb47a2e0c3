"""[WM10] Tables 2 and 3: private logistic regression, the heuristic against inference from its measurements.

Data as [WM10] Table 1 describes (generated here, test sets of the same size):

* SYNTH — 1 000 records, 4 features uniform on the unit-volume cube centred at 0, labels
  from a logistic model with weights (8, −6, 4, 2) (Bayes error ≈ 15 %);
* CM1 — 17 500 records uniform on the unit sphere in 10 dimensions, labelled by a random
  hyperplane through the origin, points within 0.03 of it dropped (linearly separable);
* CM2 — the same without the margin, labels within 0.1 of the hyperplane flipped with
  probability 0.2 (not separable; our reading of Chaudhuri & Monteleoni 2008's setup).

For each data set and ε in {0.1, 1}: the classification error (per cent, mean ± s.d. over
``--runs`` runs) of the noisy-gradient heuristic's last iterate, of inference (the expected
error over the posterior of :func:`pymc_dp.logistic_from_gradients`), of output and
objective perturbation at the same ε, and of the non-private regularised optimum.

    python benchmarks/wm10_logistic.py --runs 50          # writes results/wm10_logistic.{json,md}
    python benchmarks/wm10_logistic.py --runs 3 --datasets SYNTH   # a quick look
"""

from __future__ import annotations

import argparse
import json
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SYNTH_WEIGHTS = np.array([8.0, -6.0, 4.0, 2.0])


def _sphere(n: int, d: int, rng: np.random.Generator) -> np.ndarray:
    x = rng.normal(size=(n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def dataset(name: str, seed: int) -> dict:
    """Training and test records, the feature bound and a sample of the feature distribution."""
    rng = np.random.default_rng(seed)
    if name == "SYNTH":
        def draw(n):
            X = rng.uniform(-0.5, 0.5, (n, 4))
            return X, rng.binomial(1, 1 / (1 + np.exp(-X @ SYNTH_WEIGHTS)))

        design = lambda m: rng.uniform(-0.5, 0.5, (m, 4))  # noqa: E731
        (X, y), (Xt, yt) = draw(1000), draw(1000)
        return dict(X=X, y=y, X_test=Xt, y_test=yt, l1=2.0, l2=1.0, design=design(2000), learning_rate=40.0)
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
                learning_rate=20.0)


def _error(X, y, w) -> float:
    return float(np.mean((X @ w > 0) != y))


def one_run(name: str, eps: float, seed: int, iterations: int) -> dict:
    import pymc as pm

    import pymc_dp as pmdp
    from pymc_dp.mechanisms.logistic_regression import _fit_regularised, _scaled

    data = dataset(name, 1000 + seed)
    X, y, Xt, yt = data["X"], data["y"], data["X_test"], data["y_test"]
    run = pmdp.noisy_gradient_logistic(X, y, epsilon=eps, iterations=iterations, feature_norm=data["l1"],
                                       learning_rate=data["learning_rate"], ledger=pmdp.PrivacyLedger())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pmdp.logistic_from_gradients(run, data["design"], prior_sigma=10.0):
            trace = pm.sample(500, tune=500, chains=2, cores=1, random_seed=seed, progressbar=False,
                              compute_convergence_checks=False)
    draws = trace.posterior["w"].values.reshape(-1, X.shape[1])[::10]
    lam = 0.01
    kwargs = dict(epsilon=eps, feature_norm=data["l2"], regularisation=lam)
    out = pmdp.output_perturbation_logistic(X, y, ledger=pmdp.PrivacyLedger(), **kwargs).weights
    obj = pmdp.objective_perturbation_logistic(X, y, ledger=pmdp.PrivacyLedger(), **kwargs).weights
    Xs, s = _scaled(X, y, data["l2"])
    optimum = _fit_regularised(Xs, s, 1e-6)
    return {
        "heuristic": _error(Xt, yt, run.final_weights),
        "inference": float(np.mean([_error(Xt, yt, w) for w in draws])),
        "output perturbation": _error(Xt, yt, out),
        "objective perturbation": _error(Xt, yt, obj),
        "non-private": _error(Xt, yt, optimum),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--datasets", nargs="+", default=["SYNTH", "CM1", "CM2"])
    parser.add_argument("--epsilons", nargs="+", type=float, default=[0.1, 1.0])
    args = parser.parse_args(argv)
    rows = []
    for name in args.datasets:
        for eps in args.epsilons:
            results = [one_run(name, eps, seed, args.iterations) for seed in range(args.runs)]
            row = {"dataset": name, "epsilon": eps, "runs": args.runs}
            for key in results[0]:
                values = 100 * np.array([r[key] for r in results])
                row[key] = (float(values.mean()), float(values.std()))
            rows.append(row)
            print(row, flush=True)
    methods = ["heuristic", "inference", "output perturbation", "objective perturbation", "non-private"]
    lines = ["| data | ε | " + " | ".join(methods) + " |", "|---|---:|" + "---:|" * len(methods)]
    for r in rows:
        lines.append(f"| {r['dataset']} | {r['epsilon']:g} | "
                     + " | ".join(f"{r[m][0]:.1f} ± {r[m][1]:.1f}" for m in methods) + " |")
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    (out / "wm10_logistic.json").write_text(json.dumps(rows, indent=1))
    (out / "wm10_logistic.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
