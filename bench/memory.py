"""Operator memory per idle ScheduledJob, without a cluster: ``python -m bench.memory --objects 50000``.

A measuring tool, not a test. N bodies shaped like ``bench/fixtures/scheduledjob.json`` (one real object
captured by ``python -m bench.capture``: server-side-applied, so with ``metadata.managedFields``, a status
written by Sundial, a jobTemplate with a container, labels and annotations), each with its own name,
namespace, UID, resourceVersion and timestamps, go through the code paths the operator runs at start:

1. **listing** — kopf's LIST (pages of ``settings.watching.chunk_size``, or one response when None; each
   decoded with ``json.loads`` as kopf's aiohttp client does) streamed through kopf 1.45's real per-object
   watcher/workers (``kopf._core.reactor.queueing.watcher`` with ``processing.process_resource_event``, the
   operator's own registry and ``operator_settings()``; ``--kopf GROUP.NAME=VALUE`` overrides one setting)
   into the operator's callbacks (``Store.put_scheduled_job``, ``Dispatcher.touch``,
   ``InitialListing.check``); the initial listing's own LIST goes through ``InitialListing.load`` at the
   same time (with whichever Lister methods the code under test calls).
2. **first passes** — the real dispatcher runs the real reconciler with the real planner on every key.
   Objects without a status (``--status absent``, the bench's scale scenario: created while no operator
   ran) get their first status write: the fake API answers with a freshly decoded body (as an HTTP
   response is), and the watch then delivers a MODIFIED event (another decode of its own, as a watch line
   is) through kopf.
3. **idle** — kopf's per-object workers exit after ``settings.queueing.idle_timeout``; then RSS (``VmRSS``),
   the retained size of each component (objects reachable from it and not already counted), and, with
   ``--trace``, tracemalloc's top allocation sites of what is still alive, each divided by N.

RSS is measured in a run without tracemalloc (which adds its own overhead); ``--trace`` re-runs the same
phases in a child process with tracemalloc on (``--trace-objects`` of them, default min(N, 20,000)).
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import gc
import inspect
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


def _operator_decoder() -> Callable[[bytes], Any]:
    """How the operator decodes watch lines and raw responses (``sundial.kube.codec`` where it exists)."""
    try:
        from sundial.kube import codec  # noqa: PLC0415
    except ImportError:
        return json.loads
    loads: Callable[[bytes], Any] = codec.loads
    return loads


def _operator_trim() -> Callable[[], Any] | None:
    """The operator's periodic heap trim, where it has one."""
    try:
        from sundial.runtime.serving import heap  # noqa: PLC0415
    except ImportError:
        return None
    trim: Callable[[], Any] = heap.trim
    return trim


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
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

    def list_response(self, start: int = 0, stop: int | None = None) -> bytes:
        """One LIST response body with objects START..STOP (all N by default)."""
        items = ",".join(self.item_json(i) for i in range(start, self.n if stop is None else stop))
        head = '{"apiVersion":"sundial.dev/v1alpha1","kind":"ScheduledJobList","metadata":{"resourceVersion":"1"},'
        return (head + '"items":[' + items + "]}").encode()


# -- the operator's parts, wired as in sundial.runtime.assembly --------------------------------------------


class Elector:
    holding = True
    transitions = 1


class FakeApi:
    """What the reconciler calls; the status write answers with a fresh decode of the written object."""

    def __init__(self, bodies: Bodies, on_written: Callable[[bytes], None]) -> None:
        self.bodies = bodies
        self.on_written = on_written
        self.writes = 0
        self.index = {bodies.name(i): i for i in range(bodies.n)}

    # The initial listing's own LIST: before it was paged, one decode of the whole list (list_scheduled_jobs).

    async def list_scheduled_jobs(self, *, namespace: str | None) -> list[dict[str, Any]]:
        listed: list[dict[str, Any]] = json.loads(self.bodies.list_response())["items"]
        return listed

    async def list_jobs(self, *, namespace: str | None, label_selector: str) -> list[dict[str, Any]]:
        return []

    async def scheduled_job_pages(
        self, *, namespace: str | None, limit: int, **_: Any
    ) -> AsyncIterator[list[dict[str, Any]]]:
        decode = _operator_decoder()
        for start in range(0, self.bodies.n, limit):
            items = ",".join(self.bodies.item_json(i) for i in range(start, min(start + limit, self.bodies.n)))
            yield decode(('{"items":[' + items + "]}").encode())["items"]
            await asyncio.sleep(0)

    async def job_pages(
        self, *, namespace: str | None, label_selector: str, limit: int, **_: Any
    ) -> AsyncIterator[list[dict[str, Any]]]:
        yield []

    async def schedule_calendar_pages(self, **_: Any) -> AsyncIterator[list[dict[str, Any]]]:
        yield []

    async def get_scheduled_job(self, *, namespace: str, name: str) -> dict[str, Any] | None:
        raise AssertionError("no conflicts in this bench")

    async def write_status(self, *, namespace: str, name: str, resource_version: str, status: Mapping[str, Any]) -> Any:
        from sundial.kube import results  # noqa: PLC0415

        self.writes += 1
        i = self.index[(namespace, name)]
        raw = json.dumps(self.bodies.body(i, status=status, rv=int(resource_version) + 1_000_000)).encode()
        self.on_written(raw)  # the watch's MODIFIED event for the same write (decoded on its own)
        return results.Written(body=_operator_decoder()(raw))

    async def delete_scheduled_job(self, **_: Any) -> Any:
        raise AssertionError("idle objects are never deleted")

    async def create_job(self, **_: Any) -> Any:
        raise AssertionError("idle objects create no Jobs")

    async def delete_job(self, **_: Any) -> Any:
        raise AssertionError("idle objects delete no Jobs")

    async def create_event(self, **_: Any) -> None:
        return None


