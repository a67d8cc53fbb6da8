"""The acting wing: one planning pass and the writes it makes (DESIGN §7: plan, claim, act).

It owns the reconciler (:mod:`.reconciler`: plan, status compare-and-set, Job creates and deletes) and the
Events it records, aggregated into series (:mod:`.series`) and sent off the critical path
(:mod:`.sender`). It may import the watch wing (the store), the serving wing's metrics,
:mod:`sundial.runtime.fencing` (the ``Acting`` protocol it is guarded by), :mod:`sundial.runtime.settings`
and the layers below the runtime; it never imports the coordination or dispatch wings.
"""
