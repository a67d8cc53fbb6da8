"""The main loop's timer lag while a peer floods the admission webhook (issue 30 item 1, DESIGN §12.2).

``python -m bench.admission [--seconds 30] [--rate 10] [--out docs/benchmarks/latest.json]``

A process-level benchmark (no cluster): the operator's own webhook server (:mod:`sundial.runtime.serving.
webhookserver` on its thread, TLS, the real validation) and probe server run in this process beside a main
event loop whose only work is a timer every :data:`TICK` seconds, as the dispatcher's wake-ups are. The lag of
each tick (when it ran minus when it was due, ``time.monotonic``) is what a tenant's run would be late by.

* ``alone``: the timer for SECONDS, nothing posted;
* ``flood``: the same while another *process* (a peer: it does not share this interpreter) posts crafted
  838 KiB UPDATE AdmissionReviews (``object`` and ``oldObject`` with different 16,860-key jobTemplates: what
  kopf, before issue 30, diffed on the main loop) at RATE a second over TLS, without waiting for answers beyond 10 s.

During both, ``/healthz`` is probed every 0.5 s with a 2 s timeout (misses counted), and a legitimate
CREATE review is posted every second (its answers counted: 200 answered, 429 busy). The result is merged into
the JSON file under ``admission`` with the load average it was measured at, for the operator's worker
processes and, to compare, worker threads with the same bounds (``--workers``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import ssl
import statistics
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.crafted import crafted_review
from sundial.runtime.serving import admission, certificates, offloop, probes, probethread, webhookserver, webhooktls

TICK = 0.01
"""Seconds between the main loop's timer ticks."""


def legitimate_review() -> bytes:
    template = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}
    body = {
        "kind": "ScheduledJob",
        "metadata": {"name": "ok"},
        "spec": {"schedule": "0 * * * *", "jobTemplate": template},
    }
    request = {
        "uid": "legit",
        "operation": "CREATE",
        "resource": {"group": "sundial.dev", "version": "v1alpha1", "resource": "scheduledjobs"},
        "object": body,
    }
    return json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}).encode()


def _post(url: str, data: bytes, context: ssl.SSLContext, timeout: float) -> int:
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=context) as response:
            response.read()
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)
    except OSError:
        return 0


def peer(url: str, cafile: str, rate: float, seconds: float, counts: Any) -> None:
    """The flooding peer (a process of its own): RATE crafted reviews a second for SECONDS."""
    context = ssl.create_default_context(cafile=cafile)
    data = crafted_review()
    end = time.monotonic() + seconds
    statuses: Counter[int] = Counter()
    lock = threading.Lock()

    def one() -> None:
        status = _post(url, data, context, 10.0)
        with lock:
            statuses[status] += 1

    threads: list[threading.Thread] = []
    due = time.monotonic()
    while due < end:
        thread = threading.Thread(target=one, daemon=True)
        thread.start()
        threads.append(thread)
        due += 1 / rate
        time.sleep(max(0.0, due - time.monotonic()))
    for thread in threads:
        thread.join(timeout=15)
    counts.update({str(k): v for k, v in statuses.items()})


async def _ticks(seconds: float) -> list[float]:
    lags: list[float] = []
    due = time.monotonic() + TICK
    end = time.monotonic() + seconds
    while due < end:
        await asyncio.sleep(max(0.0, due - time.monotonic()))
        lags.append(time.monotonic() - due)
        due += TICK
    return lags


def _observer(url: str, health: str, context: ssl.SSLContext, stop: threading.Event, out: dict[str, Any]) -> None:
    """Probe /healthz every 0.5 s (2 s timeout) and post a legitimate review every second."""
    misses, probes_sent, legit = 0, 0, Counter[int]()
    step = 0
    while not stop.wait(0.5):
        probes_sent += 1
        try:
            with urllib.request.urlopen(health, timeout=2.0) as response:
                misses += response.status != 200
        except OSError:
            misses += 1
        step += 1
        if step % 2 == 0:
            legit[_post(url, legitimate_review(), context, 10.0)] += 1
    out.update(probes=probes_sent, probe_misses=misses, legitimate={str(k): v for k, v in legit.items()})


