"""Test-session settings.

One BLAS thread for the whole session: the models here factorise tiny matrices
(the multivariate noise-aware likelihood, 2×2 to 4×4), and OpenBLAS threads
spinning on a busy 2-core machine slow those calls 10–100×.
"""

from threadpoolctl import threadpool_limits

threadpool_limits(1)


import logging  # noqa: E402

import pytest  # noqa: E402


@pytest.fixture
def quiet_pymc():
    """PyMC's sampling messages at ERROR level for one test (restored afterwards)."""
    logger = logging.getLogger("pymc")
    level = logger.level
    logger.setLevel(logging.ERROR)
    yield
    logger.setLevel(level)
