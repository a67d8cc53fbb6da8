"""results.json -> report.md and PNG plots."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def render(results: dict[str, Any], out: Path) -> None:
    (out / "report.md").write_text("TODO\n", encoding="utf-8")
