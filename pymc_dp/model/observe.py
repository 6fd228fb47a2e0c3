"""``observe_stats``: a model's likelihood from privatised statistics instead of records."""

from __future__ import annotations

import weakref
from typing import Any, Callable, Mapping

import numpy as np

from ..families import PrivateStatistics, family_of_dist
from ..families._latent_count import record_count_name
from ..families._noise_aware import RELEASE_NAME, released_values
from ._graph import data_leaves, describe_leaf

__all__ = ["observe_stats", "statistics_of", "statistics_loglik"]

# Which privatised statistics each model's likelihood uses (so that pmdp.sample can
# attach their ledgers without being told). Weak keys: models are never kept alive.
_USED: "weakref.WeakKeyDictionary[Any, list[PrivateStatistics]]" = weakref.WeakKeyDictionary()


def statistics_of(model: Any) -> list[PrivateStatistics]:
    """The privatised statistics observed in ``model`` through :func:`observe_stats`."""
    return list(_USED.get(model, []))


def _register(model: Any, stats: PrivateStatistics) -> None:
    _USED.setdefault(model, []).append(stats)


def _check_family_compatible(stats: PrivateStatistics, dist_family: Any, name: str) -> None:
    fam = stats.family
    if type(dist_family) is not type(fam):
        raise ValueError(
            f"observe_stats({name!r}): the statistics were released for the {fam.name} family, but the "
            f"distribution is {dist_family.name}; use the matching distribution."
        )
    released, wanted = fam.family_args(), dist_family.family_args()
    for key, value in released.items():
        if value is None:  # the release is the general case (e.g. unknown variance): any value works
            continue
        other = wanted.get(key)
        if other is None or not np.allclose(other, value):
            raise ValueError(
                f"observe_stats({name!r}): the statistics were released for {fam!r} ({key}={value!r} fixed), "
                f"but the distribution has {key}={other!r}. Privatise again with {key}=None (if the family "
                f"supports it) or give the distribution the same fixed {key}."
            )


def noise_mixing_name(name: str) -> str:
    """Name of the latent noise-mixing variables of the likelihood term ``name``."""
    return f"{name}_noise_mixing"


def statistics_loglik(
    stats: PrivateStatistics,
    params: Mapping[str, Any],
    noise_aware: bool,
    make_mixing: Callable[[int], Any] | None = None,
    name: str | None = None,
    make_count: Callable[[Any], tuple[Any, Any]] | None = None,
) -> Any:
    """The log-likelihood term of privatised statistics: plug-in, or noise-aware.

    ``make_mixing(d)`` creates the d latent Exponential(1) noise-mixing variables a
    multivariate noise-aware likelihood needs (see
    :meth:`~pymc_dp.families.base.Family.noise_mixing_size`) and returns them.
    ``make_count(latent)`` creates the latent number of records of an add/remove release
    (:mod:`pymc_dp.families._latent_count`): a flat free variable v named ``latent.free_name(<count>)``,
    and the Deterministic N = ``latent.count(v)``; it returns (v, N). ``name``
    (the observed variable's) names the shared variable holding the released numbers,
    ``released_statistics_<name>``.
    """
    token = RELEASE_NAME.set(f"released_statistics_{name}" if name else "released_statistics")
    try:
        return _statistics_loglik(stats, params, noise_aware, make_mixing, make_count)
    finally:
        RELEASE_NAME.reset(token)


def _latent(make: Callable[..., Any] | None, argument: Any) -> Any:
    if make is None:
        raise ValueError("this noise-aware likelihood needs latent variables: build it with observe_stats.")
    return make(argument)


def _statistics_loglik(stats: PrivateStatistics, params: Mapping[str, Any], noise_aware: bool,
                       make_mixing: Callable[[int], Any] | None,
                       make_count: Callable[[Any], tuple[Any, Any]] | None) -> Any:
    family = stats.family
    if noise_aware:
        if not family.supports_noise_aware:
            raise ValueError(
                f"{family!r} has no noise-aware likelihood yet; pass noise_aware=False for the plug-in likelihood."
            )
        released = int(np.size(stats.noisy))
        if not stats.n_is_public:  # N private: a latent count, and the central-limit form (see _latent_count)
            from ..families._latent_count import LatentCount, latent_count_mixing_size, latent_count_noise_aware_logp

            size = latent_count_mixing_size(stats)
            mixing = _latent(make_mixing, size) if size else None
            latent = LatentCount(stats)
            free, count = _latent(make_count, latent)
            # + the free variable's log prior: N's flat prior, written in it (and the count's own noise term)
            return latent_count_noise_aware_logp(stats, params, count, mixing) + latent.log_prior(free)
        # Gaussian noise convolves with the central-limit Normal in closed form: no mixing variables
        size = 0 if stats.mechanism == "gaussian" else family.noise_mixing_size(released, stats.n)
        mixing = _latent(make_mixing, size) if size else None
        if stats.centred:
            from ..families.release_design import centred_noise_aware_logp

            return centred_noise_aware_logp(stats, params, mixing)
        return family.noise_aware_loglik(
            stats.noisy, stats.n, stats.scale, stats.neighbouring, params, bounds=stats.bounds, noise_mixing=mixing,
            mechanism=stats.mechanism,
        )
    return family.loglik(released_values(stats.values), float(stats.n), params)


