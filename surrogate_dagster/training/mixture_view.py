"""What the model sees of a training mixture: rows rendered as the trainer renders them, and their lengths.

Pure: no Dagster, no object store. Given a mixture's rows and the base model's tokenizer:

- SFT rows ``{"messages": [...]}`` are rendered with ``tokenizer.apply_chat_template(messages,
  tokenize=False)``, as axolotl's ``chat_template`` strategy does with ``chat_template:
  tokenizer_default`` (no ``tools=``, no generation prompt).
- DPO rows ``{"messages": prompt, "chosen": {...}, "rejected": {...}}`` are rendered as axolotl's
  ``chat_template.default`` DPO strategy does: the prompt turns (role and content only) with a
  generation prompt; each answer rendered after a placeholder user turn and cut from the start of its
  content, trailing whitespace dropped. TRL then tokenizes prompt + chosen and prompt + rejected, so
  those two strings are what the model sees, and a row's length is the longer of the two.

Lengths are counted with ``add_special_tokens=False``: the chat template writes its own special
tokens, and axolotl/TRL add none on top for Qwen2 (no BOS; the answer already ends with EOS).
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

# axolotl's DPO chat_template strategy renders each answer after this user turn, then cuts it off.
DPO_PLACEHOLDER_USER = {"role": "user", "content": "[[dummy_message]]"}
SHOWN_CHARS = 1500  # a rendered first row is cut to about this many characters (head and tail kept)
TOKENIZE_BATCH = 256


@dataclass(frozen=True)
class RenderedRow:
    """One mixture row as the trainer's text: ``texts`` is [conversation] (SFT) or [prompt+chosen, prompt+rejected]."""

    kind: str  # "sft" | "dpo"
    texts: tuple[str, ...]


@dataclass
class SourceLengths:
    """Token lengths of one source's rows in a mixture (p50/p95 by the nearest-rank method)."""

    source: str
    rows: int
    p50: int
    p95: int
    max: int
    tokens: int  # sum of row lengths
    over_sequence_len: int = 0  # rows longer than the stage's sequence_len (axolotl drops them)


@dataclass
class MixtureView:
    """Per source: the first row as rendered, and token-length statistics; lengths per source for the plot."""

    name: str
    kind: str
    sequence_len: int | None
    sources: list[SourceLengths]
    first_rows: dict[str, list[str]]  # source -> rendered texts of its first row (full, not cut)
    lengths: dict[str, list[int]] = field(default_factory=dict)

    @property
    def rows(self) -> int:
        return sum(s.rows for s in self.sources)

    @property
    def total_tokens(self) -> int:
        return sum(s.tokens for s in self.sources)

    def overall(self) -> SourceLengths | None:
        """The statistics of every row of the mixture together (None when it has no rows)."""
        every = [n for v in self.lengths.values() for n in v]
        return source_lengths("**all**", every, self.sequence_len) if every else None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> MixtureView:
        return cls(name=data["name"], kind=data["kind"], sequence_len=data["sequence_len"],
                   sources=[SourceLengths(**s) for s in data["sources"]], first_rows=data["first_rows"],
                   lengths=data.get("lengths", {}))


def row_kind(row: dict) -> str:
    return "dpo" if "chosen" in row or "rejected" in row else "sft"


def _answer_text(tokenizer, answer: Any) -> str:
    """One DPO answer as axolotl renders it: after the placeholder turn, from its content, rstripped."""
    msg = {"role": "assistant", "content": answer} if isinstance(answer, str) else answer
    if isinstance(msg, list):
        msg = msg[-1]
    msg = {"role": msg["role"], "content": msg["content"]}
    text = tokenizer.apply_chat_template([DPO_PLACEHOLDER_USER, msg], add_generation_prompt=False, tokenize=False)
    return text[text.find(msg["content"]):].rstrip()


def render_row(tokenizer, row: dict) -> RenderedRow:
    """The text(s) the trainer tokenizes for one mixture row."""
    messages = row["messages"]
    if row_kind(row) == "sft":
        return RenderedRow("sft", (tokenizer.apply_chat_template(messages, tokenize=False),))
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    # The DPO strategy keeps only role and content of the prompt turns.
    prompt_turns = [{"role": m["role"], "content": m["content"]} for m in messages]
    prompt = tokenizer.apply_chat_template(prompt_turns, add_generation_prompt=True, tokenize=False)
    return RenderedRow("dpo", (prompt + _answer_text(tokenizer, row["chosen"]),
                               prompt + _answer_text(tokenizer, row["rejected"])))


def token_lengths(tokenizer, texts: Sequence[str]) -> list[int]:
    """Token count of each text (batched: a fast tokenizer encodes a batch in parallel)."""
    out: list[int] = []
    for start in range(0, len(texts), TOKENIZE_BATCH):
        batch = list(texts[start:start + TOKENIZE_BATCH])
        out.extend(len(ids) for ids in tokenizer(batch, add_special_tokens=False)["input_ids"])
    return out


def nearest_rank(values: Sequence[int], q: float) -> int:
    """The q-th percentile by the nearest-rank method: the ceil(q/100 * n)-th smallest value (a real length)."""
    if not values:
        raise ValueError("no values")
    ordered = sorted(values)
    return ordered[max(1, math.ceil(q / 100 * len(ordered))) - 1]


