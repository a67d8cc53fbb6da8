"""Suite-wide settings: hypothesis never fails a property on wall-clock time (CI has 2 shared cores)."""

from __future__ import annotations

from hypothesis import HealthCheck, settings

settings.register_profile(
    "sundial",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.load_profile("sundial")
