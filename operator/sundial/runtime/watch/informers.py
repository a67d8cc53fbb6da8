"""kopf as the informer and process frame only (DESIGN §7).

* One ``@kopf.on.event`` handler (ScheduleCalendars) feeds the store and returns None. The ScheduledJobs and
  their Jobs are watched by :mod:`sundial.runtime.watch.listwatch` (kopf's per-event machinery cost more than
  planning in a herd, and most of the time to ready with 100,000 objects). kopf also serves the admission
  webhook (:mod:`sundial.runtime.serving.admission`). No changing handlers, daemons, timers
  or mandatory deletion handlers exist, so kopf never computes a diff-base, stores progress, or adds a
  finalizer: in kopf 1.45 ``process_resource_causes`` only patches an object for changing/spawning
  causes; a registry with only watching handlers leaves the object untouched (and would even remove a
  stale kopf finalizer).
* Event posting is off (``settings.posting.enabled = False``): kopf posts no log lines as Events; our
  Events are explicit API calls. Peering is off (standalone): Leases coordinate replicas.
* Cluster scanning is off (``settings.scanning.disabled = True``): kopf would otherwise LIST/WATCH
  CustomResourceDefinitions and Namespaces cluster-wide to follow CRD and namespace-pattern changes, which
  the shipped RBAC does not grant (and namespaced installs must not need). ``--namespace`` values are exact
  names; the resources are discovered once at startup, so the CRD must exist before the operator starts.
* An explicit ``@kopf.on.login`` gives kopf the same credentials as our own client.
* kopf decodes every line of a WATCH stream with the standard library's ``json.loads``;
  :func:`use_fast_json` points that module-level name at :mod:`sundial.kube.codec` (orjson).
* kopf 1.45 still *builds* a diff-base essence (a deep copy of the whole body, then another in the progress
  storage) for every watch event before it looks at which handlers exist; only changing and spawning causes
  use it. With watching handlers only, :class:`EventOnlyDiffBase` makes that essence empty.
* Every reach into kopf's internals (the memory container, the JSON decoder) is in :mod:`sundial.kube.compat`.
  What each of these choices saves is in docs/benchmarks.md.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Mapping
from typing import Any

import kopf

from sundial import model
from sundial.kube import codec, compat

logger = logging.getLogger(__name__)

EventFn = Callable[[str | None, Mapping[str, Any]], None]
"""Called with (watch event type — None for the initial listing, ADDED, MODIFIED, DELETED —, raw body)."""


async def connection_info(configuration: Any) -> Any:
    """kopf credentials from the kubernetes_asyncio configuration our own client uses."""
    header = configuration.get_api_key_with_prefix("BearerToken")
    if inspect.isawaitable(header):
        header = await header
    parts = header.split(" ", 1) if header else []
    scheme, token = (None, None) if not parts else (None, parts[0]) if len(parts) == 1 else (parts[0], parts[1])
    return kopf.ConnectionInfo(
        server=configuration.host,
        ca_path=configuration.ssl_ca_cert,
        insecure=not configuration.verify_ssl,
        username=configuration.username or None,
        password=configuration.password or None,
        scheme=scheme,
        token=token,
        certificate_path=configuration.cert_file,
        private_key_path=configuration.key_file,
    )


def resource_memories() -> Any:
    """kopf's per-object memory container (``kopf.operator(memories=...)``) that remembers nothing.

    kopf 1.45 keeps a ``ResourceMemory`` for every object it has ever seen until the object is deleted:
    a memo, an error throttler, indexing and daemon bookkeeping (several Python objects per object), and
    allocating them in between the listing's transient bodies pins the allocator's arenas. None of it is
    used while the registry has only watching (``on.event``) handlers: no memo, no indices, no daemons, no
    patches; the throttler only delays framework errors of an object's processing, and our handlers only
    index into the store. So every event gets a fresh, unremembered memory (kopf's ``ephemeral`` recall,
    which its admission webhooks use too; kopf internals, so it lives in
    :func:`sundial.kube.compat.ephemeral_memories`)."""
    return compat.ephemeral_memories()


class EventOnlyDiffBase(kopf.AnnotationsDiffBaseStorage):
    """kopf's default diff-base storage, except that the essence it builds is empty (no deep copy).

    Only valid while the registry has no changing handlers, daemons or timers (:func:`registry` registers
    none): the essence feeds only their causes. Nothing is ever stored (that needs a changing handler)."""

    def build(self, *, body: Any, extra_fields: Any = None) -> Any:
        return {}


def use_fast_json() -> None:
    """Let kopf's watch streams decode with orjson (:func:`sundial.kube.compat.decode_watch_events_with`).
    Fails loudly if kopf's decoding changed."""
    compat.decode_watch_events_with(codec.loads)


#: Pauses between retries of one kopf request (seconds): 174 s in all before it escalates.
ERROR_BACKOFFS = (1.0, 1.0, 2.0, 3.0, 5.0, 8.0, 13.0, 21.0, 30.0, 30.0, 30.0, 30.0)


def operator_settings() -> Any:
    """kopf settings: no Event posting, no peering, no cluster scanning."""
    settings = kopf.OperatorSettings()
    settings.posting.enabled = False
    settings.posting.loggers = False
    settings.peering.standalone = True
    settings.peering.mandatory = False
    settings.scanning.disabled = True
    settings.watching.inactivity_timeout = 70.0
    # Memory at scale (RSS keeps its high-water mark, so transient peaks stay; docs/benchmarks.md has the
    # numbers): kopf's initial LIST in pages instead of one response holding every object at once.
    settings.watching.chunk_size = 500
    # A LIST page or WATCH that fails with a 5xx is retried with these pauses, then escalates and kopf's
    # watcher ends (and the operator with it). kopf's default (1 … 21 s, 54 s in all) is shorter than a
    # lagging watch cache takes to catch up on a loaded API server: every ``continue`` page answers 504
    # ``ResourceVersionTooLarge`` until the cache reaches the first page's version. About 3 minutes here.
    settings.networking.error_backoffs = ERROR_BACKOFFS
    # A per-object worker keeps its last event (the whole body) until it exits, idle_timeout after that
    # event (default 5 s): during a listing that is every object listed in the last 5 s. A later event of
    # the object simply starts a new worker (a task and a queue).
    settings.queueing.idle_timeout = 0.5
    settings.queueing.worker_limit = None
    settings.persistence.diffbase_storage = EventOnlyDiffBase()
    return settings


def registry(
    *,
    configuration: Any,
    on_calendar: EventFn,
    on_login: Callable[[], None] = lambda: None,
) -> Any:
    """A fresh kopf registry (no module-level handlers) with the login and the ScheduleCalendars' event handler."""
    reg = kopf.OperatorRegistry()

    @kopf.on.login(registry=reg)
    async def login(**_: Any) -> Any:
        info = await connection_info(configuration)
        on_login()
        return info

    @kopf.on.event(model.resource.GROUP, model.resource.VERSION, model.calendars.CALENDAR_PLURAL, registry=reg)
    async def schedule_calendar_event(event: Mapping[str, Any], **_: Any) -> None:
        on_calendar(event.get("type"), event.get("object") or {})

    return reg
