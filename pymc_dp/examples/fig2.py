"""[FGWC16] Fig. 2: how far one private posterior sample lands from p — Laplace route and OPS.

The experiment (theory notes §5; Foulds et al. 2016, Fig. 2): a beta-Bernoulli
model with true p = 0.1 and privacy ε = 0.1. For each data-set size N and each of
``repeats`` independent repetitions:

1. draw N Bernoulli(p) records;
2. release their sufficient statistic with :func:`pymc_dp.privatize`
   (``family="bernoulli"``: the number of successes, sensitivity 1 under
   replace-one neighbouring with N public, Laplace noise of scale 1/ε = 10,
   projected onto [0, N]);
3. draw ONE sample θ from the conjugate posterior Beta(1 + ŝ, 1 + N − ŝ) given the
   privatised count ŝ (:meth:`~pymc_dp.families.Bernoulli.conjugate_posterior`),
   and one from the non-private posterior Beta(1 + s, 1 + N − s) given the exact
   count s;
4. draw ONE sample from the tempered posterior of "one posterior sample" (OPS,
   [FGWC16] §2.2): the prior truncated to [a₀, 1 − a₀] (a₀ = 0.05), whose
   log-likelihood sensitivity is Δ = log((1 − a₀)/a₀) (:func:`pymc_dp.loglik_sensitivity`),
   tempered to T = max(1, 2Δ/ε) = 58.9 at ε = 0.1: Beta(1 + s/T, 1 + (N − s)/T)
   truncated to [a₀, 1 − a₀], drawn exactly by inversion;
5. record ``|θ − p|`` for all three.

The mean of ``|θ − p|`` over the repetitions (with its standard error) is reported
per N. The OPS error stays far above the non-private one however large N grows
(the tempered posterior is √T wider, [FGWC16] Thm 5: asymptotic relative efficiency
1 + T), and the Laplace curve is below it from N ≈ 30 on, as in the paper. The
Laplace error starts far above the non-private one (at N = 10 the noise,
sd √2·10 ≈ 14 counts, swamps a count of about 1) and falls towards it as N grows:
the noise moves the count by ~10 whatever N is, i.e. p by ~10/N, while the
posterior's own spread shrinks only like 1/√N.

Reproducibility and variance reduction
--------------------------------------
Everything is seeded: for each N, three generators are derived from ``(seed, N)``
— one for the records, one for the Laplace noise (``rng=`` of ``privatize``,
i.e. *seeded* noise, recorded as such in each release's ledger; fine for a
simulation, never for a real release) and one for the posterior draws. The same
seed gives the same table on every run, and the first k repetitions of a run are
the same whatever ``repeats`` is. The two posterior samples of one repetition
share the records and one uniform variate u (each is drawn by inversion,
θ = F⁻¹(u), an exact sample from its posterior; the OPS sample too, with the
truncated inverse CDF): each curve is exactly as in Fig. 2, and their *differences*
are measured with far less Monte Carlo noise.
``gap`` reports the mean ``|θ_private − θ_non-private|``, i.e. how far the noise moved
the sample.

What is vectorised: the records of many repetitions are drawn at once (in blocks
of at most ~4·10⁶ values), the exact counts are one reduction, and the posterior
draws of all repetitions are one call. What is not: ``privatize`` runs once per
repetition (about 0.1 ms), because each repetition is a separate data set with
its own release — exactly as a user would call it.

The exact tempered draw is the distribution the PyMC route samples:
:func:`pymc_agreement` builds the same model the way a user would
(``pm.Bernoulli`` on the records, :func:`pymc_dp.truncate`, :func:`pymc_dp.temper` at
the temperature :func:`pymc_dp.loglik_sensitivity` proves), samples it with NUTS,
and compares the tempered posterior's mean, sd and E|θ − p| with the exact values.

Run ``python -m pymc_dp.examples.fig2`` to print the table and save the
plot (``--help`` for the options). The full configuration (9 sizes × 1000
repetitions) takes a few seconds.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

__all__ = ["run_fig2", "Fig2Result", "plot_fig2", "pymc_agreement", "ops_temperature", "tempered_beta_sample", "DEFAULT_NS", "main"]

#: Data-set sizes of the full run: 10 to 10⁵, two per decade.
DEFAULT_NS = (10, 30, 100, 300, 1000, 3000, 10_000, 30_000, 100_000)
#: At most this many record values are held in memory at once.
_BLOCK_VALUES = 1 << 22


@dataclass(frozen=True, eq=False)
class Fig2Result:
    """The numbers behind the Fig. 2 curves, one entry per data-set size.

    Attributes
    ----------
    ns
        The data-set sizes N.
    private_error, private_se
        Mean ``|θ − p|`` of one sample from the posterior given the privatised count,
        and its standard error (sd / √repeats).
    nonprivate_error, nonprivate_se
        The same for the posterior given the exact count.
    gap
        Mean ``|θ_private − θ_non-private|`` over the repetitions (the two samples share
        their records and their uniform variate, so this is how far the noise moved
        the sample).
    ops_error, ops_se
        Mean ``|θ − p|`` of one OPS sample (tempered, truncated posterior) and its
        standard error.
    a0, temperature
        The OPS truncation [a₀, 1 − a₀] and its temperature T = max(1, 2Δ/ε).
    repeats, p, epsilon, seed, prior
        The configuration (``prior`` is the Beta prior's ``(alpha, beta)``).
    seconds
        Wall-clock time of the run.
    """

    ns: np.ndarray
    private_error: np.ndarray
    private_se: np.ndarray
    nonprivate_error: np.ndarray
    nonprivate_se: np.ndarray
    gap: np.ndarray
    ops_error: np.ndarray
    ops_se: np.ndarray
    repeats: int
    p: float
    epsilon: float
    seed: int
    prior: tuple[float, float] = (1.0, 1.0)
    a0: float = 0.05
    temperature: float = float("nan")
    seconds: float = float("nan")

    @property
    def ratio(self) -> np.ndarray:
        """Private error / non-private error, per N."""
        return self.private_error / self.nonprivate_error

    def rows(self) -> list[dict[str, float]]:
        """One dict per N: ``n``, ``private``, ``private_se``, ``nonprivate``, ``nonprivate_se``, ``ratio``, ``gap``,
        ``ops``, ``ops_se``."""
        return [
            {
                "n": int(n),
                "private": float(a),
                "private_se": float(sa),
                "nonprivate": float(b),
                "nonprivate_se": float(sb),
                "ratio": float(a / b),
                "gap": float(g),
                "ops": float(o),
                "ops_se": float(so),
            }
            for n, a, sa, b, sb, g, o, so in zip(
                self.ns, self.private_error, self.private_se, self.nonprivate_error, self.nonprivate_se, self.gap,
                self.ops_error, self.ops_se,
            )
        ]

    def as_dict(self) -> dict[str, Any]:
        """The result as plain Python lists and numbers (e.g. for JSON)."""
        return {
            "ns": [int(n) for n in self.ns],
            "private_error": self.private_error.tolist(),
            "private_se": self.private_se.tolist(),
            "nonprivate_error": self.nonprivate_error.tolist(),
            "nonprivate_se": self.nonprivate_se.tolist(),
            "gap": self.gap.tolist(),
            "ops_error": self.ops_error.tolist(),
            "ops_se": self.ops_se.tolist(),
            "a0": self.a0,
            "temperature": self.temperature,
            "repeats": self.repeats,
            "p": self.p,
            "epsilon": self.epsilon,
            "seed": self.seed,
            "prior": list(self.prior),
            "seconds": self.seconds,
        }

    def to_markdown(self) -> str:
        """The table as Markdown (the format used in the documentation)."""
        lines = [
            "| N | Laplace: mean \\|θ − p\\| (± s.e.) | OPS: mean \\|θ − p\\| (± s.e.) | non-private: mean \\|θ − p\\| (± s.e.) "
            "| Laplace / non-private | mean \\|θ_Laplace − θ_non-private\\| |",
            "|---:|---:|---:|---:|---:|---:|",
        ]
        for r in self.rows():
            lines.append(
                f"| {r['n']:,} | {r['private']:.4g} ± {r['private_se']:.2g} | {r['ops']:.4g} ± {r['ops_se']:.2g} "
                f"| {r['nonprivate']:.4g} ± "
                f"{r['nonprivate_se']:.2g} | {r['ratio']:.3g} | {r['gap']:.3g} |"
            )
        return "\n".join(lines)

    def __str__(self) -> str:
        head = (
            f"[FGWC16] Fig. 2: beta-Bernoulli, p = {self.p:g}, ε = {self.epsilon:g}, "
            f"Beta({self.prior[0]:g}, {self.prior[1]:g}) prior; OPS truncated at a0 = {self.a0:g}, T = "
            f"{self.temperature:.4g}; {self.repeats} repetitions per N, seed {self.seed}"
        )
        if math.isfinite(self.seconds):
            head += f" ({self.seconds:.1f} s)"
        return head + "\n" + self.to_markdown()


class _Progress:
    """A progress bar on standard error: rich's when available, else plain lines."""

    def __init__(self, enabled: bool, total: int) -> None:
        self.enabled, self.total, self.done = enabled, total, 0
        self._rich: Any = None
        self._task: Any = None
        self._next_print = 0.0
        if not enabled:
            return
        try:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self._rich = Progress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                console=Console(stderr=True), transient=False,
            )
        except ImportError:  # pragma: no cover - rich ships with PyMC
            self._rich = None

    def __enter__(self) -> "_Progress":
        if self.enabled and self._rich is not None:
            self._rich.__enter__()
            self._task = self._rich.add_task("Fig. 2 repetitions", total=self.total)
        return self

    def advance(self, k: int, n: int) -> None:
        if not self.enabled:
            return
        self.done += k
        if self._rich is not None:
            self._rich.update(self._task, advance=k, description=f"Fig. 2, N = {n:,}")
        elif time.monotonic() >= self._next_print or self.done == self.total:
            print(f"Fig. 2: {self.done}/{self.total} repetitions (N = {n:,})", file=sys.stderr, flush=True)
            self._next_print = time.monotonic() + 2.0

    def __exit__(self, *exc: Any) -> None:
        if self.enabled and self._rich is not None:
            self._rich.__exit__(*exc)


