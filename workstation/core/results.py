"""Bench and eval results kept in SQLite, with the machine and the llama.cpp build they ran on.

One ``runs`` row per command invocation (kind ``bench`` or ``eval``, machine, build, time) and
one ``results`` row per figure (profile, test, value, unit, and the whole record as JSON).
``history()`` reads them back newest first for the TUI dashboard.
"""

from __future__ import annotations

import json
import os
import platform
import sqlite3
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

from workstation.core.errors import WorkstationError
from workstation.core.paths import data_dir
from workstation.core.sqlite_schema import SchemaError, open_database

DB_NAME = "results.sqlite3"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id   TEXT PRIMARY KEY,
    kind     TEXT NOT NULL,
    created  TEXT NOT NULL,
    command  TEXT NOT NULL DEFAULT '',
    machine  TEXT NOT NULL,
    build    TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS results (
    id       INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id   TEXT NOT NULL REFERENCES runs(run_id),
    profile  TEXT NOT NULL,
    model    TEXT NOT NULL DEFAULT '',
    test     TEXT NOT NULL,
    value    REAL,
    unit     TEXT NOT NULL DEFAULT '',
    data     TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS results_profile ON results(profile, test);
"""


def db_path() -> Path:
    return data_dir() / DB_NAME


def _connect(path: Path | None = None) -> sqlite3.Connection:
    """The history opened as every database of ours is (a damaged file is one sentence naming it:
    `size` said "unexpected error: DatabaseError: file is not a database")."""
    where = path or db_path()
    conn = open_database(where, [_SCHEMA], f"The results history {where}")
    conn.row_factory = sqlite3.Row
    return conn


# --- what machine and build a result came from ---------------------------------------------------
def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _gpu_names() -> list[str]:
    """The GPUs' names, as ``hw`` lists them (none: no NVIDIA driver, or ``WORKSTATION_FAKE_GPUS``'s)."""
    from workstation.core import hardware

    return [g.name for g in hardware.gpus()]


@lru_cache(maxsize=1)
def machine_info() -> dict[str, Any]:
    import psutil

    return {
        "hostname": platform.node(),
        "os": f"{platform.system()} {platform.release()}",
        "cpu_model": _cpu_model(),
        "cpu_cores": psutil.cpu_count(logical=False) or os.cpu_count() or 0,
        "cpu_threads": psutil.cpu_count(logical=True) or os.cpu_count() or 0,
        "ram_bytes": int(psutil.virtual_memory().total),
        "gpus": _gpu_names(),
    }


@lru_cache(maxsize=1)
def build_info() -> dict[str, Any]:
    import llama_cpp

    try:
        system = llama_cpp.llama_print_system_info().decode("utf-8", errors="replace")
    except Exception:  # noqa: BLE001
        system = ""
    flags = [
        part.split("=")[0].strip()
        for chunk in system.split("|")
        for part in [chunk.split(":")[-1]]
        if part.strip().endswith("= 1")
    ]
    return {
        "llama_cpp_python": getattr(llama_cpp, "__version__", "unknown"),
        "system_info": system.strip(" |"),
        "build_flags": flags,
        "gpu_offload": bool(llama_cpp.llama_supports_gpu_offload()),
        "python": platform.python_version(),
    }


# --- writing and reading ---------------------------------------------------------------------
@dataclass
class ResultRow:
    profile: str
    test: str
    value: float | None
    unit: str = ""
    model: str = ""
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class HistoryEntry:
    run_id: str
    kind: str
    created: str
    command: str
    profile: str
    model: str
    test: str
    value: float | None
    unit: str
    data: dict[str, Any]
    machine: dict[str, Any]
    build: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def save_run(kind: str, rows: list[ResultRow], command: str = "", path: Path | None = None) -> str:
    """Store one command's results; returns the run id. A history that cannot take them (a
    full disk) is a WorkstationError: the commands print their results first, then save."""
    try:
        return _save_run(kind, rows, command, path)
    except (sqlite3.Error, OSError) as err:
        raise WorkstationError(f"The results were not kept in the history {path or db_path()} "
                               f"({getattr(err, 'strerror', None) or err}).") from None
    except SchemaError as err:  # it cannot be opened (a damaged file): said as "not kept" too
        raise WorkstationError(f"The results were not kept: {str(err)[0].lower()}{str(err)[1:]}") from None


def save_printed_run(kind: str, rows: list[ResultRow], command: str) -> None:
    """``save_run`` for results already printed (bench, eval, quantize --kld): saved after the
    table, so that a history that cannot take them (a full disk) no longer loses a run's
    minutes of measuring with "unexpected error: OperationalError"."""
    try:
        save_run(kind, rows, command)
    except WorkstationError as err:
        raise WorkstationError(f"{err} They are printed above.") from None


def _save_run(kind: str, rows: list[ResultRow], command: str, path: Path | None) -> str:
    run_id = uuid.uuid4().hex
    created = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    conn = _connect(path)
    try:
        with conn:
            conn.execute(
                "INSERT INTO runs(run_id, kind, created, command, machine, build) VALUES (?,?,?,?,?,?)",
                (run_id, kind, created, command, json.dumps(machine_info()), json.dumps(build_info())),
            )
            conn.executemany(
                "INSERT INTO results(run_id, profile, model, test, value, unit, data) VALUES (?,?,?,?,?,?,?)",
                [
                    (run_id, r.profile, r.model, r.test, r.value, r.unit,
                     json.dumps(r.data, ensure_ascii=False, default=str))
                    for r in rows
                ],
            )
    finally:
        conn.close()
    return run_id


def history(
    kind: str | None = None,
    profile: str | None = None,
    test: str | None = None,
    limit: int = 200,
    path: Path | None = None,
) -> list[HistoryEntry]:
    """Saved results, newest run first; within a run, in the order they were saved."""
    if path is None and not db_path().exists():
        return []
    where, params = [], []
    for column, value in (("runs.kind", kind), ("results.profile", profile), ("results.test", test)):
        if value is not None:
            where.append(f"{column} = ?")
            params.append(value)
    sql = (
        "SELECT runs.run_id, kind, created, command, machine, build, profile, model, test, value, "
        "unit, data FROM results JOIN runs ON runs.run_id = results.run_id"
        + (" WHERE " + " AND ".join(where) if where else "")
        + " ORDER BY runs.rowid DESC, results.id ASC LIMIT ?"
    )
    params.append(limit)
    conn = _connect(path)
    try:
        rows = conn.execute(sql, params).fetchall()
    finally:
        conn.close()
    entries = [
        HistoryEntry(
            run_id=r["run_id"], kind=r["kind"], created=r["created"], command=r["command"],
            profile=r["profile"], model=r["model"], test=r["test"], value=r["value"],
            unit=r["unit"], data=json.loads(r["data"]), machine=json.loads(r["machine"]),
            build=json.loads(r["build"]),
        )
        for r in rows
    ]
    return entries
