"""Manifest files as ``kubectl -f`` reads them (for ``lint -f`` and ``preview -f``): a file, a directory (its
``.yaml``, ``.yml`` and ``.json`` files; with ``recursive`` its sub-directories too) or ``-`` (stdin); every
document of a YAML stream, a ``List``'s items one by one."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

_SUFFIXES = (".yaml", ".yml", ".json")


def files(paths: list[str], *, recursive: bool) -> Iterator[tuple[str, str]]:
    """(name, text) of every file to read; OSError for one that cannot be read."""
    for given in paths:
        if given == "-":
            yield "<stdin>", sys.stdin.read()
            continue
        path = Path(given)
        if path.is_dir():
            pattern = "**/*" if recursive else "*"
            for found in sorted(path.glob(pattern)):
                if found.is_file() and found.suffix in _SUFFIXES:
                    yield str(found), found.read_text(encoding="utf-8")
        else:
            yield str(path), path.read_text(encoding="utf-8")


def documents(text: str) -> Iterator[Any]:
    """The documents of a YAML (or JSON) stream; a ``List``'s items one by one."""
    import yaml  # noqa: PLC0415 - only lint reads YAML streams

    for document in yaml.safe_load_all(text):
        if isinstance(document, Mapping) and str(document.get("kind", "")).endswith("List"):
            yield from document.get("items") or []
        elif document is not None:
            yield document
