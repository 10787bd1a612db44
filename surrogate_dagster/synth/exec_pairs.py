"""Glue for execution-graded preference pairs (runbook Days 15-16), Dagster-free:

    prompts that carry tests (curated OpenCodeInstruct / opc-sft-stage2 educational_instruct rows
    with their asserts; curated OpenCodeReasoning-2 Python rows whose problem comes from TACO or
    APPS, with that helper row's ``input_output`` cases; curated rStar-Coder rows with their
    problem's ``seed_testcase`` cases; the DevSecOps seed prompts), each source up to its cap
    (``exec_pairs.sources`` in assets/synth.yaml), the hardest first (:func:`rank_by_difficulty`, up to
    ``exec_pairs.max_prompts`` in assets/synth.yaml) -> k samples each at temperature 1.0 from a
    checkpoint -> graded in the sandbox (graders.py) -> several pairs per prompt with a real
    margin, near-identical and duplicate pairs dropped (pairs.select_pairs)
    -> normalized DPO rows, source ``exec_graded``.

The stdin/stdout and call-based cases are joined to the curated rows (sanitized, deduplicated and
decontaminated like every training row) from the mirrors that hold them: :class:`CaseLookup`,
keyed by OCR-2's ``dataset``/``split``/``index`` (the same ids sources/ocr2_questions.py rebuilds
the statement from) and by rStar's ``question_id``. A row whose tests are missing or malformed is
left out with a counted reason. :func:`project_pool` is the volume model: prompts per source
under the caps and the pairs they can give.

A model too weak to ever pass (the local profile's tiny model) yields no pairs. ``inject_pool``
then adds each prompt's known-good answer (the dataset's reference solution) to the graded pool
beside the model's samples; it is graded like them, recorded with ``origin: injected_reference``
(never as a model sample) and counted in the summary (``pool_injected``).

Sampling goes through a ``generate(prompts, n, temperature) -> list[list[str]]`` callable:
:class:`TransformersSampler` (in-process, the local profile) or :class:`VLLMServerSampler` (an
OpenAI-compatible ``vllm serve`` in the GPU image). Both render prompts with the checkpoint's own
chat template (``inference.render_prompt``), like the evals do. The evals' inference clients
decode greedily only, hence these samplers.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import zip_longest
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from ..catalog.keys import AGENT_CHECKPOINT
# The section's models live with the rest of synth.yaml's (synth/catalog.py); imported here by name too.
from .catalog import DifficultyCfg, ExecPairsCatalog, IacScannerCfg, IoTestsCfg, PromptSourceCfg  # noqa: F401
from ..inference import GenRequest, ModelRef, render_prompt
from ..inference.client import server_error
from ..storage.checkpoints import download_tree, latest_checkpoint
from ..sources.ocr2_questions import HELPER_DATASETS, POSITION_KEY, SPLIT_KEY
from .graders import (GradingTask, MalformedTests, extract_code, load_devsecops_tasks, task_from_input_output,
                      task_from_opc_educational, task_from_opencodeinstruct, task_from_rstar_testcase)
from .pairs import (TIERS, margin_histogram, normalized_text, pair_row, pass_rate_summary, scored_from_grades,
                    select_pairs)

EXEC_SOURCE = "exec_graded"  # the rows' ``source`` (pairs.py names its context "exec_graded_pairs")
Generate = Callable[[list[str], int, float], list[list[str]]]
MODEL, INJECTED = "model", "injected_reference"  # a graded completion's origin


# ------------------------------------------------------------------------------------- catalog


def exec_pairs_catalog(catalog: dict | None = None) -> ExecPairsCatalog:
    """``exec_pairs`` of assets/synth.yaml, validated (a missing or bad section raises)."""
    from .config import synth_catalog

    cat = catalog if catalog is not None else synth_catalog()
    if not isinstance(cat.get("exec_pairs"), dict):
        raise ValueError("assets/synth.yaml: no 'exec_pairs' section")
    return ExecPairsCatalog(**cat["exec_pairs"])


# ------------------------------------------------------------------------------ prompts with tests
def _user_prompt(row: dict) -> str | None:
    users = [m["content"] for m in row.get("messages") or [] if m.get("role") == "user"]
    return users[0] if users else None


def _reference(row: dict) -> str | None:
    answers = [m["content"] for m in row.get("messages") or [] if m.get("role") == "assistant"]
    return answers[-1] if answers and isinstance(answers[-1], str) and answers[-1].strip() else None


IO_TEST_DATASETS = ("taco", "apps")  # OCR-2 helpers whose rows carry input_output cases


@dataclass
class CaseLookup:
    """Test cases held outside the curated rows: helper rows by (OCR-2 dataset, split, id) and
    rStar-Coder testcase rows by question_id; ``missing`` names mirrors that were not there."""

    helpers: dict[tuple[str, str, int], dict] = field(default_factory=dict)
    rstar: dict[str, dict] = field(default_factory=dict)
    missing: set[str] = field(default_factory=set)
    io: IoTestsCfg = field(default_factory=IoTestsCfg)


def wanted_helper_keys(rows: Iterable[dict]) -> set[tuple[str, str, int]]:
    """The (dataset, split, id) of every curated OCR-2 row whose problem is a TACO/APPS row."""
    keys = set()
    for row in rows:
        meta = _meta(row)
        if meta.get("dataset") in IO_TEST_DATASETS:
            try:
                keys.add((str(meta["dataset"]), str(meta.get("split")), int(meta.get("index"))))
            except (TypeError, ValueError, OverflowError):
                continue
    return keys


def helper_test_index(rows_by_repo: dict[str, Iterable[dict]], wanted: set[tuple[str, str, int]] | None = None
                      ) -> dict[tuple[str, str, int], dict]:
    """(dataset, split, id) -> ``{input_output, starter_code}`` of mirrored helper rows (each
    tagged with its split and position, as the mirror writes them); the id rule is OCR-2's
    (ocr2_questions.HELPER_DATASETS: APPS' problem_id, TACO's position). Only ``wanted`` keys are
    kept, so memory follows the curated rows, not the helpers' size."""
    by_repo = {layout.repo: name for name, layout in HELPER_DATASETS.items()}
    index: dict[tuple[str, str, int], dict] = {}
    for repo, rows in rows_by_repo.items():
        dataset = repo if repo in HELPER_DATASETS else by_repo.get(repo)
        if dataset not in IO_TEST_DATASETS:
            raise ValueError(f"{repo!r}: no input_output cases (known: {IO_TEST_DATASETS})")
        layout = HELPER_DATASETS[dataset]
        for row in rows:
            ident = row.get(layout.id_field) if layout.id_field else row.get(POSITION_KEY)
            if isinstance(ident, bool) or not isinstance(ident, int):
                continue
            key = (dataset, str(row.get(SPLIT_KEY)), ident)
            if (wanted is None or key in wanted) and key not in index:
                index[key] = {"input_output": row.get("input_output"), "starter_code": row.get("starter_code")}
    return index


