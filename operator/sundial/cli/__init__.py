"""Command-line entry points, layer 6 (it may import every other layer): :mod:`sundial.cli.commands`, the
``sundial`` command (``run``, ``preview``, ``sandbox``, ``dev``), and :mod:`sundial.cli.kubectl`, the
``kubectl sundial`` plugin. The two packages are independent of each other (an import-linter contract), and only
the ``sandbox`` and ``dev`` commands may import the sandbox development tool (lazily, when they run).
"""
