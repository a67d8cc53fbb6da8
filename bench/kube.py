"""A small asyncio Kubernetes client (aiohttp, the sandbox's admin certificate) and the manifests the bench uses."""

from __future__ import annotations

import asyncio
import base64
import json
import ssl
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import yaml

from sundial.model import names

IMAGE = "busybox:1.37"
NOMINAL_ANNOTATION = "bench.sundial.dev/nominal"
SUNDIAL_SCHEDULED = names.SCHEDULED_TIME_ANNOTATION
CRONJOB_SCHEDULED = "batch.kubernetes.io/cronjob-scheduled-timestamp"
CONTENDER_LABEL = "bench.sundial.dev/contender"


@dataclass(frozen=True)
class Credentials:
    server: str
    ca: Path
    cert: Path
    key: Path
    token: str = ""
    """A bearer token (a ServiceAccount's): sent instead of the client certificate when set."""

    def context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.ca))
        if not self.token:
            context.load_cert_chain(str(self.cert), str(self.key))
        return context

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}


def credentials(kubeconfig: Path, directory: Path | None = None) -> Credentials:
    """The first cluster and user of KUBECONFIG with their PEM data written next to it (or into DIRECTORY)."""
    config: dict[str, Any] = yaml.safe_load(kubeconfig.read_text(encoding="utf-8"))
    cluster = config["clusters"][0]["cluster"]
    user = config["users"][0]["user"]
    directory = directory or kubeconfig.parent / "bench-pem"
    directory.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    for name, value in (
        ("ca.crt", cluster["certificate-authority-data"]),
        ("client.crt", user["client-certificate-data"]),
        ("client.key", user["client-key-data"]),
    ):
        path = directory / name
        path.write_bytes(base64.b64decode(value))
        path.chmod(0o600)
        paths[name] = path
    return Credentials(str(cluster["server"]), paths["ca.crt"], paths["client.crt"], paths["client.key"])


class ApiError(RuntimeError):
    def __init__(self, status: int, text: str) -> None:
        super().__init__(f"HTTP {status}: {text[:300]}")
        self.status = status


