"""BFCL's AST match after bfcl-eval's ``ast_checker`` semantics (Python categories).

bfcl-eval pins numpy 1.26.4 and tree-sitter 0.21, so it is not imported into the pipeline's
environment: when its own environment exists the harness asks it (``.bfcl_official``), and this
module is the fallback, held to the same per-item verdicts by ``tests/env/test_bfcl_official_parity.py``.
The rules, as bfcl-eval applies them:

- a call matches a ground-truth entry ``{func: {param: [acceptable values...]}}`` when the name is
  equal, every required parameter is present, no parameter is unknown to the function or absent
  from the ground truth, every given value's type matches the declared type (an int is accepted
  for ``float``; a tuple for ``tuple``), the value is one of the acceptable values, and every
  ground-truth parameter whose acceptable values lack ``""`` (the "may be omitted" marker) is given;
- strings compare after dropping spaces and ``,./-_*^``, lower-casing and ``'`` -> ``"``;
  lists compare element-wise with the same string rule (an acceptable ``""`` reads as ``[]``);
  dicts key by key, a missing key allowed only when its acceptable values contain ``""``; lists of
  dicts dict by dict, in order (an empty list matches an acceptable ``""``);
- a value of another type than declared is accepted when its type is the ground truth's type
  (BFCL's "variable" case: the ground truth spells a variable name as a string); it is then compared
  as is, without the string rule. A list whose items fail the declared item type falls into this
  case too, since the ground truth's type is ``list``;
- ``simple``: exactly one call, checked against the first listed function; ``multiple``: one call
  checked against the one expected function; ``parallel*``: as many calls as expected, matched in any
  order (each expected call takes the first unmatched call that passes);
- a function without a ``required`` list, an array without an item type, or an undeclared type is a
  failure (bfcl-eval raises on them).
Java/JavaScript categories need bfcl-eval's type converters and are not scored here.
"""

from __future__ import annotations

import re
from typing import Any

PY_TYPES: dict[str, type] = {"string": str, "integer": int, "float": float, "boolean": bool, "array": list,
                             "tuple": list, "dict": dict, "any": str}
NESTED = ("array", "tuple")
_STD = re.compile(r"[ ,./\-_*^]")


def std_string(s: str) -> str:
    return _STD.sub("", s).lower().replace("'", '"')


def _answer_type(acceptable: list) -> type | None:
    for a in acceptable:
        if a != "":
            return type(a)
    return None


def _type_ok(value: Any, acceptable: list, expected: type, nested: type | None) -> tuple[bool, bool, str]:
    """(valid, is_variable, error), bfcl-eval's ``type_checker`` (nested types one level deep)."""
    gt_type = _answer_type(acceptable)
    is_variable = gt_type is not None and gt_type is not expected
    if type(value) is expected:
        if nested is None:
            return True, is_variable, ""
        for cand in acceptable:
            # a candidate that is not a list (the "" marker) constrains nothing, as in bfcl-eval
            if not isinstance(cand, list) or all(_type_ok(v, cand, nested, None)[0] for v in value):
                return True, is_variable, ""
    if gt_type is not None and type(value) is gt_type:
        return True, True, ""
    return False, False, f"type: expected {expected.__name__}, got {type(value).__name__}"


def _string_ok(value: str, acceptable: list) -> bool:
    return std_string(value) in [std_string(a) for a in acceptable if isinstance(a, str)]


def _std_list(xs: list) -> list:
    return [std_string(x) if isinstance(x, str) else x for x in xs]


def _list_ok(value: list, acceptable: list) -> bool:
    # bfcl-eval iterates every acceptable entry as a sequence: the "" marker becomes [] (so an empty
    # list passes where the parameter may be omitted); entries that are not sequences never match
    return _std_list(list(value)) in [_std_list(list(a)) for a in acceptable if isinstance(a, (list, str))]


def _dict_ok(value: dict, acceptable: list) -> bool:
    for cand in acceptable:
        if cand == "" or not isinstance(cand, dict):
            continue
        ok = True
        for k, v in value.items():
            if k not in cand:
                ok = False
                break
            v2 = std_string(v) if isinstance(v, str) else v
            if v2 not in [std_string(c) if isinstance(c, str) else c for c in cand[k]]:
                ok = False
                break
        if ok and all(k in value or "" in vals for k, vals in cand.items()):
            return True
    return False


