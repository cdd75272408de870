"""Callers a server process has just checked, so most requests need no database read.

A key and its account's plan are read from the database at most once per ``TTL_S`` per
process; a revoked key is refused by every process within that time. Half-way through, one
request starts reading the key again beside the others (``due``), so a busy key's entry is
renewed before it lapses, never by all its requests at once. The secret is checked on every
request all the same (its SHA-256 compared in constant time), so a wrong secret for a known
key id never matches an entry.
"""

from __future__ import annotations

import hmac
import threading
import time
from collections import OrderedDict

from fillpdf_provider.service.keys import Caller, bearer_key, secret_hash

#: How long a checked caller is trusted: the longest a revoked key keeps working.
TTL_S = 1.0
#: Keys remembered per process; the least recently used go first.
MAX_CALLERS = 4096


class CallerCache:
    """Key id -> (hash of its secret, caller, when it was read), for at most ``TTL_S``."""

    def __init__(self, ttl_s: float = TTL_S, size: int = MAX_CALLERS) -> None:
        self.ttl_s = ttl_s
        self.size = size
        self._entries: OrderedDict[str, tuple[str, Caller, float]] = OrderedDict()
        self._renewing: set[str] = set()
        self._lock = threading.Lock()  # filled from worker threads, read on the event loop

    def get(self, authorization: str | None) -> Caller | None:
        """The caller behind ``authorization`` if it was checked less than ``TTL_S`` ago."""
        match = bearer_key(authorization)
        if match is None:
            return None
        with self._lock:
            entry = self._entries.get(match["id"])
        if entry is None:
            return None
        stored, caller, read_at = entry
        if time.monotonic() - read_at >= self.ttl_s:
            return None
        if not hmac.compare_digest(stored, secret_hash(match["secret"])):
            return None
        return caller

    def due(self, caller: Caller) -> bool:
        """True once per half-life of ``caller``'s entry: this request renews it, in the
        background (``renewed`` when done)."""
        with self._lock:
            entry = self._entries.get(caller.key_id)
            if entry is None or caller.key_id in self._renewing:
                return False
            if time.monotonic() - entry[2] < self.ttl_s / 2:
                return False
            self._renewing.add(caller.key_id)
            return True

    def renewed(self, key_id: str, caller: Caller | None, read_at: float) -> None:
        """The key read again at ``read_at``: its entry renewed, or dropped if it was
        refused (revoked, or its account gone)."""
        with self._lock:
            self._renewing.discard(key_id)
            entry = self._entries.get(key_id)
            if entry is None:
                return
            if caller is None:
                del self._entries[key_id]
            elif entry[2] < read_at:
                self._entries[key_id] = (entry[0], caller, read_at)

    def put(self, authorization: str | None, caller: Caller, read_at: float) -> None:
        """Remember ``caller``, read from the database at ``read_at`` (``time.monotonic``)."""
        match = bearer_key(authorization)
        if match is None:
            return
        with self._lock:
            self._entries[match["id"]] = (secret_hash(match["secret"]), caller, read_at)
            self._entries.move_to_end(match["id"])
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
