"""Convert a mirrored source to normalized rows with its adapter; quarantine what won't convert.

Pure logic (no Dagster): the `normalized_rows` asset calls `normalize_source`. Output goes to
normalized/<source>/<revision>/{rows,quarantine}.parquet (keys: storage/layout.py); the
quarantine table keeps the native row (as JSON) and the reason, so nothing is lost. Each row goes
through adapters/guard.py, so a row that crashes, hangs or nests too deep is one quarantine row,
never a failed partition; only a catalog mistake (`CatalogError`) fails it.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from ..catalog.models import SourceSpec
from ..metadata import attach_table_metadata
from ..storage.layout import normalized_pointer, normalized_table, success_marker
from ..storage.markers import iter_marker_rows
from ..storage.object_store import ObjectStore
from ..storage.parquet_io import parquet_bytes_to_rows, rows_to_parquet_bytes
from .adapters import AdapterContext, Quarantine, registry
from .adapters.base import NORMALIZED_COLUMNS
from .adapters.guard import ROW_BUDGET_S, convert_row
from .mirror import read_latest

__all__ = ["NORMALIZED_COLUMNS", "NormalizeReport", "normalize_source", "read_normalized"]


@dataclass
class NormalizeReport:
    source: str
    revision: str
    rows_in: int
    rows_out: int
    quarantined: dict[str, int] = field(default_factory=dict)
    duplicate_ids: int = 0
    key: str = ""
    quarantine_key: str | None = None
    seconds: float = 0.0


def iter_raw_rows(store: ObjectStore, source: str) -> tuple[str, Iterator[dict]]:
    """The latest mirrored revision of `source` and an iterator over its rows, checked against
    the mirror's `_SUCCESS.json` (every listed part present, the marker's row count; a short or
    missing part raises IncompleteData naming the marker after the last row)."""
    latest = read_latest(store, source)
    return latest["revision"], iter_marker_rows(store, success_marker(latest["prefix"]))


HELPER_CASE_COLUMNS = ("input_output", "starter_code")


def load_helper_questions(store: ObjectStore, helpers: list[SourceSpec]) -> Callable[[str, str, int], str | None]:
    """Index the helper mirrors (TACO, APPS, ...) by each row's id for OpenCodeReasoning-2's rebuild."""
    from .ocr2_questions import build_question_index

    by_dataset: dict[str, list[dict]] = {}
    for h in helpers:
        _, rows = iter_raw_rows(store, h.name)
        # TACO/APPS also mirror their test cases (GBs upstream) for exec-graded prompts; not held here
        by_dataset[h.hf_id] = [{k: v for k, v in r.items() if k not in HELPER_CASE_COLUMNS} for r in rows]
    index = build_question_index(by_dataset)
    # None: no helper row has that id; "": the row exists without a statement.
    return lambda dataset, split, i: index.get((dataset, split, i))


def normalize_source(spec: SourceSpec, store: ObjectStore, ctx_options: dict | None = None,
                     helper_questions: Callable[[str, str, int], str | None] | None = None,
                     log: Callable[[str], Any] = print, row_budget_s: float = ROW_BUDGET_S) -> NormalizeReport:
    """Run `spec.adapter` over the mirrored rows; write rows and quarantine tables.

    Every row gets at most `row_budget_s` seconds of adapter time (over it: `adapter_timeout`).
    """
    t0 = time.monotonic()
    adapters = registry()
    if spec.adapter not in adapters:
        raise KeyError(f"source {spec.name}: adapter {spec.adapter!r} is not registered "
                       f"(known: {', '.join(sorted(adapters))})")
    adapt = adapters[spec.adapter]
    revision, rows = iter_raw_rows(store, spec.name)
    out: list[dict] = []
    quarantine: list[dict] = []
    reasons: Counter[str] = Counter()
    seen_ids: set[str] = set()
    dup_ids = 0
    n_in = 0
    for row in rows:
        n_in += 1
        config = row.pop("_config", "default")
        split = row.pop("_split", "train")
        index = row.pop("_index", n_in - 1)
        ctx = AdapterContext(source=spec.name, config=config, options={"split": split, **(ctx_options or {})})
        if helper_questions is not None:
            ctx.helper_questions = helper_questions
        try:
            norm = convert_row(adapt, row, ctx, row_budget_s)
        except Quarantine as q:
            record = _quarantine_record(spec.name, config, split, index, q, row)
            reasons[record["reason"]] += 1
            quarantine.append(record)
            continue
        # Ids must be unique within a partition: later steps key on (source, id).
        if norm["id"] in seen_ids:
            dup_ids += 1
            norm["id"] = f"{norm['id']}#{index}"
        seen_ids.add(norm["id"])
        out.append(norm)
    key = normalized_table(spec.name, revision, "rows")
    store.put_bytes(key, rows_to_parquet_bytes(out) if out else _empty_table())
    attach_table_metadata(out)
    qkey = None
    if quarantine:
        qkey = normalized_table(spec.name, revision, "quarantine")
        store.put_bytes(qkey, rows_to_parquet_bytes(quarantine))
    report = NormalizeReport(source=spec.name, revision=revision, rows_in=n_in, rows_out=len(out),
                             quarantined=dict(reasons), duplicate_ids=dup_ids, key=key,
                             quarantine_key=qkey, seconds=round(time.monotonic() - t0, 3))
    store.put_bytes(normalized_pointer(spec.name), json.dumps(asdict(report)).encode())
    log(f"{spec.name}: {n_in} rows in, {len(out)} out, {sum(reasons.values())} quarantined {dict(reasons)}")
    errors = {r: n for r, n in reasons.items() if r.startswith("adapter_")}
    if errors:  # each is an adapter bug or an input nobody foresaw: worth a look in the table
        log(f"{spec.name}: adapter failures {errors}; raw rows and messages in {qkey}")
    return report


def _quarantine_record(source: str, config: Any, split: Any, index: Any, q: Quarantine, row: dict) -> dict:
    """One quarantine-table row: where the row came from, why, and the raw row as JSON.

    Reason and detail come from arbitrary input (an exception message may quote the row), so
    they are made writable: a lone surrogate becomes its ``\\udXXX`` escape.
    """
    return {"source": source, "config": config, "split": split, "index": index,
            "reason": _writable(str(q.reason))[:200], "detail": _writable(str(q.detail))[:500],
            "row_json": _row_json(row)}


def _writable(text: str) -> str:
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _row_json(row: dict) -> str:
    """The raw row as JSON text Parquet can store, losslessly.

    Non-ASCII stays readable; a row holding lone surrogates is written with ASCII escapes (valid
    JSON that decodes back to the same string). A row nested past the encoder's recursion limit
    is encoded iteratively.
    """
    for ascii_only in (False, True):
        try:
            text = json.dumps(row, default=str, ensure_ascii=ascii_only)
        except (RecursionError, TypeError):  # TypeError: a key json refuses (the iteration str()s it)
            text = _dumps_iterative(row, ensure_ascii=ascii_only)
        if ascii_only or _writable(text) == text:
            return text
    raise AssertionError("unreachable")


def _dumps_iterative(value: Any, ensure_ascii: bool) -> str:
    """``json.dumps(value, default=str)`` with an explicit stack instead of recursion (and any
    dict key written as text)."""
    out: list[str] = []
    stack: list[Any] = [value]
    close = object()  # marks a literal piece of text on the stack
    while stack:
        item = stack.pop()
        if isinstance(item, tuple) and item and item[0] is close:
            out.append(item[1])
        elif isinstance(item, dict):
            parts: list[Any] = [(close, "}")]
            for i, (k, v) in enumerate(reversed(list(item.items()))):
                key = k if isinstance(k, str) else json.dumps(k, default=str)
                parts += [v, (close, json.dumps(str(key), ensure_ascii=ensure_ascii) + ": ")]
                if i < len(item) - 1:
                    parts.append((close, ", "))
            stack += parts + [(close, "{")]
        elif isinstance(item, (list, tuple)):
            parts = [(close, "]")]
            for i, v in enumerate(reversed(item)):
                parts.append(v)
                if i < len(item) - 1:
                    parts.append((close, ", "))
            stack += parts + [(close, "[")]
        else:
            out.append(json.dumps(item, default=str, ensure_ascii=ensure_ascii))
    return "".join(out)


def _empty_table() -> bytes:
    """An empty partition still gets a file with the normalized schema (downstream reads it)."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    msg = pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))
    schema = pa.schema([("id", pa.string()), ("source", pa.string()), ("kind", pa.string()),
                        ("messages", msg), ("prompt", msg), ("chosen", pa.string()),
                        ("rejected", pa.string()), ("tools", pa.string()), ("meta", pa.string())])
    buf = io.BytesIO()
    pq.write_table(schema.empty_table(), buf)
    return buf.getvalue()


def read_normalized(store: ObjectStore, source: str) -> tuple[str, list[dict]]:
    """Latest normalized rows of a source (revision, rows)."""
    key = normalized_pointer(source)
    if not store.exists(key):
        raise FileNotFoundError(f"source {source!r} has not been normalized yet (no {key})")
    latest = json.loads(store.get_bytes(key))
    return latest["revision"], parquet_bytes_to_rows(store.get_bytes(latest["key"]))
