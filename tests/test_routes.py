"""The routes of ``pmdp.sample`` as classes of guarantees, each the same on every route.

* what the released trace may hold (no imputed missing values, no data-dependent sizes);
* the whole request is validated before the first spend (priors on data, ``step=``,
  unknown or misplaced keywords);
* interrupted and failed runs end in the documented outcome;
* every ``pm.sample`` keyword a user may pass either works or is refused before spending;
* observed variables with ``dims=``;
* a seeded sampler is recorded as seeded.
"""

from __future__ import annotations

import inspect
import math
import warnings

import numpy as np
import pymc as pm
import pytest

import pymc_dp as pmdp
from pymc_dp import _compat
from pymc_dp.accounting import PrivacyLedger
from pymc_dp.routes import METHODS as ALL_METHODS, OPS, Gibbs, Laplace, sample
from pymc_dp.routes.base import SEEDED_SAMPLER
from pymc_dp.routes.gibbs import InterruptedRunError
from pymc_dp.step_methods import PrivateGibbs

N = 40
RECORDS = np.r_[np.ones(6), np.zeros(N - 6)]
QUIET = dict(progressbar=False, compute_convergence_checks=False)
SHORT = dict(tune=20, chains=1, cores=1, **QUIET)
# What each route needs besides epsilon to prove its cost on the beta-Bernoulli model.
ROUTE_ARGS = {
    "laplace": {},
    "ops": {"truncate": {"p": (0.2, 0.8)}},
    "gibbs": {"truncate": {"p": (0.2, 0.8)}},
    "saa": {"ranges": {"p": (0.0, 1.0)}, "blocks": 4},
    "ais": {"truncate": {"p": (0.2, 0.8)}, "stages": 3},
}
#: pm.sample keywords the AIS route does not take (it runs no pm.sample).
NOT_AIS = ("tune", "chains", "cores", "compute_convergence_checks")


#: The routes these contract tests run on a Beta-Bernoulli model; the measurements route takes only
#: logistic regressions, and its contract tests are in test_measurements_route.py.
METHODS = tuple(m for m in ALL_METHODS if m != "measurements")


def beta_bernoulli(records=RECORDS, **observed_kwargs) -> pm.Model:
    with pm.Model(coords={"record": np.arange(len(records))}) as model:
        p = pm.Beta("p", 1, 1)
        pm.Bernoulli("y", p, observed=records, **observed_kwargs)
    return model


def run(model, method, ledger=None, draws=20, **kwargs):
    short = {k: v for k, v in SHORT.items() if k not in NOT_AIS} if method == "ais" else SHORT
    keywords = {**short, **kwargs}
    with model:
        return pmdp.sample(draws, epsilon=2.0, method=method, ledger=ledger, **ROUTE_ARGS[method], **keywords)


# ---------------------------------------------------------------------------- class 1: what a release may hold


def _with_missing(kind: str) -> np.ndarray:
    y = RECORDS.copy()
    y[[3, 17, 30]] = np.nan
    return np.ma.masked_invalid(y) if kind == "masked" else y


#: Malformed Bernoulli records: outside the support (PyMC casts a Bernoulli's observed values to integers, so
#: 0.5 arrives as 0), or missing (NaN, which PyMC imputes; masked).
MALFORMED = {"two": 2.0, "minus_one": -1.0, "nan": np.nan, "masked": np.ma.masked}
#: Seeds of the noise each route draws besides the sampler's (seeded by random_seed=).
NOISE_SEEDS = {"laplace": {"noise_rng": 0}, "saa": {"noise_rng": 0}, "ais": {"noise_rng": 0}}


def _spent(ledger: PrivacyLedger) -> list[tuple]:
    return [(e.mechanism, e.epsilon, e.delta, e.count, e.touched, e.noise_source, e.assumptions) for e in ledger.entries]


