"""Operator memory per idle ScheduledJob, without a cluster: ``python -m bench.memory --objects 50000``.

A measuring tool, not a test. N bodies shaped like ``bench/fixtures/scheduledjob.json`` (one real object
captured by ``python -m bench.capture``: server-side-applied, so with ``metadata.managedFields``, a status
written by Sundial, a jobTemplate with a container, labels and annotations), each with its own name,
namespace, UID, resourceVersion and timestamps, go through the code paths the operator runs at start:

1. **listing** — the operator's own informers (:class:`sundial.runtime.watch.listwatch.ListWatch`, one per
   kind, with the real sinks of :mod:`sundial.runtime.watch.intake`, the real Store, Quarantine, Dispatcher and
   Reconciler, readiness as :class:`~sundial.runtime.watch.readiness.Readiness`) fed by :class:`FakeWatches`, an
   in-memory stand-in for :class:`sundial.kube.watches.Watches`: LIST pages as the informer asks for them
   (:mod:`sundial.runtime.watch.paging`: bounded in bytes), each page's bytes built then decoded by the
   operator's own decoder, as a response is. ``rss_mb_peak_listing`` is the process's VmHWM when ready: the
   peak a LIST needs (``--largest-legal`` for the largest objects the CRD and the webhook admit).
2. **first passes** — the real dispatcher runs the real reconciler with the real planner on every key.
   Objects without a status (``--status absent``, the bench's scale scenario: created while no operator
   ran) get their first status write: the fake API answers with a freshly decoded body (as an HTTP
   response is), and the ScheduledJobs' watch then delivers a MODIFIED line for it (decoded on its own by the
   informer, as a watch line is).
3. **idle** — then RSS (``VmRSS``), the retained size of each component (objects reachable from it and not
   already counted), and, with ``--trace``, tracemalloc's top allocation sites of what is still alive, each
   divided by N.

RSS is measured in a run without tracemalloc (which adds its own overhead); ``--trace`` re-runs the same
phases in a child process with tracemalloc on (``--trace-objects`` of them, default min(N, 20,000)).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import copy
import gc
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
import types
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "scheduledjob.json"
NAMESPACES = 20
NOW = datetime.now(UTC).replace(microsecond=0)


def _operator_trim() -> Callable[[], Any] | None:
    """The operator's periodic heap trim, where it has one."""
    try:
        from sundial.runtime.serving import heap  # noqa: PLC0415
    except ImportError:
        return None
    trim: Callable[[], Any] = heap.trim
    return trim


def rss_mb(field: str = "VmRSS") -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


# -- bodies ------------------------------------------------------------------------------------------------


def _stamp(value: datetime) -> str:
    return value.strftime("%Y-%m-%dT%H:%M:%SZ")


