"""Job deletes fenced by the owning object's current shard (docs/fencing.md, "Job deletes").

A DELETE has no body to carry a fencing token, so the fencing policy checks it against the Lease that the Job's
``sundial.dev/shard`` label names. Only the operator may write that label (``<fullname>-fencing-label``), and it
does so under a token: when the label is not the owner's current shard (a ``--shards`` change, a Job without
it), a merge patch sets it and the ``sundial.dev/fencing-token`` annotation to that shard and its token, naming
the Job's UID (the policy checks the patch, a Job UPDATE, like a create: a stale token is refused). The delete
then carries the UID and the ``resourceVersion`` of what was seen or patched as preconditions, so any write in
between is a 409. After a 409 the Job is read again and, while it is the same Job, decided on again from what
the read shows (a running Job's status moves often; a Replace or maxRunAge delete is sent only once).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sundial.kube import errors, requests, results
from sundial.model import names

logger = logging.getLogger(__name__)

#: Deletes sent for one Job, each but the first after a fresh read of it, before a 409 is given back.
ATTEMPTS = 3

Read = Callable[[], Awaitable[Mapping[str, Any] | None]]
Decode = Callable[[Awaitable[Any]], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class Seen:
    """The Job as the caller saw it: its ``sundial.dev/shard`` label ("" when absent or not known) and its
    ``resourceVersion`` ("": no version precondition)."""

    label: str = ""
    resource_version: str = ""


def seen(body: Mapping[str, Any]) -> Seen:
    meta = body.get("metadata") or {}
    label = (meta.get("labels") or {}).get(names.SHARD_LABEL)
    return Seen(label=str(label or ""), resource_version=str(meta.get("resourceVersion") or ""))


@dataclass(frozen=True)
class Target:
    """The Job to delete (by UID: never a same-named successor or a squatter) and the shard it must name."""

    namespace: str
    name: str
    uid: str
    shard: str = ""
    """The owning object's current shard ("": never relabel)."""
    token: str = ""
    """That shard's fencing token, written with the label ("": the label alone)."""


async def delete(
    batch: Any, req: requests.Requester, job: Target, first: Seen, *, read: Read, decode: Decode
) -> results.DeleteResult:
    """Relabel when the label is not ``job.shard``, then delete bound to that version; background propagation.
    ``batch``: the generated ``BatchV1Api``; ``read``: a fresh GET of the Job; ``decode``: the raw JSON of an
    answer (:func:`sundial.kube.objects.raw_json`).

    ``Done(existed=False)``: the Job was already gone. ``Conflict``: another Job holds the name, or the Job kept
    changing (``ATTEMPTS`` times). A refusal by the fencing policy raises (:class:`errors.FencedError`)."""
    view = first
    for attempt in range(ATTEMPTS):
        if attempt:
            body = await read()
            if body is None:
                return results.Done(existed=False)
            if str((body.get("metadata") or {}).get("uid") or "") != job.uid:
                return results.Conflict()
            view = seen(body)
        version = view.resource_version
        if job.shard and view.label != job.shard:
            patched = await _relabel(batch, req, job, decode)
            if not isinstance(patched, str):
                return patched
            version = patched
        preconditions = {"uid": job.uid} | ({"resourceVersion": version} if version else {})
        options = {"propagationPolicy": "Background", "preconditions": preconditions}
        remove = functools.partial(
            batch.delete_namespaced_job, job.name, job.namespace, body=options,
            _request_timeout=requests.REQUEST_TIMEOUT,
        )  # fmt: skip
        try:
            await req.call(verb="delete", resource="jobs", request=remove)
        except errors.NotFoundError:
            return results.Done(existed=False)
        except errors.ConflictError:
            continue  # changed since it was seen (or another UID): read it again
        return results.Done()
    logger.info("Job %s/%s kept changing (409 %d times): not deleted this time", job.namespace, job.name, ATTEMPTS)
    return results.Conflict()


async def _relabel(batch: Any, req: requests.Requester, job: Target, decode: Decode) -> str | results.DeleteResult:
    """The merge patch of label and token naming the UID; the ``resourceVersion`` it wrote, or why not."""
    annotations = {"annotations": {names.FENCING_TOKEN_ANNOTATION: job.token}} if job.token else {}
    metadata = {"uid": job.uid, "labels": {names.SHARD_LABEL: job.shard}, **annotations}
    patch = functools.partial(
        batch.patch_namespaced_job, job.name, job.namespace, {"metadata": metadata},
        _content_type="application/merge-patch+json", _request_timeout=requests.REQUEST_TIMEOUT,
        _preload_content=False,
    )  # fmt: skip
    try:
        patched = await req.call(verb="patch", resource="jobs", request=lambda: decode(patch()))
    except errors.NotFoundError:
        return results.Done(existed=False)
    except (errors.ConflictError, errors.InvalidError):
        return results.Conflict()  # another Job at that name now (the UID differs)
    return str((patched.get("metadata") or {}).get("resourceVersion") or "")
