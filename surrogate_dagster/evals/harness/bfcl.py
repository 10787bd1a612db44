"""BFCL v4, single-turn AST categories, on the shipped question + possible_answer files.

What runs: for each category file (``BFCL_v4_<category>.json``, JSON Lines) the first-turn messages
go to the model with the functions listed the way our tool data trains it (Hermes system prompt,
tools as JSON Schema inside ``<tools></tools>``, ``sources/hermes.py``); ``<tool_call>`` blocks are
decoded with the same Hermes parser into BFCL's AST form ``[{name: arguments}]``.

Who judges: bfcl-eval's own ``ast_checker`` and relevance rule (``.bfcl_official``, run out of
process in the bfcl-eval environment) whenever that environment exists; the report then says
``scorer: bfcl-eval <version>``. Without it the project's checker (:mod:`.bfcl_ast`, held to the same
verdicts by ``tests/env/test_bfcl_official_parity.py``) scores, labelled ``project-ast (parity-tested)``.
With the official checker the project's verdicts are computed too and disagreements counted
(``metrics.parity_disagreements``), so a drift shows up on real model outputs.

Relevance categories: ``irrelevance`` and ``live_irrelevance`` pass when no call is decoded,
``live_relevance`` when at least one is.

Not run (and said so in every report): multi_turn_* (needs BFCL's executable API classes and
function docs not shipped here), web_search, memory, format_sensitivity, simple_java and
simple_javascript. The score is the unweighted mean accuracy of the categories that ran, named
"BFCL v4 AST subset", not the leaderboard's overall.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Sequence

from ...sources.hermes import HERMES_SYSTEM_TEMPLATE, hermes_system_prompt, parse_tool_calls
from ...inference import GenRequest, InferenceClient
from . import bfcl_official
from .bfcl_ast import check_sample
from .common import EvalReport, Timer, pct, sha256_bytes

BENCHMARK = "bfcl"
AST_CATEGORIES = ("simple_python", "multiple", "parallel", "parallel_multiple", "live_simple", "live_multiple",
                  "live_parallel", "live_parallel_multiple")
RELEVANCE_CATEGORIES = ("irrelevance", "live_irrelevance", "live_relevance")
SCORERS = ("auto", "official", "project")
NOT_RUN = ("multi_turn_base", "multi_turn_long_context", "multi_turn_miss_func", "multi_turn_miss_param",
           "web_search", "memory", "format_sensitivity", "simple_java", "simple_javascript")


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def load_category(data_dir: Path, category: str) -> tuple[list[dict], dict[str, list], dict]:
    """(questions, answers by id, file info) of one category."""
    qf = data_dir / f"BFCL_v4_{category}.json"
    questions = read_jsonl(qf)
    info = {"file": qf.name, "sha256": sha256_bytes(qf.read_bytes())}
    answers: dict[str, list] = {}
    if category in AST_CATEGORIES:
        af = data_dir / "possible_answer" / qf.name
        answers = {r["id"]: r["ground_truth"] for r in read_jsonl(af)}
        info["answers_sha256"] = sha256_bytes(af.read_bytes())
        missing = [q["id"] for q in questions if q["id"] not in answers]
        if missing:
            raise ValueError(f"BFCL {category}: {len(missing)} question(s) without ground truth, e.g. {missing[:3]}")
    return questions, answers, info


def system_prompt(functions: list[dict]) -> tuple[str, bool]:
    """Hermes system prompt; (prompt, normalized?) -- a schema the normalizer rejects is listed raw."""
    try:
        return hermes_system_prompt(functions), True
    except ValueError:
        listing = "\n".join(json.dumps({"type": "function", "function": f}, ensure_ascii=False) for f in functions)
        return HERMES_SYSTEM_TEMPLATE.format(tools=listing), False


def build_request(q: dict, max_new_tokens: int) -> tuple[GenRequest, bool]:
    turn = [dict(m) for m in q["question"][0]]
    sys_extra = "\n\n".join(m["content"] for m in turn if m["role"] == "system")
    sys_prompt, normalized = system_prompt(q.get("function") or [])
    if sys_extra:
        sys_prompt += "\n\n" + sys_extra
    msgs = [{"role": "system", "content": sys_prompt}] + [m for m in turn if m["role"] != "system"]
    return GenRequest(messages=tuple(msgs), max_new_tokens=max_new_tokens), normalized


def decode_calls(text: str) -> tuple[list[dict], str | None]:
    """Hermes calls in the output; (calls, decode error)."""
    try:
        return parse_tool_calls(text), None
    except ValueError as e:
        return [], str(e)[:200]


def project_verdict(category: str, q: dict, answers: dict[str, list], calls: list[dict],
                    err: str | None) -> tuple[bool, str | None]:
    """(passed, reason if not) by the project's checker, for calls already decoded."""
    if category in ("irrelevance", "live_irrelevance"):
        return (not calls), ("made a call where none applies" if calls else None)
    if category == "live_relevance":
        return bool(calls), (None if calls else (err or "no call decoded"))
    if err:
        return False, f"decode: {err}"
    if not calls:
        return False, "no call decoded"
    reason = check_sample(category, q.get("function") or [], calls, answers[q["id"]])
    return reason is None, reason


