"""[WM10] Fig. 4: the posterior over the first principal direction at three ε, against the noisy eigenvector.

One synthetic 2-D data set, x ~ N(0, θθᵀ + σ²I) as in [WM10] eq. (8): N = 1 000 records,
θ = 0.4·(cos 30°, sin 30°) (the true direction at 30°, standard deviation 0.4 along it),
σ = 0.1. The declared norm bound is R = 1: :func:`pymc_dp.noisy_second_moment` projects
the rows beyond it onto the unit circle (18 of the 1 000 here; the count goes to the
curator only, and the model does not know about the projection). Its exact second moment
S = Σ x xᵀ is that of the *projected* records, so the "non-private" first principal
direction is the leading eigenvector of that S (0.3° from the truth).

The three default ε take the noise s.d. per entry of S (51, 6, 0.8) from comparable with
S's eigengap (146; a pure-noise 2 × 2 matrix has a typical gap of √6·51 ≈ 125) through the
records' own sampling variation of S (2–6 per entry) to negligible, so the posterior goes
from spread over the half-circle to a couple of degrees.

For each ε in ``--epsilons`` (0.1, 1, 10 by default; k its index) the upper triangle of S is released
``--releases`` times (analytic Gaussian mechanism, δ = 10⁻⁶, sensitivity √2·R², seeded
noise ``rng=1000·k + r``), and for each release:

* the baseline: the leading eigenvector of the noisy (symmetric) matrix;
* inference: :func:`pymc_dp.pca_from_second_moment` (priors at scale R = 1), NUTS with
  ``--chains`` chains of ``--tune`` + ``--draws`` (2 × (500 + 500), ``target_accept=0.9``,
  ``random_seed=r``). θ and −θ are the same axis, so the posterior mean *direction* is the
  leading eigenvector of the posterior mean of θθᵀ (the mean of θ itself would be near 0
  when the chains sit in opposite modes);
* the angle between each of them and the non-private direction, as lines: arccos |u·v|,
  in degrees (so in [0°, 90°]), and the posterior's own spread: the median angle between
  a draw and the posterior mean direction, the width of its central 90 % arc, and whether
  that arc contains the truth and the non-private direction.

The figure (``results/wm10_pca.png``) shows the first release at each ε: the data with
posterior draws of ±θ overlaid ([WM10]'s picture), and the posterior of the angle of θ
modulo 180° as a kernel density on the half-circle, with the truth, the non-private
direction, the noisy eigenvector and the posterior mean direction marked.

    python benchmarks/wm10_pca.py                  # writes results/wm10_pca.{json,md,png} (3–7 min on one core)
    python benchmarks/wm10_pca.py --releases 3     # a quick look
"""

from __future__ import annotations

import argparse
import json
import logging
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
N_RECORDS, TRUE_ANGLE_DEG, SCALE, NOISE, NORM_BOUND, DATA_SEED = 1000, 30.0, 0.4, 0.1, 1.0, 0


def dataset(n: int = N_RECORDS, seed: int = DATA_SEED) -> tuple[np.ndarray, np.ndarray]:
    """The raw records (before projection onto the norm ball) and the true unit direction."""
    rng = np.random.default_rng(seed)
    u = np.array([np.cos(np.radians(TRUE_ANGLE_DEG)), np.sin(np.radians(TRUE_ANGLE_DEG))])
    return rng.normal(size=(n, 1)) * SCALE * u + rng.normal(size=(n, 2)) * NOISE, u


def line_angle(a: np.ndarray, b: np.ndarray) -> float:
    """The angle between the lines along ``a`` and ``b``, in degrees (in [0, 90])."""
    cos = abs(float(a @ b)) / (np.linalg.norm(a) * np.linalg.norm(b))
    return float(np.degrees(np.arccos(min(1.0, cos))))


def leading(matrix: np.ndarray) -> np.ndarray:
    """The unit eigenvector of the largest eigenvalue of a symmetric matrix."""
    return np.linalg.eigh(matrix)[1][:, -1]


def fit(release, *, draws: int, tune: int, chains: int, seed: int,
        target_accept: float = 0.9) -> tuple[np.ndarray, int]:
    """Posterior draws of θ (flattened over chains) and the number of divergences."""
    import pymc as pm

    import pymc_dp as pmdp

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pmdp.pca_from_second_moment(release, prior_scale=NORM_BOUND):
            trace = pm.sample(draws, tune=tune, chains=chains, cores=1, random_seed=seed, target_accept=target_accept,
                              progressbar=False, compute_convergence_checks=False)
    theta = trace.posterior["theta"].values.reshape(-1, release.dimension)
    return theta, int(trace.sample_stats["diverging"].values.sum())


def summarise(theta: np.ndarray) -> tuple[np.ndarray, float, np.ndarray]:
    """Posterior mean direction (leading eigenvector of E[θθᵀ]), median spread and draws' angles mod 180°
    (degrees)."""
    mean_dir = leading(np.einsum("si,sj->ij", theta, theta) / len(theta))
    units = theta / np.linalg.norm(theta, axis=1, keepdims=True)
    spread = float(np.median(np.degrees(np.arccos(np.clip(np.abs(units @ mean_dir), 0.0, 1.0)))))
    angles = np.degrees(np.arctan2(theta[:, 1], theta[:, 0])) % 180.0
    return mean_dir, spread, angles


def arc90(angles: np.ndarray, centre_deg: float, *marks: np.ndarray) -> tuple[float, list[bool]]:
    """Width in degrees of the central 90 % of the angles (mod 180°) around ``centre_deg``, and whether
    each of the directions ``marks`` lies inside that arc."""
    def offset(a):
        return (a - centre_deg + 90.0) % 180.0 - 90.0

    lo, hi = np.percentile(offset(angles), [5, 95])
    inside = [bool(lo <= offset(np.degrees(np.arctan2(v[1], v[0]))) <= hi) for v in marks]
    return float(hi - lo), inside


def angle_density(angles: np.ndarray, mean_dir: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A kernel density of angles (degrees, mod 180°) on a 0.1° grid over [0, 180], wrapped at the ends."""
    centre = float(np.degrees(np.arctan2(mean_dir[1], mean_dir[0])) % 180.0)
    offset = (angles - centre + 90.0) % 180.0 - 90.0
    iqr = np.subtract(*np.percentile(offset, [75, 25]))
    bandwidth = max(0.05, 0.9 * min(offset.std(), iqr / 1.34) * len(offset) ** -0.2)  # Silverman's rule
    grid = np.linspace(0.0, 180.0, 1801)
    diff = (grid[:, None] - angles[None, :] + 90.0) % 180.0 - 90.0
    return grid, np.exp(-0.5 * (diff / bandwidth) ** 2).sum(axis=1)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilons", nargs="+", type=float, default=[0.1, 1.0, 10.0])
    parser.add_argument("--releases", type=int, default=20)
    parser.add_argument("--draws", type=int, default=500)
    parser.add_argument("--tune", type=int, default=500)
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--target-accept", type=float, default=0.9)
    args = parser.parse_args(argv)

    from threadpoolctl import threadpool_limits

    import pymc_dp as pmdp
    from pymc_dp.mechanisms.logistic_regression import ClippedFeaturesWarning

    threadpool_limits(1)
    logging.getLogger("pymc").setLevel(logging.ERROR)
    start = time.perf_counter()
    X, truth = dataset()
    norms = np.linalg.norm(X, axis=1)
    projected = X / np.maximum(1.0, norms / NORM_BOUND)[:, None]
    nonprivate = leading(projected.T @ projected)
    setting = {
        "n_records": N_RECORDS, "true_angle_deg": TRUE_ANGLE_DEG, "theta_norm": SCALE, "sigma": NOISE,
        "norm_bound": NORM_BOUND, "data_seed": DATA_SEED, "rows_projected": int((norms > NORM_BOUND).sum()),
        "nonprivate_angle_deg": float(np.degrees(np.arctan2(nonprivate[1], nonprivate[0])) % 180.0),
        "nonprivate_vs_truth_deg": line_angle(nonprivate, truth),
        "eigengap": float(np.diff(np.linalg.eigvalsh(projected.T @ projected))[0]),
        "mechanism": "gaussian", "delta": 1e-6, "releases": args.releases, "draws": args.draws, "tune": args.tune,
        "chains": args.chains, "target_accept": args.target_accept,
    }
    print(setting, flush=True)
    rows, shown = [], {}
    for k, eps in enumerate(args.epsilons):
        eig_err, post_err, eig_truth, post_truth, spreads, arcs, covered, divergences = [], [], [], [], [], [], [], 0
        for r in range(args.releases):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ClippedFeaturesWarning)
                release = pmdp.noisy_second_moment(X, epsilon=eps, norm_bound=NORM_BOUND, ledger=pmdp.PrivacyLedger(),
                                                   rng=1000 * k + r)
            baseline = leading(release.matrix())
            theta, div = fit(release, draws=args.draws, tune=args.tune, chains=args.chains, seed=r,
                             target_accept=args.target_accept)
            mean_dir, spread, angles = summarise(theta)
            centre = float(np.degrees(np.arctan2(mean_dir[1], mean_dir[0])) % 180.0)
            eig_err.append(line_angle(baseline, nonprivate))
            post_err.append(line_angle(mean_dir, nonprivate))
            eig_truth.append(line_angle(baseline, truth))
            post_truth.append(line_angle(mean_dir, truth))
            spreads.append(spread)
            arc, inside = arc90(angles, centre, truth, nonprivate)
            arcs.append(arc)
            covered.append(inside)
            divergences += div
            if r == 0:
                shown[eps] = dict(theta=theta, angles=angles, baseline=baseline, mean_dir=mean_dir, arc=arc)
        eig_err, post_err = np.array(eig_err), np.array(post_err)
        row = {
            "epsilon": eps, "noise_sd": release.noise_sd,
            "eigenvector_error": [float(eig_err.mean()), float(eig_err.std(ddof=1))],
            "posterior_error": [float(post_err.mean()), float(post_err.std(ddof=1))],
            "posterior_better": int((post_err < eig_err).sum()),
            "eigenvector_vs_truth": [float(np.mean(eig_truth)), float(np.std(eig_truth, ddof=1))],
            "posterior_vs_truth": [float(np.mean(post_truth)), float(np.std(post_truth, ddof=1))],
            "posterior_median_spread": float(np.mean(spreads)),
            "posterior_arc90": float(np.mean(arcs)),
            "arc90_covers_truth": int(sum(c[0] for c in covered)),
            "arc90_covers_nonprivate": int(sum(c[1] for c in covered)),
            "divergences": divergences,
            "per_release": {"eigenvector": eig_err.tolist(), "posterior": post_err.tolist(), "arc90": arcs,
                            "arc90_covers_truth": [c[0] for c in covered]},
        }
        rows.append(row)
        print({k: v for k, v in row.items() if k != "per_release"}, f"{time.perf_counter() - start:.0f} s", flush=True)
    runtime = time.perf_counter() - start
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    (out / "wm10_pca.json").write_text(json.dumps({"setting": setting, "rows": rows, "runtime_s": runtime}, indent=1))
    write_table(setting, rows, runtime)
    figure(X, projected, truth, nonprivate, shown, out / "wm10_pca.png")


def write_table(setting: dict, rows: list[dict], runtime: float) -> None:
    """``results/wm10_pca.md``: angular errors (degrees) against the non-private direction."""
    n = setting["releases"]
    lines = [f"| ε | noise s.d. per entry | noisy eigenvector | posterior mean direction | posterior better "
             f"(of {n}) | posterior's median spread | posterior 90 % arc | arc covers truth / non-private |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        e, p = r["eigenvector_error"], r["posterior_error"]
        lines.append(f"| {r['epsilon']:g} | {r['noise_sd']:.2f} | {e[0]:.2f} ± {e[1]:.2f}° | "
                     f"{p[0]:.2f} ± {p[1]:.2f}° | {r['posterior_better']} | {r['posterior_median_spread']:.2f}° | "
                     f"{r['posterior_arc90']:.1f}° | {r['arc90_covers_truth']} / {r['arc90_covers_nonprivate']} |")
    lines.append("")
    lines.append(f"Angle between lines (mod 180°) to the non-private first principal direction, mean ± s.d. over {n} "
                 f"releases of one data set (N = {setting['n_records']}, eigengap of S = {setting['eigengap']:.0f}); "
                 f"{setting['chains']} chains × {setting['draws']} draws per release; runtime {runtime / 60:.1f} min.")
    (HERE / "results" / "wm10_pca.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def figure(X, projected, truth, nonprivate, shown: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    eps_list = list(shown)
    fig = plt.figure(figsize=(4.0 * len(eps_list), 7.4))
    marks = (("truth", truth, "k", "-"), ("non-private", nonprivate, "tab:green", "--"))
    for i, eps in enumerate(eps_list):
        s = shown[eps]
        ax = fig.add_subplot(2, len(eps_list), i + 1)
        ax.scatter(projected[:, 0], projected[:, 1], s=3, c="0.7", lw=0)
        thetas = s["theta"][np.random.default_rng(0).choice(len(s["theta"]), size=min(1000, len(s["theta"])),
                                                            replace=False)]
        for label, v, c, ls in marks:
            ax.plot([-v[0], v[0]], [-v[1], v[1]], c=c, ls=ls, lw=0.8, label=label)
        ax.plot(np.stack([-thetas[:, 0], thetas[:, 0]]), np.stack([-thetas[:, 1], thetas[:, 1]]), c="tab:blue",
                alpha=0.03, lw=1, zorder=3)
        ax.set_xlim(-1.05, 1.05)
        ax.set_ylim(-1.05, 1.05)
        ax.set_aspect("equal")
        ax.set_title(f"ε = {eps:g}: 1 000 posterior draws of ±θ")
        pax = fig.add_subplot(2, len(eps_list), len(eps_list) + i + 1, projection="polar")
        grid, density = angle_density(s["angles"], s["mean_dir"])
        pax.fill_between(np.radians(grid), 0, density / density.max(), color="tab:blue", alpha=0.45, lw=0, zorder=3)
        for label, v, c, ls in marks + (("noisy eigenvector", s["baseline"], "tab:red", ":"),
                                        ("posterior mean direction", s["mean_dir"], "tab:blue", "-.")):
            a = np.radians(np.degrees(np.arctan2(v[1], v[0])) % 180.0)
            pax.plot([a, a], [0, 1.05], c=c, ls=ls, lw=0.9, label=label)
        pax.set_thetamin(0)
        pax.set_thetamax(180)
        pax.set_ylim(0, 1.05)
        pax.set_yticklabels([])
        pax.text(0.5, 0.18, f"posterior of the angle mod 180°\n(scaled to its peak; 90 % arc {s['arc']:.1f}°)",
                 transform=pax.transAxes, ha="center", va="top", fontsize=9)
    handles, labels = pax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=9, frameon=False)
    fig.suptitle(f"[WM10] Fig. 4: one data set (N = {len(X)}), one Gaussian release per ε (δ = 10⁻⁶, R = 1)")
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
