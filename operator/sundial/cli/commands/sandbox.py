"""``sundial sandbox start|stop``: a local, real Kubernetes control plane (see docs/sandbox.md).

The control plane itself is the ``sundial-sandbox`` distribution (``tools/sandbox/``, import package
``sundial_sandbox``), a development tool that the ``sundial`` wheel does not ship. This module imports it
only when a command runs, and exits with an install hint when it is missing.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from pathlib import Path
from typing import Any

#: Environment variable overriding the default sandbox directory.
DIR_ENV = "SUNDIAL_SANDBOX_DIR"
#: The import package of the ``sundial-sandbox`` distribution.
SANDBOX_PACKAGE = "sundial_sandbox"
#: How to install it from a checkout.
INSTALL_HINT = "from a Sundial checkout: `make venv`, or `pip install -e tools/sandbox`"


def require_sandbox(command: str) -> None:
    """Exit with an install hint unless the ``sundial-sandbox`` development tool is importable."""
    if importlib.util.find_spec(SANDBOX_PACKAGE) is None:
        raise SystemExit(
            f"sundial {command}: needs the sundial-sandbox development tool (Python package {SANDBOX_PACKAGE}), "
            f"which is not part of the sundial package; install it {INSTALL_HINT}"
        )


def default_directory() -> Path:
    return Path(os.environ.get(DIR_ENV) or Path.cwd() / ".sundial" / "sandbox")


def _start(args: argparse.Namespace) -> int:
    require_sandbox("sandbox start")
    from sundial_sandbox import BinariesError, Sandbox, SandboxError  # noqa: PLC0415 - a dev tool, see above

    sandbox = Sandbox(_directory(args), real_node=args.real_node)
    began = time.monotonic()
    try:
        kubeconfig = sandbox.start(timeout=args.timeout)
    except (SandboxError, BinariesError, OSError) as error:
        print(f"sandbox start failed: {error}", file=sys.stderr)
        print(f"logs: {sandbox.log_dir}", file=sys.stderr)
        return 1
    print(f"sandbox ready in {time.monotonic() - began:.1f}s; logs in {sandbox.log_dir}", file=sys.stderr)
    print(f"KUBECONFIG={kubeconfig}")
    return 0


def _stop(args: argparse.Namespace) -> int:
    require_sandbox("sandbox stop")
    from sundial_sandbox import Sandbox  # noqa: PLC0415 - a dev tool, see the module docstring

    directory = _directory(args)
    Sandbox(directory).stop()
    print(f"sandbox in {directory} stopped", file=sys.stderr)
    return 0


def register(subparsers: Any) -> None:
    """Add ``sandbox start`` and ``sandbox stop`` to the ``sundial`` command."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "sandbox",
        help="run a local Kubernetes control plane (etcd, apiserver, controllers, scheduler, kwok)",
        description=__doc__,
    )
    commands = parser.add_subparsers(dest="sandbox_command", metavar="ACTION", required=True)
    dir_help = f"sandbox directory (default: ${DIR_ENV} or ./.sundial/sandbox)"

    start = commands.add_parser("start", help="start (or reuse) the sandbox; prints KUBECONFIG=<path>")
    start.add_argument("--dir", type=Path, default=None, help=dir_help)
    start.add_argument("--timeout", type=float, default=180.0, help="seconds to wait for readiness")
    start.add_argument(
        "--real-node",
        action="store_true",
        help="also start one real node (containerd + kubelet, needs root) beside kwok's; see docs/sandbox.md",
    )
    start.set_defaults(func=_start)

    stop = commands.add_parser("stop", help="stop the processes this sandbox directory recorded")
    stop.add_argument("--dir", type=Path, default=None, help=dir_help)
    stop.set_defaults(func=_stop)


def _directory(args: argparse.Namespace) -> Path:
    return Path(args.dir) if args.dir is not None else default_directory()


def main(argv: list[str] | None = None) -> int:
    """Run ``sandbox`` on its own (``python -m sundial.cli.commands.sandbox start``)."""
    parser = argparse.ArgumentParser(prog="sundial")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["sandbox", *(sys.argv[1:] if argv is None else argv)])
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
