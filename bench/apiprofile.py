"""A CPU profile of the kube-apiserver process during a herd (``--profile``): ``perf record -g`` on its pid,
then each sample's stack classified by the API server's own functions into request kinds.

The sandbox runs the API server with ``--profiling=false`` and its binaries are stripped (``-s -w``), so this
samples from outside (``perf``, frame pointers, which Go keeps) and names the frames with ``go tool addr2line``
(Go's pc-line table stays in a stripped binary). A request runs in two goroutines (the handler chain under
the timeout filter, and the storage call under ``finisher.finishRequest``); a sample of either counts for the
request's verb (``handlers.CreateResource``, ``handlers.(*patcher)`` ...), of a custom resource (its status
subresource: ``customresource.(*StatusREST)``) or of a built-in kind when a frame names the type (generated
(un)marshalling, conversion, its registry package; otherwise "kind not in the stack": a Job POST, a pod POST,
a binding and an Event run the same generic code). The other goroutines: serving watches, the watch pipeline
(etcd watch, watch cache, fan-out), the request filters before a handler, Go's GC, HTTP/TLS, the etcd client.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import struct
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

PERF = shutil.which("perf")
GO = shutil.which("go") or ("/usr/local/go/bin/go" if Path("/usr/local/go/bin/go").exists() else None)
RATE_HZ = 199

VERBS = (  # the request's verb, from the handler goroutine's or the storage goroutine's frames
    ("handlers.(*patcher)", "patch"),
    ("handlers.PatchResource", "patch"),
    ("handlers.CreateResource", "create"),
    ("handlers.CreateNamedResource", "create"),
    ("handlers.createHandler", "create"),
    ("handlers.UpdateResource", "update"),
    ("handlers.DeleteResource", "delete"),
    ("handlers.DeleteCollection", "delete"),
    ("handlers.GetResource", "get"),
    ("handlers.getResourceHandler", "get"),
    ("handlers.ListResource", "list"),
)
WATCH = ("handlers.serveWatch", "(*WatchServer)")
CUSTOM = ("apiextensions-apiserver/pkg/registry/customresource", "crdHandler")
STATUS = ("customresource.(*StatusREST)", "crdHandler).serveStatus")
#: A built-in kind named by a frame: generated (un)marshalling or conversion of the type, or its registry package.
KIND = re.compile(
    r"k8s\.io/api/(?P<g1>\w+)/v\w+\.\(\*(?P<k1>[A-Z]\w+)\)"
    r"|Convert_(?P<g2>[a-z]+)_(?P<k2>[A-Z]\w+?)_To_"
    r"|pkg/registry/(?!generic/|rest/)(?P<g3>\w+)/(?P<k3>\w+)[./]"
)
BACKGROUND = (  # goroutines serving no one request
    ("filters.(*timeoutHandler)", "request filters (authentication, authorization, flow control, audit)"),
    ("storage/cacher.", "watch pipeline (etcd watch, watch cache, fan-out)"),
    ("storage/etcd3.", "watch pipeline (etcd watch, watch cache, fan-out)"),
    ("etcd/client/v3.(*watch", "watch pipeline (etcd watch, watch cache, fan-out)"),
    ("runtime.gcBgMarkWorker", "Go GC (background)"),
    ("runtime.gcBgMarkStartWorkers", "Go GC (background)"),
    ("runtime.bgsweep", "Go GC (background)"),
    ("runtime.bgscavenge", "Go GC (background)"),
    ("net/http.(*Server)", "HTTP and TLS (connections, framing)"),
    ("net/http.(*conn", "HTTP and TLS (connections, framing)"),
    ("http2.(*serverConn)", "HTTP and TLS (connections, framing)"),
    ("grpc", "etcd client (gRPC)"),
    ("runtime.morestack", "Go runtime (scheduler, stacks)"),
    ("runtime.mcall", "Go runtime (scheduler, stacks)"),
    ("runtime.mstart", "Go runtime (scheduler, stacks)"),
)


def available() -> bool:
    return PERF is not None and GO is not None


def start(pid: int, out: Path) -> subprocess.Popen[bytes] | None:
    if not available():
        return None
    return subprocess.Popen(
        [str(PERF), "record", "-F", str(RATE_HZ), "-g", "-p", str(pid), "-o", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def stop(process: subprocess.Popen[bytes] | None) -> None:
    if process is not None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def load_base(binary: Path) -> int:
    """The first PT_LOAD segment's virtual address minus its file offset (0x400000 for a non-PIE Go binary):
    ``perf script`` prints a stripped binary's addresses relative to it."""
    data = binary.read_bytes()[:4096]
    (phoff,) = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    for i in range(phnum):
        kind, _flags, offset, vaddr = struct.unpack_from("<IIQQ", data, phoff + i * phentsize)
        if kind == 1:  # PT_LOAD
            return int(vaddr - offset)
    return 0


