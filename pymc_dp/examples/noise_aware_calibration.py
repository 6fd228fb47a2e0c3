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
from typing import Any, Sequence

import numpy as np

__all__ = [
    "beta_bernoulli_coverage",
    "normal_coverage",
    "regression_coverage",
    "normal_model",
    "regression_model",
    "run_study",
    "format_table",
    "plot_coverage",
    "SETTINGS",
    "NORMAL_SETTINGS",
    "REGRESSION_SETTINGS",
    "STUDIES",
    "main",
]

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


def _draws_interval(draws: np.ndarray, level: float = 0.9) -> tuple[float, float]:
    tail = (1 - level) / 2
    lo, hi = np.quantile(np.ravel(draws), [tail, 1 - tail])
    return float(lo), float(hi)


def _release(*args: Any, **kwargs: Any) -> Any:
    """``pmdp.privatize`` without the curator's clipping warning (a rare clip is part of the study)."""
    import warnings

    import pymc_dp as pmdp
    from pymc_dp.families import ClippedRecordsWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClippedRecordsWarning)
        return pmdp.privatize(*args, **kwargs)


def _fit(model: Any, seed: int, draws: int, step: Any = None) -> Any:
    """NUTS draws (2 chains); ``step``, a NUTS step compiled once for ``model``, is reused (tuning resets per chain)."""
    import pymc as pm

    with model:
        return pm.sample(
            draws,
            tune=draws,
            chains=2,
            cores=1,
            random_seed=seed,
            step=step,
            progressbar=False,
            compute_convergence_checks=False,
            **({} if step is not None else {"target_accept": 0.9}),
        ).posterior


def _compiled_nuts(model: Any) -> Any:
    """One NUTS step for ``model`` (target acceptance 0.9), compiled once for every data set of a study."""
    import pymc as pm

    with model:
        return pm.NUTS(target_accept=0.9)


#: Normal study: σ² ~ InvGamma(10, 9) (mean 1), μ | σ² ~ Normal(0, σ²/4), bounds [−5, 5]
#: (clipping is rare: the records are modelled unclipped).
NORMAL_PRIOR = {"alpha0": 10.0, "beta0": 9.0, "mu0": 0.0, "kappa0": 4.0}
NORMAL_BOUNDS = (-5.0, 5.0)
NORMAL_SETTINGS = ((100, 1.0), (1000, 1.0))


def _noise_aware_term(name: str, family: Any, params: dict[str, Any], released: Any, n: int, scale: float) -> Any:
    """The likelihood ``observe_stats(name, ..., noise_aware=True)`` builds, with the release as a data container.

    Same family moments, same latent noise mixing (none for two numbers), same density
    (:func:`~pymc_dp.families._noise_aware.clt_noise_aware_logp`); only the released
    vector is a ``pm.Data`` container instead of a constant, so that one compiled model
    serves every simulated data set (``pm.set_data``) instead of compiling 200 models.
    Tested to equal the ``observe_stats`` model's log density.
    """
    import pymc as pm

    from pymc_dp.families._noise_aware import clt_noise_aware_logp
    from pymc_dp.model.observe import noise_mixing_name

    size = family.noise_mixing_size(int(released.get_value().size), n)
    mixing = pm.Exponential(noise_mixing_name(name), 1.0, shape=size) if size else None
    mean, var = family.record_moments(params)
    return pm.Potential(name, clt_noise_aware_logp(family.name, released, n, scale, "replace", mean, var, mixing))


