"""Pure decisions: ``plan(obj, jobs, context) -> Plan`` (DESIGN §4-§6). No I/O, no clock.

The planner is a house of rooms, each holding one kind of decision; a room imports only the rooms under it
(the "Planner rooms" contract in ``pyproject.toml``; rooms on one line are independent of each other):

* :mod:`.planning` - ``plan()``: the order of one pass, an invalid spec, whether to write, the wake-up time.
* :mod:`.summary` - the end of a pass: one-offs complete (and expire), the conditions the status reports.
* :mod:`.concurrency` - admission of new runs under ``concurrencyPolicy`` (Allow, Forbid, Replace,
  BufferOne, BufferAll) | :mod:`.times` - which nominal times are due, missed or excluded, and the next one
  | :mod:`.requests` - the token annotations: redrive, manual trigger, backfill.
* :mod:`.runs` - attempts of runs: claims and their Jobs, outcomes, retries, dead letters and the circuit,
  the finished-Job history limits.
* :mod:`.status` - the working copy of the pass (:class:`~.status.drafts.Draft`) and condition bookkeeping.
* :mod:`.plans` - the pass's input context and its output (:class:`~.plans.Context`, :class:`~.plans.Plan`).
* :mod:`.actions` (what the runtime must do, the Event reasons, the condition -> Event map)
  | :mod:`.observed` (what the planner is told about Jobs)
  | :mod:`.manifests` (the Job builder: names, idempotency keys, manifests).

The runtime uses the top and the bottom only: :func:`.planning.plan`, :mod:`.plans`, :mod:`.actions` and
:mod:`.observed`.
"""
