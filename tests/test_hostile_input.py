"""Hostile input gets a clear error naming the argument and the fix (audit class 10).

An audit found strings silently coerced to numbers (records, bounds, values), a bare
pair where a mapping is expected answered by a cryptic ``TypeError`` about dictionary
update sequences, and bounds of ±1e200 answered by "declare data bounds" (x² had
overflowed). Each case is refused before anything is spent.
"""

from __future__ import annotations

import warnings

import numpy as np
import pymc as pm
import pytest

import pymc_dp as pmdp


@pytest.mark.parametrize(
    "call, argument",
    [
        (lambda: pmdp.privatize(np.array(["1.5", "2.0"]), "normal", epsilon=1.0, bounds={"x": (0, 5)}), "data"),
        (lambda: pmdp.privatize(np.array([1.5, 2.0]), "normal", epsilon=1.0, bounds={"x": ("0", "5")}), r"bounds\['x'\]"),
        (lambda: pmdp.privatize(np.array([1, 0]), "bernoulli", epsilon="1"), "epsilon"),
        (lambda: pmdp.PrivacyLedger().spend("laplace", "1"), "epsilon"),
    ],
)
def test_strings_are_refused_naming_the_argument_never_converted(call, argument):
    with pytest.raises(ValueError, match=f"{argument}.*(string|strings)") as err:
        call()
    assert "convert explicitly" in str(err.value)


def test_text_in_a_list_of_records_is_a_malformed_record_never_converted():
    # A list has no declared type: NumPy would type it by its entries, so a refusal would follow the records.
    # Each string is read as what it is, not a number: a malformed record, replaced by the default record 0.
    with pytest.warns(pmdp.families.ClippedRecordsWarning, match="2 of 3 record"):
        got = pmdp.privatize(["1", 1, "1"], "bernoulli", epsilon=1.0, rng=0)
    assert np.array_equal(got.noisy, pmdp.privatize([0, 1, 0], "bernoulli", epsilon=1.0, rng=0).noisy)


def _normal_model():
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 1)
        pm.Normal("y", mu, 1, observed=np.array([0.5, 1.2, 0.3]))
    return model


def test_a_bare_pair_where_a_mapping_is_expected_says_what_shape_is_wanted():
    with pytest.raises(ValueError, match=r"bounds must be a mapping \{bound name: value\}.*bare pair"):
        pmdp.privatize(np.array([1.5, 2.0]), "normal", epsilon=1.0, bounds=(0, 5))
    ledger = pmdp.PrivacyLedger()
    with pytest.raises(ValueError, match=r"bounds must be a mapping \{observed variable: \{parameter.*bare pair"):
        pmdp.sample(10, model=_normal_model(), epsilon=1.0, bounds=(0, 1), ledger=ledger, progressbar=False)
    assert len(ledger) == 0


def test_huge_bounds_say_they_are_too_wide_not_that_bounds_are_missing():
    with pytest.raises(ValueError, match="too wide") as err:
        pmdp.privatize(np.array([1.5, 2.0]), "normal", epsilon=1.0, bounds={"x": (-1e200, 1e200)})
    assert "declare data bounds" not in str(err.value).lower()
    ledger = pmdp.PrivacyLedger()
    with pytest.raises(ValueError, match="noise scale .* beyond") as err:
        pmdp.sample(10, model=_normal_model(), epsilon=1.0, bounds={"y": {"x": (-1e200, 1e200)}}, ledger=ledger,
                    progressbar=False)
    assert "bounds of 'y'" in str(err.value)
    assert len(ledger) == 0  # refused while planning: nothing spent


def test_route_arguments_that_cannot_work_say_so_before_spending():
    def model():
        with pm.Model() as m:
            pm.Bernoulli("y", pm.Beta("p", 1, 1), observed=np.array([1, 0, 1, 1]))
        return m

    quiet = dict(tune=10, chains=1, progressbar=False)
    ledger = pmdp.PrivacyLedger()
    with pytest.raises(ValueError, match="public must be the name of an observed variable"):
        pmdp.sample(10, epsilon=1.0, model=model(), public=True, ledger=ledger, **quiet)
    with pytest.raises(ValueError, match="too small for the sensitivity"):
        pmdp.sample(10, method="ops", epsilon=5e-324, truncate={"p": (0.2, 0.8)}, model=model(), ledger=ledger, **quiet)
    with pytest.raises(ValueError, match="acceptance must be 'barker' or 'metropolis'"):
        pmdp.sample(10, method="gibbs", epsilon=1.0, acceptance="bogus", truncate={"p": (0.2, 0.8)}, model=model(),
                    ledger=ledger, **quiet)
    assert len(ledger) == 0


