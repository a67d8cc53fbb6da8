"""``sundial dev``: the sandbox control plane, the CRD, the samples and the operator, in one command.

The sandbox keeps running after the operator stops (Ctrl-C), so the next ``sundial dev`` starts in
seconds; ``sundial sandbox stop`` ends it. The control plane is the ``sundial-sandbox`` development tool,
imported only when the command runs (see :mod:`sundial.cli.commands.sandbox`).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from sundial.cli.commands.sandbox import default_directory, require_sandbox


def repository_root() -> Path:
    """The checkout holding ``crds/`` and ``config/samples/`` (this file lives in operator/sundial/cli/commands/)."""
    candidate = Path(__file__).resolve().parents[4]
    if (candidate / "crds").is_dir():
        return candidate
    return Path.cwd()


def _kubectl(kubeconfig: Path, *args: str) -> None:
    subprocess.run(["kubectl", f"--kubeconfig={kubeconfig}", *args], check=True)


def operator_command(kubeconfig: Path, *, metrics_port: int, health_port: int) -> list[str]:
    """``sundial run`` against the sandbox. Unfenced: the sandbox installs no fencing policy, and the operator runs
    as the sandbox's admin user, whom a policy naming the operator's ServiceAccount would not match; with the
    default ``--fencing-policy`` every probe would log "fencing is NOT enforced" at ERROR and raise a Warning
    Event. One replica needs no fencing."""
    return [
        sys.executable,
        "-m",
        "sundial",
        "run",
        "--kubeconfig",
        str(kubeconfig),
        "--metrics-port",
        str(metrics_port),
        "--health-port",
        str(health_port),
        "--fencing-policy",
        "",
    ]


def _run(args: argparse.Namespace) -> int:
    require_sandbox("dev")
    from sundial_sandbox import (  # noqa: PLC0415 - a dev tool, not in the sundial wheel
        BinariesError,
        CrdError,
        Sandbox,
        SandboxError,
        install_crds,
    )

    directory = Path(args.dir) if args.dir is not None else default_directory()
    sandbox = Sandbox(directory)
    try:
        kubeconfig = sandbox.start(timeout=args.timeout)
    except (SandboxError, BinariesError, OSError) as error:
        print(f"sandbox start failed: {error} (logs: {sandbox.log_dir})", file=sys.stderr)
        return 1
    root = repository_root()
    try:
        install_crds(kubeconfig, root / "crds")
        if not args.no_samples:
            _kubectl(kubeconfig, "apply", "--server-side", "-k", str(root / "config" / "samples"))
    except (subprocess.CalledProcessError, CrdError) as error:
        print(f"kubectl failed: {error}", file=sys.stderr)
        return 1
    print(
        f"\nSundial is starting against the sandbox. In another shell:\n"
        f"  export KUBECONFIG={kubeconfig}\n"
        f"  kubectl get scheduledjobs -A -o wide --watch\n"
        f"  kubectl get jobs -A --watch\n"
        f"Metrics: http://127.0.0.1:{args.metrics_port}/metrics   Ctrl-C stops the operator; "
        f"'sundial sandbox stop --dir {directory}' stops the cluster.\n"
        f"One replica, unfenced (--fencing-policy ''): the sandbox installs no fencing policy and the operator runs "
        f"as the sandbox's admin, not a ServiceAccount; a chart install is fenced (docs/fencing.md).\n",
        file=sys.stderr,
    )
    command = operator_command(kubeconfig, metrics_port=args.metrics_port, health_port=args.health_port)
    process = subprocess.Popen(command, env=os.environ.copy())

    def forward(signum: int, _frame: object) -> None:
        process.send_signal(signum)

    # SIGTERM to `sundial dev` must not orphan the operator; Ctrl-C reaches both through the process group.
    previous = signal.signal(signal.SIGTERM, forward)
    try:
        return process.wait()
    except KeyboardInterrupt:
        process.send_signal(signal.SIGTERM)
        try:
            return process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            return process.wait()
    finally:
        signal.signal(signal.SIGTERM, previous)


def register(subparsers: Any) -> None:
    """Add ``dev`` to the ``sundial`` command."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "dev", help="sandbox cluster + CRD + samples + operator, in one command", description=__doc__
    )
    parser.add_argument("--dir", type=Path, default=None, help="sandbox directory (default ./.sundial/sandbox)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for the sandbox")
    parser.add_argument("--no-samples", action="store_true", help="do not apply config/samples")
    parser.add_argument("--metrics-port", type=int, default=8080)
    parser.add_argument("--health-port", type=int, default=8081)
    parser.set_defaults(func=_run)
