"""Request-hash response cache: a re-run never pays twice for the same request.

The Anthropic SDK sends no idempotency key (PITFALLS "Storage, APIs, sandboxes"), so a batch that
fails half way and is re-run would otherwise re-buy every response it already had. Every successful
response is stored under the SHA-256 of the canonical JSON of everything that determines it
(model, system, messages, tools, tool_choice, max_tokens, temperature); the next identical request is
answered from the store without any HTTP call and costs $0 in the ledger.

The store is anything with ``get_bytes(key)``, ``put_bytes(key, data)`` and ``exists(key)`` (the
project's ObjectStore, local or Wasabi), or a directory path (:class:`DirStore`).

An entry carries what its reply cost (``spend``: dollars, batch rate or not, the reservation record
it settles, see ``ledger.SpendJournal``), written in the same store write as the reply, and a
SHA-256 of the reply. An entry that cannot be read back (a failed integrity check, bad JSON, a
digest that does not match) is dropped and counted, and the request is sent again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Protocol

from ..storage.object_store import IntegrityError

log = logging.getLogger(__name__)

CACHE_PREFIX = "llm-cache"
CACHE_FORMAT = 2  # envelopes with ``spend`` and ``digest``
READABLE_FORMATS = (1, 2)  # format 1 (no spend, no digest): its cost was booked by its attempt's summary


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

    def list(self, prefix: str = "") -> list[str]:
        """Sorted keys starting with ``prefix`` (temp files of unfinished writes left out)."""
        out = []
        for path in self.root.rglob("*"):
            if path.is_file() and not path.name.startswith(".tmp-"):
                key = path.relative_to(self.root).as_posix()
                if key.startswith(prefix):
                    out.append(key)
        return sorted(out)

    def delete(self, key: str) -> None:
        """Remove ``key``; an absent key is not an error."""
        self._path(key).unlink(missing_ok=True)


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
        self.corrupt = 0  # entries that could not be read back (dropped, then refetched)

    def _key(self, key: str) -> str:
        return f"{self.prefix}/{key[:2]}/{key}.json"

    def _drop(self, skey: str) -> None:
        with self._lock:
            self.corrupt += 1
        delete = getattr(self.store, "delete", None)
        if callable(delete):
            try:
                delete(skey)
            except Exception as exc:  # noqa: BLE001 - the refetched reply overwrites it anyway
                log.warning("could not drop corrupt cache entry %s: %s", skey, exc)

    def _envelope(self, key: str, drop: bool = True) -> dict[str, Any] | None:
        """The valid envelope stored for ``key``; None on a miss or a corrupt entry (dropped when
        ``drop``: the caller will buy the reply again and overwrite it)."""
        skey = self._key(key)
        try:
            if not self.store.exists(skey):
                return None
            env = json.loads(self.store.get_bytes(skey))
        except (FileNotFoundError, LookupError):
            return None  # deleted between exists() and the read (the ObjectStore's MissingObject)
        except (ValueError, IntegrityError) as exc:
            # Bad bytes (bad JSON or UTF-8, a failed SHA-256 check): this entry will never read
            # back, so it is dropped and the reply bought again. Transport errors (OSError) are
            # raised instead: the entry may be fine and dropping it would pay twice.
            log.warning("cache entry %s unreadable (%s)", skey, type(exc).__name__)
            if drop:
                self._drop(skey)
            return None
        ok = isinstance(env, dict) and env.get("format") in READABLE_FORMATS and env.get("key") == key \
            and isinstance(env.get("response"), dict) and isinstance(env["response"].get("usage"), dict)
        if ok and env["format"] >= 2:
            ok = env.get("digest") == response_digest(env["response"]) and isinstance(env.get("spend"), dict)
        if not ok:
            log.warning("cache entry %s fails its checks", skey)
            if drop:
                self._drop(skey)
            return None
        return env

    def get(self, key: str) -> dict[str, Any] | None:
        """The cached response body for ``key``, or None on a miss or a corrupt (dropped) entry."""
        env = self._envelope(key)
        return None if env is None else env["response"]

    def spend_of(self, key: str) -> dict[str, Any] | None:
        """The ``spend`` written with the entry for ``key`` (None: no entry, a corrupt one, left in
        place for the client to drop, or a format-1 one)."""
        env = self._envelope(key, drop=False)
        return None if env is None else env.get("spend")

    def put(self, key: str, response: dict[str, Any], model: str, spend: dict[str, Any] | None = None) -> None:
        """Store a validated response body (callers never cache errors or malformed replies) with
        what it cost: ``spend`` is ``{"usd", "batch", "reservation"}`` (the reservation record
        the reply settles, None when the client keeps no journal)."""
        spend = dict(spend or {"usd": None, "batch": False, "reservation": None})
        env = {"format": CACHE_FORMAT, "key": key, "model": model, "stored_at": time.time(),
               "response": response, "digest": response_digest(response), "spend": spend}
        # Not canonical_json: key order inside tool_use inputs is part of the reply (it becomes the
        # trained text), so a cache hit must give back exactly what the API sent.
        self.store.put_bytes(self._key(key), json.dumps(env, ensure_ascii=False, allow_nan=False).encode())


def response_digest(response: dict[str, Any]) -> str:
    """SHA-256 of a response body (its key order kept), checked when the entry is read back."""
    return hashlib.sha256(json.dumps(response, ensure_ascii=False, allow_nan=False).encode()).hexdigest()
