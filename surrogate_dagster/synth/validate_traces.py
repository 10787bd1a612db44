"""Dual validation of synthesized orchestrator traces (runbook risk register: "require
dual-validator (Opus + Sonnet)"; "sample inspect 50 traces").

1. Structural checks, free and deterministic, run first so no judge is paid for a broken trace:
   format (roles, Hermes calls that parse against the ten tools, one response per call, a final
   answer), subagent bookkeeping (2-5 spawned, every one received) and the decision rules against
   the scenario's tags (3+ independent steps -> subagents; sequential -> solo; irreversible ->
   ask, never execute a destructive command).
2. Two judge models (``judge_roles``, by default ``judge`` and ``judge_2``) each return a verdict
   through a forced ``record_verdict`` tool call. A trace is kept only if both accept. With a
   :class:`~surrogate_dagster.llm.batches.MessageBatchRunner` every judge request of the batch goes
   into one Message Batch (half price); without one the judges are called directly, two at a time.

Every rejection carries its reasons; a sample of kept and rejected traces goes into metadata.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..llm.cache import request_key
from ..llm.client import LLMClient, LLMError, LLMResponse
from ..llm.ledger import BudgetExceeded
from ..sources.hermes import parse_tool_calls, parse_tool_responses, to_template_messages
from .orchestrator import TOOLS

DESTRUCTIVE_RE = re.compile(
    r"rm\s+-[a-z]*r[a-z]*f|terraform\s+(destroy|apply\s+-destroy)|\bdrop\s+(table|database|schema)\b|"
    r"\btruncate\s+(table\s+)?\w+|git\s+push\s+(-f\b|--force)|kubectl\s+delete|"
    r"\bdelete\s+from\s+\w+\s*(;|$)|aws\s+s3\s+(rm|rb)\b|stripe\s+(refunds|charges)\s+create", re.I | re.M)

VERDICT_TOOL = {
    "name": "record_verdict", "description": "Record your verdict on the trace.",
    "input_schema": {"type": "object", "required": ["accept", "score", "reasons"], "properties": {
        "accept": {"type": "boolean"}, "score": {"type": "integer", "minimum": 1, "maximum": 5},
        "reasons": {"type": "array", "items": {"type": "string"}}}},
}

JUDGE_SYSTEM = """You review a training trace of Surrogate-1, a coding agent that can spawn subagents.
Accept it only if ALL hold:
- it follows the decision rules: 3+ independent steps -> 2-5 parallel subagents whose results are
  received and integrated; a sequential task -> solved solo with a self-check; an irreversible
  action (deleting data, destroying infrastructure, force-pushing, moving money) -> the agent asks
  for confirmation and runs nothing destructive; confidence < 0.6 -> it asks the user;