class Bodies:
    """N distinct objects from the captured one (as JSON-ready dicts; every decode makes fresh objects)."""

    def __init__(self, fixture: Path, n: int, *, with_status: bool) -> None:
        self.template = json.loads(fixture.read_text(encoding="utf-8"))
        self.n = n
        self.with_status = with_status
        self._items: list[str] | None = None  # the N items as JSON text, built once before measuring
        original = self.template["metadata"]["name"]
        self._tracking = (
            str(self.template["metadata"].get("annotations", {}).get("argocd.argoproj.io/tracking-id", ""))
            .replace(original, "{name}")
            .replace(self.template["metadata"]["namespace"], "{namespace}")
        )

    def name(self, i: int) -> tuple[str, str]:
        return f"scale-sj-{i % NAMESPACES:02d}", f"idle-{i:06d}"

    def body(self, i: int, *, status: Mapping[str, Any] | None = None, rv: int = 0) -> dict[str, Any]:
        """Object i as the API returns it (``status`` given: as after Sundial's status write)."""
        body = copy.deepcopy(self.template)
        namespace, name = self.name(i)
        created = NOW - timedelta(minutes=30, seconds=i % 3600)
        meta = body["metadata"]
        meta.update(
            name=name,
            namespace=namespace,
            uid=str(uuid.UUID(int=(0x5D1A1 << 100) + i)),
            resourceVersion=str(rv or 100_000 + i),
            creationTimestamp=_stamp(created),
        )
        if "annotations" in meta and self._tracking:
            meta["annotations"]["argocd.argoproj.io/tracking-id"] = self._tracking.format(
                name=name, namespace=namespace
            )
        fields = []
        for entry in meta.get("managedFields", []):
            if entry.get("subresource") == "status":
                if status is None and not self.with_status:
                    continue
                entry["time"] = _stamp(NOW if status is not None else created + timedelta(seconds=2))
            else:
                entry["time"] = _stamp(created)
            fields.append(entry)
        meta["managedFields"] = fields
        if status is not None:
            body["status"] = dict(status)
        elif not self.with_status:
            body.pop("status", None)
        else:
            self._restamp_status(body["status"], created)
        return body

    @staticmethod
    def _restamp_status(status: dict[str, Any], created: datetime) -> None:
        for condition in status.get("conditions", []):
            condition["lastTransitionTime"] = _stamp(created + timedelta(seconds=2))
        status["scheduleCursor"] = _stamp(created + timedelta(seconds=1))

    def item_json(self, i: int) -> str:
        if self._items is None:
            self._items = [json.dumps(self.body(j), separators=(",", ":")) for j in range(self.n)]
        return self._items[i]

    def list_response(self, start: int = 0, stop: int | None = None, *, token: str | None = None) -> bytes:
        """One LIST response body with objects START..STOP (all N by default), TOKEN its ``continue``."""
        items = ",".join(self.item_json(i) for i in range(start, self.n if stop is None else stop))
        more = f',"continue":"{token}"' if token else ""
        head = (
            '{"apiVersion":"sundial.dev/v1alpha1","kind":"ScheduledJobList","metadata":{"resourceVersion":"1"'
            + more
            + "},"
        )
        return (head + '"items":[' + items + "]}").encode()


# -- the operator's parts, wired as in sundial.runtime.assembly --------------------------------------------


class Elector:
    """Holds its one shard's Lease (no record: the fencing token carries no Lease uid)."""

    holding = True
    transitions = 1
    record = None


class FakeApi:
    """What the reconciler calls; the status write answers with a fresh decode of the written object."""

    def __init__(self, bodies: Bodies, on_written: Callable[[bytes], None]) -> None:
        self.bodies = bodies
        self.on_written = on_written
        self.writes = 0
        self.index = {bodies.name(i): i for i in range(bodies.n)}

    async def get_scheduled_job(self, *, namespace: str, name: str) -> dict[str, Any] | None:
        raise AssertionError("no conflicts in this bench")

    async def write_status(self, *, namespace: str, name: str, resource_version: str, status: Mapping[str, Any]) -> Any:
        from sundial.kube import codec, results  # noqa: PLC0415

        self.writes += 1
        i = self.index[(namespace, name)]
        raw = json.dumps(self.bodies.body(i, status=status, rv=int(resource_version) + 1_000_000)).encode()
        self.on_written(raw)  # the watch's MODIFIED event for the same write (decoded on its own)
        return results.Written(body=codec.loads(raw))

    async def delete_scheduled_job(self, **_: Any) -> Any:
        raise AssertionError("idle objects are never deleted")

    async def create_job(self, **_: Any) -> Any:
        raise AssertionError("idle objects create no Jobs")

    async def delete_job(self, **_: Any) -> Any:
        raise AssertionError("idle objects delete no Jobs")

    async def create_event(self, **_: Any) -> None:
        return None


class NoEvents:
    def record(self, *_: Any, **__: Any) -> None:
        return None


