"""Per-source intermediate tables of the curation chain, versioned in the object store.

Layout (storage/layout.py): curation/<step>/<source>/<version>/{rows,dropped}.parquet and the
step's pointer curation/<step>/<source>/_latest.json.
The tables are written before the pointer, so the pointer always names stored tables; a read
checks the table's row count against the pointer's.
"""

from __future__ import annotations

import hashlib
import json

from ..metadata import attach_table_metadata
from ..storage import ObjectStore
from ..storage.layout import step_folder, step_pointer
from ..storage.markers import IncompleteData
from ..storage.parquet_io import parquet_bytes_to_rows, rows_to_parquet_bytes


# The step the curated synthesized sets are written under (curation/curated_synth/<set>/), and
# the asset that writes each (curated_<set>, in the synth group).
SYNTH_STEP = "curated_synth"


def curated_synth_asset(name: str) -> str:
    return f"curated_{name}"


def pointer_key(step: str, source: str) -> str:
    return step_pointer(step, source)


def version_of(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def write_step(store: ObjectStore, step: str, source: str, version: str, rows: list[dict],
               dropped: list[dict] | None = None, summary: dict | None = None) -> str:
    """Store one step's output for one source; `_latest.json` is written last (commit point).

    Inside an asset execution, the rows' count and column schema become the materialization's
    `dagster/row_count` and `dagster/column_schema`."""
    prefix = f"{step_folder(step, source)}/{version}/"
    key = prefix + "rows.parquet"
    store.put_bytes(key, rows_to_parquet_bytes(rows) if rows else _empty_rows())
    dkey = None
    if dropped:
        dkey = prefix + "dropped.parquet"
        store.put_bytes(dkey, rows_to_parquet_bytes(dropped))
    store.put_bytes(pointer_key(step, source), json.dumps(
        {"version": version, "key": key, "dropped_key": dkey, "rows": len(rows),
         "summary": summary or {}}).encode())
    attach_table_metadata(rows)
    return key


def read_pointer(store: ObjectStore, step: str, source: str) -> dict:
    """The latest pointer of one step's output for one source (version, counts), without the rows."""
    latest_key = pointer_key(step, source)
    if not store.exists(latest_key):
        raise FileNotFoundError(f"curation step {step!r} has no output for {source!r} yet ({latest_key})")
    return json.loads(store.get_bytes(latest_key))


def read_step(store: ObjectStore, step: str, source: str) -> tuple[dict, list[dict]]:
    """(latest pointer, rows) of one step's output for one source.

    Raises IncompleteData (naming the table's key) when the table holds another number of rows
    than the pointer recorded.
    """
    latest = read_pointer(store, step, source)
    data = store.get_bytes(latest["key"])
    rows = parquet_bytes_to_rows(data) if latest["rows"] else []
    if latest["rows"] and len(rows) != latest["rows"]:
        raise IncompleteData(latest["key"], f"{latest['rows']} rows (per {pointer_key(step, source)})",
                             f"{len(rows)} rows")
    return latest, rows


def _empty_rows() -> bytes:
    from ..sources.normalize import _empty_table

    return _empty_table()
