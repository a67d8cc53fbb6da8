"""The operator process (DESIGN §9, layer 5): kopf as informer only, a warm store, one dispatcher.

* :mod:`settings` — the frozen, documented settings of ``sundial run``;
* :mod:`informers` — kopf wiring: login, two ``on.event`` handlers, no annotations/finalizers/posting;
* :mod:`store` / :mod:`jobs` — the in-memory view of ScheduledJobs and their Jobs (with tombstones);
* :mod:`dueindex` / :mod:`fairness` / :mod:`dispatcher` — when and in what order objects are reconciled;
* :mod:`reconciler` — one planning pass: plan, claim (status CAS), act;
* :mod:`leadership` / :mod:`shards` — per-shard Leases and the "may I act now?" check;
* :mod:`metrics` / :mod:`probes` / :mod:`logs` — operability;
* :mod:`process` — assembles and runs everything until a signal.
"""
