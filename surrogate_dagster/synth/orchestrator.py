"""Orchestrator-trace synthesis (runbook Day 5): plan -> parallel subagents -> aggregate.

For each scenario the planner model (runbook: Opus) runs as Surrogate-1 with the runbook's ten
tools and decision rules. Its tool calls are executed here:

- ``spawn_subagent`` starts a subagent (runbook: Sonnet) in its own context on a thread pool, so
  subagents spawned in one turn run in parallel; ``receive_results`` waits for one and returns its
  output, which the planner then aggregates;
- ``scratchpad_write``/``scratchpad_read`` and ``reflexion_log`` are real, per scenario;
- ``file_read``, ``file_edit``, ``shell_exec``, ``search_repo``, ``code_exec`` and ``skill_recall``
  have no real repository behind a synthetic scenario: their output is written by a tool-simulator
  model call and the trace's metadata lists them under ``simulated_tools``.

The saved trajectory is a normalized SFT row (sources/adapters/base.py): ChatML with Hermes
``<tool_call>`` text in assistant turns and ``tool`` turns holding ``<tool_response>``, system prompt
= the runbook's Surrogate-1 prompt with the tools as JSON in ``<tools></tools>``. A Dagster
partition is one batch: :func:`synthesize_batch`.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ..llm.client import LLMClient, LLMError, MalformedReply, RetriesExhausted
from ..llm.breaker import CircuitOpenError
from ..llm.ledger import BudgetExceeded
from ..scrub import scrub_text
from ..sources.adapters.base import AdapterContext, Quarantine, sft_row
from ..sources.hermes import format_tool_call, format_tool_response, hermes_system_prompt

SOURCE_NAME = "synth_orchestrator"

# The runbook's Stage 1.6 system prompt, word for word (tool list and decision rules).
SURROGATE_PROMPT = """You are Surrogate-1. You have these tools available:
- spawn_subagent(role: str, prompt: str, max_steps: int = 10)
- receive_results(subagent_id: str)
- scratchpad_write(key: str, value: str)
- scratchpad_read(key: str)
- skill_recall(query: str) -> top_5_skills
- reflexion_log(error_type, root_cause, prevention)
- code_exec(language, code)
- file_read, file_edit (unified diff)
- shell_exec, search_repo

Decision rules:
- If task has 3+ independent steps → spawn 2-5 subagents in parallel
- If task is sequential → solo with self-refine
- If irreversible action (rm -rf, terraform destroy, payments) → ALWAYS ask
- If confidence < 0.6 → ask user"""


def _fn(name: str, description: str, props: dict, required: list[str]) -> dict:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {
        "type": "object", "properties": props, "required": required}}}


_S = {"type": "string"}
TOOLS: list[dict] = [
    _fn("spawn_subagent", "Start a subagent with its own context on one independent part of the task. "
        "Returns its subagent_id at once; subagents spawned together run in parallel.",
        {"role": {**_S, "description": "the subagent's speciality, e.g. 'ci-engineer'"},
         "prompt": {**_S, "description": "the self-contained assignment"},
         "max_steps": {"type": "integer", "default": 10, "minimum": 1, "maximum": 50}}, ["role", "prompt"]),
    _fn("receive_results", "Wait for a subagent and return its final output.",
        {"subagent_id": _S}, ["subagent_id"]),
    _fn("scratchpad_write", "Store a note under a key for later turns.", {"key": _S, "value": _S}, ["key", "value"]),
    _fn("scratchpad_read", "Read a note stored with scratchpad_write.", {"key": _S}, ["key"]),
    _fn("skill_recall", "Return the top 5 stored skills relevant to the query.", {"query": _S}, ["query"]),
    _fn("reflexion_log", "Record a mistake so it is not repeated.",
        {"error_type": _S, "root_cause": _S, "prevention": _S}, ["error_type", "root_cause", "prevention"]),
    _fn("code_exec", "Run a code snippet in a sandbox and return its output.",
        {"language": {"type": "string", "enum": ["python", "bash", "javascript"]}, "code": _S},
        ["language", "code"]),
    _fn("file_read", "Read a file of the repository.", {"path": _S}, ["path"]),
    _fn("file_edit", "Apply a unified diff to a file of the repository.",
        {"path": _S, "diff": {**_S, "description": "unified diff"}}, ["path", "diff"]),
    _fn("shell_exec", "Run a shell command in the repository and return its output.",
        {"command": _S, "timeout_s": {"type": "integer", "default": 120}}, ["command"]),
    _fn("search_repo", "Search the repository's files for a query; returns matching paths and lines.",
        {"query": _S}, ["query"]),
]
TOOL_NAMES = [t["function"]["name"] for t in TOOLS]
SIMULATED = {"skill_recall", "code_exec", "file_read", "file_edit", "shell_exec", "search_repo"}

# Extra guidance for the planner API call only; the saved trace keeps the runbook prompt alone.
PLANNER_GUIDANCE = """

