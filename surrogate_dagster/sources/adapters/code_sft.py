"""Code SFT adapters: native rows of the eight code sources -> normalized ChatML SFT rows.

Each adapter's docstring gives its source's schema. Row-level filters (rStar ``is_passed``, OCR-2
``judgement``/``pass_rate``, OpenCodeInstruct ``average_test_score``) are catalog filters applied at
mirror time; here the values are only coerced into ``meta`` so curation can see them.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Callable

from ..ocr2_questions import HELPER_DATASETS, helper_short_name
from .base import AdapterContext, CatalogError, Quarantine, content_id, sft_row
from .limits import loads_json

# Leading whitespace of the fence's own line only: `^\s*` would let every line start of a long
# blank run rescan the rest of the run (quadratic: seconds on 100 KB of " \n").
_FENCE = re.compile(r"^[^\S\n]*```[ \t]*([A-Za-z0-9_+#.-]*)", re.MULTILINE)

# Fence info strings -> one language name, so curation can pick its AST parser.
_LANG_ALIASES = {"py": "python", "python3": "python", "c++": "cpp", "cxx": "cpp", "cc": "cpp",
                 "js": "javascript", "ts": "typescript", "sh": "bash", "shell": "bash", "golang": "go",
                 "rs": "rust", "cs": "csharp", "c#": "csharp"}


def fence_language(*texts: str) -> str | None:
    """Language of the first fenced code block with an info string in ``texts``."""
    for text in texts:
        for m in _FENCE.finditer(text or ""):
            if m.group(1):
                tag = m.group(1).lower()
                return _LANG_ALIASES.get(tag, tag)
    return None


def _has_code(text: str) -> bool:
    return "```" in text


def text_field(row: dict, key: str, empty_reason: str) -> str:
    """A required string column; missing, non-string and blank values are quarantined."""
    if key not in row or row[key] is None:
        raise Quarantine("missing_field", key)
    value = row[key]
    if not isinstance(value, str):
        raise Quarantine("wrong_type", f"{key}: {type(value).__name__}")
    if not value.strip():
        raise Quarantine(empty_reason, key)
    return value


def json_list(value: Any, key: str) -> list:
    """A JSON-in-string list column (already-decoded lists pass through)."""
    if isinstance(value, list):
        return value
    if value is None:
        raise Quarantine("missing_field", key)
    if not isinstance(value, str):
        raise Quarantine("wrong_type", f"{key}: {type(value).__name__}")
    try:
        decoded = loads_json(value, key)
    except json.JSONDecodeError as exc:
        raise Quarantine("malformed_json", f"{key}: {exc.msg}") from exc
    if not isinstance(decoded, list):
        raise Quarantine("wrong_type", f"{key}: JSON {type(decoded).__name__}, expected list")
    return decoded


def to_float(value: Any) -> float | None:
    """Numeric coercion for score columns whose dtype varies (``"1"``, ``0.9``, ``"n/a"``)."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        f = float(value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: an int beyond float range
        return None
    return None if math.isnan(f) else f


