"""``kubectl sundial check [--wait DURATION]``: is Sundial installed and working? (as ``cmctl check api``).

Five checks, each one line ``ok`` or ``failed`` with the reason: the CRDs are established, an operator replica
is ready, the admission webhook answers (a server-side dry run of a ScheduledJob with an impossible schedule
must be refused by it), server-side fencing is enforced (its policy and binding exist, the shard Leases carry
the label the policy selects, and no replica reported ``FencingNotEnforced``), and every shard Lease is held.
``--wait`` checks again every few seconds until all pass or the duration is over; the exit code is 0 when all
passed, 1 otherwise.

``--in-cluster`` reads the API with the pod's service account through Sundial's own client instead of kubectl:
the chart's ``helm test`` pod runs ``kubectl-sundial check --in-cluster`` from the operator image, which has no
kubectl. ``--operator-namespace`` looks for the operator there only (the test pod may list Deployments in the
release namespace, nowhere else).

The checks themselves are in :mod:`.checks`, where they read in :mod:`.clusterreads`; both are imported when
the command runs.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from sundial.cli.kubectl import outputs
from sundial.cli.kubectl.runner import Clock, Kubectl, PluginError, add_command

#: Seconds between two rounds of checks with ``--wait``.
POLL_SECONDS = 2.0


def register(commands: Any) -> None:
    sub = add_command(
        commands, "check", run, "check that Sundial is installed and working: CRDs, operator, webhook, fencing, Leases"
    )
    sub.add_argument(
        "--wait",
        metavar="DURATION",
        default="0",
        help="check again until every check passes or DURATION (e.g. 30s, 2m) is over (default: 0, once)",
    )
    sub.add_argument(
        "--in-cluster",
        action="store_true",
        help="read the API with this pod's service account through Sundial's own client, no kubectl "
        "(what the chart's helm test runs); kubectl's global flags but -n are refused with it",
    )
    sub.add_argument(
        "--operator-namespace",
        metavar="NAMESPACE",
        help="look for the operator's Deployment in NAMESPACE only (default: every namespace)",
    )
    outputs.flag(sub, "json", "yaml")


@contextmanager
def _reads(args: argparse.Namespace, kubectl: Kubectl) -> Iterator[Any]:
    """Where the checks read: kubectl, or with ``--in-cluster`` the pod's service account and Sundial's client."""
    from sundial.cli.kubectl import clusterreads  # noqa: PLC0415 - only when the command runs

    if not args.in_cluster:
        yield clusterreads.KubectlReads(kubectl)
        return
    if kubectl.base[1:]:
        raise PluginError(f"--in-cluster uses the pod's service account; not with {' '.join(kubectl.base[1:])}")
    with clusterreads.in_cluster(namespace=kubectl.namespace) as reads:
        yield reads


def run(args: argparse.Namespace, kubectl: Kubectl, now: Clock, sleep: Callable[[float], None] = time.sleep) -> int:
    from sundial.cli.kubectl import checks  # noqa: PLC0415 - the model, only when the command runs
    from sundial.schedule import ScheduleError, parse_duration  # noqa: PLC0415 - likewise

    try:
        wait = parse_duration(args.wait, field="--wait")
    except ScheduleError as error:
        raise PluginError(str(error)) from None
    with _reads(args, kubectl) as reads:
        deadline = now() + wait
        while True:
            results = checks.run_all(reads, now=now(), operator_namespace=args.operator_namespace)
            passed = all(result.ok for result in results)
            if passed or now() >= deadline:
                break
            sleep(POLL_SECONDS)
    if args.output:
        print(outputs.dump([result.document() for result in results], args.output))
    else:
        print("\n".join(result.line() for result in results))
        if not passed and wait:
            print(f"error: not every check passed within {args.wait}", file=sys.stderr)
    return 0 if passed else 1
