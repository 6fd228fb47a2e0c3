"""Progress lines that show only public numbers, for routes that sample the records.

PyMC's own progress bar shows, per chain, the divergences, step size and gradient
evaluations of NUTS and turns red when a chain diverges: statistics of a density that
reads the records. Routes whose chain is not released (OPS releases a few draws, SAA
block means) switch it off and report progress here instead: how many of the run's
draws (a number fixed by its shape) are done, nothing about their values.
"""

from __future__ import annotations

import sys
from typing import Any, Callable

__all__ = ["ProgressLine", "chained_callback", "stage"]


class ProgressLine:
    """A one-line counter ``label: done/total unit`` on stderr, redrawn in place.

    Parameters
    ----------
    label
        What is running (``"OPS"``, ``"subsample and aggregate"``).
    total
        How many steps the run has (a public number: the run's shape).
    enabled
        ``False`` makes every call a no-op (``progressbar=False``).
    unit
        The name of one step (``"draws"``, ``"blocks fitted"``).
    """

    def __init__(self, label: str, total: int, enabled: Any = True, unit: str = "draws"):
        self.label, self.total, self.unit = label, max(int(total), 1), unit
        self.enabled = bool(enabled)
        self.done = 0
        self._every = max(1, self.total // 100)

    def advance(self, steps: int = 1) -> None:
        """Count ``steps`` more; redraw on every 1 % and at the end."""
        self.done += steps
        if self.enabled and (self.done % self._every == 0 or self.done >= self.total):
            end = "\n" if self.done >= self.total else ""
            print(f"\r{self.label}: {min(self.done, self.total)}/{self.total} {self.unit}", end=end, file=sys.stderr,
                  flush=True)

    def callback(self, *args: Any, **kwargs: Any) -> None:
        """``pm.sample(callback=...)``: one call per draw of every chain (tuning included); reads nothing of it."""
        self.advance()


def chained_callback(progress: ProgressLine, user: Callable[..., Any] | None) -> Callable[..., Any]:
    """A ``pm.sample`` callback that advances ``progress`` and then calls the user's own callback, if any."""
    if user is None:
        return progress.callback

    def both(*args: Any, **kwargs: Any) -> Any:
        progress.callback()
        return user(*args, **kwargs)

    return both


def stage(message: str, enabled: Any = True) -> None:
    """One line ``pmdp: message`` on stderr, when the progress bar is on: what a long silent step is doing (the
    first compile of a record-free model takes a minute or more before PyMC's bar appears). ``message`` must be
    public: a constant, or numbers fixed by the request."""
    if enabled:
        print(f"pmdp: {message}", file=sys.stderr, flush=True)
