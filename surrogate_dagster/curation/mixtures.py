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

import contextlib
import hashlib
import json
import os
import tempfile
import weakref
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ..metadata import ColumnTypes, attach_table_metadata
from ..paths import ASSETS_DIR
from ..sources.hermes import to_template_messages
from ..storage import ObjectStore
from ..storage.layout import mixture_pointer, mixture_version_prefix
from .checks import dpo_cut_problem

# The system turn a mixture's rows get when they have none. Stage 1.6 (agent_sft) trains under the
# Surrogate-1 prompt (tool list and decision rules); axolotl ignores a stage's ``system_prompt:``,
# so it is written into the data. Rows with their own system turn keep it: theirs names the tools
# their calls use. assets/stages/stage1_6.yaml explains the choice.
DEFAULT_SYSTEM_FILES = {"agent_sft": ASSETS_DIR / "stages" / "stage1_6_system_prompt.txt"}


def hub_asset_name(mixture: str) -> str:
    """The asset that pushes ``mixture`` to the Hub: ``<mixture>_hub`` (``code_sft_hub``). The
    graph's zoomed-out nodes show 18 characters of a name, cut in the middle, so the part that
    tells the five pushes apart comes first and the name stays short."""
    return f"{mixture}_hub"


def default_system_prompt(mixture: str) -> str | None:
    """The system prompt given to rows of ``mixture`` without one (None: rows stay as curated)."""
    path = DEFAULT_SYSTEM_FILES.get(mixture)
    return path.read_text(encoding="utf-8").strip() if path else None


@dataclass
class MixtureBuild:
    """A built mixture: its rows are JSONL in a local file (``path``), never a list in memory, so a
    production mixture (hundreds of thousands of rows, agent trajectories of 20-90 KB) costs one
    source's rows at a time. The file is removed when the build is garbage-collected."""

    name: str
    path: Path
    n_rows: int
    by_source: dict[str, int]
    capped: dict[str, int] = field(default_factory=dict)
    data_version: str = ""
    # rows left out because the trainer would read them wrong: {"source/id": reason}
    dropped: dict[str, str] = field(default_factory=dict)
    columns: ColumnTypes = field(default_factory=ColumnTypes)

    def __post_init__(self) -> None:
        weakref.finalize(self, _unlink, str(self.path))

    @classmethod
    def from_rows(cls, name: str, rows: list[dict], by_source: dict[str, int], capped: dict[str, int] | None = None,
                  data_version: str = "") -> "MixtureBuild":
        """A build of rows already in memory and already in mixture form (written as they are)."""
        fd, tmp = tempfile.mkstemp(prefix=f"mixture-{name}-", suffix=".jsonl")
        columns = ColumnTypes()
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            for row in rows:
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
                columns.add(row)
        return cls(name, Path(tmp), columns.rows, by_source, dict(capped or {}), data_version, columns=columns)

    def iter_rows(self) -> Iterator[dict]:
        with open(self.path, encoding="utf-8") as f:
            for line in f:
                yield json.loads(line)