def _check_config(ns: Sequence[int], repeats: int, p: float, epsilon: float, seed: int) -> np.ndarray:
    sizes = np.asarray(ns)
    if sizes.ndim != 1 or sizes.size == 0 or not np.issubdtype(sizes.dtype, np.integer) or (sizes < 1).any():
        raise ValueError(f"ns must be a non-empty sequence of positive integers, got {ns!r}.")
    if not isinstance(repeats, (int, np.integer)) or repeats < 2:
        raise ValueError(f"repeats must be an integer ≥ 2 (a standard error needs two), got {repeats!r}.")
    if not 0.0 < float(p) < 1.0:
        raise ValueError(f"p must lie strictly between 0 and 1, got {p!r}.")
    if not (math.isfinite(float(epsilon)) and float(epsilon) > 0):
        raise ValueError(f"epsilon must be a positive number, got {epsilon!r}.")
    if not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}.")
    return sizes.astype(np.int64)


def ops_temperature(epsilon: float, a0: float) -> float:
    """T = max(1, 2Δ/ε) of beta-Bernoulli truncated to [a0, 1 − a0], Δ proven by :func:`pymc_dp.loglik_sensitivity`.

    Uses the library's sensitivity of the Bernoulli family (Δ = log((1 − a0)/a0)),
    not a formula of its own.
    """
    from pymc_dp.families import Bernoulli

    delta, _ = Bernoulli().loglik_sensitivity({"p": (a0, 1.0 - a0)}, {})
    return max(1.0, 2.0 * delta / float(epsilon))


