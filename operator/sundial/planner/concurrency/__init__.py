"""Admission of new runs under ``concurrencyPolicy`` (DESIGN §4, §4.1, §7.3): whether a due run starts, is
skipped, replaces the runs before it or waits in ``status.buffered`` - Allow, Forbid, Replace, BufferOne and
BufferAll side by side, like the CronJob controller keeps them. It imports the rooms below it (runs, status)
and the vocabulary; never the rooms that find the new runs (times, requests)."""
