"""Private logistic regression on real records: objective perturbation before and after the extra-ridge rule.

Data: the Wisconsin diagnostic breast-cancer records that ship inside scikit-learn
(``sklearn.datasets.load_breast_cancer``: 569 records, 30 features, 63 % benign; no
download). scikit-learn is not a pymc_dp dependency: it comes with the ``bench`` extra
(through diffprivlib). Each feature is rescaled into [−0.5, 0.5] by its range over the 569
records — a stand-in for ranges declared from domain knowledge, the same non-private
preprocessing for every method — so the declared L2 bound of a feature row is
B = √30 / 2 ≈ 2.74, the cube's worst case: no row is clipped. Each seed draws a random
80/20 split (455 training, 114 test records) and the noise; the table gives the test error
(per cent), mean and standard error over the seeds.

Methods (all with an intercept, all at the same ε; λ is the regularisation of the rows
``[x, a] / R`` on the unit ball, R = √(B² + a²), a = B unless said):

* ``non-private`` — the exact regularised optimum at λ;
* ``objective (Alg. 2)`` — objective perturbation exactly as CMS 2011 Algorithm 2 is
  published: the extra ridge only once ε′ = ε − log(1 + c/(Nλ))² ≤ 0;
* ``objective`` — :class:`pmdp.PrivateLogisticRegression` now: the extra ridge (λ raised
  to Λ′ = c/(N(e^{ε/4} − 1)), ε′ = ε/2) whenever ε′ at λ falls below ε/2. Paired with the
  previous column (same split, same noise draws), so their difference is the rule's alone;
* ``objective, a = 1`` — the same with diffprivlib's intercept constant (R = √(B² + 1));
* ``output`` — output perturbation (CMS 2011 Algorithm 1);
* ``diffprivlib`` — ``diffprivlib.models.LogisticRegression(epsilon, data_norm=B, C)``
  with C = 1/(N λ R²), R = √(B² + 1): the same penalty on the coefficients as
  ``objective, a = 1``, and ``diffprivlib C=1`` at its default C. diffprivlib is not the
  same mechanism: it leaves the intercept unpenalised (the proof of objective perturbation
  needs every direction regularised), bounds the curvature term by c·R instead of c·R²
  (smaller for R > 1, so its ε′ is larger and its noise smaller than the theorem allows),
  and stops L-BFGS at a tolerance rather than at the exact minimiser. Its lower errors are
  partly bought with those departures.

    python benchmarks/logistic_perturbation.py --seeds 50   # writes results/logistic_perturbation.{json,md}
    python benchmarks/logistic_perturbation.py --seeds 5 --no-diffprivlib   # a quick look

Needs ``pip install -e '.[bench]'`` (scikit-learn for the records; diffprivlib for its columns,
skipped with a note when it is not installed). diffprivlib 0.6.6 passes ``iprint=`` to
``scipy.optimize.fmin_l_bfgs_b``, which SciPy 1.18 no longer accepts: the benchmark drops
that argument (diffprivlib's print level, nothing else) for diffprivlib's calls.
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
EPSILONS = (0.1, 0.5, 1.0, 2.0)
REGULARISATIONS = (0.01, 0.002, 0.0005)
TRAIN_SHARE = 0.8
METHODS = ("non-private", "objective (Alg. 2)", "objective", "objective, a = 1", "output", "diffprivlib",
           "diffprivlib C=1")


def breast_cancer() -> tuple[np.ndarray, np.ndarray, float]:
    """The 569 records, features rescaled into [−0.5, 0.5] by their ranges; labels 1 = benign; the L2 bound B."""
    try:
        from sklearn.datasets import load_breast_cancer
    except ImportError:
        raise SystemExit("the breast-cancer records ship with scikit-learn: pip install -e '.[bench]'") from None
    data = load_breast_cancer()
    X, y = np.asarray(data.data, dtype=float), np.asarray(data.target, dtype=int)
    lo, hi = X.min(axis=0), X.max(axis=0)
    return (X - lo) / (hi - lo) - 0.5, y, math.sqrt(X.shape[1]) / 2


def split(X: np.ndarray, y: np.ndarray, seed: int) -> tuple[np.ndarray, ...]:
    order = np.random.default_rng(seed).permutation(len(y))
    k = int(TRAIN_SHARE * len(y))
    return X[order[:k]], y[order[:k]], X[order[k:]], y[order[k:]]


def published_ridge(eps: float, n: int, lam: float) -> tuple[float, float]:
    """(Δ, ε′) of CMS 2011 Algorithm 2 as published: the extra ridge only once ε′ ≤ 0."""
    c = 0.25
    eps_prime = eps - math.log(1.0 + 2.0 * c / (n * lam) + c**2 / (n * lam) ** 2)
    if eps_prime > 0:
        return 0.0, eps_prime
    return c / (n * math.expm1(eps / 4.0)) - lam, eps / 2.0


def published_objective(X: np.ndarray, y: np.ndarray, eps: float, lam: float, bound: float, seed: int) -> np.ndarray:
    """Algorithm 2 as published on the rows ``[x, B]`` (bound √2·B), with the library's exact solver and the
    noise draws :class:`pmdp.PrivateLogisticRegression` makes for the same seed. Weights on ``[x, B]``."""
    from pymc_dp.mechanisms import SeededNoise
    from pymc_dp.mechanisms.logistic_regression import _fit_regularised, _spherical_laplace

    n = len(y)
    R = math.sqrt(2.0) * bound
    Z = np.column_stack([X, np.full(n, bound)]) / R
    extra, eps_prime = published_ridge(eps, n, lam)
    b = _spherical_laplace(Z.shape[1], 2.0 / eps_prime, SeededNoise(seed))
    return _fit_regularised(Z, 2.0 * y - 1.0, lam + extra, linear=b / n) / R


def _error(decision: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean((decision > 0) != y))


def _diffprivlib():
    """diffprivlib's LogisticRegression and BudgetAccountant, with SciPy's L-BFGS taking its ``iprint``; or None."""
    try:
        import scipy.optimize
        from diffprivlib import BudgetAccountant
        from diffprivlib.models import LogisticRegression
    except ImportError:
        return None
    import diffprivlib.models.logistic_regression as dpl

    lbfgs = scipy.optimize.fmin_l_bfgs_b

    def fmin_l_bfgs_b(*args, iprint=None, **kwargs):  # SciPy ≥ 1.18 has no iprint; it only set verbosity
        return lbfgs(*args, **kwargs)

    class _Optimize:
        def __getattr__(self, name):
            return fmin_l_bfgs_b if name == "fmin_l_bfgs_b" else getattr(scipy.optimize, name)

    dpl.optimize = _Optimize()  # diffprivlib's module only; SciPy itself is left alone
    return LogisticRegression, BudgetAccountant


def one_seed(X: np.ndarray, y: np.ndarray, bound: float, seed: int, dpl) -> dict[str, float]:
    import pymc_dp as pmdp
    from pymc_dp.mechanisms.logistic_regression import _fit_regularised

    Xtr, ytr, Xte, yte = split(X, y, seed)
    n = len(ytr)
    R = math.sqrt(2.0) * bound
    out: dict[str, float] = {}
    for lam in REGULARISATIONS:
        w = _fit_regularised(np.column_stack([Xtr, np.full(n, bound)]) / R, 2.0 * ytr - 1.0, lam) / R
        out[f"{lam:g} non-private"] = _error(Xte @ w[:-1] + w[-1] * bound, yte)
        for eps in EPSILONS:
            key = f"{lam:g} {eps:g}"
            w = published_objective(Xtr, ytr, eps, lam, bound, seed)
            out[f"{key} objective (Alg. 2)"] = _error(Xte @ w[:-1] + w[-1] * bound, yte)
            for name, kwargs in (("objective", {}), ("objective, a = 1", {"intercept_scaling": 1.0}),
                                 ("output", {"mechanism": "output"})):
                clf = pmdp.PrivateLogisticRegression(epsilon=eps, feature_l2_bound=bound, regularisation=lam,
                                                     ledger=pmdp.PrivacyLedger(), rng=seed, **kwargs)
                out[f"{key} {name}"] = 1.0 - clf.fit(Xtr, ytr).score(Xte, yte)
            if dpl is not None:
                LogisticRegression, BudgetAccountant = dpl
                for name, C in (("diffprivlib", 1.0 / (n * lam * (bound**2 + 1.0))), ("diffprivlib C=1", 1.0)):
                    model = LogisticRegression(epsilon=eps, data_norm=bound, C=C, random_state=seed,
                                               accountant=BudgetAccountant())
                    out[f"{key} {name}"] = 1.0 - float(model.fit(Xtr, ytr).score(Xte, yte))
    return out


def table(runs: list[dict[str, float]], n: int) -> tuple[list[dict], str]:
    """Rows per (λ, ε): each method's mean error and standard error (per cent), the rules' ε′, the paired gain."""
    from pymc_dp.mechanisms.logistic_regression import objective_perturbation_ridge

    rows, lines = [], []
    for lam in REGULARISATIONS:
        baseline = 100 * np.array([r[f"{lam:g} non-private"] for r in runs])
        se = baseline.std(ddof=1) / math.sqrt(len(runs))
        lines += [f"\nλ = {lam:g} (non-private: {baseline.mean():.1f} ± {se:.1f})\n",
                  "| ε | ε′ Alg. 2 → now | " + " | ".join(METHODS[1:]) + " | Alg. 2 − now |",
                  "|---:|---|" + "---:|" * len(METHODS)]
        for eps in EPSILONS:
            key = f"{lam:g} {eps:g}"
            row = {"regularisation": lam, "epsilon": eps, "runs": len(runs),
                   "epsilon_prime_published": published_ridge(eps, n, lam)[1],
                   "epsilon_prime": objective_perturbation_ridge(eps, n, lam)[1],
                   "extra_ridge": objective_perturbation_ridge(eps, n, lam)[0]}
            cells = []
            for method in METHODS[1:]:
                values = [r[f"{key} {method}"] for r in runs if f"{key} {method}" in r]
                if not values:
                    cells.append("–")
                    continue
                v = 100 * np.array(values)
                row[method] = (float(v.mean()), float(v.std(ddof=1) / math.sqrt(len(v))))
                cells.append(f"{row[method][0]:.1f} ± {row[method][1]:.1f}")
            gain = 100 * np.array([r[f"{key} objective (Alg. 2)"] - r[f"{key} objective"] for r in runs])
            gain[np.abs(gain) < 1e-9] = 0.0  # the same release where the two rules agree
            row["paired_gain"] = (float(gain.mean()), float(gain.std(ddof=1) / math.sqrt(len(gain))))
            prime = (f"{row['epsilon_prime']:.3g} (both)" if row["epsilon_prime_published"] == row["epsilon_prime"]
                     else f"{row['epsilon_prime_published']:.3g} → {row['epsilon_prime']:.3g}")
            lines.append(f"| {eps:g} | {prime} | " + " | ".join(cells)
                         + f" | {row['paired_gain'][0]:+.1f} ± {row['paired_gain'][1]:.1f} |")
            rows.append(row)
    return rows, "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=50)
    parser.add_argument("--no-diffprivlib", action="store_true", help="skip diffprivlib's columns")
    args = parser.parse_args(argv)
    if args.seeds < 2:
        parser.error("--seeds must be at least 2 (the table gives standard errors)")
    X, y, bound = breast_cancer()
    dpl = None if args.no_diffprivlib else _diffprivlib()
    if dpl is None and not args.no_diffprivlib:
        print("diffprivlib is not installed: its columns are left empty (pip install -e '.[bench]').", file=sys.stderr)
    runs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # diffprivlib's convergence and pymc_dp's seeded-noise notices
        for seed in range(args.seeds):
            runs.append(one_seed(X, y, bound, seed, dpl))
    n = int(TRAIN_SHARE * len(y))
    rows, text = table(runs, n)
    header = (f"Breast-cancer records (scikit-learn), N = {n} training / {len(y) - n} test, d = {X.shape[1]}, "
              f"B = {bound:.3f}; test error in per cent, mean ± standard error over {args.seeds} seeds.")
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    (out / "logistic_perturbation.json").write_text(json.dumps(rows, indent=1))
    (out / "logistic_perturbation.md").write_text(header + "\n" + text + "\n")
    print(header + "\n" + text)


if __name__ == "__main__":
    main()
