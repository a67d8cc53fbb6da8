"""The ``sundial`` command: one sub-command per module, each exposing ``register(subparsers)``."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

#: Sub-command modules, each with ``register(subparsers) -> None`` that sets ``func`` via ``set_defaults``.
COMMAND_MODULES: tuple[str, ...] = (
    "sundial.cli.run_cmd",
    "sundial.cli.preview",
    "sundial.cli.sandbox_cmd",
    "sundial.cli.dev_cmd",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sundial", description=__doc__)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as error:
            if error.name != name:
                raise
            continue
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
