"""Tests of the runnable examples (the beta-Bernoulli demo behind ``pymc-dp demo``)."""

from __future__ import annotations

import arviz as az
import numpy as np
import pytest
from scipy import stats

from pymc_dp.examples.beta_bernoulli import (
    EPSILON,
    N_RECORDS,
    TRACE_FILE,
    TRUE_P,
    noise_aware_count_logp,
    run_demo,
)
from pymc_dp import _compat
from pymc_dp.trace import ledger


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo")
    result = run_demo(output_dir=out, seed=11, draws=200, tune=200, progressbar=False, verbose=False)
    return out, result


def test_demo_saves_released_trace_with_one_laplace_entry(demo):
    out, result = demo
    path = out / TRACE_FILE
    assert result["path"] == str(path) and path.exists()
    saved = ledger(az.from_netcdf(str(path)))
    assert len(saved) == 1
    (entry,) = saved.entries
    assert entry.mechanism == "laplace"
    assert entry.epsilon == EPSILON == 0.5
    assert entry.noise_source == "seeded"
    assert saved == result["ledger"]
    assert saved.total().epsilon == pytest.approx(0.5)


def test_demo_released_file_holds_no_data(demo):
    out, _ = demo
    idata = az.from_netcdf(str(out / TRACE_FILE))
    assert set(_compat.group_names(idata)) == {"posterior", "privacy"}
    assert list(idata.posterior.data_vars) == ["p"]
    assert "sampling_time" not in idata.posterior.attrs


def test_demo_posterior_covers_truth(demo):
    # With N = 2000 and ε = 0.5 the Laplace noise has sd √2·2 ≈ 2.8 counts, negligible
    # next to the binomial sd √(2000·0.3·0.7) ≈ 20.5 counts: the posterior is close to
    # Beta(1 + k, 1 + N - k), whose 94% HDI (± ~0.019) covers the true p = 0.3 unless
    # the data set is a > 1.9 sd outlier. Data and noise are seeded, so the check is
    # deterministic and a failure means a bug (e.g. a wrong likelihood or scale).
    _, result = demo
    lower, upper = result["hdi_94"]
    assert lower < TRUE_P < upper
    assert lower < result["sample_proportion"] < upper
    assert 0.015 < upper - lower < 0.06  # noise-aware, but the noise adds little width
    assert result["posterior_mean"] == pytest.approx(result["sample_proportion"], abs=0.005)
    assert abs(result["noisy_count"] - result["true_count"]) < 40  # 20 Laplace scales
    assert result["r_hat"] < 1.05


def test_demo_prints_plain_words(tmp_path, capsys, monkeypatch):
    # Re-running the whole demo is slow; check the narrative of a tiny run instead.
    run_demo(output_dir=tmp_path, seed=3, draws=30, tune=30, progressbar=False)
    out = capsys.readouterr().out
    for phrase in ("2,000", "ε = 0.5", "Released noisy count", "94% HDI", "post-processing",
                   "laplace", "pymc-dp ledger", TRACE_FILE):
        assert phrase in out, phrase


def test_noise_aware_logp_matches_direct_sum():
    import pytensor.tensor as pt

    n, scale, z, p = 50, 2.0, 17.3, 0.37
    z_t, p_t = pt.dscalar("z"), pt.dscalar("p")
    value = noise_aware_count_logp(z_t, p_t, n, scale).eval({z_t: z, p_t: p}, mode="FAST_COMPILE")
    k = np.arange(n + 1)
    direct = np.log(np.sum(stats.binom.pmf(k, n, p) * stats.laplace.pdf(z - k, scale=scale)))
    # PyTensor and SciPy compute log-binomial coefficients differently (~1e-9 apart).
    assert value == pytest.approx(direct, rel=1e-7)


def test_demo_constants():
    assert N_RECORDS == 2000 and TRUE_P == 0.3
