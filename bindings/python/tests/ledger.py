"""A tool's ledger kept outside the process that calls it: one JSON line per commit, flushed
to disk before the tool answers, so that a commit survives the caller's SIGKILL and can be
counted afterwards."""

from __future__ import annotations

import json
import os
import pathlib
from typing import Any, Mapping, Optional


class Ledger:
    def __init__(self, path: pathlib.Path) -> None:
        self.path = pathlib.Path(path)
        self.path.touch()

    def entries(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.path.read_text().splitlines() if line]

    def append(self, entry: Mapping[str, Any]) -> None:
        with open(self.path, "a") as f:
            f.write(json.dumps(entry) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def commits(self, tool: Optional[str] = None) -> int:
        return sum(1 for e in self.entries() if tool is None or e["tool"] == tool)


class DedupingTool:
    """The tool the kernel drives: commits a tool key once, answers the first result again."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    def query(self, tool_key: str) -> Optional[str]:
        return next((e["result"] for e in self.ledger.entries() if e.get("tool_key") == tool_key), None)

    def commit(self, tool_key: str, tool: str, args: Mapping[str, Any]) -> str:
        found = self.query(tool_key)
        if found is not None:
            return found
        result = f"{tool} done #{self.ledger.commits() + 1}"
        self.ledger.append({"tool_key": tool_key, "tool": tool, "args": dict(args), "result": result})
        return result