def test_bad_records_are_neither_refused_nor_counted_in_anything_the_caller_sees():
    # A refusal is a release to whoever runs the call ("some record is NaN"), and "7 NaN entries" would count
    # records for free. Malformed logistic records (a NaN or text feature, a label 2) count as the default record
    # (x = 0, y = 0): the release is the one of the data set with those records replaced, and only the curator
    # hears how many.
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(50, 2)), rng.binomial(1, 0.5, 50).astype(object)
    X = X.astype(object)
    X[:7, 0] = np.nan
    X[7, 1] = "n/a"
    y[8] = 2
    repaired_X, repaired_y = np.asarray(X, dtype=object), y.copy()
    repaired_X[:9] = 0.0
    repaired_y[:9] = 0
    ledger = pmdp.PrivacyLedger()
    with pmdp.curator_reports(False), warnings.catch_warnings():
        warnings.simplefilter("error")
        run = pmdp.noisy_gradient_logistic(X, y, epsilon=1.0, feature_l1_bound=2.0, ledger=ledger, rng=3)
        twin = pmdp.noisy_gradient_logistic(repaired_X.astype(float), repaired_y.astype(float), epsilon=1.0,
                                            feature_l1_bound=2.0, ledger=pmdp.PrivacyLedger(), rng=3)
    assert np.array_equal(run.measurements, twin.measurements) and len(ledger) == 1
    assert run.entry.details == twin.entry.details  # nothing of the malformed records in what the ledger says
    # Records outside the support are not refused at all (a refusal says that some are): each is replaced by the
    # family's default record, and how many only the curator hears.
    outside = np.r_[np.zeros(46), np.full(4, 2.0)]
    with pmdp.curator_reports(False), warnings.catch_warnings():
        warnings.simplefilter("error")
        pmdp.privatize(outside, "bernoulli", epsilon=1.0, ledger=ledger)
    assert len(ledger) == 2


def test_privatize_names_its_noise_argument_when_given_samples_spelling():
    """``pmdp.sample`` calls the noise source ``noise_rng=``, ``privatize`` calls it ``rng=``."""
    ledger = pmdp.PrivacyLedger()
    with pytest.raises(TypeError, match="rng="):
        pmdp.privatize(np.ones(10), "normal", 1.0, bounds={"x": (-10.0, 10.0)}, noise_rng=1, ledger=ledger)
    assert not ledger.entries


def _released(call, records):
    ledger = pmdp.PrivacyLedger()
    with pmdp.curator_reports(False), warnings.catch_warnings():
        warnings.simplefilter("error")
        return call(records, ledger), ledger


@pytest.mark.parametrize("odd", ["x", "0", 1j], ids=["text", "digit-text", "complex"])
def test_one_odd_entry_in_a_list_never_decides_how_the_other_records_are_read(odd):
    # np.asarray types a whole list by its entries: one text entry made every record text (so every record
    # counted as malformed, or an analyst's f failed on all of them) and one complex entry made privatize refuse.
    # One record replaced must move a release by at most its sensitivity (seeded noise: the same draw).
    clean, dirty = [1.0] * 200, [1.0] * 199 + [odd]
    releases = {
        "bounded sum": lambda r, led: pmdp.noisy_bounded_sum(r, lambda x: np.asarray(x, dtype=float), bound=1.0,
                                                             epsilon=1.0, ledger=led, rng=0).values,
        "laplace workload": lambda r, led: pmdp.laplace_workload(
            [[int(v) if isinstance(v, float) else v, 0] for v in r], workload=pmdp.marginal_workload({"a": 2, "b": 2}, 1),
            epsilon=1.0, ledger=led, rng=0),
        "noisy gradient": lambda r, led: pmdp.noisy_gradient_logistic(
            [[v, 0.0] for v in r], np.ones(200), epsilon=1.0, feature_l1_bound=1.0, iterations=1, ledger=led,
            rng=0).measurements,
        "privatize": lambda r, led: pmdp.privatize(r, "bernoulli", 1.0, ledger=led, rng=0).values,
    }
    for name, call in releases.items():
        a, led_a = _released(call, clean)
        b, led_b = _released(call, dirty)
        sensitivity = led_a.entries[0].details.get("sensitivity", 2.0)
        assert np.abs(np.asarray(a) - np.asarray(b)).sum() <= sensitivity + 1e-9, name
        assert len(led_a) == len(led_b) == 1, name


def test_an_analysts_function_that_exits_on_a_private_record_says_nothing():
    # SystemExit (a BaseException, not an Exception) raised by f on one record used to reach the caller with the
    # record in its text; it counts as a failed record like any other exception.
    def exits(x):
        if x[0] > 50:
            raise SystemExit(f"record={x[0]}")
        return x

    release = pmdp.noisy_bounded_sum(np.array([0.0, 1.0, 73.0]), exits, bound=10.0, epsilon=1e6,
                                     ledger=pmdp.PrivacyLedger(), rng=0)
    assert release.values == pytest.approx([1.0], abs=1e-3)
    holdout = pmdp.ReusableHoldout(np.array([[0.2], [0.9]]), threshold=0.01, sigma=1e-6, budget=1,
                                   ledger=pmdp.PrivacyLedger(), rng=0)
    answer = holdout.query(lambda r: exits(r * 100) / 100, training_value=0.0)
    assert answer.value == pytest.approx(0.1, abs=1e-3)  # (0.2 + the lower end 0) / 2


def test_the_estimator_counts_a_malformed_feature_as_the_default_record_and_quotes_nothing():
    rng = np.random.default_rng(2)
    X, y = rng.uniform(-0.5, 0.5, (40, 2)), rng.binomial(1, 0.5, 40)
    odd = X.astype(object)
    odd[3, 0] = "secret"
    twin = X.copy()
    twin[3] = 0.0
    y_twin = y.copy()
    y_twin[3] = 0
    fit = lambda X_, y_: pmdp.PrivateLogisticRegression(epsilon=1.0, feature_l2_bound=1.0,  # noqa: E731
                                                        ledger=pmdp.PrivacyLedger(), rng=0).fit(X_, y_)
    with pmdp.curator_reports(False), warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.array_equal(fit(odd, y).coef_, fit(twin, y_twin).coef_)
