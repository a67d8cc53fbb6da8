"""The fencing policy's and its binding's informers (docs/design.md §7.7): every change seen - listed, created,
changed, deleted, gone from a relist, unreadable - asks for a fencing probe; nothing else of the objects is kept;
an unreadable one is quarantined like any other kind; only the configured policy and binding are asked for."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
from aiohttp import web
from tests.unit.runtime.watch.loopback import loopback_watches

from sundial.kube import ratelimits, requests
from sundial.kube.watches import Watches
from sundial.runtime.watch import fencingpolicies, kinds
from sundial.runtime.watch.listwatch import ListWatch
from sundial.runtime.watch.quarantine import Quarantine


def policy(name: str, version: int) -> dict[str, Any]:
    return {"metadata": {"name": name, "resourceVersion": str(version)}, "spec": {"failurePolicy": "Fail"}}


class Changes:
    def __init__(self) -> None:
        self.count = 0

    def __call__(self) -> None:
        self.count += 1


def _sink() -> tuple[fencingpolicies.FencingPolicies, Changes, Quarantine, list[tuple[str, str]]]:
    counted: list[tuple[str, str]] = []
    quarantine = Quarantine(on_quarantine=lambda kind, reason: counted.append((kind, reason)))
    changes = Changes()
    sink = fencingpolicies.FencingPolicies(kind=fencingpolicies.BINDING, on_change=changes, quarantine=quarantine)
    return sink, changes, quarantine, counted


def _hand(sink: fencingpolicies.FencingPolicies, event: str | None, body: Any) -> None:
    """As the informer does: inside a guard, an exception quarantines."""
    try:
        sink.apply(event, body)
    except Exception as error:
        sink.quarantine(event, body, error)


def test_every_change_asks_for_a_probe_and_only_the_identity_is_kept() -> None:
    sink, changes, quarantine, counted = _sink()
    _hand(sink, None, policy("sundial-fencing", 1))  # listed
    assert changes.count == 1 and sink.held(None) == {("", "sundial-fencing")}
    _hand(sink, "MODIFIED", policy("sundial-fencing", 2))
    _hand(sink, "DELETED", policy("sundial-fencing", 3))
    assert changes.count == 3 and sink.held(None) == set()
    _hand(sink, "ADDED", policy("sundial-fencing", 4))  # restored
    sink.vanished(("", "sundial-fencing"))  # deleted while nobody watched, seen by a relist
    assert changes.count == 5 and sink.held(None) == set()
    assert counted == [] and quarantine.count(fencingpolicies.BINDING) == 0


def test_an_unreadable_object_is_quarantined_still_asks_for_a_probe_and_is_released_when_readable() -> None:
    sink, changes, quarantine, counted = _sink()
    unreadable = {"metadata": {"name": "sundial-fencing", "resourceVersion": 7}}  # a version that is no string
    _hand(sink, "MODIFIED", unreadable)
    assert changes.count == 1 and counted == [(fencingpolicies.BINDING, counted[0][1])]
    stub = quarantine.get(fencingpolicies.BINDING, "", "sundial-fencing")
    assert stub is not None and sink.held(None) == {("", "sundial-fencing")}  # held: a relist can see it go
    _hand(sink, "MODIFIED", policy("sundial-fencing", 8))
    assert changes.count == 2 and quarantine.count(fencingpolicies.BINDING) == 0
    _hand(sink, "MODIFIED", {"metadata": "garbage"})  # not even a name: quarantined, still a change
    assert changes.count == 3 and len(counted) == 2


def test_no_fencing_policy_configured_no_informers() -> None:
    source = Watches(api_client=None, requester=requests.Requester(bucket=ratelimits.TokenBucket(rate=1.0, burst=1)))
    made = fencingpolicies.informers("", watches=source, on_change=Changes(), quarantine=Quarantine(),
                                     observer=_Observer())  # fmt: skip
    assert made == []


def test_the_collections_are_the_cluster_scoped_policy_and_binding_selected_by_name() -> None:
    policies, bindings = kinds.fencing("sundial-fencing")
    assert policies.path(None) == "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"
    assert bindings.path(None) == "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings"
    assert policies.query(watch="true") == {"fieldSelector": "metadata.name=sundial-fencing", "watch": "true"}


class _Observer:
    def relisted(self, plural: str, reason: str) -> None:
        pass

    def failed(self, plural: str, reason: str) -> None:
        pass


class AdmissionApi:
    """Lists the policy and the binding and streams one script of events per kind; records every query."""

    def __init__(self) -> None:
        self.queries: list[tuple[str, dict[str, str]]] = []
        self.scripts = {
            fencingpolicies.POLICY: [{"type": "MODIFIED", "object": policy("sundial-fencing", 11)}],
            fencingpolicies.BINDING: [{"type": "DELETED", "object": policy("sundial-fencing", 12)},
                                      {"type": "ADDED", "object": policy("sundial-fencing", 13)}],
        }  # fmt: skip
        self.watched: set[str] = set()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        query = dict(request.query)
        self.queries.append((request.path, query))
        kind = fencingpolicies.POLICY if request.path.endswith("policies") else fencingpolicies.BINDING
        if query.get("watch") != "true":
            return web.json_response({"metadata": {"resourceVersion": "10"}, "items": [policy("sundial-fencing", 10)]})
        if kind in self.watched:
            await asyncio.sleep(3600)
        self.watched.add(kind)
        response = web.StreamResponse()
        await response.prepare(request)
        for line in self.scripts[kind]:
            await response.write(orjson.dumps(line) + b"\n")
        await asyncio.sleep(3600)
        return response


@pytest.fixture
async def admission() -> AsyncIterator[tuple[AdmissionApi, Watches]]:
    api = AdmissionApi()
    async with loopback_watches(api.handle) as source:
        yield api, source


async def test_the_informers_ask_only_for_the_named_objects_and_each_event_asks_for_a_probe(
    admission: tuple[AdmissionApi, Watches],
) -> None:
    api, source = admission
    changes = Changes()
    made: list[ListWatch] = fencingpolicies.informers("sundial-fencing", watches=source, on_change=changes,
                                                      quarantine=Quarantine(), observer=_Observer())  # fmt: skip
    tasks = [asyncio.create_task(informer.run()) for informer in made]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10.0
    try:
        while changes.count < 5:  # two listings, one MODIFIED policy, a binding DELETED then ADDED
            assert loop.time() < deadline, f"only {changes.count} changes seen"
            await asyncio.sleep(0.01)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    assert all(informer.synced.is_set() for informer in made)
    assert {path for path, _ in api.queries} == {
        "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies",
        "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings",
    }
    assert all(query.get("fieldSelector") == "metadata.name=sundial-fencing" for _, query in api.queries)
    assert [sink.held(None) for sink in (informer.sink for informer in made)] == [{("", "sundial-fencing")}] * 2
