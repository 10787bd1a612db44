"""The host's half of an assertion: a small interpreter of side-effect-free operations over plain values.

``host_eval`` evaluates the parts of a test the host can compute itself (literals, names the
host bound, whitelisted builtins such as ``sorted``/``len``/``math.isclose``, operators), and
``_Splitter`` splits an assertion's expression into that host structure and the probes the
sandbox must compute (``sealed.py``). The values may be the candidate's: sets and dicts are built
through ``plain.safe_set`` / ``safe_dict``, repetitions and powers are capped, and every node
counts against the judgement's budget (``plain.Budget``). Nothing the candidate controls executes
here.
"""

from __future__ import annotations

import ast
import math
import operator
from typing import Any

from surrogate_dagster.sandbox.plain import check_hash_spread, current_budget, safe_dict, safe_set, typed_eq, typed_in

_MAX_LEN = 1_000_000  # cap on sequences the host builds (range, repetition)

_TYPES = {"int": int, "float": float, "str": str, "bool": bool, "list": list, "tuple": tuple,
          "dict": dict, "set": set, "frozenset": frozenset, "bytes": bytes, "complex": complex}


def _range(*a: int) -> list[int]:
    if len(range(*a)) > _MAX_LEN:
        raise ValueError("range too long to evaluate on the host")
    return list(range(*a))


_FUNCS = {"abs": abs, "len": len, "sorted": sorted, "round": round, "min": min, "max": max, "chr": chr, "ord": ord,
          "sum": sum, "all": all, "any": any, "isinstance": isinstance, "type": type, "range": _range,
          **_TYPES}
_MATH = {"isclose": math.isclose, "sqrt": math.sqrt, "inf": math.inf, "pi": math.pi, "e": math.e,
         "nan": math.nan, "floor": math.floor, "ceil": math.ceil, "fabs": math.fabs}
_BIN = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
        ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
        ast.Pow: operator.pow, ast.BitAnd: operator.and_, ast.BitOr: operator.or_,
        ast.BitXor: operator.xor}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_,
          ast.Invert: operator.invert}


class HostEvalError(ValueError):
    """The host-side part of an assertion cannot be evaluated over the values that came back."""


def _guarded_bin(op: type, a: Any, b: Any) -> Any:
    # the expression is the dataset's, the operands may be the candidate's: keep the host's work small
    if op is ast.Pow and isinstance(b, int) and abs(b) > 4096 and isinstance(a, (int, float)) and abs(a) > 1:
        raise HostEvalError("exponent too large to evaluate on the host")
    if op is ast.Mult:
        for seq, n in ((a, b), (b, a)):
            if isinstance(seq, (str, bytes, list, tuple)) and isinstance(n, int) and len(seq) * n > _MAX_LEN:
                raise HostEvalError("repetition too large to evaluate on the host")
    if op in (ast.BitOr, ast.BitAnd, ast.BitXor, ast.Sub) and isinstance(a, (set, frozenset)) \
            and isinstance(b, (set, frozenset)):
        check_hash_spread([*a, *b])  # each side is safe; their union might not be
    return _BIN[op](a, b)


def _compare(op: ast.cmpop, a: Any, b: Any) -> bool:
    if isinstance(op, ast.Eq):
        return typed_eq(a, b)
    if isinstance(op, ast.NotEq):
        return not typed_eq(a, b)
    if isinstance(op, ast.In):
        return typed_in(a, b)
    if isinstance(op, ast.NotIn):
        return not typed_in(a, b)
    if isinstance(op, ast.Is):
        return a is b
    if isinstance(op, ast.IsNot):
        return a is not b
    return {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
            ast.GtE: operator.ge}[type(op)](a, b)


def host_eval(node: ast.AST, env: dict[str, Any]) -> Any:
    """Evaluate an expression built only from nodes ``_host_ok`` accepts, over plain values. Sets
    and dicts are built through ``plain.safe_set`` / ``safe_dict`` (no hash flooding); each node
    counts against the judgement's budget."""
    current_budget().tick()
    t = type(node)
    if t is ast.Constant:
        return node.value
    if t is ast.Name:
        if node.id in env:
            return env[node.id]
        return _FUNCS[node.id]
    if t is ast.Attribute:
        return _MATH[node.attr]
    if t in (ast.List, ast.Tuple, ast.Set):
        items = [host_eval(e, env) for e in node.elts]
        return safe_set(items) if t is ast.Set else (list(items) if t is ast.List else tuple(items))
    if t is ast.Dict:
        return safe_dict([(host_eval(k, env), host_eval(v, env)) for k, v in zip(node.keys, node.values)])
    if t is ast.UnaryOp:
        return _UNARY[type(node.op)](host_eval(node.operand, env))
    if t is ast.BinOp:
        return _guarded_bin(type(node.op), host_eval(node.left, env), host_eval(node.right, env))
    if t is ast.BoolOp:
        is_and = isinstance(node.op, ast.And)
        v: Any = None
        for e in node.values:
            v = host_eval(e, env)
            if bool(v) != is_and:
                return v
        return v
    if t is ast.Compare:
        left = host_eval(node.left, env)
        for op, comp in zip(node.ops, node.comparators):
            right = host_eval(comp, env)
            if not _compare(op, left, right):
                return False
            left = right
        return True
    if t is ast.IfExp:
        return host_eval(node.body if host_eval(node.test, env) else node.orelse, env)
    if t is ast.Subscript:
        return host_eval(node.value, env)[host_eval(node.slice, env)]
    if t is ast.Slice:
        return slice(*(None if p is None else host_eval(p, env) for p in (node.lower, node.upper, node.step)))
    if t is ast.Call:
        fn = host_eval(node.func, env)
        args = [host_eval(a, env) for a in node.args]
        kwargs = {k.arg: host_eval(k.value, env) for k in node.keywords}
        if fn in (set, frozenset) and not kwargs and len(args) <= 1:
            return safe_set(args[0] if args else (), fn)
        if fn is dict and not kwargs and len(args) == 1:
            return safe_dict(args[0])
        return fn(*args, **kwargs)
    raise HostEvalError(f"cannot evaluate {t.__name__} on the host")


