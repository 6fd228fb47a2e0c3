"""A private beta-Bernoulli analysis from end to end.

The story, in the order the code runs:

1. A curator holds N = 2,000 sensitive yes/no records (synthetic here, drawn with a
   fixed seed from a population with true proportion p = 0.3).
2. The only access to the records is ONE release: the count of "yes" answers plus
   Laplace noise (sensitivity 1 under replace-one neighbouring, N public, ε = 0.5),
   charged to a :class:`~pymc_dp.accounting.PrivacyLedger` with a budget of ε = 1.
3. A PyMC model of the noisy count that knows the noise was added (noise-aware
   likelihood): the true count k ~ Binomial(N, p) is marginalised exactly against
   the Laplace noise,

   .. math:: p(z \\mid p) = \\sum_{k=0}^{N} \\mathrm{Binom}(k; N, p)\\,
             \\mathrm{Laplace}(z - k; 0, b),

   computed as a log-sum-exp over k = 0..N, with a Beta(1, 1) prior on p.
4. NUTS, then :func:`~pymc_dp.trace.release` (whitelist: posterior of ``p`` and
   the ledger, nothing else) and ``to_netcdf``.

Everything after the single Laplace draw only touches the noisy count, so it is
post-processing and costs no further privacy: any number of draws, chains or
re-analyses of the released count stay ε = 0.5-DP.

Run it with ``pymc-dp demo --example beta-bernoulli`` or ``python -m pymc_dp.examples.beta_bernoulli``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

from .. import _compat

__all__ = ["run_demo", "noise_aware_count_logp", "N_RECORDS", "TRUE_P", "EPSILON", "BUDGET_EPSILON"]

#: Number of sensitive records (public under replace-one neighbouring).
N_RECORDS = 2000
#: Population proportion the synthetic records are drawn from.
TRUE_P = 0.3
#: Privacy parameter of the one Laplace release.
EPSILON = 0.5
#: Total budget of the analysis.
BUDGET_EPSILON = 1.0
#: Seed of the synthetic records (the data are the same on every run).
DATA_SEED = 20240601
#: Name of the released trace file inside ``output_dir``.
TRACE_FILE = "beta_bernoulli_trace.nc"


def noise_aware_count_logp(noisy_count: Any, p: Any, n: int, scale: float) -> Any:
    """Log-likelihood of a Laplace-noised binomial count, the true count marginalised.

    ``log p(z | p) = logsumexp_k [log Binom(k; n, p) + log Laplace(z - k; 0, scale)]``
    over ``k = 0..n`` (exact: no approximation of the noise).

    Parameters
    ----------
    noisy_count
        The released count ``z`` (a PyTensor scalar).
    p
        The success probability (a PyTensor scalar).
    n
        The public number of records (a Python int: it fixes the sum's length).
    scale
        The Laplace scale ``b = sensitivity / ε`` of the release.

    Returns
    -------
    pytensor.tensor.TensorVariable
        A scalar log-density.
    """
    import pymc as pm
    import pytensor.tensor as pt

    k = pt.arange(int(n) + 1)
    log_binomial = pm.logp(pm.Binomial.dist(n=int(n), p=p), k)
    log_laplace = -pt.abs(noisy_count - k) / scale - pt.log(2.0 * scale)
    return pt.logsumexp(log_binomial + log_laplace)


def _make_records(n: int = N_RECORDS, p: float = TRUE_P) -> np.ndarray:
    return np.random.default_rng(DATA_SEED).binomial(1, p, size=n).astype(np.int64)


def run_demo(
    output_dir: str | os.PathLike[str] = "demo_output",
    seed: int | None = None,
    draws: int = 1000,
    progressbar: bool | None = None,
    *,
    tune: int = 1000,
    chains: int = 2,
    verbose: bool = True,
) -> dict[str, Any]:
    """Run the private beta-Bernoulli analysis, save the released trace, explain it.

    Parameters
    ----------
    output_dir
        Directory the released trace is written to (created if needed), as
        ``beta_bernoulli_trace.nc``.
    seed
        ``None`` (default): the Laplace noise comes from OpenDP's secure sampler and
        the MCMC seed is random. An int: seeded (reproducible) noise and MCMC, for
        tests and teaching; the ledger records the noise as ``"seeded"``, which is
        not safe to publish.
    draws
        Posterior draws per chain (after ``tune`` tuning draws).
    progressbar
        Show PyMC's progress bar; default: only when standard output is a terminal.
    tune
        Tuning draws per chain.
    chains
        Number of chains (run one after another).
    verbose
        Print the plain-words account of what was done.

    Returns
    -------
    dict
        ``n``, ``true_p``, ``true_count``, ``sample_proportion``, ``epsilon``,
        ``noise_scale``, ``noise_source``, ``noisy_count``, ``posterior_mean``,
        ``hdi_94`` (lower, upper), ``r_hat``, ``path`` (the saved file) and
        ``ledger`` (the :class:`~pymc_dp.accounting.PrivacyLedger`).
    """
    import arviz as az
    import pymc as pm

    from ..accounting import Budget, PrivacyLedger
    from ..mechanisms import laplace_mechanism
    from ..trace import release

    say = print if verbose else (lambda *a, **k: None)
    if progressbar is None:
        progressbar = bool(getattr(sys.stdout, "isatty", lambda: False)())
    if seed is None:
        noise_rng, mcmc_seed = None, None
    else:
        noise_ss, mcmc_ss = np.random.SeedSequence(int(seed)).spawn(2)
        noise_rng = np.random.default_rng(noise_ss)
        mcmc_seed = int(mcmc_ss.generate_state(1)[0])

    # 1. The sensitive data (synthetic). Only the curator sees these.
    records = _make_records()
    n = int(records.size)
    true_count = int(records.sum())

    # 2. The one and only access to the records: a Laplace-noised count.
    ledger = PrivacyLedger(budget=Budget(epsilon=BUDGET_EPSILON))
    noisy_count, entry = laplace_mechanism(
        float(true_count),
        epsilon=EPSILON,
        sensitivity=1.0,  # replacing one record changes the count by at most 1
        ledger=ledger,
        rng=noise_rng,
        touched="records:count of positives",
        return_entry=True,  # the ledger's record of this spend
    )
    noisy_count = float(noisy_count)
    scale = float(entry.details["scale"])
    del records  # nothing below touches the records

    # 3. A model of the noisy count that knows about the noise.
    def logp(value, p, n_, scale_):
        return noise_aware_count_logp(value, p, n, scale)

    def random(p, n_, scale_, rng=None, size=None):
        return rng.binomial(n_, p, size=size) + rng.laplace(0.0, scale_, size=size)

    with pm.Model() as model:
        p = pm.Beta("p", 1.0, 1.0)
        pm.CustomDist("noisy_count", p, n, scale, logp=logp, random=random, observed=noisy_count)
        idata = pm.sample(
            draws=draws,
            tune=tune,
            chains=chains,
            cores=1,
            random_seed=mcmc_seed,
            progressbar=progressbar,
            compute_convergence_checks=False,
        )

    # 4. Release from a whitelist and save.
    released = release(idata, ledger=ledger, model=model)
    out_dir = Path(output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / TRACE_FILE
    released.to_netcdf(str(path))

    post = released.posterior["p"].values.ravel()
    hdi = _compat.hdi(released, 0.94, var_names=["p"])["p"].values
    lower, upper = float(hdi[0]), float(hdi[1])
    r_hat = float(az.rhat(released, var_names=["p"])["p"].values) if chains > 1 else float("nan")
    result = {
        "n": n,
        "true_p": TRUE_P,
        "true_count": true_count,
        "sample_proportion": true_count / n,
        "epsilon": EPSILON,
        "noise_scale": scale,
        "noise_source": entry.noise_source,
        "noisy_count": noisy_count,
        "posterior_mean": float(post.mean()),
        "hdi_94": (lower, upper),
        "r_hat": r_hat,
        "path": str(path),
        "ledger": ledger,
    }

    noise_sd = float(np.sqrt(2.0) * scale)
    binomial_sd = float(np.sqrt(n * TRUE_P * (1 - TRUE_P)))
    say("pymc-dp demo: a private beta-Bernoulli analysis")
    say("=" * 48)
    say(
        f"Data: {n:,} sensitive yes/no records (synthetic, drawn with true proportion p = {TRUE_P}); "
        f"{true_count} are 'yes' (sample proportion {true_count / n:.4f}). Only the curator sees these."
    )
    say(
        f"Privatised: the count of 'yes' records, once, with the Laplace mechanism at ε = {EPSILON} "
        f"(sensitivity 1 under replace-one neighbouring, N public; noise scale b = {scale:g}, "
        f"noise sd {noise_sd:.2f} counts vs the binomial sd of the count, about {binomial_sd:.1f})."
    )
    if entry.noise_source == "seeded":
        say("  Noise source: seeded NumPy generator (reproducible, for teaching and tests; never publish such a release).")
    else:
        say(f"  Noise source: {entry.noise_source} (OpenDP's exact, floating-point-safe sampler).")
    say(f"Released noisy count: {noisy_count:.2f}")
    say(
        "Model: p ~ Beta(1, 1); the true count k ~ Binomial(N, p) is summed out exactly against the Laplace noise "
        "(noise-aware likelihood), so the posterior carries the extra uncertainty the noise adds."
    )
    say(
        f"Posterior for p ({chains} chains x {draws} draws): mean {result['posterior_mean']:.4f}, "
        f"94% HDI [{lower:.4f}, {upper:.4f}]; the truth is p = {TRUE_P} "
        f"({'inside' if lower <= TRUE_P <= upper else 'outside'} the interval). r_hat = {r_hat:.3f}."
    )
    say(
        "Everything after the single Laplace draw (the model, the MCMC, every draw and chain, the summaries) "
        "only uses the noisy count: it is post-processing and costs no further privacy."
    )
    say("")
    say(ledger.summary())
    remaining = ledger.remaining()
    if remaining is not None:
        say(f"Budget left: ε = {remaining.epsilon:g}")
    say("")
    say(
        f"Released trace saved to {path} (posterior of p and the ledger only: no records, no observed data, "
        "no sampler internals)."
    )
    say(f"Read its ledger back with:  pymc-dp ledger {path}")
    say(f"or in Python:  import pymc_dp as pmdp; print(pmdp.ledger(\"{path}\").summary())")
    return result


if __name__ == "__main__":  # pragma: no cover - manual run
    run_demo()