def _meta(row: dict) -> dict:
    return json.loads(row["meta"]) if isinstance(row.get("meta"), str) and row["meta"] else {}


def task_from_curated(row: dict, source: str, lookup: CaseLookup | None = None) -> GradingTask | str:
    """A grading task from one curated normalized row, or why the row has none."""
    meta = _meta(row)
    prompt = _user_prompt(row)
    if not prompt:
        return "no_user_prompt"
    lookup = lookup or CaseLookup()
    io = lookup.io
    try:
        if source == "opencodeinstruct":
            if not meta.get("unit_tests"):
                return "no_tests"
            task = task_from_opencodeinstruct({"id": row["id"], "input": prompt, "unit_tests": meta["unit_tests"]})
        elif source == "opc_sft_stage2":
            if meta.get("config") != "educational_instruct" or not meta.get("testcase"):
                return "no_tests"  # only the educational_instruct config carries test cases
            task = task_from_opc_educational({"instruction": prompt, "testcase": meta["testcase"]},
                                             row_id=row["id"])
        elif source == "opencodereasoning_2":
            if meta.get("language") != "python":
                return "not_python"  # the cases judge a Python program
            if meta.get("dataset") not in IO_TEST_DATASETS:
                return "no_tests"  # code_contests / codeforces rows: their tests are not mirrored
            key = next(iter(wanted_helper_keys([row])), None)
            found = lookup.helpers.get(key) if key else None
            if found is None:
                return "tests_not_mirrored" if meta["dataset"] in lookup.missing else "no_tests"
            if not found.get("input_output"):
                return "no_tests"
            task = task_from_input_output(str(row["id"]), prompt, found["input_output"],
                                          starter_code=found.get("starter_code"), source=source,
                                          max_cases=io.max_cases, case_timeout_s=io.case_timeout_s)
        elif source == "rstar_coder":
            qid = meta.get("question_id")
            if qid is None:
                return "no_question_id"  # synthetic_sft rows: no id to join their tests by
            found = lookup.rstar.get(str(qid))
            if found is None:
                return "tests_not_mirrored" if "rstar_coder" in lookup.missing else "no_tests"
            task = task_from_rstar_testcase(found, prompt, max_cases=io.max_cases, case_timeout_s=io.case_timeout_s)
            task.id = str(row["id"])
        else:
            raise ValueError(f"no prompts-with-tests rule for source {source!r} "
                             "(known: opencodeinstruct, opc_sft_stage2, opencodereasoning_2, rstar_coder)")
    except MalformedTests as e:
        return e.reason  # counted per source: malformed_test_json, cases_length_mismatch, ...
    except ValueError as e:
        if "no prompts-with-tests rule" in str(e):
            raise
        return "no_runnable_tests"  # every test failed to parse
    task.reference = _reference(row)  # the dataset's answer: only ever graded as an injected sample
    return task


