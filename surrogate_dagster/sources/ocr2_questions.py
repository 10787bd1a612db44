"""Rebuild OpenCodeReasoning-2 problem statements from the four datasets it points into.

OCR-2 ships every ``question`` as the placeholder ``"-"``; each row names its problem by
``dataset`` (taco | apps | code_contests | open-r1/codeforces), ``split`` and ``index`` (a string
holding the row's position within that split). The statement has to be looked up in a mirror of
the helper dataset (SOURCES.md §2.2). ``index`` is positional, so a helper split must be mirrored
whole and read in its published order; a capped or shuffled helper mirror resolves the wrong
problems silently. Pure functions, no Dagster.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

# OCR-2 `dataset` value -> (HF repo of the helper, config dir in the offline mirror, splits)
HELPER_DATASETS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "taco": ("BAAI/TACO", "default", ("train", "test")),
    "apps": ("codeparrot/apps", "default", ("train", "test")),
    "code_contests": ("deepmind/code_contests", "default", ("train", "valid", "test")),
    "open-r1/codeforces": ("open-r1/codeforces", "default", ("train", "test")),
}

# HF repo id -> OCR-2 `dataset` value, so callers may key their rows either way.
_BY_REPO = {repo: name for name, (repo, _, _) in HELPER_DATASETS.items()}

# Key under which a flat row stream says which split a row belongs to: the mirror tags every row
# with it (sources/mirror.py). None of the four helpers has a native column of that name.
SPLIT_KEY = "_split"

QuestionKey = tuple[str, str, int]


def _nonempty(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _codeforces_statement(row: Mapping[str, Any]) -> str | None:
    """One statement in the layout OCR-2 used: description, Input, Output, Examples, Note."""
    description = _nonempty(row.get("description"))
    if description is None:
        return None
    parts = [description]
    if _nonempty(row.get("input_format")):
        parts.append("Input\n\n" + row["input_format"])
    if _nonempty(row.get("output_format")):
        parts.append("Output\n\n" + row["output_format"])
    examples = row.get("examples") or []
    if examples:
        block = ["Examples"]
        for ex in examples:
            if not isinstance(ex, Mapping):
                continue
            if isinstance(ex.get("input"), str):
                block.append("Input\n\n" + ex["input"])
            if isinstance(ex.get("output"), str):
                block.append("Output\n\n" + ex["output"])
        parts.append("\n\n".join(block))
    if _nonempty(row.get("note")):
        parts.append("Note\n\n" + row["note"])
    return "\n\n".join(parts)


def question_from_row(dataset: str, row: Mapping[str, Any]) -> str | None:
    """The problem statement of one native helper row, or None when the row has none."""
    if dataset in ("taco", "apps"):
        return _nonempty(row.get("question"))
    if dataset == "code_contests":
        return _nonempty(row.get("description"))
    if dataset == "open-r1/codeforces":
        return _codeforces_statement(row)
    raise ValueError(f"unknown OCR-2 helper dataset {dataset!r}; expected one of {sorted(HELPER_DATASETS)}")


def _rows_by_split(rows: Iterable[dict] | Mapping[str, Iterable[dict]]) -> Iterator[tuple[str, int, dict]]:
    """(split, position within split, row) from either {split: rows} or a flat `_split`-tagged stream."""
    if isinstance(rows, Mapping):
        for split, split_rows in rows.items():
            for i, row in enumerate(split_rows):
                yield split, i, row
        return
    positions: dict[str, int] = {}
    for row in rows:
        split = row.get(SPLIT_KEY)
        if not isinstance(split, str):
            raise ValueError(f"helper row without a {SPLIT_KEY!r} string; pass {{split: rows}} instead")
        i = positions.get(split, 0)
        positions[split] = i + 1
        yield split, i, row


def build_question_index(
    helper_rows_by_dataset: Mapping[str, Iterable[dict] | Mapping[str, Iterable[dict]]],
    wanted: set[QuestionKey] | None = None,
) -> dict[QuestionKey, str]:
    """Map (dataset, split, index) -> problem statement for every helper row that has one.

    ``helper_rows_by_dataset`` is keyed by the OCR-2 ``dataset`` value (``taco``) or the helper's
    HF repo id (``BAAI/TACO``). Each value is either ``{split: rows_in_published_order}`` or one
    flat iterable whose rows carry their split under ``SPLIT_KEY`` (as the mirror and
    :func:`helper_rows_from_mirror` yield them); a row's index is its position among the rows of
    its split in iteration order. The mirror's own ``_index`` is not used: it counts across all
    splits. ``wanted`` limits the index to the keys the OCR-2 rows actually reference, which keeps
    memory small on the full helpers.
    """
    index: dict[QuestionKey, str] = {}
    for key, rows in helper_rows_by_dataset.items():
        dataset = key if key in HELPER_DATASETS else _BY_REPO.get(key)
        if dataset is None:
            raise ValueError(f"unknown OCR-2 helper dataset {key!r}; expected one of "
                             f"{sorted(HELPER_DATASETS)} or {sorted(_BY_REPO)}")
        for split, i, row in _rows_by_split(rows):
            key = (dataset, split, i)
            if wanted is not None and key not in wanted:
                continue
            text = question_from_row(dataset, row)
            if text is not None:
                index[key] = text
    return index


def _read_jsonl(path: Path) -> Iterator[dict]:
    with path.open(encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, 1):
            if line.strip():
                try:
                    yield json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{path}:{line_no}: invalid JSON ({exc.msg})") from exc


def helper_rows_from_mirror(datasets_root: Path) -> dict[str, dict[str, Iterator[dict]]]:
    """{dataset: {split: rows}} from an offline hub mirror ``<root>/<org>/<name>/<config>/<split>.jsonl``.

    Splits whose file is absent are skipped (a fixture mirror holds only some of them); a helper
    repo that is missing altogether is an error, because every OCR-2 row would then be unresolved.
    """
    out: dict[str, dict[str, Iterator[dict]]] = {}
    for dataset, (repo, config, splits) in HELPER_DATASETS.items():
        base = Path(datasets_root) / repo / config
        if not base.is_dir():
            raise FileNotFoundError(f"OCR-2 helper {repo} not mirrored at {base}")
        out[dataset] = {s: _read_jsonl(base / f"{s}.jsonl") for s in splits if (base / f"{s}.jsonl").is_file()}
    return out


def question_lookup(index: Mapping[QuestionKey, str]):
    """Adapt an index to ``AdapterContext.helper_questions``: (dataset, split, index) -> str | None."""
    return lambda dataset, split, i: index.get((dataset, split, int(i)))
