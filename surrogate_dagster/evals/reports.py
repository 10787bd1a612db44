"""Eval reports in the object store, and the views a person reads (Dagster-free).

Layout (the folder: storage/layout.py):
    evals/reports/<checkpoint>/<benchmark>/summary.json                 latest summary (commit point)
    evals/reports/<checkpoint>/<benchmark>/<revision>/summary.json      the same, per checkpoint revision
    evals/reports/<checkpoint>/<benchmark>/<revision>/samples.jsonl.gz  one row per sample
"""

from __future__ import annotations

import gzip
import json
import time
from typing import Any, Sequence

from ..metadata import png_markdown
from ..storage import ObjectStore
from ..storage.layout import EVAL_REPORTS
from .harness.common import EvalReport


def summary_key(checkpoint: str, bench: str) -> str:
    return f"{EVAL_REPORTS}/{checkpoint}/{bench}/summary.json"


def write_report(store: ObjectStore, checkpoint: str, bench: str, report: EvalReport,
                 checkpoint_info: dict[str, Any]) -> dict[str, Any]:
    """Store samples then summary (the latest pointer last); returns the summary."""
    rev = checkpoint_info.get("revision") or "unversioned"
    base = f"{EVAL_REPORTS}/{checkpoint}/{bench}/{rev}"
    samples = gzip.compress(report.samples_jsonl(), mtime=0)
    info = store.put_bytes(f"{base}/samples.jsonl.gz", samples, "application/gzip")
    summary = {**report.summary(), "checkpoint": checkpoint_info, "samples_key": info.key,
               "samples_sha256": info.sha256, "samples_uri": store.uri(info.key),
               "evaluated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    data = json.dumps(summary, default=str, indent=1).encode()
    store.put_bytes(f"{base}/summary.json", data, "application/json")
    store.put_bytes(summary_key(checkpoint, bench), data, "application/json")
    return summary


def read_summary(store: ObjectStore, checkpoint: str, bench: str) -> dict | None:
    key = summary_key(checkpoint, bench)
    return json.loads(store.get_bytes(key)) if store.exists(key) else None


def read_samples(store: ObjectStore, summary: dict) -> list[dict]:
    raw = gzip.decompress(store.get_bytes(summary["samples_key"]))
    return [json.loads(line) for line in raw.decode().splitlines() if line.strip()]


def collect(store: ObjectStore, checkpoints: Sequence[str], benches: Sequence[str]) -> dict[tuple[str, str], dict]:
    out = {}
    for c in checkpoints:
        for b in benches:
            s = read_summary(store, c, b)
            if s is not None:
                out[(c, b)] = s
    return out


def _cell(s: dict | None) -> str:
    if s is None:
        return "-"
    if s.get("status") != "ok":
        return "n/a"
    return f"{s['score']:.1f}"


def scores_table(summaries: dict[tuple[str, str], dict], checkpoints: Sequence[str], benches: Sequence[str],
                 thresholds: dict[str, float | None]) -> str:
    """Markdown: checkpoints x benchmarks, plus the target row ("-": not run, "n/a": unavailable)."""
    head = "| checkpoint | " + " | ".join(benches) + " |"
    lines = [head, "|---|" + "---:|" * len(benches)]
    for c in checkpoints:
        lines.append(f"| {c} | " + " | ".join(_cell(summaries.get((c, b))) for b in benches) + " |")
    lines.append("| **target** | " + " | ".join("-" if thresholds.get(b) is None else f">= {thresholds[b]:g}"
                                                 for b in benches) + " |")
    variants = {b: next((s["variant"] for (c, bb), s in summaries.items() if bb == b and s.get("variant")), "")
                for b in benches}
    lines.append("")
    lines += [f"- **{b}**: {v}" for b, v in variants.items() if v]
    return "\n".join(lines)


def scores_plot(summaries: dict[tuple[str, str], dict], checkpoints: Sequence[str], benches: Sequence[str],
                thresholds: dict[str, float | None]) -> str | None:
    """One line per benchmark across checkpoints, targets dashed; Markdown image (None if no data)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not any(s.get("status") == "ok" for s in summaries.values()):
        return None
    fig, ax = plt.subplots(figsize=(8, 4))
    xs = list(range(len(checkpoints)))
    for i, b in enumerate(benches):
        ys = [(summaries.get((c, b)) or {}).get("score") if (summaries.get((c, b)) or {}).get("status") == "ok"
              else None for c in checkpoints]
        pts = [(x, y) for x, y in zip(xs, ys) if y is not None]
        if not pts:
            continue
        line, = ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=b)
        if thresholds.get(b) is not None:
            ax.axhline(thresholds[b], color=line.get_color(), linestyle="--", linewidth=0.8)
    ax.set_xticks(xs)
    ax.set_xticklabels([c.removesuffix("_checkpoint") for c in checkpoints], rotation=20)
    ax.set_ylabel("score (%)")
    ax.set_ylim(-2, 102)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    md = png_markdown(fig, "Eval scores by checkpoint, one line per benchmark (dashed: its target)")
    plt.close(fig)
    return md
