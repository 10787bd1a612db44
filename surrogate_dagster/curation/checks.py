"""Validators of a built mixture, run as blocking asset checks before it is pushed to the Hub.

Pure: no Dagster, no object store. Each validator takes rows (or counts) as the mixture holds them
(mixtures.to_mixture_row) and returns a `CheckOutcome`: passed, a one-line description and
JSON-able metadata naming the offending rows (at most `SHOWN` of them).

- `check_schema`: SFT rows ``{id, source, messages}``; DPO rows ``{id, source, messages, chosen,
  rejected}``; every message ``{role, content}`` with a known role and string content; chosen and
  rejected are assistant messages.
- `check_turns`: an SFT row trains on its assistant turns, so one without a non-empty assistant
  turn teaches nothing; a DPO row with an empty chosen answer rewards saying nothing, and one whose
  answer axolotl would cut at the wrong place (`dpo_cut_problem`) trains on the wrong text.
- `check_row_count`: an empty mixture, or one that lost more than a set share of the previous
  version's rows (an upstream filter or adapter that silently collapsed).
- `check_source_shares`: no source above a maximum share (unless the mixture has one member), and
  no member that had rows in the previous version at 0 rows now.
- `check_canaries`: no row holds a canary of the no-leak manifest (any 16-character window of one).
- `check_over_sequence_len`: the share of rows longer than the stage's sequence_len (counted by the
  training group, which owns the tokenizer) stays under a bound.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

ROLES = frozenset({"system", "user", "assistant", "tool"})
SFT_KEYS = frozenset({"id", "source", "messages"})
DPO_KEYS = frozenset({"id", "source", "messages", "chosen", "rejected"})
SHOWN = 20  # offending rows named in a check's metadata


@dataclass(frozen=True)
class CheckOutcome:
    passed: bool
    description: str
    metadata: dict[str, Any] = field(default_factory=dict)


def _ref(row: Any, i: int) -> str:
    if isinstance(row, Mapping):
        return f"{row.get('source', '?')}/{row.get('id', f'#{i}')}"
    return f"#{i}"


def _message_problem(m: Any, where: str) -> str | None:
    if not isinstance(m, Mapping):
        return f"{where} is {type(m).__name__}, not an object"
    if set(m) != {"role", "content"}:
        return f"{where} has keys {sorted(m)}, not role+content"
    if m["role"] not in ROLES:
        return f"{where} has role {m['role']!r}"
    if not isinstance(m["content"], str):
        return f"{where} content is {type(m['content']).__name__}, not a string"
    return None


def row_schema_problem(row: Any, kind: str) -> str | None:
    """What is wrong with one mixture row's shape, or None."""
    if not isinstance(row, Mapping):
        return f"row is {type(row).__name__}, not an object"
    keys = DPO_KEYS if kind == "dpo" else SFT_KEYS
    if set(row) != keys:
        missing, extra = sorted(keys - set(row)), sorted(set(row) - keys)
        return "keys: " + ", ".join([*(f"missing {k}" for k in missing), *(f"unexpected {k}" for k in extra)])
    for k in ("id", "source"):
        if not isinstance(row[k], str) or not row[k]:
            return f"{k} is not a non-empty string"
    msgs = row["messages"]
    if not isinstance(msgs, list) or not msgs:
        return "messages is not a non-empty list"
    for j, m in enumerate(msgs):
        problem = _message_problem(m, f"messages[{j}]")
        if problem:
            return problem
    if kind == "dpo":
        for k in ("chosen", "rejected"):
            problem = _message_problem(row[k], k)
            if problem:
                return problem
            if row[k]["role"] != "assistant":
                return f"{k} has role {row[k]['role']!r}, not assistant"
    return None


def _per_row(rows: Iterable[Any], problem_of: Callable[[Any], str | None], failed: str,
             passed: str) -> CheckOutcome:
    """A check that holds when ``problem_of`` finds nothing in any row; the outcome names the
    count and the first bad row (``failed`` / ``passed`` complete "<k> of <n> rows ..." / "<n>")."""
    n, bad = 0, []
    for i, row in enumerate(rows):
        n += 1
        problem = problem_of(row)
        if problem:
            bad.append({"row": _ref(row, i), "problem": problem})
    if bad:
        return CheckOutcome(False, f"{len(bad)} of {n} rows {failed}; first: {bad[0]['row']}: {bad[0]['problem']}",
                            {"rows": n, "bad_rows": len(bad), "examples": bad[:SHOWN]})
    return CheckOutcome(True, passed.format(n=n), {"rows": n, "bad_rows": 0})


def check_schema(rows: Iterable[Any], kind: str) -> CheckOutcome:
    """Every row has the mixture format of its kind ("sft" or "dpo")."""
    return _per_row(rows, lambda row: row_schema_problem(row, kind), f"do not match the {kind} schema",
                    f"{{n}} rows match the {kind} schema")


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


# What axolotl's DPO `chat_template.default` renders before an answer under the Qwen2.5 template:
# it renders [dummy user turn, answer] (the template adds its default system turn) and keeps the
# text from the FIRST `str.find(answer)`. An answer found earlier, inside this prefix, is cut there:
# "You are" or "assistant" would train on the system prompt and the dummy turn instead.
AXOLOTL_DPO_ANSWER_PREFIX = ("<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
                             "assistant.<|im_end|>\n<|im_start|>user\n[[dummy_message]]<|im_end|>\n"
                             "<|im_start|>assistant\n")


