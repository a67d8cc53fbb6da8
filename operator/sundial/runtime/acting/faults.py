"""TEST ONLY fault injection for the chaos suite (``Settings.test_crash_after_claim`` and
``Settings.test_crash_after_create``): the process dies, as if SIGKILLed, at the two moments exactly-once must
survive - between a run's claim and its Job create, and between a prepared run's Job create and the deferred
status write that records it (DESIGN §7.5). Both are off (0) unless the CLI read them from the environment."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable

from sundial.planner import actions
from sundial.planner.plans import Plan

logger = logging.getLogger(__name__)

#: Exit code of the test-only crash hooks (as if SIGKILLed: 128 + 9).
CRASH_EXIT_CODE = 137


def hard_exit(code: int) -> None:  # pragma: no cover - ends the process
    logging.shutdown()
    os._exit(code)


class CrashHooks:
    def __init__(self, *, after_claim: int = 0, after_create: int = 0, exit: Callable[[int], None] = hard_exit) -> None:
        self._after_claim = after_claim
        self._after_create = after_create
        self._exit = exit
        self._claims = 0
        self._creates = 0

    def claimed(self, plan: Plan) -> None:
        """A claim (a status write, or a reservation used at its instant) precedes the plan's creates: after the
        n-th, exit before the create."""
        if self._after_claim <= 0 or not any(isinstance(a, actions.CreateJob) for a in plan.actions):
            return
        self._claims += 1
        if self._claims == self._after_claim:
            logger.critical(
                "test crash hook: exiting after claim %d, before creating its Job (SUNDIAL_TEST_CRASH_AFTER_CLAIM)",
                self._claims,
            )
            self._exit(CRASH_EXIT_CODE)

    def created_prepared(self) -> None:
        """A prepared run's Job was created (its status write deferred): after the n-th, exit before that write."""
        if self._after_create <= 0:
            return
        self._creates += 1
        if self._creates == self._after_create:
            logger.critical(
                "test crash hook: exiting after prepared create %d, before its deferred status write "
                "(SUNDIAL_TEST_CRASH_AFTER_CREATE)",
                self._creates,
            )
            self._exit(CRASH_EXIT_CODE)
