"""Lossless rows <-> Parquet for heterogeneous, nested JSON-like rows.

Arrow's type inference is lossy for JSON-like data in several quiet ways: struct unification
adds ``None`` for keys a dict never had, ``[1, 2.5]`` becomes ``[1.0, 2.5]``, rows missing a
column come back with ``None``, and empty dicts cannot be written at all. Each column is
therefore converted on its own and checked by converting it back: any column that does not
survive exactly (or fails to convert) is stored as JSON text, and listed in the schema metadata
under ``json_columns``. In a JSON column a Parquet null means "key absent from this row"; a
Python None is the JSON text ``null``.

Accepted values: None, bool, int, float, str, list, dict with str keys, and bytes (only where the
column stays typed, since JSON has no bytes). Nested dict key order is kept; top-level keys come
back in column order (first-seen across rows).
"""

from __future__ import annotations

import io
import json
import math
from typing import Any

import importlib


class _LazyModule:
    """pyarrow costs ~0.3 s to import; definitions load without it (it is needed at run time)."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._mod = None

    def __getattr__(self, attr: str):
        if self._mod is None:
            self._mod = importlib.import_module(self._name)
        return getattr(self._mod, attr)


pa = _LazyModule("pyarrow")
pq = _LazyModule("pyarrow.parquet")

JSON_COLUMNS_META = b"json_columns"
NUM_ROWS_META = b"num_rows"  # keeps the row count when rows have no keys at all ([{}, {}])
_ABSENT = object()


def _same(a: Any, b: Any) -> bool:
    """Type-strict deep equality: 1 != 1.0, True != 1, dict key order matters, NaN == NaN."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float):
        if math.isnan(a):
            return math.isnan(b)
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    return a == b


def _check_json_value(value: Any, where: str) -> None:
    """Raise ValueError for values JSON cannot carry back exactly (tuples, bytes, numpy scalars...)."""
    t = type(value)
    if value is None or t in (bool, int, float, str):
        return
    if t is list:
        for i, item in enumerate(value):
            _check_json_value(item, f"{where}[{i}]")
        return
    if isinstance(value, dict):
        for k, item in value.items():
            if not isinstance(k, str):
                raise ValueError(f"{where}: dict key {k!r} is not a str")
            _check_json_value(item, f"{where}.{k}")
        return
    raise ValueError(
        f"{where}: value of type {t.__name__} cannot be stored losslessly (JSON-like values only)"
    )


def _parquet_writable(t: pa.DataType) -> bool:
    """Parquet cannot store a struct with no fields (an empty dict) anywhere in the type."""
    if pa.types.is_struct(t):
        return t.num_fields > 0 and all(_parquet_writable(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _parquet_writable(t.value_type)
    return True


def _typed_array(values: list[Any]) -> pa.Array | pa.ChunkedArray | None:
    """Arrow array for the column if it round-trips exactly, else None."""
    try:
        arr = pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError, TypeError):
        return None
    if not _parquet_writable(arr.type):
        return None
    back = arr.to_pylist()
    if all(_same(v, b) for v, b in zip(values, back)):
        return arr
    return None


def _json_array(name: str, values: list[Any]) -> pa.Array:
    out: list[str | None] = []
    for i, v in enumerate(values):
        if v is _ABSENT:
            out.append(None)
            continue
        _check_json_value(v, f"row {i} column {name!r}")
        out.append(json.dumps(v, ensure_ascii=False))
    return pa.array(out, type=pa.large_string())


def rows_to_parquet_bytes(rows: list[dict[str, Any]], compression: str = "zstd") -> bytes:
    """Serialize rows to Parquet bytes such that parquet_bytes_to_rows returns equal rows."""
    columns: dict[str, None] = {}
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise ValueError(f"row {i} is a {type(row).__name__}, not a dict")
        for k in row:
            if not isinstance(k, str):
                raise ValueError(f"row {i}: column name {k!r} is not a str")
            columns.setdefault(k)
    arrays: dict[str, pa.Array | pa.ChunkedArray] = {}
    json_cols: list[str] = []
    for name in columns:
        values = [row.get(name, _ABSENT) for row in rows]
        arr = None if any(v is _ABSENT for v in values) else _typed_array(values)
        if arr is None:
            arr = _json_array(name, values)
            json_cols.append(name)
        arrays[name] = arr
    table = pa.table(arrays) if arrays else pa.table({})
    meta = {JSON_COLUMNS_META: json.dumps(json_cols).encode(), NUM_ROWS_META: str(len(rows)).encode()}
    table = table.replace_schema_metadata(meta)
    buf = io.BytesIO()
    pq.write_table(table, buf, compression=compression)
    return buf.getvalue()


def _json_columns(schema: pa.Schema) -> list[str]:
    raw = (schema.metadata or {}).get(JSON_COLUMNS_META)
    return json.loads(raw) if raw else []


def parquet_bytes_to_rows(data: bytes) -> list[dict[str, Any]]:
    """Inverse of rows_to_parquet_bytes; plain Parquet files (no metadata) read as typed columns."""
    pf = pq.ParquetFile(io.BytesIO(bytes(data)))
    schema = pf.schema_arrow
    if not schema.names:
        # Rows without keys: the count lives in our metadata. Reading the zero-column table is
        # also avoided on purpose: with pyarrow 26 it can abort the interpreter at exit.
        meta = schema.metadata or {}
        return [{} for _ in range(int(meta.get(NUM_ROWS_META, pf.metadata.num_rows)))]
    table = pf.read()
    json_cols = set(_json_columns(schema))
    n = table.num_rows
    cols: list[tuple[str, list[Any]]] = []
    for name in table.column_names:
        values = table.column(name).to_pylist()
        if name in json_cols:
            values = [_ABSENT if v is None else json.loads(v) for v in values]
        cols.append((name, values))
    return [{name: vals[i] for name, vals in cols if vals[i] is not _ABSENT} for i in range(n)]


def parquet_schema_summary(data: bytes) -> dict[str, str]:
    """Column -> Arrow type string; JSON-encoded columns report 'json'."""
    schema = pq.read_schema(io.BytesIO(bytes(data)))
    json_cols = set(_json_columns(schema))
    return {f.name: "json" if f.name in json_cols else str(f.type) for f in schema}
