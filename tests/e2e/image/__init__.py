"""End-to-end tests of the operator image: ``make image``'s archive run with podman as the chart renders it."""
