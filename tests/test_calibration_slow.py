"""The calibration study of the multivariate noise-aware likelihoods, run in full (slow).

200 simulated data sets per setting, the true parameters drawn from the prior
(simulation-based calibration), each fitted with NUTS: the noise-aware 90 %
intervals must cover the truth in 0.85–0.95 of them. Over 200 data sets a calibrated
interval's coverage has sd √(0.9·0.1/200) ≈ 0.021, so a calibrated method lands in
the band with ≈ 98 % probability; the seeds are fixed, so the check is deterministic.
The plug-in figure is reported beside it and, where the noise dominates, must be
far lower. The full table (and the other settings) is in
``benchmarks/noise_aware_calibration.py`` and the docs.
"""

from __future__ import annotations

import logging

import pytest

from pymc_dp.examples.noise_aware_calibration import normal_coverage, regression_coverage

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _quiet_pymc():
    logger = logging.getLogger("pymc")
    level = logger.level
    logger.setLevel(logging.ERROR)
    yield
    logger.setLevel(level)


def test_normal_unknown_mean_and_variance_is_calibrated():
    coverage = normal_coverage(100, 1.0, repeats=200, seed=0)
    for name, (aware, plug) in coverage.items():
        assert 0.85 <= aware <= 0.95, (name, aware, plug)
    assert coverage["sigma"][1] < 0.7  # n = 100, ε = 1: Σx² is swamped; the plug-in σ interval is far too narrow


def test_regression_is_calibrated_at_n_1000_and_epsilon_0_1():
    aware, plug = regression_coverage(1000, 0.1, repeats=200, seed=0)["beta"]
    assert 0.85 <= aware <= 0.95, (aware, plug)
    assert plug < 0.5  # the plug-in posterior believes in 1000 exact records
