"""What the reconciler needs from the outside, as protocols: the API calls it makes and where its Events go."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from sundial import model
from sundial.kube import results


class ReconcilerApi(Protocol):
    """The calls the reconciler makes: ScheduledJob reads, status claims and deletes, Job creates and deletes
    (:class:`sundial.kube.objects.ObjectsApi`, faked in tests)."""

    async def get_scheduled_job(self, *, namespace: str, name: str) -> dict[str, Any] | None: ...

    async def write_status(
        self, *, namespace: str, name: str, resource_version: str, status: Mapping[str, Any]
    ) -> results.WriteResult: ...

    async def delete_scheduled_job(
        self, *, namespace: str, name: str, uid: str, resource_version: str = ""
    ) -> results.DeleteResult: ...

    async def create_job(
        self, *, namespace: str, manifest: Mapping[str, Any], owner_uid: str, encoded: bytes | None = None
    ) -> results.CreateResult: ...

    async def delete_job(
        self, *, namespace: str, name: str, uid: str, resource_version: str = "", label: str = "", shard: str = "",
        token: str = "",
    ) -> results.DeleteResult: ...  # fmt: skip


class EventSink(Protocol):
    """Where Events go: :class:`sundial.runtime.acting.sender.EventRecorder` (sent in the background)."""

    def record(
        self,
        involved: model.ObjectMeta,
        type_: str,
        reason: str,
        message: str,
        *,
        guard: Callable[[], None] | None = None,
        token: str = "",
    ) -> None: ...
