"""The only code that talks to the Kubernetes API (DESIGN §9, layer 4).

* :mod:`sundial.kube.connections` — an API client from a kubeconfig file or the in-cluster service account;
* :mod:`sundial.kube.errors` — classification of API failures (transient vs. final);
* :mod:`sundial.kube.ratelimits` — the client-side token bucket (``--qps`` / ``--burst``);
* :mod:`sundial.kube.requests` — the rate-limited, instrumented request wrapper;
* :mod:`sundial.kube.results` — typed results of the calls that have more than one good outcome;
* :mod:`sundial.kube.objects` — Jobs, ScheduledJobs (status compare-and-set) and Events;
* :mod:`sundial.kube.leases` — the Lease record and its compare-and-set calls.
"""
