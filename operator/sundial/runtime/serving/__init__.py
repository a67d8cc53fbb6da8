"""The serving wing: what the operator offers to the outside besides its writes.

It owns the Prometheus metrics (:mod:`.metrics`), the ``/healthz``, ``/readyz`` and ``/metrics``
endpoints (:mod:`.probes`; ``/metrics`` over HTTPS by :mod:`.metricstls`, readers checked by :mod:`.access`),
the validating admission webhook (:mod:`.admission`) and the serving
certificate it manages itself without cert-manager (:mod:`.certificates`, :mod:`.certrotators`), log formatting
(:mod:`.logs`) and giving freed heap memory back to the OS (:mod:`.heap`). It may import
:mod:`sundial.runtime.settings` and the layers below the runtime; it never imports another wing (the other
wings import its metrics).
"""
