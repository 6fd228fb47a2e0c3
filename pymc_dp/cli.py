"""The ``pymc-dp`` command.

::

    pymc-dp --version
    pymc-dp ledger TRACE.nc [--method {basic,advanced,rdp,pld,best}] [--delta D] [--key-file FILE]
    pymc-dp demo [--preset P] [--epsilon E] [--states K] [--iterations N] [--output DIR] [--seed N]
    pymc-dp demo --example beta-bernoulli [--output DIR] [--seed N] [--draws N]
    pymc-dp bench heldout [--preset P ...] [--splits N] [--states K] [--epsilons E ...] [--output DIR] [--seed N]
    pymc-dp bench holdout [--records N] [--features D] [--runs R] [--output DIR] [--seed N]
    pymc-dp audit [--only NAME ...] [--runs-scale S] [--noise {secure,seeded}] [--no-broken] [--seed N] [--output FILE]
    pymc-dp audit --scan FOLDER --records CSV [--group COLUMN ...] [--neighbouring {replace,add_remove}] [--public X ...] [--allow STAT ...]

PyMC itself is imported only inside the subcommands that need it.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path

from .accounting import COMPOSITION_METHODS as METHODS

__all__ = ["main", "build_parser"]

PROG = "pymc-dp"


class _CommandError(Exception):
    """A failure reported as one line on stderr with exit status 1."""


def _version() -> str:
    from . import __version__

    return str(__version__)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``pymc-dp`` (subcommands ``ledger``, ``demo``, ``bench`` and ``audit``).

    Returns
    -------
    argparse.ArgumentParser
    """
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Differential privacy for PyMC: inspect the privacy ledger of a saved trace, run the demo or a study, or audit the mechanisms.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p_ledger = sub.add_parser(
        "ledger",
        help="print the privacy ledger of a saved trace (.nc)",
        description="Print the privacy ledger stored in a trace saved with to_netcdf, and its total cost.",
    )
    p_ledger.add_argument("file", metavar="FILE", help="a trace saved by pymc_dp (to_netcdf, or a .zarr store)")
    p_ledger.add_argument(
        "--method",
        choices=METHODS,
        default="basic",
        help="composition method for the total (default: basic; advanced and rdp need --delta)",
    )
    p_ledger.add_argument("--delta", type=float, default=None, help="total δ at which to report ε (tight methods)")
    p_ledger.add_argument(
        "--key-file",
        default=None,
        metavar="FILE",
        help="file holding the curator's secret key: refuse the ledger unless every stored copy is signed with it",
    )
    p_ledger.set_defaults(func=_cmd_ledger)

    p_demo = sub.add_parser(
        "demo",
        help="run the case study: a private HMM of war-log records, with a report folder",
        description=(
            "Generate Iraq-like war-log records, privatise their feature counts once with the Laplace mechanism "
            "(ε split over the five features), fit a K-state HMM with pm.sample and the HMM Gibbs steps, and write "
            "a report folder (state heat map, emission plots, ledger, ArviZ diagnostics, released trace). "
            "--example beta-bernoulli runs the small beta-Bernoulli analysis instead."
        ),
    )
    p_demo.add_argument("--example", choices=("warlogs", "beta-bernoulli"), default="warlogs", help="which demo (default: warlogs)")
    p_demo.add_argument("--preset", choices=("iraq", "afghanistan", "small"), default="iraq", help="data preset (default: iraq)")
    p_demo.add_argument("--epsilon", type=float, default=5.0, metavar="E", help="total ε, split over 5 features (default 5)")
    p_demo.add_argument("--states", type=int, default=10, metavar="K", help="HMM states (default 10)")
    p_demo.add_argument("--iterations", type=int, default=200, metavar="N", help="Gibbs iterations per chain, half burn-in (default 200)")
    p_demo.add_argument("--output", default="demo_output", metavar="DIR", help="the report folder (default: demo_output)")
    p_demo.add_argument(
        "--seed",
        type=int,
        default=None,
        metavar="N",
        help="seed the data, the noise and the sampler (reproducible; default: secure OpenDP noise)",
    )
    p_demo.add_argument("--draws", type=int, default=1000, metavar="N", help="beta-bernoulli only: posterior draws per chain")
    p_demo.set_defaults(func=_cmd_demo)

    p_bench = sub.add_parser("bench", help="run a study and write its table and plot", description="Studies: heldout, holdout.")
    bench_sub = p_bench.add_subparsers(dest="study", metavar="STUDY")
    p_heldout = bench_sub.add_parser(
        "heldout",
        help="held-out log-likelihood of Laplace vs OPS vs non-private ([FGWC16] Fig. 6)",
        description=(
            "Hold out 10 % of the region-months, fit naive Bayes and the HMM by each route at each ε, and score the "
            "held-out records; writes heldout.md, heldout.json and heldout.png."
        ),
    )
    p_heldout.add_argument("--preset", nargs="+", choices=("iraq", "afghanistan", "small"), default=["iraq", "afghanistan"])
    p_heldout.add_argument("--splits", type=int, default=3, metavar="N", help="random held-out splits (default 3)")
    p_heldout.add_argument("--states", type=int, default=10, metavar="K", help="HMM states (default 10)")
    p_heldout.add_argument("--epsilons", type=float, nargs="+", default=[0.1, 0.3, 1.0, 3.0, 10.0], metavar="E")
    p_heldout.add_argument("--iterations", type=int, default=200, metavar="N", help="Gibbs iterations, half burn-in (default 200)")
    p_heldout.add_argument("--output", default="bench_output", metavar="DIR", help="where to write the results (default: bench_output)")
    p_heldout.add_argument("--seed", type=int, default=0, metavar="N", help="seed of the data, splits and noise (default 0)")
    p_heldout.set_defaults(func=_cmd_bench_heldout)
    p_holdout = bench_sub.add_parser(
        "holdout",
        help="the reusable holdout against the plain one under adaptive reuse (Dwork et al. 2015, Fig. 2)",
        description=(
            "Select features adaptively on pure noise (and on data with 20 informative features) through the plain "
            "holdout and through pmdp.ReusableHoldout; writes holdout.md, holdout.json and holdout.png."
        ),
    )
    p_holdout.add_argument("--records", type=int, default=10_000, metavar="N", help="records in each set (default 10000)")
    p_holdout.add_argument("--features", type=int, default=10_000, metavar="D", help="features (default 10000)")
    p_holdout.add_argument("--runs", type=int, default=10, metavar="R", help="runs averaged per setting (default 10)")
    p_holdout.add_argument("--output", default="bench_output", metavar="DIR", help="where to write the results (default: bench_output)")
    p_holdout.add_argument("--seed", type=int, default=0, metavar="N", help="first seed (default 0)")
    p_holdout.set_defaults(func=_cmd_bench_holdout)

    p_audit = sub.add_parser(
        "audit",
        help="empirically audit every mechanism and private step, and a broken twin of each",
        description=(
            "Run every mechanism and private step of pymc_dp many times on two neighbouring inputs and print a "
            "Clopper-Pearson lower bound on its privacy loss next to the claimed epsilon. A bound above the claim is "
            "a failed audit; each mechanism's broken twin (noise scale halved) must fail. Exit status 1 if a "
            "mechanism fails or a broken twin is missed."
        ),
    )
    p_audit.add_argument("--only", nargs="+", metavar="NAME", default=None, help="audit only these targets (names as in the table)")
    p_audit.add_argument("--runs-scale", type=float, default=1.0, metavar="S", help="multiply every target's run count (default 1)")
    p_audit.add_argument(
        "--noise", choices=("secure", "seeded"), default="secure",
        help="noise of the mechanisms: their default OpenDP source (secure, default) or a seeded NumPy generator (faster)",
    )
    p_audit.add_argument("--no-broken", action="store_true", help="skip the broken twins")
    p_audit.add_argument("--seed", type=int, default=0, metavar="N", help="seed of the auditor's generator (default 0)")
    p_audit.add_argument("--confidence", type=float, default=0.99, metavar="C", help="confidence of the lower bounds (default 0.99)")
    p_audit.add_argument("--output", default=None, metavar="FILE", help="also write the Markdown table to FILE")
    p_audit.add_argument(
        "--scan", default=None, metavar="FOLDER",
        help="instead: scan every file of FOLDER (report text, JSON, CSV, saved traces, .npy) for the records of "
        "--records, their exact statistics and data-dependent shapes; exit status 1 if anything is found, 2 if a "
        "file that is not an image could not be read",
    )
    p_audit.add_argument("--records", default=None, metavar="CSV", help="with --scan: the private records (a CSV; numeric columns are scanned for)")
    p_audit.add_argument(
        "--group", nargs="+", default=None, metavar="COLUMN",
        help="with --scan: columns of --records whose combination groups the records (e.g. region month): "
        "per-group counts and medians are looked for too",
    )
    p_audit.add_argument(
        "--neighbouring", choices=("replace", "add_remove"), default="replace",
        help="with --scan: under add_remove the number of records is private and is looked for too (default replace)",
    )
    p_audit.add_argument("--public", nargs="+", type=float, default=(), metavar="X", help="with --scan: numbers declared public")
    p_audit.add_argument(
        "--allow", nargs="+", default=(), metavar="STAT",
        help="with --scan: statistics released on purpose or judged coincidences (e.g. y.sum, or a kind: count)",
    )
    p_audit.set_defaults(func=_cmd_audit)
    return parser