def _shapes(trace) -> dict[str, tuple]:
    posterior = _compat.get_group(trace, "posterior")
    return {name: tuple(posterior[name].shape) for name in posterior.data_vars}


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("bad", list(MALFORMED))
def test_a_malformed_record_is_replaced_not_refused_on_every_route(method, bad):
    # Refusing the call would answer "is any record malformed?" (or "is any missing?") for free. PyMC's imputation
    # is undone, and the record is replaced by the family's default record (0 for a Bernoulli), or on the saa
    # route left out of its block: the call spends what it spends on a well-formed neighbour, its release has the
    # same ledger entries and shapes (no imputed variable), and the count goes to the curator only.
    records, neighbour = np.ma.masked_array(RECORDS.copy()), RECORDS.copy()
    records[3], neighbour[3] = MALFORMED[bad], 0.0
    if bad != "masked":
        records = records.filled()
    ours, theirs = PrivacyLedger(), PrivacyLedger()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = run(beta_bernoulli(records), method, ours, random_seed=1, **NOISE_SEEDS.get(method, {}))
    want = run(beta_bernoulli(neighbour), method, theirs, random_seed=1, **NOISE_SEEDS.get(method, {}))
    assert _spent(ours) == _spent(theirs) and len(ours) >= 1
    assert _shapes(got) == _shapes(want)
    reports = [str(w.message) for w in caught if issubclass(w.category, pmdp.families.ClippedRecordsWarning)]
    if method != "saa":  # the others replace the record by the default 0: the very release of the neighbour
        assert any("outside the support" in r for r in reports), reports
        ours_p = _compat.get_group(got, "posterior")["p"].values
        assert np.array_equal(ours_p, _compat.get_group(want, "posterior")["p"].values)


def test_release_refuses_a_trace_with_imputed_values():
    # The last line of defence: a trace from plain pm.sample with imputation.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = beta_bernoulli(_with_missing("nan").astype(float))
        with model:
            idata = pm.sample(10, tune=10, chains=1, random_seed=1, **QUIET)
    with pytest.raises(ValueError, match="impute the missing values"):
        pmdp.release(idata, model=model)


def test_release_refuses_sizes_computed_from_a_data_container():
    with pm.Model() as model:
        x = pm.Data("x", np.arange(7.0))
        pm.Normal("z", 0, 1, shape=x.shape[0] - 2)  # 5: not the length of any observed records
        pm.Normal("y", 0, 1, observed=np.zeros(3))
        idata = pm.sample(10, tune=10, chains=1, random_seed=1, **QUIET)
    with pytest.raises(ValueError, match="computed from the data container 'x'"):
        pmdp.release(idata, model=model)


def test_per_record_variables_are_refused_by_their_dim_when_n_is_private():
    with pm.Model(coords={"obs": range(N)}) as model:
        pm.Normal("z", 0, 1, dims="obs")  # one latent per record, along the records' dim
        pm.Normal("y", 0, 1, observed=np.zeros(N), dims="obs")
        idata = pm.sample(10, tune=10, chains=1, random_seed=1, **QUIET)
    pmdp.release(idata, model=model, ledger=PrivacyLedger(neighbouring="replace"))  # N public: fine
    with pytest.raises(ValueError, match="number of records is private") as refused:
        pmdp.release(idata, model=model, ledger=PrivacyLedger(neighbouring="add_remove"))
    assert str(N) not in str(refused.value)


# ---------------------------------------------------------------------------- class 4: validate before spending


def _spent_nothing(ledger: PrivacyLedger) -> bool:
    return len(ledger) == 0 and not ledger.reserved


def test_laplace_flag_refuses_a_data_container_in_a_prior_before_drawing_noise(monkeypatch):
    drawn = []
    import pymc_dp.mechanisms.laplace as laplace_module

    monkeypatch.setattr(laplace_module, "laplace_mechanism", lambda *a, **k: drawn.append(1))
    ledger = PrivacyLedger()
    with pm.Model() as model:
        scale = pm.Data("scale", np.array(2.0))
        p = pm.Beta("p", 1, scale)
        pm.Bernoulli("y", p, observed=RECORDS)
    with pytest.raises(ValueError, match="pm.Data container"):
        with model:
            pmdp.sample(20, epsilon=1.0, ledger=ledger, **SHORT)
    assert _spent_nothing(ledger) and not drawn


