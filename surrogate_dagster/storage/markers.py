"""Completion markers and pointers over the object store: checked reads and existence checks.

A table written in parts is committed by a marker (``<prefix>_SUCCESS.json`` = {"parts": [keys],
"rows": total, ...}) written after its parts; a pointer (``_latest.json``) names an object
written before it. Readers here verify what the marker promises (every listed part present, the
row count equal to the marker's), and ``uri_key`` / ``missing_outputs`` answer whether what a
recorded URI names is still in the store. Both file names come from layout.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from .layout import is_pointer, success_marker
from .object_store import IntegrityError, MissingObject, ObjectStore
from .parquet_io import parquet_bytes_to_rows

_POINTER_FIELDS = ("key", "dropped_key")  # fields of a pointer that name stored objects


class IncompleteData(IntegrityError):
    """A committed table disagrees with its marker or pointer (missing part, other row count)."""

    def __init__(self, key: str, expected: str, actual: str) -> None:
        IntegrityError.__init__(self, key, expected, actual)
        Exception.__init__(self, f"{key!r} promises {expected}, but the data holds {actual}")


def read_marker(store: ObjectStore, marker_key: str) -> dict[str, Any]:
    """The marker document, checked for its ``parts`` list and ``rows`` count."""
    doc = json.loads(store.get_bytes(marker_key))
    if not isinstance(doc, dict) or not isinstance(doc.get("parts"), list) or not isinstance(doc.get("rows"), int):
        raise IncompleteData(marker_key, "a 'parts' list and a 'rows' count", f"{sorted(doc) if isinstance(doc, dict) else doc!r}")
    return doc


def iter_marker_rows(store: ObjectStore, marker_key: str) -> Iterator[dict]:
    """Rows of every part the marker lists, in order; IncompleteData naming the marker when a
    listed part is missing or the rows read differ from the marker's count.

    The count is known only once every part is read, so the error comes after the last row:
    a consumer that stores its result after the loop never stores a short result.
    """
    doc = read_marker(store, marker_key)
    missing = [p for p in doc["parts"] if not store.exists(p)]
    if missing:
        raise IncompleteData(marker_key, f"{len(doc['parts'])} parts", f"{len(missing)} missing ({missing[0]} ...)")
    n = 0
    for part in doc["parts"]:
        rows = parquet_bytes_to_rows(store.get_bytes(part))
        n += len(rows)
        yield from rows
    if n != doc["rows"]:
        raise IncompleteData(marker_key, f"{doc['rows']} rows", f"{n} rows in {len(doc['parts'])} listed parts")


def marker_keys(store: ObjectStore, marker_key: str) -> list[str]:
    """The marker and every part it lists (the keys a committed table needs)."""
    return [marker_key, *read_marker(store, marker_key)["parts"]]


def uri_key(store: ObjectStore, uri: str) -> str | None:
    """The store key (or key prefix, ending in '/') a URI names, or None if it is not in this store."""
    root = store.uri("k")[:-1]  # the URI of the store's root, ending in '/'
    if not isinstance(uri, str) or not uri.startswith(root) or len(uri) == len(root):
        return None
    return uri[len(root):]


def missing_outputs(store: ObjectStore, keys: Iterable[str]) -> list[str]:
    """The keys (or prefixes, ending in '/') that are NOT committed in the store.

    A prefix with a success marker needs the marker and its parts; one without needs at least
    one committed key under it (a key that is no object counts as such a prefix). A pointer (``_latest.json``) needs the objects it names too.
    """
    absent: list[str] = []
    for key in keys:
        try:
            if key.endswith("/"):
                marker = success_marker(key)
                if store.exists(marker):
                    absent += [k for k in marker_keys(store, marker) if not store.exists(k)]
                elif not store.list(key):
                    absent.append(key)
            elif not store.exists(key):
                # A URI may name a folder-like prefix without its trailing '/' (a checkpoint's
                # adapter/ or merged/ tree): present when something is committed under it.
                if not store.list(key + "/"):
                    absent.append(key)
            elif is_pointer(key):
                doc = json.loads(store.get_bytes(key))
                named = [doc[f] for f in _POINTER_FIELDS if isinstance(doc, dict) and isinstance(doc.get(f), str)]
                absent += [k for k in named if not store.exists(k)]
        except (MissingObject, IntegrityError, ValueError):
            absent.append(key)
    return absent