def _summary(lags: list[float]) -> dict[str, float]:
    ms = sorted(lag * 1000 for lag in lags)
    return {
        "p50_ms": round(statistics.median(ms), 2),
        "p99_ms": round(ms[int(len(ms) * 0.99) - 1], 2),
        "max_ms": round(ms[-1], 2),
        "ticks": len(ms),
    }


async def measure(seconds: float, rate: float, *, workers: str) -> dict[str, Any]:
    directory = Path(tempfile.mkdtemp(prefix="bench-admission-"))
    material = certificates.renew(
        None,
        certificates.RotationDecision(certificates.Action.CREATE, "bench"),
        now=datetime.now(UTC),
        names=certificates.SubjectNames(ips=("127.0.0.1",)),
        lifetimes=certificates.Lifetimes(),
    )
    (directory / "tls.crt").write_bytes(material.cert_pem())
    (directory / "tls.key").write_bytes(material.key_pem())
    (directory / "ca.crt").write_bytes(material.bundle_pem())
    files = webhooktls.CertificateFiles(directory / "tls.crt", directory / "tls.key")
    hooks = [admission.scheduled_jobs(max_job_template_bytes=256 * 1024), admission.schedule_calendars()]
    server = probethread.ProbeThread(
        webhookserver.Server(hooks, checks=_checks(workers)).app(),
        port=0,
        host="127.0.0.1",
        name="sundial-webhook",
        ssl_context=files.context,
    )
    health = probethread.ProbeThread(
        probes.health_app(alive=lambda: True, ready=lambda: True), port=0, host="127.0.0.1"
    )
    server.start()
    health.start()
    url = f"https://127.0.0.1:{server.bound_port}{admission.WEBHOOK_PATH}"
    context = ssl.create_default_context(cafile=str(directory / "ca.crt"))
    result: dict[str, Any] = {}
    try:
        for phase in ("alone", "flood"):
            stop, observed = threading.Event(), dict[str, Any]()
            observer = threading.Thread(
                target=_observer,
                args=(url, f"http://127.0.0.1:{health.bound_port}/healthz", context, stop, observed),
                daemon=True,
            )
            observer.start()
            counts: Any = multiprocessing.Manager().dict() if phase == "flood" else {}
            flood = (
                multiprocessing.Process(target=peer, args=(url, str(directory / "ca.crt"), rate, seconds, counts))
                if phase == "flood"
                else None
            )
            if flood is not None:
                flood.start()
            lags = await _ticks(seconds)
            stop.set()
            observer.join(timeout=15)
            if flood is not None:
                flood.join(timeout=30)
            result[phase] = {**_summary(lags), **observed, **({"flood_answers": dict(counts)} if flood else {})}
    finally:
        server.stop()
        health.stop()
    result["p99_over_alone_ms"] = round(result["flood"]["p99_ms"] - result["alone"]["p99_ms"], 2)
    result["review_bytes"] = len(crafted_review())
    return result


def _checks(workers: str) -> offloop.Offloaded:
    """The operator's worker processes, or (to compare) threads with the same bounds."""
    return admission.worker_processes() if workers == "processes" else offloop.Offloaded(name="bench-webhook")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.admission", description=__doc__)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--rate", type=float, default=10.0)
    parser.add_argument("--out", type=Path, default=None, help="merge the result into this JSON file")
    parser.add_argument("--workers", choices=["processes", "threads", "both"], default="both")
    args = parser.parse_args()
    kinds = ["processes", "threads"] if args.workers == "both" else [args.workers]
    result: dict[str, Any] = {kind: asyncio.run(measure(args.seconds, args.rate, workers=kind)) for kind in kinds}
    result |= {
        "measured": datetime.now(UTC).isoformat(timespec="seconds"),
        "seconds": args.seconds,
        "rate_per_s": args.rate,
        "tick_s": TICK,
        "cpus": os.cpu_count(),
        "loadavg": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(result, indent=1))
    if args.out is not None:
        latest = json.loads(args.out.read_text(encoding="utf-8")) if args.out.exists() else {}
        latest["admission"] = result
        args.out.write_text(json.dumps(latest, indent=1, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
