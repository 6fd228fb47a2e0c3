"""``pymc-dp demo``: the private war-logs HMM, end to end, with a report folder.

1. Generate Iraq-like records (:func:`~pymc_dp.examples.warlogs.data.generate`; 2 true
   regimes that switch over time).
2. Privatise the five feature-count tensors once with the Laplace mechanism, ε/5 per
   feature (:func:`~pymc_dp.examples.warlogs.privacy.privatize_counts`), charged to a
   ledger with a budget of ε.
3. Fit the K-state HMM to the noisy counts with ``pm.sample`` and the HMM Gibbs steps
   (:func:`~pymc_dp.examples.warlogs.model.fit_hmm`; 2 chains, half the iterations
   burn-in). This is post-processing: it costs nothing more.
4. Write the report folder:

   * ``states.png``: the modal state of every region-month over time ([FGWC16] Fig. 3);
   * ``emissions.png``: each occupied state's type distribution and casualty rates
     (Figs. 4–5);
   * ``ledger.txt``: the privacy ledger; ``trace.nc``: the released trace with the ledger;
   * ``diagnostics.txt``: ArviZ's summary (R-hat, ESS) of quantities comparable across
     chains (:func:`convergence_report`): state labels differ between chains, so each
     chain is relabelled to chain 0 first and the shares, incident-type probabilities
     and casualty rates of the states every chain uses are compared, with the number
     of occupied states;
   * ``summary.txt``: the one-screen summary that is also printed;
   * ``leak_scan.txt``: the curator's last check: every file above scanned for the
     records, their exact statistics (the number of records, the median per
     region-month, ...) and their shapes (:func:`pymc_dp.audit.scan_folder`).

Every number in the report comes from the release (the noisy counts and what was
sampled from them): sizes are the noisy ones, rounded.

The seed makes the data, the noise and the sampler reproducible; without one the noise
is OpenDP's secure noise (the data are still generated from seed 0).
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from ... import _compat
from .data import FEATURES, MONTHS, TYPES, feature_counts, generate, month_labels

__all__ = ["run_demo", "modal_states", "convergence_report"]


#: R-hat above this: the chains have not converged.
R_HAT_LIMIT = 1.1
#: Relabelled chains whose modal states agree on a smaller share of the region-months
#: than this settled in different state configurations.
AGREEMENT_LIMIT = 0.99


def _verdict(r_hat: float, agreement: float) -> str:
    """What the worst R-hat and the relabelled chains' modal agreement say, as a clause ("" if converged)."""
    if agreement < AGREEMENT_LIMIT or r_hat > 100:
        return ": the chains settled in different state configurations (run longer or more chains)"
    if r_hat > R_HAT_LIMIT:
        return ": the chains have not converged (more --iterations, or a larger --epsilon)"
    return ""


def _comparable_quantities(posterior: Mapping[str, np.ndarray], num_states: int) -> tuple[dict[str, np.ndarray], float, int]:
    """``(chain, draw)`` quantities that mean the same in every chain, from released draws only.

    Each chain is relabelled to chain 0 (:mod:`~pymc_dp.examples.warlogs.relabel`); then,
    for each state every chain uses (numbered by its share in chain 0, largest first),
    its share of the region-months, its incident-type probabilities and its three
    casualty rates (what ``emissions.png`` shows). The number of occupied states needs
    no relabelling.

    Returns the quantities, the modal agreement of the relabelled chains
    (:func:`~pymc_dp.examples.warlogs.relabel.modal_agreement`) and the number of
    states compared.
    """
    from .relabel import allocation, common_states, modal_agreement, reference_permutations, relabel

    states = posterior["states"]
    alloc = allocation(states, num_states)
    perms = reference_permutations(alloc)
    shares = relabel(np.stack([(states == k).mean(axis=(2, 3)) for k in range(num_states)], axis=2), perms)
    common = common_states(alloc, perms)
    common = common[np.argsort(-shares[0].mean(axis=0)[common], kind="stable")]
    quantities = {"occupied_states": (shares > 0).sum(axis=2).astype(float)}
    types = relabel(posterior["theta_type"], perms)
    rates = {f: relabel(posterior[f"theta_{f}"], perms)[..., 1] for f in FEATURES[2:]}
    for i, k in enumerate(common):
        quantities[f"state {i}: share"] = shares[:, :, k]
        quantities.update({f"state {i}: {name}": types[:, :, k, j] for j, name in enumerate(TYPES)})
        quantities.update({f"state {i}: {f} > 0": rate[:, :, k] for f, rate in rates.items()})
    return quantities, modal_agreement(alloc, perms), len(common)