(Synthesis run.) Act on the user's task following the decision rules exactly. When you spawn
subagents, spawn all of them in one turn, then call receive_results for each, then write one final
answer that integrates every result. Your final answer is your last turn without tool calls."""

SUBAGENT_SYSTEM = """You are a subagent of Surrogate-1, working in your own context on one part of a
larger task. Role: {role}
You cannot call tools in this run: do the work in your answer. Start with one line beginning
"Done:" or "Blocked:", then give the concrete change (code or config in fenced blocks), how to
verify it, and the main risk. Stay within your assignment."""

SIMULATOR_SYSTEM = """You simulate a developer tool for a synthetic training scenario. Given the
scenario and one tool call, call tool_output with exactly what the tool would print in a plausible
repository for that scenario: concise (under 40 lines), no commentary. A destructive command run
without the user's confirmation prints an error saying confirmation is required."""

SIMULATOR_TOOL = {"name": "tool_output", "description": "The tool's output.",
                  "input_schema": {"type": "object", "properties": {"output": _S}, "required": ["output"]}}


def system_prompt() -> str:
    """The trace's system turn: the runbook prompt with the ten tools as JSON in <tools></tools>."""
    return hermes_system_prompt(TOOLS, extra=SURROGATE_PROMPT)


def anthropic_tools() -> list[dict]:
    """The ten tools in the Messages API's format (``input_schema`` = the JSON Schema params)."""
    return [{"name": t["function"]["name"], "description": t["function"]["description"],
             "input_schema": t["function"]["parameters"]} for t in TOOLS]


