"""A CPU profile of the kube-apiserver process during a herd (``--profile``): ``perf record -g`` on its pid,
then each sample's stack classified by the API server's own functions into request kinds.

The sandbox runs the API server with ``--profiling=false`` and its binaries are stripped (``-s -w``), so this
samples from outside (``perf``, frame pointers, which Go keeps) and names the frames with ``go tool addr2line``
(Go's pc-line table stays in a stripped binary). A sample counts for the first of these its stack holds: a
watch being served (inside ``ListResource``); a request handler (``handlers.CreateResource`` ..., the
outermost one), of a custom resource when ``crdHandler`` is in the stack (``serveStatus``: its status
subresource); the watch cache's fan-out goroutines; Go's background GC, the etcd client, HTTP/TLS outside a
handler. Built-in creates are not split by resource (a Job POST, a pod POST, a binding and an Event run the
same handler): the request counts beside them say how many of each there were.
"""

from __future__ import annotations

import os
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

VERBS = (
    ("handlers.CreateResource", "create"),
    ("handlers.createHandler", "create"),
    ("handlers.UpdateResource", "update"),
    ("handlers.PatchResource", "patch"),
    ("handlers.DeleteResource", "delete"),
    ("handlers.DeleteCollection", "deletecollection"),
    ("handlers.GetResource", "get"),
    ("handlers.getResourceHandler", "get"),
    ("handlers.ListResource", "list"),
)
WATCH = ("handlers.serveWatch", "(*WatchServer)")
BACKGROUND = (
    ("storage/cacher.", "watch cache: decoding and fan-out"),
    ("storage/etcd3.", "etcd client (outside a handler)"),
    ("go.etcd.io/etcd/client", "etcd client (outside a handler)"),
    ("runtime.gcBgMarkWorker", "Go GC (background)"),
    ("runtime.bgsweep", "Go GC (background)"),
    ("runtime.bgscavenge", "Go GC (background)"),
    ("net/http.(*conn).serve", "HTTP/TLS outside a handler"),
    ("crypto/tls.", "HTTP/TLS outside a handler"),
    ("http2.", "HTTP/TLS outside a handler"),
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
    crd = any("crdHandler" in frame for frame in stack)
    status = any("crdHandler).serveStatus" in frame for frame in stack)
    if any(marker in frame for frame in stack for marker in WATCH):  # a WATCH is served inside ListResource
        return "watch: serving events"
    for frame in stack:
        for marker, verb in VERBS:
            if marker in frame:
                what = "custom resource status" if status else "custom resource" if crd else "built-in"
                return f"{verb} ({what})"
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
