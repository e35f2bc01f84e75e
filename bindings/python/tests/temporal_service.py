"""The tool service the Temporal tests drive: a SQLite file outside every process (the tool's
ledger), so commits survive a SIGKILLed worker and a restarted server and can be counted.

``send_payment`` dedupes by tool key; ``send_email`` does not (a second commit under one key is
a second row: what a blind retry does). The resource's version is a row a test can move. A
trap file makes ``commit`` hang after the commit is on disk (the answer is not yet sent), so a
test can SIGKILL the worker there; ``delay_ms`` holds every answer back a random while, to widen
that window for the torture."""

from __future__ import annotations

import json
import os
import random
import sqlite3
import time
from typing import Any, Optional

NOT_DEDUPING = frozenset({"send_email"})


class LedgerService:
    def __init__(self, path: str, trap: Optional[str] = None, delay_ms: int = 0,
                 seed: int = 0) -> None:
        self.path, self.trap, self.delay_ms = path, trap, delay_ms
        self.random = random.Random(seed)
        with self._db() as db:
            db.execute("CREATE TABLE IF NOT EXISTS commits (seq INTEGER PRIMARY KEY "
                       "AUTOINCREMENT, tool_key TEXT NOT NULL, tool TEXT NOT NULL, args TEXT NOT "
                       "NULL, result TEXT NOT NULL)")
            db.execute("CREATE TABLE IF NOT EXISTS resource (id INTEGER PRIMARY KEY, version "
                       "INTEGER NOT NULL)")
            db.execute("INSERT OR IGNORE INTO resource VALUES (1, 0)")

    def _db(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, isolation_level=None, timeout=30)

    def commit(self, tool_key: str, tool: str, args: Any) -> str:
        with self._db() as db:
            db.execute("BEGIN IMMEDIATE")
            if tool not in NOT_DEDUPING:
                row = db.execute("SELECT result FROM commits WHERE tool_key = ? ORDER BY seq",
                                 (tool_key,)).fetchone()
                if row is not None:
                    db.execute("COMMIT")
                    return str(row[0])
            (n,) = db.execute("SELECT COUNT(*) FROM commits").fetchone()
            result = f"{tool} done #{n + 1}"
            db.execute("INSERT INTO commits (tool_key, tool, args, result) VALUES (?, ?, ?, ?)",
                       (tool_key, tool, json.dumps(args, sort_keys=True), result))
            db.execute("COMMIT")
        if self.delay_ms:
            time.sleep(self.random.uniform(0, self.delay_ms) / 1000)  # committed, not answered
        while self.trap is not None and os.path.exists(self.trap):
            time.sleep(0.05)  # committed, the answer not sent: a test kills the worker here
        return result

    def query(self, tool_key: str) -> Optional[str]:
        with self._db() as db:
            row = db.execute("SELECT result FROM commits WHERE tool_key = ? ORDER BY seq",
                             (tool_key,)).fetchone()
        return None if row is None else str(row[0])

    def resource_version(self) -> int:
        with self._db() as db:
            (v,) = db.execute("SELECT version FROM resource WHERE id = 1").fetchone()
        return int(v)

    def move_resource(self) -> None:
        with self._db() as db:
            db.execute("UPDATE resource SET version = version + 1 WHERE id = 1")

    def commits(self, tool_key: Optional[str] = None) -> list[dict[str, Any]]:
        with self._db() as db:
            rows = db.execute("SELECT tool_key, tool, args, result FROM commits ORDER BY seq"
                              ).fetchall()
        return [{"tool_key": k, "tool": t, "args": json.loads(a), "result": r}
                for k, t, a, r in rows if tool_key is None or k == tool_key]
