"""The webhook's serving certificate managed by the operator itself, the way controller-runtime's cert
rotators (open-policy-agent/cert-controller) do it, when cert-manager does not issue one.

On start and then at every :func:`sundial.runtime.serving.certificates.next_check` a replica *syncs*:

1. it reads the Secret (``--webhook-cert-secret``; the chart creates it empty, the operator only ever
   ``get``\\ s and ``update``\\ s it, RBAC scoped by ``resourceNames``);
2. :func:`~sundial.runtime.serving.certificates.plan` decides whether the stored CA and certificate can be
   served at ``now``; if not, it generates what is missing and writes it back with the ``resourceVersion``
   it read (compare-and-set: of replicas racing, one wins; the others get 409, re-read and serve the
   winner's);
3. it sets the ValidatingWebhookConfiguration's ``caBundle`` (``--webhook-configuration``, ``get`` and
   ``patch`` scoped by ``resourceNames``) to the Secret's CA bundle where it differs — before serving a
   certificate of a new CA, and again on every sync, so a crash between the two writes heals;
4. it swaps a TLS context with the certificate in for the webhook server's new connections
   (:class:`ServingTLS`): they get it at once, and the server never stops listening.

The reads and writes themselves are :mod:`sundial.kube.certstore`'s.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import logging
import os
import tempfile
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

from sundial.kube import errors, requests
from sundial.kube.certstore import CertStoreApi
from sundial.runtime.serving import certificates, swappedtls

logger = logging.getLogger(__name__)

RETRY = timedelta(seconds=10)
"""How soon a failed sync is tried again."""

MAX_RACES = 5
"""Compare-and-set conflicts one sync accepts before it gives up (until its retry)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class ManagedCertificate:
    """What ``sundial run --webhook-cert-secret`` manages (see the module docstring)."""

    secret_namespace: str
    secret_name: str
    webhook_configuration: str
    """Name of the ValidatingWebhookConfiguration whose ``caBundle`` is kept current; empty: none."""
    names: certificates.SubjectNames
    lifetimes: certificates.Lifetimes = dataclasses.field(default_factory=certificates.Lifetimes)
    resync: timedelta = timedelta(minutes=5)

    def __post_init__(self) -> None:
        if not self.secret_name or not self.secret_namespace:
            raise ValueError("--webhook-cert-secret needs a Secret name and namespace")
        if self.resync <= timedelta(0):
            raise ValueError("--webhook-cert-resync must be positive")


class Stored(Protocol):
    """What the rotator needs from the API (:class:`KubeStore`, or a fake in tests)."""

    async def read_secret(self) -> dict[str, Any] | None:
        """The Secret as stored now (never a cache); None when it does not exist."""

    async def write_secret(self, body: dict[str, Any]) -> bool:
        """Create (no ``resourceVersion``) or update (compare-and-set) the Secret; False on a conflict."""

    async def set_ca_bundle(self, bundle: str) -> int:
        """Set every webhook's ``clientConfig.caBundle`` to BUNDLE where it differs; how many changed.
        Raises :class:`ConfigurationMissingError` while the configuration does not exist."""


class ConfigurationMissingError(LookupError):
    """The ValidatingWebhookConfiguration does not exist (yet): it may be applied after the Deployment."""


