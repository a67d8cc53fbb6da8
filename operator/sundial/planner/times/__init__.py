"""Which nominal times are due (DESIGN §3, §4 catch-up, §3.1, §3.2): the times the object's ``When`` brings in this
pass, the cursor, catch-up, the times missed and the times excluded (``spec.exclude``, ScheduleCalendars), and
the next schedule time. It hands new runs to the pass as ``(nominal time, trigger, manual)`` and starts none
itself; it imports only the rooms below it (runs, status) and the vocabulary."""