def score_output(category: str, q: dict, answers: dict[str, list], text: str) -> tuple[bool, str | None, list]:
    """(passed, reason if not, decoded calls) for one model output, by the project's checker."""
    calls, err = decode_calls(text)
    ok, reason = project_verdict(category, q, answers, calls, err)
    return ok, reason, calls


def pick_scorer(scorer: str) -> str:
    """"official" or "project" for the requested ``scorer`` ("auto": official when its env exists)."""
    if scorer not in SCORERS:
        raise ValueError(f"BFCL scorer {scorer!r}: expected one of {SCORERS}")
    if scorer == "official" and bfcl_official.official_python() is None:
        raise bfcl_official.OfficialCheckerError(
            "BFCL scorer 'official' requested but no bfcl-eval environment: run `make setup` (builds .venv-bfcl) "
            f"or set {bfcl_official.ENV_VAR}")
    if scorer == "auto":
        return "official" if bfcl_official.official_python() is not None else "project"
    return scorer


def run(client: InferenceClient, data_dir: str | Path, *, categories: Sequence[str], max_per_category: int | None,
        max_new_tokens: int = 512, scorer: str = "auto", log: Callable[[str], None] | None = None) -> EvalReport:
    """Evaluate one checkpoint on the given categories (``scorer``: see :func:`pick_scorer`)."""
    data_dir = Path(data_dir)
    unknown = [c for c in categories if c not in AST_CATEGORIES + RELEVANCE_CATEGORIES]
    if unknown:
        raise ValueError(f"BFCL categories not scorable here: {unknown}; not run by design: {list(NOT_RUN)}")
    use = pick_scorer(scorer)
    samples, files, totals, raw_listed, items = [], {}, {}, 0, []
    gen_s = score_s = 0.0
    for cat in categories:
        questions, answers, info = load_category(data_dir, cat)
        files[cat] = info
        totals[cat] = len(questions)
        chosen = questions[:max_per_category] if max_per_category else questions
        built = [build_request(q, max_new_tokens) for q in chosen]
        raw_listed += sum(not ok for _, ok in built)
        with Timer() as tg:
            gens = client.generate([r for r, _ in built])
        gen_s += tg.s
        with Timer() as ts:
            for q, g in zip(chosen, gens):
                calls, err = decode_calls(g.text)
                ok, reason = project_verdict(cat, q, answers, calls, err)
                samples.append({"category": cat, "id": q["id"], "output": g.text, "calls": calls, "passed": ok,
                                "reason": reason, "finish_reason": g.finish_reason})
                items.append(bfcl_official.make_item(f"{cat}/{q['id']}", cat, q.get("function") or [],
                                                     answers.get(q["id"]), calls, err))
        score_s += ts.s
    metrics: dict = {}
    if use == "official":
        with Timer() as ts:
            label, verdicts = bfcl_official.check(items)
        score_s += ts.s
        disagree = []
        for s in samples:
            v = verdicts[f"{s['category']}/{s['id']}"]
            if v["valid"] != s["passed"]:
                disagree.append(f"{s['category']}/{s['id']}")
            s["project_passed"], s["project_reason"] = s["passed"], s["reason"]
            s["passed"] = bool(v["valid"])
            s["reason"] = None if v["valid"] else f"{v['error_type']}: {v['error']}"
        metrics["parity_disagreements"] = len(disagree)
        metrics["parity_disagreement_ids"] = disagree[:20]
        metrics["checker_exceptions"] = sum(verdicts[k]["error_type"] == "checker_exception" for k in verdicts)
    else:
        label = bfcl_official.PROJECT_SCORER
    per_cat = {}
    for cat in categories:
        got = [s["passed"] for s in samples if s["category"] == cat]
        per_cat[cat] = pct(sum(got), len(got))
        if log:
            log(f"BFCL {cat}: {sum(got)}/{len(got)} ({label})")
    n = len(samples)
    overall = round(sum(per_cat.values()) / len(per_cat), 3) if per_cat else 0.0
    subset = any(max_per_category and totals[c] > max_per_category for c in categories)
    notes = [f"not run: {', '.join(NOT_RUN)} (see harness docstring)",
             f"scorer: {label}" + ("" if use == "official" else
                                   " -- bfcl-eval environment absent; the project's checker, held to bfcl-eval's "
                                   "verdicts by a parity test, scored")]
    if subset:
        notes.append(f"subset: first {max_per_category} questions per category (max_per_category)")
    if raw_listed:
        notes.append(f"{raw_listed} prompt(s) listed their functions raw (schema not normalizable)")
    return EvalReport(
        benchmark=BENCHMARK, variant=f"BFCL v4 AST subset ({len(per_cat)} categories, Hermes tool-call format)",
        version="v4 (gorilla @ 6ea57973)", status="ok", score=overall,
        score_name="unweighted mean accuracy over the categories run", n_items=n, samples=samples,
        dataset={"source": "shared BFCL v4 copy", "dir": str(data_dir), "files": files},
        metrics={"scorer": label, "accuracy_by_category": per_cat, "questions_by_category": totals,
                 "passed": sum(s["passed"] for s in samples), **metrics, "inference": client.describe()},
        timings={"generate_s": round(gen_s, 3), "score_s": round(score_s, 3),
                 "samples_per_s": round(n / (gen_s + score_s), 3) if n else 0.0,
                 "score_samples_per_s": round(n / score_s, 1) if n and score_s else 0.0},
        notes=notes)
