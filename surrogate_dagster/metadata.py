"""Small helpers that turn counts into readable Dagster metadata (Markdown tables, plots).

The plots are PNGs embedded in Markdown (``MetadataValue.md``), opened from the asset's metadata in
the UI; each starts with a bold caption, so what it shows is named before the picture. The figures a
person trends over materializations go in as numbers beside them (``MetadataValue.int/float``): only
numbers reach the UI's Plots tab.
"""

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


def png_markdown(fig, caption: str | None = None) -> str:
    """Embed a matplotlib figure as a Markdown image (the UI renders it inline), after a bold
    caption when one is given (the image's alt text then names it too)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80, bbox_inches="tight")
    image = f"![{caption or 'plot'}](data:image/png;base64,{base64.b64encode(buf.getvalue()).decode()})"
    return f"**{caption}**\n\n{image}" if caption else image


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # no display: figures are only rendered to PNG
    import matplotlib.pyplot as plt

    return plt


def _finish(plt, fig, caption: str) -> str:
    md = png_markdown(fig, caption)
    plt.close(fig)
    return md


def funnel_plot(steps: Mapping[str, int], caption: str) -> str | None:
    """Rows left after each step, first step on top, each bar labelled with its count and its share
    of the first step's rows (None when there are no steps)."""
    if not steps:
        return None
    plt = _pyplot()
    names, values = list(steps), [int(v) for v in steps.values()]
    fig, ax = plt.subplots(figsize=(7, 0.9 + 0.45 * len(names)))
    ax.barh(range(len(names)), values, color="#4c72b0")
    first = values[0] or 1
    for i, v in enumerate(values):
        ax.text(v, i, f" {v} ({v / first:.0%})", va="center", fontsize=8)
    ax.set_yticks(range(len(names)), names)
    ax.invert_yaxis()
    ax.set_xlabel("rows")
    ax.set_xlim(0, max(values + [1]) * 1.25)
    return _finish(plt, fig, caption)


def bar_plot(values: Mapping[str, float], caption: str, xlabel: str = "rows", limit: float | None = None,
             limit_label: str = "limit", percent: bool = False) -> str | None:
    """Horizontal bars, largest first; with ``limit``, a dashed line there and the bars above it in
    red (None when there are no values)."""
    if not values:
        return None
    plt = _pyplot()
    items = sorted(values.items(), key=lambda kv: (-kv[1], kv[0]))
    names, nums = [k for k, _ in items], [float(v) for _, v in items]
    fig, ax = plt.subplots(figsize=(7, 0.9 + 0.4 * len(names)))
    colors = ["#c44e52" if limit is not None and v > limit else "#4c72b0" for v in nums]
    ax.barh(range(len(names)), nums, color=colors)
    for i, v in enumerate(nums):
        ax.text(v, i, f" {v:.1%}" if percent else f" {v:g}", va="center", fontsize=8)
    if limit is not None:
        ax.axvline(limit, color="#c44e52", linestyle="--", linewidth=1, label=f"{limit_label} {limit:g}")
        ax.legend(fontsize=8, loc="lower right")
    ax.set_yticks(range(len(names)), names)
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    ax.set_xlim(0, max(nums + ([limit] if limit is not None else []) + [1e-9]) * 1.25)
    return _finish(plt, fig, caption)


def histogram_plot(counts: Mapping[str | int | float, int], caption: str, xlabel: str,
                   threshold: float | None = None, threshold_label: str = "threshold",
                   bin_width: float | None = None) -> str | None:
    """Bars of counts per bin (bins sorted by value), a dashed line at ``threshold`` (None when empty).
    Without ``bin_width`` a key is a bin's centre (a rounded value); with it, a key is the bin's
    lower edge and the bar spans [key, key + bin_width), ticks on the edges."""
    if not counts:
        return None
    plt = _pyplot()
    bins = sorted((float(k), int(v)) for k, v in counts.items())
    fig, ax = plt.subplots(figsize=(6, 3))
    if bin_width:
        ax.bar([b for b, _ in bins], [n for _, n in bins], width=0.95 * bin_width, align="edge", color="#4c72b0")
        edges = sorted({b for b, _ in bins} | {b + bin_width for b, _ in bins})
        ax.set_xticks(edges, [f"{e:g}" for e in edges])
    else:
        ax.bar([b for b, _ in bins], [n for _, n in bins], width=0.8, color="#4c72b0")
        if all(b.is_integer() for b, _ in bins):  # integer bins (rounded scores): one tick per bin
            ax.set_xticks([b for b, _ in bins], [f"{b:g}" for b, _ in bins])
    if threshold is not None:
        ax.axvline(threshold, color="#c44e52", linestyle="--", linewidth=1, label=f"{threshold_label} {threshold:g}")
        ax.legend(fontsize=8)
    from matplotlib.ticker import MaxNLocator

    ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # rows are counted, never fractional
    ax.set_xlabel(xlabel)
    ax.set_ylabel("rows")
    return _finish(plt, fig, caption)


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