def observe_stats(
    name: str,
    dist: Any,
    stats: PrivateStatistics,
    *,
    noise_aware: bool = False,
    model: Any = None,
) -> Any:
    """Add the likelihood of the model's parameters given privatised statistics.

    Use it inside a ``pm.Model`` in place of an observed variable: the records are
    never in the model, only ``stats`` (already private), so any sampler, any number
    of draws and chains, costs no further privacy.

    Two likelihoods:

    * plug-in (``noise_aware=False``): the family's exponential-family
      log-likelihood with the noisy, projected statistics plugged in as if exact;
      over-confident when the noise is not small next to the statistic's spread;
    * noise-aware (``noise_aware=True``; every family): the likelihood of
      the value actually released (noisy, unprojected), the true statistic summed
      or integrated out against the known Laplace noise, so the posterior carries
      the uncertainty the noise added. Exact for Bernoulli and Binomial counts (up
      to 5,000 trials); the central-limit form otherwise. A release of two numbers
      (Normal with unknown σ) gets the bivariate Normal ⊛ Laplace density itself
      (:mod:`pymc_dp.families._bivariate`); a release of more (Categorical,
      Multinomial above 150 trials, linear regression)
      adds latent variables ``{name}_noise_mixing`` (one Exponential(1) per number,
      the Laplace noise written as a scale mixture of normals) that the sampler
      draws with the parameters; they depend on the release only, so they may be
      released too. The linear regression also needs a model of x
      (``x_mu`` and ``x_sigma`` or ``x_cov`` among the parameters). Under add/remove
      (N private) the number of records is a latent variable too, ``{name}_n_records``
      (flat prior; :mod:`pymc_dp.families._latent_count`), and the central-limit form is
      used for every family.

    Parameters
    ----------
    name
        Name of the likelihood term (a ``pm.Potential``).
    dist
        The likelihood of one record, as an unregistered PyMC distribution whose
        parameters are model variables, e.g. ``pm.Bernoulli.dist(p=p)`` or
        ``pm.Normal.dist(mu=mu, sigma=sigma)``; or, for families with no single PyMC
        distribution (``linear_regression``), a dict of parameters such as
        ``{"beta": beta, "sigma": sigma}``.
    stats
        The output of :func:`pymc_dp.privatize`.
    noise_aware
        Model the noise (see above). Raises ``ValueError`` for a family without a
        noise-aware likelihood.
    model
        The model (default: the one of the enclosing ``with`` block).

    Returns
    -------
    pytensor.tensor.TensorVariable
        The ``pm.Potential`` holding the log-likelihood.

    Raises
    ------
    ValueError
        If ``stats`` is not a :class:`~pymc_dp.families.PrivateStatistics`, the
        distribution does not match its family, a parameter depends on data, or the
        parameters are not scalar (one set of parameters for all records).
    """
    import pymc as pm
    import pytensor.tensor as pt

    model = pm.modelcontext(model)
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be the (non-empty) name of the likelihood term, a string; got {name!r}.")
    if not isinstance(stats, PrivateStatistics):
        raise ValueError(f"stats must be the output of pmdp.privatize, got {type(stats).__name__}.")
    if not isinstance(noise_aware, (bool, np.bool_)):  # bool("False") is True: flags are not converted
        raise ValueError(f"noise_aware must be True or False, got {noise_aware!r}.")
    if isinstance(dist, Mapping):
        params = dict(dist)
    else:
        dist_family, params = family_of_dist(dist)
        _check_family_compatible(stats, dist_family, name)
    leaves = data_leaves([pt.as_tensor(v) for v in params.values()], blockers=model.free_RVs)
    if leaves:
        raise ValueError(
            f"observe_stats({name!r}): a parameter depends on data ({', '.join(describe_leaf(v) for v in leaves)}); "
            "with privatised statistics the likelihood may only involve model parameters and public constants."
        )

    def make_mixing(size: int) -> Any:
        with model:
            return pm.Exponential(noise_mixing_name(name), 1.0, shape=size)

    def make_count(latent: Any) -> tuple[Any, Any]:
        with model:
            free = pm.Flat(latent.free_name(record_count_name(name)))
            return free, pm.Deterministic(record_count_name(name), latent.count(free))

    logp = pt.as_tensor(statistics_loglik(stats, params, bool(noise_aware), make_mixing, name, make_count))
    if logp.type.ndim != 0:
        raise ValueError(
            f"observe_stats({name!r}): the parameters must describe all records at once (scalars, or one vector "
            f"for a categorical), but the log-likelihood has {logp.type.ndim} dimension(s)."
        )
    pot = pm.Potential(name, logp, model=model)
    _register(model, stats)
    return pot