def dpo_cut_problem(answer: str) -> str | None:
    """Why axolotl would not cut ``answer`` out of its rendering exactly, or None."""
    if not answer.strip():
        return "empty answer"
    if (AXOLOTL_DPO_ANSWER_PREFIX + answer).find(answer) != len(AXOLOTL_DPO_ANSWER_PREFIX):
        return f"answer {answer[:40]!r} occurs in the template's own text, where axolotl would cut it"
    return None


def turn_problem(row: Mapping, kind: str) -> str | None:
    """What the row lacks to train on, or None: an assistant turn (SFT); a chosen and a rejected
    answer that axolotl cuts out exactly (DPO)."""
    if kind == "dpo":
        for key in ("chosen", "rejected"):
            answer = row.get(key)
            if not isinstance(answer, Mapping):
                return f"no {key} answer"
            problem = dpo_cut_problem(_text(answer.get("content")))
            if problem:
                return f"{key}: {problem}"
        return None
    for m in row.get("messages") or []:
        if isinstance(m, Mapping) and m.get("role") == "assistant" and _text(m.get("content")).strip():
            return None
    return "no assistant turn"


def check_turns(rows: Iterable[Mapping], kind: str) -> CheckOutcome:
    """Every SFT row has a non-empty assistant turn; every DPO row a non-empty chosen answer."""
    return _per_row(rows, lambda row: turn_problem(row, kind) if isinstance(row, Mapping) else "not an object",
                    "have nothing to train on", "all {n} rows have something to train on")


def check_row_count(rows: int, previous: int | None, max_drop: float) -> CheckOutcome:
    """Fails on an empty mixture, or one with fewer than ``(1 - max_drop) * previous`` rows."""
    meta = {"rows": rows, "previous_rows": previous if previous is not None else "none",
            "max_drop": max_drop}
    if rows == 0:
        return CheckOutcome(False, "the mixture is empty", meta)
    if previous:
        drop = 1 - rows / previous
        meta["drop"] = round(drop, 4)
        # compared as row counts: 1 - 7/10 is 0.30000000000000004 in floats
        if rows < previous * (1 - max_drop) - 1e-9:
            return CheckOutcome(False, f"{rows} rows, {drop:.0%} fewer than the previous version's "
                                       f"{previous} (at most {max_drop:.0%} allowed)", meta)
        return CheckOutcome(True, f"{rows} rows (previous version: {previous})", meta)
    return CheckOutcome(True, f"{rows} rows (no previous version)", meta)


def check_source_shares(by_source: Mapping[str, int], members: Sequence[str],
                        previous_by_source: Mapping[str, int] | None, max_share: float) -> CheckOutcome:
    """No source holds more than ``max_share`` of the rows when the mixture has several members;
    no member that had rows in the previous version has none now."""
    total = sum(by_source.values())
    shares = {s: round(n / total, 4) for s, n in by_source.items()} if total else {}
    problems = []
    if len(members) > 1:
        for s, share in shares.items():
            if share > max_share:
                problems.append(f"{s} holds {share:.0%} of the rows (at most {max_share:.0%})")
    for s in members:
        before = (previous_by_source or {}).get(s, 0)
        if before and not by_source.get(s, 0):
            problems.append(f"{s} has 0 rows (previous version: {before})")
    meta = {"shares": shares, "members": list(members), "max_share": max_share,
            "previous_by_source": dict(previous_by_source or {})}
    if problems:
        return CheckOutcome(False, "; ".join(problems), meta)
    top = max(shares.items(), key=lambda kv: kv[1]) if shares else None
    return CheckOutcome(True, f"largest share: {top[0]} {top[1]:.0%}" if top else "no rows", meta)


def row_texts(row: Mapping) -> str:
    """Every content string of a mixture row, one per line (what a canary scan reads)."""
    parts = [_text(m.get("content")) for m in row.get("messages") or [] if isinstance(m, Mapping)]
    for k in ("chosen", "rejected"):
        if isinstance(row.get(k), Mapping):
            parts.append(_text(row[k].get("content")))
    return "\n".join(parts)


def check_canaries(rows: Iterable[Mapping], hits: Callable[[str], Sequence[Any]] | None) -> CheckOutcome:
    """No row holds a canary; ``hits(text)`` returns the canaries found in a text (None: no
    manifest, nothing to scan for, passes)."""
    if hits is None:
        return CheckOutcome(True, "no canary manifest: nothing to scan for", {"manifest": "none"})
    n, found = 0, []
    for i, row in enumerate(rows):
        n += 1
        for c in hits(row_texts(row)):
            found.append({"row": _ref(row, i), "kind": getattr(c, "kind", str(c))})
    if found:
        return CheckOutcome(False, f"{len(found)} canary hit(s) in {n} rows; first in {found[0]['row']}",
                            {"rows_scanned": n, "hits": len(found), "examples": found[:SHOWN]})
    return CheckOutcome(True, f"no canary in {n} rows", {"rows_scanned": n, "hits": 0})


def check_over_sequence_len(over: int, rows: int, sequence_len: int | None, max_share: float) -> CheckOutcome:
    """At most ``max_share`` of the rows are longer than ``sequence_len`` tokens (the trainer drops
    them: past the bound, a stage trains on a different mixture than the one curated)."""
    meta = {"rows": rows, "over_sequence_len": over, "sequence_len": sequence_len or "none",
            "max_share": max_share}
    if not sequence_len or not rows:
        return CheckOutcome(True, "no sequence_len or no rows: nothing to compare", meta)
    share = over / rows
    meta["share"] = round(share, 4)
    if share > max_share:
        return CheckOutcome(False, f"{over} of {rows} rows ({share:.1%}) are longer than sequence_len "
                                   f"{sequence_len} (at most {max_share:.1%})", meta)
    return CheckOutcome(True, f"{over} of {rows} rows longer than sequence_len {sequence_len}", meta)
