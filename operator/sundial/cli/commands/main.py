"""The ``sundial`` command: one sub-command per module, each exposing ``register(subparsers)``.

Only the module of the command being run is imported (``sundial --help`` and ``sundial preview`` load
no Kubernetes client); the others appear in the help as one-line stubs.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

#: Sub-commands: name -> (module with ``register(subparsers)`` that sets ``func``, one-line help).
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("sundial.cli.commands.run", "run the operator"),
    "preview": ("sundial.cli.commands.preview", "print the next run times of a schedule"),
    "sandbox": ("sundial.cli.commands.sandbox", "run a local Kubernetes control plane (etcd, apiserver, ..., kwok)"),
    "dev": ("sundial.cli.commands.dev", "sandbox cluster + CRD + samples + operator, in one command"),
}
#: The modules of :data:`COMMANDS`, in order.
COMMAND_MODULES: tuple[str, ...] = tuple(module for module, _ in COMMANDS.values())

DESCRIPTION = "Sundial, a Kubernetes-native job scheduler: the operator and its tools."


def build_parser(*, only: str | None = None) -> argparse.ArgumentParser:
    """The parser; with ``only``, just that command is fully registered and the others are stubs."""
    parser = argparse.ArgumentParser(prog="sundial", description=DESCRIPTION)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module_name, helptext) in COMMANDS.items():
        if only is not None and name != only:
            subparsers.add_parser(name, help=helptext)
            continue
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            if error.name != module_name:
                raise
            continue
        module.register(subparsers)
    return parser


def command_of(argv: Sequence[str]) -> str:
    """The sub-command named on the line ('' when none is): the first word that is one."""
    return next((word for word in argv if word in COMMANDS), "")


def main(argv: Sequence[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(only=command_of(words))
    args = parser.parse_args(words)
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
