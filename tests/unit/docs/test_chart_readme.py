"""charts/sundial/README.md (`helm show readme`) is generated from values.yaml comments and up to date."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[3]
TOOL = ROOT / "tools" / "gen-chart-readme.py"


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_chart_readme", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_the_chart_readme_is_not_stale() -> None:
    result = subprocess.run([sys.executable, str(TOOL), "--check"], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


def test_every_value_is_documented() -> None:
    assert "Undocumented keys" not in (ROOT / "charts" / "sundial" / "README.md").read_text()


VALUES = """\
# The file's header, not a key's.

# A plain key.
name: "x"
# A map.
webhook:
  # Nested, with a | pipe and a <placeholder>.
  enabled: true
  items:
    - a: 1
    - b: 2
undocumented: 3
"""


def test_rows_carry_path_type_default_and_description() -> None:
    gen = generator()
    rows = {row.path: row for row in gen.collect(VALUES)}
    assert list(rows) == ["name", "webhook", "webhook.enabled", "webhook.items", "undocumented"]
    assert (rows["name"].type, rows["name"].default, rows["name"].description) == ("string", '`"x"`', "A plain key.")
    assert (rows["webhook"].type, rows["webhook"].default) == ("object", "")
    assert rows["webhook.items"].default == '`[{"a": 1}, {"b": 2}]`'
    assert rows["undocumented"].description == ""
    text = gen.render(VALUES, {"name": "c", "version": "1.0.0"})
    assert "| `webhook.enabled` | bool | `true` | Nested, with a \\| pipe and a &lt;placeholder&gt;. |" in text
    assert "header" not in text
    assert "Undocumented keys (add a comment above them in values.yaml): webhook.items, undocumented" in text
