"""Size limits of the operator's code and of the sandbox tool (``tools/sandbox``), kept in CI: no module over
400 lines, no function over 80 lines."""

from __future__ import annotations

import ast
from pathlib import Path

import sundial
import sundial_sandbox

MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 80
PACKAGE = Path(sundial.__file__).resolve().parent
REPO = PACKAGE.parents[1]
SANDBOX_PACKAGE = Path(sundial_sandbox.__file__).resolve().parent


def _modules() -> list[Path]:
    return sorted([*PACKAGE.rglob("*.py"), *SANDBOX_PACKAGE.rglob("*.py")])


def _name(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


def test_the_packages_are_found() -> None:
    assert any(path.name == "process.py" for path in _modules())
    assert any(path.name == "cluster.py" for path in _modules())


def test_no_module_is_over_the_limit() -> None:
    long = {}
    for path in _modules():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_MODULE_LINES:
            long[_name(path)] = lines
    assert long == {}, f"modules over {MAX_MODULE_LINES} lines (split them by concern): {long}"


def test_no_function_is_over_the_limit() -> None:
    long = {}
    for path in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno is not None:
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long[f"{_name(path)}:{node.lineno} {node.name}"] = lines
    assert long == {}, f"functions over {MAX_FUNCTION_LINES} lines (split them): {long}"