class ScenarioFailed(Exception):
    """A scenario produced no usable trace; ``reason`` is a short code counted in metadata."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason, self.detail = reason, detail


class BatchFailed(RuntimeError):
    """The batch must be re-run (service down); carries the partial rows and the summary."""

    def __init__(self, message: str, rows: list[dict], summary: dict) -> None:
        super().__init__(message)
        self.rows, self.summary = rows, summary


@dataclass
class _Sub:
    role: str
    future: Future
    t_submit: float
    times: dict = field(default_factory=dict)


class ToolEnvironment:
    """Executes one scenario's tool calls (see the module docstring for which are real)."""

    def __init__(self, client: LLMClient, task: str, pool: ThreadPoolExecutor, t0: float,
                 progress: dict, max_subagents: int = 5) -> None:
        self.client, self.task, self.pool, self.t0 = client, task, pool, t0
        self.progress, self.max_subagents = progress, max_subagents
        self.subagents: dict[str, _Sub] = {}
        self.scratchpad: dict[str, str] = {}
        self.reflexions: list[dict] = []
        self.simulated: Counter = Counter()
        self.costs: list[Any] = []

    def _run_subagent(self, role: str, prompt: str, max_steps: int, times: dict) -> str:
        times["start"] = time.monotonic() - self.t0
        r = self.client.complete("subagent", system=SUBAGENT_SYSTEM.format(role=role), messages=[{
            "role": "user", "content": f"Overall task: {self.task}\n\nYour assignment: {prompt}\n\n"
                                       f"Step budget: {max_steps}."}], progress=self.progress)
        times["end"] = time.monotonic() - self.t0
        self.costs.append(r)
        if r.stop_reason == "max_tokens":
            raise ScenarioFailed("truncated_reply", f"subagent {role} hit max_tokens")
        return r.text

    def execute(self, name: str, args: dict) -> tuple[str, bool]:
        """Run one tool call; returns (result text, is_error). Infrastructure errors propagate."""
        if name == "spawn_subagent":
            role, prompt = args.get("role"), args.get("prompt")
            if not isinstance(role, str) or not isinstance(prompt, str) or not prompt.strip():
                return json.dumps({"error": "spawn_subagent needs string 'role' and 'prompt'"}), True
            try:
                max_steps = int(args.get("max_steps", 10))
            except (TypeError, ValueError):
                return json.dumps({"error": "max_steps must be an integer"}), True
            if len(self.subagents) >= self.max_subagents:
                return json.dumps({"error": f"at most {self.max_subagents} subagents per task"}), True
            sid = f"sa-{len(self.subagents) + 1}"
            times: dict = {}
            fut = self.pool.submit(self._run_subagent, role, prompt, max_steps, times)
            self.subagents[sid] = _Sub(role, fut, time.monotonic() - self.t0, times)
            return json.dumps({"subagent_id": sid, "role": role, "status": "running"}), False
        if name == "receive_results":
            sub = self.subagents.get(str(args.get("subagent_id")))
            if sub is None:
                return json.dumps({"error": f"unknown subagent_id {args.get('subagent_id')!r}",
                                   "known": sorted(self.subagents)}), True
            output = sub.future.result()  # re-raises BudgetExceeded / CircuitOpenError / ...
            return json.dumps({"subagent_id": args["subagent_id"], "role": sub.role, "status": "done",
                               "output": output}, ensure_ascii=False), False
        if name == "scratchpad_write":
            self.scratchpad[str(args.get("key"))] = str(args.get("value", ""))
            return json.dumps({"ok": True, "keys": sorted(self.scratchpad)}), False
        if name == "scratchpad_read":
            key = str(args.get("key"))
            if key not in self.scratchpad:
                return json.dumps({"error": f"no note under {key!r}", "keys": sorted(self.scratchpad)}), True
            return json.dumps({"key": key, "value": self.scratchpad[key]}, ensure_ascii=False), False
        if name == "reflexion_log":
            self.reflexions.append({k: str(args.get(k, "")) for k in ("error_type", "root_cause", "prevention")})
            return json.dumps({"logged": True, "entries": len(self.reflexions)}), False
        if name in SIMULATED:
            return self._simulate(name, args), False
        return json.dumps({"error": f"unknown tool {name!r}", "tools": TOOL_NAMES}), True

    def _simulate(self, name: str, args: dict) -> str:
        self.simulated[name] += 1
        call = json.dumps({"tool": name, "arguments": args}, ensure_ascii=False, sort_keys=True)
        r = self.client.complete("simulator", system=SIMULATOR_SYSTEM, tools=[SIMULATOR_TOOL],
                                 tool_choice={"type": "tool", "name": "tool_output"},
                                 messages=[{"role": "user", "content":
                                            f"<scenario>{self.task}</scenario>\n<call>{call}</call>"}],
                                 progress=self.progress)
        self.costs.append(r)
        uses = [u for u in r.tool_uses if u["name"] == "tool_output"]
        if not uses or not isinstance(uses[0]["input"].get("output"), str):
            raise ScenarioFailed("simulator_no_output", f"{name}: {r.text[:120]!r}")
        return uses[0]["input"]["output"]

    def wait_all(self) -> None:
        """Wait for every subagent (even unreceived ones: they are paid for), cancelling queued ones."""
        for sub in self.subagents.values():
            sub.future.cancel()
            try:
                sub.future.result()
            except Exception:  # noqa: BLE001 - the first failure was already raised to the caller
                pass