class Api:
    """``async with Api(creds) as api``: JSON requests over one pooled aiohttp session."""

    def __init__(self, creds: Credentials, connections: int = 100, user_agent: str = "sundial-bench") -> None:
        self.creds = creds
        self.connections = connections
        self.user_agent = user_agent
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> Api:
        connector = aiohttp.TCPConnector(ssl=self.creds.context(), limit=self.connections, keepalive_timeout=75)
        self._session = aiohttp.ClientSession(
            base_url=self.creds.server,
            connector=connector,
            headers={"User-Agent": self.user_agent, "Accept": "application/json", **self.creds.headers()},
            timeout=aiohttp.ClientTimeout(total=120),
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._session is not None:
            await self._session.close()

    @property
    def session(self) -> aiohttp.ClientSession:
        assert self._session is not None
        return self._session

    async def call(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
        """METHOD PATH; the decoded JSON body (or text); raise :class:`ApiError` on >= 300."""
        data = json.dumps(body) if body is not None else None
        headers = {"Content-Type": content_type} if data is not None else {}
        async with self.session.request(method, path, data=data, headers=headers) as response:
            text = await response.text()
            if response.status >= 300:
                raise ApiError(response.status, text)
            try:
                return json.loads(text)
            except ValueError:
                return text

    async def text(self, path: str) -> str:
        async with self.session.get(path, headers={"Accept": "text/plain"}) as response:
            return await response.text()

    async def create(self, path: str, body: dict[str, Any], *, exist_ok: bool = True, tries: int = 8) -> int:
        """POST BODY to PATH, retrying 429/5xx and connection errors; the final status."""
        delay = 0.2
        for attempt in range(tries):
            try:
                await self.call("POST", path, body)
                return 201
            except ApiError as error:
                if error.status == 409 and exist_ok:
                    return 409
                if error.status not in (429, 500, 503, 504) or attempt == tries - 1:
                    raise
            except (aiohttp.ClientError, TimeoutError):
                if attempt == tries - 1:
                    raise
            await asyncio.sleep(delay)
            delay = min(delay * 2, 5.0)
        raise AssertionError("unreachable")

    async def warm(self, count: int, path: str = "/version") -> None:
        """Open COUNT connections (TLS handshakes done) now, COUNT GETs of PATH at once, so that a herd sent
        later starts on warm connections as an operator's client does."""
        await asyncio.gather(*(self.call("GET", path) for _ in range(count)))

    async def create_many(self, items: Iterable[tuple[str, dict[str, Any]]], concurrency: int = 64) -> float:
        """Create every (path, body) with CONCURRENCY requests in flight; the seconds it took."""
        queue: asyncio.Queue[tuple[str, dict[str, Any]]] = asyncio.Queue()
        for item in items:
            queue.put_nowait(item)

        async def worker() -> None:
            while True:
                try:
                    path, body = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                await self.create(path, body)

        start = time.monotonic()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return time.monotonic() - start

    async def namespaces(self, names: Sequence[str]) -> None:
        await asyncio.gather(*(self.create("/api/v1/namespaces", {"metadata": {"name": name}}) for name in names))
        # The ServiceAccount "default" is made by the controller manager; Jobs' pods need it.
        deadline = time.monotonic() + 60
        for name in names:
            while time.monotonic() < deadline:
                try:
                    await self.call("GET", f"/api/v1/namespaces/{name}/serviceaccounts/default")
                    break
                except ApiError:
                    await asyncio.sleep(0.2)

    async def delete_namespaces(self, names: Sequence[str], wait: float = 180.0) -> float:
        """Delete NAMESPACES and wait (up to WAIT seconds) until they are gone; the seconds waited."""
        start = time.monotonic()
        for name in names:
            try:
                await self.call("DELETE", f"/api/v1/namespaces/{name}")
            except ApiError as error:
                if error.status != 404:
                    raise
        while time.monotonic() - start < wait:
            remaining = 0
            for name in names:
                try:
                    await self.call("GET", f"/api/v1/namespaces/{name}")
                    remaining += 1
                except ApiError:
                    pass
            if not remaining:
                break
            await asyncio.sleep(1.0)
        return time.monotonic() - start

    async def count(self, path: str) -> int:
        """How many objects a LIST of PATH returns (paged)."""
        total, token = 0, ""
        while True:
            sep = "&" if "?" in path else "?"
            page = await self.call("GET", f"{path}{sep}limit=5000" + (f"&continue={token}" if token else ""))
            total += len(page.get("items", []))
            token = page.get("metadata", {}).get("continue", "")
            if not token:
                return total


# -- manifests ---------------------------------------------------------------------------------------------


def job_spec(*, duration: str | None = None) -> dict[str, Any]:
    """A Job spec whose pod the sandbox's kwok makes succeed at once (or after DURATION)."""
    annotations = {"sandbox.sundial.dev/duration": duration} if duration else {}
    return {
        "backoffLimit": 0,
        "template": {
            "metadata": {"annotations": annotations},
            "spec": {
                "restartPolicy": "Never",
                "terminationGracePeriodSeconds": 0,
                "containers": [{"name": "main", "image": IMAGE, "command": ["sh", "-c", "exit 0"]}],
            },
        },
    }


def scheduled_job(name: str, schedule: str, contender: str = "sundial", *, priority: int = 0) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": names.API_VERSION,
        "kind": "ScheduledJob",
        "metadata": {"name": name, "labels": {CONTENDER_LABEL: contender}},
        "spec": {
            "schedule": schedule,
            "timeZone": "Etc/UTC",
            "jobTemplate": {"metadata": {"labels": {CONTENDER_LABEL: contender}}, "spec": job_spec()},
        },
    }
    if priority:
        body["spec"]["priority"] = priority
    return body


def cron_job(name: str, schedule: str, contender: str = "cronjob") -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name, "labels": {CONTENDER_LABEL: contender}},
        "spec": {
            "schedule": schedule,
            "timeZone": "Etc/UTC",
            "concurrencyPolicy": "Allow",
            "jobTemplate": {"metadata": {"labels": {CONTENDER_LABEL: contender}}, "spec": job_spec()},
        },
    }


def plain_job(name: str, nominal: str, contender: str = "raw") -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "labels": {CONTENDER_LABEL: contender},
            "annotations": {NOMINAL_ANNOTATION: nominal},
        },
        "spec": job_spec(),
    }


def sj_path(namespace: str) -> str:
    return f"/apis/sundial.dev/v1alpha1/namespaces/{namespace}/scheduledjobs"


def cj_path(namespace: str) -> str:
    return f"/apis/batch/v1/namespaces/{namespace}/cronjobs"


def job_path(namespace: str) -> str:
    return f"/apis/batch/v1/namespaces/{namespace}/jobs"
