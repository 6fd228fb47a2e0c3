"""Asymptotic relative efficiency of one posterior sample (OPS) and of the Laplace route.

[FGWC16] (Foulds, Geumlek, Welling & Chaudhuri, UAI 2016), Theorems 4 and 5, for a
beta-Bernoulli model. With I the Fisher information of one record and θ₀ the true
parameter, an estimator whose error satisfies √N (θ̂ − θ₀) → Normal(0, c I⁻¹) has
asymptotic relative efficiency (ARE) c with respect to the maximum-likelihood
estimator (c = 1):

* one sample from the true posterior: ARE 2 (the posterior's own spread, I⁻¹/N, on
  top of the MLE's);
* one OPS sample, an exact draw from the tempered posterior p(θ) p(X | θ)^{1/T}
  (T ≥ 1): ARE 1 + T (Theorem 4);
* one sample from the posterior given a Laplace-privatised count: ARE 2, the same as
  the true posterior (Theorem 5): the noise moves the count by O(1/ε), i.e. θ by
  O(1/(εN)), which is negligible next to the O(1/√N) spread.

So, as N grows,

    Var(θ_OPS − p) / Var(θ_post − p) → (1 + T)/2,     Var(θ_Lap − p) / Var(θ_post − p) → 1.

This benchmark measures both ratios and their convergence.

Setting
-------
True p = 0.3, prior Beta(1, 1), N ∈ {10³, 10⁴, 10⁵, 10⁶}, ε ∈ {1, 0.1}. OPS truncates p
to [a₀, 1 − a₀] with a₀ = 0.05, so that the log-likelihood of one record has
sensitivity Δ = log((1 − a₀)/a₀) = log 19 ([FGWC16] eq. 15; taken from
:meth:`pymc_dp.families.Bernoulli.loglik_sensitivity`), and T = max(1, 2Δ/ε), as in
``pmdp.sample``'s OPS route: T = 5.889 for ε = 1 and 58.89 for ε = 0.1, i.e. limits
3.444 and 29.94.

What one repetition does
------------------------
1. s ~ Binomial(N, p): the number of successes among N Bernoulli(p) records, which
   is all the model's likelihood depends on (the sufficient statistic). The records
   themselves are never generated: that would change nothing but the run time
   (10⁶ records × 20,000 repetitions is 2·10¹⁰ values).
2. True-posterior sample: θ_post ~ Beta(1 + s, 1 + N − s).
3. OPS sample: an exact draw from Beta(1 + s/T, 1 + (N − s)/T) truncated to
   [a₀, 1 − a₀], by inversion: u′ = F(a₀) + u (F(1 − a₀) − F(a₀)), θ_OPS = F⁻¹(u′),
   with F the Beta CDF (``scipy.special.betainc`` / ``betaincinv``).
4. Laplace sample: the count is released with the library's own mechanism,
   :func:`pymc_dp.mechanisms.laplace_mechanism` (sensitivity 1, N public), once per
   repetition and with a fresh :class:`~pymc_dp.PrivacyLedger` each time, because
   every repetition is a separate data set with its own release; the noisy count is
   projected onto [0, N] with :meth:`pymc_dp.families.Bernoulli.project`, and
   θ_Lap ~ Beta(1 + ŝ, 1 + N − ŝ). The noise is *seeded* (``rng=`` a NumPy generator):
   reproducible, recorded as ``noise_source="seeded"`` in each ledger, and fit for a
   simulation only, never for a real release.

Only the inversions are vectorised (over the repetitions); the mechanism is called
2 × 4 × 20,000 times, 0.1–0.15 ms a call (under half of the run time).

Reproducibility and variance reduction
--------------------------------------
For each N, generators are derived from ``(seed, N, 0)`` (the counts s),
``(seed, N, 1)`` (one uniform u per repetition) and ``(seed, N, 2, round(10⁶ ε))``
(the Laplace noise). The same seed gives the same table, and the first k
repetitions of a run are the same whatever ``--repeats`` is. The three samples of a
repetition share its count s and its uniform u (each is still an exact inversion
draw from its own distribution, so the variances being estimated are unchanged); the
denominator is the same for both ε. These common random numbers make
the samples strongly correlated, which makes the *ratio* far less noisy than with
independent draws.

What is reported
----------------
For each (ε, N): each ratio of sample variances with its standard error, by the
delta method on the empirical moments (no normality assumed): with
d_x = (x − x̄)², d_y = (y − ȳ)² and r = mean(d_x)/mean(d_y),
s.e.(r) = sd(d_x − r d_y) / (mean(d_y) √R). Next to each ratio is its exact
expectation at that N (a ratio of exact variances):

* OPS: Var(θ_OPS) summed exactly over the binomial distribution of s (conditional
  moments of the truncated Beta from ``betainc``), over Var(θ_post) in closed form;
* Laplace: closed form, ignoring the projection onto [0, N], which at these N and ε
  acts with probability below 10⁻¹².

At small N the OPS ratio stays below its limit: with T = 58.89 and N = 10³ the
tempered posterior carries only N/T ≈ 17 records' worth of information, so the
Beta(1, 1) prior still shrinks the draw towards 1/2 (the main effect: the ratio is
12% below its limit) and the truncation to [0.05, 0.95] trims its tails (about
0.1% of its variance). The convergence as N grows is the point of the
table. The Laplace ratio is above 1 at small N (the noise, variance 2/ε², is not yet
negligible next to the count's, N p (1 − p)) and tends to 1.

Target (exit status 1 if missed): at the largest N, for every ε, the OPS ratio is
within 5% of (1 + T)/2 and the Laplace ratio within 5% of 1. Why 5% at R = 20,000:
for two independent normal samples the ratio of sample variances has a relative
standard error of about √(4/R) = 1.4%; the shared (s, u) only lowers it (the
measured standard errors are printed: at N = 10⁶ about 0.6% (ε = 1) and 0.9%
(ε = 0.1) of the OPS ratio, 0.03% or less of the Laplace ratio), and the exact
finite-N expectations at N = 10⁶ are within 0.1% of the limits. A ratio 5% off is
thus at least 3.5 standard errors from its expectation: a real discrepancy, not
Monte Carlo noise.

Run with ``python benchmarks/ops_efficiency.py`` (``--help`` for the options): about
half a minute. ``--output`` writes the configuration, results, versions and run time as
JSON (default ``benchmarks/results/ops_efficiency.json``); ``--plot PATH`` saves a
figure of the ratios against N.
"""

