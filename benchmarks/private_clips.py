"""The measurements route's private clips beside the box's worst case, over many releases.

Each release is a fresh data set (``benchmarks/utility.py``'s: two covariates uniform on [−1, 1], its declared
outcome ranges) and one run of the route's private Newton rounds with its own schedule, read through the one-step
likelihood's own Gaussian (flat prior; no sampler, so a release takes seconds). Printed per parameter, over the
releases:

- coverage of the truth by the 90 % interval, and beside it the exact MLE's own (its Fisher interval, no privacy)
  on the same data sets: the data's chance, which the private release cannot do better than;
- the interval's width over the sampling s.d. (the exact information's at the truth);
- the released estimate's distance from the exact MLE, in sampling s.d. (what "distance to plain PyMC" measures);
- the last round's score clip, how many records it cut, and the bias that cutting put in the score (in the
  score's sampling s.d.). These last read the records: a study, not a release.

    python benchmarks/private_clips.py --family gamma --releases 40
    python benchmarks/private_clips.py --family "negative binomial" --clips box   # the worst case, nothing chosen
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
import utility as U  # noqa: E402
from glm_models import glm_model  # noqa: E402

#: The nuisances' true values on their unconstrained scale (the Gamma's shape 2, the negative binomial's α 3).
NUISANCES = {"gamma": [np.log(2.0)], "negative binomial": [np.log(3.0)]}


def release(family: str, n: int, seed: int, epsilon: float, clips: str) -> dict:
    """One data set and one release; the numbers above for each parameter."""
    from scipy.stats import norm

    from pymc_dp.accounting import PrivacyLedger
    from pymc_dp.mechanisms.private_newton import clip_rows_l1, private_newton, unvech
    from pymc_dp.model.score_measurements import one_step, plan_score_privatization

    truth = np.r_[U.SLOPES, 1.0, NUISANCES.get(family, [])]
    outcome, draw = U.FAMILIES[family]
    rng = np.random.default_rng(500 + seed)
    x = rng.uniform(-1, 1, (n, 2))
    y = draw(1.0 + x @ U.SLOPES, rng)
    bounds = {"y": {"x": (-1.0, 1.0), **({"y": outcome} if outcome else {})}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = plan_score_privatization(glm_model(family, x, y), epsilon, bounds=bounds)
        schedule = plan.schedule if clips == "private" else replace(plan.schedule, clip_selection=None)
        run = private_newton(lambda p: plan.derivatives.chunks(p, plan.outcomes, plan.designs), plan.clips,
                             start=plan.prior_mean, prior_mean=plan.prior_mean,
                             prior_precision=1.0 / plan.prior_scale**2, bound_step=plan.bound_step, epsilon=epsilon,
                             schedule=schedule, ledger=PrivacyLedger(), rng=seed)
    likelihood = one_step(run.final, run.rounds[-2])
    delta = likelihood.estimate()
    inverse = np.linalg.pinv(likelihood.slope(delta))  # a release whose information is mostly noise: singular
    cov = likelihood.cov + np.diag(likelihood.extra_variance(delta))
    sd, estimate = np.sqrt(np.diag(inverse @ cov @ inverse.T)), run.final.point + delta

    def sums(point):
        chunks = list(plan.derivatives.chunks(point, plan.outcomes, plan.designs))
        return sum(s.sum(0) for s, _ in chunks), unvech(sum(i.sum(0) for _, i in chunks), len(point))

    mle = truth.copy()
    for _ in range(6):  # the exact MLE on the (box-clipped) records: Newton from the truth
        score, information = sums(mle)
        mle = mle + np.linalg.solve(information, score)
    sampling = np.sqrt(np.diag(np.linalg.inv(sums(truth)[1])))
    raw = np.concatenate([s for s, _ in plan.derivatives.chunks(run.final.point, plan.outcomes, plan.designs)])
    weights = 1.0 if run.final.score_weights is None else run.final.score_weights  # the clip's norm: Σ|g_j|/w_j
    cut_scores, cut = clip_rows_l1(raw / weights, run.final.score_clip)
    cut_scores = cut_scores * weights
    fisher = np.sqrt(np.diag(sums(truth)[1]))
    z90 = norm.ppf(0.95)
    return {"covered": np.abs(estimate - truth) < z90 * sd, "mle covered": np.abs(mle - truth) < z90 * sampling,
            "width": sd / sampling, "distance": np.abs(estimate - mle) / sampling, "clip": run.final.score_clip,
            "cut": cut, "bias": (cut_scores.sum(0) - np.nan_to_num(raw).sum(0)) / fisher}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", default="gamma", choices=sorted(U.FAMILIES))
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--releases", type=int, default=40)
    parser.add_argument("--clips", choices=("private", "box"), default="private")
    args = parser.parse_args()
    start = time.perf_counter()
    rows = [release(args.family, args.n, seed, args.epsilon, args.clips) for seed in range(args.releases)]

    def stack(key):
        return np.array([r[key] for r in rows], dtype=float)

    print(f"{args.family}, N = {args.n}, ε = {args.epsilon:g}, {args.clips} clips, {args.releases} releases "
          f"({time.perf_counter() - start:.0f} s)")
    print("  90 % coverage of the truth:", np.round(stack("covered").mean(0), 2),
          " the exact MLE's own:", np.round(stack("mle covered").mean(0), 2))
    print("  width over the sampling s.d. (median):", np.round(np.median(stack("width"), 0), 2))
    distance = stack("distance")
    print("  distance to the exact MLE (sampling s.d.): median", np.round(np.median(distance, 0), 2),
          "largest", np.round(distance.max(0), 2))
    print(f"  last round's score clip (median) {np.median(stack('clip')):.1f}, records cut (median) "
          f"{np.median(stack('cut')):.0f}, the cut's bias in the score (score's sampling s.d., mean) "
          f"{np.round(stack('bias').mean(0), 3)}")


if __name__ == "__main__":
    main()