class KubeStore:
    """:class:`Stored` on the Kubernetes API (:class:`sundial.kube.certstore.CertStoreApi`), every call through
    the operator's rate-limited requester."""

    def __init__(self, *, api_client: Any, requester: requests.Requester, managed: ManagedCertificate) -> None:
        self._api = CertStoreApi(api_client=api_client, requester=requester)
        self._managed = managed

    async def read_secret(self) -> dict[str, Any] | None:
        m = self._managed
        return await self._api.get_secret(namespace=m.secret_namespace, name=m.secret_name)

    async def write_secret(self, body: dict[str, Any]) -> bool:
        m = self._managed
        try:
            if not (body.get("metadata") or {}).get("resourceVersion"):
                await self._api.create_secret(namespace=m.secret_namespace, body=body)
            else:
                await self._api.replace_secret(namespace=m.secret_namespace, name=m.secret_name, body=body)
        except errors.ConflictError:
            return False
        return True

    async def set_ca_bundle(self, bundle: str) -> int:
        name = self._managed.webhook_configuration
        if not name:
            return 0
        configuration = await self._api.get_webhook_configuration(name)
        if configuration is None:
            raise ConfigurationMissingError(f"ValidatingWebhookConfiguration {name} does not exist")
        patch = ca_bundle_patch(configuration, bundle)
        if patch:
            await self._api.patch_webhook_configuration(name, patch)
        return len(patch) // 2


def ca_bundle_patch(configuration: Mapping[str, Any], bundle: str) -> list[dict[str, Any]]:
    """A JSON patch setting every webhook's caBundle to BUNDLE where it differs; each change guarded by a
    ``test`` of the webhook's name, so a reordered list makes the patch fail instead of hitting another."""
    patch: list[dict[str, Any]] = []
    for index, webhook in enumerate(configuration.get("webhooks") or []):
        if (webhook.get("clientConfig") or {}).get("caBundle") == bundle:
            continue
        patch.append({"op": "test", "path": f"/webhooks/{index}/name", "value": webhook.get("name")})
        patch.append({"op": "add", "path": f"/webhooks/{index}/clientConfig/caBundle", "value": bundle})
    return patch


class ServingTLS:
    """The webhook server's TLS context and files. The server listens with ``context``; :meth:`load` builds a
    context for a renewed certificate and swaps it in whole (:class:`~.swappedtls.SwappedContext`), so the
    webhook's own thread keeps handshaking while the main loop renews: new connections get the new
    certificate at once, open ones keep theirs."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._swapped = swappedtls.SwappedContext()
        self.context = self._swapped.listening
        self.certfile = directory / "tls.crt"
        self.keyfile = directory / "tls.key"
        self.cadata: bytes | None = None
        self.serial: int | None = None

    def load(self, material: certificates.Material) -> bool:
        """Serve MATERIAL's certificate from now on; False if it is the one already served."""
        if material.cert.serial_number == self.serial:
            return False
        cert, key = material.cert_pem(), material.key_pem()
        if self.serial is None:
            write_private(self.certfile, cert)
            write_private(self.keyfile, key)
            self._swapped.use(self.certfile, self.keyfile)
        else:
            with tempfile.TemporaryDirectory(dir=self.directory) as scratch:
                certfile, keyfile = Path(scratch) / "tls.crt", Path(scratch) / "tls.key"
                write_private(certfile, cert)
                write_private(keyfile, key)
                self._swapped.use(certfile, keyfile)
        self.cadata = material.bundle_pem()
        self.serial = material.cert.serial_number
        return True


