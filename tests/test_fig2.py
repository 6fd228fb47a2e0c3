"""[FGWC16] Fig. 2, Laplace and OPS curves (:mod:`pymc_dp.examples.fig2`).

Everything is seeded (records, the Laplace noise of each release, the posterior
draws), so every check below is deterministic: a failure means a bug, not bad luck.
The tolerances are nevertheless chosen to hold for (almost) any seed, with the
reasoning next to each, so that they would catch a wrong sensitivity, a wrong noise
scale, a missing projection or a wrong conjugate update rather than a seed.

Reference values. One sample θ from Beta(1 + s, 1 + N − s), s ~ Binomial(N, p):
θ − p is the posterior spread plus the estimator's error, each of variance about
p(1 − p)/N, so E|θ − p| ≈ √(2/π) · √(2p(1 − p)/N) — 1.07e-3 at N = 10⁵, p = 0.1.
The Monte Carlo standard error of a mean of |θ − p| over R repetitions is
√(π/2 − 1)/√R ≈ 0.76/√R of it (5.3 % at R = 200).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from pymc_dp.examples.fig2 import DEFAULT_NS, Fig2Result, main, ops_temperature, plot_fig2, pymc_agreement, run_fig2

P, EPSILON = 0.1, 0.1
SCALE = 1.0 / EPSILON  # Laplace scale of a count (sensitivity 1): 10


def nonprivate_reference(n: int, p: float = P) -> float:
    """E|θ − p| for one posterior sample, large N (see the module docstring)."""
    return math.sqrt(2.0 / math.pi) * math.sqrt(2.0 * p * (1.0 - p) / n)


@pytest.fixture(scope="module")
def fast() -> Fig2Result:
    return run_fig2(ns=(10, 1000, 100_000), repeats=200, p=P, epsilon=EPSILON, seed=0, progress=False)


def _row(result: Fig2Result, n: int) -> dict[str, float]:
    return next(r for r in result.rows() if r["n"] == n)


def test_small_n_private_error_clearly_above_nonprivate(fast: Fig2Result) -> None:
    # N = 10: the noise (sd √2·10 ≈ 14 counts) swamps a count of about 1, and the
    # projection onto [0, 10] pushes most releases to 0 or 10: the private sample is
    # often near 0.08 or 0.92, against a non-private error of ~0.1.
    r = _row(fast, 10)
    assert r["private"] > 2.0 * r["nonprivate"]
    assert r["private"] - r["nonprivate"] > 5.0 * math.hypot(r["private_se"], r["nonprivate_se"])


def test_private_error_decreases_with_n(fast: Fig2Result) -> None:
    # Each step is a factor 100 in N; the private error falls by more than 5 standard
    # errors of the difference at each step (it falls by a factor > 10 in fact).
    priv, se = fast.private_error, fast.private_se
    for i in range(len(priv) - 1):
        assert priv[i] - priv[i + 1] > 5.0 * math.hypot(se[i], se[i + 1]), fast.rows()


def test_large_n_private_error_matches_nonprivate(fast: Fig2Result) -> None:
    r = _row(fast, 100_000)
    n = 100_000
    # Sanity of the reference: the non-private error is the textbook value (±20 %,
    # i.e. ~3.7 Monte Carlo standard errors at 200 repetitions).
    assert r["nonprivate"] == pytest.approx(nonprivate_reference(n), rel=0.20)
    # How far the noise moved the sample: the count of ~10⁴ gets Laplace noise of scale
    # 1/ε = 10 (projection inactive), i.e. θ shifts by ~Laplace(10)/N, whose mean
    # absolute value is 10/N = 1e-4 — ten times below the posterior sd (~9.5e-4).
    # The mean over 200 repetitions has a standard error of 1e-4/√200 ≈ 7e-6, so
    # [0.75e-4, 1.25e-4] is > 3.5 standard errors wide on each side; a sensitivity
    # of 2 (2e-4), noise of scale ε instead of 1/ε (1e-6) or no noise (0) all fail.
    assert 0.75 * SCALE / n < r["gap"] < 1.25 * SCALE / n
    # Hence the errors agree: per repetition ||θ_priv − p| − |θ − p|| ≤ |θ_priv − θ| ≈ 1e-4
    # (10 % of the error), and as that shift has a random sign the mean error grows only
    # at second order, by ~½·Var(shift)/Var(θ − p) = 50/(N p (1 − p)) ≈ 0.6 %. The two
    # samples share records and uniform variate, so the Monte Carlo error of the
    # difference is ≤ 1.4e-4/√200 ≈ 1 % of the error: 5 % is > 4 standard errors.
    assert abs(r["private"] - r["nonprivate"]) < 0.05 * r["nonprivate"]


def test_seeded_run_is_reproducible() -> None:
    kwargs = dict(ns=(30, 300), repeats=20, progress=False)
    a, b = run_fig2(seed=3, **kwargs), run_fig2(seed=3, **kwargs)
    c = run_fig2(seed=4, **kwargs)
    same = {k: v for k, v in a.as_dict().items() if k != "seconds"}
    assert same == {k: v for k, v in b.as_dict().items() if k != "seconds"}
    assert not np.array_equal(a.private_error, c.private_error)


@pytest.mark.parametrize(
    "kwargs",
    [{"repeats": 1}, {"p": 1.0}, {"epsilon": 0.0}, {"ns": ()}, {"ns": (0, 10)}, {"seed": -1}],
)
def test_bad_configuration_is_refused(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        run_fig2(**{"ns": (10,), "repeats": 5, "progress": False, **kwargs})


def test_table_and_plot(fast: Fig2Result, tmp_path, capsys) -> None:
    table = fast.to_markdown()
    assert table.count("\n") == 2 + len(fast.ns) - 1
    assert "| 100,000 |" in table
    assert fast.as_dict()["ns"] == [10, 1000, 100_000]
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ax = plot_fig2(fast)
    assert ax.get_xscale() == ax.get_yscale() == "log"
    assert len(ax.get_lines()) == 3  # Laplace, OPS, non-private
    plt.close(ax.figure)

    out = tmp_path / "fig2.png"
    assert main(["--ns", "10", "100", "--repeats", "10", "--output", str(out), "--no-progress"]) == 0
    assert out.stat().st_size > 0
    printed = capsys.readouterr().out
    assert "| 100 |" in printed and "plot saved" in printed
    assert main(["--ns", "10", "--repeats", "1", "--output", str(out), "--no-progress"]) == 1


def test_ops_temperature_is_the_proven_one() -> None:
    # a0 = 0.05: Δ = log 19; ε = 0.1 ⇒ T = 20 log 19 ≈ 58.9; ε = 10 ⇒ T capped at 1.
    assert ops_temperature(0.1, 0.05) == pytest.approx(20 * math.log(19))
    assert ops_temperature(10.0, 0.05) == 1.0


def test_ops_curve_laplace_wins_and_ops_stays_wider(fast: Fig2Result) -> None:
    t = fast.temperature
    assert t == pytest.approx(20 * math.log(19))
    for r in fast.rows():
        # Each mean has a Monte Carlo s.e. of ≤ 4 % at 200 repetitions; the gaps are far larger.
        if r["n"] >= 30:
            assert r["private"] + 3 * r["private_se"] < r["ops"] - 3 * r["ops_se"], r
        assert r["ops"] > r["nonprivate"], r
    # [FGWC16] Thm 5: one OPS sample has asymptotic variance (1 + T)/N·I⁻¹ against 2/N·I⁻¹ for a
    # posterior sample, so E|θ − p| is √((1 + T)/2) ≈ 5.5 times larger at large N. At N = 10⁵
    # (N/T ≈ 1700) the ratio of the two means has a Monte Carlo s.e. of ~7.6 % at 200
    # repetitions: ±25 % is 3.3 s.e.
    r = _row(fast, 100_000)
    assert r["ops"] / r["nonprivate"] == pytest.approx(math.sqrt((1 + t) / 2), rel=0.25)


@pytest.mark.slow
def test_pymc_route_samples_the_same_tempered_posterior() -> None:
    # NUTS on the truncated, tempered PyMC model against numerical integration of the exact
    # truncated tempered Beta: 4 Monte Carlo s.e. (sd/√ESS; ESS > 500 asserted) per check.
    rows = pymc_agreement(ns=(30, 1000, 30_000), data_sets=2, draws=2000)
    assert len(rows) == 6
    for r in rows:
        assert r["ess"] > 500, r
        se = r["exact_sd"] / math.sqrt(r["ess"])
        assert abs(r["mcmc_mean"] - r["exact_mean"]) < 4 * se, r
        assert abs(r["mcmc_abs_error"] - r["exact_abs_error"]) < 4 * se, r
        assert abs(r["mcmc_sd"] - r["exact_sd"]) < 4 * r["exact_sd"] / math.sqrt(2 * r["ess"]), r


@pytest.mark.slow
def test_full_figure_2_configuration() -> None:
    # The configuration of the documentation table: 9 sizes × 1000 repetitions. It
    # takes a few seconds (well under the 3-minute limit asserted here).
    result = run_fig2(repeats=1000, seed=0, progress=False)
    assert result.seconds < 180
    assert tuple(result.ns) == DEFAULT_NS
    priv, se = result.private_error, result.private_se
    # The private error falls at every step of the grid (each step beyond 3 s.e.).
    for i in range(len(priv) - 1):
        assert priv[i] - priv[i + 1] > 3.0 * math.hypot(se[i], se[i + 1]), result.rows()
    ratio = dict(zip(result.ns.tolist(), result.ratio))
    # Far above the non-private error for small N; within 10 % of it from N = 10⁴ on
    # (expected excess ≈ 50/(N p(1 − p)): 5.6 % at 10⁴, 0.6 % at 10⁵).
    assert ratio[10] > 2.0 and ratio[100] > 2.0 and ratio[1000] > 1.2
    assert all(ratio[n] < 1.1 for n in (10_000, 30_000, 100_000))
    # Where the projection onto [0, N] is inactive (N ≥ 1000, count ≥ ~100 ≫ 14), the
    # noise moves θ by |Laplace(10)|/N on average: gap·N ≈ 10 (s.e. ~3 % at 1000 reps).
    for n, gap in zip(result.ns, result.gap):
        if n >= 1000:
            assert 8.5 < gap * n < 11.5, (n, gap)
    # As in the paper, the Laplace route beats OPS from N ≈ 30 on (by far more than 3 s.e.).
    for r in result.rows():
        if r["n"] >= 30:
            assert r["private"] + 3 * r["private_se"] < r["ops"] - 3 * r["ops_se"], r
    # The non-private curve is the textbook one (s.e. 2.4 % at 1000 repetitions).
    for n, err in zip(result.ns, result.nonprivate_error):
        if n >= 1000:
            assert err == pytest.approx(nonprivate_reference(int(n)), rel=0.10), n
