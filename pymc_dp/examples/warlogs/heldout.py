"""The held-out experiment of [FGWC16] §5 (their Fig. 6): Laplace vs OPS vs non-private.

For each split, a uniform random 10 % of the region-months is held out. Naive Bayes (the
1-state model) and the HMM (K states) are fitted on the rest by each route, and scored
by the log-likelihood of the held-out records, per record:

* **non-private**: the exact training counts; average over the kept draws;
* **Laplace**: the model's sufficient statistics privatised once (ε/5 per feature,
  sensitivity 2, scale 10/ε per count). For the HMM these are the per-cell counts
  ``n[r, t, d, j]``; naive Bayes needs only their totals over the training cells, one
  noisy number per feature value. Each release is fitted twice, both post-processing:

  - **plug-in** ([FGWC16]): the noisy counts used as if exact, clamped at 0 cell by
    cell (:func:`~pymc_dp.examples.warlogs.hmm.gibbs_hmm`);
  - **noise-aware**: the sampler knows each count carries Laplace noise of that scale
    (:func:`~pymc_dp.examples.warlogs.hmm.gibbs_hmm_noise_aware`);

  both averaged over the kept draws;
* **OPS**: the exact counts, emissions truncated at ``a₀ = 1/(M K_d)`` and the
  likelihood tempered to ``T = max(1, 2Δ/ε)`` with
  ``Δ = Σ_d log((1 − (K_d − 1) a₀) / a₀)`` (the half-range of one record's
  log-likelihood change, :func:`~pymc_dp.examples.warlogs.ops.ops_temperature`); only the final draw is used, and
  the guarantee assumes the chain has converged.

A held-out cell's score sums its state out given the draw's neighbouring states
(:func:`heldout_loglik`). The evaluation reads the true
held-out counts: it is the experimenter's measurement of accuracy, not a release.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from ._numba import require
from .data import feature_counts, generate
from .hmm import HMMFit, gibbs_hmm, gibbs_hmm_noise_aware
from .ops import ops_temperature
from .privacy import COUNT_SENSITIVITY

__all__ = ["EPSILONS", "ops_temperature", "heldout_mask", "heldout_loglik", "run_heldout", "summarize", "format_table", "paired_differences", "format_differences", "plot_heldout"]

#: The privacy levels of the experiment (total ε over the five features).
EPSILONS = (0.1, 0.3, 1.0, 3.0, 10.0)
#: The private routes compared, in table order.
ROUTES = ("Laplace plug-in", "Laplace noise-aware", "OPS")


def heldout_mask(regions: int, months: int, fraction: float, rng: np.random.Generator) -> np.ndarray:
    """A boolean ``(R, T)`` mask of ``round(fraction · R · T)`` region-months drawn uniformly without replacement."""
    cells = regions * months
    chosen = rng.choice(cells, size=int(round(fraction * cells)), replace=False)
    mask = np.zeros(cells, dtype=bool)
    mask[chosen] = True
    return mask.reshape(regions, months)


def heldout_loglik(fit: HMMFit, test_counts: Sequence[np.ndarray], mask: np.ndarray, final_only: bool = False) -> float:
    """Held-out records' log predictive likelihood per record, averaged over draws (or the final one).

    For each draw and held-out cell (r, t), the cell's state is summed out given the
    draw's states of its neighbours in time: ``p(s = k) ∝ A[s_{t−1}, k] A[k, s_{t+1}]``
    (``π_k`` at t = 0; no right factor at the last month), and the cell scores
    ``log Σ_k p(s = k) Π_{d,j} θ_{k,d,j}^{n[r,t,d,j]}``. Summing the state out keeps an
    unlikely jump to an unused state (whose emissions are prior draws) from dominating
    the score.
    """
    records = float(test_counts[0][mask].sum())
    rows, cols = np.nonzero(mask)
    months = mask.shape[1]
    draws = [fit.states.shape[0] - 1] if final_only else range(fit.states.shape[0])
    values = []
    for i in draws:
        log_a, log_pi, states = fit.log_transitions[i], fit.log_initial[i], fit.states[i]
        left = np.where(cols > 0, log_a[states[rows, np.maximum(cols - 1, 0)]].T, log_pi[:, None]).T
        right = np.where(cols < months - 1, log_a[:, states[rows, np.minimum(cols + 1, months - 1)]], 0.0).T
        log_prior = left + right
        log_prior -= np.logaddexp.reduce(log_prior, axis=1, keepdims=True)
        emission = sum(c[rows, cols] @ lt[i].T for c, lt in zip(test_counts, fit.log_emissions))  # (cells, K)
        values.append(np.logaddexp.reduce(log_prior + emission, axis=1).sum() / records)
    return float(np.mean(values))


def _laplace_counts(train: Sequence[np.ndarray], epsilon: float, mask: np.ndarray, rng: np.random.Generator) -> list[np.ndarray]:
    """The training counts privatised at total ε (seeded noise: a study, not a publication); held-out cells dropped."""
    from ...accounting import PrivacyLedger
    from .privacy import privatize_counts

    noisy = privatize_counts([c.astype(np.int64) for c in train], epsilon / len(train), ledger=PrivacyLedger(), rng=rng)
    for c in noisy:
        c[mask] = 0.0
    return noisy


def _naive_bayes(fit: HMMFit, grid: tuple[int, int]) -> HMMFit:
    """A fit on the one-cell grid of totals, spread over the (R, T) grid (naive Bayes has one state everywhere)."""
    draws = fit.states.shape[0]
    return HMMFit(np.zeros((draws, *grid), dtype=np.int64), fit.log_emissions, fit.log_transitions, fit.log_initial, fit.log_likelihood)


def _laplace_fits(
    train: Sequence[np.ndarray], k: int, epsilon: float, mask: np.ndarray, rng: np.random.Generator, iterations: int, burn_in: int, seed: int
) -> dict[str, HMMFit]:
    """The Laplace route's two fits, plug-in and noise-aware, on one release at total ε.

    Naive Bayes (K = 1) needs only the training totals ``Σ_{r,t} n[r, t, d, j]``, its
    sufficient statistics, so its release is those (sensitivity 2 per feature, like the
    per-cell tensors, but one noisy number per value instead of one per cell). The HMM
    needs the per-cell counts.
    """
    scale = COUNT_SENSITIVITY * len(train) / epsilon  # ε/5 per feature
    grid = mask.shape
    if k == 1:
        totals = [c.sum(axis=(0, 1))[None, None, :] for c in train]
        noisy = _laplace_counts(totals, epsilon, np.zeros((1, 1), dtype=bool), rng)
        return {
            "Laplace plug-in": _naive_bayes(gibbs_hmm(noisy, 1, iterations, burn_in, seed=seed), grid),
            "Laplace noise-aware": _naive_bayes(gibbs_hmm_noise_aware(noisy, scale, 1, iterations, burn_in, seed=seed), grid),
        }
    noisy = _laplace_counts(train, epsilon, mask, rng)
    return {
        "Laplace plug-in": gibbs_hmm(noisy, k, iterations, burn_in, seed=seed),
        "Laplace noise-aware": gibbs_hmm_noise_aware(noisy, scale, k, iterations, burn_in, observed=~mask, seed=seed),
    }


def run_heldout(
    preset: str = "iraq",
    *,
    epsilons: Sequence[float] = EPSILONS,
    num_states: int = 10,
    splits: int = 3,
    iterations: int = 200,
    burn_in: int = 100,
    multiplier: float = 10.0,
    fraction: float = 0.1,
    seed: int = 0,
    progress: bool = False,
) -> list[dict[str, Any]]:
    """Run the experiment; one row per (split, model, route, ε) with the held-out log-likelihood per record.

    Raises
    ------
    ImportError
        Before any fit, if numba (the ``warlogs`` extra) is missing: the noise-aware fits need it.
    """
    require("the held-out experiment (its noise-aware fits)")
    logs = generate(preset, seed=seed)
    counts = feature_counts(logs)
    rng = np.random.default_rng([seed, 1])
    rows: list[dict[str, Any]] = []
    jobs = splits * 2 * (1 + len(ROUTES) * len(epsilons))
    bar = None
    if progress:
        from rich.progress import Progress

        bar = Progress()
        bar.start()
        task = bar.add_task(f"held-out ({preset})", total=jobs)
    try:
        for split in range(splits):
            mask = heldout_mask(*counts[0].shape[:2], fraction, rng)
            train = [np.where(mask[..., None], 0, c) for c in counts]
            test = [np.where(mask[..., None], c, 0) for c in counts]
            for model, k in (("naive Bayes", 1), ("HMM", num_states)):
                fit_seed = int(rng.integers(2**31))

                def score(fit: HMMFit, final_only: bool) -> float:
                    return heldout_loglik(fit, test, mask, final_only)

                def record(route: str, epsilon: float, value: float) -> None:
                    rows.append({"preset": preset, "split": split, "model": model, "route": route, "epsilon": epsilon, "loglik": value})
                    if bar is not None:
                        bar.advance(task)

                record("non-private", math.inf, score(gibbs_hmm(train, k, iterations, burn_in, seed=fit_seed), False))
                for eps in epsilons:
                    for route, fit in _laplace_fits(train, k, eps, mask, rng, iterations, burn_in, fit_seed).items():
                        record(route, eps, score(fit, False))
                    ops = ops_temperature(eps, multiplier)
                    fit = gibbs_hmm(train, k, iterations, burn_in, temperature=ops["temperature"], floors=ops["floors"], seed=fit_seed)
                    record("OPS", eps, score(fit, True))
    finally:
        if bar is not None:
            bar.stop()
    return rows


def summarize(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Mean and standard error over splits, per (preset, model, route, ε)."""
    keys: dict[tuple, list[float]] = {}
    for r in rows:
        keys.setdefault((r["preset"], r["model"], r["route"], r["epsilon"]), []).append(r["loglik"])
    out = []
    for (preset, model, route, eps), values in keys.items():
        v = np.asarray(values)
        se = float(v.std(ddof=1) / np.sqrt(v.size)) if v.size > 1 else float("nan")
        out.append({"preset": preset, "model": model, "route": route, "epsilon": eps, "mean": float(v.mean()), "se": se, "splits": int(v.size)})
    return out


