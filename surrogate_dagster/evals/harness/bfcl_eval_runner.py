"""bfcl-eval's own generation and evaluation of a served model; run by the bfcl-eval environment's Python.

    <.venv-bfcl>/bin/python -I bfcl_eval_runner.py --spec spec.json --out result.json

Imports only the standard library, ``bfcl_eval`` and its sibling :mod:`bfcl_overall` (stdlib only):
it runs in the separate environment where bfcl-eval's pins live, never this project's package.
``spec.json``:

    {"project_root": dir,            # BFCL_PROJECT_ROOT: bfcl-eval's result/ and score/ trees
     "base_url": "http://host:port", "api_key_env": name | null,
     "tokenizer_dir": dir,           # --local-model-path: bfcl-eval renders prompts with it
     "served_name": str,             # the model name the server answers to (an adapter's name)
     "categories": [...],            # bfcl-eval category names
     "max_per_category": int | null, # the first N ids of each category (bfcl's --run-ids)
     "num_threads": int, "temperature": float,
     "max_tokens_cap": int | null,   # caps each request's max_tokens (bfcl-eval asks up to 4096)
     "data_dir": dir}                # the project's BFCL copy: each question file must equal bfcl-eval's

What runs is bfcl-eval's: ``_llm_response_generation.main`` (its prompting, multi-turn loop over its
simulated backends, decoding) with the registry entry ``Qwen/Qwen3-8B-FC`` (QwenFCHandler: Qwen's
Hermes ``<tool_call>`` format), pointed at the served model through bfcl-eval's
``REMOTE_OPENAI_BASE_URL``; then ``eval_checker.eval_runner.main`` (its AST, relevance and
multi-turn state checkers), whose score files give per-category accuracy. The only code added
here is a subclass whose ``inference`` sends requests under ``served_name`` (bfcl-eval addresses the
server by the tokenizer's path, which is not the name of a LoRA adapter) and, when the profile asks
(``max_tokens_cap``: a tiny CPU model would spend minutes on bfcl-eval's 4096), caps each request's
``max_tokens``; it registers as ``surrogate/served-FC``. ``result.json``: the bfcl-eval version, per-category accuracy and counts,
the leaderboard overall by :mod:`bfcl_overall` (categories run; and bfcl-eval's own figure with
the rest counted 0, read from its ``data_overall.csv``), and one row per entry.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import hashlib
import json
import os
import sys
from importlib.metadata import version
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bfcl_overall (stdlib only); -I leaves it out
import bfcl_overall  # noqa: E402

HANDLER_BASE = "Qwen/Qwen3-8B-FC"
REGISTRY_NAME = "surrogate/served-FC"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def check_data(data_dir: Path, categories: list[str]) -> dict[str, str]:
    """{file: sha256} of every question/answer file the categories read; bfcl-eval's copy must equal ours."""
    from bfcl_eval.constants.eval_config import POSSIBLE_ANSWER_PATH, PROMPT_PATH
    from bfcl_eval.utils import get_file_name_by_category

    out = {}
    for cat in categories:
        name = get_file_name_by_category(cat)
        for theirs, ours in ((PROMPT_PATH / name, data_dir / name),
                             (POSSIBLE_ANSWER_PATH / name, data_dir / "possible_answer" / name)):
            if not theirs.exists():
                continue
            if not ours.exists():
                raise SystemExit(f"{cat}: {ours} missing from the project's BFCL copy (bfcl-eval has {theirs.name})")
            a, b = _sha(theirs), _sha(ours)
            if a != b:
                raise SystemExit(f"{cat}: bfcl-eval's {theirs} differs from the project's {ours} ({a[:12]} vs {b[:12]})")
            out[str(ours.relative_to(data_dir))] = a
    return out


def register(served_name: str, max_tokens_cap: int | None) -> None:
    from bfcl_eval.constants.model_config import MODEL_CONFIG_MAPPING

    base = MODEL_CONFIG_MAPPING[HANDLER_BASE]
    parent = base.model_handler

    def inference(self, *args, **kwargs):
        # after spin_up_local_server (final) loaded the tokenizer from the path
        self.model_path_or_id = served_name
        if max_tokens_cap and not getattr(self, "_capped", False):
            create = self.client.completions.create

            def capped(*a, **kw):
                kw["max_tokens"] = min(int(kw.get("max_tokens") or max_tokens_cap), max_tokens_cap)
                return create(*a, **kw)

            self.client.completions.create = capped
            self._capped = True
        return parent.inference(self, *args, **kwargs)

    # assigned after class creation: bfcl-eval's handlers use `overrides`' EnforceOverrides metaclass,
    # which cannot resolve the base of a class defined inside a function
    ServedHandler = type("ServedHandler", (parent,), {})
    ServedHandler.inference = inference
    MODEL_CONFIG_MAPPING[REGISTRY_NAME] = dataclasses.replace(base, model_name=REGISTRY_NAME,
                                                              display_name=REGISTRY_NAME, model_handler=ServedHandler)


def scenario(entry_id: str) -> str:
    """A memory entry's scenario: ``memory_kv_0-customer-0`` and ``memory_kv_prereq_3-customer-1``: customer."""
    return entry_id.split("-")[1] if entry_id.count("-") >= 2 else ""


