"""The custom DevSecOps eval (runbook Tier 2: Dockerfile / Kubernetes / Terraform / Bash / CVE, 280 tasks).

- Seed: ``assets/devsecops_eval_seed.yaml``, hand-written, >= 10 tasks per category, each with a
  reference answer that must pass its own validators (tests check it). The schema is the synth
  graders' (``synth/graders.py``): dockerfile/kubernetes/terraform tasks carry ``asserts`` over the
  parsed document, bash tasks ``cases`` run in the sandbox, CVE tasks are Python remediations with
  ``tests`` (kind ``python``). These are eval tasks: none of them is a training prompt.
- Expansion (:func:`expand`): the LLM writes new tasks per category in the same schema through a
  forced tool call; a candidate is kept only if (1) it parses into a task, (2) its reference passes
  every check of its own validators, (3) the reference of another task of the category FAILS them
  (validators that accept anything are rejected), and (4) its prompt is not a near-duplicate
  (word 3-gram Jaccard >= 0.6) of a kept one. Rejections are counted by reason.
- Scoring: the model's answer per task graded by :class:`~surrogate_dagster.synth.graders.Grader`
  (all execution and linting in the sandbox); ``passed`` = every check passed (tests/asserts/cases,
  no lint error or warning). Score = % passed; the mean grader score is reported beside it.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from ...catalog.loader import read_yaml_mapping
from ...synth.graders import GradingTask
from ...inference import GenRequest, InferenceClient
from .common import EvalReport, Timer, pct

BENCHMARK = "devsecops"
# The eval grades our own checkpoints' greedy answers and keeps its scores comparable with earlier
# runs: a Python test the host cannot seal (one seed test compares with a path only the sandbox
# knows) is run and its report trusted, as before. The execution-graded pairs, a training signal,
# never trust one (synth/graders.py, sandbox/sealed.py).
TRUST_UNSEALED = True
CATEGORIES = ("dockerfile", "kubernetes", "terraform", "bash", "cve")
KIND_OF = {"dockerfile": "dockerfile", "kubernetes": "kubernetes", "terraform": "terraform", "bash": "bash",
           "cve": "python"}
SYSTEM = ("You are a senior DevSecOps engineer. Answer with the requested file or code in one fenced code block, "
          "secure by default.")
TOOL = {
    "name": "record_eval_tasks",
    "description": "Record new evaluation tasks, each with validators and a reference answer that passes them.",
    "input_schema": {"type": "object", "required": ["tasks"], "properties": {"tasks": {"type": "array", "items": {
        "type": "object", "required": ["id", "prompt", "reference"],
        "properties": {"id": {"type": "string"}, "prompt": {"type": "string"}, "reference": {"type": "string"},
                       "asserts": {"type": "array", "items": {"type": "string"}},
                       "cases": {"type": "array", "items": {"type": "object"}},
                       "tests": {"type": "array", "items": {"type": "string"}}, "setup": {"type": "string"},
                       "cve": {"type": "string"}}}}}},
}


@dataclass
class Seed:
    tasks: list[GradingTask]
    k8s_version: str
    target_total: int


def task_from_dict(t: dict, category: str, k8s_version: str, source: str) -> GradingTask:
    """One YAML/LLM task -> GradingTask (raises ValueError on a malformed one)."""
    if category not in CATEGORIES:
        raise ValueError(f"unknown category {category!r}")
    kind = KIND_OF[category]
    for key in ("id", "prompt", "reference"):
        if not isinstance(t.get(key), str) or not t[key].strip():
            raise ValueError(f"task needs a non-empty {key!r}")
    task = GradingTask(id=t["id"], kind=kind, prompt=t["prompt"].strip(), tests=list(t.get("tests") or []),
                       setup=t.get("setup") or "", asserts=list(t.get("asserts") or []), cases=list(t.get("cases") or []),
                       reference=t["reference"], source=source,
                       meta={"category": category, "k8s_version": k8s_version, "cve": t.get("cve", "")})
    needs = {"python": task.tests, "bash": task.cases}.get(kind, task.asserts)
    if not needs:
        raise ValueError(f"task {task.id}: a {category} task needs its validators "
                         f"({'tests' if kind == 'python' else 'cases' if kind == 'bash' else 'asserts'})")
    return task


def load_seed(path: str | Path) -> Seed:
    data = read_yaml_mapping(Path(path))  # repeated keys refused, errors name the file
    k8s = str(data.get("k8s_version", "1.30.0"))
    tasks = [task_from_dict(t, t["category"], k8s, "devsecops_eval_seed") for t in data["tasks"]]
    ids = [t.id for t in tasks]
    if len(set(ids)) != len(ids):
        raise ValueError("duplicate task ids in the DevSecOps eval seed")
    return Seed(tasks, k8s, int(data.get("target_total", 280)))


def by_category(tasks: Sequence[GradingTask]) -> dict[str, list[GradingTask]]:
    out: dict[str, list[GradingTask]] = {c: [] for c in CATEGORIES}
    for t in tasks:
        out[t.meta["category"]].append(t)
    return out


def stratified(tasks: Sequence[GradingTask], n: int) -> list[GradingTask]:
    """A subset of ``n`` that takes the categories in turn (a small run still covers all five)."""
    cats = by_category(tasks)
    out: list[GradingTask] = []
    i = 0
    while len(out) < min(n, len(tasks)):
        for c in CATEGORIES:
            if i < len(cats[c]) and len(out) < n:
                out.append(cats[c][i])
        i += 1
    return out


def _shingles(text: str) -> set[tuple[str, ...]]:
    w = re.findall(r"\w+", text.lower())
    return {tuple(w[i:i + 3]) for i in range(max(0, len(w) - 2))}


def near_duplicate(prompt: str, others: Sequence[str], threshold: float = 0.6) -> bool:
    a = _shingles(prompt)
    for o in others:
        b = _shingles(o)
        if a and b and len(a & b) / len(a | b) >= threshold:
            return True
    return False


def validate_candidates(grader: Any, candidates: Sequence[GradingTask],
                        controls: dict[str, GradingTask]) -> list[tuple[GradingTask, str | None]]:
    """(task, None) when the reference passes and the category control's reference fails."""
    items = []
    for t in candidates:
        items.append((t, t.reference))
        items.append((t, controls[t.meta["category"]].reference))
    grades = grader.grade_many(items) if items else []
    out = []
    for i, t in enumerate(candidates):
        own, other = grades[2 * i], grades[2 * i + 1]
        if not own.passed:
            failed = [c.name for c in own.checks if not c.passed]
            out.append((t, f"reference_fails:{','.join(failed) or own.failed_gate}"))
        elif other.passed:
            out.append((t, "validators_accept_another_tasks_answer"))
        else:
            out.append((t, None))
    return out