@pytest.mark.parametrize("method", METHODS)
def test_a_step_built_on_the_users_model_is_refused_before_spending(method):
    ledger = PrivacyLedger()
    model = beta_bernoulli()
    with model:
        step = pm.Metropolis([model["p"]])
    with pytest.raises(ValueError, match="step= was built on your model"):
        run(model, method, ledger, step=step)
    assert _spent_nothing(ledger)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(
    "bad, match",
    [
        ({"tunes": 10}, "unknown keyword"),
        ({"trace": None}, "trace= is not supported"),
        ({"return_inferencedata": False}, "return_inferencedata= is not supported"),
    ],
)
def test_bad_pm_sample_keywords_are_refused_before_spending(method, bad, match):
    ledger = PrivacyLedger()
    with pytest.raises(ValueError, match=match):
        run(beta_bernoulli(), method, ledger, **bad)
    assert _spent_nothing(ledger)


def test_laplace_refuses_unknown_var_names_before_spending():
    ledger = PrivacyLedger()
    with pytest.raises(ValueError, match="cannot release .q.: it is neither a free random variable"):
        run(beta_bernoulli(), "laplace", ledger, var_names=["q"])
    assert _spent_nothing(ledger)


@pytest.mark.parametrize(
    "method, option, owner",
    [("laplace", {"truncate": {"p": (0.2, 0.8)}}, "'ops' / 'gibbs'"), ("ops", {"temperature": 4.0}, "'gibbs'"),
     ("gibbs", {"noise_rng": 1}, "'laplace'"), ("gibbs", {"samples": 2}, "'ops'")],
)
def test_an_option_of_another_route_names_its_route(method, option, owner):
    with pytest.raises(ValueError, match=f"applies to method={owner}"):
        with beta_bernoulli():
            pmdp.sample(10, epsilon=1.0, method=method, **option)


@pytest.mark.parametrize("method", ["ops", "auto"])
def test_another_routes_option_left_at_its_default_none_is_no_option(method):
    # noise_rng=None is what the signature's default means; passing it explicitly is not a request
    ledger = PrivacyLedger()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with beta_bernoulli():
            pmdp.sample(10, epsilon=1.0, method=method, truncate={"p": (0.2, 0.8)}, noise_rng=None, ledger=ledger,
                        **SHORT)
    assert len(ledger) == 1


def test_route_objects_and_keywords_are_the_same_call():
    kwargs = dict(epsilon=1.0, random_seed=3, **SHORT)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with beta_bernoulli():
            a = pmdp.sample(10, method=OPS(truncate={"p": (0.2, 0.8)}), **kwargs)
        with beta_bernoulli():
            b = pmdp.sample(10, method="ops", truncate={"p": (0.2, 0.8)}, **kwargs)
    assert np.array_equal(_compat.get_group(a, "posterior")["p"].values, _compat.get_group(b, "posterior")["p"].values)
    assert pmdp.ledger(a).total() == pmdp.ledger(b).total()


def test_sample_is_a_short_dispatcher():
    source = inspect.getsource(sample)
    assert len(source.splitlines()) < 100  # docstring included
    code = [ln for ln in source.split('"""')[2].splitlines() if ln.strip()]
    assert len(code) < 60


# ---------------------------------------------------------------------------- class 5: interrupted runs


def _interrupt_step_at(monkeypatch, at: int, exc: type[BaseException]) -> None:
    original = PrivateGibbs.step
    calls = {"n": 0}

    def step(self, point):
        calls["n"] += 1
        if calls["n"] == at:
            raise exc("interrupted")
        return original(self, point)

    monkeypatch.setattr(PrivateGibbs, "step", step)


def test_gibbs_ctrl_c_during_tuning_charges_the_plan_and_raises_a_clear_error(monkeypatch):
    _interrupt_step_at(monkeypatch, 10, KeyboardInterrupt)  # tune=20: PyMC returns no posterior
    ledger = PrivacyLedger()
    with pytest.raises(InterruptedRunError, match="interrupted during tuning"):
        with beta_bernoulli():
            pmdp.sample(40, method="gibbs", temperature=4.0, truncate={"p": (0.2, 0.8)}, ledger=ledger, **SHORT)
    (entry,) = ledger.entries
    assert entry.count == 60 and entry.details["interrupted"] == "InterruptedRunError"
    assert not ledger.reserved