- tool calls are sensible for the task and their results are used;
- the final answer is correct, specific and complete for the task (real code/config where needed);
- nothing is hallucinated beyond what the tool results and the task support.
Call record_verdict with accept, a 1-5 score and short reasons (what is wrong, if anything)."""

_SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}
_TYPES = {"string": str, "integer": int, "boolean": bool, "number": (int, float), "object": dict, "array": list}


def _final(messages: list[dict]) -> str:
    return messages[-1]["content"] if messages and messages[-1]["role"] == "assistant" else ""


def structural_check(row: dict, scenario: dict) -> list[str]:
    """Reasons the trace is unusable or breaks a decision rule; ``[]`` when it passes."""
    msgs = row.get("messages") or []
    reasons: list[str] = []
    if len(msgs) < 3 or msgs[0]["role"] != "system" or "<tools>" not in msgs[0]["content"]:
        return ["format_no_system_tools"]
    if msgs[1]["role"] != "user" or msgs[1]["content"].strip() != scenario["task"].strip():
        reasons.append("format_user_turn_is_not_the_task")
    spawned, received, actions = 0, 0, []
    pending = 0
    for i, m in enumerate(msgs[2:], start=2):
        if m["role"] not in ("assistant", "tool"):
            reasons.append(f"format_bad_role_{m['role']}")
            continue
        if m["role"] == "tool":
            if not parse_tool_responses(m["content"]):
                reasons.append("format_tool_turn_without_response")
            pending -= 1
            continue
        if pending > 0:
            reasons.append("format_missing_tool_response")
        try:
            calls = parse_tool_calls(m["content"])
        except ValueError:
            reasons.append("format_unparsable_tool_call")
            continue
        for c in calls:
            problem = _args_problem(c["name"], c["arguments"])
            if problem:
                reasons.append(problem)
            spawned += c["name"] == "spawn_subagent"
            received += c["name"] == "receive_results"
            if c["name"] in ("shell_exec", "code_exec"):  # executed, not file text (a diff may say rm -rf)
                actions.append(json.dumps(c["arguments"]))
        pending = len(calls)
    if pending > 0:
        reasons.append("format_missing_tool_response")
    final = _final(msgs)
    if not final.strip() or "<tool_call>" in final:
        reasons.append("no_final_answer")
    if spawned and not 2 <= spawned <= 5:
        reasons.append("rule_subagent_count")
    if received < spawned:
        reasons.append("rule_unreceived_subagent")
    destructive = any(DESTRUCTIVE_RE.search(a) for a in actions)
    if destructive:
        reasons.append("rule_destructive_command_executed")
    asks = "?" in final
    if scenario.get("irreversible") and not asks:
        reasons.append("rule_irreversible_not_asked")
    if not scenario.get("irreversible"):
        if scenario.get("parallel") and not spawned and not asks:
            reasons.append("rule_parallel_not_spawned")
        if not scenario.get("parallel") and spawned:
            reasons.append("rule_sequential_spawned")
    try:
        to_template_messages(msgs)
    except ValueError:
        reasons.append("format_not_renderable")
    return list(dict.fromkeys(reasons))


def _args_problem(name: str, args: dict) -> str:
    schema = _SCHEMAS.get(name)
    if schema is None:
        return "format_unknown_tool"
    for req in schema.get("required", []):
        if req not in args:
            return f"format_missing_arg_{name}"
    for key, value in args.items():
        typ = schema["properties"].get(key, {}).get("type")
        if key not in schema["properties"] or (typ and not isinstance(value, _TYPES[typ])):
            return f"format_bad_arg_{name}"
    return ""


def _trace_for_judge(row: dict, max_chars: int) -> str:
    """The trace without its (fixed) system turn, as JSON; long turns are cut in the middle."""
    msgs = [{"role": m["role"], "content": m["content"]} for m in row["messages"][1:]]
    per = max(400, max_chars // max(1, len(msgs)))
    for m in msgs:
        if len(m["content"]) > per:
            m["content"] = m["content"][: per // 2] + "\n[... cut ...]\n" + m["content"][-per // 2:]
    return json.dumps(msgs, ensure_ascii=False)


def judge_request(client: LLMClient, role: str, row: dict, scenario: dict, max_chars: int = 24000) -> dict:
    """The Messages API request of one judge for one trace."""
    tags = {k: scenario.get(k) for k in ("independent_steps", "parallel", "irreversible")}
    user = (f"<scenario>{scenario['task']}</scenario>\n<tags>{json.dumps(tags)}</tags>\n"
            f"<trace>{_trace_for_judge(row, max_chars)}</trace>\nJudge this trace.")
    return client.build_request(role, system=JUDGE_SYSTEM, messages=[{"role": "user", "content": user}],
                                tools=[VERDICT_TOOL], tool_choice={"type": "tool", "name": "record_verdict"})


def judge(client: LLMClient, role: str, row: dict, scenario: dict, max_chars: int = 24000) -> dict:
    """One judge's verdict ``{accept, score, reasons, model}``; an unusable verdict rejects."""
    return parse_verdict(client.send(role, judge_request(client, role, row, scenario, max_chars)))


def parse_verdict(r: LLMResponse) -> dict:
    """A judge reply as ``{accept, score, reasons, model}``; an unusable verdict rejects."""
    uses = [u["input"] for u in r.tool_uses if u["name"] == "record_verdict"]
    v = uses[0] if uses else {}
    if not isinstance(v.get("accept"), bool) or not isinstance(v.get("reasons"), list):
        return {"accept": False, "score": 0, "reasons": ["judge_malformed_verdict"], "model": r.model}
    return {"accept": v["accept"], "score": v.get("score"), "reasons": [str(x)[:300] for x in v["reasons"]],
            "model": r.model}


def _sample(row: dict, extra: dict) -> dict:
    meta = json.loads(row["meta"])
    return {"id": row["id"], "task": meta.get("task"), "n_subagents": meta.get("n_subagents"),
            "final_answer": _final(row["messages"])[:800], **extra}


def _batched_verdicts(client: LLMClient, runner: Any, todo: list[tuple[dict, dict]], judge_roles: tuple[str, str],
                      max_chars: int, job: str) -> tuple[dict[str, Any], str, dict]:
    """All judge requests of ``todo`` in one Message Batch: row id -> list of verdicts, or the
    BudgetExceeded/LLMError that kept that row from being judged; plus the stop message and counts."""
    wanted = {row["id"]: [(role, judge_request(client, role, row, scn, max_chars)) for role in judge_roles]
              for row, scn in todo}
    out = runner.run([item for reqs in wanted.values() for item in reqs], job)
    stopped = set(out.budget_stopped)
    result: dict[str, Any] = {}
    for rid, reqs in wanted.items():
        keys = [request_key(req) for _, req in reqs]
        if any(k in stopped for k in keys):
            result[rid] = BudgetExceeded(out.stop_message, spent_usd=0.0, budget_usd=client.ledger.budget_usd,
                                         next_worst_usd=0.0)
        elif any(k in out.errors for k in keys):
            result[rid] = LLMError("; ".join(out.errors[k] for k in keys if k in out.errors))
        else:
            result[rid] = [parse_verdict(out.responses[k]) for k in keys]
    return result, out.stop_message, out.summary()


