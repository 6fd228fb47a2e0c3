"""PyMC's distribution catalogue through the privacy flag: what runs, how close it lands, what it costs.

Every case of ``tests/likelihood_models.py`` (each distribution as an observed variable in
regression form, with coords and dims, N = 120 records drawn from the model) goes through
``pmdp.sample(epsilon=ε, loglik_clip=its clip)`` with ``method="auto"`` at ε = 10 and 100,
beside plain ``pm.sample`` on the same records. Reported per case: the route, the released
draws and their temperature T, the largest distance over every coordinate of the parameters
between the released mean and plain PyMC's posterior mean (in plain posterior s.d.), and the
time of both (2 chains × (400 + 400) for the private run, 2 × (400 + 1000) for plain). A case
pymc_dp refuses is listed with the refusal's reason.

    python benchmarks/likelihoods.py              # results/likelihoods.{json,md}
    python benchmarks/likelihoods.py --stored-only
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
from _runs import StoredRuns, write_results  # noqa: E402

EPSILONS = (10.0, 100.0)


def table(rows: dict[str, dict]) -> str:
    lines = [
        "| likelihood | route | ε = 10: T, draws | ε = 10: distance | ε = 100: T, draws | ε = 100: distance | time (plain) |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, row in rows.items():
        if "refused" in row:
            lines.append(f"| {name} | refused: {row['refused']} | | | | | |")
            continue
        cells = []
        for eps in EPSILONS:
            run = row[f"{eps:g}"]
            cells += [f"{run['temperature']:.2g}, {run['draws']}", f"{max(run['distance'].values()):.2f}"]
        last = row[f"{EPSILONS[-1]:g}"]
        lines.append(f"| {name} | {last['route']} | {' | '.join(cells)} | {last['time']:.1f} s ({last['plain_time']:.1f} s) |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stored-only", action="store_true")
    args = parser.parse_args(argv)
    import likelihood_models as L

    store = StoredRuns(HERE / "results" / "likelihoods_runs.jsonl")
    rows: dict[str, dict] = {}
    for name, case in L.CASES.items():
        if case.refused:
            rows[name] = {"refused": case.refused}
            continue
        keys = {eps: f"{name}|{eps:g}" for eps in EPSILONS}
        if args.stored_only and not all(k in store.done for k in keys.values()):
            continue
        rows[name] = {f"{eps:g}": store.get(key, lambda eps=eps: L.release_beside_plain(name, eps))
                      for eps, key in keys.items()}
    write_results("likelihoods", rows, table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
