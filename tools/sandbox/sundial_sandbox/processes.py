"""Start, record, check and stop the sandbox's processes.

Every process starts in its own session (so its PID is also its process-group ID) and is recorded
in ``<directory>/pids/<name>.json`` with its PID and kernel start time. A record only counts if a
process with that PID *and* that start time still exists, so stale files after a reboot or a
``kill -9`` never make us signal an unrelated process.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ProcessRecord:
    name: str
    pid: int
    start_time: str | None
    argv: tuple[str, ...]
    log: Path


def _start_time(pid: int) -> str | None:
    """The kernel start time of PID (``/proc/PID/stat`` field 22), or None if unavailable."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8")
    except OSError:
        return None
    # Field 2 (comm) may contain spaces; the fields after it start after the last ')'.
    fields = stat.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 else None


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8")
    except OSError:
        return False
    fields = stat.rsplit(")", 1)[-1].split()
    return bool(fields) and fields[0] in {"Z", "X"}


def _reap(pid: int) -> None:
    """Collect PID's exit status if it is our child (avoids zombies in long-lived parents)."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


class ProcessTable:
    """The processes recorded in ``<directory>/pids``."""

    def __init__(self, directory: Path) -> None:
        self.pid_dir = directory / "pids"
        self.log_dir = directory / "logs"

    def _path(self, name: str) -> Path:
        return self.pid_dir / f"{name}.json"

    def start(
        self, name: str, argv: Sequence[str], env: Mapping[str, str] | None = None, cwd: Path | None = None
    ) -> ProcessRecord:
        self.pid_dir.mkdir(parents=True, exist_ok=True)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log = self.log_dir / f"{name}.log"
        with log.open("ab") as out:
            process = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=dict(env) if env is not None else None,
                cwd=cwd,
                start_new_session=True,
                close_fds=True,
            )
        record = ProcessRecord(name, process.pid, _start_time(process.pid), tuple(argv), log)
        tmp = self._path(name).with_suffix(".tmp")
        tmp.write_text(
            json.dumps({"pid": record.pid, "start_time": record.start_time, "argv": list(argv), "log": str(log)}),
            encoding="utf-8",
        )
        tmp.replace(self._path(name))
        return record

    def records(self) -> list[ProcessRecord]:
        if not self.pid_dir.is_dir():
            return []
        result = []
        for path in sorted(self.pid_dir.glob("*.json")):
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                result.append(
                    ProcessRecord(
                        path.stem,
                        int(data["pid"]),
                        data.get("start_time"),
                        tuple(data.get("argv", ())),
                        Path(data.get("log", self.log_dir / f"{path.stem}.log")),
                    )
                )
            except (OSError, ValueError, KeyError, TypeError):
                path.unlink(missing_ok=True)  # unreadable record: nothing we can safely signal
        return result

    @staticmethod
    def alive(record: ProcessRecord) -> bool:
        """True if the recorded process (same PID, same start time) is still running."""
        _reap(record.pid)
        if not _exists(record.pid) or _zombie(record.pid):
            return False
        current = _start_time(record.pid)
        return record.start_time is None or current is None or current == record.start_time

    def record(self, name: str) -> ProcessRecord | None:
        """The record of NAME, if any."""
        return next((record for record in self.records() if record.name == name), None)

    def stop(self, name: str, timeout: float = 10.0) -> ProcessRecord | None:
        """SIGTERM NAME's process group, SIGKILL it after TIMEOUT; keep its record (for a restart)."""
        record = self.record(name)
        if record is None or not self.alive(record):
            return record
        _signal_group(record.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while self.alive(record) and time.monotonic() < deadline:
            time.sleep(0.05)
        if self.alive(record):
            _signal_group(record.pid, signal.SIGKILL)
            deadline = time.monotonic() + 5.0
            while self.alive(record) and time.monotonic() < deadline:
                time.sleep(0.05)
        return record

    def stop_all(self, timeout: float = 10.0) -> None:
        """SIGTERM each recorded live process group, SIGKILL what remains after TIMEOUT; forget all."""
        records = self.records()
        live = [record for record in records if self.alive(record)]
        for record in reversed(live):  # reverse start order: clients before the API server and etcd
            _signal_group(record.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while live and time.monotonic() < deadline:
            live = [record for record in live if self.alive(record)]
            if live:
                time.sleep(0.1)
        for record in live:
            _signal_group(record.pid, signal.SIGKILL)
        deadline = time.monotonic() + 5.0
        while live and time.monotonic() < deadline:
            live = [record for record in live if self.alive(record)]
            if live:
                time.sleep(0.05)
        for record in records:
            self._path(record.name).unlink(missing_ok=True)


def _signal_group(pid: int, sig: signal.Signals) -> None:
    # The process was started with start_new_session=True, so its PID is its process-group ID;
    # signalling the group also reaches any children it spawned.
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        return
    except PermissionError:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return


def tail(path: Path, lines: int = 30) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])
