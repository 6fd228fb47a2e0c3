"""Link PyTensor's C backend to the BLAS that pip provides (scipy-openblas32), in this venv only.

PyTensor 2.x (PyMC 5) compiles its graphs to C and links them to a system BLAS it looks
for at import; a venv made by pip has none, so PyTensor warns "could not link to a BLAS
installation" and falls back to slower NumPy calls for every matrix product in a model's
log-density (measured in benchmarks/blas.py: about 2.5x slower logp+gradient evaluations
for a regression on 100 to 1,000 records). PyTensor 3 (PyMC 6) compiles with Numba by
default, which calls SciPy's BLAS itself; the link still serves its C backend (``mode="CVM"``)
and ends the warning at import.

The wheel ``scipy-openblas32`` (the OpenBLAS that NumPy and SciPy ship, installed by the
project's ``blas`` extra) prefixes its symbols with ``scipy_``. This script writes a ``.pth``
file into the venv's site-packages that, at interpreter start, adds to ``PYTENSOR_FLAGS``
the ``blas__ldflags`` that link it and map each Fortran BLAS name PyTensor's C code uses
(``dgemm_``, ...) to the prefixed one. A user's own ``blas__ldflags`` always wins.

    python tools/link_blas.py        (run with the venv's Python; `make` does it)
"""

from __future__ import annotations

import ctypes
import re
import site
import sys
from pathlib import Path

PTH_NAME = "pymc_dp_blas.pth"


def _pth_path() -> Path:
    return Path(site.getsitepackages()[0]) / PTH_NAME


def _blas_names(pytensor_dir: Path) -> list[str]:
    """Every Fortran BLAS routine name PyTensor's C code may call."""
    names: set[str] = set()
    for src in [*pytensor_dir.joinpath("tensor").rglob("*.py"), *pytensor_dir.joinpath("tensor").rglob("*.h")]:
        names |= set(re.findall(r"\b([sdcz][a-z0-9]{1,6}_)\s*\(", src.read_text(errors="replace")))
    return sorted(names)


def main() -> int:
    pth = _pth_path()
    try:
        import pytensor
    except ImportError:
        print("link_blas: PyTensor is not installed here; nothing to do.")
        return 0
    try:
        import scipy_openblas32
    except ImportError:
        pth.unlink(missing_ok=True)
        print("link_blas: scipy-openblas32 is not installed (the project's 'blas' extra); PyTensor keeps NumPy fallbacks.")
        return 0
    lib_dir = Path(scipy_openblas32.get_lib_dir())
    lib_name = scipy_openblas32.get_library()  # "scipy_openblas"
    lib = ctypes.CDLL(str(lib_dir / f"lib{lib_name}.so"))
    prefix = scipy_openblas32.get_symbol_prefix() if hasattr(scipy_openblas32, "get_symbol_prefix") else "scipy_"
    names = [n for n in _blas_names(Path(pytensor.__file__).parent) if hasattr(lib, prefix + n)]
    if "dgemm_" not in names:
        print(f"link_blas: {lib_dir} has no {prefix}dgemm_; not linking.")
        return 1
    # PYTENSOR_FLAGS separates options by commas, so the rpath goes through -Xlinker.
    flags = " ".join(
        [f"-L{lib_dir}", f"-l{lib_name}", "-Xlinker", "-rpath", "-Xlinker", str(lib_dir)]
        + [f"-D{n}={prefix}{n}" for n in names]
    )
    code = (
        "import os; f = os.environ.get('PYTENSOR_FLAGS', ''); "
        f"'blas__ldflags' in f or os.environ.__setitem__('PYTENSOR_FLAGS', ','.join(filter(None, [f, {('blas__ldflags=' + flags)!r}])))"
    )
    pth.write_text(code + "\n")
    print(f"link_blas: PyTensor {pytensor.__version__} links {lib_dir}/lib{lib_name}.so ({len(names)} routines) via {pth}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
