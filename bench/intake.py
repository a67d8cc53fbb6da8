"""intake: the operator's memory while it lists, on the sandbox (issue 29 item 6): N ScheduledJobs of the largest
legal size in one namespace, then the operator started as the scale scenario does (cluster-wide); its peak RSS
(``VmHWM``) when it turns ready, the time to ready, and its RSS once idle. The same for M ordinary objects (the
scale scenario's) in another namespace, with the operator watching only that namespace, and for none (the
baseline). One fresh sandbox.

"Largest legal" is what the CRD and the webhook admit (checked in-process by the webhook's own
:func:`sundial.runtime.serving.admission.problems` before anything is created): a yearly schedule; ``spec.exclude``
at its 1,000 dates; ``spec.jobTemplate`` at the webhook's default bound (256 KiB, random letters in a pod
annotation); ``metadata.annotations`` near the API server's 256 KiB total. About 0.5 MB each as served, like
the objects of the issue's measurement (500 of them: 229 MiB).
"""

from __future__ import annotations

import asyncio
import json
import random
import string
import time
from pathlib import Path
from typing import Any

from bench import env
from bench.kube import Api, credentials, scheduled_job, sj_path
from bench.scale import YEARLY, quiet

#: The API server's bound on all of an object's annotations together (keys and values).
ANNOTATIONS_BYTES = 256 * 1024
#: Room left in the annotations for the ones the object already has (kubectl, Argo CD...).
ANNOTATIONS_SPARE = 2 * 1024
EXCLUDED_DATES = 1000
_ALPHABET = string.ascii_letters + string.digits


def _text(rng: random.Random, length: int) -> str:
    return "".join(rng.choices(_ALPHABET, k=length))


def largest(name: str, seed: int, *, template_bytes: int) -> dict[str, Any]:
    """A ScheduledJob of the largest size the CRD and the webhook admit (random text: nothing compresses)."""
    from sundial.runtime.serving.admission import serialized_size  # noqa: PLC0415

    rng = random.Random(seed)
    body = scheduled_job(name, YEARLY)
    spec = body["spec"]
    dates = [f"{2030 + i // 365:04d}-{1 + (i // 28) % 12:02d}-{1 + i % 28:02d}" for i in range(EXCLUDED_DATES)]
    spec["exclude"] = [{"dates": dates[i : i + 400]} for i in range(0, EXCLUDED_DATES, 400)]
    annotations = spec["jobTemplate"]["spec"]["template"]["metadata"]["annotations"]
    annotations["example.com/pad"] = ""
    annotations["example.com/pad"] = _text(rng, template_bytes - serialized_size(spec["jobTemplate"]))
    body["metadata"]["annotations"] = {
        "example.com/notes": _text(rng, ANNOTATIONS_BYTES - ANNOTATIONS_SPARE - len("example.com/notes"))
    }
    return body


def check_legal(body: dict[str, Any], *, template_bytes: int) -> None:
    """Raise unless the webhook (its default jobTemplate bound) admits BODY."""
    from sundial.runtime.serving.admission import problems  # noqa: PLC0415

    found = problems(body, max_job_template_bytes=template_bytes)
    if found:
        raise ValueError(f"the webhook would refuse the intake object: {found}")


async def _create(api: Api, namespace: str, bodies: Any, *, concurrency: int) -> float:
    """Create each body (made when its turn comes, not all held at once); the seconds it took."""
    gate = asyncio.Semaphore(concurrency)

    async def one(make: Any) -> None:
        async with gate:
            await api.create(sj_path(namespace), make())

    start = time.monotonic()
    await asyncio.gather(*(one(make) for make in bodies))
    return round(time.monotonic() - start, 1)


class Intake:
    def __init__(
        self, *, out: Path, n: int, ordinary: int, operator_args: list[str], template_bytes: int = 256 * 1024
    ) -> None:
        self.out, self.n, self.ordinary = out, n, ordinary
        self.operator_args, self.template_bytes = operator_args, template_bytes

    def run(self) -> dict[str, Any]:
        return env.run_on_cluster("intake", self.out, self._run)

    async def _run(self, cluster: env.BenchCluster) -> dict[str, Any]:
        sample = largest("sample", 0, template_bytes=self.template_bytes)
        check_legal(sample, template_bytes=self.template_bytes)
        result: dict[str, Any] = {
            "n": self.n,
            "ordinary": self.ordinary,
            "object_bytes_as_written": len(json.dumps(sample, separators=(",", ":"))),
            "load_before": env.load(),
        }
        del sample
        async with Api(credentials(cluster.kubeconfig), connections=16) as api:
            await api.namespaces(["intake-empty", "intake-largest", "intake-ordinary"])
            result["none"] = await self._operator(cluster, "none", ["--namespace", "intake-empty"], objects=0)
            print(f"[intake] creating {self.n} largest legal ScheduledJobs load={env.load()}", flush=True)
            result["largest_create_seconds"] = await _create(
                api,
                "intake-largest",
                (lambda i=i: largest(f"largest-{i:04d}", i, template_bytes=self.template_bytes) for i in range(self.n)),
                concurrency=4,
            )
            listed = await api.call("GET", f"{sj_path('intake-largest')}?limit=1")
            result["largest_count"] = await api.count(sj_path("intake-largest"))
            result["object_bytes_as_served"] = len(json.dumps(listed["items"][0], separators=(",", ":")))
            result["largest"] = await self._operator(cluster, "largest", [], objects=self.n)
            if self.ordinary:
                print(f"[intake] creating {self.ordinary} ordinary ScheduledJobs load={env.load()}", flush=True)
                result["ordinary_create_seconds"] = await _create(
                    api,
                    "intake-ordinary",
                    (lambda i=i: scheduled_job(f"idle-{i:06d}", YEARLY) for i in range(self.ordinary)),
                    concurrency=32,
                )
                result["ordinary_count"] = await api.count(sj_path("intake-ordinary"))
                result["ordinary_run"] = await self._operator(
                    cluster, "ordinary", ["--namespace", "intake-ordinary"], objects=self.ordinary
                )
        result["load_end"] = env.load()
        return result

    async def _operator(
        self, cluster: env.BenchCluster, name: str, scope: list[str], *, objects: int
    ) -> dict[str, Any]:
        """Start an operator on SCOPE: peak RSS until ready, time to ready, RSS once its API requests stopped."""
        out: dict[str, Any] = {"objects": objects, "load_at_start": env.load(), "scope": scope or ["cluster"]}
        operator = env.start_operator(
            cluster.kubeconfig, self.out, *self.operator_args, *scope, identity=f"intake-{name}"
        )
        try:
            out["ready_seconds"] = round(operator.wait_ready(timeout=600), 2)
            out["rss_peak_mb_at_ready"] = env.rss_mb(operator.pid, "VmHWM")
            out["rss_mb_at_ready"] = env.rss_mb(operator.pid)
            # Objects created while no operator ran get their first status write, then it is idle.
            out["settle_seconds"] = await quiet(operator, limit=max(120.0, objects / 40))
            out["rss_mb_idle"] = env.rss_mb(operator.pid)
            out["rss_peak_mb"] = env.rss_mb(operator.pid, "VmHWM")
            out["quarantined"] = operator.metric("sundial_intake_quarantined_objects")
            out["load_idle"] = env.load()
        finally:
            operator.stop()
        print(f"[intake] {name}: {out}", flush=True)
        return out
