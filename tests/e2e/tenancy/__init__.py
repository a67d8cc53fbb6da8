"""End-to-end tests of the tenancy checks (docs/install.md, "Multi-tenant clusters") with real users."""
