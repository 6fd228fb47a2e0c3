"""Test-session settings.

One BLAS thread for the whole session: the models here factorise tiny matrices
(the multivariate noise-aware likelihood, 2×2 to 4×4), and OpenBLAS threads
spinning on a busy 2-core machine slow those calls 10–100×.
"""

import os

from threadpoolctl import threadpool_limits

threadpool_limits(1)
# ... and in the processes the tests start (the notebooks' kernels, the CLI's demo): two workers each running
# a kernel whose BLAS threads spin would put four busy threads on two cores.
for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")


def _import_arviz_one_worker_at_a_time() -> None:
    """Import ArviZ under a lock shared by the session's workers.

    ArviZ 0.23 (the Python 3.11 target) writes a once-a-day stamp through a fixed temporary
    file on import; two xdist workers importing it at once on a new day race on that file and
    one fails with FileNotFoundError. The first import, under the lock, writes today's stamp;
    the others then find it and write nothing.
    """
    import fcntl
    import tempfile
    from pathlib import Path

    lock_path = Path(tempfile.gettempdir()) / "pymc_dp_tests_arviz_import.lock"
    with open(lock_path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            import arviz  # noqa: F401
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


_import_arviz_one_worker_at_a_time()


import logging  # noqa: E402

import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

# Property tests (tests/test_properties.py). "ci" (the default): derandomised, so every run
# draws the same examples and a failure reproduces; no example database, no deadline (the
# first call of an entry point pays its imports). "dev": random and 10x the examples, for
# hunting locally: HYPOTHESIS_PROFILE=dev pytest tests/test_properties.py
settings.register_profile(
    "ci", derandomize=True, deadline=None, database=None, print_blob=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "dev", max_examples=2000, deadline=None, print_blob=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture
def quiet_pymc():
    """PyMC's sampling messages at ERROR level for one test (restored afterwards)."""
    logger = logging.getLogger("pymc")
    level = logger.level
    logger.setLevel(logging.ERROR)
    yield
    logger.setLevel(level)


@pytest.fixture(autouse=True)
def pymc_nuts_unless_marked_nutpie(request, monkeypatch):
    """``pm.sample`` runs PyMC's own NUTS here, as it does for users without nutpie.

    PyMC 6 samples with nutpie by default whenever nutpie is installed (the optional extra
    ``pymc-dp[nutpie]``); nutpie compiles every model afresh (seconds each), which would
    multiply the suite's time without testing anything of ours. Tests marked ``nutpie``
    see the installed default and may pass ``nuts_sampler="nutpie"``.
    """
    if request.node.get_closest_marker("nutpie") is None:
        import pymc.sampling.mcmc as mcmc

        if getattr(mcmc, "NUTPIE_INSTALLED", False):
            monkeypatch.setattr(mcmc, "NUTPIE_INSTALLED", False)
    yield


@pytest.fixture(autouse=True)
def curator_reports_on():
    """The tests run as the curator: clip counts and other curator-only reports are shown (and checked).

    By default they are silent (:mod:`pymc_dp.accounting.curator`); ``test_leaks`` checks that.
    """
    from pymc_dp import curator_reports

    with curator_reports():
        yield