def load_case_lookup(store: Any, cat: ExecPairsCatalog, curated: dict[str, Sequence[dict]]) -> CaseLookup:
    """The cases the ``curated`` rows (by source) need, read from the mirrors ``cat.sources``
    names; a mirror not in the store is recorded in ``missing`` (its rows are then counted as
    ``tests_not_mirrored``), never an error."""
    from ..sources.normalize import iter_raw_rows

    lookup = CaseLookup(io=cat.io_tests)
    for source, rows in curated.items():
        spec = cat.sources.get(source)
        if spec is None or spec.tests not in ("helper_input_output", "rstar_testcase"):
            continue
        if spec.tests == "helper_input_output":
            wanted = wanted_helper_keys(rows)
            for mirror in spec.mirrors:
                try:
                    _, mirrored = iter_raw_rows(store, mirror)
                except FileNotFoundError:
                    lookup.missing.add(mirror)
                    continue
                repo = HELPER_DATASETS[mirror].repo if mirror in HELPER_DATASETS else mirror
                seen = {"cases_column": False}

                def rows_seen(it: Iterable[dict] = mirrored) -> Iterable[dict]:
                    for r in it:
                        seen["cases_column"] |= "input_output" in r
                        yield r

                found = helper_test_index({repo: rows_seen()}, wanted)
                if not seen["cases_column"]:  # mirrored without its input_output column
                    lookup.missing.add(mirror)
                lookup.helpers.update(found)
        else:
            wanted_ids = {str(_meta(r).get("question_id")) for r in rows}
            for mirror in spec.mirrors:
                try:
                    _, mirrored = iter_raw_rows(store, mirror)
                except FileNotFoundError:
                    lookup.missing.add(source)
                    continue
                for r in mirrored:
                    qid = str(r.get("question_id"))
                    if qid in wanted_ids:
                        lookup.rstar.setdefault(qid, r)
            if not spec.mirrors:
                lookup.missing.add(source)
    return lookup


