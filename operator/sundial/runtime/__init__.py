"""The operator process (layer 5): its own informers into a warm store, one dispatcher, its own admission
webhook server and its own signal handling (no operator framework).

The runtime is in wings, each a sub-package with a docstring saying what it owns and what it may import;
import-linter enforces the order below (a wing imports only what is under it):

* :mod:`.process` — runs the parts until a signal (``run``), then shuts them down;
* :mod:`.assembly` — builds the parts from the settings (``build``), sending nothing;
* :mod:`.acting` | :mod:`.dispatch` | :mod:`.coordination` — one planning pass and its writes; when and in
  what order passes run; which replica may act on which shard (independent of each other);
* :mod:`.watch` | :mod:`.serving` — what the operator knows of the cluster (the intake: one informer per
  kind, quarantine, the store); metrics, probes, the admission webhook and logs (independent of each other);
* :mod:`.fencing` and :mod:`.settings` — the shard of an object and the ``Acting`` protocol; the
  grouped, frozen settings of ``sundial run``.
"""