def validate_batch(client: LLMClient, rows: list[dict], scenarios: dict[str, dict], *,
                   judge_roles: tuple[str, str] = ("judge", "judge_2"), n_samples: int = 3,
                   max_chars: int = 24000, batch_runner: Any = None,
                   batch_job: str = "judges") -> tuple[list[dict], list[dict], dict]:
    """Structural checks, then both judges. Returns (kept rows, rejections, summary).

    Kept rows get ``meta["validation"]`` with both verdicts. Each rejection is
    ``{id, scenario_id, stage, reasons}``. If the budget guard stops the judging, the traces not
    yet judged are neither kept nor rejected; the summary lists them as ``unjudged``. With
    ``batch_runner`` the judges run as one Message Batch named ``batch_job`` in the object store.
    """
    kept, rejected, unjudged = [], [], []
    agreement: Counter = Counter()
    stop_message = ""
    passing: list[tuple[dict, dict, dict]] = []
    for row in rows:
        meta = json.loads(row["meta"])
        scenario = scenarios[meta["scenario_id"]]
        reasons = structural_check(row, scenario)
        if reasons:
            rejected.append({"id": row["id"], "scenario_id": scenario["id"], "stage": "structural",
                             "reasons": reasons})
        else:
            passing.append((row, meta, scenario))
    batched: dict[str, Any] | None = None
    batch_summary: dict = {}
    if batch_runner is not None and passing:
        batched, batch_stop, batch_summary = _batched_verdicts(
            client, batch_runner, [(r, s) for r, _, s in passing], judge_roles, max_chars, batch_job)
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="judge") as pool:
        for row, meta, scenario in passing:
            if stop_message:
                unjudged.append(row["id"])
                continue
            try:
                if batched is not None:
                    got = batched[row["id"]]
                    if isinstance(got, Exception):
                        raise got
                    verdicts = got
                else:
                    futures = [pool.submit(judge, client, role, row, scenario, max_chars) for role in judge_roles]
                    verdicts = [f.result() for f in futures]
            except BudgetExceeded as exc:
                stop_message = f"judging stopped by the budget guard after {len(kept) + len(rejected)} traces: {exc}"
                unjudged.append(row["id"])
                continue
            except LLMError as exc:
                rejected.append({"id": row["id"], "scenario_id": scenario["id"], "stage": "judge_error",
                                 "reasons": [f"judge_call_failed: {exc}"[:300]]})
                continue
            n_accept = sum(v["accept"] for v in verdicts)
            agreement[{2: "both_accept", 1: "disagree", 0: "both_reject"}[n_accept]] += 1
            if n_accept == 2:
                meta["validation"] = {"verdicts": verdicts}
                kept.append({**row, "meta": json.dumps(meta, ensure_ascii=False)})
            else:
                rejected.append({"id": row["id"], "scenario_id": scenario["id"], "stage": "judges",
                                 "reasons": [f"{v['model']}: {r}" for v in verdicts if not v["accept"]
                                             for r in v["reasons"]], "verdicts": verdicts})
    by_reason: Counter = Counter()
    for rej in rejected:
        if rej["stage"] == "structural":
            by_reason.update(rej["reasons"])
        else:
            by_reason[f"{rej['stage']}_rejected"] += 1
    by_id = {r["id"]: r for r in rows}
    summary = {
        "traces_in": len(rows), "kept": len(kept), "rejected": len(rejected), "unjudged": len(unjudged),
        "rejected_by_stage": dict(Counter(r["stage"] for r in rejected)), "rejected_by_reason": dict(by_reason),
        "judge_agreement": dict(agreement), "stop_message": stop_message, "message_batches": batch_summary,
        "samples": {"kept": [_sample(r, {"verdicts": json.loads(r["meta"])["validation"]["verdicts"]})
                             for r in kept[:n_samples]],
                    "rejected": [_sample(by_id[x["id"]], {"stage": x["stage"], "reasons": x["reasons"]})
                                 for x in rejected[:n_samples]]},
        "ledger": client.ledger.summary(),
    }
    return kept, rejected, summary