class Operator:
    """Store, quarantine, dispatcher, reconciler and the three intake sinks, as ``assembly.build`` makes them."""

    def __init__(self, bodies: Bodies, *, max_concurrency: int) -> None:
        from sundial.runtime.acting.reconciler import Reconciler  # noqa: PLC0415
        from sundial.runtime.assembly import default_planner  # noqa: PLC0415
        from sundial.runtime.coordination.leadership import Leadership, Sharding  # noqa: PLC0415
        from sundial.runtime.dispatch.dispatcher import Dispatcher  # noqa: PLC0415
        from sundial.runtime.serving.metrics import Metrics  # noqa: PLC0415
        from sundial.runtime.watch import intake, kinds  # noqa: PLC0415
        from sundial.runtime.watch.keeping import object_bound  # noqa: PLC0415
        from sundial.runtime.watch.quarantine import Quarantine  # noqa: PLC0415
        from sundial.runtime.watch.readiness import Readiness  # noqa: PLC0415
        from sundial.runtime.watch.store import Store  # noqa: PLC0415

        self.events: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.api = FakeApi(bodies, on_written=self._echo)
        self.store = Store(max_object_bytes=object_bound(256 * 1024))  # the webhook's default jobTemplate bound
        self.metrics = Metrics()
        self.quarantine = Quarantine(
            on_quarantine=self.metrics.intake.count_quarantined, on_size=self.metrics.intake.set_quarantined
        )
        self.readiness = Readiness()
        elector: Any = Elector()
        sharding = Sharding(api=cast(Any, None), member=elector, prefix="bench", retry_period=1.0)  # never run
        self.leadership = Leadership([elector], sharding=sharding)
        self.reconciler = Reconciler(
            store=self.store,
            api=cast(Any, self.api),
            leadership=self.leadership,
            planner=default_planner(),
            events=cast(Any, NoEvents()),
            metrics=self.metrics,
            clock=lambda: datetime.now(UTC),
        )
        self.dispatcher = Dispatcher(
            reconcile=self.reconciler.reconcile, max_concurrency=max_concurrency, clock=lambda: datetime.now(UTC)
        )
        self.watches = FakeWatches(bodies, self.events)
        self.sinks = {
            kinds.SCHEDULED_JOBS.plural: intake.ScheduledJobs(
                store=self.store, dispatcher=self.dispatcher, reconciler=self.reconciler, quarantine=self.quarantine
            ),
            kinds.JOBS.plural: intake.Jobs(store=self.store, dispatcher=self.dispatcher, quarantine=self.quarantine),
            kinds.SCHEDULE_CALENDARS.plural: intake.ScheduleCalendars(
                store=self.store, dispatcher=self.dispatcher, quarantine=self.quarantine
            ),
        }
        self.informers = informers(self.watches, self.sinks, self.readiness, self.metrics)

    def _echo(self, raw: bytes) -> None:
        """The watch line of a status write: ``{"type":"MODIFIED","object":...}`` as the API server sends it."""
        self.events.put_nowait(b'{"type":"MODIFIED","object":' + raw + b"}\n")


def informers(watches: Any, sinks: Mapping[str, Any], readiness: Any, metrics: Any) -> list[Any]:
    """One real :class:`~sundial.runtime.watch.listwatch.ListWatch` per kind (as ``assembly._informers``)."""
    from sundial.runtime.watch import kinds  # noqa: PLC0415
    from sundial.runtime.watch.listwatch import ListWatch  # noqa: PLC0415

    made = [
        ListWatch(watches=watches, sink=sinks[collection.plural], collection=collection,
                  on_synced=readiness.check, observer=metrics.intake)
        for collection in (kinds.SCHEDULED_JOBS, kinds.JOBS, kinds.SCHEDULE_CALENDARS)
    ]  # fmt: skip
    readiness.wait_for(made)
    return made


# -- the API, from memory instead of a cluster ---------------------------------------------------------------


