"""Your own statistic: ``noisy_bounded_sum`` releases Σ f(r) for an analyst's bounded f, and
``observe_bounded_sum`` infers a model's parameters from it, the records and noise integrated out."""

from __future__ import annotations

import warnings

import numpy as np
import pymc as pm
import pytest
from scipy import stats

import pymc_dp as pmdp
from pymc_dp.accounting import BudgetExceededError, PrivacyLedger
from pymc_dp.model.bounded_sum_measurements import _support_moments

CLIP = 3.0


def clipped_moments(x: np.ndarray) -> np.ndarray:
    """(x, x²/3) of x clipped to ±3: L1 norm at most 3 + 3 = 6."""
    c = np.clip(x, -CLIP, CLIP)
    return np.column_stack([c, c**2 / CLIP])


def test_the_release_is_one_laplace_entry_at_twice_the_bound_over_epsilon():
    ledger = PrivacyLedger()
    records = np.random.default_rng(0).normal(size=500)
    release = pmdp.noisy_bounded_sum(records, clipped_moments, bound=6.0, epsilon=0.5, ledger=ledger, rng=1)
    (entry,) = ledger.entries
    assert entry.epsilon == 0.5 and release.scale == pytest.approx(2 * 6.0 / 0.5)
    assert release.n_records == 500 and release.values.shape == (2,) and not release.values.flags.writeable
    exact = clipped_moments(records).sum(axis=0)
    assert np.all(np.abs(release.values - exact) < 20 * release.scale)  # P(|Laplace| > 20b) = e^-20
    # Rows beyond the declared ball are projected onto it: (3, 3) has L1 norm 6 > 2.
    big = pmdp.noisy_bounded_sum(np.full(10, 5.0), clipped_moments, bound=2.0, epsilon=1e6,
                                 ledger=PrivacyLedger(), rng=2)
    assert big.values == pytest.approx([10.0, 10.0], abs=1e-3)


@pytest.mark.parametrize("kwargs, match", [
    (dict(bound=0.0), "bound"),
    (dict(epsilon=-1.0), "epsilon"),
    (dict(f=lambda x: np.ones((3, 2))), "one row per record"),
    (dict(f="mean"), "f must be a function"),
    (dict(ledger=PrivacyLedger(neighbouring="add_remove")), "replace-one"),
])
def test_bad_arguments_are_refused_before_anything_is_spent(kwargs, match):
    args = {**dict(f=clipped_moments, bound=6.0, epsilon=1.0, ledger=PrivacyLedger(), rng=0), **kwargs}
    records = np.random.default_rng(1).normal(size=20)
    with pytest.raises(ValueError, match=match):
        pmdp.noisy_bounded_sum(records, args.pop("f"), **args)
    assert len(args["ledger"]) == 0


def test_f_sees_one_record_at_a_time_and_a_non_finite_row_counts_as_zero():
    # A batch-wide step has nothing to mix (x - mean(x) of one record is 0), and a NaN is neither
    # refused (a refusal would say some record makes f NaN) nor summed: the sum is that of the rest.
    records = np.r_[np.full(5, 2.0), np.full(3, 7.0)]
    big = dict(bound=10.0, epsilon=1e6, ledger=PrivacyLedger(), rng=0)
    assert pmdp.noisy_bounded_sum(records, lambda x: x - x.mean(), **big).values == pytest.approx([0.0], abs=1e-3)
    nan_above_5 = pmdp.noisy_bounded_sum(records, lambda x: np.where(x > 5, np.nan, x), **{**big, "ledger": PrivacyLedger()})
    assert nan_above_5.values == pytest.approx([10.0], abs=1e-3)
    # A record on which f gives another number of values, or raises, counts as zero too: refusing (or passing
    # f's message on) would say something about that record for free.
    odd = pmdp.noisy_bounded_sum(records, lambda x: np.ones((1, 2)) if x[0] > 5 else np.ones((1, 1)),
                                 **{**big, "ledger": PrivacyLedger()})
    assert odd.values == pytest.approx([5.0], abs=1e-3)

    def raising(x):
        if x[0] > 5:
            raise ValueError(f"record {x[0]} is too large")
        return x

    assert pmdp.noisy_bounded_sum(records, raising, **{**big, "ledger": PrivacyLedger()}).values == pytest.approx(
        [10.0], abs=1e-3)


