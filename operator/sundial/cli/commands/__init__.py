"""The ``sundial`` command: :mod:`.main` (the parser, one sub-command per module) and the modules of its
sub-commands, :mod:`.run` (the operator), :mod:`.preview`, :mod:`.sandbox` and :mod:`.dev`, each exposing
``register(subparsers)``. :mod:`.main` imports a sub-command's module only when that command runs (by name, so
``dev`` and ``sandbox``, which the image leaves out, may be missing); :mod:`.dev` uses :mod:`.sandbox`, the
other sub-commands import none of their siblings, and nothing here imports :mod:`sundial.cli.kubectl`.
"""
