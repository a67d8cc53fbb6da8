"""``python -m bench.memory`` drives the operator's own informers (ListWatch, the intake sinks, Readiness) from an
in-memory stand-in for the API's LIST pages and watch lines; and the intake scenario's object is the largest the
CRD and the webhook admit."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from bench import intake, maximal, memory

from sundial.runtime.serving.admission import serialized_size
from sundial.runtime.watch import paging

TEMPLATE_BYTES = 256 * 1024


def _measure(n: int, fixture: Path, *, with_status: bool) -> dict[str, object]:
    return asyncio.run(
        memory.measure(n, with_status=with_status, trace=False, max_concurrency=8, fixture=fixture, top=5)
    )


def test_the_listing_goes_through_the_informers_pages_and_the_status_writes_come_back_as_watch_lines() -> None:
    out = _measure(60, memory.FIXTURE, with_status=False)
    assert out["store_size"] == 60
    assert out["due_index_size"] == 60
    assert out["quarantined"] == 0
    # The informer's pages: the first asks for FIRST_PAGE_OBJECTS, the next for the rest (ordinary objects are
    # small: up to PAGE_OBJECTS a page).
    assert out["pages"] == 2
    assert out["page_objects"] == [paging.FIRST_PAGE_OBJECTS, 60 - paging.FIRST_PAGE_OBJECTS]
    # Created while no operator ran: each got its first status write from the real reconciler.
    assert out["status_writes"] == 60


def test_pages_of_the_largest_legal_objects_stay_within_the_page_bound(tmp_path: Path) -> None:
    fixture = maximal.write(memory.FIXTURE, tmp_path / "largest.json", admitted=True)
    out = _measure(60, fixture, with_status=True)
    one = int(str(out["fixture_compact_json_bytes"]))
    assert one > 500_000  # the object is about half a megabyte
    assert out["store_size"] == 60
    assert out["quarantined"] == 0
    # 20 first, then as many as fit in PAGE_BYTES at the first page's mean size, then the rest.
    per_page = paging.PAGE_BYTES // one
    assert out["page_objects"] == sorted({paging.FIRST_PAGE_OBJECTS, per_page, 60 - 20 - per_page})
    assert int(str(out["largest_page_bytes"])) <= paging.PAGE_BYTES + 1024


def test_the_intake_object_is_admitted_and_at_the_bounds() -> None:
    body = intake.largest("largest-0000", 7, template_bytes=TEMPLATE_BYTES)
    intake.check_legal(body, template_bytes=TEMPLATE_BYTES)
    assert serialized_size(body["spec"]["jobTemplate"]) == TEMPLATE_BYTES
    assert sum(len(entry["dates"]) for entry in body["spec"]["exclude"]) == intake.EXCLUDED_DATES
    annotations = body["metadata"]["annotations"]
    assert sum(len(k) + len(v) for k, v in annotations.items()) <= intake.ANNOTATIONS_BYTES
    assert len(json.dumps(body, separators=(",", ":"))) > 500_000


def test_a_larger_object_is_refused_by_the_check() -> None:
    body = intake.largest("largest-0000", 7, template_bytes=TEMPLATE_BYTES + 1)
    with pytest.raises(ValueError, match=r"spec\.jobTemplate"):
        intake.check_legal(body, template_bytes=TEMPLATE_BYTES)
    body = intake.largest("largest-0000", 7, template_bytes=TEMPLATE_BYTES)
    body["spec"]["exclude"].append({"dates": ["2099-01-01"]})
    with pytest.raises(ValueError, match=r"spec\.exclude"):
        intake.check_legal(body, template_bytes=TEMPLATE_BYTES)
