"""Size limits of the operator's code, of the sandbox tool (``tools/sandbox``) and of the benchmarks
(``bench/``), kept in CI: no module over 400 lines, no function over 80 lines, except the few listed in
:data:`EXCEPTIONS` with their reason (see CONTRIBUTING.md, "Size limits")."""

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
BENCH = REPO / "bench"

#: Over a limit on purpose: ``"path"`` (a module) or ``"path:function"`` -> why it stays whole. Keep it short;
#: an entry that is no longer over its limit (or no longer exists) fails the tests, so the list cannot rot.
EXCEPTIONS: dict[str, str] = {
    "bench/memory.py": "one measuring script run as a child process of itself (python -m bench.memory): the "
    "fakes of the API and of the watch stream sit next to the phases that drive them",
    "bench/report.py:markdown": "the layout of the results page as one list of lines, in page order",
}


def _modules() -> list[Path]:
    return sorted([*PACKAGE.rglob("*.py"), *SANDBOX_PACKAGE.rglob("*.py"), *BENCH.glob("*.py")])


def _name(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


def _module_sizes() -> dict[str, int]:
    return {_name(path): len(path.read_text(encoding="utf-8").splitlines()) for path in _modules()}


def _function_sizes() -> dict[str, int]:
    """``"path:function"`` -> lines, the longest of functions sharing a name in one module."""
    sizes: dict[str, int] = {}
    for path in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno is not None:
                key = f"{_name(path)}:{node.name}"
                sizes[key] = max(sizes.get(key, 0), node.end_lineno - node.lineno + 1)
    return sizes


def test_the_packages_are_found() -> None:
    assert any(path.name == "process.py" for path in _modules())
    assert any(path.name == "cluster.py" for path in _modules())
    assert any(path.parent == BENCH and path.name == "herd.py" for path in _modules())


def test_no_module_is_over_the_limit() -> None:
    long = {name: lines for name, lines in _module_sizes().items() if lines > MAX_MODULE_LINES}
    long = {name: lines for name, lines in long.items() if name not in EXCEPTIONS}
    assert long == {}, f"modules over {MAX_MODULE_LINES} lines (split them by concern): {long}"


def test_no_function_is_over_the_limit() -> None:
    long = {name: lines for name, lines in _function_sizes().items() if lines > MAX_FUNCTION_LINES}
    long = {name: lines for name, lines in long.items() if name not in EXCEPTIONS}
    assert long == {}, f"functions over {MAX_FUNCTION_LINES} lines (split them): {long}"


def test_every_exception_has_a_reason_and_is_still_over_its_limit() -> None:
    modules, functions = _module_sizes(), _function_sizes()
    stale = {}
    for name, reason in EXCEPTIONS.items():
        assert reason.strip(), f"{name}: an exception needs its reason"
        if ":" in name:
            lines, limit = functions.get(name), MAX_FUNCTION_LINES
        else:
            lines, limit = modules.get(name), MAX_MODULE_LINES
        if lines is None or lines <= limit:
            stale[name] = lines
    assert stale == {}, f"exceptions no longer needed (gone, or within the limit now: remove them): {stale}"