class FakeWatches:
    """A stand-in for :class:`sundial.kube.watches.Watches`: LIST pages cut from the N bodies (the ``continue``
    token is the next offset; each page's bytes decoded by the operator's own ``watches.decode``, as a response
    is), and for the ScheduledJobs a watch whose lines are the MODIFIED events of the status writes. The Jobs and
    ScheduleCalendars list empty and their watches stay silent. ``pages`` records (objects, bytes) of each page
    served."""

    def __init__(self, bodies: Bodies, events: asyncio.Queue[bytes | None]) -> None:
        self.bodies = bodies
        self.events = events
        self.pages: list[tuple[int, int]] = []
        self._quiet = asyncio.Event()

    async def page(
        self, collection: Any, *, namespace: str | None, limit: int, token: str | None = None, any_version: bool = False
    ) -> Any:
        from sundial.kube.watches import Page, decode  # noqa: PLC0415
        from sundial.runtime.watch import kinds  # noqa: PLC0415

        await asyncio.sleep(0)  # the request
        if collection.plural != kinds.SCHEDULED_JOBS.plural:
            return Page(items=[], version="1", token=None, size=2)
        start = int(token or 0)
        stop = min(start + limit, self.bodies.n)
        data = self.bodies.list_response(start, stop, token=str(stop) if stop < self.bodies.n else None)
        self.pages.append((stop - start, len(data)))
        body = await decode(data)
        return Page(
            items=body["items"],
            version=body["metadata"]["resourceVersion"],
            token=body["metadata"].get("continue"),
            size=len(data),
        )

    async def lines(
        self, collection: Any, *, namespace: str | None, resource_version: str, seconds: int, idle: float
    ) -> AsyncIterator[bytes]:
        from sundial.runtime.watch import kinds  # noqa: PLC0415

        if collection.plural != kinds.SCHEDULED_JOBS.plural:
            await self._quiet.wait()  # never set: no Jobs, no ScheduleCalendars
            return
        while True:
            line = await self.events.get()
            if line is None:
                return
            yield line


# -- retained size by component ------------------------------------------------------------------------------

_OPAQUE = (
    type,
    types.ModuleType,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.CodeType,
    types.FrameType,
    asyncio.AbstractEventLoop,
    logging.Logger,
)


def retained(roots: Iterable[Any], seen: set[int]) -> tuple[int, int]:
    """(bytes, objects) reachable from ROOTS through ``gc.get_referents`` and not in SEEN (then added)."""
    total = count = 0
    stack = list(roots)
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, _OPAQUE):
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        count += 1
        stack.extend(gc.get_referents(obj))
    return total, count


def components(op: Operator) -> list[tuple[str, int, int]]:
    """What each part keeps, in this order (an object shared by two parts counts in the first)."""
    seen: set[int] = {id(op.watches), id(op.api)}  # the stand-ins for the API hold the N bodies: not the operator's
    store = op.store
    dispatcher = op.dispatcher
    parts: list[tuple[str, list[Any]]] = [
        ("store: ScheduledJob bodies", [getattr(store, "_scheduled_jobs", None)]),
        ("store: other (seen UIDs, Jobs, tombstones)", [v for k, v in vars(store).items() if k != "_scheduled_jobs"]),
        ("quarantine (stubs)", [vars(op.quarantine)]),
        ("dispatcher: due index + maps", [vars(dispatcher)]),
        ("reconciler: compiled specs", [op.reconciler.compiled]),
        (
            "reconciler: other per-key maps",
            [v for k, v in vars(op.reconciler).items() if k not in ("_api", "_store", "compiled")],
        ),
        ("informers", [vars(informer) for informer in op.informers]),
    ]
    result = []
    for name, roots in parts:
        size, count = retained([r for r in roots if r is not None], seen)
        result.append((name, size, count))
    return result


# -- the phases --------------------------------------------------------------------------------------------


