"""Where executed notebooks are kept: one jupyter-cache per state of the library.

The docs build (myst-nb, ``nb_execution_mode = "cache"``) and ``tests/test_notebooks.py``
share this cache, so a notebook runs once per change: a notebook is found in the cache
by its code cells (jupyter-cache hashes them), and the cache folder is named by a digest
of everything else that decides what the notebook prints — the package's sources, the
lock files and the Python version. Change a notebook, the library or a pinned release
and the notebook runs again; change nothing and neither the tests nor the docs build
re-execute it. A fresh clone has no cache, so CI always executes every notebook once.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import sys
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parent.parent

__all__ = ["cache_path", "cache_lock"]


def cache_path() -> Path:
    """``docs/_build/.jupyter_cache/<digest of the library, the locks and the Python version>``."""
    digest = hashlib.sha256(f"python {sys.version_info[0]}.{sys.version_info[1]}".encode())
    for path in sorted((ROOT / "pymc_dp").rglob("*.py")) + sorted((ROOT / "locks").glob("*.txt")):
        digest.update(str(path.relative_to(ROOT)).encode())
        digest.update(path.read_bytes())
    return ROOT / "docs" / "_build" / ".jupyter_cache" / digest.hexdigest()[:16]


@contextlib.contextmanager
def cache_lock() -> Iterator[None]:
    """An exclusive lock on the cache while it is read or written (test workers run side by side)."""
    path = cache_path()
    path.mkdir(parents=True, exist_ok=True)
    with open(path.parent / ".lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
