"""Sundial's benchmark suite: Sundial against the built-in CronJob controller and the API server's own limit.

One entry command: ``python -m bench run --scenario herd|steady|scale|cost|failover|all [--size smoke|small|full]``.
Each scenario starts its own fresh sandbox control plane (:class:`sundial_sandbox.Sandbox`) on loopback; see
``docs/benchmarks.md``.
"""