async def measure(
    n: int,
    *,
    with_status: bool,
    trace: bool,
    max_concurrency: int,
    fixture: Path,
    top: int,
) -> dict[str, Any]:
    from sundial.runtime.watch import paging  # noqa: PLC0415

    gc.collect()
    out: dict[str, Any] = {"objects": n, "status": "present" if with_status else "absent", "tracemalloc": trace}
    bodies = Bodies(fixture, n, with_status=with_status)
    op = Operator(bodies, max_concurrency=max_concurrency)
    out["paging"] = {"first_objects": paging.FIRST_PAGE_OBJECTS, "most_objects": paging.PAGE_OBJECTS,
                     "page_bytes": paging.PAGE_BYTES}  # fmt: skip
    out["fixture_compact_json_bytes"] = len(bodies.item_json(0))  # builds the N items' JSON (held throughout)
    gc.collect()
    base = rss_mb()
    out["rss_mb_baseline"] = round(base, 1)
    reset_peak()
    if trace:
        tracemalloc.start(12)
    started = time.monotonic()

    # 1. The three informers list (only the ScheduledJobs have objects), then watch.
    stopping = asyncio.Event()
    informer_tasks = [asyncio.create_task(i.run(), name=f"{i.plural} informer") for i in op.informers]
    await asyncio.wait_for(op.readiness.ready.wait(), timeout=max(600.0, n / 20))
    out["ready_seconds"] = round(time.monotonic() - started, 1)
    out["rss_mb_at_ready"] = round(rss_mb(), 1)
    out["rss_mb_peak_listing"] = round(rss_mb("VmHWM"), 1)
    out["rss_mb_peak_listing_above_baseline"] = round(out["rss_mb_peak_listing"] - base, 1)
    pages = op.watches.pages
    out["pages"] = len(pages)
    out["largest_page_bytes"] = max((size for _, size in pages), default=0)
    out["page_objects"] = sorted({count for count, _ in pages})

    # 2. The dispatcher's first pass over every key (first status writes when absent).
    dispatcher_task = asyncio.create_task(op.dispatcher.run(stopping), name="dispatcher")
    first_passes = time.monotonic()
    while busy(op.dispatcher) or not op.events.empty():
        await asyncio.sleep(0.2)
    out["first_passes_seconds"] = round(time.monotonic() - first_passes, 1)
    out["status_writes"] = op.api.writes
    out["rss_mb_after_first_passes"] = round(rss_mb(), 1)

    # 3. Idle: nothing else is happening.
    gc.collect()
    out["rss_mb_idle"] = round(rss_mb(), 1)
    out["rss_kb_per_object_idle"] = round((out["rss_mb_idle"] - base) * 1024 / n, 2)
    trimmed = _operator_trim()
    if trimmed is not None:  # what the operator's periodic heap trim (runtime/serving/heap.py) gives back
        started_trim = time.perf_counter()
        trimmed()
        out["trim_ms"] = round((time.perf_counter() - started_trim) * 1000, 1)
        out["rss_mb_idle_trimmed"] = round(rss_mb(), 1)
        out["rss_kb_per_object_idle_trimmed"] = round((out["rss_mb_idle_trimmed"] - base) * 1024 / n, 2)
    out["rss_kb_per_object_at_ready"] = round((out["rss_mb_at_ready"] - base) * 1024 / n, 2)
    out["due_index_size"] = len(op.dispatcher.index)
    out["store_size"] = len(op.store)
    out["quarantined"] = sum(len(op.quarantine.names(kind, None)) for kind in ("ScheduledJob", "Job"))
    if trace:
        snapshot = tracemalloc.take_snapshot()
        tracemalloc.stop()
        out["tracemalloc_top"] = _top(snapshot, n, top)
    out["components"] = [
        {"component": name, "bytes_per_object": round(size / n), "objects_per_object": round(count / n, 1)}
        for name, size, count in components(op)
    ]

    stopping.set()
    for task in informer_tasks:
        task.cancel()
    await asyncio.gather(dispatcher_task, *informer_tasks, return_exceptions=True)
    return out


def reset_peak() -> None:
    """Reset this process's VmHWM to its current RSS (``/proc/self/clear_refs`` 5), where the kernel allows."""
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


def busy(dispatcher: Any) -> bool:
    """A pass is queued, running, or due now."""
    due = dispatcher.index.next_due()
    return bool(len(dispatcher.queue) or dispatcher._inflight or (due is not None and due <= datetime.now(UTC)))


def _top(snapshot: tracemalloc.Snapshot, n: int, top: int) -> list[dict[str, Any]]:
    """Top allocation sites still alive (the frames inside this repo's operator)."""
    snapshot = snapshot.filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)])
    stats = snapshot.statistics("traceback")
    rows = []
    for stat in stats[:top]:
        frames = [f"{Path(f.filename).name}:{f.lineno}" for f in stat.traceback]
        ours = [f for f in stat.traceback if "/sundial/" in f.filename]
        rows.append(
            {
                "bytes_per_object": round(stat.size / n, 1),
                "blocks_per_object": round(stat.count / n, 2),
                "site": frames[-1] if frames else "?",
                "via": [f"{Path(f.filename).parent.name}/{Path(f.filename).name}:{f.lineno}" for f in ours[-4:]],
            }
        )
    return rows


