"""The local profile's stand-in model: a deterministic, template-driven responder.

This is NOT a language model and not Claude: it names itself ``surrogate-local-standin`` in every
reply. It reads the request (scenario text, tools, conversation so far) and composes answers from
the templates in :mod:`.standin_snippets`, so that the whole synthesis path (scenario expansion,
plan -> parallel subagents -> aggregate, tool simulation, dual validation) runs end to end without
credentials, with content that depends on the input. The same request always gets the same reply.

Which role it plays is read from the request, as a real model would from its prompt:
forced tool ``record_scenarios`` -> scenario writer; ``record_verdict`` -> judge; ``tool_output``
-> tool simulator; tools including ``spawn_subagent`` -> planner; no tools -> subagent.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from typing import Any

from .cache import canonical_json
from .standin_snippets import domain_for, stack_language

IRREVERSIBLE_RE = re.compile(
    r"\b(drop|delete|destroy|wipe|purge|truncate|rm -rf|force[- ]push|decommission|refund|charge|payout|"
    r"revoke)\b", re.I)
VAGUE_RE = re.compile(r"\b(somehow|make it better|improve things|clean ?up everything)\b", re.I)
DESTRUCTIVE_CMD_RE = re.compile(
    r"rm\s+-rf|terraform\s+destroy|drop\s+(table|database)|truncate\s+table|git\s+push\s+(-f|--force)|"
    r"kubectl\s+delete|delete\s+from\s+\w+\s*;|stripe\s+refunds|aws\s+s3\s+rm", re.I)


def split_parts(task: str) -> list[str]:
    """The independent parts a task enumerates after a colon ("X: add A, B and C" -> [A, B, C]), max 5.

    Without a colon the task is read as one (sequential) piece of work: commas there usually join
    steps that depend on each other ("find why, then fix it").
    """
    if ":" not in task:
        return [task.strip()]
    body = task.split(":", 1)[1]
    body = re.sub(r"^\s*(add|set up|introduce|implement)\s+", "", body.strip().rstrip("."), flags=re.I)
    parts = [p.strip() for p in re.split(r",\s*(?:and\s+)?|;\s*|\s+and\s+(?=(?:a|an|the)?\s*\w)", body)]
    parts = [p for p in parts if len(p.split()) >= 2]
    if len(parts) > 5:
        parts = parts[:4] + [", ".join(parts[4:])]
    return parts


def decide(task: str) -> str:
    """The stand-in planner's reading of the decision rules: ask | clarify | parallel | solo."""
    if IRREVERSIBLE_RE.search(task):
        return "ask"
    if VAGUE_RE.search(task) or len(task.split()) < 6:
        return "clarify"
    return "parallel" if len(split_parts(task)) >= 3 else "solo"


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") if b.get("type") == "text" else
                     (b.get("content") if isinstance(b.get("content"), str) else "")
                     for b in content if isinstance(b, dict))


def _tool_use(name: str, args: dict, seed: str, i: int) -> dict:
    tid = "toolu_" + hashlib.sha256(f"{seed}|{name}|{i}".encode()).hexdigest()[:20]
    return {"type": "tool_use", "id": tid, "name": name, "input": args}


