"""The pieces a fault test needs, bound to one namespace: ScheduledJobs, a fleet, the proxy, the
auditor's watch, the sandbox's processes, and the final report."""

from __future__ import annotations

import json
import os
import random
import time
import uuid
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sundial import schedule
from sundial_sandbox import Sandbox

from .auditor import JobWatch, Report, audit
from .fencing import ServerFencing, helm
from .fleet import LEASE_ARGS, Fleet, Replica, lease_spec
from .kubeconfigs import Credentials, credentials, redirected
from .proxy import FaultProxy

REPO = Path(__file__).resolve().parents[3]


class Harness:
    def __init__(self, cluster: Any, namespace: str, directory: Path) -> None:
        self.cluster = cluster
        self.namespace = namespace
        self.directory = directory
        self.credentials: Credentials = credentials(cluster.kubeconfig, directory / "pki")
        self.sandbox = Sandbox(cluster.kubeconfig.parent) if cluster.fake_pods else None
        self.proxy: FaultProxy | None = None
        self.watch = JobWatch(self.credentials, namespace)
        self.faults: Counter[str] = Counter()
        self.fleets: list[Fleet] = []
        self.fencings: list[ServerFencing] = []
        self.lease_prefix = f"chaos-{uuid.uuid4().hex[:6]}"
        self.seed = int(os.environ.get("SUNDIAL_CHAOS_SEED", "0")) or random.randrange(1, 1 << 31)
        print(f"chaos seed: SUNDIAL_CHAOS_SEED={self.seed}", flush=True)  # to replay a failing run's faults
        self.random = random.Random(self.seed)

    # -- set-up --------------------------------------------------------------------------------------

    def start_watch(self) -> None:
        self.watch.start()

    def fault_proxy(self) -> FaultProxy:
        if self.proxy is None:
            self.proxy = FaultProxy(self.credentials, self.credentials.cert, self.credentials.key)
        return self.proxy

    def fleet(
        self,
        count: int,
        *,
        via_proxy: bool = False,
        env: Mapping[str, Mapping[str, str]] | None = None,
        lease_args: Sequence[str] = LEASE_ARGS,
        extra_args: Sequence[str] = (),
        fencing: ServerFencing | None = None,
    ) -> Fleet:
        """COUNT replicas; with FENCING, each runs as the operator's ServiceAccount (a pod-bound token) under the
        chart's server-side fencing policy (:mod:`.fencing`)."""
        replicas = []
        for index in range(count):
            identity = f"replica-{'abcdefgh'[index]}"
            kubeconfig = self.cluster.kubeconfig if fencing is None else fencing.kubeconfig(identity)
            if via_proxy:
                url = self.fault_proxy().listen(identity)
                kubeconfig = redirected(kubeconfig, url, self.directory / f"{identity}.kubeconfig")
            replicas.append(
                Replica(
                    identity=identity,
                    kubeconfig=kubeconfig,
                    log=self.directory / f"{identity}.log",
                    namespaces=(self.namespace,),
                    lease_prefix=self.lease_prefix,
                    env=dict((env or {}).get(identity, {})),
                    lease_args=tuple(lease_args),
                    extra_args=(
                        *extra_args,
                        *(("--fencing-policy", fencing.policy_name) if fencing is not None else ()),
                    ),
                )
            )
        lease = f"{self.lease_prefix}-shard-0"
        fleet = Fleet(replicas, lambda: lease_spec(self.cluster.kubectl, lease))
        self.fleets.append(fleet)
        return fleet

    def server_fencing(self) -> ServerFencing:
        """The chart's fencing policy for this harness's Leases (removed at :meth:`close`)."""
        binary = helm()
        if binary is None:
            raise AssertionError("helm not found: bash tools/helm/build.sh (or set SUNDIAL_HELM)")
        fencing = ServerFencing(self.cluster, self.namespace, "default", self.lease_prefix, self.directory)
        self.fencings.append(fencing.install(binary))
        return fencing

    def create_scheduled_jobs(
        self, count: int, schedule_text: str, *, duration_seconds: int | None = None, **spec: Any
    ) -> list[str]:
        """COUNT ScheduledJobs (one kubectl apply) whose Jobs complete at once (kwok), or after DURATION_SECONDS."""
        template = self.cluster.job_manifest("x", duration_seconds=duration_seconds)["spec"]
        names = [f"sj-{i:03d}" for i in range(count)]
        items = [
            {
                "apiVersion": "sundial.dev/v1alpha1",
                "kind": "ScheduledJob",
                "metadata": {"name": name, "namespace": self.namespace},
                "spec": {"schedule": schedule_text, "jobTemplate": {"spec": template}, **spec},
            }
            for name in names
        ]
        self.cluster.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
        return names

    def scheduled_jobs(self) -> list[dict[str, Any]]:
        listing = self.cluster.get_json("scheduledjobs", "-n", self.namespace) or {}
        items: list[dict[str, Any]] = listing.get("items") or []
        return items

    # -- faults --------------------------------------------------------------------------------------

    def restart(self, component: str, down: float = 2.0) -> None:
        assert self.sandbox is not None, "needs the sandbox control plane"
        self.sandbox.restart_component(component, down=down)
        self.faults[f"restart {component}"] += 1

    def wait(self, predicate: Callable[[], Any], timeout: float, message: str, interval: float = 0.5) -> Any:
        return self.cluster.wait_for(predicate, timeout=timeout, message=message, interval=interval)

    # -- the end -------------------------------------------------------------------------------------

    def finish(self, scenario: str, *, zombie: tuple[str, float] | None = None) -> None:
        """Quiesce, then the auditor's proof for SCENARIO: clean, nothing duplicated or lost, something ran."""
        self.quiesce()
        report = self.report(scenario, zombie=zombie)
        report.assert_clean()
        assert report.duplicated == 0 and report.lost == 0
        assert report.started > 0

    def settle(self, until: datetime, timeout: float = 90.0) -> None:
        """Poll until every ScheduledJob handled every nominal time up to UNTIL (cursor >= it); a suspended one
        owes nothing (its cursor waits for the resume)."""

        def behind() -> list[str]:
            late = []
            for sj in self.scheduled_jobs():
                spec, meta = sj.get("spec") or {}, sj["metadata"]
                if spec.get("suspend"):
                    continue
                created = schedule.parse_rfc3339(meta["creationTimestamp"], field="creationTimestamp")
                timetable = schedule.build_timetable(spec["schedule"], time_zone=spec.get("timeZone") or "UTC",
                                                     uid=meta["uid"])  # fmt: skip
                last, _ = timetable.latest_between(created, until, limit=1)
                cursor = (sj.get("status") or {}).get("scheduleCursor")
                if last and (not cursor or schedule.parse_rfc3339(cursor, field="c") < last[-1]):
                    late.append(meta["name"])
            return late

        self.wait(lambda: not behind() or None, timeout, f"every ScheduledJob handled its runs up to {until}")

    def quiesce(self, timeout: float = 90.0) -> None:
        """End of the test window: settle up to now, then suspend every ScheduledJob (nothing new fires)
        and wait until the operator saw that and every claimed run (``status.active``) has its Job."""
        self.settle(utcnow(), timeout=timeout)
        names = [sj["metadata"]["name"] for sj in self.scheduled_jobs()]
        for start in range(0, len(names), 50):
            self.cluster.kubectl(
                "patch", "scheduledjobs", *names[start : start + 50], "-n", self.namespace,
                "--type", "merge", "-p", '{"spec": {"suspend": true}}',
            )  # fmt: skip

        def pending() -> list[str]:
            seen = {job.name for job in self.watch.snapshot()}
            waiting = []
            for sj in self.scheduled_jobs():
                meta, status = sj["metadata"], sj.get("status") or {}
                if status.get("observedGeneration") != meta.get("generation"):
                    waiting.append(f"{meta['name']}: generation not observed")
                waiting += [
                    f"{meta['name']}: Job {run['job']}" for run in status.get("active") or [] if run["job"] not in seen
                ]
            return waiting

        self.wait(lambda: not pending() or None, timeout, "suspension observed and every claimed run has its Job")

    def report(
        self, scenario: str, *, zombie: tuple[str, float] | None = None, zombies: Sequence[tuple[str, float]] = ()
    ) -> Report:
        time.sleep(1.0)  # let the last ADDED events arrive (the settle above already saw the cursors)
        faults = Counter(self.faults)
        if self.proxy is not None:
            faults.update({f"proxy {k}": v for k, v in self.proxy.injected.items()})
        report = audit(scenario, self.scheduled_jobs(), self.watch.snapshot(), faults=faults, watch=self.watch,
                       zombie=zombie, zombies=zombies)  # fmt: skip
        events = self.cluster.get_json("events", "-n", self.namespace, "--field-selector", "reason=MissedSchedule")
        # One Event per missed run (up to a per-pass cap, then a summary); the API server may merge repeats.
        report.missed_events = sum(int(e.get("count") or 1) for e in (events or {}).get("items") or [])
        table = report.table()
        print(f"\n{table}")
        out = os.environ.get("SUNDIAL_CHAOS_REPORT_DIR")
        if out:
            Path(out).mkdir(parents=True, exist_ok=True)
            stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
            (Path(out) / f"{stamp}-{scenario}.txt").write_text(table + "\n" + "\n".join(report.problems) + "\n")
        return report

    def close(self) -> None:
        for fleet in self.fleets:
            fleet.stop()
        self.watch.stop()
        if self.proxy is not None:
            self.proxy.close()
        for fleet in self.fleets:
            print(fleet.tails(25))
        for fencing in self.fencings:
            fencing.close()


def utcnow() -> datetime:
    return datetime.now(UTC)


__all__ = ["Harness", "timedelta", "utcnow"]