def test_the_budget_is_checked_before_the_noise_is_drawn():
    ledger = PrivacyLedger(budget=pmdp.Budget(epsilon=0.5))
    with pytest.raises(BudgetExceededError):
        pmdp.noisy_bounded_sum(np.zeros(5), clipped_moments, bound=6.0, epsilon=1.0, ledger=ledger)
    assert len(ledger) == 0


def test_moments_over_an_enumerated_domain_are_exact():
    # Poisson(3) records on 0..79 (the mass beyond is < 1e-60): E and Var of min(r, 5) as scipy has them,
    # to 1e-6 (PyTensor's Poisson log-pmf differs from SciPy's by up to 1.6e-6 at large counts).
    support = np.arange(80.0)
    rows = np.minimum(support, 5.0)[:, None]
    mean, cov = _support_moments(rows, pm.logp(pm.Poisson.dist(3.0), support))
    values = np.minimum(np.arange(80), 5)
    p = stats.poisson(3.0).pmf(np.arange(80))
    assert float(mean.eval(mode="FAST_COMPILE")[0]) == pytest.approx(values @ p, rel=1e-6)
    assert float(cov.eval(mode="FAST_COMPILE")[0, 0]) == pytest.approx(values**2 @ p - (values @ p) ** 2, rel=1e-6)


def _posterior(release, noise):
    with pm.Model():
        mu = pm.Normal("mu", 0, 3)
        sigma = pm.HalfNormal("sigma", 3)
        pmdp.observe_bounded_sum("z", release, clipped_moments, pm.Normal.dist(mu, sigma),
                                 np.linspace(-6, 6, 2001), noise=noise)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            trace = pm.sample(500, tune=500, chains=2, cores=1, random_seed=3, progressbar=False,
                              compute_convergence_checks=False)
    return trace.posterior


def test_the_posterior_recovers_the_records_distribution_and_widens_with_the_noise():
    # 2000 records from N(0.7, 1.3²). At ε = 1 (b = 12, against a sum s.d. ≈ 60) the posterior is
    # nearly the data's; at ε = 0.05 (b = 240) the noise dominates and the latent sums enter.
    records = np.random.default_rng(4).normal(0.7, 1.3, 2000)
    precise = pmdp.noisy_bounded_sum(records, clipped_moments, bound=6.0, epsilon=1.0, ledger=PrivacyLedger(), rng=5)
    noisy = pmdp.noisy_bounded_sum(records, clipped_moments, bound=6.0, epsilon=0.05, ledger=PrivacyLedger(), rng=6)
    sharp, wide = _posterior(precise, "auto"), _posterior(noisy, "auto")
    assert "z_latent" in wide and "z_latent" not in sharp  # auto: exact noise only where it matters
    for post in (sharp, wide):  # the truth within 3 posterior s.d. (a correct posterior misses < 0.3 %)
        for name, truth in (("mu", 0.7), ("sigma", 1.3)):
            assert abs(float(post[name].mean()) - truth) < 3 * float(post[name].std()), (name, post[name].mean())
    assert float(sharp["mu"].std()) < 0.045  # sampling alone: 1.3/√2000 = 0.029
    assert float(wide["mu"].std()) > 2 * float(sharp["mu"].std())