def _cmd_ledger(args: argparse.Namespace) -> int:
    path = Path(args.file)
    if not path.exists():
        raise _CommandError(f"no such file: {path}")
    if path.is_dir() and not path.name.endswith(".zarr"):
        raise _CommandError(f"{path} is a directory, not a saved trace (a Zarr store's name ends in .zarr)")
    if args.delta is not None and not (0.0 <= args.delta < 1.0):
        raise _CommandError(f"--delta must be in [0, 1), got {args.delta}")

    from .trace import MissingLedgerError, ledger
    from . import _compat

    key = None
    if args.key_file is not None:
        try:
            key = Path(args.key_file).read_bytes()
            key = key[:-2] if key.endswith(b"\r\n") else key[:-1] if key.endswith(b"\n") else key  # one line end
        except OSError as err:
            raise _CommandError(f"cannot read --key-file {args.key_file}: {err.strerror}") from None
        if not key:
            raise _CommandError(f"--key-file {args.key_file} is empty; it must hold the curator's secret key")

    try:
        trace = _compat.load(path)
    except Exception as err:  # noqa: BLE001 - any reader failure is "not a trace"
        raise _CommandError(f"cannot read {path} as a saved trace: {_first_line(err)}") from None
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lg = ledger(trace, key=key)
    except MissingLedgerError:
        raise _CommandError(f"{path} has no privacy ledger: this trace was not produced by pymc_dp") from None
    except ValueError as err:
        raise _CommandError(f"{path}: {_first_line(err)}") from None
    try:
        total = lg.total(args.method, args.delta)
        table = lg.summary()
    except (ValueError, TypeError) as err:
        raise _CommandError(f"cannot compute the {args.method} total: {_first_line(err)}") from None

    print(f"Trace: {path}")
    unverified = any("cannot be verified" in str(w.message) for w in caught)
    if unverified:
        integrity = "NOT VERIFIED: a stored ledger predates content digests (format version 1); its entries could have been edited"
    elif key:
        integrity = "signature verified with the given key"
    else:
        integrity = "content digests verified (not signed: pass --key-file to check the curator's signature)"
    print("Integrity: " + integrity)
    print(table)
    delta_note = "" if args.delta is None else f" at δ = {args.delta:g}"
    print(f"Total cost under {args.method} composition{delta_note}: ε = {total.epsilon:.6g}, δ = {total.delta:.3g}")
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    if args.example == "beta-bernoulli":
        if args.draws < 1:
            raise _CommandError(f"--draws must be at least 1, got {args.draws}")
        from .examples.beta_bernoulli import run_demo as run_beta_bernoulli

        run_beta_bernoulli(output_dir=args.output, seed=args.seed, draws=args.draws)
        return 0
    if not args.epsilon > 0:
        raise _CommandError(f"--epsilon must be > 0, got {args.epsilon}")
    if args.states < 1:
        raise _CommandError(f"--states must be at least 1, got {args.states}")
    if args.iterations < 2:
        raise _CommandError(f"--iterations must be at least 2, got {args.iterations}")
    from .examples.warlogs.demo import run_demo

    run_demo(
        output_dir=args.output, preset=args.preset, epsilon=args.epsilon, num_states=args.states,
        iterations=args.iterations, seed=args.seed,
    )
    return 0