def expand(llm: Any, grader: Any, seed: Seed, *, target_total: int | None = None, per_request: int = 8,
           max_rounds: int = 12, examples: int = 3, role: str = "scenario_writer",
           log: Callable[[str], None] | None = None) -> tuple[list[GradingTask], dict[str, Any]]:
    """Seed + LLM-written tasks, up to ``target_total`` split evenly over the categories.
    ``llm`` is an :class:`~surrogate_dagster.llm.client.LLMClient`; ``role`` the model role that
    writes (the synth catalog's scenario writer: same job, same model)."""
    target = target_total or seed.target_total
    per_cat = -(-target // len(CATEGORIES))
    kept = by_category(seed.tasks)
    reasons: Counter[str] = Counter()
    requests = 0
    for cat in CATEGORIES:
        controls = list(kept[cat])
        rounds = empty = 0
        # two replies in a row without a usable task (e.g. a model that will not call the tool): stop
        while len(kept[cat]) < per_cat and rounds < max_rounds and empty < 2:
            rounds += 1
            want = min(per_request, per_cat - len(kept[cat]))
            shown = [{k: v for k, v in _task_json(t).items()} for t in kept[cat][:examples]]
            prompt = (f"Write {want} NEW evaluation tasks for the category '{cat}' (the answer is a "
                      f"{KIND_OF[cat]} {'program' if cat in ('bash', 'cve') else 'file'}). Each task: an id, a prompt a "
                      f"DevSecOps engineer would get, validators in the same form as the examples, and a reference "
                      f"answer in a fenced block that passes them. Cover different topics than these examples:\n"
                      f"{json.dumps(shown, indent=1)}")
            resp = llm.complete(role, system="You write rigorous, executable evaluation tasks.",
                                messages=[{"role": "user", "content": prompt}], tools=[TOOL],
                                tool_choice={"type": "tool", "name": TOOL["name"]})
            requests += 1
            raw = [t for u in resp.tool_uses if u["name"] == TOOL["name"] for t in u["input"].get("tasks", [])]
            if not raw:
                reasons["no_tasks_in_reply"] += 1
                empty += 1
                continue
            empty = 0
            cands = []
            for t in raw:
                try:
                    task = task_from_dict(t, cat, seed.k8s_version, "devsecops_eval_llm")
                except (ValueError, TypeError):
                    reasons["malformed"] += 1
                    continue
                task.id = f"{cat}-llm-{len(kept[cat]) + len(cands) + 1:03d}-{re.sub(r'[^a-z0-9-]', '', task.id.lower())[:40]}"
                if near_duplicate(task.prompt, [k.prompt for k in kept[cat]] + [c.prompt for c in cands]):
                    reasons["near_duplicate"] += 1
                    continue
                cands.append(task)
            control = controls[rounds % len(controls)] if controls else None
            if control is None:
                raise ValueError(f"category {cat} has no seed task to act as a control")
            for task, why in validate_candidates(grader, cands, {cat: control}):
                if why:
                    reasons[why.split(":")[0]] += 1
                elif len(kept[cat]) < per_cat:
                    kept[cat].append(task)
        if log:
            log(f"devsecops {cat}: {len(kept[cat])}/{per_cat} after {rounds} round(s)")
    tasks = [t for c in CATEGORIES for t in kept[c]]
    stats = {"target_total": target, "per_category_target": per_cat, "kept": {c: len(kept[c]) for c in CATEGORIES},
             "total": len(tasks), "seed": len(seed.tasks), "llm_requests": requests, "rejected": dict(reasons),
             "shortfall": max(0, target - len(tasks))}
    return tasks, stats


def _task_json(t: GradingTask) -> dict:
    d = {"id": t.id, "prompt": t.prompt, "reference": t.reference}
    for k in ("asserts", "cases", "tests"):
        if getattr(t, k):
            d[k] = getattr(t, k)
    if t.setup:
        d["setup"] = t.setup
    return d


def tasks_to_json(tasks: Sequence[GradingTask]) -> bytes:
    return json.dumps([{**_task_json(t), "category": t.meta["category"], "source": t.source,
                        "cve": t.meta.get("cve", "")} for t in tasks], indent=1).encode()


def tasks_from_json(data: bytes, k8s_version: str = "1.30.0") -> list[GradingTask]:
    return [task_from_dict(d, d["category"], k8s_version, d.get("source", "")) for d in json.loads(data)]


def run(client: InferenceClient, grader: Any, tasks: Sequence[GradingTask], *, max_new_tokens: int = 1024,
        expansion: dict | None = None, log: Callable[[str], None] | None = None) -> EvalReport:
    """Answer every task greedily and grade the answers in the sandbox."""
    with Timer() as tg:
        gens = client.generate([GenRequest(messages=({"role": "system", "content": SYSTEM},
                                                     {"role": "user", "content": t.prompt}),
                                           max_new_tokens=max_new_tokens) for t in tasks])
    with Timer() as ts:
        grades = grader.grade_many([(t, g.text) for t, g in zip(tasks, gens)])
    samples, cats = [], {}
    for t, g, gr in zip(tasks, gens, grades):
        cat = t.meta["category"]
        c = cats.setdefault(cat, [0, 0, 0.0])
        c[0] += gr.passed
        c[1] += 1
        c[2] += gr.score
        samples.append({"id": t.id, "category": cat, "source": t.source, "completion": g.text, "passed": gr.passed,
                        "score": gr.score, "failed_gate": gr.failed_gate,
                        "checks": {ch.name: ch.passed for ch in gr.checks}})
    n, k = len(samples), sum(s["passed"] for s in samples)
    total_target = (expansion or {}).get("target_total", 280)
    notes = [] if n >= total_target else [f"{n} of the {total_target} target tasks exist (expansion shortfall)"]
    return EvalReport(
        benchmark=BENCHMARK, variant=f"DevSecOps eval, {n} tasks ({', '.join(CATEGORIES)})", version="devsecops-v1",
        status="ok", score=pct(k, n), score_name="% of tasks passing every check", n_items=n, samples=samples,
        dataset={"seed": "assets/devsecops_eval_seed.yaml", "tasks_by_source": dict(Counter(t.source for t in tasks)),
                 "expansion": expansion or {}},
        metrics={"pass_rate_by_category": {c: pct(v[0], v[1]) for c, v in cats.items()},
                 "mean_score_by_category": {c: round(v[2] / v[1], 4) for c, v in cats.items()},
                 "mean_score": round(sum(s["score"] for s in samples) / n, 4) if n else 0.0,
                 "inference": client.describe()},
        timings={"generate_s": round(tg.s, 3), "score_s": round(ts.s, 3),
                 "samples_per_s": round(n / (tg.s + ts.s), 3) if n else 0.0,
                 "score_samples_per_s": round(n / ts.s, 3) if n and ts.s else 0.0},
        notes=notes)
