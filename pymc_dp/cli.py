"""The ``pymc-dp`` command.

::

    pymc-dp --version
    pymc-dp ledger TRACE.nc [--method {basic,advanced,rdp,pld,best}] [--delta D]
    pymc-dp demo [--output DIR] [--seed N] [--draws N]

PyMC itself is imported only inside the subcommands that need it.
"""

from __future__ import annotations

import argparse
import sys
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
    """The argument parser of ``pymc-dp`` (subcommands ``ledger`` and ``demo``).

    Returns
    -------
    argparse.ArgumentParser
    """
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Differential privacy for PyMC: inspect the privacy ledger of a saved trace, or run the demo.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p_ledger = sub.add_parser(
        "ledger",
        help="print the privacy ledger of a saved trace (.nc)",
        description="Print the privacy ledger stored in a trace saved with to_netcdf, and its total cost.",
    )
    p_ledger.add_argument("file", metavar="FILE.nc", help="a trace saved by pymc_dp (to_netcdf)")
    p_ledger.add_argument(
        "--method",
        choices=METHODS,
        default="basic",
        help="composition method for the total (default: basic; advanced and rdp need --delta)",
    )
    p_ledger.add_argument("--delta", type=float, default=None, help="total δ at which to report ε (tight methods)")
    p_ledger.set_defaults(func=_cmd_ledger)

    p_demo = sub.add_parser(
        "demo",
        help="run a small end-to-end private analysis (beta-Bernoulli)",
        description=(
            "Privatise one count of 2,000 synthetic records with the Laplace mechanism (ε = 0.5), fit a "
            "noise-aware PyMC model, release the trace with its ledger and save it."
        ),
    )
    p_demo.add_argument("--output", default="demo_output", metavar="DIR", help="where to save the trace (default: demo_output)")
    p_demo.add_argument(
        "--seed",
        type=int,
        default=None,
        metavar="N",
        help="seed the noise and the sampler (reproducible; default: secure OpenDP noise)",
    )
    p_demo.add_argument("--draws", type=int, default=1000, metavar="N", help="posterior draws per chain (default 1000)")
    p_demo.set_defaults(func=_cmd_demo)
    return parser


def _cmd_ledger(args: argparse.Namespace) -> int:
    path = Path(args.file)
    if not path.exists():
        raise _CommandError(f"no such file: {path}")
    if path.is_dir():
        raise _CommandError(f"{path} is a directory, not a saved trace")
    if args.delta is not None and not (0.0 <= args.delta < 1.0):
        raise _CommandError(f"--delta must be in [0, 1), got {args.delta}")

    from .trace import MissingLedgerError, ledger
    from .trace import _compat

    try:
        trace = _compat.load(path)
    except Exception as err:  # noqa: BLE001 - any reader failure is "not a trace"
        raise _CommandError(f"cannot read {path} as a saved trace: {_first_line(err)}") from None
    try:
        lg = ledger(trace)
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
    print(table)
    delta_note = "" if args.delta is None else f" at δ = {args.delta:g}"
    print(f"Total cost under {args.method} composition{delta_note}: ε = {total.epsilon:.6g}, δ = {total.delta:.3g}")
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    if args.draws < 1:
        raise _CommandError(f"--draws must be at least 1, got {args.draws}")
    from .examples.beta_bernoulli import run_demo

    run_demo(output_dir=args.output, seed=args.seed, draws=args.draws)
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