def _worst_r_hat(quantities: Mapping[str, np.ndarray], r_hat: Any) -> float:
    """The largest R-hat of the quantities that vary within every chain (NaN if none does).

    A quantity constant within a chain (the number of occupied states, a state's share
    once the chain settles) has no within-chain variance, so its R-hat is NaN or
    astronomically large and says nothing; the modal agreement covers it.
    """
    varying = [float(r_hat[k]) for k, v in quantities.items() if np.all(np.ptp(v, axis=1) > 0)]
    return max(varying, default=float("nan"))


def _convergence(quantities: Mapping[str, np.ndarray], r_hat: float, agreement: float, compared: int) -> str:
    """One line on convergence: the worst R-hat, what it was computed on, the verdict and the chains' agreement."""
    value = f"R-hat {r_hat:.3f}" if np.isfinite(r_hat) else "R-hat undefined"
    states = f"{compared} state{'' if compared == 1 else 's'}"
    per_chain = " | ".join(f"{m:.3g}" for m in quantities["occupied_states"].mean(axis=1))
    return (
        f"{value} on label-invariant quantities (chains relabelled to chain 0: shares, type and casualty "
        f"probabilities of the {states} all chains use){_verdict(r_hat, agreement)}; modal states agree on "
        f"{100 * agreement:.1f} % of region-months; occupied states {per_chain} by chain"
    )


def convergence_report(posterior: Mapping[str, np.ndarray], num_states: int) -> dict[str, Any]:
    """Judge the chains of a war-logs HMM fit on quantities comparable across chains.

    Parameters
    ----------
    posterior
        Released ``(chain, draw, ...)`` draws: ``states`` and ``theta_<feature>``.
    num_states
        K.

    Returns
    -------
    dict
        ``line`` (the summary's convergence line), ``diagnostics`` (ArviZ's summary of
        the quantities of :func:`_comparable_quantities`), ``max_r_hat`` (the worst
        R-hat of those that vary within every chain), ``modal_agreement``.
    """
    import arviz as az

    quantities, agreement, compared = _comparable_quantities(posterior, num_states)
    with warnings.catch_warnings():
        # A quantity constant across draws has no variance: ArviZ warns and reports NaN.
        warnings.simplefilter("ignore", RuntimeWarning)
        # Unrounded: ArviZ's automatic rounding shows a settled share (MCSE 0) as 0 or 1.
        diagnostics = az.summary(_compat.trace_from_dict({"posterior": quantities}), kind="all", round_to="none")
    r_hat = _worst_r_hat(quantities, diagnostics["r_hat"])
    return {
        "line": _convergence(quantities, r_hat, agreement, compared),
        "diagnostics": diagnostics,
        "max_r_hat": r_hat,
        "modal_agreement": agreement,
    }


def _round_to(value: float, step: float) -> float:
    return float(np.round(value / step) * step)


def _scan_report(out: Path, logs: Any) -> Any:
    """Scan the report folder for the records, their exact statistics and per-cell statistics.

    The curator's check before anything leaves: every file of ``out`` (text lines,
    the saved trace with its ledger) is searched for the records' feature columns,
    their exact statistics, the exact number of records and the per-region-month
    counts and medians (:func:`pymc_dp.audit.scan_folder`). Figures are listed as not
    scanned; they are drawn from the released trace only.
    """
    from ...audit import scan_folder

    frame = logs.to_frame()
    records = {f: frame[f].to_numpy() for f in FEATURES}
    cells = {"region-month": (frame["region"].to_numpy(), frame["month"].to_numpy())}
    # Small-integer statistics (counts of a value, quartiles and extremes of a feature
    # code or a per-cell count) coincide with the small integers of any report (ESS,
    # iteration counts) and are no evidence there; everything else is looked for,
    # including the exact number of records (N: the report treats it as private,
    # hence add_remove) and the median per region-month.
    allow = ("count", "q25", "q75", "min", "max")
    return scan_folder(
        out, records, groups=cells, public=(len(logs.regions), MONTHS), allow=allow, neighbouring="add_remove"
    )


