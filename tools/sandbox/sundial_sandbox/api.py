"""A minimal HTTPS client for the sandbox's API server (stdlib only)."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any


class ApiError(RuntimeError):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status


class ApiClient:
    def __init__(self, server: str, ca_cert: Path, client_cert: Path, client_key: Path) -> None:
        self.server = server.rstrip("/")
        self._context = ssl.create_default_context(cafile=str(ca_cert))
        self._context.load_cert_chain(str(client_cert), str(client_key))

    def request(self, method: str, path: str, body: object | None = None, timeout: float = 10.0) -> tuple[int, bytes]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.server + path, data=data, method=method)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        request.add_header("Accept", "application/json")
        try:
            with urllib.request.urlopen(request, context=self._context, timeout=timeout) as response:
                status: int = response.status
                return status, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()

    def get_json(self, path: str) -> dict[str, Any] | None:
        """The object at PATH, or None if it does not exist."""
        status, payload = self.request("GET", path)
        if status == 404:
            return None
        if status >= 300:
            raise ApiError(status, payload.decode(errors="replace"))
        result: dict[str, Any] = json.loads(payload)
        return result

    def create(self, path: str, body: dict[str, Any]) -> None:
        """POST BODY to PATH; an existing object (409) is fine."""
        status, payload = self.request("POST", path, body)
        if status >= 300 and status != 409:
            raise ApiError(status, payload.decode(errors="replace"))

    def healthy(self, path: str = "/readyz") -> bool:
        try:
            status, _ = self.request("GET", path, timeout=3.0)
        except (OSError, ssl.SSLError):
            return False
        return status == 200


def probe_https(url: str, timeout: float = 3.0) -> bool:
    """GET URL over HTTPS without verifying its (self-signed) certificate; True on HTTP 200."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        with urllib.request.urlopen(url, context=context, timeout=timeout) as response:
            return bool(response.status == 200)
    except (OSError, ssl.SSLError):
        return False
