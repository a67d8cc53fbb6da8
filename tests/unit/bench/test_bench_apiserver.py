"""The bench's reading of the API server's own metrics and of its CPU profile (no cluster: recorded text)."""

from __future__ import annotations

import struct
from pathlib import Path

from bench import apiprofile, apiserver, env

JOBS = 'group="batch",resource="jobs",scope="resource",subresource="",verb="POST",version="v1"'
STATUS = 'group="sundial.dev",resource="scheduledjobs",scope="resource",subresource="status",verb="PUT"'
WATCH = 'group="batch",resource="jobs",scope="cluster",subresource="",verb="WATCH",version="v1"'


def _metrics(posts: dict[str, int], puts: int, seconds: tuple[float, float, float]) -> str:
    """The API server's /metrics text (the lines the bench reads, with the labels the API server writes)."""
    lines = ["# HELP apiserver_request_total Counter of apiserver requests"]
    lines += [f'apiserver_request_total{{code="{code}",component="apiserver",{JOBS}}} {n}' for code, n in posts.items()]
    lines.append(f'apiserver_request_total{{code="200",component="apiserver",{STATUS}}} {puts}')
    for labels, value in zip((JOBS, STATUS, WATCH), seconds, strict=True):
        lines.append(f'apiserver_request_duration_seconds_sum{{component="apiserver",dry_run="",{labels}}} {value}')
    return "\n".join(lines) + "\n"


BEFORE = _metrics({"201": 10}, 5, (1.0, 2.0, 100.0))
AFTER = _metrics({"201": 110, "409": 2}, 105, (2.0, 5.0, 900.0))


def _sample(text: str, cpu: float) -> apiserver.Sample:
    return apiserver.Sample(
        env.parse_requests(text),
        env.parse_requests(text, "apiserver_request_duration_seconds_sum"),
        cpu,
    )


def test_a_window_counts_requests_by_kind_and_splits_the_cpu_by_handler_time() -> None:
    result = apiserver.window(_sample(BEFORE, 10.0), _sample(AFTER, 18.0))
    assert result["requests"] == {"POST|batch/jobs|": 102.0, "PUT|sundial.dev/scheduledjobs|status": 100.0}
    assert result["cpu_seconds"] == 8.0
    assert result["handler_seconds"] == 4.0  # the WATCH's lifetime is not handler time
    by_kind = result["by_kind"]
    assert list(by_kind) == ["PUT|sundial.dev/scheduledjobs|status", "POST|batch/jobs|"]  # dearest first
    assert by_kind["PUT|sundial.dev/scheduledjobs|status"]["cpu_share_s"] == 6.0  # 3 of the 4 handler seconds
    assert by_kind["POST|batch/jobs|"]["handler_ms_per_request"] == round(1000 / 102, 2)


def test_requests_per_run_over_raw_keep_the_contenders_job_post_and_split_events_and_downstream() -> None:
    raw = {"POST|batch/jobs|": 100.0, "POST|pods|": 100.0, "POST|events|": 100.0}
    sundial = {
        "POST|batch/jobs|": 100.0,
        "POST|pods|": 100.0,
        "POST|events|": 130.0,  # the Job controller's 100 and Sundial's 30
        "PUT|sundial.dev/scheduledjobs|status": 100.0,
        "DELETE|pods|": 50.0,  # the garbage collector, after Sundial pruned Jobs
        "PUT|coordination.k8s.io/leases|": 40.0,
    }
    per_run = apiserver.per_run_over(sundial, raw, 100, 100)
    assert per_run["POST|batch/jobs|"] == 1.0
    assert "POST|pods|" not in per_run  # what any Job costs cancels out
    assert apiserver.writes_summary(per_run) == {
        "writes": 2.3,
        "writes_without_events": 2.0,
        "events": 0.3,
        "downstream_writes": 0.5,
    }


def test_profile_stacks_are_classified_by_request_kind() -> None:
    conn = ["runtime.goexit", "k8s.io/apiserver/pkg/server/filters.(*timeoutHandler).ServeHTTP.func1"]
    storage = ["runtime.goexit", "k8s.io/apiserver/pkg/endpoints/handlers/finisher.finishRequest.func1"]
    crd = "k8s.io/apiextensions-apiserver/pkg/apiserver.(*crdHandler).ServeHTTP"
    patcher = "k8s.io/apiserver/pkg/endpoints/handlers.(*patcher).patchResource.func3"
    status = "k8s.io/apiextensions-apiserver/pkg/registry/customresource.(*StatusREST).Update"
    cacher = "k8s.io/apiserver/pkg/storage/cacher.(*CacheDelegator).GuaranteedUpdate"  # inside the request
    create = "k8s.io/apiserver/pkg/endpoints/handlers.CreateResource.createHandler.func1.2"
    store = "k8s.io/apiserver/pkg/registry/generic/registry.(*Store).Create"
    watch = "k8s.io/apiserver/pkg/endpoints/handlers.serveWatch"
    listing = "k8s.io/apiserver/pkg/endpoints/handlers.ListResource.func1"
    cases = {
        (*storage, patcher, status, cacher, "encoding/json.Marshal"): "patch custom resource status",
        (*conn, crd, "k8s.io/apiserver/pkg/endpoints/handlers.PatchResource.func1"): "patch custom resource",
        (*storage, create, store, "k8s.io/api/batch/v1.(*Job).Marshal"): "create built-in batch/job",
        (*storage, create, store, "[kernel.kallsyms]"): "create built-in (kind not in the stack)",
        (*conn, listing, watch, "crypto/tls.(*Conn).Write"): "watch: serving events",
        (*conn, "k8s.io/apiserver/pkg/endpoints/filters.WithAuthorization.func1"): (
            "request filters (authentication, authorization, flow control, audit)"
        ),
        ("runtime.goexit", "k8s.io/apiserver/pkg/storage/cacher.(*Cacher).dispatchEvents"): (
            "watch pipeline (etcd watch, watch cache, fan-out)"
        ),
        ("runtime.goexit", "runtime.gcBgMarkStartWorkers.gowrap1", "runtime.gcDrain"): "Go GC (background)",
        ("[kernel.kallsyms]",): "kernel only",
    }
    for stack, kind in cases.items():
        assert apiprofile.classify(list(stack)) == kind, stack


def test_the_load_base_of_an_elf_binary_is_its_first_load_segment(tmp_path: Path) -> None:
    header = bytearray(4096)
    header[:4] = b"\x7fELF"
    struct.pack_into("<Q", header, 0x20, 64)  # program headers right after the ELF header
    struct.pack_into("<HH", header, 0x36, 56, 2)
    struct.pack_into("<IIQQ", header, 64, 6, 4, 64, 0x400040)  # PT_PHDR first
    struct.pack_into("<IIQQ", header, 64 + 56, 1, 5, 0, 0x400000)  # PT_LOAD
    binary = tmp_path / "kube-apiserver"
    binary.write_bytes(bytes(header))
    assert apiprofile.load_base(binary) == 0x400000