def _cmd_bench_heldout(args: argparse.Namespace) -> int:
    import json

    from .examples.warlogs import heldout

    if args.splits < 1 or args.states < 1 or args.iterations < 2 or any(e <= 0 for e in args.epsilons):
        raise _CommandError("--splits and --states must be >= 1, --iterations >= 2 and every --epsilons value > 0")
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for preset in args.preset:
        rows += heldout.run_heldout(
            preset, epsilons=args.epsilons, num_states=args.states, splits=args.splits,
            iterations=args.iterations, burn_in=args.iterations // 2, seed=args.seed, progress=True,
        )
    summary = heldout.summarize(rows)
    differences = heldout.paired_differences(rows)
    table = heldout.format_table(summary) + "\n\nPaired by split:\n\n" + heldout.format_differences(differences)
    (out / "heldout.md").write_text(table + "\n")
    payload = {"rows": rows, "summary": summary, "paired_differences": differences}
    (out / "heldout.json").write_text(json.dumps(payload, indent=1, default=str) + "\n")
    heldout.plot_heldout(summary, out / "heldout.png")
    print(table)
    print(f"results: {out}/heldout.md heldout.json heldout.png")
    return 0


def _cmd_bench_holdout(args: argparse.Namespace) -> int:
    import json

    from .examples import thresholdout

    if args.records < 100 or args.features < 50 or args.runs < 1:
        raise _CommandError("--records must be >= 100, --features >= 50 and --runs >= 1")
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    results = thresholdout.run_study(args.records, args.features, runs=args.runs, seed=args.seed)
    table = thresholdout.format_table(results)
    (out / "holdout.md").write_text(table + "\n")
    (out / "holdout.json").write_text(json.dumps(results, indent=1) + "\n")
    thresholdout.plot_curves(results, out / "holdout.png")
    print(table)
    print(f"results: {out}/holdout.md holdout.json holdout.png")
    return 0


