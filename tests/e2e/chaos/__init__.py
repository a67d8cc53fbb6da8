"""Fault harness for Sundial (issue 5): a fault-injecting API proxy, an operator fleet, an independent
auditor, and the fault / chaos tests built on them. See docs/chaos.md."""