def source_lengths(source: str, lengths: Sequence[int], sequence_len: int | None = None) -> SourceLengths:
    return SourceLengths(source=source, rows=len(lengths), p50=nearest_rank(lengths, 50),
                         p95=nearest_rank(lengths, 95), max=max(lengths), tokens=sum(lengths),
                         over_sequence_len=sum(n > sequence_len for n in lengths) if sequence_len else 0)


def build_view(name: str, rows: Iterable[dict], tokenizer, sequence_len: int | None = None) -> MixtureView:
    """Render and measure every row; sources in order of first appearance."""
    lengths: dict[str, list[int]] = {}
    first_rows: dict[str, list[str]] = {}
    kinds: set[str] = set()
    pending: list[tuple[str, RenderedRow]] = []

    def flush() -> None:
        texts = [t for _, r in pending for t in r.texts]
        counts = iter(token_lengths(tokenizer, texts))
        for source, rendered in pending:
            lengths[source].append(max(next(counts) for _ in rendered.texts))
        pending.clear()

    for row in rows:
        source = str(row.get("source") or "unknown")
        rendered = render_row(tokenizer, row)
        kinds.add(rendered.kind)
        if source not in lengths:
            lengths[source] = []
            first_rows[source] = list(rendered.texts)
        pending.append((source, rendered))
        if len(pending) >= TOKENIZE_BATCH:
            flush()
    flush()
    if len(kinds) > 1:
        raise ValueError(f"mixture {name} mixes SFT and DPO rows")
    return MixtureView(name=name, kind=kinds.pop() if kinds else "empty", sequence_len=sequence_len,
                       sources=[source_lengths(s, v, sequence_len) for s, v in lengths.items()],
                       first_rows=first_rows, lengths=lengths)


def clip_middle(text: str, limit: int = SHOWN_CHARS) -> str:
    """``text`` if it fits in ``limit`` chars, else its head and tail around a "... [N chars cut] ..." line."""
    if len(text) <= limit:
        return text
    head, tail = text[:limit // 2], text[len(text) - (limit - limit // 2):]
    return f"{head}\n... [{len(text) - limit} chars cut] ...\n{tail}"


def code_block(text: str) -> str:
    """A fenced block that no run of backticks inside ``text`` can close early."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{text}\n{fence}"


def lengths_table(view: MixtureView) -> str:
    """Markdown: rows and token lengths per source, and the mixture's total."""
    over = view.sequence_len is not None
    head = "| source | rows | p50 | p95 | max | tokens |" + (f" over {view.sequence_len} |" if over else "")
    lines = [head, "|---|---:|---:|---:|---:|---:|" + ("---:|" if over else "")]
    for s in view.sources:
        lines.append(f"| {s.source} | {s.rows} | {s.p50} | {s.p95} | {s.max} | {s.tokens} |"
                     + (f" {s.over_sequence_len} |" if over else ""))
    total = view.overall()
    if total:
        lines.append(f"| **all** | {total.rows} | {total.p50} | {total.p95} | {total.max} | {total.tokens} |"
                     + (f" {total.over_sequence_len} |" if over else ""))
    return "\n".join(lines)


def first_rows_markdown(view: MixtureView, limit: int = SHOWN_CHARS) -> str:
    """Markdown: each source's first row as the trainer renders it, cut to ``limit`` chars per text."""
    labels = ("prompt + chosen", "prompt + rejected") if view.kind == "dpo" else ("conversation",)
    parts = [f"Rows as `{view.name}` is trained on them ({view.kind.upper()}), first row of each source."]
    for source, texts in view.first_rows.items():
        parts.append(f"### {source}")
        for label, text in zip(labels, texts):
            parts.append(f"{label} ({len(text)} chars):\n\n{code_block(clip_middle(text, limit))}")
    return "\n\n".join(parts)


def view_markdown(view: MixtureView) -> str:
    """The whole view of one mixture as one Markdown document (table, then the rendered rows)."""
    seq = f", sequence_len {view.sequence_len}" if view.sequence_len else ""
    return (f"# {view.name}\n\n{view.rows} rows, {view.total_tokens} tokens ({view.kind.upper()}{seq}); "
            f"DPO row length = the longer of prompt + chosen and prompt + rejected.\n\n"
            f"{lengths_table(view)}\n\n{first_rows_markdown(view)}\n")


def lengths_plot_png(view: MixtureView) -> bytes:
    """A PNG box plot of token lengths per source (log scale), the stage's sequence_len marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sources = [s for s, v in view.lengths.items() if v]
    fig, ax = plt.subplots(figsize=(7, 1.2 + 0.35 * max(1, len(sources))))
    try:
        if sources:
            ax.boxplot([view.lengths[s] for s in sources], orientation="horizontal", whis=(5, 95), showfliers=True,
                       flierprops={"markersize": 2})
            ax.set_yticks(range(1, len(sources) + 1),
                          [f"{s} ({len(view.lengths[s])})" for s in sources], fontsize=8)
            ax.invert_yaxis()  # first source on top, as in the table
        ax.set_xscale("log")
        title = f"{view.name}: token lengths per source"
        if view.sequence_len:
            # Named in the title, not a legend: a legend box would hide the boxes it overlaps.
            ax.axvline(view.sequence_len, color="tab:red", linestyle="--", linewidth=1)
            title += f" (red: sequence_len {view.sequence_len})"
        ax.set_xlabel("tokens per row (log); whiskers p5-p95")
        ax.set_title(title, fontsize=10)
        ax.grid(axis="x", alpha=0.3, which="both")
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=80, bbox_inches="tight")
        return buf.getvalue()
    finally:
        plt.close(fig)
