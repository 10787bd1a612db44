"""BFCL v4 as its leaderboard scores it: bfcl-eval's own generation and evaluation, overall by the
leaderboard's weighting over the categories that run here.

Default (``scorer="auto"`` where the bfcl-eval environment exists: ``bfcl-eval``): bfcl-eval runs
everything, out of process (:mod:`.bfcl_eval_runner` in ``.venv-bfcl``): its prompts (the
``Qwen/Qwen3-8B-FC`` registry entry, Qwen's Hermes ``<tool_call>`` format), its multi-turn loop
over its simulated backends (file system, trading, travel, ... : offline), its decoding and its
checkers, against the checkpoint served on an OpenAI-compatible endpoint (:mod:`.served`: the
profile's ``vllm serve``, or the transformers stand-in started for the checkpoint). The score is
the leaderboard's overall (:mod:`.bfcl_overall`, held to bfcl-eval's ``generate_leaderboard_csv``)
over the categories that ran, weights renormalized; bfcl-eval's own figure with the categories not
run counted 0 is in the metrics beside it. The report names every category not run and why
(``not_run`` in assets/evals.yaml: the agentic ones need the internet or a Hub model).

Fallback (no bfcl-eval environment: ``project``), said in the report's notes and metrics
(``fallback``): the project's prompts and checker over the single-turn Python categories only, the
rest named as not run. ``official``: the project's prompts judged by bfcl-eval's checker (the parity
test of the project's checker, ``tests/env/test_bfcl_official_parity.py``).

In-process prompts (``project``/``official``): for each category file (``BFCL_v4_<category>.json``, JSON Lines) the first-turn messages
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

"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Sequence

from ...sources.hermes import HERMES_SYSTEM_TEMPLATE, hermes_system_prompt, parse_tool_calls
from ...inference import GenRequest, InferenceClient
from . import bfcl_official, bfcl_overall
from .bfcl_ast import check_sample
from .common import EvalReport, Timer, pct, sha256_bytes

BENCHMARK = "bfcl"
AST_CATEGORIES = ("simple_python", "multiple", "parallel", "parallel_multiple", "live_simple", "live_multiple",
                  "live_parallel", "live_parallel_multiple")
RELEVANCE_CATEGORIES = ("irrelevance", "live_irrelevance", "live_relevance")
SCORERS = ("auto", "bfcl-eval", "official", "project")
RUNNER = Path(__file__).with_name("bfcl_eval_runner.py")
IN_PROCESS_REASON = "the project's prompts and checker cover the single-turn Python categories only"


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
    """"bfcl-eval", "official" or "project" for the requested ``scorer`` ("auto": bfcl-eval when its
    environment exists, else the project's checker)."""
    if scorer not in SCORERS:
        raise ValueError(f"BFCL scorer {scorer!r}: expected one of {SCORERS}")
    if scorer in ("official", "bfcl-eval") and bfcl_official.official_python() is None:
        raise bfcl_official.OfficialCheckerError(
            f"BFCL scorer {scorer!r} requested but no bfcl-eval environment: run `make setup` (builds .venv-bfcl) "
            f"or set {bfcl_official.ENV_VAR}")
    if scorer == "auto":
        return "bfcl-eval" if bfcl_official.official_python() is not None else "project"
    return scorer


def leaderboard_score(per_cat: dict[str, float], counts: dict[str, int]) -> tuple[float, dict]:
    """(overall in percent over the categories given, the overall's detail) by the leaderboard's formula."""
    scores = {c: {"accuracy": per_cat[c] / 100, "total_count": counts[c]} for c in per_cat}
    res = bfcl_overall.overall(scores, missing="drop")
    value = 0.0 if res["overall"] is None else round(100 * res["overall"], 3)
    return value, {"groups": {g: round(100 * v, 3) for g, v in res["groups"].items()},
                   "categories_in_overall": res["used"], "leaderboard_categories_missing": res["missing"]}


def run(client: InferenceClient, data_dir: str | Path, *, categories: Sequence[str], max_per_category: int | None,
        max_new_tokens: int = 512, max_tokens_cap: int | None = None, scorer: str = "auto",
        not_run: dict[str, str] | None = None, work_dir: str | Path | None = None,
        log: Callable[[str], None] | None = None) -> EvalReport:
    """Evaluate one checkpoint on ``categories`` (``scorer``: see :func:`pick_scorer`); ``not_run``:
    the leaderboard's categories that cannot run here, with why (named in the report).
    ``max_new_tokens``: the answer budget of the in-process prompts; bfcl-eval sets its own (up to
    4096 per request) unless ``max_tokens_cap`` caps it (a profile's small-machine override)."""
    use = pick_scorer(scorer)
    not_run = dict(not_run or {})
    fallback = "bfcl-eval environment absent (.venv-bfcl, or SURROGATE_BFCL_PYTHON)"
    if use == "bfcl-eval" and scorer == "auto" and not servable(client):
        use, fallback = "project", f"{type(client).__name__} serves no model bfcl-eval can query"
    if use == "bfcl-eval":
        return _run_bfcl_eval(client, Path(data_dir), categories=categories, max_per_category=max_per_category,
                              max_tokens_cap=max_tokens_cap, not_run=not_run, work_dir=work_dir, log=log)
    return _run_in_process(client, Path(data_dir), categories=categories, max_per_category=max_per_category,
                           max_new_tokens=max_new_tokens, use=use, not_run=not_run, fallback=fallback, log=log)


def servable(client: InferenceClient) -> bool:
    """Whether bfcl-eval can query ``client``'s model: a served one, or an in-process transformers
    model the stand-in server can serve (a test double cannot)."""
    from ...inference import TransformersInference, VLLMServerInference

    return isinstance(client, (VLLMServerInference, TransformersInference))


def _run_bfcl_eval(client: InferenceClient, data_dir: Path, *, categories: Sequence[str],
                   max_per_category: int | None, max_tokens_cap: int | None, not_run: dict[str, str],
                   work_dir: str | Path | None, log: Callable[[str], None] | None) -> EvalReport:
    import os
    import subprocess
    import tempfile

    from .served import KEY_ENV, openai_endpoint

    python = bfcl_official.official_python()
    work = Path(work_dir) if work_dir else Path(tempfile.mkdtemp(prefix="bfcl_eval_"))
    work.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="bfcl_run_", dir=work) as tmp, \
            openai_endpoint(client, work_dir=work, log=log) as ep:
        spec = {"project_root": str(Path(tmp) / "bfcl"), "base_url": ep.base_url,
                "api_key_env": KEY_ENV if ep.api_key else None, "tokenizer_dir": ep.tokenizer_dir,
                "served_name": ep.served_name, "categories": list(categories), "max_per_category": max_per_category,
                "num_threads": getattr(client, "concurrency", 1) if not ep.managed_here else 1,
                "max_tokens_cap": max_tokens_cap, "data_dir": str(data_dir)}
        spec_path, out_path = Path(tmp) / "spec.json", Path(tmp) / "result.json"
        spec_path.write_text(json.dumps(spec))
        with Timer() as tg:
            proc = subprocess.run([str(python), "-I", str(RUNNER), "--spec", str(spec_path), "--out", str(out_path)],
                                  capture_output=True, text=True, env={**os.environ, **ep.child_env()})
        if proc.returncode != 0 or not out_path.exists():
            raise bfcl_official.OfficialCheckerError(
                f"bfcl-eval generation/evaluation failed (exit {proc.returncode}): {proc.stderr.strip()[-1500:]}")
        res = json.loads(out_path.read_text())
    per_cat = {c: round(100 * v["accuracy"], 3) for c, v in res["scores"].items()}
    counts = {c: int(v["total_count"]) for c, v in res["scores"].items()}
    score, detail = leaderboard_score(per_cat, counts)
    zero = res["overall_missing_as_zero"]["overall"]
    for c in res["not_scored"]:
        not_run.setdefault(c, "bfcl-eval wrote no score for it")
    samples = res["entries"]
    n = len(samples)
    notes = [f"scorer: {res['scorer']} (generation and evaluation; handler {res['handler']})",
             "score: the leaderboard's overall (bfcl-eval generate_leaderboard_csv weighting 10/10/10/30/40 over "
             "non-live, live, irrelevance, multi-turn, agentic) over the categories run, weights renormalized; "
             f"bfcl-eval's own figure with the categories not run counted 0: "
             f"{'n/a' if zero is None else round(100 * zero, 3)}",
             "not run: " + ("; ".join(f"{c} ({why})" for c, why in not_run.items()) or "none")]
    if max_per_category:
        notes.append(f"subset: first {max_per_category} entries per category (bfcl-eval --run-ids, partial eval)")
    if max_tokens_cap:
        notes.append(f"max_tokens capped at {max_tokens_cap} per request (bfcl-eval asks up to 4096)")
    if ep.managed_here:
        notes.append("served by the transformers stand-in for vllm serve, started for this report")
    if log:
        for c, v in per_cat.items():
            log(f"BFCL {c}: {v} ({res['scorer']})")
    return EvalReport(
        benchmark=BENCHMARK, variant=f"BFCL v4 leaderboard overall over {len(per_cat)} categories run by bfcl-eval",
        version=f"v4 ({res['scorer']})", status="ok", score=score,
        score_name="leaderboard overall (bfcl-eval weighting) over the categories run", n_items=n, samples=samples,
        dataset={"source": "shared BFCL v4 copy (equal to bfcl-eval's packaged files, checked per file)",
                 "dir": str(data_dir), "files": res["files"]},
        metrics={"scorer": res["scorer"], "generation": res["scorer"], "handler": res["handler"],
                 "accuracy_by_category": per_cat, "entries_by_category": counts,
                 "questions_by_category": res["questions_by_category"], **detail,
                 "bfcl_overall_missing_as_zero": None if zero is None else round(100 * zero, 3),
                 "bfcl_overall_csv": None if res["bfcl_overall_csv"] is None else round(100 * res["bfcl_overall_csv"], 3),
                 "not_run": not_run, "passed": sum(s["passed"] for s in samples), "inference": client.describe()},
        timings={"generate_and_score_s": round(tg.s, 3), "samples_per_s": round(n / tg.s, 3) if n and tg.s else 0.0},
        notes=notes)


