"""tools/canary.py: reading a lock, and naming the release that breaks the tests.

The canary itself installs the newest releases from PyPI (CI runs it); here its
bisection is checked with the installs and test runs replaced by fakes.
"""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _canary():
    spec = importlib.util.spec_from_file_location("canary", ROOT / "tools" / "canary.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_read_lock_normalises_names_and_skips_comments(tmp_path):
    lock = tmp_path / "lock.txt"
    lock.write_text("# a comment\nPyMC==6.4.0\narviz_base==1.3.1  # trailing\n\nnumpy==2.5.5\n")
    assert _canary().read_lock(lock) == {"pymc": "6.4.0", "arviz-base": "1.3.1", "numpy": "2.5.5"}


def test_every_committed_lock_pins_the_pymc_line_of_its_target():
    canary = _canary()
    py312, py311 = (canary.read_lock(ROOT / "locks" / f"{t}.txt") for t in ("py312", "py311"))
    assert py312["pymc"].startswith("6.") and py312["arviz"].startswith("1.")
    assert py311["pymc"].startswith("5.") and py311["arviz"].startswith("0.")
    for lock in (py312, py311):
        assert {"pytensor", "numpy", "opendp", "dp-accounting", "pip", "setuptools"} <= set(lock)


def test_bisect_names_the_package_whose_locked_release_fixes_the_tests(monkeypatch):
    canary = _canary()
    installed = {"pymc": "6.5.0", "numpy": "2.6.0", "rich": "15.0"}

    def fake_run(cmd, *args, **kwargs):
        name, version = cmd[-1].split("==")
        installed[name] = version
        return subprocess.CompletedProcess(cmd, 0)

    def fake_tests(python, tests):
        ok = installed["numpy"] == "2.5.5"  # the new numpy is what breaks them
        return ok, [] if ok else ["tests/test_trace.py::test_x"], ""

    monkeypatch.setattr(canary.subprocess, "run", fake_run)
    monkeypatch.setattr(canary, "run_tests", fake_tests)
    changed = {"pymc": ("6.4.0", "6.5.0"), "numpy": ("2.5.5", "2.6.0"), "rich": ("14.0", "15.0"), "new-dep": (None, "1.0")}
    blamed = canary.bisect(Path("python"), changed, {}, ["tests/test_trace.py::test_x"])
    assert blamed == {"numpy": ("2.5.5", "2.6.0")}
    assert installed == {"pymc": "6.5.0", "numpy": "2.6.0", "rich": "15.0"}  # every new release put back
