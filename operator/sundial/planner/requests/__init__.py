"""What the token annotations request (DESIGN §5, §4.2): a redrive of the dead letters
(``sundial.dev/redrive``), one manual run (``sundial.dev/trigger``) and backfills of a past range
(``sundial.dev/backfill``). Each new token is handled once and echoed in the status; the requested runs are
handed to the pass, which admits them like any other. It imports only the rooms below it (runs, status) and the
vocabulary."""
