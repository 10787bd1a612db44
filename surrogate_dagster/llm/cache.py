"""Request-hash response cache: a re-run never pays twice for the same request.

The Anthropic SDK sends no idempotency key (PITFALLS "Storage, APIs, sandboxes"), so a batch that
fails half way and is re-run would otherwise re-buy every response it already had. Every successful
response is stored under the SHA-256 of the canonical JSON of everything that determines it
(model, system, messages, tools, tool_choice, max_tokens, temperature); the next identical request is
answered from the store without any HTTP call and costs $0 in the ledger.

The store is anything with ``get_bytes(key)``, ``put_bytes(key, data)`` and ``exists(key)`` (the
project's ObjectStore, local or Wasabi), or a directory path (:class:`DirStore`).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Protocol

CACHE_PREFIX = "llm-cache"
CACHE_FORMAT = 1  # bump when the stored envelope changes; old entries then read as misses


class BytesStore(Protocol):
    """The slice of the ObjectStore interface the cache and the ledger book need."""

    def get_bytes(self, key: str) -> bytes: ...
    def put_bytes(self, key: str, data: bytes) -> Any: ...
    def exists(self, key: str) -> bool: ...


class DirStore:
    """A minimal BytesStore on a local directory; writes are atomic (temp file + rename)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        if key.startswith("/") or ".." in key.split("/"):
            raise ValueError(f"bad store key {key!r}")
        return self.root / key

    def get_bytes(self, key: str) -> bytes:
        """The stored bytes; FileNotFoundError when absent."""
        return self._path(key).read_bytes()

    def put_bytes(self, key: str, data: bytes) -> None:
        """Store ``data`` atomically, so a killed process never leaves a half-written entry."""
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def exists(self, key: str) -> bool:
        """True when ``key`` holds an entry."""
        return self._path(key).is_file()


def as_store(store: BytesStore | str | os.PathLike[str]) -> BytesStore:
    """A directory path becomes a :class:`DirStore`; a store object is checked and passed through."""
    if isinstance(store, (str, os.PathLike)):
        return DirStore(store)
    for name in ("get_bytes", "put_bytes", "exists"):
        if not callable(getattr(store, name, None)):
            raise TypeError(f"cache store {type(store).__name__} lacks {name}()")
    return store


def canonical_json(value: Any) -> str:
    """Deterministic JSON (sorted keys, no whitespace, no NaN) used for hashing requests."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def request_key(request: dict[str, Any]) -> str:
    """SHA-256 hex of the canonical JSON of the fields that determine a response.

    Only these fields count, so transport details (timeouts, headers, retries) never split the cache.
    """
    fields = ("model", "system", "messages", "tools", "tool_choice", "max_tokens", "temperature")
    missing = [f for f in ("model", "messages", "max_tokens") if f not in request]
    if missing:
        raise ValueError(f"request lacks {missing} needed for its cache key")
    return hashlib.sha256(canonical_json({f: request.get(f) for f in fields}).encode()).hexdigest()


class ResponseCache:
    """Responses keyed by :func:`request_key`, stored as JSON envelopes under ``llm-cache/``."""

    def __init__(self, store: BytesStore | str | os.PathLike[str], prefix: str = CACHE_PREFIX) -> None:
        self.store = as_store(store)
        self.prefix = prefix.strip("/")
        self._lock = threading.Lock()
        self.corrupt = 0  # entries that could not be read back (treated as misses, then rewritten)

    def _key(self, key: str) -> str:
        return f"{self.prefix}/{key[:2]}/{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The cached response body for ``key``, or None on a miss or an unreadable entry."""
        skey = self._key(key)
        if not self.store.exists(skey):
            return None
        try:
            env = json.loads(self.store.get_bytes(skey))
        except (ValueError, OSError, LookupError):
            # A corrupt entry must not poison the run: count it and refetch (the fresh response
            # overwrites it). LookupError covers the ObjectStore's MissingObject race.
            with self._lock:
                self.corrupt += 1
            return None
        if not isinstance(env, dict) or env.get("format") != CACHE_FORMAT or env.get("key") != key \
                or not isinstance(env.get("response"), dict):
            with self._lock:
                self.corrupt += 1
            return None
        return env["response"]

    def put(self, key: str, response: dict[str, Any], model: str) -> None:
        """Store a validated response body (callers never cache errors or malformed replies)."""
        env = {"format": CACHE_FORMAT, "key": key, "model": model, "stored_at": time.time(),
               "response": response}
        # Not canonical_json: key order inside tool_use inputs is part of the reply (it becomes the
        # trained text), so a cache hit must give back exactly what the API sent.
        self.store.put_bytes(self._key(key), json.dumps(env, ensure_ascii=False, allow_nan=False).encode())