from __future__ import annotations

import argparse
import math
import platform
import sys
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np
from _timing import write_results

ROOT = Path(__file__).resolve().parent
DEFAULT_OUTPUT = ROOT / "results" / "ops_efficiency.json"

TRUE_P = 0.3
PRIOR = (1.0, 1.0)  # Beta(alpha, beta)
A0 = 0.05  # OPS truncation: p in [A0, 1 - A0]
DEFAULT_NS = (1_000, 10_000, 100_000, 1_000_000)
DEFAULT_EPSILONS = (1.0, 0.1)
DEFAULT_REPEATS = 20_000
TOLERANCE = 0.05  # relative, at the largest N
#: Tail mass of the binomial distribution of s left out of the exact OPS sum (each side).
_TAIL = 1e-17


# ----------------------------------------------------------------------------- theory


def loglik_sensitivity() -> float:
    """Δ of one Bernoulli record's log-likelihood on p ∈ [A0, 1 − A0], from the library (= log 19)."""
    from pymc_dp.families import Bernoulli

    delta, _ = Bernoulli().loglik_sensitivity({"p": (A0, 1.0 - A0)}, {})
    if not math.isclose(delta, math.log((1.0 - A0) / A0), rel_tol=1e-12):
        raise RuntimeError(f"unexpected sensitivity {delta!r}; [FGWC16] eq. 15 gives log((1 - a0)/a0).")
    return float(delta)


def temperature(epsilon: float, delta: float) -> float:
    """T = max(1, 2Δ/ε): an exact draw from the 1/T-tempered posterior is ε-DP."""
    return max(1.0, 2.0 * delta / epsilon)


def conjugate_variance(n: int, count_mean: float, count_var: float) -> float:
    """Var(θ) for θ | c ~ Beta(α₀ + c, β₀ + N − c), the count c having the given mean and variance.

    Law of total variance: with A = α₀ + β₀ + N, E[θ | c] = (α₀ + c)/A, so
    Var(E[θ | c]) = Var(c)/A², and E[Var(θ | c)] = E[(α₀ + c)(β₀ + N − c)]/(A²(A + 1)).
    """
    a0, b0 = PRIOR
    big_a = a0 + b0 + n
    mean_product = (a0 + count_mean) * (b0 + n - count_mean) - count_var
    return count_var / big_a**2 + mean_product / (big_a**2 * (big_a + 1.0))


