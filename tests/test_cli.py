"""Tests of the ``pymc-dp`` command (``pymc_dp.cli.main``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import arviz as az
import numpy as np
import pytest
import xarray as xr

import pymc_dp
from pymc_dp import _compat
from pymc_dp.accounting import Budget, PrivacyLedger
from pymc_dp.cli import main
from pymc_dp.trace import attach_ledger


def _trace():
    post = xr.Dataset(
        {"p": (("chain", "draw"), np.random.default_rng(0).uniform(size=(2, 10)))},
        coords={"chain": [0, 1], "draw": np.arange(10)},
    )
    return _compat.new_trace({"posterior": post})


@pytest.fixture
def saved(tmp_path) -> tuple[Path, PrivacyLedger]:
    lg = PrivacyLedger(budget=Budget(epsilon=2.0, delta=1e-5))
    lg.spend("laplace", 0.5, touched="y:count", noise_source="seeded")
    lg.spend("gaussian", 0.3, 1e-6, touched="y:sum", noise_source="seeded", count=2)
    path = tmp_path / "trace.nc"
    attach_ledger(_trace(), lg).to_netcdf(str(path))
    return path, lg


def test_ledger_reads_a_zarr_store(tmp_path, capsys):
    pytest.importorskip("zarr")
    lg = PrivacyLedger()
    lg.spend("laplace", 0.5, touched="y:count", noise_source="seeded")
    path = tmp_path / "trace.zarr"
    _compat.save(attach_ledger(_trace(), lg), path)
    assert main(["ledger", str(path)]) == 0
    assert "Total cost under basic composition: ε = 0.5" in capsys.readouterr().out


def test_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"pymc-dp {pymc_dp.__version__}"


def test_help(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "ledger" in out and "demo" in out


def test_no_command_is_a_usage_error(capsys):
    assert main([]) == 2
    assert "usage" in capsys.readouterr().err


def test_ledger_prints_table_and_total(saved, capsys):
    path, lg = saved
    assert main(["ledger", str(path)]) == 0
    out = capsys.readouterr().out
    assert "laplace" in out and "gaussian" in out and "y:count" in out
    total = lg.total()
    assert f"Total cost under basic composition: ε = {total.epsilon:.6g}" in out


@pytest.mark.parametrize("method", ["advanced", "rdp", "pld", "best"])
def test_ledger_tight_methods(saved, capsys, method):
    path, lg = saved
    assert main(["ledger", str(path), "--method", method, "--delta", "1e-5"]) == 0
    out = capsys.readouterr().out
    total = lg.total(method, 1e-5)
    assert f"Total cost under {method} composition at δ = 1e-05: ε = {total.epsilon:.6g}" in out


def test_ledger_missing_file(tmp_path, capsys):
    code = main(["ledger", str(tmp_path / "nope.nc")])
    err = capsys.readouterr().err
    assert code == 1
    assert err.startswith("pymc-dp: error: no such file") and err.count("\n") == 1


def test_ledger_trace_without_ledger(tmp_path, capsys):
    path = tmp_path / "plain.nc"
    _trace().to_netcdf(str(path))
    code = main(["ledger", str(path)])
    err = capsys.readouterr().err
    assert code == 1
    assert "no privacy ledger" in err and err.count("\n") == 1


def test_ledger_not_a_netcdf_file(tmp_path, capsys):
    path = tmp_path / "junk.nc"
    path.write_text("not a trace")
    assert main(["ledger", str(path)]) == 1
    err = capsys.readouterr().err
    assert "cannot read" in err and err.count("\n") == 1


def test_ledger_bad_method_is_usage_error(saved, capsys):
    path, _ = saved
    assert main(["ledger", str(path), "--method", "magic"]) == 2


def test_beta_bernoulli_demo_passes_options(monkeypatch, tmp_path):
    import pymc_dp.examples.beta_bernoulli as bb

    calls = {}
    monkeypatch.setattr(bb, "run_demo", lambda **kw: calls.update(kw) or {})
    assert main(["demo", "--example", "beta-bernoulli", "--output", str(tmp_path), "--seed", "7", "--draws", "20"]) == 0
    assert calls == {"output_dir": str(tmp_path), "seed": 7, "draws": 20}


def test_warlogs_demo_is_the_default_and_passes_options(monkeypatch, tmp_path):
    import pymc_dp.examples.warlogs.demo as wd

    calls = {}
    monkeypatch.setattr(wd, "run_demo", lambda **kw: calls.update(kw) or {})
    argv = ["demo", "--preset", "small", "--epsilon", "2", "--states", "4", "--iterations", "30", "--output", str(tmp_path), "--seed", "3"]
    assert main(argv) == 0
    assert calls == {"output_dir": str(tmp_path), "preset": "small", "epsilon": 2.0, "num_states": 4, "iterations": 30, "seed": 3}


@pytest.mark.parametrize("bad", [["--epsilon", "0"], ["--states", "0"], ["--iterations", "1"]])
def test_warlogs_demo_bad_options_fail_with_one_line(bad, capsys):
    assert main(["demo", *bad]) == 1
    assert capsys.readouterr().err.count("\n") == 1


def test_bench_heldout_writes_table_json_and_plot(tmp_path, capsys):
    argv = ["bench", "heldout", "--preset", "small", "--splits", "1", "--states", "2", "--epsilons", "1",
            "--iterations", "10", "--output", str(tmp_path)]
    assert main(argv) == 0
    assert {p.name for p in tmp_path.iterdir()} == {"heldout.md", "heldout.json", "heldout.png"}
    table = (tmp_path / "heldout.md").read_text()
    assert "| small | naive Bayes | 1 |" in table and "| small | HMM | 1 |" in table
    assert main(["bench"]) == 2


def test_bench_holdout_writes_table_json_and_plot(tmp_path, capsys):
    argv = ["bench", "holdout", "--records", "400", "--features", "200", "--runs", "1", "--output", str(tmp_path)]
    assert main(argv) == 0
    assert {p.name for p in tmp_path.iterdir()} == {"holdout.md", "holdout.json", "holdout.png"}
    table = (tmp_path / "holdout.md").read_text()
    assert "| no signal | 10 |" in table and "| 20 informative features | 10 |" in table
    assert main(["bench", "holdout", "--runs", "0"]) == 1


def test_console_script_installed():
    script = Path(sys.executable).parent / "pymc-dp"
    if not script.exists():
        pytest.skip(f"console script not installed next to {sys.executable}")
    done = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"pymc-dp {pymc_dp.__version__}"
