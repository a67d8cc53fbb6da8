"""The independent observer: ``python -m bench.watcher KUBECONFIG OUT.jsonl``, a separate process.

It LISTs Jobs in every namespace (to get a resourceVersion), touches ``OUT.jsonl.ready`` and then WATCHes
Jobs, writing one JSON line per ADDED event with its own receive time (``time.time()``) — before parsing
anything else. It never goes through the operator or the controller manager; a break of the watch resumes
from the last resourceVersion (a ``410 Gone`` re-lists; Jobs first seen by a re-list are marked ``via: list``).
"""

from __future__ import annotations

import http.client
import json
import signal
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from bench.kube import CRONJOB_SCHEDULED, NOMINAL_ANNOTATION, SUNDIAL_SCHEDULED, credentials
from sundial.model import names


def _record(job: dict[str, Any], received: float, via: str) -> dict[str, Any]:
    meta = job.get("metadata", {})
    annotations = meta.get("annotations") or {}
    owners = meta.get("ownerReferences") or [{}]
    nominal = (
        annotations.get(SUNDIAL_SCHEDULED) or annotations.get(CRONJOB_SCHEDULED) or annotations.get(NOMINAL_ANNOTATION)
    )
    return {
        "received": received,
        "via": via,
        "namespace": meta.get("namespace"),
        "name": meta.get("name"),
        "uid": meta.get("uid"),
        "created": meta.get("creationTimestamp"),
        "nominal": nominal,
        "owner_kind": owners[0].get("kind"),
        "owner": owners[0].get("name"),
        "fencing": annotations.get(names.FENCING_TOKEN_ANNOTATION),
    }


class Watcher:
    def __init__(self, kubeconfig: Path, out: TextIO) -> None:
        self.creds = credentials(kubeconfig, kubeconfig.parent / "bench-pem-watcher")
        rest = self.creds.server.split("://", 1)[1].rstrip("/")
        host, port = rest.rsplit(":", 1)
        self.host, self.port = host, int(port)
        self.context = self.creds.context()
        self.out = out
        self.seen: set[str] = set()

    def _get(self, path: str, timeout: float | None) -> http.client.HTTPResponse:
        conn = http.client.HTTPSConnection(self.host, self.port, context=self.context, timeout=timeout)
        conn.request("GET", path, headers={"Accept": "application/json"})
        return conn.getresponse()

    def list(self, first: bool) -> str:
        response = self._get("/apis/batch/v1/jobs", timeout=60)
        body = json.loads(response.read())
        now = time.time()
        for job in body.get("items", []):
            uid = job["metadata"]["uid"]
            if uid not in self.seen:
                self.seen.add(uid)
                if not first:
                    self.emit(_record(job, now, "list"))
        return str(body["metadata"]["resourceVersion"])

    def emit(self, record: dict[str, Any]) -> None:
        self.out.write(json.dumps(record) + "\n")
        self.out.flush()

    def run(self, ready: Path) -> None:
        version = self.list(first=True)
        ready.touch()
        while True:
            try:
                response = self._get(
                    f"/apis/batch/v1/jobs?watch=1&resourceVersion={version}&allowWatchBookmarks=true"
                    "&timeoutSeconds=3600",
                    timeout=None,
                )
                if response.status == 410:
                    version = self.list(first=False)
                    continue
                while True:
                    line = response.readline()
                    received = time.time()
                    if not line:
                        break
                    event = json.loads(line)
                    kind, obj = event.get("type"), event.get("object", {})
                    if kind == "ERROR":
                        if obj.get("code") == 410:
                            version = self.list(first=False)
                        break
                    version = obj.get("metadata", {}).get("resourceVersion", version)
                    if kind == "ADDED":
                        uid = obj["metadata"]["uid"]
                        if uid not in self.seen:
                            self.seen.add(uid)
                            self.emit(_record(obj, received, "watch"))
            except (OSError, http.client.HTTPException, ValueError):
                time.sleep(0.5)


def main(argv: list[str]) -> None:
    kubeconfig, out = Path(argv[0]), Path(argv[1])
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with out.open("a", encoding="utf-8") as handle:
        Watcher(kubeconfig, handle).run(out.with_suffix(out.suffix + ".ready"))


if __name__ == "__main__":
    main(sys.argv[1:])