def exact_ops_variance(n: int, t: float) -> float:
    """Var(θ_OPS), summed over s ~ Binomial(N, p) (all but 2·10⁻¹⁷ of its mass).

    Given s, θ ~ Beta(a, b) truncated to [A0, 1 − A0], a = α₀ + s/T, b = β₀ + (N − s)/T,
    whose k-th moment is B(a + k, b)/B(a, b) · M(a + k)/M(a), M(c) = I_{1−A0}(c, b) − I_{A0}(c, b).
    """
    from scipy.special import betainc
    from scipy.stats import binom

    # The upper end from the lower quantile of the failures: scipy's isf is not accurate this far out.
    s = np.arange(int(binom.ppf(_TAIL, n, TRUE_P)), n - int(binom.ppf(_TAIL, n, 1.0 - TRUE_P)) + 1)
    w = binom.pmf(s, n, TRUE_P)
    w /= w.sum()
    a = PRIOR[0] + s / t
    b = PRIOR[1] + (n - s) / t

    def mass(k: int) -> np.ndarray:
        return betainc(a + k, b, 1.0 - A0) - betainc(a + k, b, A0)

    z = mass(0)
    m1 = a / (a + b) * mass(1) / z
    m2 = a * (a + 1.0) / ((a + b) * (a + b + 1.0)) * mass(2) / z
    mean = float(np.dot(w, m1))
    return float(np.dot(w, m2 - m1**2) + np.dot(w, (m1 - mean) ** 2))


def expected_ratios(n: int, epsilon: float, t: float) -> tuple[float, float]:
    """Exact expected (OPS, Laplace) variance ratios at this N (Laplace: projection ignored)."""
    binom_var = n * TRUE_P * (1.0 - TRUE_P)
    post = conjugate_variance(n, n * TRUE_P, binom_var)
    lap = conjugate_variance(n, n * TRUE_P, binom_var + 2.0 / epsilon**2)  # Laplace(1/ε): variance 2/ε²
    return exact_ops_variance(n, t) / post, lap / post


# ----------------------------------------------------------------------------- sampling


