"""Stage datasets: curated rows per source -> the five training mixtures, with a dataset card.

Pure logic. A mixture is JSONL in the format axolotl's `chat_template` strategies read:
SFT rows `{"messages": [...]}`; DPO rows `{"messages": prompt, "chosen": {...}, "rejected": {...}}`
(axolotl `chat_template.default` with field_messages/field_chosen/field_rejected).

Messages are written exactly as axolotl hands them to the Qwen2.5 chat template: one ``tool``
message per tool result, holding the bare result. Normalized rows keep a tool turn as Hermes
``<tool_response>`` text; the template wraps every ``tool`` message itself, so a wrapped result
would reach the model as ``<tool_response>\n<tool_response>\n...`` (hermes.to_template_messages).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..sources.hermes import to_template_messages
from ..storage import ObjectStore


@dataclass
class MixtureBuild:
    name: str
    rows: list[dict]
    by_source: dict[str, int]
    capped: dict[str, int] = field(default_factory=dict)
    data_version: str = ""


def to_mixture_row(row: dict) -> dict:
    """One curated row in the axolotl chat_template format (ids kept for lineage): tool turns
    unwrapped to one bare ``tool`` message per result, everything else as curated."""
    base = {"id": row["id"], "source": row["source"]}
    if row["kind"] == "dpo":
        return {**base, "messages": to_template_messages(row["prompt"]),
                "chosen": {"role": "assistant", "content": row["chosen"]},
                "rejected": {"role": "assistant", "content": row["rejected"]}}
    return {**base, "messages": to_template_messages(row["messages"])}


def build_mixture(name: str, kind: str, rows_by_source: dict[str, Iterable[dict]],
                  caps: dict[str, int | None]) -> MixtureBuild:
    """Concatenate sources in catalog order, each up to its cap; the version hashes the content."""
    out: list[dict] = []
    by_source: Counter[str] = Counter()
    capped: dict[str, int] = {}
    for source, rows in rows_by_source.items():
        cap = caps.get(source)
        for row in rows:
            if row["kind"] != kind:
                raise ValueError(f"mixture {name} takes {kind} rows; {source}/{row['id']} is {row['kind']}")
            if cap is not None and by_source[source] >= cap:
                capped[source] = capped.get(source, 0) + 1
                continue
            try:
                out.append(to_mixture_row(row))
            except ValueError as e:  # a malformed turn: name the row, do not train on a guess
                raise ValueError(f"mixture {name}: row {source}/{row['id']}: {e}") from e
            by_source[source] += 1
    h = hashlib.sha256()
    for r in out:
        h.update(json.dumps(r, sort_keys=True, ensure_ascii=False).encode())
    return MixtureBuild(name, out, dict(by_source), capped, h.hexdigest()[:16])


def to_jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode()


def mixture_prefix(name: str, version: str) -> str:
    return f"mixtures/{name}/{version}/"


def write_mixture(store: ObjectStore, build: MixtureBuild, card: str) -> str:
    """Back the mixture up to the object store; returns the key of train.jsonl."""
    prefix = mixture_prefix(build.name, build.data_version)
    key = prefix + "train.jsonl"
    if not store.exists(key):
        store.put_bytes(key, to_jsonl(build.rows))
        store.put_bytes(prefix + "README.md", card.encode())
    store.put_bytes(f"mixtures/{build.name}/_latest.json",
                    json.dumps({"key": key, "data_version": build.data_version,
                                "rows": len(build.rows)}).encode())
    return key


def mixture_jsonl_key(store: ObjectStore, name: str) -> str:
    """The object-store key of the latest train.jsonl of mixture `name`."""
    latest = f"mixtures/{name}/_latest.json"
    if not store.exists(latest):
        raise FileNotFoundError(f"mixture {name!r} has not been built yet (no {latest})")
    return json.loads(store.get_bytes(latest))["key"]


def dataset_card(build: MixtureBuild, repo_id: str, sources: dict[str, dict], steps: dict[str, dict],
                 config_hash: str) -> str:
    """A Hub dataset card: sources with revisions, counts per curation step, the config hash."""
    lines = [
        "---", "license: other", "tags: [code, surrogate-1, curated]", "private: true", "---",
        f"# {repo_id}", "",
        f"Mixture `{build.name}` of Surrogate-1 v2 (Phase A), built by surrogate_dagster.", "",
        f"- rows: {len(build.rows)}", f"- data version: `{build.data_version}`",
        f"- curation config hash: `{config_hash}`", "",
        "## Sources", "", "| source | HF id | revision | rows in mixture |", "|---|---|---|---:|",
    ]
    for name, n in build.by_source.items():
        s = sources.get(name, {})
        lines.append(f"| {name} | {s.get('hf_id', '-')} | `{s.get('revision', '-')}` | {n} |")
    lines += ["", "## Curation steps (rows kept / dropped by reason, per source)", ""]
    for name in build.by_source:
        st = steps.get(name)
        if st:
            lines.append(f"- **{name}**: " + ", ".join(f"{k}={v}" for k, v in sorted(st.items())))
    return "\n".join(lines) + "\n"
