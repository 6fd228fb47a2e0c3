"""Resumable benchmark runs: every finished run appended to a JSON-lines file, read back on restart."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

__all__ = ["StoredRuns", "write_results"]


class StoredRuns:
    """The runs stored in ``path`` (one ``{"key": ..., **result}`` per line), keyed by their key."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self.done: dict[str, dict[str, Any]] = {}
        if path.exists():
            for line in path.read_text().splitlines():
                record = json.loads(line)
                self.done[record.pop("key")] = record

    def get(self, key: str, compute: Callable[[], dict[str, Any]], echo: bool = True) -> dict[str, Any]:
        """The stored result of ``key``, or ``compute()``'s, appended to the file as soon as it is known."""
        if key not in self.done:
            self.done[key] = compute()
            with self.path.open("a") as fh:
                fh.write(json.dumps({"key": key, **self.done[key]}) + "\n")
            if echo:
                print(key, self.done[key], flush=True)
        return self.done[key]


def write_results(stem: str, results: Any, markdown: str) -> None:
    """``results/<stem>.json`` and ``results/<stem>.md`` beside the benchmarks, and the table on stdout."""
    out = Path(__file__).resolve().parent / "results"
    (out / f"{stem}.json").write_text(json.dumps(results, indent=1) + "\n")
    (out / f"{stem}.md").write_text(markdown + "\n")
    print(markdown)