def stacks(data: Path, binary: Path) -> list[list[str]]:
    """Every sample's stack (outermost frame first) as function names; frames outside BINARY are ``[dso]``."""
    text = subprocess.run(
        [str(PERF), "script", "-i", str(data), "-F", "ip,dso"], capture_output=True, text=True, check=True
    ).stdout
    samples: list[list[tuple[int, str]]] = []
    current: list[tuple[int, str]] = []
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            if current:
                samples.append(current)
            current = []
            continue
        dso = parts[1].strip("()") if len(parts) > 1 else "?"
        current.append((int(parts[0], 16), dso))
    if current:
        samples.append(current)
    base, name = load_base(binary), str(binary)
    addresses = sorted({addr for sample in samples for addr, dso in sample if dso == name})
    functions = resolve(binary, [addr + base for addr in addresses])
    names = dict(zip(addresses, functions, strict=True))
    return [
        [names.get(addr, "?") if dso == name else f"[{Path(dso).name}]" for addr, dso in reversed(sample)]
        for sample in samples
    ]


def resolve(binary: Path, addresses: list[int]) -> list[str]:
    """Function names of ADDRESSES in BINARY (``go tool addr2line``: a name line and a file:line line each)."""
    if not addresses:
        return []
    done = subprocess.run(
        [str(GO), "tool", "addr2line", str(binary)],
        input="".join(f"{a:#x}\n" for a in addresses),
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "GOFLAGS": ""},
    )
    lines = done.stdout.splitlines()
    return [lines[2 * i] if 2 * i < len(lines) else "?" for i in range(len(addresses))]


def classify(stack: list[str]) -> str:
    """The kind of work one sample's STACK (outermost frame first) was doing; see the module's docstring."""
    if any(marker in frame for frame in stack for marker in WATCH):  # a WATCH is served inside ListResource
        return "watch: serving events"
    verb = next((v for frame in stack for marker, v in VERBS if marker in frame), None)
    if verb is not None:
        if any(marker in frame for frame in stack for marker in STATUS):
            return f"{verb} custom resource status"
        if any(marker in frame for frame in stack for marker in CUSTOM):
            return f"{verb} custom resource"
        for frame in stack:
            if found := KIND.search(frame):
                group = found["g1"] or found["g2"] or found["g3"]
                kind = (found["k1"] or found["k2"] or found["k3"]).lower()
                return f"{verb} built-in {group}/{kind}"
        return f"{verb} built-in (kind not in the stack)"
    for frame in stack:
        for marker, kind in BACKGROUND:
            if marker in frame:
                return kind
    return "other" if any(not frame.startswith("[") for frame in stack) else "kernel only"


def breakdown(data: Path, binary: Path, cpu_seconds: float) -> dict[str, Any]:
    """Samples per kind, their share, and the measured CPU seconds split by that share."""
    kinds = Counter(classify(stack) for stack in stacks(data, binary))
    total = sum(kinds.values()) or 1
    return {
        "samples": sum(kinds.values()),
        "rate_hz": RATE_HZ,
        "by_kind": {
            kind: {"samples": count, "share": round(count / total, 3), "cpu_s": round(cpu_seconds * count / total, 2)}
            for kind, count in kinds.most_common()
        },
    }
