"""The dispatch wing: *when* and *in what order* ScheduledJobs are reconciled.

It owns the one time-ordered due index for all objects (:mod:`.dueindex`, never a task or timer per
object), the ready queue served round-robin across namespaces first, priority within one
(:mod:`.fairness`), and the one loop that sleeps until the earliest due time and runs due keys with
bounded concurrency (:mod:`.dispatcher`). It may import the watch wing (for the store's keys),
:mod:`sundial.runtime.fencing` and the layers below the runtime; it never imports the acting,
coordination or serving wings: what a pass *does* is a callable it is given.
"""
