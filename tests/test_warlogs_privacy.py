"""The war-logs Laplace route: five count tensors privatised once, charged once each."""

from __future__ import annotations

import numpy as np
import pytest

import pymc_dp as pmdp
from pymc_dp.examples.warlogs import data, privacy


@pytest.fixture(scope="module")
def counts():
    return data.feature_counts(data.generate("small", seed=0))


def test_each_feature_is_charged_once_with_scale_two_over_epsilon(counts):
    ledger = pmdp.PrivacyLedger(budget=pmdp.Budget(epsilon=5.0))
    noisy = privacy.privatize_counts(counts, 1.0, ledger=ledger, rng=3)
    assert len(ledger) == 5 and ledger.total().epsilon == pytest.approx(5.0)
    assert all(e.details["scale"] == 2.0 and e.details["sensitivity"] == 2.0 for e in ledger.entries)
    assert [e.touched for e in ledger.entries] == [f"warlogs:{f} counts" for f in data.FEATURES]
    # The noise is Laplace(2): its mean absolute value is 2 (s.e. ≈ 2/sqrt(N) over the entries).
    resid = np.concatenate([(n - c).ravel() for n, c in zip(noisy, counts)])
    assert abs(np.abs(resid).mean() - 2.0) < 5 * 2.0 / np.sqrt(resid.size)
    # Independent noise across features (one stream from the seed).
    assert not np.allclose(noisy[2] - counts[2], noisy[3] - counts[3])


def test_the_whole_spend_is_checked_before_any_noise(counts):
    ledger = pmdp.PrivacyLedger(budget=pmdp.Budget(epsilon=4.0))
    with pytest.raises(pmdp.BudgetExceededError):
        privacy.privatize_counts(counts, 1.0, ledger=ledger, rng=0)
    assert len(ledger) == 0


def test_secure_noise_by_default_and_bad_input(counts):
    ledger = pmdp.PrivacyLedger()
    privacy.privatize_counts(counts, [1, 1, 1, 0.5, 0.5], ledger=ledger)
    assert {e.noise_source for e in ledger.entries} == {"secure"}
    assert ledger.total().epsilon == pytest.approx(4.0)
    with pytest.raises(ValueError, match="epsilon"):
        privacy.privatize_counts(counts, 0.0, ledger=pmdp.PrivacyLedger())
    with pytest.raises(ValueError, match="5 features"):
        privacy.privatize_counts(counts[:3], 1.0, ledger=pmdp.PrivacyLedger())
    with pytest.raises(ValueError, match="non-negative integer"):
        privacy.privatize_counts([c.astype(float) for c in counts], 1.0, ledger=pmdp.PrivacyLedger())
    with pytest.raises(ValueError, match="ledger is required"):
        privacy.privatize_counts(counts, 1.0, ledger=None)