def project_pool(available: dict[str, int], cat: ExecPairsCatalog, *, devsecops: int = 0,
                 max_pairs_per_prompt: int | None = None) -> dict[str, Any]:
    """The volume model: per source the prompts its cap lets through (``min(cap, available)``),
    the pool, the prompts sampled (``max_prompts`` of the pool, the DevSecOps seeds on top) and
    the most pairs they can give (``prompts x max_pairs_per_prompt``: every prompt with passing
    and failing samples). ``available`` is rows with tests per source, before the caps."""
    unknown = set(available) - set(cat.sources)
    if unknown:
        raise KeyError(f"no exec_pairs.sources entry for {sorted(unknown)}")
    per_source = {s: min(cat.sources[s].cap, n) for s, n in available.items()}
    pool = sum(per_source.values())
    prompts = min(cat.max_prompts, pool)
    k = max_pairs_per_prompt or cat.max_pairs_per_prompt
    return {"per_source": per_source, "pool": pool, "prompts": prompts, "devsecops": devsecops,
            "max_pairs_per_prompt": k, "pairs_ceiling": (prompts + devsecops) * k,
            "shortfall": max(0, cat.max_prompts - pool)}


def _hash(task_id: str) -> str:
    return hashlib.sha256(task_id.encode()).hexdigest()


def known_pass_rates(grade_rows: Iterable[dict]) -> dict[str, float]:
    """Per task id, the share of the model's samples that passed (a previous run's grades table;
    injected completions do not count)."""
    n: Counter = Counter()
    ok: Counter = Counter()
    for g in grade_rows:
        if (g.get("origin") or MODEL) != MODEL:
            continue
        n[g["task_id"]] += 1
        ok[g["task_id"]] += bool(g["passed"])
    return {t: ok[t] / n[t] for t in n}


def difficulty(task: GradingTask, known: dict[str, float], cfg: DifficultyCfg) -> tuple[float, str]:
    """(difficulty in [0, 1], basis ``pass_rate`` | ``features``): the rule in assets/synth.yaml."""
    if task.id in known:
        p = known[task.id]
        return (cfg.never_passed if p == 0 else 1.0 - p), "pass_rate"
    n_tests = len(task.tests) or len(task.asserts) or len(task.cases)
    return (min(1.0, n_tests / cfg.tests_for_max) + min(1.0, len(task.prompt) / cfg.chars_for_max)) / 2, "features"


def rank_by_difficulty(tasks: Sequence[GradingTask], known: dict[str, float],
                       cfg: DifficultyCfg) -> list[GradingTask]:
    """Hardest first; ties in a hash order (stable between runs, spread over the source). Each
    task's difficulty and its basis are recorded in ``task.meta``."""
    for t in tasks:
        d, basis = difficulty(t, known, cfg)
        t.meta = {**t.meta, "difficulty": round(d, 4), "difficulty_basis": basis}
    return sorted(tasks, key=lambda t: (-t.meta["difficulty"], _hash(t.id)))


def tasks_from_rows(rows: Sequence[dict], source: str, limit: int | None, max_prompt_chars: int, *,
                    known: dict[str, float] | None = None, cfg: DifficultyCfg | None = None,
                    lookup: CaseLookup | None = None) -> tuple[list[GradingTask], Counter]:
    """Grading tasks of one source, hardest first (at most ``limit``), and counted reasons for rows
    left out. A prompt whose text repeats an earlier one (whitespace aside) is left out."""
    tasks, dropped, prompts = [], Counter(), set()
    for row in rows:
        t = task_from_curated(row, source, lookup)
        if isinstance(t, str):
            dropped[f"{source}:{t}"] += 1
        elif len(t.prompt) > max_prompt_chars:
            dropped[f"{source}:prompt_too_long"] += 1
        elif normalized_text(t.prompt) in prompts:
            dropped[f"{source}:duplicate_prompt"] += 1
        else:
            prompts.add(normalized_text(t.prompt))
            t.source = source
            tasks.append(t)
    tasks = rank_by_difficulty(tasks, known or {}, cfg or DifficultyCfg())
    if limit is not None and len(tasks) > limit:
        dropped[f"{source}:over_limit"] += len(tasks) - limit
        tasks = tasks[:limit]
    return tasks, dropped