def tempered_beta_sample(
    successes: np.ndarray,
    failures: np.ndarray,
    n: int,
    temperature: float,
    a0: float,
    u: np.ndarray,
    *,
    prior: tuple[float, float] = (1.0, 1.0),
) -> np.ndarray:
    """Exact draws from Beta(α + s/T, β + f/T) truncated to [a0, 1 − a0], by inversion of the uniforms ``u``.

    The likelihood-only tempered beta-Bernoulli posterior ``p(θ) p(X | θ)^{1/T}``
    restricted to the truncation (``s`` successes, ``f`` failures, prior Beta(α, β)).
    ``n`` is unused but documents that s + f = n.
    """
    from scipy.special import betainc, betaincinv

    a = prior[0] + np.asarray(successes, dtype=float) / temperature
    b = prior[1] + np.asarray(failures, dtype=float) / temperature
    lo, hi = betainc(a, b, a0), betainc(a, b, 1.0 - a0)
    theta = betaincinv(a, b, lo + np.asarray(u) * (hi - lo))
    return np.clip(theta, a0, 1.0 - a0)


def run_fig2(
    ns: Sequence[int] = DEFAULT_NS,
    repeats: int = 1000,
    p: float = 0.1,
    epsilon: float = 0.1,
    seed: int = 0,
    progress: bool | None = None,
    *,
    prior: tuple[float, float] = (1.0, 1.0),
    a0: float = 0.05,
) -> Fig2Result:
    """Run the Fig. 2 experiment (see the module docstring) and return its table.

    Parameters
    ----------
    ns
        Data-set sizes N.
    repeats
        Independent repetitions per N (records, release and posterior draws).
    p
        The true success probability.
    epsilon
        ε of each release (one release per repetition, each on its own data set).
    seed
        Seeds the records, the Laplace noise (seeded noise: reproducible, for
        simulation only) and the posterior draws; the same seed gives the same table.
    progress
        Show a progress bar on standard error: ``True``, ``False``, or ``None``
        (default) for "only if standard error is a terminal".
    prior
        ``(alpha, beta)`` of the Beta prior (Beta(1, 1), uniform, in Fig. 2).
    a0
        OPS truncation: p ∈ [a0, 1 − a0] (0.05 in Fig. 2).

    Returns
    -------
    Fig2Result
        Mean ``|θ − p|`` and its standard error per N, private and non-private.
    """
    import pymc_dp as pmdp
    from scipy.special import betaincinv

    sizes = _check_config(ns, repeats, p, epsilon, seed)
    repeats, p, epsilon, seed = int(repeats), float(p), float(epsilon), int(seed)
    a0_prior, b0_prior = (float(v) for v in prior)
    if progress is None:
        progress = bool(getattr(sys.stderr, "isatty", lambda: False)())

    if not 0.0 < float(a0) < 0.5:
        raise ValueError(f"a0 must lie in (0, 0.5), got {a0!r}.")
    a0 = float(a0)
    temperature = ops_temperature(epsilon, a0)
    out = {k: np.empty(sizes.size) for k in ("priv", "priv_se", "np", "np_se", "gap", "ops", "ops_se")}
    t0 = time.perf_counter()
    with _Progress(progress, repeats * sizes.size) as bar:
        for j, n in enumerate(sizes):
            n = int(n)
            data_rng = np.random.default_rng([seed, n, 0])
            noise_rng = np.random.default_rng([seed, n, 1])
            draw_rng = np.random.default_rng([seed, n, 2])
            priv_ab = np.empty((repeats, 2))
            exact_ab = np.empty((repeats, 2))
            rows = max(1, _BLOCK_VALUES // n)
            for start in range(0, repeats, rows):
                block = data_rng.random((min(rows, repeats - start), n)) < p  # Bernoulli(p) records
                exact_counts = block.sum(axis=1)
                for i, records in enumerate(block):
                    stats = pmdp.privatize(records, "bernoulli", epsilon, rng=noise_rng)
                    fam = stats.family
                    post = fam.conjugate_posterior(stats.values, stats.n, alpha=a0_prior, beta=b0_prior)
                    exact = fam.conjugate_posterior(
                        np.array([exact_counts[i]], dtype=float), n, alpha=a0_prior, beta=b0_prior
                    )
                    priv_ab[start + i] = post["alpha"], post["beta"]
                    exact_ab[start + i] = exact["alpha"], exact["beta"]
                bar.advance(len(block), n)
            u = draw_rng.random(repeats)  # one uniform per repetition, shared by both samples
            theta_priv = betaincinv(priv_ab[:, 0], priv_ab[:, 1], u)
            theta_np = betaincinv(exact_ab[:, 0], exact_ab[:, 1], u)
            err_priv, err_np = np.abs(theta_priv - p), np.abs(theta_np - p)
            out["priv"][j], out["priv_se"][j] = err_priv.mean(), err_priv.std(ddof=1) / math.sqrt(repeats)
            out["np"][j], out["np_se"][j] = err_np.mean(), err_np.std(ddof=1) / math.sqrt(repeats)
            out["gap"][j] = np.abs(theta_priv - theta_np).mean()
            theta_ops = tempered_beta_sample(exact_ab[:, 0] - a0_prior, exact_ab[:, 1] - b0_prior, n, temperature, a0, u,
                                             prior=(a0_prior, b0_prior))
            err_ops = np.abs(theta_ops - p)
            out["ops"][j], out["ops_se"][j] = err_ops.mean(), err_ops.std(ddof=1) / math.sqrt(repeats)
    return Fig2Result(
        ns=sizes,
        private_error=out["priv"],
        private_se=out["priv_se"],
        nonprivate_error=out["np"],
        nonprivate_se=out["np_se"],
        gap=out["gap"],
        ops_error=out["ops"],
        ops_se=out["ops_se"],
        repeats=repeats,
        p=p,
        epsilon=epsilon,
        seed=seed,
        prior=(a0_prior, b0_prior),
        a0=a0,
        temperature=temperature,
        seconds=time.perf_counter() - t0,
    )


def pymc_agreement(
    ns: Sequence[int] = (30, 1000, 30_000),
    data_sets: int = 2,
    p: float = 0.1,
    epsilon: float = 0.1,
    a0: float = 0.05,
    seed: int = 0,
    draws: int = 2000,
    chains: int = 2,
) -> list[dict[str, float]]:
    """The PyMC route samples the same tempered posterior as the exact draws of :func:`run_fig2`.

    For each N and each of ``data_sets`` seeded data sets: an ordinary PyMC model
    (``p ~ Beta(1, 1)``, ``pm.Bernoulli("y", p, observed=records)``) is truncated with
    :func:`pymc_dp.truncate`, its sensitivity proven by :func:`pymc_dp.loglik_sensitivity`,
    tempered with :func:`pymc_dp.temper` at T = max(1, 2Δ/ε), and sampled with NUTS
    (``draws`` × ``chains``). Returns one row per data set with the MCMC and exact
    values of the tempered posterior's mean, sd and E|θ − p| (exact: numerical
    integration of the truncated Beta), and the MCMC effective sample size.
    """
    import pymc as pm
    from scipy import integrate, stats

    import pymc_dp as pmdp

    rows = []
    for n in ns:
        for k in range(data_sets):
            records = (np.random.default_rng([seed, int(n), 10 + k]).random(int(n)) < p).astype(np.int8)
            with pm.Model() as model:
                theta = pm.Beta("p", 1.0, 1.0)
                pm.Bernoulli("y", theta, observed=records)
            truncated = pmdp.truncate(model, {"p": (a0, 1.0 - a0)})
            temperature = pmdp.loglik_sensitivity(truncated).temperature(epsilon)
            tempered = pmdp.temper(truncated, temperature)
            idata = pm.sample(
                draws, tune=1000, chains=chains, cores=1, model=tempered, random_seed=seed * 1_000_003 + int(n) * 31 + k,
                progressbar=False, compute_convergence_checks=False,
            )
            draws_ = idata.posterior["p"].values.ravel()
            s = int(records.sum())
            dist = stats.beta(1.0 + s / temperature, 1.0 + (n - s) / temperature)
            mass = dist.cdf(1.0 - a0) - dist.cdf(a0)

            def moment(f: Any) -> float:
                pts = sorted({a0, min(max(p, a0), 1 - a0), 1.0 - a0})
                return sum(integrate.quad(lambda t: f(t) * dist.pdf(t), lo, hi, limit=200)[0]
                           for lo, hi in zip(pts[:-1], pts[1:])) / mass

            mean = moment(lambda t: t)
            import arviz as az

            rows.append({
                "n": int(n), "data_set": k, "successes": s, "temperature": temperature,
                "mcmc_mean": float(draws_.mean()), "exact_mean": float(mean),
                "mcmc_sd": float(draws_.std()), "exact_sd": math.sqrt(float(moment(lambda t: (t - mean) ** 2))),
                "mcmc_abs_error": float(np.abs(draws_ - p).mean()), "exact_abs_error": float(moment(lambda t: abs(t - p))),
                "ess": float(az.ess(idata, var_names=["p"])["p"]),
            })
    return rows


def plot_fig2(result: Fig2Result, ax: Any = None) -> Any:
    """Plot both curves (log-log, ±2 standard errors) on ``ax`` (a new figure if None); return the axes."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6.5, 4.2))
    curves = [
        ("Laplace mechanism (private)", result.private_error, result.private_se, "C0", "-o"),
        (f"OPS (a0 = {result.a0:g}, T = {result.temperature:.3g})", result.ops_error, result.ops_se, "C3", "-^"),
        ("non-private", result.nonprivate_error, result.nonprivate_se, "black", "--s"),
    ]
    for label, mean, se, colour, style in curves:
        ax.plot(result.ns, mean, style, color=colour, ms=4, label=label)
        ax.fill_between(result.ns, np.maximum(mean - 2 * se, 1e-12), mean + 2 * se, color=colour, alpha=0.2, lw=0)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("number of records N")
    ax.set_ylabel("mean |θ − p| of one posterior sample")
    ax.set_title(f"Beta-Bernoulli, p = {result.p:g}, ε = {result.epsilon:g} ({result.repeats} repetitions)")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend()
    return ax


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: run the experiment, print the table, save the plot. Returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m pymc_dp.examples.fig2",
        description="[FGWC16] Fig. 2: mean |sample - p| against N, Laplace route, OPS and non-private.",
    )
    parser.add_argument("--ns", type=int, nargs="+", default=list(DEFAULT_NS), help="data-set sizes N")
    parser.add_argument("--repeats", type=int, default=1000, help="repetitions per N (default 1000)")
    parser.add_argument("--p", type=float, default=0.1, help="true success probability (default 0.1)")
    parser.add_argument("--epsilon", type=float, default=0.1, help="epsilon of each release (default 0.1)")
    parser.add_argument("--seed", type=int, default=0, help="seed of records, seeded noise and draws (default 0)")
    parser.add_argument("--a0", type=float, default=0.05, help="OPS truncation p in [a0, 1 - a0] (default 0.05)")
    parser.add_argument("--output", type=Path, default=Path("fig2.png"), help="where to save the plot")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    try:
        result = run_fig2(
            args.ns, args.repeats, args.p, args.epsilon, args.seed, progress=False if args.no_progress else None,
            a0=args.a0,
        )
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(result)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ax = plot_fig2(result)
    ax.figure.tight_layout()
    args.output.parent.mkdir(parents=True, exist_ok=True)
    ax.figure.savefig(args.output, dpi=120)
    plt.close(ax.figure)
    print(f"plot saved to {args.output}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