def to_bool(value: Any) -> bool | None:
    """True/False from bools, 0/1 and "true"/"false" strings; anything else is unknown (None)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return None


def _single_turn(ctx: AdapterContext, row_id: str, user: str, assistant: str, meta: dict) -> dict:
    meta = {k: v for k, v in meta.items() if v is not None}
    meta.setdefault("language", fence_language(assistant, user))
    return sft_row(ctx, row_id, [{"role": "user", "content": user},
                                 {"role": "assistant", "content": assistant}], meta=meta)


def _check_config(ctx: AdapterContext, allowed: tuple[str, ...]) -> None:
    # A wrong config is a catalog error, not a bad row: fail the partition loudly.
    if ctx.config not in allowed:
        raise CatalogError(f"{ctx.source}: config {ctx.config!r} not in {allowed}")


# --- microsoft/rStar-Coder ------------------------------------------------------------------------

def adapt_rstar_coder(row: dict, ctx: AdapterContext) -> dict:
    """synthetic_sft / seed_sft: question (+ starter_code for seed_sft) -> response."""
    _check_config(ctx, ("synthetic_sft", "seed_sft"))
    question = text_field(row, "question", "empty_question")
    response = text_field(row, "response", "empty_answer")
    code = row.get("code")
    # SOURCES: `code` only proves the solution exists; the response must carry code either way.
    if not _has_code(response) and not (isinstance(code, str) and code.strip()):
        raise Quarantine("no_code", "response has no fenced code and `code` is empty")
    if ctx.config == "synthetic_sft":
        meta = {"seed_source": row.get("seed_source"),
                # synthetic rows have no question_id; group several responses per problem by text
                "group_key": content_id(row.get("seed_question") or question)}
        return _single_turn(ctx, content_id(question, response), question, response, meta)
    starter = row.get("starter_code")
    if starter is not None and not isinstance(starter, str):
        raise Quarantine("wrong_type", f"starter_code: {type(starter).__name__}")
    user = question
    if starter and starter.strip():
        user = f"{question.rstrip()}\n\nUse the following starter code:\n```python\n{starter.strip()}\n```"
    qid = row.get("question_id")
    meta = {"question_id": qid, "group_key": str(qid) if qid is not None else content_id(question),
            "is_passed": to_bool(row.get("is_passed")), "verified": to_bool(row.get("verified"))}
    return _single_turn(ctx, content_id(qid, question, response), user, response, meta)


# --- nvidia/OpenCodeReasoning-2 -------------------------------------------------------------------

_OCR2_LANGS = ("python", "cpp")


def adapt_opencodereasoning_2(row: dict, ctx: AdapterContext) -> dict:
    """Rebuilt question (from the helper datasets) -> r1_generation."""
    answer = text_field(row, "r1_generation", "empty_answer")
    question = row.get("question")
    dataset, split, index = row.get("dataset"), row.get("split"), row.get("index")
    if question == "-" or question is None:
        try:
            pos = int(index)
        except (TypeError, ValueError, OverflowError) as exc:  # OverflowError: int(float("inf"))
            raise Quarantine("bad_index", f"index {index!r}") from exc
        if str(dataset) not in HELPER_DATASETS:
            raise Quarantine("ocr2_unknown_helper", f"dataset {dataset!r}")
        # The lookup is keyed by the helper row's own id (ocr2_questions.py); None: no such id.
        question = ctx.helper_questions(str(dataset), str(split), pos)
        helper = helper_short_name(dataset)
        if question is None:
            raise Quarantine(f"ocr2_id_not_found_{helper}",
                             f"{HELPER_DATASETS[str(dataset)].repo} split {split!r} has no row with id {pos}")
        if not question.strip():
            raise Quarantine(f"ocr2_question_empty_{helper}",
                             f"{HELPER_DATASETS[str(dataset)].repo} split {split!r} id {pos} has no statement")
    elif not isinstance(question, str) or not question.strip():
        raise Quarantine("empty_question", repr(question)[:40])
    # The language is the OCR-2 split (python | cpp); the mirror passes it as options["split"].
    language = ctx.options.get("split") or (ctx.config if ctx.config in _OCR2_LANGS else None)
    language = language if language in _OCR2_LANGS else fence_language(answer)
    user = question
    if language == "cpp":
        # Same problems are answered in both languages; without this the model cannot know which.
        user = f"{question.rstrip()}\n\nWrite the solution in C++."
    native_id = row.get("id")
    meta = {"id": native_id, "question_id": row.get("question_id"), "group_key": row.get("question_id"),
            "dataset": dataset, "split": split, "index": index, "judgement": row.get("judgement"),
            "pass_rate": to_float(row.get("pass_rate")), "difficulty": row.get("difficulty"),
            "origin": row.get("source"), "license": row.get("license"), "language": language}
    return _single_turn(ctx, native_id or content_id(user, answer), user, answer, meta)


# --- nvidia/OpenCodeInstruct ----------------------------------------------------------------------

def adapt_opencodeinstruct(row: dict, ctx: AdapterContext) -> dict:
    """input -> output; unit tests and the test score ride along in meta for exec-graded synthesis."""
    user = text_field(row, "input", "empty_question")
    answer = text_field(row, "output", "empty_answer")
    tests = json_list(row.get("unit_tests"), "unit_tests")
    if not all(isinstance(t, str) for t in tests):
        raise Quarantine("wrong_type", "unit_tests: non-string entries")
    status = row.get("tests_execution_status")
    judgement = row.get("llm_judgement")
    if isinstance(judgement, str):
        # encoding unconfirmed (SOURCES §2.3): keep the raw string when it is not JSON
        try:
            judgement = loads_json(judgement, "llm_judgement")
        except json.JSONDecodeError:
            pass
    meta = {"id": row.get("id"), "domain": row.get("domain"),
            "generation_algorithm": row.get("generation_algorithm"),
            "unit_tests": tests,
            "tests_execution_status": json_list(status, "tests_execution_status") if status is not None else None,
            "average_test_score": to_float(row.get("average_test_score")), "llm_judgement": judgement}
    return _single_turn(ctx, row.get("id") or content_id(user, answer), user, answer, meta)


# --- inclusionAI/Ling-Coder-SFT -------------------------------------------------------------------

_ROLE_MAP = {"human": "user", "user": "user", "assistant": "assistant", "gpt": "assistant",
             "bot": "assistant", "system": "system"}


def adapt_ling_coder_sft(row: dict, ctx: AdapterContext) -> dict:
    """Multi-turn HUMAN/ASSISTANT/SYSTEM (any case) -> ChatML."""
    turns = row.get("messages")
    if not isinstance(turns, list) or not turns:
        raise Quarantine("wrong_type", f"messages: {type(turns).__name__}")
    messages = []
    for i, turn in enumerate(turns):
        if not isinstance(turn, dict):
            raise Quarantine("wrong_type", f"turn {i}: {type(turn).__name__}")
        role = _ROLE_MAP.get(str(turn.get("role", "")).strip().lower())
        if role is None:
            raise Quarantine("bad_role", f"turn {i}: {turn.get('role')!r}")
        content = turn.get("content")
        if not isinstance(content, str):
            raise Quarantine("non_text_content", f"turn {i}")
        if role == "assistant" and not content.strip():
            raise Quarantine("empty_answer", f"turn {i}")
        messages.append({"role": role, "content": content})
    if messages[-1]["role"] != "assistant":
        raise Quarantine("last_turn_not_assistant")
    languages = row.get("languages") if isinstance(row.get("languages"), list) else []
    meta = {"mid": row.get("mid"), "tags": row.get("tags"), "languages": languages,
            "language": _LANG_ALIASES.get(str(languages[0]).lower(), str(languages[0]).lower())
            if languages else fence_language(*(m["content"] for m in messages if m["role"] == "assistant"))}
    return sft_row(ctx, row.get("mid") or content_id(messages), messages, meta=meta)


# --- OpenCoder-LLM/opc-sft-stage1 / stage2 --------------------------------------------------------

OPC_STAGE1_CONFIGS = ("filtered_infinity_instruct", "largescale_diverse_instruct", "realuser_instruct")
OPC_STAGE2_CONFIGS = ("educational_instruct", "evol_instruct", "mceval_instruct", "package_instruct")


def _opc(row: dict, ctx: AdapterContext, extra: dict) -> dict:
    user = text_field(row, "instruction", "empty_question")
    answer = text_field(row, "output", "empty_answer")
    native_id = row.get("id", row.get("seq_id"))
    meta = {"id": native_id, "tag": row.get("tag"), **extra}
    return _single_turn(ctx, native_id if native_id is not None else content_id(user, answer), user, answer, meta)


def adapt_opc_sft_stage1(row: dict, ctx: AdapterContext) -> dict:
    """instruction -> output (three configs)."""
    _check_config(ctx, OPC_STAGE1_CONFIGS)
    return _opc(row, ctx, {})


def adapt_opc_sft_stage2(row: dict, ctx: AdapterContext) -> dict:
    """instruction -> output (four configs); educational_instruct keeps its assert testcases."""
    _check_config(ctx, OPC_STAGE2_CONFIGS)
    extra: dict = {"entry_point": row.get("entry_point")}
    if ctx.config == "educational_instruct":
        tests = row.get("testcase")
        # a list of assert strings natively (not JSON-in-string): anything else is a broken row
        if not isinstance(tests, list) or not all(isinstance(t, str) for t in tests):
            raise Quarantine("wrong_type", f"testcase: {type(tests).__name__} of non-strings"
                             if isinstance(tests, list) else f"testcase: {type(tests).__name__}")
        extra["testcase"] = tests
    return _opc(row, ctx, extra)


# --- bigcode/self-oss-instruct-sc2-exec-filter-50k ------------------------------------------------

def adapt_self_oss_instruct(row: dict, ctx: AdapterContext) -> dict:
    """instruction -> response. `prompt` is StarCoder2's few-shot generation prompt: never used."""
    user = text_field(row, "instruction", "empty_question")
    answer = text_field(row, "response", "empty_answer")
    meta = {"id": row.get("id"), "sha1": row.get("sha1"), "group_key": row.get("sha1"),
            "fingerprint": row.get("fingerprint"), "concepts": row.get("concepts"), "language": "python"}
    native_id = row.get("id")
    return _single_turn(ctx, native_id if native_id is not None else content_id(user, answer), user, answer, meta)


