"""Synthetic war-log records: sizes of the presets, structure, the count tensor and the CSV loader."""

from __future__ import annotations

import numpy as np
import pytest

from pymc_dp.examples.warlogs import data


@pytest.fixture(scope="module")
def iraq():
    return data.generate("iraq", seed=0)


def test_presets_are_sized_like_the_published_data_sets(iraq):
    facts = data.describe(iraq)
    assert abs(facts["records"] - 390_000) < 0.01 * 390_000
    assert 900 <= facts["median_per_cell"] <= 1100  # paper: 972
    afg = data.describe(data.generate("afghanistan", seed=0))
    assert abs(afg["records"] - 75_000) < 0.02 * 75_000
    assert 45 <= afg["median_per_cell"] <= 75  # paper: 58
    assert afg["share_by_year"][2009] > 10 * afg["share_by_year"][2004]  # skewed towards later years


def test_records_have_the_published_structure(iraq):
    n = iraq.num_records
    assert iraq.features.shape == (n, 5) and iraq.region.shape == iraq.month.shape == (n,)
    assert iraq.month.min() == 0 and iraq.month.max() == data.MONTHS - 1
    for d, size in enumerate(data.FEATURE_SIZES):
        assert iraq.features[:, d].min() >= 0 and iraq.features[:, d].max() < size
    assert np.all(iraq.features[:, 1] // data.CATEGORIES_PER_TYPE == iraq.features[:, 0])
    states = iraq.true_states
    assert states.shape == (len(iraq.regions), data.MONTHS) and set(np.unique(states)) == {0, 1}
    assert (np.diff(states, axis=1) != 0).sum() >= 3  # the regimes switch over time
    assert data.month_labels()[0] == "2004-01" and data.month_labels()[-1] == "2009-12"


def test_each_regime_emits_its_own_distribution(iraq):
    # Type frequencies among the records of each regime match that regime's emission
    # probabilities: with ≥ 50 000 records per regime, 5 s.d. is under 0.011.
    state = iraq.true_states[iraq.region, iraq.month]
    for s in (0, 1):
        types = iraq.features[state == s, 0]
        freq = np.bincount(types, minlength=len(data.TYPES)) / types.size
        p = iraq.emissions[0][s]
        assert np.all(np.abs(freq - p) <= 5 * np.sqrt(p * (1 - p) / types.size) + 1e-12)
    assert np.abs(iraq.emissions[0][0] - iraq.emissions[0][1]).sum() > 0.3  # the regimes differ


def test_feature_counts_are_the_sufficient_statistics(iraq):
    counts = data.feature_counts(iraq)
    per_cell = iraq.records_per_cell()
    for d, size in enumerate(data.FEATURE_SIZES):
        assert counts[d].shape == (len(iraq.regions), data.MONTHS, size)
        np.testing.assert_array_equal(counts[d].sum(axis=2), per_cell)
    r, t = 2, 40
    mask = (iraq.region == r) & (iraq.month == t)
    np.testing.assert_array_equal(counts[0][r, t], np.bincount(iraq.features[mask, 0], minlength=8))


def test_csv_round_trip_and_casualty_counts_are_binarised(tmp_path):
    logs = data.generate("small", seed=3)
    path = tmp_path / "logs.csv"
    logs.to_csv(path)
    back = data.load_records(path, regions=logs.regions)
    np.testing.assert_array_equal(back.features, logs.features)
    np.testing.assert_array_equal(back.region, logs.region)
    np.testing.assert_array_equal(back.month, logs.month)
    assert back.true_states is None
    frame = logs.to_frame().head(3).copy()
    frame["enemy_casualty"] = [0, 4, 1]
    frame.to_csv(path, index=False)
    assert data.load_records(path).features[:, 4].tolist() == [0, 1, 1]


@pytest.mark.parametrize(
    ("column", "value", "match"),
    [
        ("month", "2010-01", "month '2010-01'"),
        ("type", 8, "column 'type'"),
        ("category", -1, "column 'category'"),
        ("civilian_casualty", "x", "column 'civilian_casualty'"),
        ("category", 47, "outside its type"),
    ],
)
def test_bad_csv_values_are_refused_naming_the_column(tmp_path, column, value, match):
    frame = data.generate("small", seed=1).to_frame().head(5).copy()
    frame[column] = frame[column].astype(object)
    frame.loc[2, column] = value
    path = tmp_path / "bad.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(ValueError, match=match):
        data.load_records(path)


def test_missing_column_and_bad_arguments(tmp_path):
    path = tmp_path / "short.csv"
    data.generate("small", seed=1).to_frame().drop(columns=["type"]).to_csv(path, index=False)
    with pytest.raises(ValueError, match="missing column"):
        data.load_records(path)
    with pytest.raises(ValueError, match="preset must be one of"):
        data.generate("syria")
    with pytest.raises(ValueError, match="num_states"):
        data.generate("small", num_states=0)
    with pytest.raises(ValueError, match="stay"):
        data.generate("small", stay=1.5)
    with pytest.raises(ValueError, match="separation"):
        data.generate("small", separation=0)
