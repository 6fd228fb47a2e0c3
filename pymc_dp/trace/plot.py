"""``plot_ledger``: the privacy spent by a private MCMC run, draw by draw."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _compat
from .ledger_io import ledger as read_ledger

__all__ = ["plot_ledger", "cumulative_epsilon"]


def _per_draw(idata: Any, name: str) -> tuple[np.ndarray, int]:
    """``name`` summed over steps, per chain and draw (tuning first), and the number of tuning draws."""
    parts, tune = [], 0
    for group in ("warmup_sample_stats", "sample_stats"):
        ds = _compat.get_group(idata, group)
        if ds is not None and name in ds.data_vars:
            values = np.asarray(ds[name].values, dtype=float)
            values = values.reshape(values.shape[0], values.shape[1], -1).sum(axis=-1)
            if group == "warmup_sample_stats":
                tune = values.shape[1]
            parts.append(values)
    if not parts:
        raise ValueError(
            f"this trace has no per-draw {name!r} statistics: it was not sampled with private step methods "
            "(pmdp.sample(method='gibbs')). Its whole ledger is pmdp.ledger(idata).summary()."
        )
    return np.concatenate(parts, axis=1), tune


def cumulative_epsilon(idata: Any) -> tuple[np.ndarray, int]:
    """Cumulative basic-composition ε per chain after each draw (shape chain × draw, tuning first),
    and the number of tuning draws."""
    per_draw, tune = _per_draw(idata, "dp_epsilon")
    return np.cumsum(per_draw, axis=1), tune


def plot_ledger(idata: Any, *, delta: float | None = 1e-6, ax: Any = None) -> Any:
    """Plot the cumulative ε of a private MCMC run against draws, one line per chain.

    Each chain's line is the basic-composition sum of its per-draw ``dp_epsilon``
    (tuning draws shaded); the dashed line is all chains together (they ran on the
    same data, so they compose). The title gives the ledger's basic total beside the
    tightest accountant's total at ``delta`` (RDP/PLD), and a dotted line marks the
    budget if the ledger has one.

    Parameters
    ----------
    idata
        A trace from ``pmdp.sample(method="gibbs")`` (or one carrying ``dp_epsilon``
        sample stats and a ledger).
    delta
        δ at which to report the tight total (``None``: basic only).
    ax
        A Matplotlib axes to draw on (default: a new figure).

    Returns
    -------
    matplotlib.axes.Axes
    """
    import matplotlib.pyplot as plt

    cumulative, tune = cumulative_epsilon(idata)
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4))
    x = np.arange(1, cumulative.shape[1] + 1) - tune
    for c, line in enumerate(cumulative):
        ax.plot(x, line, lw=1.5, label=f"chain {c}")
    ax.plot(x, cumulative.sum(axis=0), "k--", lw=1.2, label="all chains")
    if tune:
        ax.axvspan(x[0] - 1, 0, color="0.9", zorder=0, label="tuning (charged)")
    lg = read_ledger(idata)
    basic = lg.total()
    title = f"basic ε = {basic.epsilon:.4g}"
    if delta is not None and basic.epsilon > 0:
        tight = lg.total("best", delta=max(delta, basic.delta))
        title += f";  tightest accountant: ε = {tight.epsilon:.4g} at δ = {tight.delta:.2g}"
    if lg.budget is not None:
        ax.axhline(lg.budget.epsilon, color="tab:red", ls=":", label=f"budget ε = {lg.budget.epsilon:g}")
    ax.set_xlabel("draw (tuning draws ≤ 0)")
    ax.set_ylabel("cumulative ε (basic composition)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="upper left")
    return ax