# --- m-a-p/CodeFeedback-Filtered-Instruction ------------------------------------------------------

def adapt_codefeedback_filtered(row: dict, ctx: AdapterContext) -> dict:
    """query -> answer, single turn (the Filtered set has no `messages` column)."""
    user = text_field(row, "query", "empty_question")
    answer = text_field(row, "answer", "empty_answer")
    lang = row.get("lang")
    lang = lang.strip().lower() if isinstance(lang, str) and lang.strip() else None
    meta = {"lang": row.get("lang"), "resource": row.get("resource"),
            "language": _LANG_ALIASES.get(lang, lang) if lang else None}
    return _single_turn(ctx, content_id(user, answer), user, answer, meta)


ADAPTERS: dict[str, Callable[[dict, AdapterContext], dict]] = {
    "rstar_coder": adapt_rstar_coder,
    "opencodereasoning_2": adapt_opencodereasoning_2,
    "opencodeinstruct": adapt_opencodeinstruct,
    "ling_coder_sft": adapt_ling_coder_sft,
    "opc_sft_stage1": adapt_opc_sft_stage1,
    "opc_sft_stage2": adapt_opc_sft_stage2,
    "self_oss_instruct": adapt_self_oss_instruct,
    "codefeedback_filtered": adapt_codefeedback_filtered,
}
