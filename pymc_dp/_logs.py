"""Log lines held back while code reads the records.

Every value that leaves the curator is a release, log lines included: PyMC logs how long sampling
took (INFO) and the energies of divergent trajectories (DEBUG), numba's DEBUG log prints the code it
compiles, constants and all. :func:`quiet_logs` holds back INFO and DEBUG process-wide while records
are read; :func:`reads_records` applies it to a public function.
"""

from __future__ import annotations

import functools
from contextlib import contextmanager
from typing import Any, Callable, Iterator, TypeVar

__all__ = ["quiet_logs", "reads_records"]

F = TypeVar("F", bound=Callable[..., Any])


@contextmanager
def quiet_logs(active: bool = True) -> Iterator[None]:
    """Hold back every INFO and DEBUG log line while code reads the records (planning, a sampler).

    PyMC logs how long sampling took (INFO) and the energies of divergent trajectories
    (DEBUG), numba's DEBUG log prints the code it compiles with the observed arrays in it:
    all functions of the records, released to whoever reads the log. Loggers below
    WARNING are switched off process-wide for the run (``logging.disable``: a level set
    on a child logger does not get around it); warnings still show.
    """
    import logging

    previous = logging.root.manager.disable
    if active and previous < logging.INFO:
        logging.disable(logging.INFO)
    try:
        yield
    finally:
        logging.disable(previous)


def reads_records(function: F) -> F:
    """``function`` run under :func:`quiet_logs`: a public entry point that reads the records."""

    @functools.wraps(function)
    def quiet(*args: Any, **kwargs: Any) -> Any:
        with quiet_logs():
            return function(*args, **kwargs)

    return quiet  # type: ignore[return-value]
