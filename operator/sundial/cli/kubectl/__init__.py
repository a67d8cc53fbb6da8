"""The ``kubectl sundial`` plugin, one module per command as kubectl's ``pkg/cmd/<verb>/``: :mod:`.main` (the
parser and dispatch, the entry points) imports the commands (:mod:`.get`, :mod:`.describe`, :mod:`.preview`,
:mod:`.version`, :mod:`.completion`, :mod:`.trigger`, :mod:`.redrive`, :mod:`.backfill`, :mod:`.create`,
:mod:`.suspend`), each adding its sub-command with its handler; siblings do not import each other. Below them:
:mod:`.printers` and :mod:`.requests`, then :mod:`.nextruns`, :mod:`.calendars`, :mod:`.outputs` and, at the
bottom, :mod:`.runner` (kubectl, its global flags, ``PluginError``). The parser imports every command, so the
commands import at their top only :mod:`.outputs` and :mod:`.runner`; :mod:`.printers`, :mod:`.requests`,
:mod:`.nextruns` and :mod:`.calendars` load the model (pydantic) and are imported inside the handlers.
Nothing here imports :mod:`sundial.cli.commands` or the sandbox (pyproject.toml's import-linter contracts).
"""
