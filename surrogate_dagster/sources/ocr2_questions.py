"""Rebuild OpenCodeReasoning-2 problem statements from the four datasets it points into.

OCR-2 ships every ``question`` as the placeholder ``"-"``; each row names its problem by
``dataset`` (taco | apps | code_contests | open-r1/codeforces), ``split`` and ``index`` (a string
holding an integer). The statement has to be looked up in a mirror of the helper dataset
keyed by the helper row's own id:

- APPS (``codeparrot/apps``, parquet at refs/pr/5): the native ``problem_id`` column.
- TACO (``ALL/{train,test}-*.parquet``), code_contests and open-r1/codeforces have no native
  column holding OCR-2's integer (codeforces' ``id`` is "1700/A", code_contests' ``name`` a
  title): their id is the row's position in its split at the pinned revision, which the mirror
  records per row as ``_split_index`` while streaming upstream (an unreadable row keeps its
  position, so no later row shifts).

An OCR-2 row whose id is not in the index is quarantined by the adapter with a reason naming
the helper. Pure functions, no Dagster.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping


@dataclass(frozen=True)
class HelperLayout:
    """Where one helper lives and which field holds the id OCR-2's ``index`` refers to."""

    repo: str
    config: str  # config dir in the offline mirror
    splits: tuple[str, ...]
    id_field: str | None  # native id column; None: the row's position in its split


HELPER_DATASETS: dict[str, HelperLayout] = {
    "taco": HelperLayout("BAAI/TACO", "default", ("train", "test"), None),
    "apps": HelperLayout("codeparrot/apps", "default", ("train", "test"), "problem_id"),
    "code_contests": HelperLayout("deepmind/code_contests", "default", ("train", "valid", "test"), None),
    "open-r1/codeforces": HelperLayout("open-r1/codeforces", "default", ("train", "test"), None),
}

# HF repo id -> OCR-2 `dataset` value, so callers may key their rows either way.
_BY_REPO = {layout.repo: name for name, layout in HELPER_DATASETS.items()}

# Keys under which a flat row stream says which split a row belongs to and where it sat in that
# split upstream: the mirror tags every helper row with both (sources/mirror.py). None of the four
# helpers has a native column of either name.
SPLIT_KEY = "_split"
POSITION_KEY = "_split_index"


def helper_short_name(dataset: str) -> str:
    """`open-r1/codeforces` -> `codeforces`: the helper's name inside quarantine reasons."""
    return str(dataset).rsplit("/", 1)[-1]


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


def _row_id(layout: HelperLayout, row: Mapping[str, Any], position: int) -> int | None:
    """The id OCR-2's ``index`` refers to: the native id column, else the split position."""
    if layout.id_field is None:
        return position
    value = row.get(layout.id_field)
    if isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _rows_by_split(rows: Iterable[dict] | Mapping[str, Iterable[dict]]) -> Iterator[tuple[str, int, dict]]:
    """(split, position within split, row) from {split: rows} or a flat `_split`/`_split_index` stream.

    A ``{split: rows}`` value is a whole split in its published order (a file of the offline
    mirror), so positions are counted. A flat stream must carry each row's recorded position:
    counting rows there would shift every id after a row the mirror could not read.
    """
    if isinstance(rows, Mapping):
        for split, split_rows in rows.items():
            for i, row in enumerate(split_rows):
                yield split, i, row
        return
    for row in rows:
        split, position = row.get(SPLIT_KEY), row.get(POSITION_KEY)
        if not isinstance(split, str):
            raise ValueError(f"helper row without a {SPLIT_KEY!r} string; pass {{split: rows}} instead")
        if isinstance(position, bool) or not isinstance(position, int):
            raise ValueError(f"helper row without an integer {POSITION_KEY!r} (its position upstream); "
                             "re-mirror the helper, or pass {split: rows} in published order")
        yield split, position, row


def build_question_index(
    helper_rows_by_dataset: Mapping[str, Iterable[dict] | Mapping[str, Iterable[dict]]],
    wanted: set[QuestionKey] | None = None,
) -> dict[QuestionKey, str]:
    """Map (dataset, split, id) -> problem statement ("" when the helper row has none).

    ``helper_rows_by_dataset`` is keyed by the OCR-2 ``dataset`` value (``taco``) or the helper's
    HF repo id (``BAAI/TACO``). Each value is either ``{split: rows_in_published_order}`` or one
    flat iterable whose rows carry ``SPLIT_KEY`` and ``POSITION_KEY`` (as the mirror and
    :func:`helper_rows_from_mirror` yield them). The id is the helper's id field
    (HELPER_DATASETS), or the row's position in its split where the helper has none; a row
    without a usable id is left out, and of two rows with one id the first is kept. ``wanted``
    limits the index to the keys the OCR-2 rows actually reference, which keeps memory small on
    the full helpers.
    """
    index: dict[QuestionKey, str] = {}
    for key, rows in helper_rows_by_dataset.items():
        dataset = key if key in HELPER_DATASETS else _BY_REPO.get(key)
        if dataset is None:
            raise ValueError(f"unknown OCR-2 helper dataset {key!r}; expected one of "
                             f"{sorted(HELPER_DATASETS)} or {sorted(_BY_REPO)}")
        layout = HELPER_DATASETS[dataset]
        for split, position, row in _rows_by_split(rows):
            row_id = _row_id(layout, row, position)
            if row_id is None:
                continue
            qkey = (dataset, split, row_id)
            if qkey in index or (wanted is not None and qkey not in wanted):
                continue
            index[qkey] = question_from_row(dataset, row) or ""
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
    for dataset, layout in HELPER_DATASETS.items():
        base = Path(datasets_root) / layout.repo / layout.config
        if not base.is_dir():
            raise FileNotFoundError(f"OCR-2 helper {layout.repo} not mirrored at {base}")
        out[dataset] = {s: _read_jsonl(base / f"{s}.jsonl") for s in layout.splits
                        if (base / f"{s}.jsonl").is_file()}
    return out


def question_lookup(index: Mapping[QuestionKey, str]):
    """Adapt an index to ``AdapterContext.helper_questions``: (dataset, split, id) -> str | None.

    None: no helper row has that id; "": the row exists but has no statement.
    """
    return lambda dataset, split, i: index.get((dataset, split, int(i)))
