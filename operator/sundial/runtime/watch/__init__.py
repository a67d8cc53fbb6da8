"""The watch wing: what the operator knows of the cluster, fed by the API server's watch streams.

It owns kopf's wiring as an informer only (:mod:`.informers`: login, two ``on.event`` handlers, no
annotations, finalizers or progress writes), what each event does (:mod:`.intake`: keep the object and wake
its key), the in-memory view of ScheduledJobs and their Jobs (:mod:`.store`, :mod:`.jobs`) and "ready once
the initial state is indexed" (:mod:`.readiness`). It may import the layers below the runtime (kube,
planner, model, schedule) and :mod:`sundial.runtime.settings`; it never imports another wing.
"""