@pytest.mark.parametrize("exc", [KeyboardInterrupt, RuntimeError])
def test_gibbs_interrupt_or_exception_after_tuning_charges_the_plan(monkeypatch, exc):
    _interrupt_step_at(monkeypatch, 30, exc)
    ledger = PrivacyLedger()
    with beta_bernoulli():
        if exc is KeyboardInterrupt:  # PyMC catches it and returns the partial trace
            idata = pmdp.sample(40, method="gibbs", temperature=4.0, truncate={"p": (0.2, 0.8)}, ledger=ledger, **SHORT)
            assert pmdp.ledger(idata).total() == ledger.total()
        else:
            with pytest.raises(RuntimeError, match="interrupted"):
                pmdp.sample(40, method="gibbs", temperature=4.0, truncate={"p": (0.2, 0.8)}, ledger=ledger, **SHORT)
    (entry,) = ledger.entries
    assert entry.count == 60 and not ledger.reserved


# ---------------------------------------------------------------------------- class 6: pm.sample keywords


def _keyword_cases():
    return [
        {"discard_tuned_samples": False, "tune": 5},
        {"discard_tuned_samples": True},
        {"chains": 2, "cores": 1},
        {"random_seed": 7},
        {"init": "adapt_diag"},
        {"compute_convergence_checks": True},
        {"keep_warning_stat": True},
        {"idata_kwargs": {"log_likelihood": True}},
        {"target_accept": 0.9},
        {"var_names": ["p"]},
        {"initvals": {"p": 0.3}},
        {"quiet": True},
        {"blas_cores": 1},
        {"jitter_max_retries": 2},
        {"progressbar": True},
    ]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("keywords", _keyword_cases(), ids=lambda k: ",".join(k))
def test_every_pm_sample_keyword_works_or_is_refused_before_spending(method, keywords):
    if not {"quiet", "blas_cores"} <= set(inspect.signature(pm.sample).parameters) and (
        {"quiet", "blas_cores"} & set(keywords)
    ):
        pytest.skip("keyword of a newer PyMC")
    ledger = PrivacyLedger()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            idata = run(beta_bernoulli(), method, ledger, draws=10, **keywords)
    except ValueError as err:  # a refusal must come before any spend
        assert _spent_nothing(ledger), str(err)
        return
    assert len(ledger) >= 1 and not ledger.reserved
    assert pmdp.ledger(idata).total() == ledger.total()
    groups = set(_compat.group_names(idata))
    assert not groups & {"observed_data", "constant_data", "log_likelihood", "warmup_posterior"}, groups


# ---------------------------------------------------------------------------- class 7: dims on observed


@pytest.mark.parametrize("method", METHODS)
def test_an_observed_variable_with_dims_is_accepted(method):
    ledger = PrivacyLedger()
    idata = run(beta_bernoulli(dims="record"), method, ledger)
    assert pmdp.ledger(idata).total().epsilon > 0
    assert "record" not in _compat.get_group(idata, "posterior").dims


# ---------------------------------------------------------------------------- class 8: seeded randomness


@pytest.mark.parametrize("method", ["ops", "gibbs"])
def test_a_seeded_sampler_is_recorded_as_seeded_with_a_warning(method):
    with pytest.warns(UserWarning, match="random_seed= fixes the sampler's randomness"):
        idata = run(beta_bernoulli(), method, random_seed=5)
    for entry in pmdp.ledger(idata).entries:
        assert entry.noise_source == "seeded" and SEEDED_SAMPLER in entry.assumptions


@pytest.mark.parametrize("method", ["ops", "gibbs"])
def test_without_a_seed_the_sampler_is_recorded_as_such(method):
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        warnings.filterwarnings("ignore", message=".*(converge|R-hat|effective|divergen|chains|draw\\(s\\) per chain).*")
        idata = run(beta_bernoulli(), method)
    for entry in pmdp.ledger(idata).entries:
        assert entry.noise_source == "sampler" and SEEDED_SAMPLER not in entry.assumptions
    assert "random_seed" not in str(_compat.get_attrs(idata))


def test_seeded_gibbs_release_is_reproducible_bit_for_bit():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = run(beta_bernoulli(), "gibbs", random_seed=11)
        b = run(beta_bernoulli(), "gibbs", random_seed=11)
    assert np.array_equal(_compat.get_group(a, "posterior")["p"].values, _compat.get_group(b, "posterior")["p"].values)


# ---------------------------------------------------------------------------- found by a fresh audit