def normal_model(n: int, epsilon: float, released: np.ndarray | None = None) -> Any:
    """The study's noise-aware Normal model (prior :data:`NORMAL_PRIOR`), the release in ``pm.Data("released")``."""
    import pymc as pm
    import pytensor.tensor as pt

    from pymc_dp.families import Normal

    from pymc_dp.families.release_design import designed_noise_aware_logp

    pr = NORMAL_PRIOR
    family = Normal()
    # the release is centred and ε divided (pymc_dp.families.release_design): z/b is the data container
    design = family.release_design({"x": NORMAL_BOUNDS}, "replace")
    scale = design.sensitivity / epsilon
    with pm.Model() as model:
        z = pm.Data("released", np.zeros(2) if released is None else np.asarray(released, dtype=float) / scale)
        s2 = pm.InverseGamma("sigma2", pr["alpha0"], pr["beta0"])
        m = pm.Normal("mu", pr["mu0"], pt.sqrt(s2 / pr["kappa0"]))
        params = {"mu": m, "sigma": pt.sqrt(s2)}
        pm.Potential("x", designed_noise_aware_logp(family, design, n, scale, "replace", {"x": NORMAL_BOUNDS}, params, z))
    return model


def normal_coverage(
    n: int, epsilon: float, repeats: int = 200, seed: int = 0, draws: int = 500
) -> dict[str, tuple[float, float]]:
    """Coverage of 90 % intervals for μ and σ of a Normal with both unknown: ``{param: (noise-aware, plug-in)}``.

    Each data set: (μ, σ²) from the Normal-Inverse-Gamma prior :data:`NORMAL_PRIOR`,
    n records, ``(Σx, Σx²)`` released at ε. Noise-aware: NUTS on the likelihood of
    ``observe_stats(..., noise_aware=True)`` (bivariate CLT convolved with the noise;
    see :func:`normal_model`). Plug-in: the exact conjugate posterior from the
    projected statistics.
    """
    import pymc as pm
    from scipy import stats as sps

    from pymc_dp.families import Normal

    pr = NORMAL_PRIOR
    rng = np.random.default_rng([seed, n, int(round(epsilon * 1000)), 2])
    model = normal_model(n, epsilon)
    step = _compiled_nuts(model)
    hits = {"mu": np.zeros(2), "sigma": np.zeros(2)}
    for rep in range(repeats):
        sigma2 = 1.0 / rng.gamma(pr["alpha0"], 1.0 / pr["beta0"])
        mu = rng.normal(pr["mu0"], math.sqrt(sigma2 / pr["kappa0"]))
        x = rng.normal(mu, math.sqrt(sigma2), size=n)
        stats = _release(x, "normal", epsilon, bounds={"x": NORMAL_BOUNDS}, rng=rng)
        with model:
            pm.set_data({"released": stats.released / stats.scale})
        post = _fit(model, seed * 100_003 + rep, draws, step)
        aware = {"mu": _draws_interval(post["mu"].values), "sigma": _draws_interval(np.sqrt(post["sigma2"].values))}
        conj = Normal().conjugate_posterior(stats.values, n, **{k: pr[k] for k in ("mu0", "kappa0", "alpha0", "beta0")})
        t = sps.t(2 * conj["alpha"], conj["mu"], math.sqrt(conj["beta"] / (conj["alpha"] * conj["kappa"])))
        s2_lo, s2_hi = sps.invgamma(conj["alpha"], scale=conj["beta"]).ppf([0.05, 0.95])
        plug = {"mu": tuple(t.ppf([0.05, 0.95])), "sigma": (math.sqrt(s2_lo), math.sqrt(s2_hi))}
        for name, true in (("mu", mu), ("sigma", math.sqrt(sigma2))):
            hits[name][0] += aware[name][0] <= true <= aware[name][1]
            hits[name][1] += plug[name][0] <= true <= plug[name][1]
    return {k: (float(v[0] / repeats), float(v[1] / repeats)) for k, v in hits.items()}


