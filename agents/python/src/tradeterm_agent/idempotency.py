"""Idempotency keys of trade commands, kept on disk across reconnects and
restarts.

A trade command with an ``idempotency_key`` is executed once: the outcome
(a result, or a ``TRADE_REJECTED`` error: the trade server's definite answer)
is written to a small JSON file before the response goes out, and a later
command with the same key returns it without touching the terminal. A key
is marked *pending* on disk before ``order_send`` is called; finding a pending
mark left by an earlier process (the bridge died while the order was out)
means the outcome is unknown, and the bridge refuses to send again
(``INTERNAL``, "check positions") rather than risk a double execution.
Records are kept 24 hours.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, Optional

log = logging.getLogger("tradeterm_agent.idempotency")

#: Records older than this are forgotten (the REST API keeps its records as long).
TTL_MS = 24 * 3600 * 1000
#: At most this many records (oldest dropped first).
MAX_ENTRIES = 10_000
#: Longest key accepted (the REST API allows 255 printable characters).
KEY_MAX = 255


def _now_ms() -> int:
    return int(time.time() * 1000)


class IdempotencyStore:
    """Outcomes by ``"<cmd>:<key>"``, persisted as JSON (``None`` path: memory only)."""

    def __init__(self, path: Optional[Path]) -> None:
        self.path = path
        self.entries: Dict[str, Dict[str, Any]] = {}
        self._locks: Dict[str, asyncio.Lock] = {}
        # Keys marked pending by this process (a pending mark from an earlier
        # process means: outcome unknown).
        self._mine: set = set()
        self._load()

    def _load(self) -> None:
        if self.path is None or not self.path.exists():
            return
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            entries = data.get("entries", {})
            if isinstance(entries, dict):
                self.entries = {k: v for k, v in entries.items() if isinstance(v, dict)}
        except (OSError, ValueError) as e:
            log.error("idempotency file %s unreadable (%s); starting empty", self.path, e)
        self._purge()

    def _purge(self) -> None:
        cutoff = _now_ms() - TTL_MS
        self.entries = {k: v for k, v in self.entries.items() if int(v.get("t", 0)) >= cutoff}
        if len(self.entries) > MAX_ENTRIES:
            keep = sorted(self.entries.items(), key=lambda kv: int(kv[1].get("t", 0)))[-MAX_ENTRIES:]
            self.entries = dict(keep)

    def _save(self) -> None:
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps({"version": 1, "entries": self.entries}, separators=(",", ":"))
        fd, tmp = tempfile.mkstemp(prefix=".idem-", dir=str(self.path.parent))
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, str(self.path))
        except OSError:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise

    def lock(self, full_key: str) -> asyncio.Lock:
        """The lock that serialises commands with one key (a retry waits for the first)."""
        lk = self._locks.get(full_key)
        if lk is None:
            lk = self._locks[full_key] = asyncio.Lock()
        return lk

    def get(self, full_key: str) -> Optional[Dict[str, Any]]:
        """The record of a key: ``{"fp", "state": "pending"|"done", "outcome"?, "t"}``."""
        return self.entries.get(full_key)

    def pending_from_earlier_process(self, full_key: str) -> bool:
        """Whether the key's pending mark was left by an earlier process."""
        e = self.entries.get(full_key)
        return e is not None and e.get("state") == "pending" and full_key not in self._mine

    def begin(self, full_key: str, fingerprint: str) -> None:
        """Marks a key pending (on disk) before the trade goes out."""
        self._purge()
        self.entries[full_key] = {"fp": fingerprint, "state": "pending", "t": _now_ms()}
        self._mine.add(full_key)
        self._save()

    def finish(self, full_key: str, fingerprint: str, outcome: Dict[str, Any]) -> None:
        """Records a definite outcome (``{"result": ...}`` or ``{"error": ...}``)."""
        self.entries[full_key] = {"fp": fingerprint, "state": "done", "outcome": outcome, "t": _now_ms()}
        self._mine.discard(full_key)
        self._save()

    def release(self, full_key: str) -> None:
        """Forgets a key whose attempt failed before reaching the trade server."""
        self.entries.pop(full_key, None)
        self._mine.discard(full_key)
        self._save()
