"""Per-source intermediate tables of the curation chain, versioned in the object store.

Layout: curation/<step>/<source>/<version>/{rows,dropped}.parquet and curation/<step>/<source>/_latest.json.
"""

from __future__ import annotations

import hashlib
import json

from ..storage import ObjectStore
from ..storage.parquet_io import parquet_bytes_to_rows, rows_to_parquet_bytes


# The step the curated synthesized sets are written under (curation/curated_synth/<set>/), and
# the asset that writes each (curated_<set>, in the synth group).
SYNTH_STEP = "curated_synth"


def curated_synth_asset(name: str) -> str:
    return f"curated_{name}"


def version_of(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def write_step(store: ObjectStore, step: str, source: str, version: str, rows: list[dict],
               dropped: list[dict] | None = None, summary: dict | None = None) -> str:
    """Store one step's output for one source; `_latest.json` is written last (commit point)."""
    prefix = f"curation/{step}/{source}/{version}/"
    key = prefix + "rows.parquet"
    store.put_bytes(key, rows_to_parquet_bytes(rows) if rows else _empty_rows())
    dkey = None
    if dropped:
        dkey = prefix + "dropped.parquet"
        store.put_bytes(dkey, rows_to_parquet_bytes(dropped))
    store.put_bytes(f"curation/{step}/{source}/_latest.json", json.dumps(
        {"version": version, "key": key, "dropped_key": dkey, "rows": len(rows),
         "summary": summary or {}}).encode())
    return key


def read_pointer(store: ObjectStore, step: str, source: str) -> dict:
    """The latest pointer of one step's output for one source (version, counts), without the rows."""
    latest_key = f"curation/{step}/{source}/_latest.json"
    if not store.exists(latest_key):
        raise FileNotFoundError(f"curation step {step!r} has no output for {source!r} yet ({latest_key})")
    return json.loads(store.get_bytes(latest_key))


def read_step(store: ObjectStore, step: str, source: str) -> tuple[dict, list[dict]]:
    """(latest pointer, rows) of one step's output for one source."""
    latest = read_pointer(store, step, source)
    data = store.get_bytes(latest["key"])
    rows = parquet_bytes_to_rows(data) if latest["rows"] else []
    return latest, rows


def _empty_rows() -> bytes:
    from ..sources.normalize import _empty_table

    return _empty_table()