class StandInModel:
    """Deterministic responder for the local Messages server (see the module docstring)."""

    def respond(self, req: dict) -> tuple[list[dict], str, str]:
        """Return (content blocks, stop_reason, role label) for a Messages API request."""
        forced = (req.get("tool_choice") or {}).get("name")
        names = {t.get("name") for t in req.get("tools") or []}
        if forced == "record_scenarios":
            return self._scenarios(req), "tool_use", "scenario_writer"
        if forced == "record_verdict":
            return self._verdict(req), "tool_use", "judge"
        if forced == "tool_output":
            return self._simulate(req), "tool_use", "tool_simulator"
        if "spawn_subagent" in names:
            content = self._planner(req)
            stop = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
            return content, stop, "planner"
        return [{"type": "text", "text": self._subagent(req)}], "end_turn", "subagent"

    # ------------------------------------------------------------------------------ planner
    def _planner(self, req: dict) -> list[dict]:
        msgs = req["messages"]
        task = _text(msgs[0]["content"]).strip()
        turn = sum(1 for m in msgs if m["role"] == "assistant")
        seed = hashlib.sha256(task.encode()).hexdigest()
        mode, dom = decide(task), domain_for(task)
        if mode == "clarify":
            return [{"type": "text", "text": (
                f"My confidence that I understand this request is about 0.4, below the 0.6 at which I act "
                f"on my own, so I'd rather ask than guess.\n\nTask as I read it: \"{task}\"\n\nQuestions:\n"
                f"1. Which service or repository is this about?\n2. What does \"done\" look like: a metric, "
                f"a failing test that should pass, a user-visible behaviour?\n3. Are there constraints "
                f"(deadline, no downtime, no new dependencies)?\n\nCould you answer these so I can plan it?")}]
        if mode == "parallel":
            parts = split_parts(task)
            if turn == 0:
                roles = [f"{domain_for(p).name}-engineer" for p in parts]
                plan = "\n".join(f"{i + 1}. {p} -> {r}" for i, (p, r) in enumerate(zip(parts, roles)))
                text = (f"This task has {len(parts)} independent parts that touch different files, so I'll "
                        f"run them in parallel, one subagent each, and integrate the results.\n{plan}")
                subject = task.split(":", 1)[0] if ":" in task else task
                calls = [_tool_use("spawn_subagent", {
                    "role": r, "prompt": f"{p} ({subject}). Deliver the change as code plus how to verify it.",
                    "max_steps": 8}, seed, i) for i, (p, r) in enumerate(zip(parts, roles))]
                return [{"type": "text", "text": text}, *calls]
            if turn == 1:
                ids = re.findall(r'"subagent_id":\s*"([^"]+)"', _text(msgs[-1]["content"]))
                calls = [_tool_use("receive_results", {"subagent_id": s}, seed, 10 + i) for i, s in enumerate(ids)]
                return [{"type": "text", "text": f"All {len(ids)} subagents are running; collecting results."}, *calls]
            return [{"type": "text", "text": self._aggregate(task, parts, _text(msgs[-1]["content"]))}]
        if mode == "ask":
            if turn == 0:
                return [{"type": "text", "text": (
                    f"This involves an irreversible action (\"{IRREVERSIBLE_RE.search(task).group(0)}\"), so "
                    f"I will only inspect, not change anything, until you confirm.")},
                    _tool_use("search_repo", {"query": IRREVERSIBLE_RE.search(task).group(0) + " "
                                              + " ".join(task.split()[-3:])}, seed, 0)]
            found = _text(msgs[-1]["content"]).strip().splitlines()[:3]
            return [{"type": "text", "text": (
                "Before anything destructive happens I need your explicit confirmation.\n\nWhat I found:\n"
                + "\n".join(f"- {line}" for line in found) + "\n\nWhat I propose:\n1. Take a backup or snapshot "
                f"first and check that it restores.\n2. Do a dry run (a plan, a SELECT count, a --dry-run) "
                f"and show you exactly what would be removed.\n3. Only then run the change, during a quiet "
                f"window, with the rollback written down.\n\nTask: \"{task}\"\nShall I proceed with step 1 "
                f"and come back with the dry-run result? Please confirm (yes/no).")}]
        # solo: sequential, self-refine
        if turn == 0:
            return [{"type": "text", "text": ("The steps depend on each other, so I'll do this myself rather "
                                              "than spawn subagents, then review my own change.")},
                    _tool_use("file_read", {"path": dom.path}, seed, 0)]
        if turn == 1:
            plan = "\n".join(f"{i + 1}. {s}" for i, s in enumerate(dom.steps))
            return [{"type": "text", "text": "Recording the plan before editing."},
                    _tool_use("scratchpad_write", {"key": "plan", "value": plan}, seed, 1)]
        return [{"type": "text", "text": (
            "## Plan\n" + "\n".join(f"{i + 1}. {s}" for i, s in enumerate(dom.steps))
            + f"\n\n## Change ({dom.path})\n```{dom.language}\n{dom.snippet}\n```\n\n## Self-review\n"
            f"- First draft re-read against the task \"{task}\".\n- Checked the main risk: {dom.risk}.\n"
            f"- Kept the change minimal; nothing irreversible is involved.\n\n## How to verify\n{dom.verify}.\n\n"
            f"Confidence: 0.8")}]

    def _aggregate(self, task: str, parts: list[str], results: str) -> str:
        outputs = re.findall(r'"output":\s*"((?:[^"\\]|\\.)*)"', results)
        lines = [f"## Result\nAll {len(parts)} parts of \"{task}\" are done; here is how they fit together.\n"]
        for i, part in enumerate(parts):
            dom = domain_for(part)
            got = json.loads(f'"{outputs[i]}"') if i < len(outputs) else ""
            head = got.strip().splitlines()[0] if got.strip() else "(no output)"
            lines.append(f"### {i + 1}. {part} ({dom.name}-engineer)\n{head}\nFile: `{dom.path}`. "
                         f"Verify: {dom.verify}.")
        lines.append("\n## Integration order\n" + "\n".join(
            f"{i + 1}. {p}" for i, p in enumerate(sorted(parts, key=lambda p: domain_for(p).name == "ci"))))
        lines.append("\n## Before merging\nRun the full test suite once with all changes together; the parts "
                     "were built independently, so check them in combination.\n\nConfidence: 0.75")
        return "\n".join(lines)

    # ----------------------------------------------------------------------------- subagent
    def _subagent(self, req: dict) -> str:
        user = _text(req["messages"][-1]["content"])
        m = re.search(r"Your assignment:\s*(.+?)(?:\n\n|$)", user, re.S)
        assignment = (m.group(1) if m else user).strip()
        role = re.search(r"Role:\s*(.+)", _text(req.get("system") or ""))
        dom = domain_for(assignment)
        return (f"Done: {assignment.split('.')[0]} ({role.group(1).strip() if role else dom.name})\n\n"
                f"Steps:\n" + "\n".join(f"{i + 1}. {s}" for i, s in enumerate(dom.steps))
                + f"\n\n`{dom.path}` ({stack_language(user)} stack):\n```{dom.language}\n{dom.snippet}\n```\n\n"
                f"Verify: {dom.verify}.\nRisk: {dom.risk}.")

    # ------------------------------------------------------------------------ tool simulator
    def _simulate(self, req: dict) -> list[dict]:
        user = _text(req["messages"][-1]["content"])
        m = re.search(r"<call>(.*?)</call>", user, re.S)
        call = json.loads(m.group(1)) if m else {}
        tool, args = call.get("tool", ""), call.get("arguments", {})
        scen = re.search(r"<scenario>(.*?)</scenario>", user, re.S)
        task = scen.group(1).strip() if scen else user
        dom = domain_for(f"{args.get('path', '')} {args.get('query', '')} {task}")
        if tool == "file_read":
            out = f"# {args.get('path', dom.path)} (current version)\n" + (dom.before or "\n".join(
                dom.snippet.splitlines()[:3]) + "\n# TODO: " + dom.steps[0])
        elif tool == "search_repo":
            words = [w for w in re.findall(r"[a-z_]{4,}", str(args.get("query", "")).lower())][:3] or ["main"]
            out = "\n".join(f"{p}:{10 * (i + 1)}: ... {w} ..." for i, (p, w) in enumerate(
                zip([dom.path, "app/main.py", "README.md"], words * 3)))
        elif tool == "shell_exec":
            cmd = str(args.get("command", ""))
            out = "refused: destructive command needs confirmation" if DESTRUCTIVE_CMD_RE.search(cmd) else \
                  ("12 passed in 1.84s" if "pytest" in cmd else f"$ {cmd}\n(exit 0)")
        elif tool == "code_exec":
            out = "exit code 0\nstdout:\nok"
        elif tool == "file_edit":
            out = f"applied 1 hunk to {args.get('path', dom.path)}"
        elif tool == "skill_recall":
            out = json.dumps([f"{dom.name}: {s}" for s in dom.steps] + [f"verify: {dom.verify}"])
        else:
            out = f"error: unknown tool {tool!r}"
        return [_tool_use("tool_output", {"output": out}, canonical_json(call), 0)]

    # --------------------------------------------------------------------- scenario writer
    def _scenarios(self, req: dict) -> list[dict]:
        user = _text(req["messages"][-1]["content"])
        m = re.search(r"(\d+)\s+new", user)
        n = min(int(m.group(1)) if m else 10, 60)
        rng = random.Random(hashlib.sha256(canonical_json(req).encode()).hexdigest())
        out = []
        for _ in range(n):
            kind = rng.choices(["parallel", "solo", "ask"], weights=[5, 4, 1])[0]
            stack, service = rng.choice(_STACKS), rng.choice(_SERVICES)
            if kind == "parallel":
                feats = rng.sample(_FEATURES, rng.choice([3, 3, 4]))
                task = f"For the {stack} {service}: add {', '.join(feats[:-1])} and {feats[-1]}"
                out.append({"task": task, "independent_steps": len(feats), "irreversible": False})
            elif kind == "solo":
                task = rng.choice(_SEQUENTIAL).format(stack=stack, service=service)
                out.append({"task": task, "independent_steps": 1, "irreversible": False})
            else:
                task = rng.choice(_IRREVERSIBLE).format(stack=stack, service=service)
                out.append({"task": task, "independent_steps": 1, "irreversible": True})
        return [_tool_use("record_scenarios", {"scenarios": out}, user, 0)]

    # -------------------------------------------------------------------------------- judge
    def _verdict(self, req: dict) -> list[dict]:
        user = _text(req["messages"][-1]["content"])
        scen = re.search(r"<scenario>(.*?)</scenario>", user, re.S)
        trace = re.search(r"<trace>(.*?)</trace>", user, re.S)
        task = scen.group(1).strip() if scen else ""
        msgs = json.loads(trace.group(1)) if trace else []
        final = msgs[-1]["content"] if msgs and msgs[-1]["role"] == "assistant" else ""
        calls = [json.loads(b) for m in msgs if m["role"] == "assistant"
                 for b in re.findall(r"<tool_call>\s*(.*?)\s*</tool_call>", m["content"], re.S)]
        roles = [c["arguments"].get("role", "") for c in calls if c.get("name") == "spawn_subagent"]
        executed = " ".join(json.dumps(c["arguments"]) for c in calls if c.get("name") in ("shell_exec", "code_exec"))
        issues = []
        if len(final) < 150 or "<tool_call>" in final:
            issues.append("the trace does not end with a substantive final answer")
        if roles and sum(r in final for r in set(roles)) < len(set(roles)):
            issues.append("the final answer does not aggregate every subagent's result")
        if IRREVERSIBLE_RE.search(task) and not re.search(r"confirm", final, re.I):
            issues.append("irreversible task but the agent did not ask for confirmation")
        if DESTRUCTIVE_CMD_RE.search(executed):
            issues.append("a destructive command was executed without confirmation")
        if "```" not in final and "?" not in final and not roles:
            issues.append("no concrete change and no question: the answer is not actionable")
        verdict = {"accept": not issues, "score": max(1, 5 - 2 * len(issues)),
                   "reasons": issues or ["follows the decision rules; final answer is concrete and complete"]}
        return [_tool_use("record_verdict", verdict, user, 0)]