class NoEvents:
    def record(self, *_: Any) -> None:
        return None


class Operator:
    """Store, listing, dispatcher, reconciler, kopf registry/settings: as ``assembly.build`` makes them."""

    def __init__(self, bodies: Bodies, *, max_concurrency: int) -> None:
        from sundial.kube import leases  # noqa: PLC0415
        from sundial.runtime.acting.reconciler import Reconciler  # noqa: PLC0415
        from sundial.runtime.assembly import default_planner  # noqa: PLC0415
        from sundial.runtime.coordination.leadership import Leadership, Sharding  # noqa: PLC0415
        from sundial.runtime.dispatch.dispatcher import Dispatcher  # noqa: PLC0415
        from sundial.runtime.serving.metrics import Metrics  # noqa: PLC0415
        from sundial.runtime.watch import informers  # noqa: PLC0415
        from sundial.runtime.watch.readiness import InitialListing  # noqa: PLC0415
        from sundial.runtime.watch.store import Store  # noqa: PLC0415

        self.events: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self.api = FakeApi(bodies, on_written=lambda raw: self.events.put_nowait({"type": "MODIFIED", "raw": raw}))
        try:  # the operator's bound on one kept object, where it has one (runtime/watch/keeping.py)
            from sundial.runtime.watch.keeping import object_bound  # noqa: PLC0415

            self.store = Store(max_object_bytes=object_bound(256 * 1024))
        except ImportError:
            self.store = Store()
        self.listing = InitialListing(self.store)
        self.metrics = Metrics()
        elector: Any = Elector()
        sharding = Sharding(api=cast(Any, None), member=elector, prefix="bench", retry_period=1.0)  # never run
        self.leadership = Leadership([elector], sharding=sharding)
        del leases
        wiring: dict[str, Any] = {
            "store": self.store,
            "api": self.api,
            "leadership": self.leadership,
            "planner": default_planner(),
            "metrics": self.metrics,
            "clock": lambda: datetime.now(UTC),
            "identity": "bench-memory",  # the Reconciler's signature moves: pass what it takes
            "events": NoEvents(),
        }
        accepted = inspect.signature(Reconciler).parameters
        self.reconciler = Reconciler(**{k: v for k, v in wiring.items() if k in accepted})
        self.dispatcher = Dispatcher(
            reconcile=self.reconciler.reconcile, max_concurrency=max_concurrency, clock=lambda: datetime.now(UTC)
        )
        self.passes = 0
        self.settings = informers.operator_settings()
        wired: dict[str, Any] = {"configuration": None}
        if "on_scheduled_job" in inspect.signature(informers.registry).parameters:
            wired["on_scheduled_job"] = self.on_scheduled_job  # kopf watched them before listwatch.py
        if "on_job" in inspect.signature(informers.registry).parameters:
            wired["on_job"] = self.on_job  # kopf watched the Jobs before they had their own informer
        if "on_calendar" in inspect.signature(informers.registry).parameters:
            wired["on_calendar"] = self.on_calendar  # required since ScheduleCalendars are watched
        self.registry = informers.registry(**wired)

    def on_scheduled_job(self, kind: str | None, body: Mapping[str, Any]) -> None:
        if kind == "DELETED":
            key = self.store.drop_scheduled_job(body)
            self.dispatcher.forget(key)
            self.reconciler.forget(key)
        else:
            self.dispatcher.touch(self.store.put_scheduled_job(body))
        self.listing.check()

    def on_job(self, kind: str | None, body: Mapping[str, Any]) -> None:
        raise AssertionError("idle objects have no Jobs")

    def on_calendar(self, kind: str | None, body: Mapping[str, Any]) -> None:
        raise AssertionError("the bench has no ScheduleCalendars")


