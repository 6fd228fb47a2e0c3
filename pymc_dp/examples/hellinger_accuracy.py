"""Accuracy of the private Dirichlet-posterior releases, from their exact output distributions.

The accuracy comparison of the Hellinger mechanisms ("Exploring the design space of
differentially private Bayesian inference"; :mod:`pymc_dp.mechanisms.hellinger_mechanisms`):
balanced data (counts as equal as possible, e.g. n = 600, k = 3 → (200, 200, 200)),
prior ``Dir(1, …, 1)``, and the settings of :data:`SETTINGS`::

    (n, k, ε) = (600, 2, 1), (600, 3, 1), (1000, 2, 5), (10000, 2, 5)

For each setting and each of the five mechanisms (LSDim, LSHist, EHD, EHDS, all ε-DP,
and EHDL, which is **not** private and only shows what the exponential mechanism could
do if the data's local sensitivity were free), the error of one release is the
Hellinger distance ``H(Dir(α + x), released)`` between the true posterior and the
released one. Nothing is sampled: :func:`pymc_dp.mechanisms.hellinger_mechanisms.output_distribution`
gives the exact probability of every possible release, so the error's whole
distribution is known, and the table reports its mean, median, 90th and 99th
percentiles (quantiles of the exact discrete distribution: the smallest error whose
cumulative probability reaches the level), ``P(H = 0)`` (the release is the exact
posterior) and ``P(H ≤ 0.05)``. The figure (:func:`plot_accuracy`) draws the exact CDF
of the error, one panel per setting.

Cost (measured on a 2-core machine with another process busy): the exact
distributions of the whole study (4 settings × 5 mechanisms) take about 4 s
(3.8–4.3 s over four runs), two thirds of it the distances of LSDim's and LSHist's
361 201 possible releases at k = 3 (their released totals can differ from n, which
takes the slower branch of :func:`~pymc_dp.mechanisms.hellinger_distance.hellinger`);
the figure takes about 2 s more, and importing PyMC 3–5 s. The whole command runs
in about 12 s.

Run ``python -m pymc_dp.examples.hellinger_accuracy`` from the repository root: it
prints the Markdown table, writes it to ``benchmarks/results/hellinger_accuracy.md``
and saves the figure to ``docs/_static/hellinger_accuracy.png`` (``--help`` for the
options).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

__all__ = [
    "SETTINGS",
    "MECHANISM_LABELS",
    "THRESHOLD",
    "balanced_counts",
    "error_distribution",
    "error_distributions",
    "summarize",
    "accuracy_table",
    "format_table",
    "plot_accuracy",
    "main",
]

#: (n, k, ε) settings of the study: n records in k categories, privacy ε.
SETTINGS = ((600, 2, 1.0), (600, 3, 1.0), (1000, 2, 5.0), (10_000, 2, 5.0))
#: Display names, in the order of :data:`~pymc_dp.mechanisms.hellinger_mechanisms.MECHANISMS`.
MECHANISM_LABELS = {
    "lsdim": "LSDim",
    "lshist": "LSHist",
    "ehd": "EHD",
    "ehds": "EHDS",
    "ehdl": "EHDL (not private)",
}
#: The error level of the ``P(H ≤ t)`` column.
THRESHOLD = 0.05
_PRIOR = 1.0
#: ``{(n, k, ε): {mechanism: (errors, probabilities)}}``, as :func:`error_distributions` returns.
Distributions = Mapping[tuple[int, int, float], Mapping[str, tuple[np.ndarray, np.ndarray]]]
_TICKS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)
_COLOURS = {"lsdim": "C0", "lshist": "C1", "ehd": "C2", "ehds": "C3", "ehdl": "black"}


def balanced_counts(n: int, k: int) -> np.ndarray:
    """Counts of n records in k categories, as equal as possible (the first ``n mod k`` get one more)."""
    if int(n) < 1 or int(k) < 2:
        raise ValueError(f"need n >= 1 records and k >= 2 categories, got n = {n!r}, k = {k!r}.")
    counts = np.full(int(k), int(n) // int(k), dtype=np.int64)
    counts[: int(n) - int(counts.sum())] += 1
    return counts


def error_distribution(counts: Any, prior: Any, epsilon: float, mechanism: str) -> tuple[np.ndarray, np.ndarray]:
    """The exact distribution of the Hellinger error of one release, sorted by error.

    Parameters
    ----------
    counts, prior, epsilon, mechanism
        As for :func:`pymc_dp.mechanisms.hellinger_mechanisms.output_distribution`
        (``"ehdl"`` allowed: this reads the data and releases nothing).

    Returns
    -------
    errors : numpy.ndarray
        ``H(Dir(α + counts), Dir(α + c))`` for every possible release ``α + c``, ascending.
    probabilities : numpy.ndarray
        The probability of each (same order; sums to 1).
    """
    from pymc_dp.mechanisms.hellinger_distance import hellinger
    from pymc_dp.mechanisms.hellinger_mechanisms import _check_counts, _check_prior, output_distribution

    x = _check_counts(counts)
    alpha = _check_prior(prior, x.size)
    dist = output_distribution(x, alpha, epsilon, mechanism)
    errors = np.atleast_1d(hellinger(alpha + x, dist.alphas))
    order = np.argsort(errors, kind="stable")
    probabilities = dist.probabilities[order]
    return errors[order], probabilities / probabilities.sum()


def _setting_key(setting: Sequence[Any]) -> tuple[int, int, float]:
    n, k, epsilon = setting
    return int(n), int(k), float(epsilon)


def error_distributions(
    settings: Sequence[Sequence[Any]] = SETTINGS, prior: float = _PRIOR, mechanisms: Sequence[str] | None = None
) -> dict[tuple[int, int, float], dict[str, tuple[np.ndarray, np.ndarray]]]:
    """:func:`error_distribution` of every mechanism on the balanced data of every setting.

    Returns ``{(n, k, ε): {mechanism: (errors, probabilities)}}``, which
    :func:`accuracy_table` and :func:`plot_accuracy` accept.
    """
    from pymc_dp.mechanisms.hellinger_mechanisms import MECHANISMS

    mechs = tuple(MECHANISMS if mechanisms is None else mechanisms)
    out: dict[tuple[int, int, float], dict[str, tuple[np.ndarray, np.ndarray]]] = {}
    for setting in settings:
        n, k, epsilon = _setting_key(setting)
        counts = balanced_counts(n, k)
        out[(n, k, epsilon)] = {m: error_distribution(counts, prior, epsilon, m) for m in mechs}
    return out


def _quantile(errors: np.ndarray, cdf: np.ndarray, level: float) -> float:
    """The smallest error whose cumulative probability reaches ``level`` (inverse CDF of a discrete law)."""
    # A relative slack of 1e-12 so that rounding in the cumulative sum cannot skip an exact atom.
    i = int(np.searchsorted(cdf, level * (1 - 1e-12), side="left"))
    return float(errors[min(i, errors.size - 1)])


def summarize(errors: np.ndarray, probabilities: np.ndarray, threshold: float = THRESHOLD) -> dict[str, float]:
    """Mean, median, 90th and 99th percentiles, ``P(H = 0)`` and ``P(H ≤ threshold)`` of a sorted error law."""
    errors = np.asarray(errors, dtype=float)
    p = np.asarray(probabilities, dtype=float)
    cdf = np.cumsum(p)
    return {
        "mean": float(np.dot(errors, p)),
        "median": _quantile(errors, cdf, 0.5),
        "q90": _quantile(errors, cdf, 0.9),
        "q99": _quantile(errors, cdf, 0.99),
        "p_exact": float(p[errors == 0].sum()),
        "p_within": float(p[errors <= threshold].sum()),
        "threshold": float(threshold),
        "outputs": int(errors.size),
    }


def accuracy_table(
    settings: Sequence[Sequence[Any]] = SETTINGS,
    *,
    distributions: Distributions | None = None,
    threshold: float = THRESHOLD,
) -> list[dict[str, Any]]:
    """One row per (setting, mechanism): the summary of the exact error distribution.

    Parameters
    ----------
    settings
        ``(n, k, ε)`` triples (balanced data, prior ``Dir(1, …, 1)``).
    distributions
        Precomputed :func:`error_distributions` of these settings (computed if ``None``).
    threshold
        The error level of the ``p_within`` column, ``P(H ≤ threshold)``.

    Returns
    -------
    list of dict
        Keys ``n, k, epsilon, counts, mechanism, label, private, local_sensitivity``
        (LS of the data: the distance one moved record makes, for scale) and those of
        :func:`summarize`.
    """
    from pymc_dp.mechanisms.hellinger_mechanisms import PRIVATE_MECHANISMS, local_sensitivity

    if distributions is None:
        distributions = error_distributions(settings)
    rows = []
    for setting in settings:
        n, k, epsilon = key = _setting_key(setting)
        counts = balanced_counts(n, k)
        ls = local_sensitivity(counts, _PRIOR)
        for mech, (errors, probabilities) in distributions[key].items():
            rows.append({
                "n": n, "k": k, "epsilon": epsilon, "counts": [int(c) for c in counts], "mechanism": mech,
                "label": MECHANISM_LABELS[mech], "private": mech in PRIVATE_MECHANISMS, "local_sensitivity": ls,
                **summarize(errors, probabilities, threshold),
            })
    return rows


def format_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """A Markdown table of :func:`accuracy_table` rows (the best private mean and median of a setting in bold)."""
    threshold = rows[0]["threshold"] if rows else THRESHOLD
    lines = [
        f"| n | k | ε | mechanism | mean H | median H | 90 % | 99 % | P(H = 0) | P(H ≤ {threshold:g}) |",
        "|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    best: dict[tuple[Any, ...], dict[str, float]] = {}
    for r in rows:
        if r["private"]:
            b = best.setdefault((r["n"], r["k"], r["epsilon"]), {"mean": np.inf, "median": np.inf})
            b["mean"] = min(b["mean"], r["mean"])
            b["median"] = min(b["median"], r["median"])

    def cell(r: Mapping[str, Any], key: str) -> str:
        text = f"{r[key]:.4f}"
        return f"**{text}**" if r["private"] and r[key] == best[(r["n"], r["k"], r["epsilon"])][key] else text

    for r in rows:
        lines.append(
            f"| {r['n']} | {r['k']} | {r['epsilon']:g} | {r['label']} | {cell(r, 'mean')} | {cell(r, 'median')} | "
            f"{r['q90']:.4f} | {r['q99']:.4f} | {r['p_exact']:.3f} | {r['p_within']:.3f} |"
        )
    return "\n".join(lines)


def plot_accuracy(
    rows_or_data: Sequence[Mapping[str, Any]] | Distributions,
    path: str | Path | None = None,
) -> Any:
    """Exact CDF of the Hellinger error of every mechanism, one panel per setting (2 × 2 for four settings).

    Parameters
    ----------
    rows_or_data
        :func:`error_distributions` output, or :func:`accuracy_table` rows (their
        settings' distributions are then recomputed, in a few seconds).
    path
        Where to save the figure (dpi 120); not saved if ``None``.

    Returns
    -------
    matplotlib.figure.Figure
        The figure. The x axis is logarithmic; an error of exactly 0 (the release is
        the exact posterior) is drawn at the left edge, so a curve's height there is
        ``P(H = 0)``. The dotted line marks the data's local sensitivity (the distance
        one moved record makes). EHDL is dashed and labelled as not private.
    """
    import matplotlib.pyplot as plt

    from pymc_dp.mechanisms.hellinger_mechanisms import local_sensitivity

    if isinstance(rows_or_data, Mapping):
        data = rows_or_data
    else:
        settings = list(dict.fromkeys((r["n"], r["k"], r["epsilon"]) for r in rows_or_data))
        data = error_distributions(settings)
    keys = list(data)
    cols = 2 if len(keys) > 1 else 1
    nrows = -(-len(keys) // cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(5.6 * cols, 3.9 * nrows + 0.9), squeeze=False)
    handles: dict[str, Any] = {}
    for ax, key in zip(axes.flat, keys):
        n, k, epsilon = _setting_key(key)
        counts = balanced_counts(n, k)
        ls = local_sensitivity(counts, _PRIOR)
        left = ls / 3  # below the smallest non-zero error (about LS): the plateau up to LS is P(H = 0)
        for mech, (errors, probabilities) in data[key].items():
            x = np.concatenate([[left], np.maximum(errors, left), [1.0]])
            y = np.concatenate([[0.0], np.cumsum(probabilities), [1.0]])
            private = mech != "ehdl"
            (line,) = ax.step(
                x, np.minimum(y, 1.0), where="post", color=_COLOURS.get(mech), lw=1.4 if private else 1.6,
                ls="-" if private else "--", label=MECHANISM_LABELS.get(mech, mech),
            )
            handles.setdefault(mech, line)
        handles.setdefault("ls", ax.axvline(ls, color="grey", ls=":", lw=1, label="LS(x): one record moved"))
        ax.set_xscale("log")
        ax.set_xlim(left, 1.0)
        ticks = [t for t in _TICKS if t >= left]
        ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
        ax.set_xticks([], minor=True)
        ax.set_ylim(0, 1.02)
        ax.grid(True, which="major", alpha=0.3)
        ax.set_title(f"n = {n:,}, k = {k}, ε = {epsilon:g}, x = ({', '.join(str(c) for c in counts)})", fontsize=10)
        ax.set_xlabel("Hellinger error h (log scale; h = 0 at the left edge)", fontsize=9)
        ax.set_ylabel("P(H ≤ h)", fontsize=9)
    for ax in axes.flat[len(keys):]:
        ax.set_visible(False)
    fig.legend(handles.values(), [h.get_label() for h in handles.values()], loc="lower center", ncol=6,
               fontsize=9, frameon=False)
    fig.suptitle(
        "Exact CDF of the Hellinger error H(Dir(α + x), release), balanced data, Dir(1, …, 1) prior\n"
        "LSDim, LSHist, EHD, EHDS are ε-DP; EHDL (dashed) is NOT private: a benchmark only",
        fontsize=11,
    )
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    if path is not None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=120)
    return fig


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: compute the study, print and save the Markdown table, save the figure. Returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m pymc_dp.examples.hellinger_accuracy",
        description="Exact Hellinger-error distributions of the Dirichlet-posterior releases (LSDim, LSHist, "
        "EHD, EHDS; EHDL, not private, as a benchmark).",
    )
    parser.add_argument("--plot", type=Path, default=Path("docs/_static/hellinger_accuracy.png"),
                        help="where to save the figure (default docs/_static/hellinger_accuracy.png)")
    parser.add_argument("--table", type=Path, default=Path("benchmarks/results/hellinger_accuracy.md"),
                        help="where to write the Markdown table (default benchmarks/results/hellinger_accuracy.md)")
    parser.add_argument("--no-plot", action="store_true", help="do not draw the figure")
    args = parser.parse_args(argv)

    start = time.perf_counter()
    data = error_distributions(SETTINGS)
    rows = accuracy_table(SETTINGS, distributions=data)
    seconds = time.perf_counter() - start
    header = (
        "Hellinger error H(Dir(α + x), release) of one release, from the exact output distributions "
        f"(balanced x, Dir(1, …, 1) prior; computed in {seconds:.1f} s). Bold: the lowest mean / median among the "
        "ε-DP mechanisms. EHDL is NOT differentially private (a benchmark only)."
    )
    table = format_table(rows)
    print(header)
    print()
    print(table)
    args.table.parent.mkdir(parents=True, exist_ok=True)
    args.table.write_text(header + "\n\n" + table + "\n", encoding="utf-8")
    print(f"\ntable written to {args.table}")
    if not args.no_plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig = plot_accuracy(data, args.plot)
        plt.close(fig)
        print(f"plot saved to {args.plot}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