def test_observe_bounded_sum_refuses_what_does_not_fit_the_release():
    release = pmdp.noisy_bounded_sum(np.zeros(10), clipped_moments, bound=6.0, epsilon=1.0, ledger=PrivacyLedger(),
                                     rng=0)
    with pm.Model():
        mu = pm.Normal("mu")
        with pytest.raises(ValueError, match="gives 1 coordinate"):
            pmdp.observe_bounded_sum("z", release, lambda x: np.clip(x, -1, 1), pm.Normal.dist(mu, 1.0),
                                     np.linspace(-3, 3, 100))
        with pytest.raises(ValueError, match="at least 4"):
            pmdp.observe_bounded_sum("z", release, clipped_moments, pm.Normal.dist(mu, 1.0), np.zeros(3))
        with pytest.raises(ValueError, match="noise must be"):
            pmdp.observe_bounded_sum("z", release, clipped_moments, pm.Normal.dist(mu, 1.0), np.zeros(30),
                                     noise="laplace")
        with pytest.raises(ValueError, match="release must be"):
            pmdp.observe_bounded_sum("z", release.values, clipped_moments, pm.Normal.dist(mu, 1.0), np.zeros(30))


def _release_length(records, f, **kwargs):
    args = dict(bound=10.0, epsilon=1.0, ledger=PrivacyLedger(), rng=0, **kwargs)
    return pmdp.noisy_bounded_sum(np.asarray(records, dtype=float), f, **args).values.shape


def test_the_released_length_never_follows_a_private_record():
    # f gives 2 values for a record above 5 and 1 otherwise. Neighbouring data sets (the first record 7 or 2)
    # must release vectors of one length: the length is read from f on a made-up record (zeros), or declared.
    def follows_the_record(x):
        return np.ones((1, 2)) if x[0] > 5 else np.ones((1, 1))

    assert _release_length([7.0, 2.0, 2.0], follows_the_record) == _release_length([2.0, 2.0, 2.0], follows_the_record)
    assert _release_length([7.0, 2.0], follows_the_record) == (1,)
    assert _release_length([7.0, 2.0], follows_the_record, dim=2) == (2,)
    assert _release_length([2.0, 2.0], follows_the_record, example=np.array([9.0])) == (2,)


def test_whether_the_call_raises_never_depends_on_a_private_record():
    # An f that fails on every record but one, or on every record: both run (the failures count as zero, for the
    # curator only); neither raises, so the call says nothing about which records f accepts.
    def only_on_three(x):
        if x[0] != 3.0:
            raise ValueError(f"record {x[0]} rejected")
        return x

    big = dict(bound=10.0, epsilon=1e6, ledger=PrivacyLedger(), rng=0)
    assert pmdp.noisy_bounded_sum(np.array([1.0, 3.0, 4.0]), only_on_three, dim=1, **big).values == pytest.approx([3.0], abs=1e-3)

    def never(x):
        raise ValueError(f"record {x[0]} rejected")

    assert pmdp.noisy_bounded_sum(np.array([1.0, 4.0]), never, dim=1, **{**big, "ledger": PrivacyLedger()}
                                  ).values == pytest.approx([0.0], abs=1e-3)


def test_a_refusal_quotes_only_made_up_records():
    # f fails on the made-up record: the refusal names dim=/example= and quotes nothing of the records (the
    # private value 123.456 must not appear), and nothing is spent.
    def log_only(x):
        if np.any(x <= 0):
            raise ValueError(f"log of {x}")
        return np.log(x)

    ledger = PrivacyLedger()
    with pytest.raises(ValueError, match="dim=") as err:
        pmdp.noisy_bounded_sum(np.array([123.456, 2.0]), log_only, bound=10.0, epsilon=1.0, ledger=ledger, rng=0)
    assert "123.456" not in str(err.value) and len(ledger) == 0
    # Declared, it runs on the records.
    assert pmdp.noisy_bounded_sum(np.array([123.456, 2.0]), log_only, bound=10.0, epsilon=1.0, ledger=ledger, rng=0,
                                  dim=1).values.shape == (1,)
    with pytest.raises(ValueError, match="one row per record") as err:
        pmdp.noisy_bounded_sum(np.array([123.456]), lambda x: np.ones((3, 2)), bound=1.0, epsilon=1.0,
                               ledger=PrivacyLedger(), rng=0)
    assert "123.456" not in str(err.value)
