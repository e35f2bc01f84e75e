"""The posting service the LangGraph examples publish through (`langgraph_plain.py`,
`langgraph_adopted.py`). It lives outside the graph, as a real one would (a JSON-lines file
here, an HTTP API in production), and like most APIs with side effects it takes an optional
idempotency key: a key it has seen is answered with the first result, and `lookup` says what a
key was answered with, if anything."""

from __future__ import annotations

import json
import os
import pathlib
from typing import Any, Optional


class Posts:
    def __init__(self, path: str) -> None:
        self.path = pathlib.Path(path)
        self.path.touch()

    def entries(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.path.read_text().splitlines() if line]

    def published(self) -> list[int]:
        """Every post published, in order, repeats included."""
        return [e["post"] for e in self.entries()]

    def lookup(self, idempotency_key: str) -> Optional[str]:
        return next((e["result"] for e in self.entries() if e["key"] == idempotency_key), None)

    def publish(self, post: int, idempotency_key: Optional[str] = None) -> str:
        if idempotency_key is not None:
            found = self.lookup(idempotency_key)
            if found is not None:
                return found
        result = f"post {post} published (#{len(self.entries()) + 1})"
        with open(self.path, "a") as f:
            f.write(json.dumps({"post": post, "key": idempotency_key, "result": result}) + "\n")
            f.flush()
            os.fsync(f.fileno())
        return result
