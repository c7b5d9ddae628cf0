"""SQLite storage under the embedded API server's Store: a revision log and the current objects.

Modelled on kine (k3s-io/kine ``pkg/drivers/sqlite``), which stands in for etcd the same way:
every write appends one row to ``log`` whose ``rev`` is the global resourceVersion (etcd's
mod_revision) and updates ``objects`` (the current state) in the same transaction. WAL mode:
a committed transaction is in the WAL file before the write is acknowledged, so it survives
``kill -9`` of the process; the Store decides when rows are committed (under an event loop,
the writes of one loop iteration share one transaction: a group commit), and rolls its memory
back when a commit fails. ``compact`` drops log rows a watch may no longer replay
(the apiserver compacts etcd every five minutes); ``objects`` keeps everything.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import orjson

from kubesched.api.watch import DELETED, WatchEvent
from kubesched.cluster.store import Loaded, is_namespaced
from kubesched.errors import InputError

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(k TEXT PRIMARY KEY, v INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS log(rev INTEGER PRIMARY KEY, type TEXT NOT NULL, kind TEXT NOT NULL, value BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS objects(
    kind TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL, rev INTEGER NOT NULL, value BLOB NOT NULL,
    PRIMARY KEY (kind, namespace, name));
"""


class SQLiteBackend:
    """A ``Backend`` in one SQLite file (WAL journal). A file that exists must be a store this
    server wrote: an empty, unreadable, read-only or corrupt one is refused with InputError
    naming it, and never overwritten. A new file is created readable by its owner only."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        file = Path(path)
        if file.exists() or file.is_symlink():
            if not file.is_file():
                raise InputError("not a regular file; it should hold the cluster's state", file=self.path)
            if file.stat().st_size == 0:
                raise InputError(
                    "empty (0 bytes): not a kubesched store; remove it to start an empty cluster", file=self.path
                )
        else:
            try:
                os.close(os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            except OSError as exc:
                raise InputError(f"cannot create the store: {exc.strerror or exc}", file=self.path) from None
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
        except sqlite3.Error as exc:
            raise InputError(f"cannot open the store: {exc}", file=self.path) from None
        self._rows: list[WatchEvent] = []

    def load(self) -> Loaded:
        try:
            return self._load()
        except (sqlite3.Error, orjson.JSONDecodeError, TypeError, ValueError) as exc:
            raise InputError(f"cannot read the store: {exc}", file=self.path) from None

    def _load(self) -> Loaded:
        db = self._db
        objects: list[tuple[str, dict[str, Any]]] = [
            (kind, orjson.loads(value)) for kind, value in db.execute("SELECT kind, value FROM objects ORDER BY rev")
        ]
        row = db.execute("SELECT v FROM meta WHERE k = 'compacted'").fetchone()
        compacted = int(row[0]) if row else 0
        last = db.execute("SELECT max(rev) FROM log").fetchone()[0] or 0
        log = [
            WatchEvent(type_, kind, orjson.loads(value), None, rev)
            for rev, type_, kind, value in db.execute(
                "SELECT rev, type, kind, value FROM log WHERE rev > ? ORDER BY rev", (compacted,)
            )
        ]
        return Loaded(objects, max(last, compacted), compacted, log)

    def append(self, ev: WatchEvent) -> None:
        """Record a write for the next ``flush`` (the Store's commit)."""
        self._rows.append(ev)

    def pending(self) -> bool:
        return bool(self._rows)

    def flush(self) -> None:
        """Commit every recorded write in one transaction; on any failure (disk full, read-only
        file, I/O error) nothing of them is in the file and the error is raised."""
        rows, self._rows = self._rows, []
        if not rows:
            return
        db = self._db
        db.execute("BEGIN")
        try:
            for ev in rows:
                meta = ev.obj.get("metadata") or {}
                ns = (meta.get("namespace") or "") if is_namespaced(ev.kind) else ""
                value = orjson.dumps(ev.obj)
                db.execute(
                    "INSERT INTO log(rev, type, kind, value) VALUES (?, ?, ?, ?)",
                    (ev.resource_version, ev.type, ev.kind, value),
                )
                if ev.type == DELETED:
                    db.execute(
                        "DELETE FROM objects WHERE kind = ? AND namespace = ? AND name = ?",
                        (ev.kind, ns, meta.get("name")),
                    )
                else:
                    db.execute(
                        "INSERT OR REPLACE INTO objects(kind, namespace, name, rev, value) VALUES (?, ?, ?, ?, ?)",
                        (ev.kind, ns, meta.get("name"), ev.resource_version, value),
                    )
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise

    def compact(self, rev: int) -> None:
        self.flush()
        db = self._db
        db.execute("BEGIN")
        db.execute("DELETE FROM log WHERE rev <= ?", (rev,))
        db.execute("INSERT OR REPLACE INTO meta(k, v) VALUES ('compacted', ?)", (rev,))
        db.execute("COMMIT")

    def close(self) -> None:
        self.flush()
        self._db.close()