def select_tasks(tasks: Sequence[GradingTask], max_prompts: int) -> tuple[list[GradingTask], Counter]:
    """The ``max_prompts`` hardest of several sources' ranked tasks (a prompt that two sources
    share is kept once)."""
    seen, unique, dropped = set(), [], Counter()
    for t in sorted(tasks, key=lambda t: (-t.meta.get("difficulty", 0.0), _hash(t.id))):
        key = normalized_text(t.prompt)
        if key in seen:
            dropped[f"{t.source}:duplicate_prompt"] += 1
            continue
        seen.add(key)
        unique.append(t)
    for t in unique[max_prompts:]:
        dropped[f"{t.source}:over_max_prompts"] += 1
    return unique[:max_prompts], dropped


def devsecops_tasks(limit: int | None, max_prompt_chars: int) -> tuple[list[GradingTask], Counter]:
    """The DevSecOps seed prompts (assets/devsecops_prompts.yaml), at most ``limit``."""
    tasks, dropped = [], Counter()
    for t in load_devsecops_tasks():
        if len(t.prompt) > max_prompt_chars:
            dropped["devsecops:prompt_too_long"] += 1
        else:
            tasks.append(t)
    if limit is not None and len(tasks) > limit:
        # round-robin over kinds, so a small (local) limit still covers Dockerfile, Bash, Terraform, k8s
        by_kind: dict[str, list[GradingTask]] = {}
        for t in tasks:
            by_kind.setdefault(t.kind, []).append(t)
        spread = [t for rnd in zip_longest(*by_kind.values()) for t in rnd if t is not None]
        dropped["devsecops:over_limit"] += len(tasks) - limit
        tasks = spread[:limit]
    return tasks, dropped


# ------------------------------------------------------------------------------------- pairing
@dataclass
class ExecPairsResult:
    rows: list[dict]  # normalized DPO rows
    grades: list[dict]  # one row per graded completion (for audit), with its origin
    dropped: Counter = field(default_factory=Counter)  # prompts without a pair, by reason
    summary: dict = field(default_factory=dict)
    groups_by_kind: dict[str, list] = field(default_factory=dict)  # kind -> [[ScoredCompletion]*k] (model samples)


