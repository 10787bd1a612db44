"""Scenarios for orchestrator-trace synthesis: the catalog's seed tasks expanded by the LLM to the
target count (runbook: 500), deduplicated, each tagged with its number of independent steps
(``parallel`` = 3 or more, the runbook's threshold for spawning subagents) and ``irreversible``.

The seeds live in ``assets/synth.yaml``. Expansion asks the scenario-writer model for batches of new
tasks through a forced ``record_scenarios`` tool call (structured output), so every item arrives
with its tags. Items that are malformed, exact duplicates or near duplicates (word 3-gram Jaccard
>= threshold against everything kept so far) are dropped with a counted reason.

:class:`FreshScenarios` draws scenarios beyond the scenario set for one trace batch whose
scenarios ran out of attempts before the batch reached its target (synth/volume.py). The scenario
set is partitioned whole into batches, so there is no pool beyond a batch to borrow from: fresh
scenarios come from the same writer, one request per draw.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from pathlib import Path
from typing import Any


from ..catalog.loader import read_yaml_mapping, validate_mapping
from ..llm.client import LLMClient
from .catalog import SynthCatalog

SCENARIO_TOOL = {
    "name": "record_scenarios",
    "description": "Record the new engineering tasks with their tags.",
    "input_schema": {"type": "object", "required": ["scenarios"], "properties": {"scenarios": {
        "type": "array", "items": {"type": "object", "required": ["task", "independent_steps", "irreversible"],
                                   "properties": {
                                       "task": {"type": "string"},
                                       "independent_steps": {"type": "integer", "minimum": 1, "maximum": 10},
                                       "irreversible": {"type": "boolean"}}}}}},
}

WRITER_SYSTEM = """You write realistic tasks that engineers at a software startup hand to a coding
agent: concrete, one or two sentences, naming the stack and the component (e.g. "add rate
limiting to the FastAPI billing API", "migrate this Dockerfile to a multi-stage build"). Vary the
stacks, components and kinds of work. Tag each task honestly:
- independent_steps: how many parts could be done in parallel by different people without waiting
  for each other (1 when the steps must happen in order);
- irreversible: true when doing the task involves deleting data, destroying infrastructure,
  rewriting shared history or moving money."""


def load_synth_config(path: str | Path) -> dict[str, Any]:
    """Read and check ``assets/synth.yaml`` (seeds, target_count, batch_size, ...)."""
    cfg = read_yaml_mapping(Path(path))  # repeated keys and syntax errors name the file and line
    for key, typ in (("target_count", int), ("batch_size", int), ("seeds", list)):
        if not isinstance(cfg.get(key), typ):
            raise ValueError(f"{path}: '{key}' must be a {typ.__name__}, got {cfg.get(key)!r}")
    if cfg["batch_size"] < 1 or cfg["target_count"] < 1:
        raise ValueError(f"{path}: target_count and batch_size must be positive")
    _check_traces_section(path, cfg.get("traces"))
    for i, s in enumerate(cfg["seeds"]):
        problem = _item_problem(s)
        if problem:
            raise ValueError(f"{path}: seeds[{i}] {problem}: {s!r}")
    # Types, bounds and unknown keys of every section, each problem as `<file>: <key>: <reason>`.
    validate_mapping(SynthCatalog, cfg, path)
    return cfg


def _check_traces_section(path: str | Path, traces: Any) -> None:
    """The ``traces`` section: attempts per scenario and the measured token profile per call kind."""
    from .projection import CALL_KINDS, TOKEN_FIELDS

    if not isinstance(traces, dict):
        raise ValueError(f"{path}: 'traces' must be a mapping (max_attempts_per_scenario, measured_tokens_per_trace)")
    n = traces.get("max_attempts_per_scenario")
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"{path}: traces.max_attempts_per_scenario must be a positive integer, got {n!r}")
    n = traces.get("max_fresh_scenarios_per_batch")
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise ValueError(f"{path}: traces.max_fresh_scenarios_per_batch must be a non-negative integer, got {n!r}")
    prof = traces.get("measured_tokens_per_trace")
    if not isinstance(prof, dict) or set(prof) != set(CALL_KINDS):
        raise ValueError(f"{path}: traces.measured_tokens_per_trace must give every call kind {CALL_KINDS}")
    for kind, t in prof.items():
        fields = ("calls", "batched_calls", *TOKEN_FIELDS)
        if not isinstance(t, dict) or set(t) != set(fields) or not all(
                isinstance(t[f], (int, float)) and not isinstance(t[f], bool) and t[f] >= 0 for f in fields):
            raise ValueError(f"{path}: traces.measured_tokens_per_trace.{kind} needs non-negative {fields}")


def _item_problem(item: Any) -> str:
    """Why an item is not a valid tagged scenario ("" when it is)."""
    if not isinstance(item, dict):
        return "bad_item_not_object"
    task = item.get("task")
    if not isinstance(task, str) or not 20 <= len(task.strip()) <= 400:
        return "bad_item_task_length"
    steps = item.get("independent_steps")
    if not isinstance(steps, int) or isinstance(steps, bool) or not 1 <= steps <= 10:
        return "bad_item_independent_steps"
    if not isinstance(item.get("irreversible"), bool):
        return "bad_item_irreversible"
    return ""


def normalize_task(text: str) -> str:
    """Lower-case words only, for exact-duplicate detection."""
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def shingles(text: str, n: int = 3) -> set[str]:
    """Word n-grams of the normalized text (the whole text when it is shorter than n words)."""
    words = normalize_task(text).split()
    return {" ".join(words[i:i + n]) for i in range(max(1, len(words) - n + 1))}


def make_scenario(item: dict, origin: str, round_no: int = 0) -> dict:
    """A tagged scenario row with a content-derived id."""
    task = " ".join(item["task"].split())
    return {"id": "scn-" + hashlib.sha256(normalize_task(task).encode()).hexdigest()[:12], "task": task,
            "independent_steps": int(item["independent_steps"]), "parallel": int(item["independent_steps"]) >= 3,
            "irreversible": bool(item["irreversible"]), "origin": origin, "round": round_no}


class Deduper:
    """Exact and near-duplicate filter over everything added so far (O(n) per item; n ~ 500)."""

    def __init__(self, threshold: float = 0.6) -> None:
        self.threshold = threshold
        self._exact: set[str] = set()
        self._shingles: list[set[str]] = []

    def check_and_add(self, task: str) -> str | None:
        """None when kept (and remembered), else "exact_duplicate" / "near_duplicate"."""
        norm = normalize_task(task)
        if norm in self._exact:
            return "exact_duplicate"
        sh = shingles(task)
        for other in self._shingles:
            if len(sh & other) / len(sh | other) >= self.threshold:
                return "near_duplicate"
        self._exact.add(norm)
        self._shingles.append(sh)
        return None


def _round_request(client: LLMClient, role: str, seeds: list[dict], kept: list[dict], r: int, want: int) -> dict:
    """Round ``r`` of the scenario expansion: rotating seed examples, the last generated tasks to avoid."""
    examples = [seeds[(r * 7 + i) % len(seeds)]["task"] for i in range(min(12, len(seeds)))]
    recent = [s["task"] for s in kept[-40:] if s["origin"] == "generated"]
    return _writer_request(client, role, examples, recent, f"Round {r}", want)


def _writer_request(client: LLMClient, role: str, examples: list[str], avoid: list[str], label: str,
                    want: int) -> dict:
    """One scenario-writer request: example tasks, tasks not to repeat, and how many new ones."""
    user = ("Example tasks:\n" + "\n".join(f"- {t}" for t in examples)
            + ("\n\nAlready collected (do not repeat or paraphrase these):\n" + "\n".join(f"- {t}" for t in avoid)
               if avoid else "")
            + f"\n\n{label}. Write {want} new tasks, different from all of the above. Mix: about half with "
              "3 or more independent steps, most others sequential, and about one in ten irreversible. "
              "Call record_scenarios.")
    return client.build_request(role, system=WRITER_SYSTEM, messages=[{"role": "user", "content": user}],
                                tools=[SCENARIO_TOOL], tool_choice={"type": "tool", "name": "record_scenarios"})


def expand_scenarios(client: LLMClient, seeds: list[dict], *, target: int = 500, per_request: int = 25,
                     max_rounds: int | None = None, dedup_threshold: float = 0.6,
                     role: str = "scenario_writer", batch_runner: Any = None,
                     batch_job: str = "scenarios") -> tuple[list[dict], dict]:
    """Seeds + LLM-written tasks up to ``target`` unique scenarios. Returns (scenarios, summary).

    Each round shows the writer a rotating sample of seeds and the most recent kept tasks (so it
    avoids repeats without sending all 500 each time) and a round number (so every request is
    distinct, and a re-run hits the cache round by round). Stops at the target or after
    ``max_rounds`` (default: enough for the target at 50% yield), reporting any shortfall.

    With ``batch_runner`` (a :class:`~surrogate_dagster.llm.batches.MessageBatchRunner`) the rounds
    go out in waves, one Message Batch per wave at half price: a wave holds as many rounds as the
    shortfall needs at full yield, each showing the tasks kept before the wave; duplicates across
    the rounds of a wave are dropped by the same dedup.
    """
    if batch_runner is not None:
        return _expand_batched(client, seeds, target=target, per_request=per_request, max_rounds=max_rounds,
                               dedup_threshold=dedup_threshold, role=role, runner=batch_runner, job=batch_job)
    dedup = Deduper(dedup_threshold)
    dropped: Counter = Counter()
    kept = _seeded(seeds, dedup, dropped)
    rounds = max_rounds if max_rounds is not None else 2 * math.ceil(max(0, target - len(kept)) / per_request) + 2
    done_rounds = 0
    for r in range(1, rounds + 1):
        if len(kept) >= target:
            break
        done_rounds = r
        want = min(per_request, target - len(kept))
        resp = client.send(role, _round_request(client, role, seeds, kept, r, want),
                           progress={"scenarios_kept": len(kept), "round": r})
        _take_items(resp, kept, dedup, dropped, target, r)
    return kept, _expansion_summary(client, kept, dropped, target, done_rounds)


def _take_items(resp: Any, kept: list[dict], dedup: Deduper, dropped: Counter, target: int, r: int) -> None:
    uses = [u for u in resp.tool_uses if u["name"] == "record_scenarios"]
    items = uses[0]["input"].get("scenarios") if uses else None
    if not isinstance(items, list):
        dropped["bad_reply_no_scenarios"] += 1
        return
    for item in items:
        if len(kept) >= target:
            break
        reason = _item_problem(item) or dedup.check_and_add(item["task"])
        if reason:
            dropped[reason] += 1
        else:
            kept.append(make_scenario(item, "generated", r))


def _seeded(seeds: list[dict], dedup: Deduper, dropped: Counter) -> list[dict]:
    kept = []
    for s in seeds:
        reason = _item_problem(s) or dedup.check_and_add(s["task"])
        if reason:
            dropped[f"seed_{reason}"] += 1
        else:
            kept.append(make_scenario(s, "seed"))
    return kept


def _expand_batched(client: LLMClient, seeds: list[dict], *, target: int, per_request: int, max_rounds: int | None,
                    dedup_threshold: float, role: str, runner: Any, job: str) -> tuple[list[dict], dict]:
    from ..llm.cache import request_key
    from ..llm.ledger import BudgetExceeded

    dedup, dropped = Deduper(dedup_threshold), Counter()
    kept = _seeded(seeds, dedup, dropped)
    rounds = max_rounds if max_rounds is not None else 2 * math.ceil(max(0, target - len(kept)) / per_request) + 2
    r, wave = 0, 0
    while len(kept) < target and r < rounds:
        wave += 1
        n = min(rounds - r, math.ceil((target - len(kept)) / per_request))
        plan = [(r + i + 1, min(per_request, target - len(kept) - i * per_request)) for i in range(n)]
        reqs = [(rn, _round_request(client, role, seeds, kept, rn, want)) for rn, want in plan]
        out = runner.run([(role, q) for _, q in reqs], f"{job}/wave-{wave}",
                         progress={"scenarios_kept": len(kept), "wave": wave})
        r += n
        for rn, q in reqs:
            key = request_key(q)
            if key in out.responses:
                _take_items(out.responses[key], kept, dedup, dropped, target, rn)
            elif key in out.errors:
                dropped["writer_request_failed"] += 1
        if out.budget_stopped:
            raise BudgetExceeded(f"scenario writer stopped by the budget guard: {out.stop_message}",
                                 spent_usd=client.ledger.spent_usd, budget_usd=client.ledger.budget_usd,
                                 next_worst_usd=0.0, progress={"scenarios_kept": len(kept), "wave": wave})
    return kept, _expansion_summary(client, kept, dropped, target, r)


def _expansion_summary(client: LLMClient, kept: list[dict], dropped: Counter, target: int, rounds: int) -> dict:
    return {
        "target": target, "scenarios": len(kept), "shortfall": max(0, target - len(kept)),
        "seeds": sum(s["origin"] == "seed" for s in kept), "rounds": rounds,
        "parallel": sum(s["parallel"] for s in kept), "irreversible": sum(s["irreversible"] for s in kept),
        "dropped_by_reason": dict(dropped), "ledger": client.ledger.summary(),
    }


class FreshScenarios:
    """Draws fresh scenarios for one trace batch from the scenario writer.

    Each draw is one writer request naming the batch and the draw number and listing the batch's
    tasks so far (its own scenarios and earlier draws) as ones not to repeat; items are checked and
    deduplicated against the whole scenario set and every earlier draw, like the expansion. A
    fresh scenario's id is a hash of its draw's request (the response-cache key) and its position
    in the reply: a re-run of the batch builds the same requests, hits the cache and pays nothing,
    and gets the same ids. With ``batch_runner`` a draw goes out as a one-request Message Batch at
    the batch price.

    :meth:`draw` raises :class:`~surrogate_dagster.llm.ledger.BudgetExceeded` when the budget guard
    stops the request and lets a service outage (retries exhausted, breaker open) propagate; a
    reply without usable items (or a final per-request error) draws nothing, counted in
    ``dropped``.
    """

    def __init__(self, client: LLMClient, seeds: list[dict], known_tasks: list[str], *, batch_key: str,
                 dedup_threshold: float = 0.6, role: str = "scenario_writer", batch_runner: Any = None) -> None:
        self.client, self.seeds, self.batch_key, self.role = client, seeds, batch_key, role
        self.runner = batch_runner
        self.dedup = Deduper(dedup_threshold)
        for task in known_tasks:
            self.dedup.check_and_add(task)
        self.batch_tasks: list[str] = []
        self.drawn: list[dict] = []
        self.draws = 0
        self.dropped: Counter = Counter()

    def set_batch_tasks(self, tasks: list[str]) -> None:
        """The batch's own tasks, shown to the writer as ones not to repeat."""
        self.batch_tasks = list(tasks)

    def request(self, want: int) -> dict:
        """The next draw's writer request (deterministic given the draws before it)."""
        n = self.draws + 1
        examples = [self.seeds[(n * 5 + i) % len(self.seeds)]["task"] for i in range(min(8, len(self.seeds)))]
        avoid = (self.batch_tasks + [s["task"] for s in self.drawn])[-40:]
        return _writer_request(self.client, self.role, examples, avoid, f"Batch {self.batch_key}, extra draw {n}", want)

    def draw(self, want: int) -> list[dict]:
        """Up to ``want`` new scenarios (fewer when the writer's items are malformed or duplicates)."""
        from ..llm.cache import request_key
        from ..llm.client import MalformedReply
        from ..llm.ledger import BudgetExceeded

        if want < 1:
            raise ValueError("want must be positive")
        req = self.request(want)
        self.draws += 1
        key = request_key(req)
        progress = {"batch": self.batch_key, "fresh_draw": self.draws, "fresh_scenarios": len(self.drawn)}
        if self.runner is not None:
            out = self.runner.run([(self.role, req)], f"{self.batch_key}/fresh-scenarios/draw-{self.draws}",
                                  progress=progress)
            if out.budget_stopped:
                raise BudgetExceeded(f"fresh scenario draw {self.draws} of {self.batch_key} stopped by the budget "
                                     f"guard: {out.stop_message}", spent_usd=self.client.ledger.spent_usd,
                                     budget_usd=self.client.ledger.budget_usd, next_worst_usd=0.0, progress=progress)
            if key not in out.responses:
                self.dropped["writer_request_failed"] += 1
                return []
            resp = out.responses[key]
        else:
            try:
                resp = self.client.send(self.role, req, progress=progress)
            except MalformedReply:
                self.dropped["writer_malformed_reply"] += 1
                return []
        uses = [u for u in resp.tool_uses if u["name"] == "record_scenarios"]
        items = uses[0]["input"].get("scenarios") if uses else None
        if not isinstance(items, list):
            self.dropped["bad_reply_no_scenarios"] += 1
            return []
        new: list[dict] = []
        for i, item in enumerate(items):
            if len(new) >= want:
                break
            reason = _item_problem(item) or self.dedup.check_and_add(item["task"])
            if reason:
                self.dropped[reason] += 1
                continue
            scn = make_scenario(item, "fresh", self.draws)
            scn["id"] = "fresh-" + hashlib.sha256(f"{key}/{i}".encode()).hexdigest()[:12]
            new.append(scn)
        self.drawn.extend(new)
        return new


def batch_keys(n_scenarios: int, batch_size: int) -> list[str]:
    """Partition keys ``batch-000``, ``batch-001``... covering ``n_scenarios``."""
    return [f"batch-{i:03d}" for i in range(math.ceil(n_scenarios / batch_size))]


def batch_slice(scenarios: list[dict], batch_key: str, batch_size: int) -> list[dict]:
    """The scenarios of one partition key (stable: scenarios keep their order)."""
    m = re.fullmatch(r"batch-(\d+)", batch_key)
    if not m:
        raise ValueError(f"bad batch key {batch_key!r}; expected batch-NNN")
    i = int(m.group(1))
    part = scenarios[i * batch_size:(i + 1) * batch_size]
    if not part:
        raise ValueError(f"batch {batch_key} is past the end of {len(scenarios)} scenarios")
    return part