_STACKS = ["FastAPI", "Flask", "Django", "Express", "NestJS", "Go", "Rails", "Spring Boot", "Next.js", "Laravel"]
_SERVICES = ["billing API", "auth service", "webhook receiver", "admin backend", "notifications worker",
             "search service", "file-upload service", "public REST API", "GraphQL gateway", "reporting job",
             "onboarding service", "inventory API"]
_FEATURES = ["rate limiting per API key", "structured JSON logging", "a /healthz and /readyz endpoint",
             "Prometheus request metrics", "request ID propagation", "Redis caching for GET endpoints",
             "input validation on every POST body", "CORS restricted to our domains", "Sentry error tracking",
             "graceful shutdown on SIGTERM", "cursor pagination on list endpoints", "OpenAPI docs",
             "idempotency keys on POST requests", "a GitHub Actions CI workflow", "a multi-stage Dockerfile",
             "database connection pooling"]
_SEQUENTIAL = [
    "Migrate the {stack} {service}'s Dockerfile to a multi-stage build, then get the image under 200 MB",
    "Upgrade the {stack} {service} to the next major framework version and fix what the upgrade breaks",
    "Find out why the {stack} {service}'s p95 latency doubled after the last deploy and fix the cause",
    "Replace the hand-rolled retry loop in the {stack} {service} with jittered exponential backoff",
    "Move the {stack} {service}'s hard-coded settings into typed environment configuration",
    "Add a reversible migration that indexes the slowest query of the {stack} {service}, then verify it",
    "Write regression tests for the {stack} {service}'s signup bug, then fix the bug",
    "Split the {stack} {service}'s 900-line handler module into routes, services and repositories",
]
_IRREVERSIBLE = [
    "Drop the unused legacy_users table from the {service}'s production database",
    "Run terraform destroy on the staging environment of the {service} to cut costs",
    "Purge every object older than 30 days from the {service}'s S3 bucket",
    "Refund the duplicate charges the {service} created during last night's billing run",
    "Force-push a rewritten history to main to remove the .env file the {service} leaked",
]