_STRUCT = (ast.Constant, ast.List, ast.Tuple, ast.Set, ast.Dict, ast.UnaryOp, ast.BinOp, ast.BoolOp,
           ast.Compare, ast.IfExp, ast.Subscript, ast.Slice)


def _is_safe_call(node: ast.Call, shadowed: set[str]) -> bool:
    f = node.func
    if isinstance(f, ast.Name):
        ok = f.id in _FUNCS and f.id not in shadowed
    else:
        ok = isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "math" \
            and f.attr in _MATH and "math" not in shadowed
    return ok and not any(isinstance(a, ast.Starred) for a in node.args) and all(k.arg for k in node.keywords)


def _is_safe_leaf(node: ast.AST, bound: dict[str, Any], shadowed: set[str]) -> bool:
    if isinstance(node, ast.Name):
        return node.id in bound or (node.id in _TYPES and node.id not in shadowed)
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "math" \
        and node.attr in _MATH and "math" not in shadowed


class _Splitter:
    """Splits one assertion's expression into host structure and sandbox probes."""

    def __init__(self, bound: dict[str, Any], shadowed: set[str]) -> None:
        self.bound, self.shadowed = bound, shadowed
        self.probes: list[ast.expr] = []

    def host_only(self, node: ast.AST) -> bool:
        """True when ``node`` needs nothing from the sandbox."""
        if isinstance(node, (ast.Name, ast.Attribute)):
            return _is_safe_leaf(node, self.bound, self.shadowed)
        if isinstance(node, ast.Call):
            return _is_safe_call(node, self.shadowed) and all(
                self.host_only(a) for a in [*node.args, *(k.value for k in node.keywords)])
        if isinstance(node, ast.Dict) and any(k is None for k in node.keys):
            return False
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)) and any(isinstance(e, ast.Starred) for e in node.elts):
            return False
        if isinstance(node, _STRUCT):
            return all(self.host_only(c) for c in ast.iter_child_nodes(node)
                       if not isinstance(c, (ast.operator, ast.cmpop, ast.boolop, ast.unaryop, ast.expr_context)))
        return False

    def split(self, node: ast.expr) -> ast.expr:
        """``node`` with each maximal sandbox-needing part replaced by a probe placeholder."""
        if self.host_only(node):
            return node
        combinable = isinstance(node, _STRUCT) or (isinstance(node, ast.Call) and _is_safe_call(node, self.shadowed))
        if isinstance(node, ast.Dict) and any(k is None for k in node.keys):
            combinable = False
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)) and any(isinstance(e, ast.Starred) for e in node.elts):
            combinable = False
        if not combinable:
            self.probes.append(node)
            return ast.Name(id=f"__p{len(self.probes) - 1}", ctx=ast.Load())
        new = type(node)(**{f: getattr(node, f) for f in node._fields})
        for name, value in ast.iter_fields(node):
            if isinstance(node, ast.Call) and name == "func":
                continue  # a whitelisted function, called on the host
            if isinstance(value, ast.expr):
                setattr(new, name, self.split(value))
            elif isinstance(value, list):
                setattr(new, name, [self._split_item(v) for v in value])
        return new

    def _split_item(self, v: object) -> object:
        if isinstance(v, ast.expr):
            return self.split(v)
        if isinstance(v, ast.keyword):
            return ast.keyword(arg=v.arg, value=self.split(v.value))
        return v


def _bindings(tree: ast.AST) -> dict[str, int]:
    """How often each name is bound anywhere in the snippet (assignments, args, defs, imports...)."""
    counts: dict[str, int] = {}

    def add(name: str) -> None:
        counts[name] = counts.get(name, 0) + 1

    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
            add(n.id)
        elif isinstance(n, ast.arg):
            add(n.arg)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            add(n.name)
        elif isinstance(n, ast.alias):
            add((n.asname or n.name).split(".")[0])
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            for name in n.names:
                add(name)
    return counts
