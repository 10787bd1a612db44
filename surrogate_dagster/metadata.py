"""Small helpers that turn counts into readable Dagster metadata (Markdown tables, plots)."""

from __future__ import annotations

import base64
import io
from collections.abc import Mapping


def counts_table(counts: Mapping[str, int | float], key: str = "reason", value: str = "rows") -> str:
    """A Markdown table of counts, largest first ("none" when empty)."""
    if not counts:
        return "_none_"
    lines = [f"| {key} | {value} |", "|---|---:|"]
    for k, v in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        lines.append(f"| {k} | {v} |")
    return "\n".join(lines)


def png_markdown(fig) -> str:
    """Embed a matplotlib figure as a Markdown image (the UI renders it inline)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80, bbox_inches="tight")
    return f"![plot](data:image/png;base64,{base64.b64encode(buf.getvalue()).decode()})"


# Python type of a stored value -> the column type shown in the UI's column schema.
_TYPE_NAMES = {str: "string", bool: "bool", int: "int", float: "float", list: "list", dict: "struct",
               bytes: "binary"}


class ColumnTypes:
    """{column: (type, nullable)} accumulated one row at a time (a mixture streams its rows)."""

    def __init__(self) -> None:
        self.rows = 0
        self._seen: dict[str, set[str]] = {}
        self._nulls: dict[str, int] = {}
        self._present: dict[str, int] = {}

    def add(self, row: Mapping) -> None:
        self.rows += 1
        for name, value in row.items():
            types = self._seen.setdefault(name, set())
            self._present[name] = self._present.get(name, 0) + 1
            if value is None:
                self._nulls[name] = self._nulls.get(name, 0) + 1
            else:
                types.add(_TYPE_NAMES.get(type(value), type(value).__name__))

    def result(self) -> dict[str, tuple[str, bool]]:
        return {name: ("|".join(sorted(types)) or "null",
                       self._nulls.get(name, 0) > 0 or self._present[name] < self.rows)
                for name, types in self._seen.items()}


def column_types(rows: list[Mapping]) -> dict[str, tuple[str, bool]]:
    """{column: (type, nullable)} over rows, columns in first-seen order. A column holding several
    types reads "int|float"; one holding only None reads "null"; nullable means some row has None
    there or lacks the column."""
    acc = ColumnTypes()
    for row in rows:
        acc.add(row)
    return acc.result()


def table_metadata_of(types: ColumnTypes) -> dict[str, object]:
    """`dagster/row_count` and `dagster/column_schema` from rows already counted by `types`."""
    from dagster import MetadataValue, TableColumn, TableColumnConstraints, TableSchema

    columns = [TableColumn(name, kind, constraints=TableColumnConstraints(nullable=nullable))
               for name, (kind, nullable) in types.result().items()]
    return {"dagster/row_count": MetadataValue.int(types.rows),
            "dagster/column_schema": MetadataValue.table_schema(TableSchema(columns=columns))}


def table_metadata(rows: list[Mapping]) -> dict[str, object]:
    """Dagster's standard table metadata for rows: `dagster/row_count` and `dagster/column_schema`."""
    acc = ColumnTypes()
    for row in rows:
        acc.add(row)
    return table_metadata_of(acc)


def attach_table_metadata(rows: "list[Mapping] | ColumnTypes") -> bool:
    """Add `table_metadata(rows)` to the materialization of the asset being executed; the writers of
    the main table of an asset call it, so the assets do not each repeat it. Outside an asset
    execution (a script, a benchmark, a plain-function test) there is nothing to attach to:
    returns False."""
    from dagster import AssetExecutionContext, DagsterInvariantViolationError

    try:
        context = AssetExecutionContext.get()
    except DagsterInvariantViolationError:  # no asset is executing
        return False
    context.add_output_metadata(table_metadata_of(rows) if isinstance(rows, ColumnTypes) else table_metadata(rows))
    return True
