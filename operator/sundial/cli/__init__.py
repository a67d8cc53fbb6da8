"""Command-line entry points: ``sundial`` and the ``kubectl-sundial`` plugin."""