@pytest.mark.parametrize("method", [m for m in METHODS if m != "saa"])  # saa gives each block its rows: test_saa
@pytest.mark.parametrize("prior", ["hyperparameter", "size"])
def test_record_arrays_in_a_prior_are_refused_on_every_route_before_spending(method, prior):
    """NumPy records folded into a prior (pt.mean(y) as a location, sum(y > 0) as a size) were released uncharged."""
    import pytensor.tensor as pt

    records = pt.as_tensor(RECORDS)
    with pm.Model() as model:
        if prior == "hyperparameter":
            pm.Normal("hyper", pt.mean(records), 1e-4)
        else:
            pm.Normal("k", 0, 1, shape=pt.sum(records > 0))
        pm.Bernoulli("y", pm.Beta("p", 1, 1), observed=RECORDS)
    ledger = PrivacyLedger()
    with pytest.raises(ValueError, match="data"):
        run(model, method, ledger)
    assert len(ledger) == 0


def _outcome_under_add_remove(method: str, length: int) -> str:
    """What a call under add/remove does with a variable of ``length`` entries written in: its outcome, lengths elided."""
    import re

    with pm.Model() as model:
        pm.Normal("z", 0, 1, shape=length)
        pm.Dirichlet("q", np.ones(length))  # a constant of that length in a prior too
        pm.Bernoulli("y", pm.Beta("p", 1, 1), observed=RECORDS)
    ledger = PrivacyLedger(neighbouring="add_remove", budget=pmdp.Budget(1e-9))  # every accepted call stops at the budget
    args = {"loglik_clip": (-3.0, 0.0)} if method == "ops" else {}
    short = {k: v for k, v in SHORT.items() if k not in NOT_AIS} if method == "ais" else SHORT
    try:
        with model:
            pmdp.sample(20, epsilon=2.0, method=method, ledger=ledger, **(args or ROUTE_ARGS[method]), **short)
    except Exception as err:  # noqa: BLE001 - the outcome is what is compared
        assert len(ledger) == 0
        return f"{type(err).__name__}: " + re.sub(r"\d+", "#", str(err))
    return "ran"


@pytest.mark.parametrize("method", METHODS)
def test_under_add_remove_no_refusal_depends_on_the_number_of_records(method):
    """A length written into the model (a variable's, a prior constant's) as long as the records, give or take one,
    meets the same outcome as one far from N: a refusal that followed N would tell it for free (N is private)."""
    far = _outcome_under_add_remove(method, N + 7)
    for length in (N - 1, N, N + 1):
        assert _outcome_under_add_remove(method, length) == far, length


BAD_SAMPLING = [
    (dict(draws=0), "draws must be >= 1"),
    (dict(draws=1.5), "draws must be an integer"),
    (dict(chains=0), "chains must be >= 1"),
    (dict(tune="x"), "tune must be an integer"),
    (dict(tune=10.0), "tune must be an integer"),
    (dict(random_seed=1.5), "random_seed must be"),
    (dict(initvals=[{"p": 0.3}] * 3), "a list of 3 starting points but chains=1"),
    (dict(initvals={"p": np.full(3, 0.3)}), r"initvals\['p'\] has shape \(3,\)"),
    (dict(init="bogus"), "init must be one of"),
    (dict(initvals={"p": 5.0}), "outside the support"),
    (dict(initvals={"nope": 0.5}), "initvals name"),
    (dict(var_names=[]), "var_names is empty"),
    (dict(var_names=["y"]), "cannot release 'y'"),
    # pm.sample reads these only after the draws: they must be refused before the spend.
    (dict(var_names="p"), "not a string"),
    (dict(idata_kwargs={"bogus": 1}), "pm.to_inference_data does not take"),
    (dict(idata_kwargs=3), "idata_kwargs must be a dict"),
    (dict(nuts={"max_treedepth": -1}), r"nuts\['max_treedepth'\] must be >= 1"),
    (dict(nuts={"max_tree_depth": 5}), "a misspelling"),
    (dict(nuts=5), "nuts= must be a dict"),
    (dict(target_accept=1.5), "target_accept must be a number strictly between 0 and 1"),
    (dict(nuts={"step_scale": 0}), r"nuts\['step_scale'\] must be a positive number"),
    (dict(callback=5), "callback must be a function"),
    (dict(compile_kwargs={"mode": "NOPE"}), r"compile_kwargs\['mode'\] is not a PyTensor mode"),
    (dict(compile_kwargs={"bogus": 1}), "compile_kwargs must be a dict of pytensor.function keywords"),
    (dict(init="advi", n_init=-1), "n_init must be >= 1"),
    (dict(jitter_max_retries=-1), "jitter_max_retries must be >= 0"),
    (dict(idata_kwargs={"dims": {"p": ["nope"]}}), "coords and dims are the model's"),
]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("bad, message", BAD_SAMPLING, ids=[m for _, m in BAD_SAMPLING])
def test_sampling_arguments_pm_sample_would_fail_on_are_refused_before_spending(method, bad, message):
    ledger = PrivacyLedger()
    bad = dict(bad)
    draws = bad.pop("draws", 20)
    if method == "ais":  # it runs no pm.sample: its keywords are refused as such, or by the checks every route shares
        message = f"(?:{message})|runs no pm.sample"
    with pytest.raises(ValueError, match=message):
        run(beta_bernoulli(), method, ledger, draws=draws, **bad)
    assert len(ledger) == 0


