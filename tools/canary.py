"""Canary: the newest releases the version ranges allow, on a quick subset of the tests.

``make canary`` (and CI, non-fatally) runs this. It installs the project into a throw-away
venv *without* the lock, so pip takes the newest release of everything pyproject.toml allows,
prints every package whose version differs from ``locks/TARGET.txt``, and runs a quick subset
of the suite. When that subset fails, it finds out which new release is to blame: for each
changed package in turn it puts back the locked version alone and re-runs the failing tests;
a package whose locked version makes them pass again is reported as the one that broke them.

Exit status: 0 when the newest releases pass, 1 when something broke (the report says what),
2 when the canary itself could not run (no network, no interpreter).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: A quick subset that still crosses every layer: accounting and its libraries, the trace layer
#: and its round trips, a route through PyMC's sampler, and the CLI. Kept small: with cold compile
#: caches the eight files it once ran took 7 of CI's minutes; the locked suite runs the rest.
QUICK_TESTS = [
    "tests/test_accounting.py",
    "tests/test_trace.py",
    "tests/test_laplace_route.py",
    "tests/test_cli.py",
]

#: The packages whose releases are most likely to break pymc_dp, tried first when bisecting.
SUSPECTS_FIRST = ["pymc", "pytensor", "arviz", "arviz-base", "arviz-stats", "arviz-plots", "xarray", "numpy",
                  "scipy", "numba", "opendp", "dp-accounting", "h5netcdf", "netcdf4", "zarr", "pandas", "rich"]


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def read_lock(path: Path) -> dict[str, str]:
    """``{package: version}`` of a pip constraints file of ``name==version`` lines."""
    versions = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            name, version = line.split("==", 1)
            versions[_normalise(name)] = version.strip()
    return versions


def installed(python: Path) -> dict[str, str]:
    out = subprocess.run([str(python), "-m", "pip", "list", "--format", "json"], check=True,
                         capture_output=True, text=True).stdout
    return {_normalise(p["name"]): p["version"] for p in json.loads(out)}


def run_tests(python: Path, tests: list[str]) -> tuple[bool, list[str], str]:
    """Run ``tests`` quietly; (passed, ids of failed tests, the tail of the output)."""
    proc = subprocess.run(
        [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfE",
         "-m", "not slow and not study and not calibration and not release_check",
         "--tb=line", "-n", "2", "--dist", "worksteal", *tests],  # both cores, as make test
        cwd=ROOT, capture_output=True, text=True,
    )
    failed = re.findall(r"^(?:FAILED|ERROR) (\S+)", proc.stdout, flags=re.MULTILINE)
    return proc.returncode == 0, failed, "\n".join(proc.stdout.splitlines()[-25:])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", required=True, help="the lock to compare with: locks/TARGET.txt")
    parser.add_argument("--python", required=True, help="the interpreter of that target")
    parser.add_argument("--keep", action="store_true", help="keep the throw-away venv (its path is printed)")
    args = parser.parse_args(argv)

    lock = read_lock(ROOT / "locks" / f"{args.target}.txt")
    venv = Path(tempfile.mkdtemp(prefix=f"pymc-dp-canary-{args.target}-"))
    python = venv / "bin" / "python"
    print(f"canary [{args.target}]: installing the newest releases pyproject.toml allows into {venv}", flush=True)
    try:
        subprocess.run([args.python, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--upgrade", "pip"], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", f"{ROOT}[test,warlogs]"], check=True)
    except subprocess.CalledProcessError as err:
        print(f"canary [{args.target}]: COULD NOT INSTALL the newest releases ({err}); nothing was tested.")
        return 2
    try:
        newest = installed(python)
        changed = {n: (lock.get(n), v) for n, v in newest.items()
                   if n not in ("pymc-dp", "pip", "setuptools", "wheel") and lock.get(n) != v}
        if changed:
            print(f"canary [{args.target}]: {len(changed)} package(s) differ from locks/{args.target}.txt:")
            for name, (old, new) in sorted(changed.items()):
                print(f"    {name:24s} {old or '(not locked)':>12s} -> {new}")
        else:
            print(f"canary [{args.target}]: the newest releases are the locked ones.")
        ok, failed, tail = run_tests(python, QUICK_TESTS)
        if ok:
            print(f"canary [{args.target}]: PASSED on the newest releases ({len(QUICK_TESTS)} test files).")
            return 0
        print("=" * 78)
        print(f"canary [{args.target}]: BROKEN on the newest releases: {len(failed)} failing test(s)")
        print(tail)
        blamed = bisect(python, changed, lock, failed)
        print("=" * 78)
        for name, (old, new) in blamed.items():
            print(f"canary [{args.target}]: {name} {new} BREAKS these tests (they pass with the locked {old}):")
        if not blamed:
            print(f"canary [{args.target}]: no single package release explains the failures; see the output above.")
        for test in failed:
            print(f"    {test}")
        print("=" * 78)
        return 1
    finally:
        if args.keep:
            print(f"canary [{args.target}]: kept {venv}")
        else:
            shutil.rmtree(venv, ignore_errors=True)


def bisect(python: Path, changed: dict[str, tuple[str | None, str]], lock: dict[str, str],
           failed: list[str]) -> dict[str, tuple[str, str]]:
    """Packages whose locked version alone makes the failing tests pass again."""
    tests = sorted({t.split("::")[0] for t in failed}) if failed else QUICK_TESTS
    order = [n for n in SUSPECTS_FIRST if n in changed] + sorted(n for n in changed if n not in SUSPECTS_FIRST)
    blamed = {}
    for name in order:
        old, new = changed[name]
        if old is None:
            continue
        print(f"canary: trying {name}=={old} (locked) in place of {new} ...", flush=True)
        pin = [str(python), "-m", "pip", "install", "--quiet", "--no-deps"]
        if subprocess.run([*pin, f"{name}=={old}"]).returncode != 0:
            continue
        ok, _, _ = run_tests(python, tests)
        subprocess.run([*pin, f"{name}=={new}"])
        if ok:
            blamed[name] = (old, new)
    return blamed


if __name__ == "__main__":
    sys.exit(main())