def write_private(path: Path, data: bytes) -> None:
    """Write DATA to PATH readable by its owner only (0600), as a private key must be."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "wb") as sink:
        sink.write(data)


class Rotator:
    """Keeps the Secret, the webhook configuration's caBundle and the served certificate current."""

    def __init__(
        self,
        *,
        store: Stored,
        managed: ManagedCertificate,
        tls: ServingTLS,
        clock: Callable[[], datetime],
    ) -> None:
        self._store = store
        self._managed = managed
        self.tls = tls
        self._clock = clock

    async def sync(self) -> datetime:
        """One pass (see the module docstring); returns when the next one is due."""
        m = self._managed
        for _ in range(MAX_RACES):
            now = self._clock()
            secret = await self._store.read_secret()
            try:
                material: certificates.Material | None = certificates.parse((secret or {}).get("data"))
            except certificates.InvalidMaterialError as error:
                logger.info("webhook certificate Secret %s/%s: %s", m.secret_namespace, m.secret_name, error)
                material = None
            decision = certificates.plan(material, now=now, names=m.names)
            if decision.action is not certificates.Action.KEEP:
                renewed = certificates.renew(material, decision, now=now, names=m.names, lifetimes=m.lifetimes)
                if not await self._store.write_secret(secret_body(secret, renewed, managed=m)):
                    logger.info("webhook certificate: another replica wrote the Secret first; re-reading")
                    continue
                logger.info(
                    "webhook certificate %s (%s): valid until %s",
                    decision.action.value,
                    decision.reason,
                    renewed.cert.not_valid_after_utc.isoformat(),
                )
                material = renewed
            assert material is not None
            bundle = base64.b64encode(material.bundle_pem()).decode("ascii")
            due = certificates.next_check(material, now=now, resync=m.resync)
            try:
                if await self._store.set_ca_bundle(bundle):
                    logger.info("webhook certificate: set the caBundle of %s", m.webhook_configuration)
            except ConfigurationMissingError as error:
                logger.warning("webhook certificate: %s; setting its caBundle again in %s", error, RETRY)
                due = now + RETRY
            if self.tls.load(material):
                logger.info("webhook certificate: serving serial %x", material.cert.serial_number)
            return due
        raise RuntimeError(f"webhook certificate: {MAX_RACES} compare-and-set conflicts in a row")

    async def prepare(self, *, attempts: int = 30) -> None:
        """Sync until it succeeds once (the webhook cannot be served before); retried every RETRY."""
        for attempt in range(1, attempts + 1):
            try:
                await self.sync()
                return
            except (errors.KubeError, RuntimeError) as error:
                if attempt == attempts:
                    raise
                logger.warning("webhook certificate not ready (attempt %d): %s", attempt, error)
                await asyncio.sleep(RETRY.total_seconds())

    async def run(self, stopping: asyncio.Event) -> None:
        """Sync at every due time until STOPPING; a failed sync is logged and retried after RETRY."""
        due = self._clock()
        while not stopping.is_set():
            try:
                due = await self.sync()
            except (errors.KubeError, RuntimeError) as error:
                logger.warning("webhook certificate sync failed: %s", error)
                due = self._clock() + RETRY
            delay = max(1.0, (due - self._clock()).total_seconds())
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stopping.wait(), timeout=delay)


def secret_body(
    secret: Mapping[str, Any] | None, material: certificates.Material, *, managed: ManagedCertificate
) -> dict[str, Any]:
    """The Secret to write: the stored one (labels, annotations, owner references and ``resourceVersion``
    kept, so the write is a compare-and-set and the installer sees no drift) with MATERIAL as its data."""
    if secret is None:
        return {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": managed.secret_name, "namespace": managed.secret_namespace},
            "type": "Opaque",
            "data": material.secret_data(),
        }
    body = {key: value for key, value in secret.items() if key != "data"}
    body["data"] = {**(secret.get("data") or {}), **material.secret_data()}
    return body


def rotator(
    managed: ManagedCertificate,
    *,
    api_client: Any,
    requester: requests.Requester,
    clock: Callable[[], datetime],
) -> Rotator:
    """A rotator that has not synced yet: :meth:`Rotator.prepare` before its :attr:`Rotator.tls` is served."""
    directory = Path(tempfile.mkdtemp(prefix="sundial-webhook-"))
    store = KubeStore(api_client=api_client, requester=requester, managed=managed)
    return Rotator(store=store, managed=managed, tls=ServingTLS(directory), clock=clock)


async def start(
    managed: ManagedCertificate,
    *,
    api_client: Any,
    requester: requests.Requester,
    clock: Callable[[], datetime],
) -> Rotator:
    """A rotator whose first sync has succeeded: its :attr:`Rotator.tls` can be served."""
    made = rotator(managed, api_client=api_client, requester=requester, clock=clock)
    await made.prepare()
    return made