def build_exec_pairs(tasks: Sequence[GradingTask], generate: Generate, grader: Any, *, n: int = 4,
                     temperature: float = 1.0, min_margin: float = 0.1, max_pairs_per_prompt: int = 4,
                     drop_same_code: bool = True, inject_pool: bool = False) -> ExecPairsResult:
    """Sample ``n`` completions per task, grade all of them (plus each task's reference when
    ``inject_pool``) in one batch, and pair them with :func:`pairs.select_pairs`."""
    tasks = list(tasks)
    t0 = time.monotonic()
    samples = generate([t.prompt for t in tasks], n, temperature) if tasks else []
    sample_s = time.monotonic() - t0
    if len(samples) != len(tasks) or any(len(s) != n or not all(isinstance(c, str) for c in s) for s in samples):
        raise ValueError(f"generate returned {[len(s) for s in samples]} completions for {len(tasks)} prompts; "
                         f"expected {n} strings per prompt")
    pools = [[(c, MODEL) for c in s] + ([(t.reference, INJECTED)] if inject_pool and t.reference else [])
             for t, s in zip(tasks, samples)]
    t0 = time.monotonic()
    flat = grader.grade_many([(t, c) for t, pool in zip(tasks, pools) for c, _ in pool])
    grade_s = time.monotonic() - t0
    rows, grade_rows, dropped, left_out = [], [], Counter(), Counter()
    not_sealed = Counter()  # python tests the host could not seal (they fail without running) / without an assertion
    groups: dict[str, list] = {}
    per_prompt: Counter = Counter()
    seen: set[str] = set()
    at = 0
    for task, pool in zip(tasks, pools):
        scored = scored_from_grades([c for c, _ in pool], flat[at:at + len(pool)])
        at += len(pool)
        origins = [o for _, o in pool]
        groups.setdefault(task.kind, []).append([s for s, o in zip(scored, origins) if o == MODEL])
        tests = next((c for s in scored for c in (s.grade or {}).get("checks", []) if c.get("name") == "tests"), None)
        if task.kind == "python" and tests is not None:
            d = tests.get("detail") or {}
            not_sealed.update(tests=d.get("total", 0), unsealed=d.get("unsealed", 0), no_assert=d.get("no_assert", 0),
                              prompts=1, prompts_with_unsealed=bool(d.get("unsealed") or d.get("no_assert")))
        for j, (s, origin) in enumerate(zip(scored, origins)):
            grade_rows.append({"task_id": task.id, "source": task.source, "kind": task.kind, "sample": j,
                               "origin": origin, "score": s.score, "passed": s.passed,
                               "failed_gate": (s.grade or {}).get("failed_gate") or "",
                               "checks": json.dumps((s.grade or {}).get("checks", []), default=str),
                               "completion": s.completion})
        code_of = (lambda c, k=task.kind: extract_code(c, k)) if drop_same_code else None
        choices, why = select_pairs(scored, min_margin=min_margin, max_pairs=max_pairs_per_prompt,
                                    code_of=code_of, seen=seen)
        left_out.update(why)
        made = 0
        for ch in choices:
            row, reason = pair_row(task.id, task.prompt, scored, ch, task_source=task.source, extra_meta={
                "kind": task.kind, "temperature": temperature, "chosen_origin": origins[ch.chosen],
                "rejected_origin": origins[ch.rejected], "difficulty": task.meta.get("difficulty"),
                "difficulty_basis": task.meta.get("difficulty_basis")})
            if row is None:
                left_out[f"quarantined:{reason}"] += 1
            else:
                rows.append({**row, "source": EXEC_SOURCE})
                made += 1
        per_prompt[made] += 1
        if not made:
            dropped[_no_pair_reason(scored, why)] += 1
    metas = [json.loads(r["meta"]) for r in rows]
    all_groups = [g for gs in groups.values() for g in gs]
    summary = {"prompts": len(tasks), "pairs": len(rows), "samples_per_prompt": n, "temperature": temperature,
               "min_margin": min_margin, "max_pairs_per_prompt": max_pairs_per_prompt,
               "overall": pass_rate_summary(all_groups),
               "by_kind": {k: pass_rate_summary(g) for k, g in sorted(groups.items())},
               "pairs_by_kind": dict(Counter(m["kind"] for m in metas)),
               "pairs_by_tier": {t: sum(m["tier"] == t for m in metas) for t in TIERS},
               # {pairs made: prompts}
               "pairs_per_prompt": {str(k): per_prompt[k] for k in sorted(per_prompt)},
               "margin_histogram": margin_histogram(m["margin"] for m in metas),
               "candidate_pairs_left_out": dict(left_out),
               "pool_injected": sum(len(p) - n for p in pools),
               "pairs_with_injected": sum(INJECTED in (m["chosen_origin"], m["rejected_origin"]) for m in metas),
               "difficulty_basis": dict(Counter(t.meta.get("difficulty_basis", "none") for t in tasks)),
               # tests whose verdict would rest on the sandbox's word fail for every sample (sandbox/sealed.py)
               "python_tests_not_sealed": {k: not_sealed[k] for k in ("prompts", "prompts_with_unsealed", "tests",
                                                                      "unsealed", "no_assert")},
               "no_pair_by_reason": dict(dropped), "sample_s": round(sample_s, 2), "grade_s": round(grade_s, 2)}
    return ExecPairsResult(rows, grade_rows, dropped, summary, groups)


def _no_pair_reason(scored: Sequence[Any], why: Counter) -> str:
    """Why a prompt gave no pair: equal scores, or the most frequent reason its candidates were left out."""
    if len({s.score for s in scored}) <= 1:
        return "all_scores_equal"
    return why.most_common(1)[0][0] if why else "no_candidate"


# ------------------------------------------------------------------------------------- samplers
def _user_turn(prompt: str) -> GenRequest:
    return GenRequest(messages=({"role": "user", "content": prompt},))