def format_table(summary: Sequence[Mapping[str, Any]]) -> str:
    """A Markdown table: one row per (preset, model, ε), a column per route and the non-private value."""
    lines = [
        "| preset | model | ε | " + " | ".join(ROUTES) + " | non-private |",
        "|---|---|---:|" + "---:|" * (len(ROUTES) + 1),
    ]
    index = {(s["preset"], s["model"], s["route"], s["epsilon"]): s for s in summary}
    for preset, model in dict.fromkeys((s["preset"], s["model"]) for s in summary):
        base = index.get((preset, model, "non-private", math.inf))
        for eps in sorted({s["epsilon"] for s in summary if s["route"] == "OPS" and s["preset"] == preset and s["model"] == model}):
            cells = [index[(preset, model, route, eps)] for route in ROUTES]
            values = " | ".join(f"{c['mean']:.4f} ± {c['se']:.4f}" for c in cells)
            lines.append(f"| {preset} | {model} | {eps:g} | {values} | {base['mean']:.4f} |")
    return "\n".join(lines)


def paired_differences(rows: Sequence[Mapping[str, Any]], baseline: str = "OPS") -> list[dict[str, Any]]:
    """Each Laplace route minus ``baseline`` split by split (same held-out cells), mean and standard error.

    The splits differ far more from each other than the routes do on one split, so
    the paired difference is the precise comparison.
    """
    index = {(r["preset"], r["model"], r["route"], r["epsilon"], r["split"]): r["loglik"] for r in rows}
    out = []
    keys = dict.fromkeys((r["preset"], r["model"], r["epsilon"]) for r in rows if r["route"] == baseline)
    for preset, model, eps in keys:
        for route in ROUTES:
            if route == baseline:
                continue
            splits = sorted(s for (p, m, r, e, s) in index if (p, m, r, e) == (preset, model, route, eps))
            diff = np.array([index[(preset, model, route, eps, s)] - index[(preset, model, baseline, eps, s)] for s in splits])
            se = float(diff.std(ddof=1) / np.sqrt(diff.size)) if diff.size > 1 else float("nan")
            out.append({"preset": preset, "model": model, "route": route, "baseline": baseline, "epsilon": eps, "mean": float(diff.mean()), "se": se})
    return out