#: The name of the ledger's concurrency check among the audit targets (``--only``).
LEDGER_RACE = "ledger-concurrency"


def _cmd_audit_scan(args: argparse.Namespace) -> int:
    import numpy as np
    import pandas as pd

    from .audit import scan_folder

    if args.records is None:
        raise _CommandError("--scan needs --records CSV: the private records to look for")
    try:
        frame = pd.read_csv(args.records)
    except (OSError, ValueError) as err:
        raise _CommandError(f"cannot read --records {args.records} as a CSV: {_first_line(err)}") from None
    groups = None
    if args.group:
        missing = [c for c in args.group if c not in frame.columns]
        if missing:
            raise _CommandError(f"--group names column(s) {missing} that {args.records} does not have: {list(frame.columns)}")
        groups = {"-".join(args.group): tuple(frame[c].to_numpy() for c in args.group)}
    numeric = [c for c in frame.columns if pd.api.types.is_numeric_dtype(frame[c]) and c not in (args.group or ())]
    if not numeric:
        raise _CommandError(f"{args.records} has no numeric column to look for")
    records = {c: frame[c].to_numpy(dtype=np.float64) for c in numeric}
    try:
        report = scan_folder(
            args.scan, records, groups=groups, public=args.public, neighbouring=args.neighbouring, allow=args.allow
        )
    except (FileNotFoundError, ValueError, TypeError) as err:
        raise _CommandError(_first_line(err)) from None
    print(report)
    images = (".png", ".jpg", ".jpeg", ".gif", ".pdf", ".svgz", ".webp")
    unread = [f for f in report.skipped if not f.lower().endswith(images)]
    if unread:
        print(f"{PROG}: audit: {len(unread)} file(s) that may hold data were not scanned: {', '.join(unread)}",
              file=sys.stderr)
    return 1 if not report.clean else 2 if unread else 0