def write_run_ids(root: Path, categories: list[str], n: int) -> dict[str, list[str]]:
    """bfcl's test_case_ids_to_generate.json with the first ``n`` ids of each category; a memory
    category also gets the prerequisite conversations of the chosen entries' scenarios (what its
    memory holds when they are asked)."""
    from bfcl_eval.utils import load_dataset_entry

    ids = {}
    for c in categories:
        entries = load_dataset_entry(c)
        chosen = [e["id"] for e in entries if "prereq" not in e["id"]][:n]
        wanted = {scenario(i) for i in chosen}
        ids[c] = [e["id"] for e in entries if "prereq" in e["id"] and scenario(e["id"]) in wanted] + chosen
    (root / "test_case_ids_to_generate.json").write_text(json.dumps(ids))
    return ids


def read_overall_csv(score_dir: Path) -> float | None:
    """bfcl-eval's own "Overall Acc" for our model from its data_overall.csv (missing categories as 0)."""
    path = score_dir / "data_overall.csv"
    with path.open() as f:
        for row in csv.DictReader(f):
            if row.get("Model") == REGISTRY_NAME:
                v = row["Overall Acc"]
                return None if v == "N/A" else float(v.rstrip("%")) / 100
    return None


def entry_rows(root: Path, categories: list[str]) -> list[dict]:
    """One row per generated entry: id, category, passed, error type (from bfcl-eval's score files)."""
    from bfcl_eval.utils import get_file_name_by_category, load_file

    model_dir = REGISTRY_NAME.replace("/", "_")
    rows = []
    for cat in categories:
        name = get_file_name_by_category(cat, is_result_file=True)
        res = next((root / "result" / model_dir).rglob(name), None)
        score = next((root / "score" / model_dir).rglob(get_file_name_by_category(cat, is_score_file=True)), None)
        failed = {}
        if score is not None:
            for e in load_file(score)[1:]:
                failed[e["id"]] = e.get("error_type") or "failed"
        for r in (load_file(res) if res is not None else []):
            out = r.get("result")
            rows.append({"category": cat, "id": r["id"], "passed": r["id"] not in failed,
                         "error_type": failed.get(r["id"]),
                         "output": json.dumps(out, ensure_ascii=False, default=str)[:2000]})
    return rows


def run(spec: dict) -> dict:
    root = Path(spec["project_root"]).resolve()
    root.mkdir(parents=True, exist_ok=True)
    os.environ["BFCL_PROJECT_ROOT"] = str(root)
    os.environ["REMOTE_OPENAI_BASE_URL"] = spec["base_url"].rstrip("/") + "/v1"
    key_env = spec.get("api_key_env")
    os.environ["REMOTE_OPENAI_API_KEY"] = (os.environ.get(key_env) if key_env else None) or "EMPTY"
    from bfcl_eval._llm_response_generation import main as generation_main
    from bfcl_eval.eval_checker.eval_runner import main as evaluation_main
    from bfcl_eval.eval_checker.eval_runner_helper import update_leaderboard_table_with_local_score_file
    from bfcl_eval.utils import load_dataset_entry

    categories = list(spec["categories"])
    files = check_data(Path(spec["data_dir"]), categories)
    register(spec["served_name"], spec.get("max_tokens_cap"))
    n = spec.get("max_per_category")
    if n:
        write_run_ids(root, categories, n)
    args = argparse.Namespace(
        model=[REGISTRY_NAME], test_category=categories, temperature=float(spec.get("temperature", 0.001)),
        include_input_log=False, exclude_state_log=True, num_gpus=1, num_threads=int(spec.get("num_threads", 1)),
        gpu_memory_utilization=0.9, backend="vllm", skip_server_setup=True, local_model_path=spec["tokenizer_dir"],
        result_dir=None, allow_overwrite=True, run_ids=bool(n), enable_lora=False, max_lora_rank=None,
        lora_modules=None)
    generation_main(args)
    evaluation_main([REGISTRY_NAME], categories, None, None, partial_eval=bool(n))
    table: dict = {}
    update_leaderboard_table_with_local_score_file(table, root / "score")
    mine = table.get(REGISTRY_NAME.replace("/", "_"), {})
    scores = {c: {"accuracy": mine[c]["accuracy"], "total_count": mine[c]["total_count"],
                  "correct_count": mine[c].get("correct_count")} for c in categories if c in mine}
    totals = {c: len(load_dataset_entry(c, include_prereq=False)) for c in bfcl_overall.leaves()}
    return {"scorer": f"bfcl-eval {version('bfcl-eval')}", "handler": f"{HANDLER_BASE} (QwenFCHandler)",
            "scores": scores, "not_scored": [c for c in categories if c not in mine],
            "overall_run": bfcl_overall.overall(scores, missing="drop"),
            "overall_missing_as_zero": bfcl_overall.overall(scores, missing="zero", totals=totals),
            "bfcl_overall_csv": read_overall_csv(root / "score"), "questions_by_category": totals,
            "files": files, "entries": entry_rows(root, categories)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    result = run(json.loads(Path(a.spec).read_text()))
    Path(a.out).write_text(json.dumps(result, ensure_ascii=False, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