def _unlink(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def to_mixture_row(row: dict, default_system: str | None = None) -> dict:
    """One curated row in the axolotl chat_template format (ids kept for lineage): tool turns
    unwrapped to one bare ``tool`` message per result, everything else as curated. An SFT row
    without a system turn gets ``default_system`` as its first turn when one is given (without it
    the Qwen2.5 template would insert its own default system prompt)."""
    base = {"id": row["id"], "source": row["source"]}
    if row["kind"] == "dpo":
        return {**base, "messages": to_template_messages(row["prompt"]),
                "chosen": {"role": "assistant", "content": row["chosen"]},
                "rejected": {"role": "assistant", "content": row["rejected"]}}
    messages = to_template_messages(row["messages"])
    if default_system and not (messages and messages[0]["role"] == "system"):
        messages = [{"role": "system", "content": default_system}, *messages]
    return {**base, "messages": messages}


def _misread_answer(row: dict) -> str | None:
    """Why axolotl would train on the wrong text of a pair's non-empty answer, or None. An empty
    answer is not dropped here: the blocking `trainable_rows` check stops that mixture's push."""
    for key in ("chosen", "rejected"):
        content = row[key]["content"]
        problem = dpo_cut_problem(content) if content.strip() else None
        if problem:
            return f"{key}: {problem}"
    return None


def build_mixture(name: str, kind: str, rows_by_source: dict[str, Iterable[dict]],
                  caps: dict[str, int | None]) -> MixtureBuild:
    """Concatenate sources in catalog order, each up to its cap; the version hashes the content.
    Rows without a system turn get the mixture's :func:`default_system_prompt`, if it has one.
    ``rows_by_source`` values are iterated once each, in order: pass generators to hold one
    source's rows at a time."""
    system = default_system_prompt(name)
    fd, tmp = tempfile.mkstemp(prefix=f"mixture-{name}-", suffix=".jsonl")
    out = os.fdopen(fd, "w", encoding="utf-8")
    h = hashlib.sha256()
    columns = ColumnTypes()
    by_source: Counter[str] = Counter()
    capped: dict[str, int] = {}
    dropped: dict[str, str] = {}
    try:
        for source, rows in rows_by_source.items():
            cap = caps.get(source)
            for row in rows:
                if row["kind"] != kind:
                    raise ValueError(f"mixture {name} takes {kind} rows; {source}/{row['id']} is {row['kind']}")
                if cap is not None and by_source[source] >= cap:
                    capped[source] = capped.get(source, 0) + 1
                    continue
                try:
                    mixture_row = to_mixture_row(row, system)
                except ValueError as e:  # a malformed turn: name the row, do not train on a guess
                    raise ValueError(f"mixture {name}: row {source}/{row['id']}: {e}") from e
                problem = _misread_answer(mixture_row) if kind == "dpo" else None
                if problem:
                    dropped[f"{source}/{row['id']}"] = problem
                    continue
                h.update(json.dumps(mixture_row, sort_keys=True, ensure_ascii=False).encode())
                out.write(json.dumps(mixture_row, ensure_ascii=False) + "\n")
                columns.add(mixture_row)
                by_source[source] += 1
    except BaseException:
        out.close()
        _unlink(tmp)
        raise
    out.close()
    return MixtureBuild(name, Path(tmp), columns.rows, dict(by_source), capped, h.hexdigest()[:16], dropped,
                        columns)


def to_jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode()


def read_latest(store: ObjectStore, name: str) -> dict | None:
    """The pointer of mixture `name` (key, data_version, rows, by_source, previous), or None."""
    key = mixture_pointer(name)
    return json.loads(store.get_bytes(key)) if store.exists(key) else None


def write_mixture(store: ObjectStore, build: MixtureBuild, card: str) -> str:
    """Back the mixture up to the object store; returns the key of train.jsonl.

    The pointer keeps the row counts of the version it replaces under ``previous`` (carried over
    when the same version is written again), so the row-count and source-share checks can compare
    a new version with the one before it.
    """
    prefix = mixture_version_prefix(build.name, build.data_version)
    key = prefix + "train.jsonl"
    if not store.exists(key):
        store.put_file(key, build.path)
        store.put_bytes(prefix + "README.md", card.encode())
    attach_table_metadata(build.columns)
    old = read_latest(store, build.name)
    if old is None:
        previous = None
    elif old.get("data_version") == build.data_version:
        previous = old.get("previous")
    else:
        previous = {"data_version": old.get("data_version"), "rows": old.get("rows"),
                    "by_source": old.get("by_source")}
    store.put_bytes(mixture_pointer(build.name),
                    json.dumps({"key": key, "data_version": build.data_version, "rows": build.n_rows,
                                "by_source": build.by_source, "previous": previous}).encode())
    return key


# Gates a mixture version passes before its Hub push: "curation" (the checks on the mixture
# asset) and "token_lengths" (the check on `mixture_views`, which holds the tokenizer).
PUSH_GATES = ("curation", "token_lengths")


def gate_key(name: str, version: str, gate: str) -> str:
    return f"{mixture_version_prefix(name, version)}gates/{gate}.json"


def record_gate(store: ObjectStore, name: str, version: str, gate: str, results: dict[str, dict]) -> None:
    """Store the verdict of one gate on a mixture version: ``results`` maps each check to
    ``{"passed": bool, "description": str}``."""
    passed = all(r["passed"] for r in results.values())
    store.put_bytes(gate_key(name, version, gate),
                    json.dumps({"passed": passed, "checks": results}, sort_keys=True).encode())


def unpassed_gates(store: ObjectStore, name: str, version: str, gates=PUSH_GATES) -> dict[str, str]:
    """Gates of a mixture version not passed: gate -> why (not run, or the failed checks)."""
    out: dict[str, str] = {}
    for gate in gates:
        key = gate_key(name, version, gate)
        if not store.exists(key):
            out[gate] = "not run on this version"
            continue
        verdict = json.loads(store.get_bytes(key))
        if not verdict["passed"]:
            out[gate] = "; ".join(f"{c}: {r['description']}" for c, r in verdict["checks"].items()
                                  if not r["passed"])
    return out


def mixture_jsonl_key(store: ObjectStore, name: str) -> str:
    """The object-store key of the latest train.jsonl of mixture `name`."""
    latest = mixture_pointer(name)
    if not store.exists(latest):
        raise FileNotFoundError(f"mixture {name!r} has not been built yet (no {latest})")
    return json.loads(store.get_bytes(latest))["key"]


@contextlib.contextmanager
def local_rows(store: ObjectStore, key: str) -> Iterator[Callable[[], Iterator[dict]]]:
    """A callable that gives a fresh iterator over the rows of a stored train.jsonl, each pass
    read line by line from one local copy (production mixtures are large)."""
    with tempfile.TemporaryDirectory(prefix="mixture-") as tmp:
        path = Path(tmp) / "train.jsonl"
        store.get_file(key, path)

        def rows() -> Iterator[dict]:
            with path.open(encoding="utf-8") as f:
                for line in f:
                    if line.strip():
                        yield json.loads(line)

        yield rows


def dataset_card(build: MixtureBuild, repo_id: str, sources: dict[str, dict], steps: dict[str, dict],
                 config_hash: str) -> str:
    """A Hub dataset card: sources with revisions, counts per curation step, the config hash."""
    lines = [
        "---", "license: other", "tags: [code, surrogate-1, curated]", "private: true", "---",
        f"# {repo_id}", "",
        f"Mixture `{build.name}` of Surrogate-1 v2 (Phase A), built by surrogate_dagster.", "",
        f"- rows: {build.n_rows}", f"- data version: `{build.data_version}`",
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
