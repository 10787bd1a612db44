"""BFCL's AST match, written here after bfcl-eval's ``ast_checker`` semantics (Python categories).

bfcl-eval cannot be installed into the pipeline's environment (it pins numpy 1.26.4 and
tree-sitter 0.21, PITFALLS), so its checker is not imported. These rules are the ones it applies:

- a call matches a ground-truth entry ``{func: {param: [acceptable values...]}}`` when the name is
  equal, every required parameter is present, no parameter is unknown to the function or absent
  from the ground truth, every given value's type matches the declared type (an int is accepted
  for ``float``; a tuple for ``tuple``), the value is one of the acceptable values, and every
  ground-truth parameter whose acceptable values lack ``""`` (the "may be omitted" marker) is given;
- strings compare after dropping spaces and ``,./-_*^``, lower-casing and ``'`` -> ``"``;
  lists compare element-wise with the same string rule; dicts key by key, a missing key allowed
  only when its acceptable values contain ``""``; lists of dicts dict by dict, in order;
- a value of another type than declared is accepted when its type is the ground truth's type
  (BFCL's "variable" case: the ground truth spells a variable name as a string);
- ``simple``: exactly one call; ``multiple``: one call checked against the one expected function;
  ``parallel*``: as many calls as expected, matched in any order.
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


def _type_ok(value: Any, acceptable: list, declared: str, items_type: str | None) -> tuple[bool, bool, str]:
    """(valid, is_variable, error)."""
    expected = PY_TYPES[declared]
    gt_type = _answer_type(acceptable)
    is_variable = gt_type is not None and gt_type is not expected
    if type(value) is expected:
        if items_type is None or items_type not in PY_TYPES:
            return True, is_variable, ""
        inner = PY_TYPES[items_type]
        for cand in acceptable:
            # element-wise, as BFCL: the declared item type, or the type the ground truth uses there
            if isinstance(cand, list) and all(type(v) is inner or type(v) is _answer_type(cand) for v in value):
                return True, is_variable, ""
        return False, False, f"nested type: expected {declared} of {items_type}"
    if gt_type is not None and type(value) is gt_type:
        return True, True, ""
    return False, False, f"type: expected {declared}, got {type(value).__name__}"


def _string_ok(value: str, acceptable: list) -> bool:
    return std_string(value) in [std_string(a) for a in acceptable if isinstance(a, str)]


def _std_list(xs: list) -> list:
    return [std_string(x) if isinstance(x, str) else x for x in xs]


def _list_ok(value: list, acceptable: list) -> bool:
    return _std_list(list(value)) in [_std_list(a) for a in acceptable if isinstance(a, list)]


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
        if isinstance(cand, list) and len(cand) == len(value) and \
                all(isinstance(v, dict) and _dict_ok(v, [c]) for v, c in zip(value, cand)):
            return True
    return False


def check_call(func: dict, call: dict, expected: dict) -> str | None:
    """None when ``call`` ({"name", "arguments"}) matches ``expected`` ({name: {param: [values]}})."""
    name, answers = next(iter(expected.items()))
    if call.get("name") != name:
        return f"wrong function name {call.get('name')!r} (expected {name!r})"
    args = call.get("arguments")
    if not isinstance(args, dict):
        return "arguments are not an object"
    props = func.get("parameters", {}).get("properties", {})
    for req in func.get("parameters", {}).get("required", []):
        if req not in args:
            return f"missing required parameter {req!r}"
    for param, value in args.items():
        if param not in props or param not in answers:
            return f"unexpected parameter {param!r}"
        declared = props[param].get("type", "any")
        if declared not in PY_TYPES:
            return f"unsupported declared type {declared!r}"
        if declared == "tuple" and isinstance(value, tuple):
            value = list(value)
        if declared == "float" and type(value) is int:
            value = float(value)
        items_type = (props[param].get("items") or {}).get("type") if declared in NESTED else None
        ok, is_variable, err = _type_ok(value, answers[param], declared, items_type)
        if not ok:
            return f"parameter {param!r}: {err}"
        acceptable = answers[param]
        if not is_variable:
            expected_type = PY_TYPES[declared]
            if expected_type is dict:
                if not _dict_ok(value, acceptable):
                    return f"parameter {param!r}: dict value not acceptable"
                continue
            if expected_type is list and items_type == "dict":
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
    if len(calls) != 1 or len(ground_truth) != 1:
        return f"wrong number of calls ({len(calls)} != 1)"
    func = _find_func(functions, next(iter(ground_truth[0])))
    if func is None:
        return "ground truth names an unknown function"
    return check_call(func, calls[0], ground_truth[0])
