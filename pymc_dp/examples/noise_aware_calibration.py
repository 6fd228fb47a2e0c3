"""Calibration of noise-aware vs plug-in posteriors for a privatised beta-Bernoulli count.

For each setting (n records, privacy ε) and each of ``repeats`` simulated data
sets: draw the true p from the Beta(1, 1) prior, draw n Bernoulli(p) records,
release their count with :func:`pymc_dp.privatize` (seeded noise, for a
reproducible study), and compute two posteriors for p on a fine grid:

* **noise-aware**: the likelihood of the value actually released, the true count
  summed out against the Laplace noise (the exact sum of
  :func:`pymc_dp.families._noise_aware.laplace_marginal_count_logp`, the same
  PyTensor expression ``observe_stats(..., noise_aware=True)`` uses);
* **plug-in**: the projected noisy count treated as exact.

The figure of merit is the fraction of 90 % central credible intervals that cover
the true p. Drawing p from the prior makes this a simulation-based calibration
check: a correct posterior covers 90 % of the time whatever n and ε (at one fixed
p, Bayesian intervals need not). Run ``python -m pymc_dp.examples.noise_aware_calibration``.
"""

from __future__ import annotations

import argparse
import math
from typing import Sequence

import numpy as np

__all__ = ["beta_bernoulli_coverage", "SETTINGS", "main"]

#: (n, ε) settings of the study.
SETTINGS = ((50, 0.1), (50, 1.0), (500, 0.1), (500, 1.0))
_GRID = np.linspace(0.0005, 0.9995, 1000)


def _interval(logp: np.ndarray, level: float = 0.9) -> tuple[float, float]:
    w = np.exp(logp - logp.max())
    cdf = np.cumsum(w / w.sum())
    tail = (1 - level) / 2
    return float(_GRID[np.searchsorted(cdf, tail)]), float(_GRID[np.searchsorted(cdf, 1 - tail)])


def beta_bernoulli_coverage(n: int, epsilon: float, repeats: int = 200, seed: int = 0) -> tuple[float, float]:
    """Coverage of 90 % intervals: ``(noise-aware, plug-in)`` over ``repeats`` data sets."""
    import pytensor
    import pytensor.tensor as pt

    import pymc_dp as pmdp
    from pymc_dp.families._noise_aware import laplace_marginal_count_logp

    z, p = pt.dscalar("z"), pt.dvector("p")
    exact = pytensor.function([z, p], laplace_marginal_count_logp(z, n, p, 1.0 / epsilon, method="exact"))
    rng = np.random.default_rng([seed, n, int(round(epsilon * 1000))])
    hits = np.zeros(2)
    for _ in range(repeats):
        p_true = rng.uniform()
        stats = pmdp.privatize(rng.binomial(1, p_true, size=n), "bernoulli", epsilon, rng=rng)
        k = stats.values[0]
        for j, logp in enumerate((exact(float(stats.noisy[0]), _GRID), k * np.log(_GRID) + (n - k) * np.log1p(-_GRID))):
            lo, hi = _interval(logp)
            hits[j] += lo <= p_true <= hi
    return float(hits[0] / repeats), float(hits[1] / repeats)


def main(argv: Sequence[str] | None = None) -> int:
    """Print the coverage table (and save a bar chart with ``--plot PATH``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--plot", default=None, help="save a bar chart to this path")
    args = parser.parse_args(argv)
    rows = [(n, e, *beta_bernoulli_coverage(n, e, args.repeats, args.seed)) for n, e in SETTINGS]
    se = math.sqrt(0.9 * 0.1 / args.repeats)
    print(f"Coverage of 90% credible intervals, beta-Bernoulli, {args.repeats} data sets each (s.e. ≈ {se:.3f})")
    print("| n | ε | noise-aware | plug-in |\n|---:|---:|---:|---:|")
    for n, e, aware, plug in rows:
        print(f"| {n} | {e:g} | {aware:.3f} | {plug:.3f} |")
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 3.2))
        x = np.arange(len(rows))
        ax.bar(x - 0.2, [r[2] for r in rows], 0.4, label="noise-aware")
        ax.bar(x + 0.2, [r[3] for r in rows], 0.4, label="plug-in")
        ax.axhspan(0.85, 0.95, color="grey", alpha=0.2, label="0.85–0.95")
        ax.axhline(0.9, color="k", lw=1)
        ax.set_xticks(x, [f"n={n}\nε={e:g}" for n, e, *_ in rows])
        ax.set_ylabel("coverage of 90% intervals")
        ax.set_ylim(0, 1)
        ax.legend(loc="lower right")
        fig.tight_layout()
        fig.savefig(args.plot, dpi=120)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
