"""How many objects each LIST request asks for: pages of a bounded size in bytes, not only in objects.

A page is decoded whole (its bytes, then its objects as Python values, about three times its size in all) and
handed to the store before the next is asked for, so the memory a listing needs at its peak is a small multiple
of one page. Counting objects alone does not bound that: 500 ordinary ScheduledJobs are ~1.5 MB, 500 of the
largest the webhook admits are ~230 MB. So the first page asks for :data:`FIRST_PAGE_OBJECTS`, and each next one
for as many objects as fit in :data:`PAGE_BYTES` at the previous page's mean object size, never more than
:data:`PAGE_OBJECTS` nor fewer than one. With ordinary objects that is 500 a page from the second page on; with
the largest legal ones a page stays near 16 MiB. The bound: a listing's peak is about 3 x max(PAGE_BYTES,
FIRST_PAGE_OBJECTS x the largest object) above the store (measured: docs/benchmarks.md, ``intake``).
"""

from __future__ import annotations

from dataclasses import dataclass

#: The most objects one LIST request asks for.
PAGE_OBJECTS = 500
#: The objects the first page of a listing asks for (nothing is known yet of their size).
FIRST_PAGE_OBJECTS = 20
#: The bytes a page should hold, as received.
PAGE_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class Paging:
    most: int = PAGE_OBJECTS
    first: int = FIRST_PAGE_OBJECTS
    target_bytes: int = PAGE_BYTES

    def next(self, *, objects: int, size: int) -> int:
        """The objects to ask for after a page of OBJECTS objects and SIZE bytes."""
        if objects <= 0 or size <= 0:
            return min(self.most, max(self.first, 1))
        mean = max(1, size // objects)
        return max(1, min(self.most, self.target_bytes // mean))
