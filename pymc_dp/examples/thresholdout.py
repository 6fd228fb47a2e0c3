"""The reusable holdout's classic experiment (Dwork et al., NIPS 2015 / Science 2015, Fig. 2).

An analyst has n training and n holdout records of d random features ``x ~ N(0, 1)``
and a label ``y = ±1``. With no signal, no classifier can beat 50 %. The analyst:

1. computes each feature's correlation with the label on the training set,
   ``c_j = E_train[x_j y]``, and asks the holdout for its own, ``E_hold[x_j y]``;
2. keeps the features whose two correlations agree in sign and both exceed
   ``1/√n`` in size (the holdout was consulted: this is the adaptive step);
3. for k = the best 10, 20, … of them (by training correlation), builds the classifier
   ``sign(Σ_j sign(c_j) x_j)`` and asks the holdout for its accuracy.

Asked through the plain holdout, step 2 leaks the holdout's noise into the choice of
features, and the reported holdout accuracy climbs well above 50 % on pure noise.
Asked through :class:`pymc_dp.ReusableHoldout` (Thresholdout), the holdout's answers
to step 1 are the training values unless the two disagree by more than a noisy
threshold, and the reported accuracy stays near 50 %. With real signal (``signal``
features shifted by ``strength/√n`` towards the label) both find it.

The correlations ``x_j y`` are clipped into ``value_range`` (±4: about 4 s.d.) so the
holdout mean has sensitivity 8/n; accuracies lie in [0, 1] inside it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

__all__ = ["HoldoutCurves", "run_holdout_experiment", "make_data", "run_study", "average_curves", "format_table", "plot_curves"]


@dataclass
class HoldoutCurves:
    """Accuracies against the number of features kept, for the plain and the reusable holdout.

    Attributes
    ----------
    k
        Numbers of features in the classifier.
    training, standard, reusable, fresh
        Accuracy on the training set; reported by the plain holdout; reported by the
        reusable holdout; on fresh data the analyst never saw (the truth), for the
        reusable run's classifier. ``standard_fresh`` is the plain run's truth.
    epsilon
        ε the reusable holdout charged (its ledger's total).
    over_threshold
        How many of its answers were over the threshold.
    """

    k: np.ndarray
    training: np.ndarray
    standard: np.ndarray
    reusable: np.ndarray
    fresh: np.ndarray
    standard_fresh: np.ndarray
    epsilon: float
    over_threshold: int
    meta: dict[str, Any] = field(default_factory=dict)


def make_data(n: int, d: int, signal: int, strength: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """n records of d N(0, 1) features and a ±1 label; the first ``signal`` features shifted towards it."""
    y = rng.choice(np.array([-1.0, 1.0], dtype=np.float32), size=n)
    x = rng.standard_normal((n, d), dtype=np.float32)
    if signal:
        x[:, :signal] += np.float32(strength / np.sqrt(n)) * y[:, None]
    return x, y


def _accuracy(x: np.ndarray, y: np.ndarray, features: np.ndarray, signs: np.ndarray) -> np.ndarray:
    """Per-record correctness (0/1) of ``sign(Σ signs_j x_j)`` over ``features``."""
    score = x[:, features] @ signs
    return (np.where(score >= 0, 1.0, -1.0) == y).astype(float)


def run_holdout_experiment(
    n: int = 5000, d: int = 5000, *, signal: int = 0, strength: float = 6.0, ks: Sequence[int] | None = None,
    threshold: float | None = None, sigma: float | None = None, budget: int | None = None, seed: int = 0,
    rng_noise: Any = "seeded",
) -> HoldoutCurves:
    """Run the adaptive feature-selection experiment with both holdouts on the same data.

    Parameters
    ----------
    n, d
        Records in each of training, holdout and fresh sets; features.
    signal, strength
        The number of informative features and their shift towards the label, in units of
        ``1/√n`` (Dwork et al.: 20 features at 6/√n).
    ks
        Numbers of features to try (default 10, 20, …, up to 500 or what was kept).
    threshold, sigma
        Thresholdout's T and σ (defaults ``4/√n`` and ``1/√n``: Dwork et al.'s 0.04 and 0.01
        at n = 10 000).
    budget
        Over-threshold answers allowed (default: one per feature and per k: never binding).
    seed
        Seeds the data, and (with ``rng_noise="seeded"``) the holdout's noise.
    rng_noise
        ``"seeded"`` (reproducible; research only) or ``None`` for secure noise.
    """
    from ..accounting import PrivacyLedger
    from ..mechanisms.thresholdout import ReusableHoldout

    rng = np.random.default_rng(seed)
    x_train, y_train = make_data(n, d, signal, strength, rng)
    x_hold, y_hold = make_data(n, d, signal, strength, rng)
    x_fresh, y_fresh = make_data(n, d, signal, strength, rng)
    threshold = 4.0 / np.sqrt(n) if threshold is None else threshold
    sigma = 1.0 / np.sqrt(n) if sigma is None else sigma
    ks = list(ks) if ks is not None else list(range(10, 501, 10))
    budget = d + len(ks) if budget is None else budget
    ledger = PrivacyLedger()
    # One record: its features and its label, side by side.
    holdout = ReusableHoldout(
        np.column_stack([x_hold, y_hold]), threshold=threshold, sigma=sigma, budget=budget, value_range=(-4.0, 4.0),
        ledger=ledger, rng=np.random.default_rng([seed, 1]) if rng_noise == "seeded" else None, batch=True,
    )
    train_corr = (x_train * y_train[:, None]).mean(axis=0)
    plain_corr = (x_hold * y_hold[:, None]).mean(axis=0)
    reusable_corr = np.empty(d)
    for j in range(d):
        reusable_corr[j] = holdout.query(lambda r, j=j: np.clip(r[:, j] * r[:, -1], -4, 4),
                                         training_value=float(train_corr[j])).value
    cut = 1.0 / np.sqrt(n)
    order = np.argsort(-np.abs(train_corr))

    def kept(holdout_corr: np.ndarray) -> np.ndarray:
        ok = (np.sign(train_corr) == np.sign(holdout_corr)) & (np.abs(train_corr) > cut) & (np.abs(holdout_corr) > cut)
        return order[ok[order]]

    plain_kept, reusable_kept = kept(plain_corr), kept(reusable_corr)
    ks = [k for k in ks if k <= max(len(plain_kept), len(reusable_kept), 1)]
    out = {name: [] for name in ("training", "standard", "reusable", "fresh", "standard_fresh")}
    for k in ks:
        fp, fr = plain_kept[:k], reusable_kept[:k]
        sp, sr = np.sign(train_corr[fp]).astype(np.float32), np.sign(train_corr[fr]).astype(np.float32)
        out["training"].append(_accuracy(x_train, y_train, fp, sp).mean())
        out["standard"].append(_accuracy(x_hold, y_hold, fp, sp).mean())
        out["standard_fresh"].append(_accuracy(x_fresh, y_fresh, fp, sp).mean())
        acc_train = float(_accuracy(x_train, y_train, fr, sr).mean())
        answer = holdout.query(lambda r, fr=fr, sr=sr: _accuracy(r[:, :-1], r[:, -1], fr, sr),
                               training_value=acc_train)
        out["reusable"].append(answer.value)
        out["fresh"].append(_accuracy(x_fresh, y_fresh, fr, sr).mean())
    return HoldoutCurves(
        k=np.asarray(ks), **{key: np.asarray(v, dtype=float) for key, v in out.items()},
        epsilon=float(ledger.total().epsilon), over_threshold=holdout.over_threshold,
        meta={"n": n, "d": d, "signal": signal, "strength": strength, "threshold": threshold, "sigma": sigma,
              "kept_standard": int(len(plain_kept)), "kept_reusable": int(len(reusable_kept)), "seed": seed},
    )


def average_curves(runs: Sequence[HoldoutCurves]) -> dict[str, Any]:
    """Mean and standard error of each curve over runs sharing their k (the shortest run's k)."""
    k = min((r.k for r in runs), key=len)
    out: dict[str, Any] = {"k": k.tolist(), "runs": len(runs)}
    for name in ("training", "standard", "reusable", "fresh", "standard_fresh"):
        values = np.array([getattr(r, name)[: len(k)] for r in runs])
        out[name] = values.mean(axis=0).tolist()
        out[f"{name}_se"] = (values.std(axis=0) / np.sqrt(max(len(runs), 1))).tolist()
    out["epsilon"] = float(np.mean([r.epsilon for r in runs]))
    out["over_threshold"] = float(np.mean([r.over_threshold for r in runs]))
    return out


#: The numbers of features the printed table shows (the JSON and the plot keep every k).
TABLE_KS = (10, 20, 50, 100, 200, 300, 400, 500)


def format_table(results: dict[str, dict[str, Any]], ks: Sequence[int] = TABLE_KS) -> str:
    """A Markdown table of the averaged curves at ``ks`` (those run), one block of rows per setting."""
    lines = ["| setting | k | training | standard holdout | reusable holdout | fresh data | ε charged |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for setting, c in results.items():
        for i, k in enumerate(c["k"]):
            if k not in ks:
                continue
            lines.append(f"| {setting} | {k} | {c['training'][i]:.3f} | {c['standard'][i]:.3f} | "
                         f"{c['reusable'][i]:.3f} ± {c['reusable_se'][i]:.3f} | {c['fresh'][i]:.3f} | "
                         f"{c['epsilon']:.0f} |")
    return "\n".join(lines)


def plot_curves(results: dict[str, dict[str, Any]], path: Any) -> None:
    """Dwork et al.'s Fig. 2 layout: one panel per setting, accuracy against k."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(4.5 * len(results), 3.6), sharey=True, squeeze=False)
    for ax, (setting, c) in zip(axes[0], results.items()):
        k = np.asarray(c["k"])
        for name, label, style in (("training", "training", "k:"), ("standard", "standard holdout", "r-"),
                                   ("reusable", "reusable holdout", "b-"), ("fresh", "fresh data", "g--")):
            ax.plot(k, c[name], style, label=label)
        ax.axhline(0.5, color="grey", lw=0.5)
        ax.set_title(setting)
        ax.set_xlabel("features in the classifier")
    axes[0][0].set_ylabel("accuracy")
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def run_study(n: int = 10_000, d: int = 10_000, runs: int = 10, seed: int = 0, progress: bool = True
              ) -> dict[str, dict[str, Any]]:
    """Both settings of Fig. 2 (no signal; 20 informative features), averaged over ``runs`` seeds."""
    results = {}
    for setting, signal in (("no signal", 0), ("20 informative features", 20)):
        curves = []
        for r in range(runs):
            curves.append(run_holdout_experiment(n, d, signal=signal, seed=seed + r))
            if progress:
                print(f"\rreusable holdout, {setting}: {r + 1}/{runs} runs", end="", flush=True)
        if progress:
            print()
        results[setting] = average_curves(curves)
    return results