def format_differences(differences: Sequence[Mapping[str, Any]]) -> str:
    """A Markdown table of :func:`paired_differences`: one row per (preset, model, ε), a column per route."""
    routes = list(dict.fromkeys(d["route"] for d in differences))
    baseline = differences[0]["baseline"] if differences else "OPS"
    lines = ["| preset | model | ε | " + " | ".join(f"{r} − {baseline}" for r in routes) + " |", "|---|---|---:|" + "---:|" * len(routes)]
    index = {(d["preset"], d["model"], d["epsilon"], d["route"]): d for d in differences}
    for preset, model, eps in dict.fromkeys((d["preset"], d["model"], d["epsilon"]) for d in differences):
        cells = " | ".join(f"{index[(preset, model, eps, r)]['mean']:+.4f} ± {index[(preset, model, eps, r)]['se']:.4f}" for r in routes)
        lines.append(f"| {preset} | {model} | {eps:g} | {cells} |")
    return "\n".join(lines)


def plot_heldout(summary: Sequence[Mapping[str, Any]], path: Any = None) -> Any:
    """[FGWC16] Fig. 6-like: held-out log-likelihood per record against ε, one panel per (preset, model)."""
    import matplotlib

    if path is not None:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = list(dict.fromkeys((s["preset"], s["model"]) for s in summary))
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.4), squeeze=False)
    for ax, (preset, model) in zip(axes[0], panels):
        for route, style in zip(ROUTES, ("o:", "o-", "s--")):
            pts = sorted((s["epsilon"], s["mean"], s["se"]) for s in summary if (s["preset"], s["model"], s["route"]) == (preset, model, route))
            eps, mean, se = (np.array(x) for x in zip(*pts))
            ax.errorbar(eps, mean, yerr=np.nan_to_num(se), fmt=style, capsize=2, label=route)
        base = [s["mean"] for s in summary if (s["preset"], s["model"], s["route"]) == (preset, model, "non-private")]
        if base:
            ax.axhline(base[0], color="grey", lw=1, ls=":", label="non-private")
        ax.set_xscale("log")
        ax.set_xlabel("ε (total over 5 features)")
        ax.set_title(f"{preset}: {model}")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("held-out log-likelihood per record")
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig
