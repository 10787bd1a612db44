"""lm-eval's RULER datasets, generated once and reused: the ``custom_dataset`` of the wrapper tasks
:mod:`.ruler_lm_eval_runner` writes into lm-eval's include path; runs inside lm-eval's process.

lm-eval 0.4.13's RULER generators build 500 samples per task at each length, whatever ``--limit``
asks, and the samples depend only on the task, the length, the tokenizer, the package versions and
the state of Python's and NumPy's global random generators when the generator starts (lm-eval seeds
them, then builds the tasks in order). Every checkpoint that shares a tokenizer gets the same samples,
so each wrapper task calls lm-eval's own generator (named by lm-eval's task file) once per key and
stores what it returned; a later run with the same key loads it instead. The key covers all of the
above, the generators' random state included, and a hit restores the random state the generator left,
so the tasks after it see what lm-eval's unmodified run would and the prompts are the same.

The runner copies this file into the include folder as ``surrogate_ruler_cache.py`` beside
``surrogate_ruler_cache.json`` (``cache_dir``: where entries live; ``events``: a JSON-lines file that
records each task's hit or store; ``generators``: task -> ``module.function`` of lm-eval's task file).
An entry is one gzip JSON-lines file: a header (key, what it covers, the random state after
generation, each split's features and row count), then the rows. Only fast tokenizers are cached (their
whole definition is one serialized string); a slow one generates every time and the event says so.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

PACKAGES = ("lm-eval", "transformers", "tokenizers", "wonderwords", "nltk", "numpy")
CONFIG_NAME = "surrogate_ruler_cache.json"
FORMAT = 1


def package_versions() -> dict[str, str | None]:
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {}
    for p in PACKAGES:
        try:
            out[p] = version(p)
        except PackageNotFoundError:
            out[p] = None
    return out


def rng_state(module=None) -> dict[str, Any]:
    """Python's and NumPy's global random states, and the generator module's own ``RNG`` if it has
    one (cwe_utils), as JSON."""
    import random

    import numpy as np

    def py(r) -> list:
        v, internal, gauss = r.getstate()
        return [v, list(internal), gauss]

    name, keys, pos, has_gauss, cached = np.random.get_state()
    own = getattr(module, "RNG", None)
    return {"python": py(random), "numpy": [name, [int(k) for k in keys], int(pos), int(has_gauss), float(cached)],
            "module": py(own) if isinstance(own, random.Random) else None}


def set_rng_state(state: dict[str, Any], module=None) -> None:
    import random

    import numpy as np

    def py(r, s) -> None:
        v, internal, gauss = s
        r.setstate((v, tuple(internal), gauss))

    py(random, state["python"])
    name, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((name, np.array(keys, dtype=np.uint32), pos, has_gauss, cached))
    if state.get("module") is not None:
        py(module.RNG, state["module"])


def tokenizer_identity(tok) -> str | None:
    """SHA-256 of what a fast tokenizer does to text (its serialized definition and class); None for a
    slow tokenizer, whose behaviour is spread over Python code and files."""
    if not getattr(tok, "is_fast", False):
        return None
    h = hashlib.sha256(type(tok).__name__.encode())
    h.update(tok.backend_tokenizer.to_str().encode())
    return h.hexdigest()


def entry_key(identity: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()


def entry_path(cache_dir: Path, task: str, key: str) -> Path:
    return Path(cache_dir) / task / f"{key[:32]}.jsonl.gz"


def store(path: Path, header: dict[str, Any], splits: dict[str, Any]) -> None:
    """Write an entry atomically (a concurrent writer of the same key writes the same bytes)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    head = {**header, "splits": {s: {"features": d.features.to_dict(), "rows": d.num_rows} for s, d in splits.items()}}
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=3, mtime=0) as gz:
            gz.write((json.dumps(head) + "\n").encode())
            for split, d in splits.items():
                for row in d.to_list():
                    gz.write((json.dumps({"split": split, "row": row}, ensure_ascii=False) + "\n").encode())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load(path: Path, key: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(header, {split: datasets.Dataset}) of an entry; refuses one whose header names another key."""
    import datasets

    rows: dict[str, list] = {}
    with gzip.open(path, "rt", encoding="utf-8") as f:
        head = json.loads(f.readline())
        if head.get("key") != key or head.get("format") != FORMAT:
            raise ValueError(f"RULER dataset cache entry {path}: header key/format do not match {key[:12]}")
        for line in f:
            r = json.loads(line)
            rows.setdefault(r["split"], []).append(r["row"])
    out = {}
    for split, meta in head["splits"].items():
        got = rows.get(split, [])
        if len(got) != meta["rows"]:
            raise ValueError(f"RULER dataset cache entry {path}: {split} has {len(got)} rows, header says "
                             f"{meta['rows']} (a truncated file: delete it)")
        out[split] = datasets.Dataset.from_list(got, features=datasets.Features.from_dict(meta["features"]),
                                                split=datasets.Split(split))
    return head, out


def _config() -> dict[str, Any]:
    return json.loads(Path(__file__).with_name(CONFIG_NAME).read_text())


def _event(cfg: dict[str, Any], **row) -> None:
    with open(cfg["events"], "a", encoding="utf-8") as f:
        f.write(json.dumps(row) + "\n")


def cached(task: str, target: str, cfg: dict[str, Any]) -> Callable[..., dict]:
    """The ``custom_dataset`` of ``task``: lm-eval's generator ``target`` (``module.function`` in
    lm_eval.tasks.ruler), through the cache."""
    module_name, _, fn_name = target.rpartition(".")

    def custom_dataset(**kwargs) -> dict:
        t0 = time.monotonic()
        module = importlib.import_module(f"lm_eval.tasks.ruler.{module_name}")
        generate = getattr(module, fn_name)
        common = importlib.import_module("lm_eval.tasks.ruler.common_utils")
        tok = common.get_tokenizer(common.resolve_tokenizer_name(kwargs))  # lm-eval's loader; memoized there
        tok_id = tokenizer_identity(tok)
        if tok_id is None:
            out = generate(**kwargs)
            _event(cfg, task=task, cache="uncached: slow tokenizer", s=round(time.monotonic() - t0, 3))
            return out
        identity = {"format": FORMAT, "task": task, "generator": target, "packages": package_versions(),
                    "max_seq_lengths": kwargs.get("max_seq_lengths", common.DEFAULT_SEQ_LENGTHS),
                    "tokenizer": tok_id, "rng": hashlib.sha256(json.dumps(rng_state(module)).encode()).hexdigest()}
        key = entry_key(identity)
        path = entry_path(Path(cfg["cache_dir"]), task, key)
        if path.exists():
            head, out = load(path, key)
            set_rng_state(head["rng_after"], module)
            _event(cfg, task=task, cache="hit", key=key, path=str(path), s=round(time.monotonic() - t0, 3))
            return out
        out = generate(**kwargs)
        store(path, {"format": FORMAT, "key": key, "identity": identity, "rng_after": rng_state(module)}, out)
        _event(cfg, task=task, cache="stored", key=key, path=str(path), s=round(time.monotonic() - t0, 3))
        return out

    return custom_dataset


if Path(__file__).with_name(CONFIG_NAME).exists():  # inside lm-eval's include folder: one function per task
    _CFG = _config()
    for _task, _target in _CFG["generators"].items():
        globals()[_task] = cached(_task, _target, _CFG)
