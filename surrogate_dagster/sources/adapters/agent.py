"""Agent adapters: multi-step agent trajectories and task datasets -> ChatML (Hermes where tools).

Each adapter's docstring gives its source's schema. Quarantine reasons are the tool
family's (see adapters/tools.py) plus ``empty_patch`` / ``bad_patch`` (SWE-Gym).
"""

from __future__ import annotations

import re
from typing import Any

from .base import AdapterContext, Quarantine, content_id, sft_row
from .tools import finish, loads_column, role_of, sharegpt_messages, text_of, tools_of


def hermes_agent_traces(row: dict, ctx: AdapterContext) -> dict:
    """lambda/hermes-agent-reasoning-traces (configs kimi, glm-5.1): ShareGPT, ``tools`` JSON string.

    Already Hermes: the agent's system prompt is kept verbatim when its ``<tools>`` block is JSON
    (it carries agent instructions a rebuilt prompt would lose). Every ``<tool_call>`` is validated
    and re-emitted as strict JSON; a malformed or undeclared call quarantines the trajectory.
    ``<think>`` blocks stay (the recipe decides whether to train on them).
    """
    tools = tools_of(loads_column(row.get("tools"), "tools"))
    messages = sharegpt_messages(row.get("conversations"), tools, keep_system="verbatim")
    meta = {k: row.get(k) for k in ("category", "subcategory", "task")}
    return finish(ctx, row.get("id") or None, messages, tools, meta)


def nebius_swe_agent(row: dict, ctx: AdapterContext) -> dict:
    """nebius/SWE-agent-trajectories: ``trajectory`` of ``{role: system|user|ai, system_prompt, text,
    mask, cutoff_date}`` (the mirror keeps ``target == True``).

    Kept as plain ChatML with SWE-agent's text commands. The source has no function calling, and
    its ACI commands (``edit 12:14`` with a multi-line body, ``goto``, ``submit``) are not calls of
    any declared tool: rewriting them as ``<tool_call>``s would invent a schema the trajectories
    were never run with. The system turn's text is in ``system_prompt`` (``text`` is null there).
    """
    traj = row.get("trajectory")
    if not isinstance(traj, list) or not traj:
        raise Quarantine("empty_conversation")
    messages = []
    for i, t in enumerate(traj):
        if not isinstance(t, dict):
            raise Quarantine("bad_turn", f"turn {i}")
        role = role_of(t.get("role"), f"turn {i}")
        if role == "tool":  # SWE-agent observations are user turns; a tool turn has no call to answer
            raise Quarantine("bad_role", f"turn {i}: tool turn in a source without tool calls")
        raw = t.get("system_prompt") if role == "system" else t.get("text")
        if raw is None:
            raise Quarantine("non_text_content", f"turn {i}: null {'system_prompt' if role == 'system' else 'text'}")
        messages.append({"role": role, "content": text_of(raw, f"turn {i}")})
    meta = {"instance_id": row.get("instance_id"), "model_name": row.get("model_name"),
            "target": row.get("target"), "exit_status": row.get("exit_status"),
            "n_masked_turns": sum(1 for t in traj if isinstance(t, dict) and t.get("mask"))}
    row_id = content_id(row.get("instance_id"), row.get("model_name"), traj)
    return sft_row(ctx, row_id, messages, meta=meta)


_DIFF_HEADER = re.compile(r"^(diff --git |--- )", re.M)


def swe_gym(row: dict, ctx: AdapterContext) -> dict:
    """SWE-Gym/SWE-Gym: a task dataset with no trajectories, so the pair is problem statement ->
    gold patch (a unified diff), successful by construction. ``repo``/``base_commit`` go in the prompt
    (the patch is only meaningful against them) and in ``meta``; tests and hints are left out, as
    SWE-bench-style evaluation does not show them."""
    problem = text_of(row.get("problem_statement"), "problem_statement").strip()
    patch = text_of(row.get("patch"), "patch")
    if not patch.strip():
        raise Quarantine("empty_patch")
    if not _DIFF_HEADER.search(patch):
        raise Quarantine("bad_patch", "no diff header")
    repo, commit = row.get("repo") or "", row.get("base_commit") or ""
    user = (f"Repository: {repo}\nBase commit: {commit}\n\n<issue>\n{problem}\n</issue>\n\n"
            "Resolve the issue. Answer with a patch in unified diff format that applies to the base commit.")
    messages = [{"role": "user", "content": user if problem else ""},
                {"role": "assistant", "content": f"```diff\n{patch.rstrip()}\n```"}]
    meta = {k: row.get(k) for k in ("instance_id", "repo", "base_commit", "version", "created_at")}
    return sft_row(ctx, row.get("instance_id") or content_id(row), messages, meta=meta)


def orca_agentinstruct(row: dict, ctx: AdapterContext) -> dict:
    """microsoft/orca-agentinstruct-1M-v1 (splits are categories): ``messages`` is a JSON string of
    ``[{role, content}]``; empty system messages are dropped. Plain instructions, no tools."""
    msgs = loads_column(row.get("messages"), "messages")
    if not isinstance(msgs, list) or not msgs:
        raise Quarantine("empty_conversation")
    messages = []
    for i, m in enumerate(msgs):
        if not isinstance(m, dict):
            raise Quarantine("bad_turn", f"turn {i}")
        role = role_of(m.get("role"), f"turn {i}")
        content = text_of(m.get("content"), f"turn {i}")
        if role == "system" and not content.strip():
            continue
        if role == "tool":
            raise Quarantine("bad_role", f"turn {i}: tool turn in a tool-less source")
        messages.append({"role": role, "content": content})
    meta: dict[str, Any] = {"category": ctx.options.get("split")}
    return sft_row(ctx, content_id(row.get("messages")), messages, meta=meta)


ADAPTERS = {
    "hermes_agent_traces": hermes_agent_traces,
    "nebius_swe_agent": nebius_swe_agent,
    "swe_gym": swe_gym,
    "orca_agentinstruct": orca_agentinstruct,
}