def test_gibbs_samples_a_free_variable_without_children():
    with pm.Model() as model:
        pm.Normal("other", 0, 1)
        pm.Bernoulli("y", pm.Beta("p", 1, 1), observed=RECORDS)
    idata = run(model, "gibbs", draws=50)
    other = idata.posterior["other"].values
    assert np.isfinite(other).all() and other.std() > 0


def test_free_variables_with_dims_are_not_data_on_the_laplace_route():
    with pm.Model(coords={"grp": ["a", "b"]}) as model:
        p = pm.Beta("p", 1, 1, dims="grp")
        pm.Bernoulli("y", p[0], observed=RECORDS)
    idata = run(model, "laplace")
    assert idata.posterior["p"].dims == ("chain", "draw", "grp")


def test_target_accept_goes_through_to_the_sampler():
    idata = run(beta_bernoulli(), "ops", target_accept=0.95)
    assert pmdp.ledger(idata).total().epsilon == pytest.approx(2.0)


def test_privatize_reads_masked_records_as_malformed_not_refused():
    # A masked entry is a missing record: refusing would say that one is missing. It is replaced by the family's
    # default record (0 here), NumPy or Dask, and only the curator hears how many.
    da = pytest.importorskip("dask.array")
    values, mask = np.array([0, 1, 1, 0, 1]), np.array([0, 1, 0, 0, 1], bool)
    lazy = da.ma.masked_array(da.from_array(values, chunks=2), mask=da.from_array(mask, chunks=2))
    for records in (np.ma.masked_array(values, mask), lazy):
        with pytest.warns(pmdp.families.ClippedRecordsWarning, match="2 of 5 record"):
            got = pmdp.privatize(records, "bernoulli", epsilon=1.0, rng=0)
        want = pmdp.privatize(np.where(mask, 0, values), "bernoulli", epsilon=1.0, rng=0)
        assert np.array_equal(got.noisy, want.noisy)


def test_the_gibbs_route_counts_its_draws_on_a_line_of_its_own(capfd):
    # PyMC's bar would show the speed, the elapsed time and NUTS statistics of a density that reads the records
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with beta_bernoulli():
            pmdp.sample(30, epsilon=2.0, method="gibbs", tune=20, chains=1, cores=1, random_seed=1,
                        **ROUTE_ARGS["gibbs"])
    err = capfd.readouterr().err
    assert "private MCMC: 50/50 draws" in err
    assert not any(word in err for word in ("draws/s", "Elapsed", "Remaining", "Step size", "Divergences"))


@pytest.mark.parametrize("bar", [True, False])
def test_the_laplace_route_says_what_it_compiles_before_the_bar_appears_only_with_the_bar_on(capfd, bar):
    """The first compile of a record-free model can take a minute with nothing on screen: a public stage line says
    what runs, when the progress bar is on (and nothing when the user turned it off)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with beta_bernoulli():
            pmdp.sample(20, epsilon=1.0, method="laplace", tune=20, chains=1, cores=1, random_seed=1,
                        progressbar=bar, compute_convergence_checks=False)
    said = "pmdp: sampling the record-free model" in capfd.readouterr().err
    assert said == bar