class TransformersSampler:
    """Temperature sampling with transformers (+ a PEFT adapter on its base, never merged)."""

    def __init__(self, ref: ModelRef, *, device: str = "cpu", dtype: str = "float32", batch_size: int = 8,
                 max_new_tokens: int = 1024, seed: int = 0) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.ref, self.device, self.batch_size = ref, device, batch_size
        self.max_new_tokens, self.seed = max_new_tokens, seed
        tok_dir = ref.adapter_dir if ref.adapter_dir and (Path(ref.adapter_dir) / "tokenizer_config.json").exists() \
            else ref.model_dir
        self.tok = AutoTokenizer.from_pretrained(tok_dir)
        self.tok.padding_side = "left"  # decoder-only batching
        if self.tok.pad_token is None:
            self.tok.pad_token = self.tok.eos_token
        model = AutoModelForCausalLM.from_pretrained(ref.model_dir, dtype=getattr(torch, dtype))
        if ref.adapter_dir:
            from peft import PeftModel

            model = PeftModel.from_pretrained(model, ref.adapter_dir)
        self.model = model.to(device).eval()
        self.max_context = int(getattr(model.config, "max_position_embeddings", 0) or 4096)
        eos = model.generation_config.eos_token_id
        self.eos = [eos] if isinstance(eos, int) else list(eos or [])
        for t in ("<|im_end|>", "<|endoftext|>"):
            tid = self.tok.convert_tokens_to_ids(t)
            if isinstance(tid, int) and tid >= 0 and tid != self.tok.unk_token_id and tid not in self.eos:
                self.eos.append(tid)

    def __call__(self, prompts: list[str], n: int, temperature: float) -> list[list[str]]:
        import torch

        ids = [self.tok(render_prompt(self.tok, _user_turn(p)), add_special_tokens=False).input_ids for p in prompts]
        too_long = [i for i, x in enumerate(ids) if len(x) + self.max_new_tokens > self.max_context]
        if too_long:
            raise ValueError(f"{len(too_long)} prompt(s) do not fit {self.max_context} tokens with "
                             f"{self.max_new_tokens} new ones (first: #{too_long[0]}); lower max_prompt_chars")
        out: list[list[str]] = [[] for _ in prompts]
        order = sorted(range(len(prompts)), key=lambda i: len(ids[i]))  # similar lengths batch together
        pad = self.tok.pad_token_id
        for b, start in enumerate(range(0, len(order), self.batch_size)):
            chunk = order[start:start + self.batch_size]
            width = max(len(ids[i]) for i in chunk)
            input_ids = torch.tensor([[pad] * (width - len(ids[i])) + ids[i] for i in chunk])
            mask = torch.tensor([[0] * (width - len(ids[i])) + [1] * len(ids[i]) for i in chunk])
            torch.manual_seed(self.seed * 1_000_003 + b)  # the same run samples the same completions
            with torch.inference_mode():
                gen = self.model.generate(
                    input_ids=input_ids.to(self.device), attention_mask=mask.to(self.device), do_sample=True,
                    temperature=temperature, top_p=1.0, top_k=0, num_return_sequences=n,
                    max_new_tokens=self.max_new_tokens, eos_token_id=self.eos, pad_token_id=pad)
            for r, i in enumerate(chunk):  # outputs are grouped per input: rows r*n .. r*n+n-1
                for j in range(n):
                    toks = gen[r * n + j, width:].tolist()
                    cut = next((k for k, t in enumerate(toks) if t in self.eos), len(toks))
                    out[i].append(self.tok.decode(toks[:cut], skip_special_tokens=True))
        return out