def modal_states(states: np.ndarray, num_states: int) -> np.ndarray:
    """The most frequent state of each region-month over draws: ``(draws, R, T)`` → ``(R, T)``."""
    from .relabel import allocation

    return allocation(states[None], num_states)[0].argmax(axis=0)


def _plot_states(modal: np.ndarray, regions: tuple[str, ...], order: np.ndarray, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    shown = rank[modal]  # states renumbered by occupancy: 0 is the largest
    fig, ax = plt.subplots(figsize=(10, 0.5 * len(regions) + 1.4))
    im = ax.imshow(shown, aspect="auto", cmap="tab10", vmin=0, vmax=9, interpolation="nearest")
    ax.set_yticks(range(len(regions)), regions)
    labels = month_labels()
    ax.set_xticks(range(0, MONTHS, 12), [labels[t][:4] for t in range(0, MONTHS, 12)])
    ax.set_xlabel("month")
    ax.set_title("Modal latent state of each region-month (Laplace-private HMM; states numbered by size)")
    fig.colorbar(im, ax=ax, label="state", ticks=range(min(10, int(shown.max()) + 1)))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _plot_emissions(theta: list[np.ndarray], used: list[int], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), gridspec_kw={"width_ratios": [3, 1.4]})
    width = 0.8 / max(len(used), 1)
    for i, k in enumerate(used):
        axes[0].bar(np.arange(len(TYPES)) + i * width, theta[0][k], width, label=f"state {i}")
        rates = [theta[d][k, 1] for d in range(2, len(FEATURES))]
        axes[1].bar(np.arange(3) + i * width, rates, width, label=f"state {i}")
    axes[0].set_xticks(np.arange(len(TYPES)) + 0.4 - width / 2, TYPES, rotation=30, ha="right")
    axes[0].set_ylabel("P(type | state)")
    axes[0].set_title("Incident type by state")
    axes[1].set_xticks(np.arange(3) + 0.4 - width / 2, ["friendly/host", "civilian", "enemy"])
    axes[1].set_ylabel("P(casualties > 0 | state)")
    axes[1].set_title("Casualty indicators by state")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run_demo(
    output_dir: str | Path = "demo_output",
    *,
    preset: str = "iraq",
    epsilon: float = 5.0,
    num_states: int = 10,
    iterations: int = 200,
    seed: int | None = None,
    progressbar: bool = True,
    verbose: bool = True,
) -> dict[str, Any]:
    """Run the case study and write the report folder; returns the summary facts.

    Parameters
    ----------
    output_dir
        The report folder (created if needed).
    preset
        ``"iraq"`` (default), ``"afghanistan"`` or ``"small"``.
    epsilon
        Total ε, split equally over the five features.
    num_states
        K, the number of HMM states.
    iterations
        Gibbs iterations per chain (the first half is burn-in); 2 chains.
    seed
        Seed for the data, the noise and the sampler (seeded noise is recorded as such in
        the ledger); ``None``: secure OpenDP noise and data from seed 0.
    progressbar
        Show PyMC's progress bar while sampling.
    verbose
        Print the one-screen summary.
    """
    import logging

    from ...accounting import Budget, PrivacyLedger
    from ...trace import release
    from .hmm import adjusted_rand_index
    from .model import fit_hmm
    from .privacy import privatize_counts

    if iterations < 2:
        raise ValueError(f"iterations must be at least 2 (half of them are burn-in), got {iterations}.")
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    logs = generate(preset, seed=0 if seed is None else seed)
    counts = feature_counts(logs)
    ledger = PrivacyLedger(budget=Budget(epsilon=epsilon))
    noisy = privatize_counts(counts, epsilon / len(FEATURES), ledger=ledger, rng=None if seed is None else seed)
    del counts  # from here on only the release is used
    pymc_logger = logging.getLogger("pymc")
    level = pymc_logger.level
    pymc_logger.setLevel(logging.ERROR)
    try:
        idata = fit_hmm(
            noisy, num_states, draws=iterations - iterations // 2, tune=iterations // 2, chains=2,
            random_seed=seed, progressbar=progressbar,
        )
    finally:
        pymc_logger.setLevel(level)
    # The whitelist: the model's free variables (no Deterministics) and the ledger, nothing else.
    free = [f"theta_{f}" for f in FEATURES] + ["transitions", "initial", "states"]
    released = release(idata, ledger=ledger, var_names=free)
    released.to_netcdf(str(out / "trace.nc"))
    # From here on the report reads the released draws only.
    posterior = {name: _compat.get_group(released, "posterior")[name].values for name in free}
    convergence = convergence_report(posterior, num_states)

    # The figures use chain 0 (labels are consistent within a chain).
    modal = modal_states(posterior["states"][0], num_states)
    share = np.bincount(modal.ravel(), minlength=num_states) / modal.size
    order = np.argsort(-share)
    used = [int(k) for k in order if share[k] > 0]
    mean_theta = [posterior[f"theta_{f}"][0].mean(axis=0) for f in FEATURES]
    _plot_states(modal, logs.regions, order, out / "states.png")
    _plot_emissions(mean_theta, used, out / "emissions.png")
    ari = adjusted_rand_index(modal, logs.true_states)
    (out / "ledger.txt").write_text(ledger.summary() + "\n")
    (out / "diagnostics.txt").write_text(convergence["diagnostics"].to_string(float_format="{:.4g}".format) + "\n")
    # Sizes in the report come from the release (post-processing: free), never from the
    # records: the exact record count and per-cell medians were never charged for.
    per_cell = np.maximum(noisy[0], 0.0).sum(axis=-1)  # noisy records per region-month (type counts)
    elapsed = time.perf_counter() - start
    top = ", ".join(f"{100 * share[k]:.1f} %" for k in used[:4])
    lines = [
        f"pymc_dp demo: private HMM of war-log records ({preset}-like synthetic data)",
        f"  records            about {_round_to(per_cell.sum(), 100):,.0f} (noisy) in {len(logs.regions)} regions x "
        f"{MONTHS} months (median about {np.median(per_cell):.0f} per region-month, noisy)",
        f"  privacy            Laplace on the feature counts, ε = {epsilon:g} ({epsilon / len(FEATURES):g} per feature), "
        f"spent ε = {ledger.total().epsilon:g}; noise: {ledger.entries[0].noise_source}",
        f"  model              HMM with K = {num_states}, {iterations} Gibbs iterations x 2 chains (half burn-in)",
        f"  states in use      {len(used)} of {num_states} (region-month shares: {top})",
        f"  true regimes       adjusted Rand index of the modal states: {ari:.3f} (synthetic data: the generator's "
        "regimes are known)",
        f"  convergence        {convergence['line']}",
        f"  report             {out}/ states.png emissions.png ledger.txt diagnostics.txt trace.nc summary.txt "
        "leak_scan.txt",
        f"  time               {elapsed:.1f} s",
    ]
    text = "\n".join(lines)
    (out / "summary.txt").write_text(text + "\n")
    leak_scan = _scan_report(out, logs)
    (out / "leak_scan.txt").write_text(str(leak_scan) + "\n")
    text += f"\n  leak scan          {leak_scan.summary_line()} (leak_scan.txt)"
    if verbose:
        print(text)
    return {
        "records": logs.num_records,
        "epsilon_spent": ledger.total().epsilon,
        "states_in_use": len(used),
        "shares": [float(share[k]) for k in used],
        "adjusted_rand_index": float(ari),
        "max_r_hat": convergence["max_r_hat"],
        "modal_agreement": convergence["modal_agreement"],
        "output_dir": str(out),
        "seconds": elapsed,
        "ledger": ledger,
        "leak_scan": leak_scan,
    }
