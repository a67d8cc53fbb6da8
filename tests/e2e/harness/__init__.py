"""The harness of the end-to-end suite, one module a role: :mod:`.cluster` (``kubectl`` on the cluster
under test), :mod:`.namespaces`, :mod:`.operators` (``sundial run`` subprocesses) and :mod:`.webhooks`
(the admission webhook). ``tests/e2e/conftest.py`` holds the fixtures that make them."""