# -- kopf, fed from memory instead of a watch ---------------------------------------------------------------


class FeedKopf:
    """kopf 1.45's watcher + per-object workers + processor, with ``infinite_watch`` replaced by a feed."""

    def __init__(self, op: Operator) -> None:
        from kopf._cogs.structs import ephemera, references  # noqa: PLC0415
        from kopf._core.actions import lifecycles  # noqa: PLC0415
        from kopf._core.engines import indexing  # noqa: PLC0415
        from kopf._core.reactor import inventory, processing  # noqa: PLC0415

        from sundial import model  # noqa: PLC0415

        self.op = op
        self.resource = references.Resource(
            group=model.resource.GROUP,
            version=model.resource.VERSION,
            plural=model.resource.PLURAL,
            kind=model.resource.KIND,
            namespaced=True,
            verbs=["list", "watch", "get", "patch"],
        )
        indexers = indexing.OperatorIndexers()
        indexers.ensure(op.registry._indexing.get_all_handlers())
        from sundial.runtime.watch import informers  # noqa: PLC0415

        # The operator's own memory container where it passes one to kopf.operator(memories=...).
        factory = getattr(informers, "resource_memories", inventory.ResourceMemories)
        self.memories = factory()
        self.processor = _partial(
            processing.process_resource_event,
            lifecycle=lifecycles.get_default_lifecycle(),
            registry=op.registry,
            settings=op.settings,
            indexers=indexers,
            memories=self.memories,
            memobase=ephemera.AnyMemo(ephemera.Memo()),
            operator_paused=None,
            event_queue=asyncio.Queue(),
            resource=self.resource,
        )

    async def _feed(self, **_: Any) -> AsyncIterator[Any]:
        from kopf._cogs.clients import watching  # noqa: PLC0415

        # kopf's fetch_objs + continuous_watch: LIST pages of settings.watching.chunk_size (all at once when
        # None), each response decoded with the standard library (aiohttp's response.json()), its items
        # yielded as type-None events, the page dropped before the next request.
        n = self.op.api.bodies.n
        size = self.op.settings.watching.chunk_size or n
        for start in range(0, n, size):
            items = json.loads(self.op.api.bodies.list_response(start, min(start + size, n)))["items"]
            for item in items:
                yield {"type": None, "object": item}
            del items, item
            await asyncio.sleep(0)  # the next page's request
        yield watching.Bookmark.LISTED
        while True:  # the watch: each line decoded on its own
            event = await self.op.events.get()
            if event is None:
                return
            yield {"type": event["type"], "object": _operator_decoder()(event["raw"])}

    async def run(self) -> None:
        from kopf._core.reactor import queueing  # noqa: PLC0415

        if not self.op.registry._watching.has_handlers(resource=self.resource):
            # The ScheduledJobs' own informer (sundial.runtime.watch.listwatch): each decoded body straight to
            # the intake, no kopf worker in between.
            async for event in self._feed():
                if isinstance(event, dict):
                    self.op.on_scheduled_job(event["type"], event["object"])
            return

        original = queueing.watching.infinite_watch
        queueing.watching.infinite_watch = self._feed  # type: ignore[assignment]
        try:
            await queueing.watcher(
                namespace=None, settings=self.op.settings, resource=self.resource, processor=self.processor
            )
        finally:
            queueing.watching.infinite_watch = original  # type: ignore[assignment]


def _partial(fn: Callable[..., Any], **fixed: Any) -> Callable[..., Any]:
    import functools  # noqa: PLC0415

    return functools.partial(fn, **fixed)


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