#: Regression study (y = βx + e, one feature, no intercept): x ~ Normal(0, σₓ²) with
#: σₓ ~ U(0.15, 0.25) (a centred feature: without an intercept only E[x²] is released, so
#: a free mean of x would be barely identified and slow NUTS down); σ² ~ InvGamma(10, 0.2025) (σ ≈ 0.15);
#: β | σ² ~ Normal(0, σ²/0.09) (sd ≈ 0.5); bounds x ∈ [−1, 1], y ∈ [−2, 2].
REGRESSION_PRIOR = {"alpha0": 10.0, "beta0": 0.2025, "precision0": 0.09, "x_sigma": (0.15, 0.25)}
REGRESSION_BOUNDS = {"x": (-1.0, 1.0), "y": (-2.0, 2.0)}
REGRESSION_SETTINGS = ((1000, 0.1), (10_000, 1.0))


def regression_model(n: int, epsilon: float, released: np.ndarray | None = None) -> Any:
    """The study's noise-aware regression model (prior :data:`REGRESSION_PRIOR`), the release in ``pm.Data``."""
    import pymc as pm
    import pytensor.tensor as pt

    from pymc_dp.families import LinearRegression

    pr = REGRESSION_PRIOR
    family = LinearRegression(n_features=1)
    scale = family.sensitivity(REGRESSION_BOUNDS, "replace") / epsilon
    with pm.Model() as model:
        z = pm.Data("released", np.zeros(3) if released is None else np.asarray(released, dtype=float))
        s2 = pm.InverseGamma("sigma2", pr["alpha0"], pr["beta0"])
        b = pm.Normal("beta", 0.0, pt.sqrt(s2 / pr["precision0"]))
        xs = pm.Uniform("x_sigma", *pr["x_sigma"])
        params = {"beta": b, "sigma": pt.sqrt(s2), "x_mu": 0.0, "x_sigma": xs}
        _noise_aware_term("xy", family, params, z, n, scale)
    return model


def regression_coverage(
    n: int, epsilon: float, repeats: int = 200, seed: int = 0, draws: int = 500
) -> dict[str, tuple[float, float]]:
    """Coverage of 90 % intervals for the slope β of a 1-D regression: ``{"beta": (noise-aware, plug-in)}``.

    Each data set: all parameters from :data:`REGRESSION_PRIOR`, n records (x, y),
    ``(Σx², Σxy, Σy²)`` released at ε. Noise-aware: NUTS with the x model
    (``x_mu = 0``, ``x_sigma`` a parameter) and latent noise mixing
    (:func:`regression_model`). Plug-in: the exact conjugate (Normal-Inverse-Gamma)
    posterior from the projected statistics.
    """
    import pymc as pm
    from scipy import stats as sps

    from pymc_dp.families import LinearRegression

    pr = REGRESSION_PRIOR
    rng = np.random.default_rng([seed, n, int(round(epsilon * 1000)), 3])
    model = regression_model(n, epsilon)
    step = _compiled_nuts(model)
    hits = np.zeros(2)
    for rep in range(repeats):
        sigma2 = 1.0 / rng.gamma(pr["alpha0"], 1.0 / pr["beta0"])
        beta = rng.normal(0.0, math.sqrt(sigma2 / pr["precision0"]))
        x = rng.normal(0.0, rng.uniform(*pr["x_sigma"]), size=n)
        y = beta * x + rng.normal(0.0, math.sqrt(sigma2), size=n)
        stats = _release(
            LinearRegression.stack(x, y), "linear_regression", epsilon, n_features=1, bounds=REGRESSION_BOUNDS, rng=rng
        )
        with model:
            pm.set_data({"released": stats.noisy})
        post = _fit(model, seed * 100_003 + rep, draws, step)
        aware = _draws_interval(post["beta"].values)
        conj = LinearRegression(n_features=1).conjugate_posterior(
            stats.values, n, precision0=pr["precision0"], alpha0=pr["alpha0"], beta0=pr["beta0"]
        )
        scale = math.sqrt(conj["beta"] / conj["alpha"] / float(conj["precision"][0, 0]))
        plug = sps.t(2 * conj["alpha"], float(conj["mean"][0]), scale).ppf([0.05, 0.95])
        hits[0] += aware[0] <= beta <= aware[1]
        hits[1] += plug[0] <= beta <= plug[1]
    return {"beta": (float(hits[0] / repeats), float(hits[1] / repeats))}