def _assistant_text(content: list[dict]) -> str:
    text = "\n\n".join(b["text"].strip() for b in content if b["type"] == "text" and b["text"].strip())
    calls = "\n".join(format_tool_call(b["name"], b["input"]) for b in content if b["type"] == "tool_use")
    return "\n".join(p for p in (text, calls) if p)


def planner_system(attempt: int = 1) -> str:
    """The planner's API system prompt. A retry of a rejected scenario (``attempt`` >= 2) says which
    sample it is, so the request differs from the rejected one (a new sample, not a cache hit)
    while every scenario's attempt shares the cached tools -> system prefix."""
    base = SURROGATE_PROMPT + PLANNER_GUIDANCE
    return base if attempt <= 1 else f"{base}\n(Sample {attempt}.)"


def usage_by_kind(responses: list[Any]) -> dict[str, dict[str, int]]:
    """Calls and tokens (input, output, cache write, cache read) per role of ``responses``."""
    out: dict[str, Counter] = {}
    for r in responses:
        c = out.setdefault(r.role, Counter())
        c["calls"] += 1
        c["input_tokens"] += r.input_tokens
        c["output_tokens"] += r.output_tokens
        c["cache_creation_input_tokens"] += r.cache_creation_input_tokens
        c["cache_read_input_tokens"] += r.cache_read_input_tokens
    return {k: dict(v) for k, v in sorted(out.items())}


def run_scenario(client: LLMClient, scenario: dict, pool: ThreadPoolExecutor, *, max_turns: int = 8,
                 progress: dict | None = None, attempt: int = 1) -> dict:
    """Run one scenario end to end and return its normalized SFT row (raises ScenarioFailed)."""
    task, t0 = scenario["task"], time.monotonic()
    progress = dict(progress or {})
    env = ToolEnvironment(client, task, pool, t0, progress)
    sysmsg = system_prompt()
    chat = [{"role": "system", "content": sysmsg}, {"role": "user", "content": task}]
    api_msgs: list[dict] = [{"role": "user", "content": task}]
    calls: list[Any] = []
    try:
        for _turn in range(max_turns):
            # The API gets the tools natively (``tools=``), so its system prompt omits the <tools>
            # listing: sending both would bill ~1k duplicate input tokens on every planner turn.
            r = client.complete("planner", system=planner_system(attempt), messages=api_msgs,
                                tools=anthropic_tools(), progress=progress)
            calls.append(r)
            if r.stop_reason == "max_tokens":
                raise ScenarioFailed("truncated_reply", "planner hit max_tokens")
            text = _assistant_text(r.content)
            if not text:
                raise ScenarioFailed("empty_planner_turn")
            chat.append({"role": "assistant", "content": text})
            api_msgs.append({"role": "assistant", "content": r.content})
            if not r.tool_uses:
                break
            results = []
            for use in r.tool_uses:
                out, is_error = env.execute(use["name"], use["input"])
                chat.append({"role": "tool", "content": format_tool_response(out)})
                results.append({"type": "tool_result", "tool_use_id": use["id"], "content": out,
                                **({"is_error": True} if is_error else {})})
            api_msgs.append({"role": "user", "content": results})
        else:
            raise ScenarioFailed("max_turns", f"no final answer after {max_turns} planner turns")
    finally:
        env.wait_all()
    everything = calls + env.costs
    meta = {
        "scenario_id": scenario["id"], "task": task,
        "tags": {k: scenario.get(k) for k in ("independent_steps", "parallel", "irreversible", "origin")},
        "models": {"planner": client.model_for("planner"), "subagent": client.model_for("subagent")},
        "served_by": sorted({c.served_by for c in everything}), "backend": client.backend,
        "planner_turns": len(calls), "n_subagents": len(env.subagents),
        "subagents": [{"id": sid, "role": s.role, "submitted_s": round(s.t_submit, 4),
                       "start_s": round(s.times.get("start", -1), 4), "end_s": round(s.times.get("end", -1), 4)}
                      for sid, s in env.subagents.items()],
        "simulated_tools": dict(env.simulated), "reflexions": len(env.reflexions),
        "usage": {"calls": len(everything), "cached_calls": sum(c.cached for c in everything),
                  "input_tokens": sum(c.input_tokens for c in everything),
                  "output_tokens": sum(c.output_tokens for c in everything),
                  "usd": round(sum(c.cost_usd for c in everything), 6)},
        "usage_by_kind": usage_by_kind(everything), "attempt": attempt,
    }
    return sft_row(AdapterContext(source=SOURCE_NAME), f"synth-{scenario['id']}", chat, tools=TOOLS, meta=meta)


