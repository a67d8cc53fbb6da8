"""Sundial: a Kubernetes-native distributed job scheduler.

Layers (each imports only those below it, enforced by import-linter):
``schedule`` (pure time) < ``model`` (spec/status) < ``planner`` (pure decisions)
< ``kube`` (API access) < ``runtime`` (operator wiring) < ``cli``.
"""

__version__ = "0.1.0"
