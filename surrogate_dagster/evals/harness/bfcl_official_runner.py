"""Per-item verdicts from bfcl-eval's own checker; run as a script by the bfcl-eval environment's Python.

    <.venv-bfcl>/bin/python bfcl_official_runner.py --in items.jsonl --out verdicts.jsonl

This file imports only the standard library and ``bfcl_eval`` (never this project's package): it runs
in the separate environment where bfcl-eval and its pins live. Each input line is one model output:

    {"key": str, "category": str, "functions": [...], "ground_truth": [...] | null,
     "decoded": [{func_name: {param: value}}, ...] | null, "decode_error": str | null}

``decoded`` is the model output already decoded into BFCL's AST form (``decode_ast``'s return value);
``decode_error`` is set instead when decoding failed. The verdict follows bfcl-eval's eval runner for
one entry: relevance categories (``irrelevance``, ``live_irrelevance``, ``live_relevance``) through
``is_empty_output``; AST categories through ``is_function_calling_format_output`` then
``ast_checker`` (Python). Each output line is ``{"key", "valid", "error_type", "error"}``; a checker
that raises on an item gives ``valid: false`` with ``error_type: "checker_exception"`` for that item
(bfcl-eval's own runner would abort the whole category). Prints ``{"scorer": "bfcl-eval <version>",
"items": n}`` on stdout.

``--serve`` checks many files in one process (importing bfcl-eval, whose model registry pulls in
every API client, costs seconds): each stdin line ``{"in": path, "out": path}`` is answered by one
stdout line ``@@bfcl-runner {"scorer": ..., "items": n}`` (or ``{"error": ...}``) once its
verdicts are written; the process ends at end of input.
"""

from __future__ import annotations

import argparse
import json
import sys
from importlib.metadata import version

from bfcl_eval.constants.enums import Language
from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker
from bfcl_eval.utils import is_empty_output, is_function_calling_format_output

# ast_checker renames dotted function names only for models whose API forbids dots
# (underscore_to_dot); this registry entry is the Qwen Hermes-format FC handler, which keeps them,
# like the <tool_call> JSON the harness decodes.
MODEL_NAME = "Qwen/Qwen3-8B-FC"
RELEVANCE = ("irrelevance", "live_irrelevance", "live_relevance")


def verdict(item: dict) -> dict:
    category, decoded, decode_error = item["category"], item.get("decoded"), item.get("decode_error")
    if category in RELEVANCE:
        has_call = decode_error is None and decoded is not None and not is_empty_output(decoded)
        valid = (not has_call) if "irrelevance" in category else has_call
        return {"valid": valid, "error_type": None if valid else f"relevance_error:{category}",
                "error": None if valid else ("made a call" if has_call else "no call decoded")}
    if decode_error is not None or decoded is None:
        return {"valid": False, "error_type": "ast_decoder:decoder_failed", "error": decode_error}
    if not is_function_calling_format_output(decoded):
        return {"valid": False, "error_type": "ast_decoder:decoder_wrong_output_format", "error": None}
    try:
        res = ast_checker(item["functions"], decoded, item["ground_truth"], Language.PYTHON, category, MODEL_NAME)
    except (KeyError, TypeError, AttributeError, IndexError, ValueError) as e:
        return {"valid": False, "error_type": "checker_exception", "error": f"{type(e).__name__}: {e}"[:300]}
    return {"valid": bool(res["valid"]), "error_type": res.get("error_type") if not res["valid"] else None,
            "error": json.dumps(res.get("error"), default=str)[:500] if not res["valid"] else None}


REPLY = "@@bfcl-runner "  # marks --serve's answer lines (anything else on stdout is not one)


def check_file(inp: str, out: str) -> dict:
    """Verdicts of every item of ``inp`` into ``out``: ``{"scorer", "items"}``, or ``{"error"}``."""
    n = 0
    with open(inp, encoding="utf-8") as fin, open(out, "w", encoding="utf-8") as fout:
        for lineno, line in enumerate(fin, 1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
                key = item["key"]
            except (json.JSONDecodeError, KeyError) as e:
                return {"error": f"line {lineno}: not an item ({e})"}
            fout.write(json.dumps({"key": key, **verdict(item)}, ensure_ascii=False) + "\n")
            n += 1
    return {"scorer": f"bfcl-eval {version('bfcl-eval')}", "items": n}


def serve() -> int:
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            meta = check_file(req["in"], req["out"])
        except (json.JSONDecodeError, KeyError, OSError) as e:
            meta = {"error": f"bad request ({type(e).__name__}: {e})"}
        sys.stdout.write(REPLY + json.dumps(meta) + "\n")
        sys.stdout.flush()
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--in", dest="inp")
    ap.add_argument("--out")
    ap.add_argument("--serve", action="store_true", help="check the files named on stdin, one request a line")
    a = ap.parse_args(argv)
    if a.serve:
        return serve()
    if not (a.inp and a.out):
        ap.error("--in and --out are required without --serve")
    meta = check_file(a.inp, a.out)
    if "error" in meta:
        print(meta["error"], file=sys.stderr)
        return 2
    print(json.dumps(meta))
    return 0


if __name__ == "__main__":
    sys.exit(main())
