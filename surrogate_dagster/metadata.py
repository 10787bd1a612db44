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