def truncated_beta_ppf(a: np.ndarray, b: np.ndarray, u: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """F⁻¹(F(lo) + u (F(hi) − F(lo))) for F the Beta(a, b) CDF: an exact draw from Beta(a, b) on [lo, hi]."""
    from scipy.special import betainc, betaincinv

    f_lo, f_hi = betainc(a, b, lo), betainc(a, b, hi)
    return np.clip(betaincinv(a, b, f_lo + u * (f_hi - f_lo)), lo, hi)


def laplace_counts(counts: np.ndarray, n: int, epsilon: float, rng: np.random.Generator) -> np.ndarray:
    """One Laplace release per repetition (each its own data set and ledger), projected onto [0, N]."""
    import pymc_dp as pmdp
    from pymc_dp.families import Bernoulli
    from pymc_dp.mechanisms import laplace_mechanism

    family = Bernoulli()
    noisy = np.empty(counts.size)
    for i, c in enumerate(counts):
        noisy[i] = laplace_mechanism(
            float(c), epsilon=epsilon, sensitivity=1.0, ledger=pmdp.PrivacyLedger(), rng=rng,
            touched="x:sum", assumptions=("N is public",),
        )
    return family.project(noisy, n, {}, "replace")


def variance_ratio(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Var(x)/Var(y) and its delta-method standard error (paired samples, empirical moments)."""
    dx, dy = (x - x.mean()) ** 2, (y - y.mean()) ** 2
    r = dx.mean() / dy.mean()
    se = (dx - r * dy).std(ddof=1) / (dy.mean() * math.sqrt(x.size))
    return float(r), float(se)


def run(ns: Sequence[int], epsilons: Sequence[float], repeats: int, seed: int) -> list[dict[str, Any]]:
    """The table: one row per (ε, N), ordered by ε as given, then N."""
    from scipy.special import betaincinv

    delta = loglik_sensitivity()
    a0, b0 = PRIOR
    rows: dict[tuple[float, int], dict[str, Any]] = {}
    for n in ns:
        start = time.perf_counter()
        counts = np.random.default_rng([seed, n, 0]).binomial(n, TRUE_P, size=repeats)
        u = np.random.default_rng([seed, n, 1]).random(repeats)  # shared by the samples of a repetition
        theta_post = betaincinv(a0 + counts, b0 + n - counts, u)
        shared = time.perf_counter() - start
        for eps in epsilons:
            start = time.perf_counter()
            t = temperature(eps, delta)
            theta_ops = truncated_beta_ppf(a0 + counts / t, b0 + (n - counts) / t, u, A0, 1.0 - A0)
            mech_start = time.perf_counter()
            noisy = laplace_counts(counts, n, eps, np.random.default_rng([seed, n, 2, round(eps * 1e6)]))
            mech_seconds = time.perf_counter() - mech_start
            theta_lap = betaincinv(a0 + noisy, b0 + n - noisy, u)
            ops, ops_se = variance_ratio(theta_ops - TRUE_P, theta_post - TRUE_P)
            lap, lap_se = variance_ratio(theta_lap - TRUE_P, theta_post - TRUE_P)
            ops_expected, lap_expected = expected_ratios(n, eps, t)
            rows[(eps, n)] = {
                "epsilon": eps,
                "temperature": t,
                "n": int(n),
                "repeats": repeats,
                "ops_ratio": ops,
                "ops_se": ops_se,
                "ops_expected": ops_expected,
                "ops_limit": (1.0 + t) / 2.0,
                "laplace_ratio": lap,
                "laplace_se": lap_se,
                "laplace_expected": lap_expected,
                "laplace_limit": 1.0,
                "var_post": float(np.var(theta_post, ddof=1)),
                "var_ops": float(np.var(theta_ops, ddof=1)),
                "var_laplace": float(np.var(theta_lap, ddof=1)),
                "mean_post": float(theta_post.mean()),
                "mean_ops": float(theta_ops.mean()),
                "mean_laplace": float(theta_lap.mean()),
                "projected": int(np.count_nonzero((noisy == 0) | (noisy == n))),
                "mechanism_seconds": mech_seconds,
                "seconds": time.perf_counter() - start + shared,
            }
    return [rows[(eps, n)] for eps in epsilons for n in ns]


# ----------------------------------------------------------------------------- output


def format_table(rows: Sequence[dict[str, Any]]) -> str:
    lines = [
        "| ε | T | N | OPS ratio (± s.e.) | OPS expected at N | OPS limit (1+T)/2 "
        "| Laplace ratio (± s.e.) | Laplace expected at N |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['epsilon']:g} | {r['temperature']:.4g} | {r['n']:,} | {r['ops_ratio']:.3f} ± {r['ops_se']:.3f} "
            f"| {r['ops_expected']:.3f} | {r['ops_limit']:.3f} | {r['laplace_ratio']:.4f} ± {r['laplace_se']:.4f} "
            f"| {r['laplace_expected']:.4f} |"
        )
    return "\n".join(lines)


def plot(rows: Sequence[dict[str, Any]], path: Path) -> None:
    """One panel per (method, ε): the ratio against N (± 2 s.e.), its expectation at N, its limit (dashed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    epsilons = list(dict.fromkeys(r["epsilon"] for r in rows))
    methods = (("ops", "OPS sample", "C0", "o", "(1+T)/2"), ("laplace", "Laplace route", "C1", "s", "1"))
    fig, axes = plt.subplots(
        len(methods), len(epsilons), figsize=(4.8 * len(epsilons), 6.8), sharex=True, squeeze=False
    )
    for col, eps in enumerate(epsilons):
        sub = [r for r in rows if r["epsilon"] == eps]
        ns = np.array([r["n"] for r in sub])
        t = sub[0]["temperature"]
        for row, (key, label, colour, marker, limit_name) in enumerate(methods):
            ax = axes[row, col]
            ratio = np.array([r[f"{key}_ratio"] for r in sub])
            se = np.array([r[f"{key}_se"] for r in sub])
            limit = sub[0][f"{key}_limit"]
            name = f"limit {limit_name} = {limit:.4g}" if limit_name != "1" else "limit 1"
            ax.axhline(limit, ls="--", color="black", lw=1, label=name)
            ax.plot(ns, [r[f"{key}_expected"] for r in sub], ":", color=colour, lw=1.5, label="expected at N")
            ax.errorbar(ns, ratio, yerr=2 * se, fmt=marker, color=colour, ms=5, capsize=3,
                        label="measured (± 2 s.e.)")
            ax.set_xscale("log")
            ax.set_title(f"{label}, ε = {eps:g} (T = {t:.4g})", fontsize=10)
            ax.set_ylabel("Var(θ − p) / Var(θ_post − p)", fontsize=9)
            ax.grid(True, which="major", alpha=0.3)
            ax.legend(fontsize=8, loc="best")
            if row == len(methods) - 1:
                ax.set_xlabel("number of records N")
    fig.suptitle(
        f"Beta-Bernoulli, p = {TRUE_P:g}: variance of one sample relative to one true-posterior sample "
        f"({sub[0]['repeats']:,} repetitions per point)", fontsize=10,
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def versions() -> dict[str, str]:
    import scipy

    import pymc_dp

    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "pymc_dp": pymc_dp.__version__,
        "platform": platform.platform(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ns", type=int, nargs="+", default=list(DEFAULT_NS), help="data-set sizes N")
    parser.add_argument("--epsilons", type=float, nargs="+", default=list(DEFAULT_EPSILONS),
                        help="epsilon of each OPS sample and each Laplace release (default 1 0.1)")
    parser.add_argument("--repeats", type=int, default=DEFAULT_REPEATS,
                        help=f"repetitions per (N, epsilon) (default {DEFAULT_REPEATS:,})")
    parser.add_argument("--seed", type=int, default=0, help="seed of counts, uniforms and seeded noise (default 0)")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT,
                        help="JSON file for configuration, results, versions and run time "
                             "(default benchmarks/results/ops_efficiency.json)")
    parser.add_argument("--plot", type=Path, default=None, metavar="PATH", help="save a figure of the ratios here")
    args = parser.parse_args(argv)
    if args.repeats < 2 or any(n < 1 for n in args.ns) or any(not (e > 0 and math.isfinite(e)) for e in args.epsilons):
        parser.error("need --repeats >= 2, positive --ns and positive finite --epsilons")
    ns = sorted(set(args.ns))

    start = time.perf_counter()
    rows = run(ns, args.epsilons, args.repeats, args.seed)
    seconds = time.perf_counter() - start

    print(
        f"[FGWC16] Thms 4-5, beta-Bernoulli: p = {TRUE_P:g}, Beta({PRIOR[0]:g}, {PRIOR[1]:g}) prior, OPS truncated "
        f"to [{A0:g}, {1 - A0:g}] (Δ = log 19 = {loglik_sensitivity():.4f}), {args.repeats:,} repetitions per row, "
        f"seed {args.seed}, seeded Laplace noise; ratios of Var(θ − p) to the true posterior's, s.e. by the delta "
        f"method; Laplace limit 1"
    )
    print(format_table(rows))

    ok = True
    for r in rows:
        if r["n"] != ns[-1]:
            continue
        for key, label in (("ops", "OPS"), ("laplace", "Laplace")):
            off = r[f"{key}_ratio"] / r[f"{key}_limit"] - 1.0
            good = abs(off) <= TOLERANCE
            ok &= good
            print(
                f"ε = {r['epsilon']:g}, N = {r['n']:,}: {label} ratio {r[f'{key}_ratio']:.4f} vs limit "
                f"{r[f'{key}_limit']:.4f} ({off:+.2%}, {abs(off) * r[f'{key}_limit'] / r[f'{key}_se']:.1f} s.e.; "
                f"expected at this N {r[f'{key}_expected']:.4f}; target within {TOLERANCE:.0%}: "
                f"{'ok' if good else 'MISSED'})"
            )
    print(f"run time {seconds:.1f} s")

    if args.plot is not None:
        plot(rows, args.plot)
        print(f"plot saved to {args.plot}")
    result = {
        "benchmark": "ops_efficiency",
        "configuration": {
            "p": TRUE_P, "prior": list(PRIOR), "a0": A0, "sensitivity": loglik_sensitivity(), "ns": ns,
            "epsilons": list(args.epsilons), "repeats": args.repeats, "seed": args.seed, "tolerance": TOLERANCE,
            "noise": "seeded (numpy Generator), one laplace_mechanism call per repetition",
            "standard_error": "delta method",
        },
        "results": rows,
        "passed": bool(ok),
        "versions": versions(),
        "seconds": seconds,
    }
    write_results(args.output, result)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