def _list_of_dicts_ok(value: list, acceptable: list) -> bool:
    for cand in acceptable:
        if isinstance(cand, (list, str)) and len(cand) == len(value) and \
                all(isinstance(v, dict) and _dict_ok(v, [c]) for v, c in zip(value, cand)):
            return True  # an empty list matches the "" marker (zero dicts to compare)
    return False


def check_call(func: dict, call: dict, expected: dict) -> str | None:
    """None when ``call`` ({"name", "arguments"}) matches ``expected`` ({name: {param: [values]}})."""
    # the name checked is the function's (bfcl-eval reads the expected parameters off the ground truth
    # entry but the name off the function description; the two agree except in malformed data)
    name, answers = func.get("name"), next(iter(expected.values()))
    if call.get("name") != name:
        return f"wrong function name {call.get('name')!r} (expected {name!r})"
    args = call.get("arguments")
    if not isinstance(args, dict):
        return "arguments are not an object"
    params = func.get("parameters", {})
    props = params.get("properties", {})
    if "required" not in params:
        return "function declares no 'required' list"
    for req in params["required"]:
        if req not in args:
            return f"missing required parameter {req!r}"
    for param, value in args.items():
        if param not in props or param not in answers:
            return f"unexpected parameter {param!r}"
        declared = props[param].get("type", "any")
        if declared not in PY_TYPES:
            return f"unsupported declared type {declared!r}"
        nested = None
        if declared in NESTED:
            items_type = (props[param].get("items") or {}).get("type")
            if items_type not in PY_TYPES:
                return f"parameter {param!r}: unsupported item type {items_type!r}"
            nested = PY_TYPES[items_type]
        if declared == "tuple" and isinstance(value, tuple):
            value = list(value)
        if declared == "float" and type(value) is int:
            value = float(value)
        ok, is_variable, err = _type_ok(value, answers[param], PY_TYPES[declared], nested)
        if not ok:
            return f"parameter {param!r}: {err}"
        acceptable = answers[param]
        if not is_variable:
            expected_type = PY_TYPES[declared]
            if expected_type is dict:
                if not _dict_ok(value, acceptable):
                    return f"parameter {param!r}: dict value not acceptable"
                continue
            if expected_type is list and nested is dict:
                if not _list_of_dicts_ok(value, acceptable):
                    return f"parameter {param!r}: list of dicts not acceptable"
                continue
            if expected_type is str:
                if not _string_ok(value, acceptable):
                    return f"parameter {param!r}: {value!r} not in {acceptable}"
                continue
            if expected_type is list:
                if not _list_ok(value, acceptable):
                    return f"parameter {param!r}: {value!r} not in {acceptable}"
                continue
        if value not in acceptable:
            return f"parameter {param!r}: {value!r} not in {acceptable}"
    for param, vals in answers.items():
        if param not in args and "" not in vals:
            return f"parameter {param!r} omitted but not optional"
    return None


def _find_func(functions: list[dict], name: str) -> dict | None:
    return next((f for f in functions if f.get("name") == name), None)


def check_sample(category: str, functions: list[dict], calls: list[dict], ground_truth: list[dict]) -> str | None:
    """None when the decoded ``calls`` answer the sample; else the first reason they do not."""
    if "parallel" in category:
        if len(calls) != len(ground_truth):
            return f"wrong number of calls ({len(calls)} != {len(ground_truth)})"
        used: set[int] = set()
        for exp in ground_truth:
            func = _find_func(functions, next(iter(exp)))
            if func is None:
                return f"ground truth names an unknown function {next(iter(exp))!r}"
            hit = next((i for i, c in enumerate(calls) if i not in used and check_call(func, c, exp) is None), None)
            if hit is None:
                return f"no call matches expected {next(iter(exp))!r}"
            used.add(hit)
        return None
    if not ground_truth:
        return "no ground truth entry"
    if len(calls) != 1 or ("multiple" in category and len(ground_truth) != 1):
        return f"wrong number of calls ({len(calls)} != {len(ground_truth) if 'multiple' in category else 1})"
    if "multiple" in category:
        func = _find_func(functions, next(iter(ground_truth[0])))
    else:
        # simple categories: bfcl-eval checks against the first listed function, whatever its name
        func = functions[0] if functions else None
    if func is None:
        return "ground truth names an unknown function"
    return check_call(func, calls[0], ground_truth[0])