def _cmd_audit(args: argparse.Namespace) -> int:
    import time

    from .audit.targets import TARGETS, format_audit_table, run_audits

    if args.scan is not None:
        return _cmd_audit_scan(args)
    if args.records is not None or args.group:
        raise _CommandError("--records and --group go with --scan FOLDER")
    names = [t.name for t in TARGETS]
    unknown = [n for n in args.only or () if n not in names and n != LEDGER_RACE]
    if unknown:
        raise _CommandError(f"unknown target(s) {unknown}; the targets are: {', '.join(names)}")
    if not args.runs_scale > 0:
        raise _CommandError(f"--runs-scale must be > 0, got {args.runs_scale}")
    if not 0.5 <= args.confidence < 1:
        raise _CommandError(f"--confidence must lie in [0.5, 1), got {args.confidence}")
    start = time.perf_counter()

    def progress(result) -> None:
        verdict = "pass" if result.passed else "FAIL"
        print(f"  [{time.perf_counter() - start:6.0f} s] {result.name}: audited ε ≥ {result.epsilon_lower:.3f} "
              f"(claimed {result.claimed_epsilon:.4g}) {verdict}", file=sys.stderr, flush=True)

    race = None
    if args.only is None or LEDGER_RACE in args.only:
        from .audit.ledger_race import audit_concurrent_spends

        race = audit_concurrent_spends()
    only = None if args.only is None else [n for n in args.only if n != LEDGER_RACE]
    results = [] if only == [] else run_audits(
        only, runs_scale=args.runs_scale, noise=args.noise, broken=not args.no_broken, seed=args.seed,
        confidence=args.confidence, progress=progress,
    )
    table = format_audit_table(results) if results else ""
    if race is not None:
        table = (table + "\n\n" if table else "") + f"{LEDGER_RACE}: {race}"
    header = (f"Audit at {args.confidence:.0%} confidence, {args.noise} noise, seed {args.seed} "
              f"({time.perf_counter() - start:.0f} s)")
    print(header + "\n\n" + table)
    if args.output:
        Path(args.output).write_text(header + "\n\n" + table + "\n")
    failed = [ok.name for ok, _ in results if not ok.passed] + ([LEDGER_RACE] if race is not None and not race.passed else [])
    missed = [bad.name for _, bad in results if bad is not None and bad.passed]
    if failed or missed:
        print(f"{PROG}: audit failed: {', '.join(failed + missed)}", file=sys.stderr)
        return 1
    return 0


def _first_line(err: BaseException) -> str:
    text = str(err).strip() or type(err).__name__
    return text.splitlines()[0]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``pymc-dp`` console script.

    Parameters
    ----------
    argv
        Command-line arguments without the program name; default ``sys.argv[1:]``.

    Returns
    -------
    int
        Exit status: 0 on success, 1 when the command failed (a one-line message on
        stderr), 2 for a usage error.
    """
    parser = build_parser()
    try:
        args = parser.parse_args(None if argv is None else list(argv))
    except SystemExit as exc:  # --help, --version and usage errors
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    if getattr(args, "func", None) is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.func(args))
    except _CommandError as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