STUDIES = ("beta_bernoulli", "normal", "regression")


def run_study(study: str, repeats: int = 200, seed: int = 0) -> list[dict[str, Any]]:
    """Every setting of one study: rows ``{study, n, epsilon, parameter, noise_aware, plug_in, repeats}``."""
    if study == "beta_bernoulli":
        runs = [(n, e, {"p": beta_bernoulli_coverage(n, e, repeats, seed)}) for n, e in SETTINGS]
    elif study == "normal":
        runs = [(n, e, normal_coverage(n, e, repeats, seed)) for n, e in NORMAL_SETTINGS]
    elif study == "regression":
        runs = [(n, e, regression_coverage(n, e, repeats, seed)) for n, e in REGRESSION_SETTINGS]
    else:
        raise ValueError(f"study must be one of {STUDIES}, got {study!r}.")
    return [
        {"study": study, "n": n, "epsilon": e, "parameter": k, "noise_aware": v[0], "plug_in": v[1], "repeats": repeats}
        for n, e, cov in runs
        for k, v in cov.items()
    ]


def format_table(rows: Sequence[dict[str, Any]]) -> str:
    """A Markdown table of coverage rows."""
    lines = ["| study | n | ε | parameter | noise-aware | plug-in |", "|---|---:|---:|---|---:|---:|"]
    for r in rows:
        lines.append(
            f"| {r['study']} | {r['n']} | {r['epsilon']:g} | {r['parameter']} | {r['noise_aware']:.3f} | "
            f"{r['plug_in']:.3f} |"
        )
    return "\n".join(lines)


def plot_coverage(rows: Sequence[dict[str, Any]], path: str) -> None:
    """Bar chart of noise-aware vs plug-in coverage for every row, with the 0.85–0.95 band."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(6.0, 0.85 * len(rows) + 1.5), 4.0))
    x = np.arange(len(rows))
    aware = np.array([r["noise_aware"] for r in rows])
    # Two binomial standard errors of a calibrated method's coverage, √(0.9·0.1/repeats).
    band = 2 * np.sqrt(0.09 / np.array([r["repeats"] for r in rows]))
    ax.bar(x - 0.2, aware, 0.4, yerr=band, capsize=3, label="noise-aware (±2 s.e.)")
    ax.bar(x + 0.2, [r["plug_in"] for r in rows], 0.4, label="plug-in")
    ax.axhspan(0.85, 0.95, color="grey", alpha=0.2, label="0.85–0.95")
    ax.axhline(0.9, color="k", lw=1)
    names = {"beta_bernoulli": "Beta-Bern.", "normal": "Normal", "regression": "Regression"}
    labels = [f"{names[r['study']]}\n{r['parameter']}\nn={r['n']}, ε={r['epsilon']:g}" for r in rows]
    ax.set_xticks(x, labels, fontsize=7)
    ax.set_ylabel("coverage of 90% intervals")
    ax.set_ylim(0, 1)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3, fontsize=8, frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    """Run studies, print the coverage table; ``--json`` saves the rows, ``--plot`` a bar chart."""
    import json

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--study", choices=STUDIES + ("all",), default="beta_bernoulli")
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None, help="save the rows to this JSON file")
    parser.add_argument("--plot", default=None, help="save a bar chart to this path")
    args = parser.parse_args(argv)
    studies = STUDIES if args.study == "all" else (args.study,)
    rows = [row for study in studies for row in run_study(study, args.repeats, args.seed)]
    se = math.sqrt(0.9 * 0.1 / args.repeats)
    print(f"Coverage of 90% credible intervals, {args.repeats} data sets each (s.e. ≈ {se:.3f})")
    print(format_table(rows))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(rows, fh, indent=1)
    if args.plot:
        plot_coverage(rows, args.plot)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
