"""The only code that talks to the Kubernetes API (DESIGN §9, layer 4): the only importer of
``kubernetes_asyncio`` and of aiohttp's client (kept by import-linter and ``tests/unit/test_api_boundary.py``).

* :mod:`sundial.kube.connections` — an API client from a kubeconfig file or the in-cluster service account;
* :mod:`sundial.kube.errors` — the typed API failures, classified once (transient, not found, conflict, ...);
* :mod:`sundial.kube.ratelimits` — the client-side token bucket (``--qps`` / ``--burst``);
* :mod:`sundial.kube.requests` — the rate-limited, instrumented request wrapper and its send guard;
* :mod:`sundial.kube.results` — typed results of the calls that have more than one good outcome;
* :mod:`sundial.kube.objects` — Jobs, ScheduledJobs (status compare-and-set) and Events;
* :mod:`sundial.kube.leases` — the Lease record and its compare-and-set calls;
* :mod:`sundial.kube.reviews` — TokenReviews and SubjectAccessReviews (who may read ``/metrics``);
* :mod:`sundial.kube.certstore` — the webhook certificate's Secret and the webhook configuration's caBundle.
"""