def components(op: Operator, kopf: FeedKopf) -> list[tuple[str, int, int]]:
    """What each part keeps, in this order (an object shared by two parts counts in the first)."""
    seen: set[int] = set()
    store = op.store
    dispatcher = op.dispatcher
    parts: list[tuple[str, list[Any]]] = [
        ("store: ScheduledJob bodies", [getattr(store, "_scheduled_jobs", None)]),
        ("store: other (seen UIDs, Jobs, tombstones)", [v for k, v in vars(store).items() if k != "_scheduled_jobs"]),
        ("initial listing (expected UIDs)", [vars(op.listing)]),
        ("dispatcher: due index + maps", [vars(dispatcher)]),
        ("reconciler: per-key maps", [v for k, v in vars(op.reconciler).items() if k not in ("_api", "_store")]),
        ("kopf: per-object memories", [kopf.memories]),
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
    kopf_overrides: Sequence[str] = (),
) -> dict[str, Any]:
    gc.collect()
    out: dict[str, Any] = {"objects": n, "status": "present" if with_status else "absent", "tracemalloc": trace}
    bodies = Bodies(fixture, n, with_status=with_status)
    op = Operator(bodies, max_concurrency=max_concurrency)
    for override in kopf_overrides:  # e.g. watching.chunk_size=None, queueing.idle_timeout=5.0
        path, value = override.split("=", 1)
        group, name = path.split(".")
        setattr(getattr(op.settings, group), name, None if value == "None" else type_of(value))
    out["kopf_settings"] = {
        "watching.chunk_size": op.settings.watching.chunk_size,
        "queueing.idle_timeout": op.settings.queueing.idle_timeout,
    }
    kopf = FeedKopf(op)
    out["fixture_compact_json_bytes"] = len(bodies.item_json(0))  # builds the N items' JSON (held throughout)
    gc.collect()
    base = rss_mb()
    out["rss_mb_baseline"] = round(base, 1)
    if trace:
        tracemalloc.start(12)
    started = time.monotonic()

    # 1. kopf's LIST and the initial listing's own LIST, concurrently.
    stopping = asyncio.Event()
    kopf_task = asyncio.create_task(kopf.run(), name="kopf watcher")
    listing_task = asyncio.create_task(op.listing.load(op.api, ()), name="initial listing")
    await asyncio.wait_for(op.listing.ready.wait(), timeout=max(600.0, n / 20))
    out["ready_seconds"] = round(time.monotonic() - started, 1)
    out["rss_mb_at_ready"] = round(rss_mb(), 1)
    await listing_task

    # 2. The dispatcher's first pass over every key (first status writes when absent).
    dispatcher_task = asyncio.create_task(op.dispatcher.run(stopping), name="dispatcher")
    first_passes = time.monotonic()
    while busy(op.dispatcher):
        await asyncio.sleep(0.2)
    while not op.events.empty():
        await asyncio.sleep(0.2)
    out["first_passes_seconds"] = round(time.monotonic() - first_passes, 1)
    out["status_writes"] = op.api.writes
    out["rss_mb_after_first_passes"] = round(rss_mb(), 1)

    # 3. Idle: kopf's workers exit after idle_timeout; nothing else is happening.
    await asyncio.sleep(op.settings.queueing.idle_timeout + 1.0)
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
    out["kopf_memories"] = len(list(kopf.memories.iter_all_memories()))
    if trace:
        snapshot = tracemalloc.take_snapshot()
        tracemalloc.stop()
        out["tracemalloc_top"] = _top(snapshot, n, top)
    out["components"] = [
        {"component": name, "bytes_per_object": round(size / n), "objects_per_object": round(count / n, 1)}
        for name, size, count in components(op, kopf)
    ]

    stopping.set()
    op.events.put_nowait(None)
    await asyncio.gather(dispatcher_task, kopf_task, return_exceptions=True)
    return out


def busy(dispatcher: Any) -> bool:
    """A pass is queued, running, or due now."""
    due = dispatcher.index.next_due()
    return bool(len(dispatcher.queue) or dispatcher._inflight or (due is not None and due <= datetime.now(UTC)))


def type_of(value: str) -> int | float:
    return float(value) if "." in value else int(value)


def _top(snapshot: tracemalloc.Snapshot, n: int, top: int) -> list[dict[str, Any]]:
    """Top allocation sites still alive (first frame inside this repo's operator or kopf/json/pydantic)."""
    snapshot = snapshot.filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)])
    stats = snapshot.statistics("traceback")
    rows = []
    for stat in stats[:top]:
        frames = [f"{Path(f.filename).name}:{f.lineno}" for f in stat.traceback]
        ours = [f for f in stat.traceback if "/sundial/" in f.filename or "/kopf/" in f.filename]
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
        f"kopf settings: {result['kopf_settings']}",
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
        f"store {result['store_size']}, due index {result['due_index_size']}, kopf memories {result['kopf_memories']}",
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
        help="a maximal legal object instead of the fixture (bench/maximal.py: every spec field at its CRD bound, "
        "a 256 KiB jobTemplate, a 240 KB trigger token)",
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    parser.add_argument(
        "--kopf",
        action="append",
        default=[],
        metavar="GROUP.NAME=VALUE",
        help="override a kopf setting of operator_settings(), e.g. watching.chunk_size=None",
    )
    parser.add_argument("--_traced", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    with_status = args.status == "present"
    if args.maximal:
        from bench import maximal  # noqa: PLC0415

        args.fixture = maximal.write(args.fixture, Path(tempfile.mkdtemp(prefix="bench-maximal-")) / "maximal.json")
    result = asyncio.run(
        measure(
            args.objects,
            with_status=with_status,
            trace=args._traced,
            max_concurrency=args.max_concurrency,
            fixture=args.fixture,
            top=args.top,
            kopf_overrides=args.kopf,
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
                 "--top", str(args.top), "--max-concurrency", str(args.max_concurrency), "--fixture", str(args.fixture),
                 *(f"--kopf={override}" for override in args.kopf)]  # fmt: skip
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