def _run_in_process(client: InferenceClient, data_dir: Path, *, categories: Sequence[str],
                    max_per_category: int | None, max_new_tokens: int, use: str, not_run: dict[str, str],
                    fallback: str, log: Callable[[str], None] | None) -> EvalReport:
    """The project's prompts and decoding; verdicts by bfcl-eval's checker (``official``) or the project's."""
    checkable = AST_CATEGORIES + RELEVANCE_CATEGORIES
    for c in categories:
        if c not in checkable:
            not_run[c] = (f"{fallback}: " if use == "project" else "") + IN_PROCESS_REASON
    categories = [c for c in categories if c in checkable]
    if not categories:
        raise ValueError(f"BFCL: none of the categories is scorable without bfcl-eval ({IN_PROCESS_REASON})")
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
        metrics["fallback"] = (f"{fallback}: the project's prompts and checker scored, not bfcl-eval's generation "
                               "and evaluation")
    per_cat, counts = {}, {}
    for cat in categories:
        got = [s["passed"] for s in samples if s["category"] == cat]
        per_cat[cat] = pct(sum(got), len(got))
        counts[cat] = len(got)
        if log:
            log(f"BFCL {cat}: {sum(got)}/{len(got)} ({label})")
    n = len(samples)
    overall, detail = leaderboard_score(per_cat, counts)
    subset = any(max_per_category and totals[c] > max_per_category for c in categories)
    notes = [f"scorer: {label}" + ("" if use == "official" else
                                   f" -- FALLBACK ({fallback}): the project's checker, held to "
                                   "bfcl-eval's verdicts by a parity test, scored the project's prompts"),
             "score: the leaderboard's overall (bfcl-eval weighting) over the categories run, weights renormalized",
             "not run: " + ("; ".join(f"{c} ({why})" for c, why in not_run.items()) or "none")]
    if subset:
        notes.append(f"subset: first {max_per_category} questions per category (max_per_category)")
    if raw_listed:
        notes.append(f"{raw_listed} prompt(s) listed their functions raw (schema not normalizable)")
    return EvalReport(
        benchmark=BENCHMARK, variant=f"BFCL v4 leaderboard overall over {len(per_cat)} single-turn categories "
                                     f"(project prompts, Hermes tool-call format; {label})",
        version="v4 (gorilla @ 6ea57973)", status="ok", score=overall,
        score_name="leaderboard overall (bfcl-eval weighting) over the categories run", n_items=n, samples=samples,
        dataset={"source": "shared BFCL v4 copy", "dir": str(data_dir), "files": files},
        metrics={"scorer": label, "accuracy_by_category": per_cat, "questions_by_category": totals, **detail,
                 "not_run": not_run, "passed": sum(s["passed"] for s in samples), **metrics,
                 "inference": client.describe()},
        timings={"generate_s": round(gen_s, 3), "score_s": round(score_s, 3),
                 "samples_per_s": round(n / (gen_s + score_s), 3) if n else 0.0,
                 "score_samples_per_s": round(n / score_s, 1) if n and score_s else 0.0},
        notes=notes)