class VLLMServerSampler:
    """``n`` samples per prompt from an OpenAI-compatible ``/v1/completions`` server (vllm serve)."""

    def __init__(self, ref: ModelRef, *, base_url: str, served_name: str | None = None,
                 api_key_env: str | None = None, max_new_tokens: int = 1024, seed: int = 0,
                 concurrency: int = 16, timeout_s: float = 900.0) -> None:
        import httpx
        from transformers import AutoTokenizer

        self.tok = AutoTokenizer.from_pretrained(ref.adapter_dir if ref.adapter_dir and
                                                 (Path(ref.adapter_dir) / "tokenizer_config.json").exists()
                                                 else ref.model_dir)
        # a LoRA adapter is addressed by the name it was registered under with --lora-modules
        self.served_name = served_name or (ref.name if ref.adapter_dir else ref.model_dir)
        key = os.environ.get(api_key_env) if api_key_env else None
        self._http = httpx.Client(base_url=base_url.rstrip("/"), timeout=timeout_s,
                                  headers={"Authorization": f"Bearer {key}"} if key else {})
        self.max_new_tokens, self.seed, self.concurrency = max_new_tokens, seed, concurrency

    def _one(self, i: int, prompt: str, n: int, temperature: float) -> list[str]:
        body = {"model": self.served_name, "prompt": render_prompt(self.tok, _user_turn(prompt)), "n": n,
                "temperature": temperature, "top_p": 1.0, "top_k": -1, "max_tokens": self.max_new_tokens,
                "seed": self.seed * 1_000_003 + i, "skip_special_tokens": True}
        r = self._http.post("/v1/completions", json=body)
        if r.status_code != 200:
            raise server_error(r, self._http.headers.get("Authorization", ""))
        choices = sorted(r.json()["choices"], key=lambda c: c.get("index", 0))
        if len(choices) != n:
            raise RuntimeError(f"inference server returned {len(choices)} choices for n={n}")
        return [c["text"] for c in choices]

    def __call__(self, prompts: list[str], n: int, temperature: float) -> list[list[str]]:
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            return list(pool.map(lambda a: self._one(a[0], a[1], n, temperature), enumerate(prompts)))


def make_sampler(ref: ModelRef, settings: Any) -> Generate:
    """The sampler a profile's ``phases.synth`` asks for (``settings``: config.SynthProfile)."""
    if settings.backend == "transformers":
        return TransformersSampler(ref, device=settings.device, dtype=settings.dtype, batch_size=settings.batch_size,
                                   max_new_tokens=settings.max_new_tokens, seed=settings.seed)
    if settings.backend == "vllm_server":
        return VLLMServerSampler(ref, base_url=settings.base_url, served_name=settings.served_name,
                                 api_key_env=settings.api_key_env, max_new_tokens=settings.max_new_tokens,
                                 seed=settings.seed, concurrency=settings.concurrency)
    raise ValueError(f"unknown sampling backend {settings.backend!r}")


# --------------------------------------------------------------------- checkpoint -> model dir
def checkpoint_model_ref(store: Any, dest: Path, *, asset: str = AGENT_CHECKPOINT,
                         stage: str | None = None, base_model_dir: str | None = None) -> ModelRef:
    """A checkpoint asset's latest artifact as a local model dir (downloaded, verified, reused).

    Resolves the pointer a training stage leaves in the object store (storage/checkpoints.py) ->
    ``<output_prefix>/merged`` or ``/adapter``, so neither a Dagster instance nor the training
    phase's code is needed. ``stage`` defaults to the asset's name without ``_checkpoint``
    (assets/training.yaml names them so). The merged policy is preferred (self-contained; stage
    1.6 merges); an adapter-only checkpoint needs ``base_model_dir`` for its base.
    FileNotFoundError when the checkpoint was never materialized.
    """
    ckpt = latest_checkpoint(store, stage or asset.removesuffix("_checkpoint"), asset)
    part = ckpt.served_part
    if part == "adapter" and not base_model_dir:
        raise ValueError(f"{asset} has only an adapter (merge: false); set phases.synth.base_model_dir to its base")
    download_tree(store, ckpt.part_prefix(part), dest / part)
    if part == "merged":
        return ModelRef(name=asset, model_dir=str(dest / "merged"), revision=ckpt.data_version)
    return ModelRef(name=asset, model_dir=base_model_dir, adapter_dir=str(dest / "adapter"),
                    revision=ckpt.data_version)
