"""numba is the war-logs case study's optional dependency (the ``warlogs`` extra), not the core's.

Each check runs in a fresh interpreter where ``import numba`` fails
(``sys.modules["numba"] = None``), so nothing imported earlier by the test session
can hide an import.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]

BLOCK = "import sys\nsys.modules['numba'] = None  # import numba now raises ImportError\n"


def _run_without_numba(code: str) -> dict:
    """Run ``code`` (which prints one JSON line last) in a subprocess without numba; the parsed line."""
    done = subprocess.run(
        [sys.executable, "-c", BLOCK + textwrap.dedent(code)], cwd=ROOT, capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_core_imports_and_works_without_numba():
    out = _run_without_numba(
        """
        import importlib, json, pkgutil
        import numpy as np
        import pymc_dp as pmdp
        from pymc_dp.mechanisms import laplace_mechanism

        missing = [name for name in pmdp.__all__ if not hasattr(pmdp, name)]
        modules = [m.name for m in pkgutil.walk_packages(pmdp.__path__, "pymc_dp.") if not m.name.startswith("pymc_dp.examples.warlogs")]
        for name in modules:
            importlib.import_module(name)
        ledger = pmdp.PrivacyLedger(budget=pmdp.Budget(epsilon=1.0))
        noisy = laplace_mechanism(np.array([10.0, 20.0]), epsilon=0.5, sensitivity=1.0, ledger=ledger, rng=0)
        print(json.dumps({"missing": missing, "modules": len(modules), "numba": sys.modules["numba"] is None,
                          "spent": ledger.spent.epsilon, "shape": list(np.shape(noisy))}))
        """
    )
    assert out["missing"] == [] and out["modules"] > 50
    assert out["numba"], "something imported numba after all"
    assert out["spent"] == pytest.approx(0.5) and out["shape"] == [2]


def test_the_case_study_falls_back_to_numpy_ffbs_and_names_the_extra_for_the_rest():
    """The plug-in engine (FFBS) runs on NumPy and gives the same fit; the noise-aware parts say what to install."""
    out = _run_without_numba(
        """
        import json
        import numpy as np
        from pymc_dp.examples.warlogs import data, demo, heldout, hmm, laplace_counts, model, ops, steps

        counts = data.feature_counts(data.generate("small", seed=0))
        fit = hmm.gibbs_hmm(counts, 2, 20, 10, seed=3)
        errors = []
        for call in (lambda: hmm.gibbs_hmm_noise_aware(counts, 1.0, 2, 4, 2),
                     lambda: laplace_counts.log_marginal(3.0, 1.0, 0.5),
                     lambda: heldout.run_heldout("small", splits=1, iterations=2, burn_in=1)):
            try:
                call()
                errors.append(None)
            except ImportError as e:
                errors.append(str(e))
        print(json.dumps({"states": fit.states.tolist(), "trace": fit.log_likelihood.tolist(), "errors": errors}))
        """
    )
    from pymc_dp.examples.warlogs import data, hmm

    counts = data.feature_counts(data.generate("small", seed=0))
    fit = hmm.gibbs_hmm(counts, 2, 20, 10, seed=3)  # the numba kernel, in this process
    assert np.array_equal(np.array(out["states"]), fit.states)
    np.testing.assert_allclose(out["trace"], fit.log_likelihood, rtol=1e-12)
    assert all(e is not None and 'pip install "pymc-dp[warlogs]"' in e for e in out["errors"]), out["errors"]
