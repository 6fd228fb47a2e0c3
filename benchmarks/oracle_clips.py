"""What the measurements route's box clips cost: the same release with the records' own quantile as every clip.

A study, not a release: the oracle reads each round's clips off the records without privacy (the L1 norms of the
records' scores and information at the round's point, their ``--quantile``), so nothing it prints is private. It
measures the ceiling a private clip could reach and what it would have to avoid (see docs/concepts/measurements.md,
"What limits it"). The data are ``benchmarks/utility.py``'s (two covariates uniform on [−1, 1], its declared
outcome ranges); each seed is one release of the same records, beside plain PyMC.

    python benchmarks/oracle_clips.py --family gamma --seeds 1,2,3
    python benchmarks/oracle_clips.py --family "negative binomial" --rounds last   # only the last round clipped
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import utility as U  # noqa: E402


def oracle_clips(quantile: float, last_only: bool):
    """Patch the route's clips with the records' own ``quantile`` (never above the box's), in every round or the last."""
    from pymc_dp.model import score_measurements as SM

    box_clips = SM.ScorePrivatization.clips
    calls: dict[int, int] = {}

    def clips(self, point):
        box_score, box_info = box_clips(self, point)
        calls[id(self)] = calls.get(id(self), 0) + 1  # the first call is the plan's own check, before any round
        if calls[id(self)] == 1 or (last_only and calls[id(self)] != self.schedule.rounds + 1):
            return box_score, box_info
        chunks = list(self.derivatives.chunks(point, self.outcomes, self.designs))
        scores = np.concatenate([np.abs(s).sum(1) for s, _ in chunks])
        infos = np.concatenate([np.abs(i).sum(1) for _, i in chunks])
        return min(float(np.quantile(scores, quantile)), box_score), min(float(np.quantile(infos, quantile)), box_info)

    SM.ScorePrivatization.clips = clips


def main() -> None:
    import pymc as pm

    import pymc_dp as pmdp

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", default="gamma", choices=sorted(U.FAMILIES))
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--quantile", type=float, default=0.999, help="1 keeps the box's clips")
    parser.add_argument("--rounds", choices=("every", "last"), default="every")
    parser.add_argument("--seeds", default="1,2,3")
    args = parser.parse_args()
    if args.quantile < 1:
        oracle_clips(args.quantile, args.rounds == "last")
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (args.n, 2))
    outcome, draw = U.FAMILIES[args.family]
    y = draw(1.0 + x @ U.SLOPES, rng)
    model = U.model_of(args.family, x, y)
    settings = dict(tune=300, chains=2, cores=1, progressbar=False, nuts_sampler="pymc")
    names = [v.name for v in model.free_RVs]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = pm.sample(300, model=model, random_seed=0, **settings)
        print("| seed | " + " | ".join(f"{n}: distance (plain s.d.), width" for n in names) + " |")
        for seed in (int(s) for s in args.seeds.split(",")):
            released = pmdp.sample(300, epsilon=args.epsilon, model=model, random_seed=0, noise_rng=seed,
                                   bounds={"y": {"x": (-1.0, 1.0), "y": outcome}}, **settings)
            cells = []
            for name in names:
                p, r = plain.posterior[name], released.posterior[name]
                sd = p.std(("chain", "draw")).values
                distance = np.abs(r.mean(("chain", "draw")).values - p.mean(("chain", "draw")).values) / sd
                width = r.std(("chain", "draw")).values / sd
                cells.append(f"{np.round(distance, 2)}, {np.round(width, 2)}")
            print(f"| {seed} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
