"""The documentation builds without a single warning, and says nothing untrue about the API.

* The build itself is ``make docs`` (``sphinx -W --keep-going -b html``, then a check
  that every page and notebook was written), a CI stage of its own; the notebooks it
  shows are executed once per change, by ``tests/test_notebooks.py`` or by the build,
  whichever comes first (docs/notebook_cache.py).
* ``test_readme_example_runs`` executes the README's example (it samples with
  PyMC, so it is ``slow`` too).
* ``test_documented_names_exist`` is fast: every ``pymc_dp`` name used in a Python
  code block or a cross-reference role of the README, the docs pages or the
  notebooks' text must exist. (Sphinx cannot catch these: without intersphinx the
  build is not nitpicky, so an unresolved reference is silently plain text.)
"""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path

import pytest

from pymc_dp import _compat

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README = ROOT / "README.md"


def _markdown_sources() -> list[Path]:
    pages = [README]
    pages += [
        p
        for p in DOCS.rglob("*.md")
        if "_build" not in p.parts and "generated" not in p.parts and "notebooks" not in p.parts
    ]
    return sorted(pages)


def _notebook_texts() -> dict[str, str]:
    out = {}
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
        for i, cell in enumerate(cells):
            src = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            if cell["cell_type"] == "code":
                src = f"```python\n{src}\n```"
            out[f"{nb.name}[cell {i}]"] = src
    return out


def _texts() -> dict[str, str]:
    texts = {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in _markdown_sources()}
    texts.update(_notebook_texts())
    return texts


_FENCE = re.compile(r"```(?:python|py)\n(.*?)```", re.S)
_ROLE = re.compile(r"\{(?:py:)?(?:func|class|meth|attr|mod|data|exc|obj)\}`(?:[^`<]*<)?~?(pymc_dp[\w.]*)>?`")
_FROM_IMPORT = re.compile(r"^\s*from\s+(pymc_dp[\w.]*)\s+import\s+(\([^)]*\)|[^\n#]+)", re.M)
_ALIAS_ATTR = re.compile(r"\bpmdp\.([A-Za-z_]\w*)")


def _resolve(dotted: str) -> object:
    """Import the longest importable module prefix of ``dotted`` and getattr the rest."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for name in parts[i:]:
            obj = getattr(obj, name)  # AttributeError: the name does not exist
        return obj
    raise ImportError(dotted)


def _documented_names() -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for where, text in _texts().items():
        for target in _ROLE.findall(text):
            found.append((where, target))
        for block in _FENCE.findall(text):
            for module, names in _FROM_IMPORT.findall(block):
                for item in names.strip("()").split(","):
                    name = item.split(" as ")[0].strip()
                    if name:
                        found.append((where, f"{module}.{name}"))
            if "import pymc_dp as pmdp" in block:
                for name in _ALIAS_ATTR.findall(block):
                    found.append((where, f"pymc_dp.{name}"))
    return sorted(set(found))


def test_documented_names_exist() -> None:
    names = _documented_names()
    assert names, "found no pymc_dp names in the docs at all; is the scanner broken?"
    missing = []
    for where, dotted in names:
        try:
            _resolve(dotted)
        except (ImportError, AttributeError) as err:
            missing.append(f"{where}: {dotted} ({type(err).__name__}: {err})")
    assert not missing, "the docs mention pymc_dp names that do not exist:\n" + "\n".join(missing)


def _readme_example() -> str:
    text = README.read_text(encoding="utf-8")
    section = text.split("## Example", 1)[1]
    blocks = _FENCE.findall(section)
    assert blocks, "the README's Example section has no python block"
    return blocks[0]


@pytest.mark.slow
def test_readme_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("pymc")
    monkeypatch.chdir(tmp_path)  # the example writes analysis.nc
    namespace: dict[str, object] = {"__name__": "__readme__"}
    exec(compile(_readme_example(), "README.md:Example", "exec"), namespace)  # noqa: S102
    public = namespace["public"]
    assert (tmp_path / "analysis.nc").is_file()
    groups = set(_compat.group_names(public))
    assert {"posterior", "privacy"} <= groups
    assert not {"observed_data", "constant_data", "log_likelihood"} & groups
    import pymc_dp as pmdp

    ledger = pmdp.ledger("analysis.nc")
    assert ledger.total().epsilon == pytest.approx(1.0)  # nothing declared: the range's choice is inside the ε
    assert any("selection" in e.details for e in ledger.entries)
    assert float(public.posterior["mu"].mean()) == pytest.approx(170.0, abs=1.5)


@pytest.mark.slow
def test_every_readme_example_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Every python block of the README, in order and in one namespace (the later ones use
    # the Example's model), as a reader pasting them into one session would run them.
    pytest.importorskip("pymc")
    import matplotlib

    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)
    text = README.read_text(encoding="utf-8").split("## Example", 1)[1].split("\n## Documentation", 1)[0]
    blocks = _FENCE.findall(text)
    assert len(blocks) >= 4, "expected the Example, OPS, Gibbs and posterior-release blocks"
    namespace: dict[str, object] = {"__name__": "__readme__"}
    for i, block in enumerate(blocks):
        exec(compile(block, f"README.md:block {i}", "exec"), namespace)  # noqa: S102
    import pymc_dp as pmdp

    assert pmdp.ledger(namespace["one"]).total().epsilon == pytest.approx(4.0)
    # The temperature was fitted so that the tight (PLD/RDP) total at δ = 1e-6 is ε = 2.
    assert pmdp.ledger(namespace["chain"]).total("best", delta=1e-6).epsilon == pytest.approx(2.0, rel=1e-3)
    assert namespace["release"].entry.epsilon == pytest.approx(1.0)
    assert pmdp.ledger(namespace["clipped"]).entries[0].details["route"] == "ops"
    assert pmdp.ledger(namespace["blocks"]).total().epsilon == pytest.approx(1.0)