def render(result: Mapping[str, Any]) -> str:
    lines = [
        f"paging: {result['paging']}; {result['pages']} pages of {result['page_objects']} objects, the largest "
        f"{result['largest_page_bytes']} bytes; peak RSS while listing {result['rss_mb_peak_listing']} MB "
        f"({result['rss_mb_peak_listing_above_baseline']} MB above the baseline)",
        f"objects: {result['objects']} (status {result['status']}; one body = "
        f"{result['fixture_compact_json_bytes']} bytes of compact JSON)",
        f"RSS baseline {result['rss_mb_baseline']} MB; at ready {result['rss_mb_at_ready']} MB "
        f"({result['rss_kb_per_object_at_ready']} KB/object, ready after {result['ready_seconds']} s); after the "
        f"first passes {result['rss_mb_after_first_passes']} MB ({result['status_writes']} status writes, "
        f"{result['first_passes_seconds']} s); idle {result['rss_mb_idle']} MB "
        f"({result['rss_kb_per_object_idle']} KB/object)"
        + (
            f"; after the operator's heap trim ({result['trim_ms']} ms) {result['rss_mb_idle_trimmed']} MB "
            f"(**{result['rss_kb_per_object_idle_trimmed']} KB/object**)"
            if "rss_mb_idle_trimmed" in result
            else ""
        ),
        f"store {result['store_size']}, due index {result['due_index_size']}, quarantined {result['quarantined']}",
        "",
        "| component (retained, idle) | bytes/object | Python objects/object |",
        "|---|---|---|",
    ]
    lines += [
        f"| {c['component']} | {c['bytes_per_object']} | {c['objects_per_object']} |" for c in result["components"]
    ]
    if result.get("tracemalloc_top"):
        lines += [
            "",
            "| tracemalloc: alive at idle, by allocation site | bytes/object | blocks/object | via |",
            "|---|---|---|---|",
        ]
        lines += [
            f"| {row['site']} | {row['bytes_per_object']} | {row['blocks_per_object']} "
            f"| {' < '.join(reversed(row['via']))} |"
            for row in result["tracemalloc_top"]
        ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.memory", description=__doc__)
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument(
        "--status",
        choices=("absent", "present"),
        default="absent",
        help="absent: created while no operator ran (first status writes); present: a restart",
    )
    parser.add_argument("--trace", action="store_true", help="also a tracemalloc run (in a child process)")
    parser.add_argument("--trace-objects", type=int, default=0, help="objects in the tracemalloc run")
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--max-concurrency", type=int, default=64)
    parser.add_argument("--fixture", type=Path, default=FIXTURE)
    parser.add_argument(
        "--maximal",
        action="store_true",
        help="a maximal object instead of the fixture (bench/maximal.py: every spec field at its CRD bound, "
        "a 256 KiB jobTemplate, a 240 KB trigger token; more excluded dates than the CRD admits today)",
    )
    parser.add_argument(
        "--largest-legal",
        action="store_true",
        help="the largest ScheduledJob the CRD and the webhook admit (bench/intake.py: the intake scenario's object)",
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    parser.add_argument("--_traced", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    with_status = args.status == "present"
    if args.maximal or args.largest_legal:
        from bench import maximal  # noqa: PLC0415

        made = Path(tempfile.mkdtemp(prefix="bench-maximal-")) / "maximal.json"
        args.fixture = maximal.write(args.fixture, made, admitted=args.largest_legal)
    result = asyncio.run(
        measure(
            args.objects,
            with_status=with_status,
            trace=args._traced,
            max_concurrency=args.max_concurrency,
            fixture=args.fixture,
            top=args.top,
        )
    )
    result["loadavg"] = [round(value, 2) for value in os.getloadavg()]  # the machine is shared: how busy it was
    if args._traced:
        print(json.dumps(result))
        return 0
    results = [result]
    if args.trace:
        n = args.trace_objects or min(args.objects, 20_000)
        child = [sys.executable, "-m", "bench.memory", "--_traced", "--objects", str(n), "--status", args.status,
                 "--top", str(args.top), "--max-concurrency", str(args.max_concurrency),
                 "--fixture", str(args.fixture)]  # fmt: skip
        done = subprocess.run(child, capture_output=True, text=True, check=True, env=os.environ.copy())
        results.append(json.loads(done.stdout.strip().splitlines()[-1]))
    for item in results:
        print(render(item))
        print()
    if args.json:
        args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
