"""Admission of new runs under ``concurrencyPolicy`` (DESIGN §4, §10.2, §10.3): whether a due run starts, is
skipped, replaces the runs before it or waits in ``status.buffered`` - Allow, Forbid, Replace, BufferOne and
BufferAll side by side, like the CronJob controller keeps them. It imports the rooms below it (runs, status)
and the vocabulary; never the rooms that find the new runs (times, requests)."""