def synthesize_batch(client: LLMClient, scenarios: list[dict], *, batch_key: str = "batch",
                     max_turns: int = 8, max_parallel_subagents: int = 5,
                     attempt: int = 1) -> tuple[list[dict], dict]:
    """Synthesize one batch (one Dagster partition). Returns (rows, summary).

    A scenario that fails on its own (malformed reply, non-retryable error, truncated reply, no
    final answer) is recorded with its reason and the batch goes on. When the budget guard stops
    the batch, the rows done so far are returned and ``summary["stopped"] == "budget"`` says how
    far it got. When the service is down (breaker open, retries exhausted) :class:`BatchFailed` is
    raised so the partition fails and re-runs alone; its finished calls are in the cache.
    """
    rows: list[dict] = []
    failures: list[dict] = []
    stopped, stop_message = None, ""
    with ThreadPoolExecutor(max_workers=max_parallel_subagents, thread_name_prefix="subagent") as pool:
        for i, scenario in enumerate(scenarios):
            progress = {"batch": batch_key, "scenarios_done": len(rows), "scenarios_failed": len(failures),
                        "scenario_index": i, "scenarios_total": len(scenarios)}
            try:
                rows.append(run_scenario(client, scenario, pool, max_turns=max_turns, progress=progress,
                                         attempt=attempt))
            except (ScenarioFailed, Quarantine) as exc:  # Quarantine: the trace failed the row contract
                failures.append({"scenario_id": scenario["id"], "reason": exc.reason,
                                 "detail": scrub_text(exc.detail)[:300]})
            except LLMError as exc:
                if isinstance(exc, RetriesExhausted):
                    summary = _summary(client, batch_key, scenarios, rows, failures, "retries_exhausted", str(exc))
                    raise BatchFailed(f"batch {batch_key}: {exc}", rows, summary) from exc
                reason = "malformed_reply" if isinstance(exc, MalformedReply) else "llm_error"
                failures.append({"scenario_id": scenario["id"], "reason": reason, "detail": scrub_text(str(exc))[:300]})
            except BudgetExceeded as exc:
                stopped = "budget"
                stop_message = (f"stopped by the budget guard at scenario {i + 1} of {len(scenarios)} in batch "
                                f"{batch_key}: {len(rows)} traces done, {len(failures)} failed. {exc}")
                break
            except CircuitOpenError as exc:
                summary = _summary(client, batch_key, scenarios, rows, failures, "circuit_open", str(exc))
                raise BatchFailed(f"batch {batch_key}: {exc}", rows, summary) from exc
    return rows, _summary(client, batch_key, scenarios, rows, failures, stopped, stop_message)


def _summary(client: LLMClient, batch_key: str, scenarios: list[dict], rows: list[dict], failures: list[dict],
             stopped: str | None, message: str) -> dict:
    return {"batch": batch_key, "scenarios": len(scenarios), "traces": len(rows), "failed": len(failures),
            "failed_by_reason": dict(Counter(f["reason"] for f in failures)), "failures": failures[:50],
            "stopped": stopped, "stop_message": message,
            "how_far": f"{len(rows) + len(failures)}/{len(scenarios)} scenarios attempted, {len(rows)} traces",
            "ledger": client.ledger.summary()}
