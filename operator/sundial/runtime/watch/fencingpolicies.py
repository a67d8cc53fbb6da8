"""The fencing policy's and its binding's sink (DESIGN §12.2, docs/design.md §7.7): a change seen asks for the
fencing probe at once instead of at the next ``--fencing-probe-period``.

Two informers (:func:`sundial.runtime.watch.kinds.fencing`: the ValidatingAdmissionPolicy named by
``--fencing-policy`` and its binding of the same name, cluster-scoped, each selected by ``metadata.name``) feed
one :class:`FencingPolicies` sink each. Every version seen - created, changed, deleted, listed, gone from a relist,
or unreadable - calls ``on_change`` (:meth:`sundial.runtime.coordination.leadership.Leadership.fencing_changed`:
thread-safe, the probes are debounced there). Nothing of the objects is kept but their (namespace, name), which a
relist needs to tell what vanished; the planner never reads them, so readiness does not wait for these informers
(:mod:`.readiness`), and they run only when a fencing policy is configured.

An object that cannot be read is quarantined like any other kind (a stub, counted and logged) - and still asks
for a probe: something changed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sundial.kube.watches import Watches
from sundial.runtime.watch import kinds
from sundial.runtime.watch.listwatch import ListWatch, Observer
from sundial.runtime.watch.quarantine import Quarantine, stub_of

POLICY = "ValidatingAdmissionPolicy"
BINDING = "ValidatingAdmissionPolicyBinding"


def _name_of(body: Mapping[str, Any]) -> tuple[str, str]:
    """(namespace, name) of a readable object: a name and a resourceVersion that are strings."""
    meta = body["metadata"]
    name, version = meta["name"], meta["resourceVersion"]
    if not isinstance(name, str) or not isinstance(version, str):
        raise TypeError("metadata.name and metadata.resourceVersion must be strings")
    return str(meta.get("namespace") or ""), name


class FencingPolicies:
    """The sink of one fencing kind (KIND: :data:`POLICY` or :data:`BINDING`): every change calls ON_CHANGE."""

    def __init__(self, *, kind: str, on_change: Callable[[], None], quarantine: Quarantine) -> None:
        self._kind = kind
        self._on_change = on_change
        self._quarantine = quarantine
        self._held: set[tuple[str, str]] = set()

    def apply(self, event: str | None, body: Mapping[str, Any]) -> None:
        identity = _name_of(body)
        if event == "DELETED":
            self._held.discard(identity)
        else:
            self._held.add(identity)
        self._quarantine.release(self._kind, *identity)
        self._on_change()

    def quarantine(self, event: str | None, body: Any, error: BaseException) -> None:
        stub = stub_of(self._kind, body, error)
        identity = (stub.namespace, stub.name)
        if event == "DELETED":
            self._held.discard(identity)
            self._quarantine.release(self._kind, *identity)
        else:
            self._held.add(identity)
            self._quarantine.add(stub)
        self._on_change()

    def held(self, namespace: str | None) -> set[tuple[str, str]]:
        return set(self._held)

    def vanished(self, identity: tuple[str, str]) -> None:
        self._held.discard(identity)
        self._quarantine.release(self._kind, *identity)
        self._on_change()


def informers(
    name: str, *, watches: Watches, on_change: Callable[[], None], quarantine: Quarantine, observer: Observer
) -> list[ListWatch]:
    """The informers of the fencing policy NAME and of its binding (none when NAME is empty: no policy is
    configured, nothing to probe). Cluster-scoped whatever ``--namespace`` says; readiness does not wait for them."""
    if not name:
        return []
    policy, binding = kinds.fencing(name)
    return [
        ListWatch(watches=watches, collection=collection, observer=observer,
                  sink=FencingPolicies(kind=kind, on_change=on_change, quarantine=quarantine))
        for collection, kind in ((policy, POLICY), (binding, BINDING))
    ]  # fmt: skip
